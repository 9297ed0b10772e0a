package registry_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookline/hookline/internal/app"
	"github.com/hookline/hookline/internal/app/registry"
	"github.com/hookline/hookline/internal/awsconf"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/stack"
)

// deployedEnv is a function's environment as CloudFormation would set it:
// references to queues and tables become URLs and names, parameters take
// their defaults, and parameters without one take the values a deployer
// must pass.
func deployedEnv(t *testing.T, tpl *stack.Template, fn stack.Function) func(string) (string, bool) {
	t.Helper()
	given := map[string]string{"ReconRoutingKey": "deployer-routing-key"}
	resolve := func(v string) string {
		id := stack.LogicalID(v)
		if id == v {
			return v
		}
		if p, ok := tpl.Raw().Parameters[id]; ok {
			if g, ok := given[id]; ok {
				return g
			}
			if p.Default == nil {
				t.Fatalf("%s: parameter %s has no default and no test value", fn.LogicalID, id)
			}
			return fmt.Sprint(p.Default)
		}
		if q, ok := tpl.Queue(id); ok {
			return "https://sqs.us-east-1.amazonaws.com/000000000000/" + q.Name
		}
		if tb, ok := tpl.Table(id); ok {
			return tb.Name
		}
		if r, ok := tpl.Raw().Resources[id]; ok && r.AWSCloudFormationType() == "AWS::SecretsManager::Secret" {
			return "arn:aws:secretsmanager:us-east-1:000000000000:secret:" + id
		}
		t.Fatalf("%s: %s refers to %s, which is neither a parameter, a queue, a table nor a secret", fn.LogicalID, v, id)
		return ""
	}
	vars := map[string]string{}
	for k, v := range fn.Environment {
		vars[k] = resolve(v)
	}
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// TestEveryFunctionStartsFromItsTemplateEnvironment builds each function's
// handler from exactly the variables infra/template.yaml gives it and the
// clients its [app.Function.Clients] builds in Lambda, so a variable that
// only local runs set, or a client that only tests build, cannot hide a
// cold-start failure in AWS. Nothing here calls AWS.
func TestEveryFunctionStartsFromItsTemplateEnvironment(t *testing.T) {
	tpl, err := stack.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	cfg := aws.Config{Region: "us-east-1", Credentials: awsconf.Static()}
	if len(tpl.Functions) != len(registry.Functions()) {
		t.Fatalf("template has %d functions, the registry %d", len(tpl.Functions), len(registry.Functions()))
	}
	for _, fn := range tpl.Functions {
		t.Run(fn.Name, func(t *testing.T) {
			f, ok := registry.Named(fn.Name)
			if !ok {
				t.Fatalf("no function %s in the registry", fn.Name)
			}
			clients := f.Clients(cfg)
			for name := range fn.Environment {
				if strings.HasSuffix(name, config.SecretIDSuffix) && clients.SecretsManager == nil {
					t.Fatalf("%s: %s names a secret, and the function builds no Secrets Manager client to read it", fn.LogicalID, name)
				}
			}
			// Credentials come from Secrets Manager as in Lambda (app.LambdaDeps).
			d, err := app.WithSecretVars(context.Background(), app.Deps{Clients: clients, Lookup: deployedEnv(t, tpl, fn)},
				func(_ context.Context, id string) (string, error) { return "value-of-" + id, nil })
			if err != nil {
				t.Fatalf("%s: %v", fn.LogicalID, err)
			}
			h, err := f.Build(d)
			if err != nil {
				t.Fatalf("%s does not start from its template environment:\n%s", fn.LogicalID, strings.ReplaceAll(err.Error(), "\n", "\n  "))
			}
			// and its handler takes the events of the source the template
			// gives it.
			if got, want := handlerKind(h), invokedBy(tpl, fn.LogicalID); got != want {
				t.Fatalf("%s: handler for %s events, the template invokes it with %s", fn.LogicalID, got, want)
			}
		})
	}
}

func handlerKind(h app.Handler) string {
	switch {
	case h.HTTP != nil:
		return "HTTP API"
	case h.SQS != nil:
		return "SQS"
	case h.Schedule != nil:
		return "schedule"
	}
	return "no"
}

// invokedBy names what invokes a function in tpl.
func invokedBy(tpl *stack.Template, logicalID string) string {
	for _, r := range tpl.Routes {
		if r.Function == logicalID {
			return "HTTP API"
		}
	}
	for _, es := range tpl.EventSources {
		if es.Function == logicalID {
			return "SQS"
		}
	}
	for _, sc := range tpl.Schedules {
		if sc.Function == logicalID {
			return "schedule"
		}
	}
	return "nothing"
}

// TestCredentialsComeFromSecretsManager: no function's environment carries
// the provider API key or a PagerDuty routing key in plain text; each names
// its Secrets Manager secret, which the function may read and nothing more.
func TestCredentialsComeFromSecretsManager(t *testing.T) {
	tpl, err := stack.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	if uses := checkSecretReads(t, tpl); uses == 0 {
		t.Fatal("no function reads a credential from Secrets Manager")
	}
}

// TestMollieKeyComesFromItsSecret: deployed with a Mollie API key, the
// payment worker names the key's secret and may read it, so a Mollie
// webhook is fetched before it is acted on instead of dead-lettered.
func TestMollieKeyComesFromItsSecret(t *testing.T) {
	tpl := templateWith(t, map[string]string{"MollieApiKey": "test_dHzMVtQ3a2pqnfAcbTOGzmsWSuvCJx"})
	checkSecretReads(t, tpl)
	for _, fn := range tpl.Functions {
		if fn.LogicalID == "PaymentWorkerFunction" && stack.LogicalID(fn.Environment["MOLLIE_API_KEY"+config.SecretIDSuffix]) != "MollieApiKeySecret" {
			t.Fatalf("payment worker: MOLLIE_API_KEY_SECRET_ID = %q, want MollieApiKeySecret", fn.Environment["MOLLIE_API_KEY"+config.SecretIDSuffix])
		}
	}
}

// checkSecretReads checks every function of tpl as
// TestCredentialsComeFromSecretsManager says, and returns how many
// credentials come from a secret.
func checkSecretReads(t *testing.T, tpl *stack.Template) int {
	t.Helper()
	uses := 0
	for _, fn := range tpl.Functions {
		for _, name := range config.SecretVars {
			if _, plain := fn.Environment[name]; plain {
				t.Errorf("%s: %s is a plain environment variable; set %s%s to its secret", fn.LogicalID, name, name, config.SecretIDSuffix)
			}
			ref, ok := fn.Environment[name+config.SecretIDSuffix]
			if !ok {
				continue
			}
			uses++
			secret := stack.LogicalID(ref)
			granted := false
			for _, st := range fn.Statements {
				for _, a := range st.Action {
					for _, r := range st.Resource {
						if a == "secretsmanager:GetSecretValue" && stack.LogicalID(r) == secret {
							granted = true
						}
					}
				}
			}
			if !granted {
				t.Errorf("%s: may not read %s (secretsmanager:GetSecretValue on it)", fn.LogicalID, secret)
			}
		}
	}
	return uses
}
