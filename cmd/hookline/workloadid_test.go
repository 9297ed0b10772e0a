package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/dev/localaws"
)

// putLegacyWorkload stores a workload as a release without an ID alphabet
// could have created it.
func putLegacyWorkload(t *testing.T, env *localaws.Env, id string) {
	t.Helper()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	now := time.Now().UTC().Format(time.RFC3339Nano)
	_, err := env.DynamoDB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(env.TableName("WorkloadsTable")),
		Item: map[string]types.AttributeValue{"pk": s("WL#" + id), "sk": s("WORKLOAD"), "gsi1pk": s("WORKLOADS"), "gsi1sk": s(id),
			"id": s(id), "owner": s("o"), "route": s("rk"), "cap": n("1000"), "step": n("0"), "status": s("active"),
			"hold": &types.AttributeValueMemberBOOL{Value: false}, "total": n("0"), "cap_epoch": n("0"), "esc_level": n("0"),
			"created_at": s(now), "updated_at": s(now)}})
	if err != nil {
		t.Fatal(err)
	}
}

func TestWorkloadIDsAreValidated(t *testing.T) {
	env := cliEnv(t)
	steps := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{name: "slash", args: []string{"workload", "create", "a/b", "--owner", "o", "--routing-key", "rk", "--cap", "10"}, wantCode: exitUsage},
		{name: "space", args: []string{"workload", "create", "a b", "--owner", "o", "--routing-key", "rk", "--cap", "10"}, wantCode: exitUsage},
		{name: "bang", args: []string{"workload", "create", "img!", "--owner", "o", "--routing-key", "rk", "--cap", "10"}, wantCode: exitUsage},
		{name: "600 characters", args: []string{"workload", "create", strings.Repeat("w", 600), "--owner", "o", "--routing-key", "rk", "--cap", "10"}, wantCode: exitUsage},
		{name: "well-formed", args: []string{"workload", "create", "img.resize-2", "--owner", "o", "--routing-key", "rk", "--cap", "10"}, want: "created: workload img.resize-2"},
		{name: "check passes", args: []string{"workload", "check"}, want: "all 1 workload IDs"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			code, out := run(t, st.args...)
			if code != st.wantCode || !strings.Contains(out, st.want) {
				t.Fatalf("exit %d (want %d), output lacks %q:\n%s", code, st.wantCode, st.want, out)
			}
		})
	}
	// given a workload created before IDs had an alphabet
	putLegacyWorkload(t, env, "Legacy Images")
	// then it keeps working, and the check reports it
	if code, out := run(t, "workload", "set-cap", "Legacy Images", "--cap", "2000"); code != exitOK || !strings.Contains(out, "cap 1000 -> 2000") {
		t.Fatalf("set-cap on a legacy ID: exit %d\n%s", code, out)
	}
	code, out := run(t, "workload", "check")
	if code != exitFailure || !strings.Contains(out, `"Legacy Images"`) || strings.Contains(out, "img.resize-2") {
		t.Fatalf("check: exit %d\n%s", code, out)
	}
	code, out = run(t, "workload", "check", "--json")
	if code != exitFailure || !strings.Contains(out, `"id": "Legacy Images"`) {
		t.Fatalf("check --json: exit %d\n%s", code, out)
	}
}
