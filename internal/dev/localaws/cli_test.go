package localaws_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/dev/localaws"
)

// TestAWSCLIInspectionCalls makes, through the SDK, the calls `aws
// dynamodb list-tables / describe-table / describe-time-to-live /
// describe-continuous-backups / scan --select COUNT` make, and checks
// they are answered as DynamoDB answers them.
func TestAWSCLIInspectionCalls(t *testing.T) {
	env := localaws.StartForTest(t)
	ctx := context.Background()
	ledger := env.TableName("LedgerTable")

	t.Run("list-tables names every template table", func(t *testing.T) {
		out, err := env.DynamoDB.ListTables(ctx, &dynamodb.ListTablesInput{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range env.Template.Tables {
			if !slices.Contains(out.TableNames, env.TableName(tb.LogicalID)) {
				t.Errorf("list-tables = %v, missing %s", out.TableNames, env.TableName(tb.LogicalID))
			}
		}
		// and pages with Limit
		first, err := env.DynamoDB.ListTables(ctx, &dynamodb.ListTablesInput{Limit: aws.Int32(1)})
		if err != nil || len(first.TableNames) != 1 || first.LastEvaluatedTableName == nil {
			t.Fatalf("first page = %+v, %v", first, err)
		}
		rest, err := env.DynamoDB.ListTables(ctx, &dynamodb.ListTablesInput{ExclusiveStartTableName: first.LastEvaluatedTableName})
		if err != nil || len(rest.TableNames) != len(out.TableNames)-1 || slices.Contains(rest.TableNames, first.TableNames[0]) {
			t.Fatalf("rest = %v, %v", rest.TableNames, err)
		}
	})

	t.Run("describe-table is ACTIVE and the SDK's waiter finishes", func(t *testing.T) {
		out, err := env.DynamoDB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(ledger)})
		if err != nil || out.Table.TableStatus != ddbtypes.TableStatusActive {
			t.Fatalf("describe-table = %+v, %v", out, err)
		}
		w := dynamodb.NewTableExistsWaiter(env.DynamoDB)
		if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(ledger)}, 5*time.Second); err != nil {
			t.Fatalf("TableExistsWaiter: %v", err)
		}
	})

	t.Run("describe-time-to-live shows the template's TTL attribute", func(t *testing.T) {
		for _, tb := range env.Template.Tables {
			out, err := env.DynamoDB.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(env.TableName(tb.LogicalID))})
			if err != nil {
				t.Fatalf("%s: %v", tb.LogicalID, err)
			}
			d := out.TimeToLiveDescription
			want := ddbtypes.TimeToLiveStatusDisabled
			if tb.TTLAttribute != "" {
				want = ddbtypes.TimeToLiveStatusEnabled
			}
			if d.TimeToLiveStatus != want || aws.ToString(d.AttributeName) != tb.TTLAttribute {
				t.Errorf("%s: ttl = %s %q, want %s %q", tb.LogicalID, d.TimeToLiveStatus, aws.ToString(d.AttributeName), want, tb.TTLAttribute)
			}
		}
	})

	t.Run("describe-continuous-backups answers, and refuses an unknown table", func(t *testing.T) {
		out, err := env.DynamoDB.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String(ledger)})
		if err != nil || out.ContinuousBackupsDescription == nil || out.ContinuousBackupsDescription.ContinuousBackupsStatus == "" ||
			out.ContinuousBackupsDescription.PointInTimeRecoveryDescription == nil {
			t.Fatalf("describe-continuous-backups = %+v, %v", out, err)
		}
		var tnf *ddbtypes.TableNotFoundException
		_, err = env.DynamoDB.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String("no-such-table")})
		if !errorsAs(err, &tnf) {
			t.Fatalf("unknown table: %v, want TableNotFoundException", err)
		}
	})

	t.Run("scan --select COUNT counts", func(t *testing.T) {
		for _, pk := range []string{"c1", "c2", "c3"} {
			putAcct(t, env, ledger, pk, 1)
		}
		out, err := env.DynamoDB.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(ledger), Select: ddbtypes.SelectCount})
		if err != nil || out.Count != 3 || out.ScannedCount != 3 || len(out.Items) != 0 {
			t.Fatalf("scan COUNT = count %d scanned %d items %d, %v; want 3, 3, 0", out.Count, out.ScannedCount, len(out.Items), err)
		}
		all, err := env.DynamoDB.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(ledger)})
		if err != nil || all.Count != 3 || len(all.Items) != 3 {
			t.Fatalf("scan = count %d items %d, %v", all.Count, len(all.Items), err)
		}
	})
}
