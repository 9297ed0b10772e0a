package localrun

import (
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
	return nil
}
