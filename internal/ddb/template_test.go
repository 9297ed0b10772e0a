package ddb_test

import (
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/hookline/hookline/internal/ddb"
)

// TestTemplateMatchesABuildWithTheValues: a template bound to values is
// the very expression the builder makes from those values.
func TestTemplateMatchesABuildWithTheValues(t *testing.T) {
	update := func(status, token, at expression.ValueBuilder, result expression.ValueBuilder) expression.Builder {
		upd := expression.Set(expression.Name("status"), status).
			Set(expression.Name("completed_at"), at).
			Set(expression.Name("result"), result).
			Remove(expression.Name("held_until"))
		cond := expression.Name("token").Equal(token).
			And(expression.Name("status").Equal(expression.Value("IN_PROGRESS"))).
			And(expression.Name("owner").Equal(token)) // one slot, two placeholders
		return expression.NewBuilder().WithUpdate(upd).WithCondition(cond)
	}
	tmpl, err := ddb.NewTemplate(update(expression.Value("COMPLETED"), ddb.Slot("token"), ddb.Slot("at"), ddb.Slot("result")))
	if err != nil {
		t.Fatal(err)
	}
	want, err := update(expression.Value("COMPLETED"), expression.Value("tok-1"), expression.Value(int64(1700000000123)), expression.Value([]byte("ok"))).Build()
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Values(map[string]any{"token": "tok-1", "at": int64(1700000000123), "result": []byte("ok")})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(tmpl.Update()) != aws.ToString(want.Update()) || aws.ToString(tmpl.Condition()) != aws.ToString(want.Condition()) ||
		!reflect.DeepEqual(tmpl.Names(), want.Names()) || !reflect.DeepEqual(got, want.Values()) {
		t.Fatalf("template: %s / %s %v %v\nbuilder:  %s / %s %v %v", aws.ToString(tmpl.Update()), aws.ToString(tmpl.Condition()), tmpl.Names(), got,
			aws.ToString(want.Update()), aws.ToString(want.Condition()), want.Names(), want.Values())
	}
	// A second binding does not leak into the first.
	if _, err := tmpl.Values(map[string]any{"token": "tok-2", "at": int64(1), "result": []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want.Values()) {
		t.Fatal("binding again changed the values of an earlier binding")
	}
}

func TestTemplateRefusesMissingAndUnknownSlots(t *testing.T) {
	tmpl := ddb.MustTemplate(expression.NewBuilder().WithCondition(expression.Name("token").Equal(ddb.Slot("token"))))
	for _, bind := range []map[string]any{{}, {"token": "a", "other": 1}, {"tokn": "a"}} {
		if _, err := tmpl.Values(bind); err == nil {
			t.Errorf("Values(%v) = nil error", bind)
		}
	}
}
