//go:build !oncall

package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/usagein"
)

// Usage formats dev send-usage sends.
const (
	formatHookline    = usagein.FormatHookline
	formatCloudEvents = usagein.FormatCloudEvents
)

// ceArgs are send-usage's choices for --format cloudevents.
type ceArgs struct {
	source, secret, base string
	typ, eventSource, id string
	value                string
	batch, attempts      int
	ago                  time.Duration
	svix                 bool
	workload             string
	asJSON               bool
}

// addCloudEventsFlags adds the flags of --format cloudevents to cmd.
func addCloudEventsFlags(cmd *cobra.Command, a *ceArgs) {
	f := cmd.Flags()
	f.StringVar(&a.source, "source", "usage", "cloudevents: the usage source, the {source} of /webhooks/{source}")
	f.StringVar(&a.value, "value", "", "cloudevents: the event's data.value, a decimal such as 12.5 (required with --format cloudevents)")
	f.StringVar(&a.typ, "type", "com.example.usage", "cloudevents: the event type (one of the source's usage_types to count it)")
	f.StringVar(&a.eventSource, "event-source", "/hookline/dev", "cloudevents: the event's source attribute")
	f.StringVar(&a.id, "id", "", "cloudevents: the event's id (default: a new one; a batch numbers its events id-1, id-2, ...)")
	f.IntVar(&a.batch, "batch", 0, "cloudevents: send N events in one batch (application/cloudevents-batch+json) instead of one")
	f.DurationVar(&a.ago, "ago", 0, "cloudevents: give the event a time attribute this long ago (default: none, so that a re-sent event is the same bytes; it happened when hookline first saw it)")
	f.BoolVar(&a.svix, "svix", false, "cloudevents: sign under Svix's header names (svix-id, svix-timestamp, svix-signature)")
	f.StringVar(&a.secret, "secret", "", "cloudevents: signing secret (default: $HOOKLINE_<SOURCE>_SECRETS, else the local development secret)")
	f.StringVar(&a.base, "url", "", "cloudevents: base URL of the HTTP API (default: the one 'hookline run' wrote, else http://127.0.0.1:8080)")
	f.IntVar(&a.attempts, "attempts", 3, "cloudevents: attempts before giving up, like a producer's retries")
}

// check refuses what no producer would send.
func (a ceArgs) check() error {
	switch {
	case a.value == "":
		return usageErrorf("--format cloudevents needs --value, the event's data.value")
	case a.batch < 0:
		return usageErrorf("--batch must not be negative")
	case a.attempts < 1:
		return usageErrorf("--attempts must be at least 1")
	case a.ago < 0:
		return usageErrorf("--ago must not be negative")
	}
	return nil
}

// events are the events to send: one, or --batch of them.
func (a ceArgs) events(now time.Time) []providersim.UsageCloudEvent {
	id := a.id
	if id == "" {
		id = fmt.Sprintf("ce_%d", now.UnixNano())
	}
	ev := providersim.UsageCloudEvent{Source: a.eventSource, ID: id, Type: a.typ, Subject: a.workload, Value: a.value}
	if a.ago > 0 {
		ev.Time = now.Add(-a.ago)
	}
	if a.batch == 0 {
		return []providersim.UsageCloudEvent{ev}
	}
	evs := make([]providersim.UsageCloudEvent, a.batch)
	for i := range evs {
		evs[i] = ev
		evs[i].ID = fmt.Sprintf("%s-%d", id, i+1)
	}
	return evs
}

// sendCloudEvents signs CloudEvents as a producer's Standard Webhooks
// library does and posts them to the source, retrying on non-2xx answers.
func sendCloudEvents(cmd *cobra.Command, a ceArgs) error {
	if err := a.check(); err != nil {
		return err
	}
	loadEndpoints()
	now := localClock(cmd.Context(), a.base)
	evs := a.events(now())
	body, contentType, err := providersim.CloudEventsBody(evs, a.batch > 0)
	if err != nil {
		return usageErrorf("--value: %v", err)
	}
	secret := signingSecret(a.source, a.secret)
	if secret == "" {
		return errNoSecret(a.source)
	}
	sender, err := providersim.NewSender(providersim.SenderConfig{
		URL: strings.TrimSuffix(apiURL(a.base), "/") + "/webhooks/" + a.source, MaxAttempts: a.attempts, BaseBackoff: 200 * time.Millisecond,
		Sign: providersim.StandardSigner(secret, contentType, a.svix), Now: now,
	})
	if err != nil {
		fmt.Fprintln(stderr, "hookline dev send-usage:", err)
		return exit(exitUsage)
	}
	msgID := "msg_" + evs[0].ID
	d := sender.Send(cmd.Context(), msgID, body)
	return exit(reportDelivery(cmd.OutOrStdout(), msgID, d, a.asJSON))
}

// The flags of each format of send-usage; a flag of the other format is
// refused rather than ignored.
var (
	cloudEventsOnly = []string{"source", "value", "type", "event-source", "id", "batch", "ago", "svix", "secret", "url", "attempts"}
	hooklineOnly    = []string{"units", "record", "drop-webhook", "webhook-units", "provider"}
)

// checkFormatFlags refuses a flag of the other format than format.
func checkFormatFlags(cmd *cobra.Command, format string) error {
	other := cloudEventsOnly
	if format == formatCloudEvents {
		other = hooklineOnly
	}
	for _, name := range other {
		if cmd.Flags().Changed(name) {
			return usageErrorf("--%s is not for --format %s", name, format)
		}
	}
	return nil
}
