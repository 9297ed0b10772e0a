//go:build !oncall

package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/pkg/webhook"
)

// newDevCmd holds the simulator and developer commands, kept apart from the
// on-call ones.
func newDevCmd() *cobra.Command {
	cmd := group("dev", "Developer commands: send signed webhooks and usage like a provider, move the local run's clock")
	cmd.AddCommand(newSendWebhookCmd(), newSendUsageCmd(), newClockCmd())
	return cmd
}

// deliveryJSON is what dev send-webhook prints with --json.
type deliveryJSON struct {
	EventID   string        `json:"event_id"`
	Delivered bool          `json:"delivered"`
	Attempts  []attemptJSON `json:"attempts"`
}

type attemptJSON struct {
	Status int             `json:"status,omitempty"`
	Error  string          `json:"error,omitempty"`
	Body   json.RawMessage `json:"body,omitempty"`
}

// newSendWebhookCmd signs a file and posts it like a provider's CLI
// trigger, retrying on non-2xx answers as providers do.
func newSendWebhookCmd() *cobra.Command {
	var a sendArgs
	var file, base, id, scheme string
	var attempts int
	cmd := &cobra.Command{
		Use:   "send-webhook --source NAME --file BODY [--scheme PRESET]",
		Short: "Sign a file and post it to the HTTP API like a provider",
		Long: `Sign a file and post it to /webhooks/{source} as the source's provider
would, retrying on non-2xx answers as providers do.

--scheme names the source's scheme in HOOKLINE_SOURCES: standard-webhooks
(the default), stripe, or a provider preset, each signed as its provider
signs: github, shopify, razorpay, checkout, square (over --signed-url, by
default the URL posted to), paddle and gocardless in headers; adyen inside
each notification item of the JSON file; braintree as the form Braintree
posts, from an XML notification file, with "public_key:private_key" as the
secret; paypal with the local certificate double's key (only against
'hookline run', whose double the source's cert_hosts must pin), for
--webhook-id. mollie is not signed: the file is the payment, as JSON with
its "id", which is first written to the local Mollie double, then pinged
as Mollie pings (id=tr_...), so the worker fetches it.

The payment worker fetches what a paypal or gocardless webhook names
from the provider's API before acting, so the object is first written to
the local double of that API: for paypal the event's resource (the
capture of a PAYMENT.CAPTURE.COMPLETED, the sale of a
PAYMENT.SALE.COMPLETED), or the --object file; for gocardless the
--object file, a payment as GoCardless's API returns it (without
--object nothing is written, and the worker finds no payment).

The secret is --secret, else the first of $HOOKLINE_<SOURCE>_SECRETS, else
the local development secret of the source (payments and usage have one);
no secret is a usage error (exit 2), as for send-usage.`,
		Example: "  hookline dev send-webhook --source payments --file testdata/payments/payment_requested.json\n" +
			"  hookline dev send-webhook --source payments --file testdata/payments/payment_requested.json --tamper --id evt_tampered --attempts 1\n" +
			"  hookline dev send-webhook --source shop-adyen --scheme adyen --secret 44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056 --file testdata/payments/adyen_batch.json\n" +
			"  hookline dev send-webhook --source shop-mollie --scheme mollie --file testdata/payments/mollie_paid.json\n" +
			"  hookline dev send-webhook --source shop-paypal --scheme paypal --webhook-id WH-LOCAL-1 --file testdata/payments/paypal_capture.json\n" +
			"  hookline dev send-webhook --source shop-gocardless --scheme gocardless --file testdata/payments/gocardless_confirmed.json --object testdata/payments/gocardless_payment.json",
		Args: cobra.NoArgs,
	}
	f := cmd.Flags()
	f.StringVar(&a.source, "source", "", "source name, the {source} of /webhooks/{source} (required)")
	f.StringVar(&file, "file", "", "body to send: JSON, or XML for braintree (required)")
	f.StringVar(&base, "url", "", "base URL of the HTTP API (default: the one 'hookline run' wrote, else http://127.0.0.1:8080)")
	f.StringVar(&id, "id", "", "event ID (default: the body's \"id\")")
	f.StringVar(&scheme, "scheme", string(webhook.SchemeStandard), "the source's scheme: "+schemeNames())
	f.StringVar(&a.secret, "secret", "", "signing secret (default: $HOOKLINE_<SOURCE>_SECRETS, else the local development secret)")
	f.StringVar(&a.signedURL, "signed-url", "", "square: the signed_url the source is configured with (default: the URL posted to)")
	f.StringVar(&a.webhookID, "webhook-id", "", "paypal: the webhook_id the source is configured with")
	f.StringVar(&a.object, "object", "", "paypal, gocardless: the capture, sale or payment the provider's API holds, written to its local double first (paypal's default: the event's resource)")
	f.BoolVar(&a.tamper, "tamper", false, "sign one body and send another, to see a 401")
	f.IntVar(&attempts, "attempts", 3, "attempts before giving up, like a provider's retries")
	asJSON := jsonFlag(cmd)
	require(cmd, "source", "file")
	_ = cmd.RegisterFlagCompletionFunc("source", completeSources)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		a.scheme = webhook.Scheme(scheme)
		if err := a.check(attempts); err != nil {
			return err
		}
		loadEndpoints()
		body, err := os.ReadFile(file)
		if err != nil {
			fmt.Fprintln(stderr, "hookline dev send-webhook:", err)
			return exit(exitFailure)
		}
		eventID := id
		if eventID == "" {
			eventID = bodyID(body)
		}
		a.target = strings.TrimSuffix(apiURL(base), "/") + "/webhooks/" + a.source
		a.key = signingSecret(a.source, a.secret)
		if a.scheme.NeedsSecret() && a.key == "" {
			return errNoSecret(a.source)
		}
		body, sign, err := a.delivery(cmd.Context(), eventID, body)
		if err != nil {
			fmt.Fprintln(stderr, "hookline dev send-webhook:", err)
			return exit(exitFailure)
		}
		sender, err := providersim.NewSender(providersim.SenderConfig{
			URL: a.target, Sign: sign, MaxAttempts: attempts, BaseBackoff: 200 * time.Millisecond,
			Now: localClock(cmd.Context(), base),
		})
		if err != nil {
			fmt.Fprintln(stderr, "hookline dev send-webhook:", err)
			return exit(exitUsage)
		}
		d := sender.Send(cmd.Context(), eventID, body)
		return exit(reportDelivery(cmd.OutOrStdout(), eventID, d, *asJSON))
	}
	return cmd
}

