package template_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/hookline/hookline/pkg/localaws"
	"github.com/hookline/hookline/pkg/template"
)

func TestZZProbeRealRun(t *testing.T) {
	p, _ := template.Find()
	env, err := localaws.Start(context.Background(), localaws.Options{Template: &template.Template{Path: p}})
	if err != nil { t.Fatal(err) }
	defer env.Close()
	dir := t.TempDir()
	stub := `#!/bin/bash
case "$1 $2" in
 "dynamodb update-time-to-live"|"dynamodb update-continuous-backups"|"dynamodb wait") echo "skip $2" >&2; exit 0;;
esac
if [ "$1" = sqs ]; then ep=` + env.SQSEndpoint + `; else ep=` + env.DynamoEndpoint + `; fi
exec aws --endpoint-url "$ep" --region us-east-1 "$@"
`
	os.WriteFile(filepath.Join(dir, "awslocal"), []byte(stub), 0o755)
	for i := 0; i < 2; i++ {
		cmd := exec.Command("bash", "../../localstack/init/ready.d/create-resources.sh")
		cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test")
		out, err := cmd.CombinedOutput()
		t.Logf("run %d: %v\n%s", i, err, out)
	}
	ctx := context.Background()
	lq, _ := env.SQS.ListQueues(ctx, &sqs.ListQueuesInput{})
	for _, u := range lq.QueueUrls {
		a, _ := env.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(u), AttributeNames: []sqstypes.QueueAttributeName{"All"}})
		t.Log(u, a.Attributes)
	}
	lt, _ := env.DynamoDB.ListTables(ctx, &dynamodb.ListTablesInput{})
	t.Log(lt.TableNames)
}
