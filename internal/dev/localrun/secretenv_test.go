package localrun_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/testkit"
)

// TestAStripeUsageSourceReadsItsSecretEnv: a stripe-scheme usage source
// whose secret_env names a variable of the operator's choosing, as
// docs/providers.md configures it, starts with its secret there and
// none in HOOKLINE_<NAME>_SECRETS, and the simulator's billing alerts
// are signed with that secret and accepted at the door.
func TestAStripeUsageSourceReadsItsSecretEnv(t *testing.T) {
	t.Parallel()
	sources := `[{"name":"payments","scheme":"standard-webhooks","secret_env":"HOOKLINE_PAYMENTS_SECRETS","queue":"payments"},` +
		`{"name":"usage","scheme":"standard-webhooks","secret_env":"HOOKLINE_USAGE_SECRETS","queue":"usage"},` +
		`{"name":"stripe-alerts","scheme":"stripe","secret_env":"STRIPE_ALERTS_WHSEC","queue":"usage"}]`
	env := map[string]string{"HOOKLINE_SOURCES": sources, "USAGE_MAPPINGS": `{"stripe-alerts": {"format": "stripe-alerts"}}`,
		"STRIPE_ALERTS_WHSEC": stripeAlertsSecret}
	// Given the secret only where the source's secret_env names it,
	sys, err := localrun.Start(context.Background(), localrun.Config{Addr: "127.0.0.1:0",
		Lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	// then the system starts,
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { sys.Close() })
	// and when Stripe's face sends a billing alert,
	d := &sumsDrill{t: t, sys: sys}
	d.sim(http.MethodPost, "", providersim.BillingMeter{ID: "mtr_api", EventName: "api_call", Aggregation: "sum"}, nil)
	d.sim(http.MethodPost, "/alerts", map[string]any{"meter": "mtr_api", "customer": "cus_alert", "gte": 1}, nil)
	d.stripe("e1", "cus_alert", "2", time.Now().UTC().Add(-time.Minute))
	d.sim(http.MethodPost, "/alerts/send", nil, nil)
	var alerts []struct{ ID string }
	d.sim(http.MethodGet, "/alerts", nil, &alerts)
	if len(alerts) != 1 {
		t.Fatalf("alert events = %d, want 1", len(alerts))
	}
	// it is signed with that secret and accepted at the door.
	store, err := intake.New(intake.Config{DynamoDB: sys.AWS.DynamoDB, SQS: sys.AWS.SQS, Table: sys.AWS.TableName("IntakeTable")})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "the alert recorded at the door", func() bool {
		_, found, err := store.Get(context.Background(), "stripe-alerts", alerts[0].ID)
		return err == nil && found
	})
}