// schemeNames lists every scheme a source may name.
func schemeNames() string {
	var names []string
	for _, s := range webhook.Schemes() {
		names = append(names, string(s))
	}
	return strings.Join(names, ", ")
}

// sendArgs are send-webhook's choices of how a provider signs.
type sendArgs struct {
	scheme                               webhook.Scheme
	source, secret, signedURL, webhookID string
	tamper                               bool
	// object is the file of the object a fetched provider's API holds.
	object string
	// target is the URL posted to; key the secret signed with.
	target, key string
}

// check refuses what no provider would send.
func (a sendArgs) check(attempts int) error {
	switch {
	case !a.scheme.Valid():
		return usageErrorf("--scheme %q: want one of %s", a.scheme, schemeNames())
	case attempts < 1:
		return usageErrorf("--attempts must be at least 1")
	case a.scheme == webhook.SchemeMollie && a.tamper:
		return usageErrorf("--tamper: mollie does not sign its webhooks; there is nothing to tamper with")
	case a.scheme == webhook.SchemePayPal && a.webhookID == "":
		return usageErrorf("--scheme paypal needs --webhook-id, the source's webhook_id")
	case a.scheme != webhook.SchemePayPal && a.webhookID != "":
		return usageErrorf("--webhook-id is for --scheme paypal")
	case a.scheme != webhook.SchemeSquare && a.signedURL != "":
		return usageErrorf("--signed-url is for --scheme square")
	case a.object != "" && a.scheme != webhook.SchemePayPal && a.scheme != webhook.SchemeGoCardless:
		return usageErrorf("--object is for --scheme paypal or gocardless")
	}
	return nil
}

// formHeader is the content type of the providers that post forms.
var formHeader = http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}

// delivery returns the body a provider posts and the signer of each of
// its attempts.
func (a sendArgs) delivery(ctx context.Context, id string, body []byte) ([]byte, providersim.Signer, error) {
	if a.scheme.NeedsSecret() && a.key == "" {
		return nil, nil, errNoSecret(a.source)
	}
	switch a.scheme {
	case webhook.SchemeStandard, webhook.SchemeStripe:
		return body, func(id string, ts time.Time, b []byte) (http.Header, error) {
			return webhook.SignHeaders(a.scheme, []string{a.key}, id, ts, a.signed(b))
		}, nil
	case webhook.SchemeAdyen:
		signed, err := webhook.SignAdyen(a.key, body)
		if a.tamper {
			// The PSP reference is one of the fields Adyen signs.
			signed = bytes.ReplaceAll(signed, []byte(`"pspReference":"`), []byte(`"pspReference":"X`))
		}
		return signed, nil, err
	case webhook.SchemeBraintree:
		return a.braintree(body)
	case webhook.SchemeMollie:
		return a.mollie(ctx, id, body)
	case webhook.SchemePayPal:
		if err := a.putPayPalObject(ctx, body); err != nil {
			return nil, nil, err
		}
		return a.paypal(body)
	case webhook.SchemeGoCardless:
		if err := a.putGoCardlessPayment(ctx); err != nil {
			return nil, nil, err
		}
	}
	opts := webhook.PresetOptions{SignedURL: cmp.Or(a.signedURL, a.target)}
	return body, func(id string, ts time.Time, b []byte) (http.Header, error) {
		return webhook.SignPreset(a.scheme, a.key, opts, id, ts, a.signed(b))
	}, nil
}

