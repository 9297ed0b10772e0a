package awsconf

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/awsenv"
)

// Endpoints overrides service endpoints; empty fields keep the SDK's own
// resolution (which already honours AWS_ENDPOINT_URL*).
type Endpoints struct {
	DynamoDB string
	SQS      string
}

// Load reads the shared AWS configuration: region, credentials and
// endpoint variables. When an endpoint override is present and no
// credentials are configured, static dummy credentials are used, as every
// local emulator accepts them.
func Load(ctx context.Context, opts ...func(*config.LoadOptions) error) (aws.Config, error) {
	base := []func(*config.LoadOptions) error{
		config.WithRetryer(awsenv.Retryer),
	}
	if os.Getenv("AWS_REGION") == "" && os.Getenv("AWS_DEFAULT_REGION") == "" {
		base = append(base, config.WithRegion("us-east-1"))
	}
	if awsenv.HasEndpointOverride() && !hasCredentials() {
		base = append(base, config.WithCredentialsProvider(Static()))
	}
	cfg, err := config.LoadDefaultConfig(ctx, append(base, opts...)...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("awsconf: load: %w", err)
	}
	return cfg, nil
}

// Static returns the dummy credentials used against local emulators
// ([awsenv.Static]).
func Static() aws.CredentialsProvider { return awsenv.Static() }

func hasCredentials() bool {
	return os.Getenv("AWS_ACCESS_KEY_ID") != "" || os.Getenv("AWS_PROFILE") != ""
}

// DynamoDB builds a DynamoDB client ([awsenv.DynamoDB]). Against a custom
// endpoint it skips the X-Amz-Crc32 response check, which emulators such
// as minidyn do not send; against AWS the check stays on.
func DynamoDB(cfg aws.Config, endpoint string) *dynamodb.Client {
	return awsenv.DynamoDB(cfg, endpoint)
}

// SQS builds an SQS client; an empty endpoint keeps the SDK's own
// resolution.
func SQS(cfg aws.Config, endpoint string) *sqs.Client {
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
}
