package awsconf

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
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
		config.WithRetryer(func() aws.Retryer {
			// DynamoDB refuses a single-item write to an item that a running
			// transaction holds (TransactionConflictException) without
			// applying it, and the SDK does not retry that code by itself.
			return retry.AddWithErrorCodes(retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 3 }),
				"TransactionConflictException")
		}),
	}
	if os.Getenv("AWS_REGION") == "" && os.Getenv("AWS_DEFAULT_REGION") == "" {
		base = append(base, config.WithRegion("us-east-1"))
	}
	if hasEndpointOverride() && !hasCredentials() {
		base = append(base, config.WithCredentialsProvider(Static()))
	}
	cfg, err := config.LoadDefaultConfig(ctx, append(base, opts...)...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("awsconf: load: %w", err)
	}
	return cfg, nil
}

// Static returns the dummy credentials used against local emulators.
func Static() aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider("local", "local", "")
}

func hasEndpointOverride() bool {
	for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_DYNAMODB"} {
		if os.Getenv(k) != "" {
			return true
		}
	}
	return false
}

func hasCredentials() bool {
	return os.Getenv("AWS_ACCESS_KEY_ID") != "" || os.Getenv("AWS_PROFILE") != ""
}

// DynamoDB builds a DynamoDB client. Against a custom endpoint it skips the
// X-Amz-Crc32 response check, which emulators such as minidyn do not send;
// against AWS the check stays on.
func DynamoDB(cfg aws.Config, endpoint string) *dynamodb.Client {
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		if endpoint != "" || hasEndpointOverride() {
			o.DisableValidateResponseChecksum = true
		}
	})
}

// SQS builds an SQS client.
func SQS(cfg aws.Config, endpoint string) *sqs.Client {
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
}
