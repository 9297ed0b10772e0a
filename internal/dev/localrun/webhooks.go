package localrun

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/pkg/webhook"
)

// wireUsageWebhooks makes the simulator send its usage webhooks to the
// local receiver, signed with the usage source's secret, as the real
// provider would.
func (s *System) wireUsageWebhooks() error {
	lookup, err := s.functionLookup("ReceiverFunction")
	if err != nil {
		return err
	}
	secret, _ := lookup(SecretVar("usage"))
	keys := webhook.SplitSecrets(secret)
	sign := func(id string, ts time.Time, body []byte) (http.Header, error) {
		return webhook.SignHeaders(webhook.SchemeStandard, keys[:1], id, ts, body)
	}
	snd, err := providersim.NewSender(providersim.SenderConfig{URL: s.URL + "/webhooks/usage", Sign: sign, BaseBackoff: 200 * time.Millisecond})
	if err != nil {
		return err
	}
	s.Sim.Usage.SetUsageWebhooks(snd)
	return s.wireAlertWebhooks(lookup)
}

// wireAlertWebhooks makes the simulator's Stripe face post its billing
// alerts (POST /sim/meters/alerts/send) to the first Stripe-signed source
// that feeds the usage queue, signed with its secret, as Stripe posts
// them to a webhook endpoint. Without such a source, alerts are not sent.
func (s *System) wireAlertWebhooks(lookup func(string) (string, bool)) error {
	text, _ := lookup("HOOKLINE_SOURCES")
	var sources []struct{ Name, Scheme, Queue string }
	if err := json.Unmarshal([]byte(text), &sources); err != nil {
		return fmt.Errorf("localrun: HOOKLINE_SOURCES: %w", err)
	}
	for _, src := range sources {
		if src.Scheme != string(webhook.SchemeStripe) || src.Queue != "usage" {
			continue
		}
		secret, _ := lookup(SecretVar(src.Name))
		keys := webhook.SplitSecrets(secret)
		if len(keys) == 0 {
			return fmt.Errorf("localrun: source %s has no secret in %s", src.Name, SecretVar(src.Name))
		}
		snd, err := providersim.NewSender(providersim.SenderConfig{URL: s.URL + "/webhooks/" + src.Name,
			Sign: providersim.StripeSigner(keys[0]), BaseBackoff: 200 * time.Millisecond})
		if err != nil {
			return err
		}
		s.Sim.SetMeterAlertWebhooks(snd)
		return nil
	}
	return nil
}
