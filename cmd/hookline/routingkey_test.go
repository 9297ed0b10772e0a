package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/dev/localaws"
)

// storedRoutingKey is the routing key a workload's item holds, as stored.
func storedRoutingKey(t *testing.T, env *localaws.Env, id string) types.AttributeValue {
	t.Helper()
	out, err := env.DynamoDB.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(env.TableName("WorkloadsTable")), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "WL#" + id},
			"sk": &types.AttributeValueMemberS{Value: "WORKLOAD"}}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Item["route"] != nil {
		t.Fatalf("workload %s stored under route: %v", id, out.Item)
	}
	return out.Item["routing_key"]
}

// TestWorkloadCreateTakesTheEarlierRouteFlag: scripts written against
// earlier builds name the routing key --route. It still creates the
// workload, with a notice naming --routing-key, and the key is stored
// under its name.
func TestWorkloadCreateTakesTheEarlierRouteFlag(t *testing.T) {
	env := cliEnv(t)
	var errs bytes.Buffer
	stderr = &errs
	// when a workload is created with --route
	code, out := run(t, "workload", "create", "w-earlier", "--owner", "o", "--route", "rk-earlier", "--cap", "10")
	// then it is created, and the operator is told the flag's name now
	if code != exitOK || !strings.Contains(out, "created: workload w-earlier") {
		t.Fatalf("exit %d, output:\n%s\nstderr:\n%s", code, out, errs.String())
	}
	if !strings.Contains(errs.String(), "--routing-key") {
		t.Errorf("stderr names no --routing-key:\n%s", errs.String())
	}
	want := &types.AttributeValueMemberS{Value: "rk-earlier"}
	if got := storedRoutingKey(t, env, "w-earlier"); got == nil || got.(*types.AttributeValueMemberS).Value != want.Value {
		t.Fatalf("routing_key = %v, want rk-earlier", got)
	}
	// and with --routing-key, as this build names it, without a notice
	errs.Reset()
	code, out = run(t, "workload", "create", "w-now", "--owner", "o", "--routing-key", "rk-now", "--cap", "10")
	if code != exitOK || strings.Contains(errs.String(), "deprecated") {
		t.Fatalf("exit %d, output:\n%s\nstderr:\n%s", code, out, errs.String())
	}
	if got := storedRoutingKey(t, env, "w-now"); got == nil || got.(*types.AttributeValueMemberS).Value != "rk-now" {
		t.Fatalf("routing_key = %v, want rk-now", got)
	}
	// but never both at once
	if code, _ := run(t, "workload", "create", "w-both", "--owner", "o", "--route", "a", "--routing-key", "b", "--cap", "10"); code != exitUsage {
		t.Fatalf("both flags: exit %d, want %d", code, exitUsage)
	}
}
