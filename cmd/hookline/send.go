package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hookline/hookline/pkg/localrun"
	"github.com/hookline/hookline/pkg/ops"
	"github.com/hookline/hookline/pkg/providersim"
	"github.com/hookline/hookline/pkg/webhook"
)

// sendWebhookCmd signs a JSON file and posts it like a provider's CLI
// trigger, retrying on non-2xx answers as providers do.
func sendWebhookCmd(ctx context.Context, args []string, out io.Writer) int {
	loadEndpoints()
	fs := flag.NewFlagSet("send-webhook", flag.ContinueOnError)
	source := fs.String("source", "payments", "source name (the {source} of /webhooks/{source})")
	file := fs.String("file", "", "JSON body to send (required)")
	base := fs.String("url", envOr("HOOKLINE_API_URL", "http://127.0.0.1:8080"), "base URL of the HTTP API (default: the one `make run` wrote)")
	id := fs.String("id", "", "event ID (default: the body's \"id\")")
	scheme := fs.String("scheme", string(webhook.SchemeStandard), "signature scheme: standard-webhooks or stripe")
	secret := fs.String("secret", "", "signing secret (default: $HOOKLINE_<SOURCE>_SECRETS, else the local development secret)")
	tamper := fs.Bool("tamper", false, "sign one body and send another, to see a 401")
	attempts := fs.Int("attempts", 3, "attempts before giving up, like a provider's retries")
	if err := fs.Parse(args); err != nil || *file == "" {
		fmt.Fprintln(os.Stderr, "usage: hookline send-webhook --source payments --file testdata/payments/payment_requested.json [--url URL] [--id ID] [--tamper]")
		return exitUsage
	}
	body, err := os.ReadFile(*file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "send-webhook:", err)
		return exitFailure
	}
	eventID := *id
	if eventID == "" {
		eventID = bodyID(body)
	}
	key := signingSecret(*source, *secret)
	sign := func(id string, ts time.Time, b []byte) (http.Header, error) {
		if *tamper {
			b = append([]byte(nil), append(b, ' ')...)
		}
		return webhook.SignHeaders(webhook.Scheme(*scheme), []string{key}, id, ts, b)
	}
	sender, err := providersim.NewSender(providersim.SenderConfig{
		URL: strings.TrimSuffix(*base, "/") + "/webhooks/" + *source, Sign: sign, MaxAttempts: *attempts,
		BaseBackoff: 200 * time.Millisecond,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "send-webhook:", err)
		return exitUsage
	}
	d := sender.Send(ctx, eventID, body)
	return reportDelivery(out, eventID, d)
}

func reportDelivery(out io.Writer, eventID string, d providersim.Delivery) int {
	for i, a := range d.Attempts {
		status := fmt.Sprint(a.StatusCode)
		if a.Err != "" {
			status = a.Err
		}
		fmt.Fprintf(out, "attempt %d: %s %s\n", i+1, status, strings.TrimSpace(a.Body))
	}
	if !d.Delivered {
		fmt.Fprintf(out, "event %s not delivered\n", eventID)
		return exitFailure
	}
	fmt.Fprintf(out, "event %s delivered\n", eventID)
	return exitOK
}

func bodyID(body []byte) string {
	var v struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(body, &v) == nil && v.ID != "" {
		return v.ID
	}
	return fmt.Sprintf("evt_%d", time.Now().UnixNano())
}

func signingSecret(source, flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	name := localrun.SecretVar(source)
	if v := webhook.SplitSecrets(os.Getenv(name)); len(v) > 0 {
		return v[0]
	}
	return localrun.DevSecrets[name]
}

// sendUsageCmd records usage at the local provider simulator, which adds it
// to its authoritative export and sends (or drops, or alters) the signed
// usage webhook to the receiver, as the real provider would.
func sendUsageCmd(ctx context.Context, args []string, out io.Writer) int {
	loadEndpoints()
	fs := flag.NewFlagSet("send-usage", flag.ContinueOnError)
	workload := fs.String("workload", "", "provider workload reference (required)")
	units := fs.Int64("units", 0, "spend units (required)")
	record := fs.String("record", "", "usage record ID (default: a new one)")
	drop := fs.Bool("drop-webhook", false, "record the usage but drop its webhook (only reconciliation will see it)")
	alter := fs.Int64("webhook-units", 0, "send a webhook with these units instead (a disagreement)")
	providerURL := fs.String("provider", os.Getenv("HOOKLINE_PROVIDER_URL"), "provider simulator URL (default: the one `make run` wrote)")
	if err := fs.Parse(args); err != nil || *workload == "" || *units <= 0 || *providerURL == "" {
		fmt.Fprintln(os.Stderr, "usage: hookline send-usage --workload REF --units N [--record ID] [--drop-webhook] [--webhook-units N] [--provider URL]")
		return exitUsage
	}
	if *record == "" {
		*record = fmt.Sprintf("ur_%d", time.Now().UnixNano())
	}
	req := map[string]any{"record_id": *record, "workload_ref": *workload, "units": *units, "webhook": "send"}
	switch {
	case *drop:
		req["webhook"] = "drop"
	case *alter > 0:
		req["webhook"], req["webhook_units"] = "alter", *alter
	}
	body, _ := json.Marshal(req)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(*providerURL, "/")+"/sim/usage", strings.NewReader(string(body)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "send-usage:", err)
		return exitUsage
	}
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		fmt.Fprintln(os.Stderr, "send-usage:", err)
		return exitFailure
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	fmt.Fprintf(out, "usage %s (%d units, %s): %s\n", *record, *units, req["webhook"], strings.TrimSpace(string(answer)))
	if resp.StatusCode != http.StatusOK {
		return exitFailure
	}
	return exitOK
}

// loadEndpoints reads the endpoints `hookline run` wrote, without
// overriding variables already set.
func loadEndpoints() {
	if _, err := ops.LoadEnvFile(os.LookupEnv, os.Setenv); err != nil {
		fmt.Fprintln(os.Stderr, "hookline:", err)
	}
}

// admissionCmd asks the HTTP API whether a workload may start new work, as
// its producers do.
func admissionCmd(ctx context.Context, args []string, out io.Writer) int {
	loadEndpoints()
	fs := flag.NewFlagSet("admission", flag.ContinueOnError)
	base := fs.String("url", envOr("HOOKLINE_API_URL", "http://127.0.0.1:8080"), "base URL of the HTTP API")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: hookline admission <workload> [--url URL]")
		return exitUsage
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(*base, "/")+"/workloads/"+fs.Arg(0)+"/admission", nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "admission:", err)
		return exitUsage
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, "admission:", err)
		return exitFailure
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	fmt.Fprintf(out, "%d %s\n", resp.StatusCode, strings.TrimSpace(string(body)))
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusLocked {
		return exitFailure
	}
	return exitOK
}
