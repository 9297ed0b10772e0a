package awsenv

import (
	"cmp"
	"context"
	"errors"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// ErrNoCredentials is returned by [Load] when the environment holds no
// credentials and names no endpoint override.
var ErrNoCredentials = errors.New("awsenv: no credentials in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")

// Load reads the AWS configuration from the environment: AWS_REGION (or
// AWS_DEFAULT_REGION; else us-east-1), the credentials in
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN (with
// AWS_ACCOUNT_ID), and the endpoints of AWS_ENDPOINT_URL and
// AWS_ENDPOINT_URL_<SERVICE> unless AWS_IGNORE_CONFIGURED_ENDPOINT_URLS
// is true, with [Retryer]'s retries and the SDK's defaults otherwise. With
// an endpoint override and no credentials it uses [Static]'s, as every
// local emulator accepts them; missing credentials are otherwise
// [ErrNoCredentials]. It reads no shared config file.
func Load() (aws.Config, error) {
	cfg := aws.Config{
		Region:                     cmp.Or(os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION"), "us-east-1"),
		Retryer:                    Retryer,
		DefaultsMode:               aws.DefaultsModeLegacy,
		AccountIDEndpointMode:      aws.AccountIDEndpointModePreferred,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenSupported,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenSupported,
	}
	if !strings.EqualFold(os.Getenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"), "true") {
		if url := os.Getenv("AWS_ENDPOINT_URL"); url != "" {
			cfg.BaseEndpoint = aws.String(url)
		}
		cfg.ConfigSources = []any{serviceEndpoints{}}
	}
	switch key, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"); {
	case key != "" && secret != "":
		cfg.Credentials = aws.NewCredentialsCache(credentials.StaticCredentialsProvider{Value: aws.Credentials{
			AccessKeyID: key, SecretAccessKey: secret, SessionToken: os.Getenv("AWS_SESSION_TOKEN"),
			AccountID: os.Getenv("AWS_ACCOUNT_ID"), Source: "awsenv",
		}})
	case HasEndpointOverride():
		cfg.Credentials = Static()
	default:
		return aws.Config{}, ErrNoCredentials
	}
	return cfg, nil
}

// serviceEndpoints gives each client its AWS_ENDPOINT_URL_<SERVICE>, as
// the SDK's environment configuration does: the service's SDK ID in upper
// case, spaces as underscores (AWS_ENDPOINT_URL_SECRETS_MANAGER).
type serviceEndpoints struct{}

// GetServiceBaseEndpoint is the method the SDK's clients look for among
// [aws.Config.ConfigSources].
func (serviceEndpoints) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	url := os.Getenv("AWS_ENDPOINT_URL_" + strings.ReplaceAll(strings.ToUpper(sdkID), " ", "_"))
	return url, url != "", nil
}

// Retryer retries as the SDK's standard retryer does, three attempts in
// all, and also retries TransactionConflictException: DynamoDB refuses a
// single-item write to an item that a running transaction holds without
// applying it, and the SDK does not retry that code by itself.
func Retryer() aws.Retryer {
	return retry.AddWithErrorCodes(retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 3 }),
		"TransactionConflictException")
}

// Static returns the dummy credentials used against local emulators.
func Static() aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider("local", "local", "")
}

// HasEndpointOverride reports whether the environment sends DynamoDB or
// SQS calls somewhere other than AWS.
func HasEndpointOverride() bool {
	for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_DYNAMODB"} {
		if os.Getenv(k) != "" {
			return true
		}
	}
	return false
}

// DynamoDB builds a DynamoDB client; an empty endpoint keeps the SDK's own
// resolution. Against a custom endpoint it skips the X-Amz-Crc32 response
// check, which emulators such as minidyn do not send; against AWS the
// check stays on.
func DynamoDB(cfg aws.Config, endpoint string) *dynamodb.Client {
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		if endpoint != "" || HasEndpointOverride() {
			o.DisableValidateResponseChecksum = true
		}
	})
}

// SecretsManager builds a Secrets Manager client.
func SecretsManager(cfg aws.Config) *secretsmanager.Client {
	return secretsmanager.NewFromConfig(cfg)
}