// signed is what is signed for body b: b itself, or other bytes with
// --tamper.
func (a sendArgs) signed(b []byte) []byte {
	if a.tamper {
		return append(bytes.Clone(b), ' ')
	}
	return b
}

// braintree posts the form Braintree posts for the XML notification;
// with --tamper its signature is of another notification.
func (a sendArgs) braintree(notification []byte) ([]byte, providersim.Signer, error) {
	form, err := webhook.SignBraintree(a.key, notification)
	if err != nil {
		return nil, nil, err
	}
	if a.tamper {
		other, err := webhook.SignBraintree(a.key, a.signed(notification))
		if err != nil {
			return nil, nil, err
		}
		sent, _ := url.ParseQuery(form)
		forged, _ := url.ParseQuery(other)
		sent.Set("bt_signature", forged.Get("bt_signature"))
		form = sent.Encode()
	}
	return []byte(form), func(string, time.Time, []byte) (http.Header, error) { return formHeader, nil }, nil
}

// mollie writes the payment to the local Mollie double and pings its ID,
// as Mollie pings.
func (a sendArgs) mollie(ctx context.Context, id string, payment []byte) ([]byte, providersim.Signer, error) {
	if err := putObject(ctx, "HOOKLINE_MOLLIE_URL", "Mollie", providersim.MollieSimPath, id, payment); err != nil {
		return nil, nil, err
	}
	ping := url.Values{"id": {id}}.Encode()
	return []byte(ping), func(string, time.Time, []byte) (http.Header, error) { return formHeader, nil }, nil
}

// paypal signs as PayPal does, with the key of the local certificate
// double, whose certificate URL goes in PAYPAL-CERT-URL.
func (a sendArgs) paypal(body []byte) ([]byte, providersim.Signer, error) {
	certURL, keyFile := os.Getenv("HOOKLINE_PAYPAL_CERT_URL"), os.Getenv("HOOKLINE_PAYPAL_KEY_FILE")
	if certURL == "" || keyFile == "" {
		return nil, nil, errors.New("PayPal is signed only against the local certificate double: start 'hookline run' in this directory")
	}
	key, err := readRSAKey(keyFile)
	if err != nil {
		return nil, nil, err
	}
	n := 0
	return body, func(id string, ts time.Time, b []byte) (http.Header, error) {
		n++ // every attempt is a transmission of its own
		return webhook.SignPayPal(key, certURL, a.webhookID, fmt.Sprintf("%s-%d", id, n), ts, a.signed(b))
	}, nil
}

// readRSAKey reads a PEM (PKCS #8) RSA private key.
func readRSAKey(path string) (*rsa.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM key", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	key, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: not an RSA key", path)
	}
	return key, nil
}

