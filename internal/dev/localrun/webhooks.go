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
	sources, err := doorSources(lookup)
	if err != nil {
		return err
	}
	keys := sourceKeys(lookup, sources, "usage")
	if len(keys) == 0 {
		return fmt.Errorf("localrun: source usage has no secret in %s", secretEnv(sources, "usage"))
	}
	sign := func(id string, ts time.Time, body []byte) (http.Header, error) {
		return webhook.SignHeaders(webhook.SchemeStandard, keys[:1], id, ts, body)
	}
	snd, err := providersim.NewSender(providersim.SenderConfig{URL: s.URL + "/webhooks/usage", Sign: sign, BaseBackoff: 200 * time.Millisecond,
		Now: s.now()})
	if err != nil {
		return err
	}
	s.Sim.Usage.SetUsageWebhooks(snd)
	return s.wireAlertWebhooks(lookup, sources)
}

// doorSource is what the simulator's senders read of a HOOKLINE_SOURCES
// entry.
type doorSource struct {
	Name, Scheme, Queue string
	SecretEnv           string `json:"secret_env"`
}

// doorSources reads the receiver's HOOKLINE_SOURCES.
func doorSources(lookup func(string) (string, bool)) ([]doorSource, error) {
	text, _ := lookup("HOOKLINE_SOURCES")
	var sources []doorSource
	if err := json.Unmarshal([]byte(text), &sources); err != nil {
		return nil, fmt.Errorf("localrun: HOOKLINE_SOURCES: %w", err)
	}
	return sources, nil
}

// secretEnv is the variable that holds source name's secrets, as the
// receiver reads them: its secret_env, else HOOKLINE_<NAME>_SECRETS (a
// source of the template, whose secret_id [localSources] replaced).
func secretEnv(sources []doorSource, name string) string {
	for _, src := range sources {
		if src.Name == name && src.SecretEnv != "" {
			return src.SecretEnv
		}
	}
	return SecretVar(name)
}

// sourceKeys are the secrets of source name, current first.
func sourceKeys(lookup func(string) (string, bool), sources []doorSource, name string) []string {
	secret, _ := lookup(secretEnv(sources, name))
	return webhook.SplitSecrets(secret)
}

// wireAlertWebhooks makes the simulator's Stripe face post its billing
// alerts (POST /sim/meters/alerts/send) to the first Stripe-signed source
// that feeds the usage queue, signed with its secret, as Stripe posts
// them to a webhook endpoint. Without such a source, alerts are not sent.
func (s *System) wireAlertWebhooks(lookup func(string) (string, bool), sources []doorSource) error {
	for _, src := range sources {
		if src.Scheme != string(webhook.SchemeStripe) || src.Queue != "usage" {
			continue
		}
		keys := sourceKeys(lookup, sources, src.Name)
		if len(keys) == 0 {
			return fmt.Errorf("localrun: source %s has no secret in %s", src.Name, secretEnv(sources, src.Name))
		}
		snd, err := providersim.NewSender(providersim.SenderConfig{URL: s.URL + "/webhooks/" + src.Name,
			Sign: providersim.StripeSigner(keys[0]), BaseBackoff: 200 * time.Millisecond, Now: s.now()})
		if err != nil {
			return err
		}
		s.Sim.SetMeterAlertWebhooks(snd)
		return nil
	}
	return nil
}
