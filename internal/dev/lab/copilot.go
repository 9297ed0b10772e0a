package lab

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
)

// ErrNotUnderstood reports a copilot line that is not in its grammar.
var ErrNotUnderstood = errors.New("lab: not understood")

// Prompts are the design's three prompts, offered as buttons.
var Prompts = []string{"turn on idempotency", "what broke?", "traffic spike 3x"}

// Verb is what a copilot command does.
type Verb int

// Verbs of the copilot grammar.
const (
	VerbHelp Verb = iota
	VerbIdempotency
	VerbSpike
	VerbLostAcks
	VerbProfile
	VerbRate
	VerbReset
	VerbWhatBroke
	VerbShowFix
)

// Command is one parsed copilot line.
type Command struct {
	Verb Verb
	// On is the idempotency asked for.
	On bool
	// Value is the spike's factor, the lost share (0.01 for 1%) or the
	// rate.
	Value float64
	// For is how long a spike lasts.
	For     time.Duration
	Profile providersim.Profile
	// Text is the line as typed, trimmed.
	Text string
}

// defaultSpikeFor is a spike's length when none is given: the batch
// suite's.
const defaultSpikeFor = 10 * time.Second

var (
	reIdempotency = regexp.MustCompile(`^(?:(?:turn|switch|set) )?(on|off|enable|disable) idempotency$|^(?:turn|switch|set) idempotency (on|off)$|^idempotency (on|off)$`)
	reSpike       = regexp.MustCompile(`^(?:(?:traffic|load) )?spike (?:of )?(\d+(?:\.\d+)?) ?(?:x|×|times)(?: for (\d+(?:\.\d+)?) ?(s|sec|secs|seconds?|m|min|minutes?))?$`)
	reLostAcks    = regexp.MustCompile(`^(?:lose|drop) (\d+(?:\.\d+)?) ?% of (?:the )?(?:acks?|acknowledgements?|acknowledgments?)$|^lost acks? (\d+(?:\.\d+)?) ?%$`)
	reProfile     = regexp.MustCompile(`^(?:the )?provider (ignores keys|honours keys|honors keys|replays successes)$`)
	reRate        = regexp.MustCompile(`^(?:set )?rate (?:to )?(\d+(?:\.\d+)?)(?: ?(?:/s|per second|webhooks/s))?$`)
)

// ParseCommand reads one copilot line. A line it does not understand is
// [ErrNotUnderstood]; "help" is [VerbHelp].
func ParseCommand(text string) (Command, error) {
	c := Command{Text: strings.TrimSpace(text)}
	s := strings.Join(strings.Fields(strings.ToLower(c.Text)), " ")
	s = strings.TrimRight(s, ".!? ")
	switch s {
	case "help", "what can you do", "commands":
		c.Verb = VerbHelp
		return c, nil
	case "reset":
		c.Verb = VerbReset
		return c, nil
	case "what broke", "what's broken", "what is broken":
		c.Verb = VerbWhatBroke
		return c, nil
	case "show the fix", "show fix", "show me the fix", "the fix", "fix", "how do i fix it":
		c.Verb = VerbShowFix
		return c, nil
	}
	if m := reIdempotency.FindStringSubmatch(s); m != nil {
		word := m[1] + m[2] + m[3]
		c.Verb, c.On = VerbIdempotency, word == "on" || word == "enable"
		return c, nil
	}
	if m := reSpike.FindStringSubmatch(s); m != nil {
		return spike(c, m)
	}
	if m := reLostAcks.FindStringSubmatch(s); m != nil {
		p, _ := strconv.ParseFloat(m[1]+m[2], 64)
		c.Verb, c.Value = VerbLostAcks, p/100
		return c, nil
	}
	if m := reProfile.FindStringSubmatch(s); m != nil {
		c.Verb = VerbProfile
		c.Profile = map[string]providersim.Profile{
			"ignores keys": providersim.ProfileIgnoresKeys, "honours keys": providersim.ProfileHonoursKeys,
			"honors keys": providersim.ProfileHonoursKeys, "replays successes": providersim.ProfileReplaysSuccesses,
		}[m[1]]
		return c, nil
	}
	if m := reRate.FindStringSubmatch(s); m != nil {
		c.Verb = VerbRate
		c.Value, _ = strconv.ParseFloat(m[1], 64)
		return c, nil
	}
	return c, fmt.Errorf("%w: %q", ErrNotUnderstood, c.Text)
}

// spike reads reSpike's match m.
func spike(c Command, m []string) (Command, error) {
	c.Verb, c.For = VerbSpike, defaultSpikeFor
	c.Value, _ = strconv.ParseFloat(m[1], 64)
	if m[2] != "" {
		n, _ := strconv.ParseFloat(m[2], 64)
		unit := time.Second
		if strings.HasPrefix(m[3], "m") {
			unit = time.Minute
		}
		c.For = time.Duration(n * float64(unit))
	}
	return c, nil
}

