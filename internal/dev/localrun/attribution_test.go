package localrun_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/testkit"
)

// TestUsageIntakeRecordSaysHowItWasAttributed: contract 6's intake states
// are kept on the intake record itself, so that the record of a webhook
// says whether it was attributed, to which workload, or why not.
func TestUsageIntakeRecordSaysHowItWasAttributed(t *testing.T) {
	t.Parallel()
	// Given the running system and one workload
	sys, _ := startDrill(t, workload(spend.NewWorkload{ID: "wl-attr", Cap: 1000}))
	at := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
	usage := func(id, record, ref string) []byte {
		return fmt.Appendf(nil, `{"id":%q,"type":"usage.recorded","data":{"record_id":%q,"workload_ref":%q,"units":7,"occurred_at":%q}}`,
			id, record, ref, at)
	}
	// When one event names the workload and another names nobody
	for _, ev := range []struct{ id, record, ref string }{
		{"evt_attr_1", "ur_attr_1", "wl-attr"},
		{"evt_attr_2", "ur_attr_2", "wl-nobody"},
	} {
		if code, got := postSigned(t, sys, "usage", ev.id, usage(ev.id, ev.record, ev.ref)); code != 200 {
			t.Fatalf("%s: %d %s", ev.id, code, got)
		}
	}
	// Then each intake record carries its attribution
	want := map[string][3]string{
		"evt_attr_1": {"attributed", "wl-attr", ""},
		"evt_attr_2": {"deferred", "", spend.ReasonUnknownWorkload},
	}
	for id, w := range want {
		var got [3]string
		testkit.Eventually(t, 30*time.Second, id+" attributed", func() bool {
			got = intakeAttribution(t, sys, "usage", id)
			return got[0] != ""
		})
		if got != w {
			t.Errorf("%s: attribution, workload, reason = %q, want %q", id, got, w)
		}
	}
}

// intakeAttribution reads the attribution attributes of one intake record.
func intakeAttribution(t *testing.T, sys *localrun.System, source, id string) [3]string {
	t.Helper()
	out, err := sys.AWS.DynamoDB.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(sys.AWS.TableName("IntakeTable")), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: source + "#" + id}},
	})
	if err != nil {
		t.Fatal(err)
	}
	str := func(name string) string {
		if v, ok := out.Item[name].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
		return ""
	}
	return [3]string{str("attribution"), str("attribution_workload"), str("attribution_reason")}
}
