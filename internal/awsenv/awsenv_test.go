package awsenv_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/awsenv"
)

// setEnv makes env the only AWS_ variables of the process until the test
// ends.
func setEnv(t *testing.T, env map[string]string) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") {
			t.Setenv(k, "") // restores the value when the test ends
			os.Unsetenv(k)
		}
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
}

func TestLoadReadsTheEnvironmentLambdaSets(t *testing.T) {
	lambda := map[string]string{"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKIDROLE", "AWS_SECRET_ACCESS_KEY": "role-secret",
		"AWS_SESSION_TOKEN": "role-token"}
	with := func(extra map[string]string) map[string]string {
		env := map[string]string{}
		for _, m := range []map[string]string{lambda, extra} {
			for k, v := range m {
				env[k] = v
			}
		}
		return env
	}
	tests := []struct {
		name string
		env  map[string]string
		// want* are the endpoints each client calls; "" is AWS's own.
		wantDynamoDB, wantSQS, wantSecrets string
		wantKey                            string
		wantErr                            error
	}{
		{name: "Lambda's variables", env: lambda, wantKey: "AKIDROLE"},
		{name: "one endpoint for every service", env: with(map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:4566"}),
			wantDynamoDB: "http://127.0.0.1:4566", wantSQS: "http://127.0.0.1:4566", wantSecrets: "http://127.0.0.1:4566", wantKey: "AKIDROLE"},
		{name: "an endpoint per service, by its SDK ID", env: with(map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://ddb",
			"AWS_ENDPOINT_URL_SQS": "http://sqs", "AWS_ENDPOINT_URL_SECRETS_MANAGER": "http://sm"}),
			wantDynamoDB: "http://ddb", wantSQS: "http://sqs", wantSecrets: "http://sm", wantKey: "AKIDROLE"},
		{name: "configured endpoints ignored", env: with(map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://ddb",
			"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}), wantKey: "AKIDROLE"},
		{name: "a local endpoint without credentials uses the local ones",
			env: map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://ddb"}, wantDynamoDB: "http://ddb", wantKey: "local"},
		{name: "no credentials and no local endpoint", env: map[string]string{"AWS_REGION": "eu-west-1"}, wantErr: awsenv.ErrNoCredentials},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Given the environment,
			setEnv(t, tc.env)
			// when the configuration is loaded from it,
			cfg, err := awsenv.Load()
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			// then the clients call where it says, with its credentials.
			if want := tc.env["AWS_REGION"]; cfg.Region != want && (want != "" || cfg.Region != "us-east-1") {
				t.Fatalf("region %q, want %q", cfg.Region, want)
			}
			creds, err := cfg.Credentials.Retrieve(context.Background())
			if err != nil || creds.AccessKeyID != tc.wantKey {
				t.Fatalf("credentials %q, %v: want %q", creds.AccessKeyID, err, tc.wantKey)
			}
			if tc.wantKey == "AKIDROLE" && (creds.SecretAccessKey != "role-secret" || creds.SessionToken != "role-token") {
				t.Fatalf("credentials %+v: want the role's secret and session token", creds)
			}
			for _, c := range []struct{ name, got, want string }{
				{"DynamoDB", aws.ToString(awsenv.DynamoDB(cfg, "").Options().BaseEndpoint), tc.wantDynamoDB},
				{"SQS", aws.ToString(sqs.NewFromConfig(cfg).Options().BaseEndpoint), tc.wantSQS},
				{"Secrets Manager", aws.ToString(awsenv.SecretsManager(cfg).Options().BaseEndpoint), tc.wantSecrets},
			} {
				if c.got != c.want {
					t.Errorf("%s calls %q, want %q", c.name, c.got, c.want)
				}
			}
		})
	}
}