// Help is what the copilot understands.
const Help = `I understand:
  turn on idempotency / turn off idempotency
  what broke?  then  show the fix
  traffic spike 3x  (or: traffic spike 5x for 20s)
  lose 1% of acks
  provider ignores keys / provider honours keys / provider replays successes
  rate 800
  reset  (back to where the lab started)
  help`

// Reply is the copilot's answer to one line.
type Reply struct {
	Understood bool   `json:"understood"`
	Text       string `json:"reply"`
	// Findings are the goals missed, for "what broke?".
	Findings []Finding `json:"findings,omitempty"`
}

// Ask parses text and carries it out on the live lab. A line it does not
// understand is answered with [Help] and [ErrNotUnderstood]; a change it
// refuses with [ErrOutOfRange].
func (l *Live) Ask(text string) (Reply, error) {
	c, err := ParseCommand(text)
	if err != nil {
		return Reply{Text: "I did not understand " + strconv.Quote(c.Text) + ". " + Help}, err
	}
	if err := l.do(c); err != nil {
		return Reply{Understood: true, Text: "Not changed: " + strings.TrimPrefix(err.Error(), ErrOutOfRange.Error()+": ") + "."}, err
	}
	r := Reply{Understood: true}
	switch c.Verb {
	case VerbWhatBroke:
		r.Findings, r.Text = l.whatBroke()
	case VerbShowFix:
		r.Text = l.fixes()
	default:
		r.Text = said(c)
	}
	return r, nil
}

// do applies a change; questions change nothing.
func (l *Live) do(c Command) error {
	switch c.Verb {
	case VerbIdempotency:
		l.SetIdempotency(c.On, c.Text)
	case VerbSpike:
		return l.Spike(c.Value, c.For, c.Text)
	case VerbLostAcks:
		return l.SetLostAcks(c.Value, c.Text)
	case VerbProfile:
		l.SetProfile(c.Profile, c.Text)
	case VerbRate:
		return l.SetRate(c.Value, c.Text)
	case VerbReset:
		l.Reset(c.Text)
	}
	return nil
}

// said is the answer to a change, or to help.
func said(c Command) string {
	switch c.Verb {
	case VerbIdempotency:
		if c.On {
			return fmt.Sprintf("Idempotency on: the worker now claims payments:<event_id> with one conditional write before it charges, and acknowledges a redelivery it already charged without charging again. Duplicate charges/s should fall to 0 within a visibility timeout (%d s) while redeliveries go on; before and after is under the charts.", visibilitySec)
		}
		return "Idempotency off: every delivery charges, so each lost acknowledgement becomes a duplicate charge when SQS redelivers it."
	case VerbSpike:
		return fmt.Sprintf("Spike: %gx the rate for %s. More events, more lost acknowledgements, more redeliveries: watch the queue rise and drain.", c.Value, c.For)
	case VerbLostAcks:
		return fmt.Sprintf("Now %s of acknowledgements are lost: each comes back after the visibility timeout (%d s).", pct(c.Value), visibilitySec)
	case VerbProfile:
		return fmt.Sprintf("The provider now %s.", profileSays(c.Profile))
	case VerbRate:
		return fmt.Sprintf("Offering %g webhooks/s.", c.Value)
	case VerbReset:
		return "Reset: every knob is back where the lab started."
	}
	return Help
}

func profileSays(p providersim.Profile) string {
	switch p {
	case providersim.ProfileHonoursKeys:
		return "honours idempotency keys and replays the first result, errors included (Stripe's way): it hides duplicates even with idempotency off, for calls that carry a key"
	case providersim.ProfileReplaysSuccesses:
		return "replays successful results only and executes again after an error (Checkout.com's way)"
	}
	return "ignores idempotency keys: only the worker's own idempotency prevents a duplicate charge"
}

// whatBroke answers "what broke?" from the live findings.
func (l *Live) whatBroke() ([]Finding, string) {
	fs, since := l.WhatBroke()
	if len(fs) == 0 {
		return fs, fmt.Sprintf("Nothing broke over %s: every goal held.", since)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Over %s:", since)
	for _, f := range fs {
		crit := ""
		if f.Critical {
			crit = " (critical)"
		}
		fmt.Fprintf(&b, "\n• %s%s missed: %s. Why: %s.", f.Goal, crit, f.Measured, f.Why)
	}
	b.WriteString("\nAsk \"show the fix\" for the fix.")
	return fs, b.String()
}

// fixes answers "show the fix": the fixes of the last "what broke?".
func (l *Live) fixes() string {
	fs := l.Fixes()
	if len(fs) == 0 {
		return "Ask \"what broke?\" first: the fix comes with a finding, and there is none yet."
	}
	var b strings.Builder
	for i, f := range fs {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "Fix for %s: %s.", f.Goal, f.Fix)
		if f.Goal == goalNoDuplicates && !l.e.idempotent.Load() {
			b.WriteString(" Here: type \"turn on idempotency\".")
		}
	}
	return b.String()
}