func reportDelivery(out io.Writer, eventID string, d providersim.Delivery, asJSON bool) int {
	code := exitOK
	if !d.Delivered {
		code = exitFailure
	}
	if asJSON {
		v := deliveryJSON{EventID: eventID, Delivered: d.Delivered, Attempts: []attemptJSON{}}
		for _, a := range d.Attempts {
			at := attemptJSON{Status: a.StatusCode, Error: a.Err}
			if b := strings.TrimSpace(a.Body); json.Valid([]byte(b)) {
				at.Body = json.RawMessage(b)
			}
			v.Attempts = append(v.Attempts, at)
		}
		if writeJSON(out, v) != nil {
			return exitFailure
		}
		return code
	}
	for i, a := range d.Attempts {
		status := fmt.Sprint(a.StatusCode)
		if a.Err != "" {
			status = a.Err
		}
		fmt.Fprintf(out, "attempt %d: %s %s\n", i+1, status, strings.TrimSpace(a.Body))
	}
	if !d.Delivered {
		fmt.Fprintf(out, "event %s not delivered\n", eventID)
		return code
	}
	fmt.Fprintf(out, "event %s delivered\n", eventID)
	return code
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

// errNoSecret is the usage error of a sender without a secret for source.
func errNoSecret(source string) error {
	return usageErrorf("no secret for source %q: pass --secret or set $%s", source, localrun.SecretVar(source))
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

// usageJSON is what dev send-usage prints with --json.
type usageJSON struct {
	Record  string          `json:"record"`
	Units   int64           `json:"units"`
	Webhook string          `json:"webhook"`
	Status  int             `json:"status"`
	Answer  json.RawMessage `json:"answer,omitempty"`
}

// newSendUsageCmd records usage at the local provider simulator, which adds
// it to its authoritative export and sends (or drops, or alters) the signed
// usage webhook to the receiver, as the real provider would.
func newSendUsageCmd() *cobra.Command {
	var workload, record, providerURL, format string
	var units, alter int64
	var drop bool
	var ce ceArgs
	cmd := &cobra.Command{
		Use:   "send-usage --workload REF --units N [--record ID] [--drop-webhook | --webhook-units N]",
		Short: "Record usage at the local provider simulator, which sends its signed webhook",
		Long: `Record usage at the local provider simulator, which adds it to its export
and sends hookline's signed usage.recorded webhook (--format hookline, the
default).

--format cloudevents sends the usage as a metering producer does instead:
CloudEvents 1.0 JSON, one event (structured mode) or --batch N of them,
signed with Standard Webhooks (or under Svix's header names with --svix)
and posted to /webhooks/{--source}, whose USAGE_MAPPINGS entry reads them.
The workload is the event's subject and --value its data.value. The secret
is --secret, else the first of $HOOKLINE_<SOURCE>_SECRETS, else the local
development secret of the source (usage has one); no secret is a usage
error (exit 2), as for send-webhook.`,
		Example: "  hookline dev send-usage --workload img-resize --units 400 --record ur_1\n" +
			"  hookline dev send-usage --workload thumbs --units 600 --record ur_11 --drop-webhook\n" +
			"  hookline dev send-usage --format cloudevents --source meters --type com.example.tokens --workload img-resize --value 12.5\n" +
			"  hookline dev send-usage --format cloudevents --source meters --type com.example.tokens --workload img-resize --value 0.25 --batch 4",
		Args: cobra.NoArgs,
	}
	f := cmd.Flags()
	f.StringVar(&workload, "workload", "", "the provider's workload reference (required)")
	f.Int64Var(&units, "units", 0, "spend units, positive (required)")
	f.StringVar(&record, "record", "", "usage record ID (default: a new one)")
	f.BoolVar(&drop, "drop-webhook", false, "record the usage but drop its webhook (only reconciliation will see it)")
	f.Int64Var(&alter, "webhook-units", 0, "send a webhook with these units instead (a disagreement)")
	f.StringVar(&providerURL, "provider", "", "provider simulator URL (default: the one 'hookline run' wrote)")
	f.StringVar(&format, "format", formatHookline, "what to send: hookline (usage.recorded, through the provider simulator) or cloudevents")
	addCloudEventsFlags(cmd, &ce)
	asJSON := jsonFlag(cmd)
	require(cmd, "workload")
	cmd.MarkFlagsMutuallyExclusive("drop-webhook", "webhook-units")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := checkFormatFlags(cmd, format); err != nil {
			return err
		}
		switch format {
		case formatCloudEvents:
			ce.workload, ce.asJSON = workload, *asJSON
			return sendCloudEvents(cmd, ce)
		case formatHookline:
		default:
			return usageErrorf("--format %q: want %s or %s", format, formatHookline, formatCloudEvents)
		}
		if !cmd.Flags().Changed("units") {
			return usageErrorf("--units is required with --format hookline")
		}
		if units <= 0 || alter < 0 {
			return usageErrorf("--units must be positive and --webhook-units not negative")
		}
		loadEndpoints()
		if providerURL == "" {
			providerURL = os.Getenv("HOOKLINE_PROVIDER_URL")
		}
		if providerURL == "" {
			return usageErrorf("no provider simulator: start 'hookline run' in this directory, or pass --provider")
		}
		if record == "" {
			record = fmt.Sprintf("ur_%d", time.Now().UnixNano())
		}
		req := map[string]any{"record_id": record, "workload_ref": workload, "units": units, "webhook": "send"}
		switch {
		case drop:
			req["webhook"] = "drop"
		case alter > 0:
			req["webhook"], req["webhook_units"] = "alter", alter
		}
		body, _ := json.Marshal(req)
		status, answer, err := httpDo(cmd.Context(), http.MethodPost, strings.TrimSuffix(providerURL, "/")+"/sim/usage", body)
		if err != nil {
			fmt.Fprintln(stderr, "hookline dev send-usage:", err)
			return exit(exitFailure)
		}
		code := exitOK
		if status != http.StatusOK {
			code = exitFailure
		}
		out := cmd.OutOrStdout()
		if *asJSON {
			v := usageJSON{Record: record, Units: units, Webhook: req["webhook"].(string), Status: status}
			if json.Valid(answer) {
				v.Answer = answer
			}
			if err := jsonResult(out, v); err != nil {
				return err
			}
			return exit(code)
		}
		fmt.Fprintf(out, "usage %s (%d units, %s): %s\n", record, units, req["webhook"], answer)
		return exit(code)
	}
	return cmd
}
