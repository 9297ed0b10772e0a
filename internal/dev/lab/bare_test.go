package lab

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/intake"
)

// TestBareEventsSpreadOverTheReplayIndex: the bare pipeline replays the
// probe's intake put for each of its events. Each must write the replay
// index partition of its own event ID, as the full path's records do:
// with the probe's partition in every one, the bare pipeline met one
// partition's 1,000 write units a second, and the full path, spread over
// sixteen, looked faster than the calls it makes (1.39x).
func TestBareEventsSpreadOverTheReplayIndex(t *testing.T) {
	probe := "evt_probe_1"
	put := &dynamodb.PutItemInput{TableName: aws.String("hookline-intake"), Item: map[string]ddbtypes.AttributeValue{
		"pk":           &ddbtypes.AttributeValueMemberS{Value: intake.Key("payments", probe)},
		"source_shard": &ddbtypes.AttributeValueMemberS{Value: intake.ShardKey("payments", probe)},
	}}
	b := &bare{sc: Script{id: probe, intake: []any{put}}, run: "r1"}
	b.prepare(64)
	shards := map[string]bool{}
	for i, calls := range b.intake {
		item := calls[0].(*dynamodb.PutItemInput).Item
		got := item["source_shard"].(*ddbtypes.AttributeValueMemberS).Value
		if want := intake.ShardKey("payments", eventID(b.run, i)); got != want {
			t.Fatalf("event %d: shard %s, want %s", i, got, want)
		}
		shards[got] = true
	}
	if len(shards) < 8 {
		t.Fatalf("64 bare events wrote %d index partitions", len(shards))
	}
}
