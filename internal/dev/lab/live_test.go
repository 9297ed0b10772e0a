package lab_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/dev/lab"
	"github.com/hookline/hookline/internal/testkit"
)

// TestLiveStateKeepsTheLastChanges: the state goes to every page once a
// second, so it must not grow with the commands a lab has taken. After
// 2,000 commands of 4 KB each (whitespace the copilot reads past) the
// state holds the last lab.LiveChanges, each as the command reads, and
// says how many there were.
func TestLiveStateKeepsTheLastChanges(t *testing.T) {
	t.Parallel()
	live, err := lab.StartLive(context.Background(), lab.LiveConfig{Rate: 5, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Close() })
	const commands = 2000
	for i := range commands {
		line := "rate" + strings.Repeat(" ", 4000) + []string{"100", "200"}[i%2]
		if _, err := live.Ask(line); err != nil {
			t.Fatalf("command %d: %v", i, err)
		}
	}
	b, err := live.StateJSON()
	if err != nil {
		t.Fatal(err)
	}
	st := live.State()
	if len(b) > 64<<10 || len(st.Changes) != lab.LiveChanges || st.ChangesTotal != commands {
		t.Fatalf("after %d commands the state is %d bytes with %d changes (of %d said); want at most 64 KiB, the last %d of %d",
			commands, len(b), len(st.Changes), st.ChangesTotal, lab.LiveChanges, commands)
	}
	if last := st.Changes[len(st.Changes)-1]; last.Text != "rate 200" || st.Last == nil || st.Last.Change != last || st.Knobs.Rate != 200 {
		t.Fatalf("the last change %+v, before and after %+v, knobs %+v; want rate 200", last, st.Last, st.Knobs)
	}
}

// TestLiveLabKeepsMinutesAndDeletesWhatExpired: the live lab runs for
// hours at 500 webhooks/s, so it keeps intake records and idempotency
// keys for minutes (lab.LiveIntakeRetention, lab.LiveIdempotencyRetention)
// and its local DynamoDB deletes each item once its TTL passes: the
// records it writes expire that long after they are written, and an
// expired item is deleted by the next sweep.
func TestLiveLabKeepsMinutesAndDeletesWhatExpired(t *testing.T) {
	t.Parallel()
	live, err := lab.StartLive(context.Background(), lab.LiveConfig{Rate: 20, Idempotency: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Close() })
	aws := live.System().AWS
	for _, tt := range []struct {
		table string
		keep  time.Duration
	}{
		{"IntakeTable", lab.LiveIntakeRetention},
		{"IdempotencyTable", lab.LiveIdempotencyRetention},
	} {
		var items []map[string]ddbtypes.AttributeValue
		testkit.Eventually(t, 20*time.Second, tt.table+" holds a record", func() bool {
			out, err := aws.DynamoDB.Scan(context.Background(), &dynamodb.ScanInput{TableName: awssdk.String(aws.TableName(tt.table)), Limit: awssdk.Int32(5)})
			items = out.Items
			return err == nil && len(items) > 0
		})
		var at int64
		if n, ok := items[0]["expires_at"].(*ddbtypes.AttributeValueMemberN); ok {
			at, _ = strconv.ParseInt(n.Value, 10, 64)
		}
		if left := time.Until(time.Unix(at, 0)); left <= tt.keep-time.Minute || left > tt.keep {
			t.Errorf("a record of %s expires in %s; want within a minute under %s", tt.table, left.Round(time.Second), tt.keep)
		}
	}
	table := awssdk.String(aws.TableName("IntakeTable"))
	if _, err := aws.DynamoDB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: table, Item: map[string]ddbtypes.AttributeValue{
		"pk":         &ddbtypes.AttributeValueMemberS{Value: "payments#evt_expired"},
		"expires_at": &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().Add(-time.Minute).Unix(), 10)}}}); err != nil {
		t.Fatal(err)
	}
	before := aws.ItemsExpired()
	aws.ExpireItemsNow()
	out, err := aws.DynamoDB.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: table, ConsistentRead: awssdk.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "payments#evt_expired"}}})
	if err != nil || out.Item != nil || aws.ItemsExpired() <= before {
		t.Fatalf("an expired intake record after a sweep: %v, %v, %d deleted before and %d after; want it deleted",
			out.Item, err, before, aws.ItemsExpired())
	}
}
