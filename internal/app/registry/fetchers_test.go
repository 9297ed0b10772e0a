package registry_test

import (
	"context"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/app"
	"github.com/hookline/hookline/internal/app/registry"
	"github.com/hookline/hookline/internal/awsconf"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/stack"
)

// TestFetcherCredentialsComeFromTheirSecrets: deployed with PayPal's
// client credentials and a GoCardless access token, the payment worker
// gets PayPal's client ID, names the two secrets, may read those two and
// no other, and starts from that environment. Left empty, the worker's
// environment names none of it.
func TestFetcherCredentialsComeFromTheirSecrets(t *testing.T) {
	with := templateWith(t, map[string]string{
		"PayPalClientId":        "AZ-hookline-test-client",
		"PayPalClientSecret":    "EL-hookline-test-secret",
		"GoCardlessAccessToken": "sandbox_hookline-test-token",
	})
	checkSecretReads(t, with)
	fn, ok := with.Function("PaymentWorkerFunction")
	if !ok {
		t.Fatal("no PaymentWorkerFunction")
	}
	for name, secret := range map[string]string{"PAYPAL_CLIENT_SECRET": "PayPalClientSecretSecret", "GOCARDLESS_ACCESS_TOKEN": "GoCardlessAccessTokenSecret"} {
		if got := stack.LogicalID(fn.Environment[name+config.SecretIDSuffix]); got != secret {
			t.Fatalf("payment worker: %s%s refers to %q, want %s", name, config.SecretIDSuffix, got, secret)
		}
	}
	if stack.LogicalID(fn.Environment["PAYPAL_CLIENT_ID"]) != "PayPalClientId" {
		t.Fatalf("payment worker: PAYPAL_CLIENT_ID = %q, want the PayPalClientId parameter", fn.Environment["PAYPAL_CLIENT_ID"])
	}
	// And the worker starts from that environment, its secrets read from Secrets Manager
	cfg := aws.Config{Region: "us-east-1", Credentials: awsconf.Static()}
	d, err := app.WithSecretVars(context.Background(), app.Deps{
		Clients: app.Clients{DynamoDB: dynamodb.NewFromConfig(cfg), SQS: sqs.NewFromConfig(cfg)}, Lookup: deployedEnv(t, with, fn),
	}, func(_ context.Context, id string) (string, error) { return "value-of-" + id, nil })
	if err != nil {
		t.Fatal(err)
	}
	worker, _ := registry.Named("payment-worker")
	if _, err := worker.Build(d); err != nil {
		t.Fatalf("the payment worker does not start with PayPal and GoCardless credentials: %v", err)
	}
	// Given the template as it is, with the parameters empty, then the worker has none of it
	plain, err := stack.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	fn, _ = plain.Function("PaymentWorkerFunction")
	for _, name := range []string{"PAYPAL_CLIENT_ID", "PAYPAL_CLIENT_SECRET_SECRET_ID", "PAYPAL_API_URL", "GOCARDLESS_ACCESS_TOKEN_SECRET_ID", "GOCARDLESS_API_URL"} {
		if v, ok := fn.Environment[name]; ok {
			t.Fatalf("without credentials, the payment worker has %s = %q", name, v)
		}
	}
}

// templateWith is the repository template with each of the parameters
// named in values, which must default to "", defaulting to its value
// instead, as if a deployer passed it.
func templateWith(t *testing.T, values map[string]string) *stack.Template {
	t.Helper()
	path, err := stack.Find()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	const empty = "    Default: \"\"\n"
	for param, value := range values {
		// The parameter's block: its line and the more indented ones below.
		block := regexp.MustCompile(`\n  ` + param + `:\n(    .*\n)+`).FindStringIndex(text)
		if block == nil || !strings.Contains(text[block[0]:block[1]], empty) {
			t.Fatalf("the template has no %s parameter with an empty default", param)
		}
		text = text[:block[0]] + strings.Replace(text[block[0]:block[1]], empty, "    Default: "+value+"\n", 1) + text[block[1]:]
	}
	tpl, err := stack.Parse("template with "+strings.Join(slices.Sorted(maps.Keys(values)), ", "), []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}
