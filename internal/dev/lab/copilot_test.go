package lab_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/lab"
	"github.com/hookline/hookline/internal/dev/providersim"
)

func TestParseCommand(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want lab.Command
	}{
		{name: "idempotency on", in: "turn on idempotency", want: lab.Command{Verb: lab.VerbIdempotency, On: true}},
		{name: "idempotency off", in: "Turn off idempotency.", want: lab.Command{Verb: lab.VerbIdempotency}},
		{name: "idempotency on, other order", in: "switch idempotency on", want: lab.Command{Verb: lab.VerbIdempotency, On: true}},
		{name: "spike with the default length", in: "traffic spike 3x", want: lab.Command{Verb: lab.VerbSpike, Value: 3, For: 10 * time.Second}},
		{name: "spike for 20 s", in: "traffic spike 5x for 20s", want: lab.Command{Verb: lab.VerbSpike, Value: 5, For: 20 * time.Second}},
		{name: "spike for a minute", in: "spike 2.5x for 1 min", want: lab.Command{Verb: lab.VerbSpike, Value: 2.5, For: time.Minute}},
		{name: "lost acks", in: "lose 1% of acks", want: lab.Command{Verb: lab.VerbLostAcks, Value: 0.01}},
		{name: "lost acknowledgements", in: "lose 0.2% of acknowledgements", want: lab.Command{Verb: lab.VerbLostAcks, Value: 0.002}},
		{name: "provider ignores keys", in: "provider ignores keys", want: lab.Command{Verb: lab.VerbProfile, Profile: providersim.ProfileIgnoresKeys}},
		{name: "provider honours keys", in: "provider honors keys", want: lab.Command{Verb: lab.VerbProfile, Profile: providersim.ProfileHonoursKeys}},
		{name: "provider replays successes", in: "provider replays successes", want: lab.Command{Verb: lab.VerbProfile, Profile: providersim.ProfileReplaysSuccesses}},
		{name: "rate", in: "rate 800", want: lab.Command{Verb: lab.VerbRate, Value: 800}},
		{name: "reset", in: " reset ", want: lab.Command{Verb: lab.VerbReset}},
		{name: "what broke", in: "what broke?", want: lab.Command{Verb: lab.VerbWhatBroke}},
		{name: "show the fix", in: "show the fix", want: lab.Command{Verb: lab.VerbShowFix}},
		{name: "help", in: "help", want: lab.Command{Verb: lab.VerbHelp}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := lab.ParseCommand(tt.in)
			tt.want.Text = strings.TrimSpace(tt.in)
			if err != nil || got != tt.want {
				t.Fatalf("ParseCommand(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
		})
	}
	for _, in := range []string{"", "make it faster", "rate", "spike x3", "lose some acks", "provider forgets keys"} {
		if got, err := lab.ParseCommand(in); !errors.Is(err, lab.ErrNotUnderstood) {
			t.Errorf("ParseCommand(%q) = %+v, %v; want ErrNotUnderstood", in, got, err)
		}
	}
}

// TestLiveServerFromOutside: the page holds the three prompts as
// buttons; the copilot answers help for what it does not understand,
// refuses bad bodies with 400 and out-of-range changes with 422, gives a
// fix only after a finding, and the event stream sends the state.
func TestLiveServerFromOutside(t *testing.T) {
	t.Parallel() // beside the lab runs: a live lab neither profiles nor sets GOGC
	live, srv := serveLive(t, lab.LiveConfig{Rate: 20, Seed: 1})

	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, p := range lab.Prompts {
		if !strings.Contains(string(body), fmt.Sprintf(`<button type="button" data-prompt=%q>%s</button>`, p, p)) {
			t.Errorf("the page has no button %q", p)
		}
	}

	for _, tt := range []struct {
		name, body string
		status     int
		says       string
	}{
		{"not JSON", `turn on idempotency`, http.StatusBadRequest, `the body must be`},
		{"no text", `{"text": ""}`, http.StatusBadRequest, `the body must be`},
		{"unknown field", `{"text": "help", "as": "root"}`, http.StatusBadRequest, `the body must be`},
		{"not understood", `{"text": "make it faster"}`, http.StatusOK, `I understand:`},
		{"help", `{"text": "help"}`, http.StatusOK, `traffic spike 5x for 20s`},
		{"rate too high", `{"text": "rate 99999"}`, http.StatusUnprocessableEntity, `Not changed: the rate must lie in`},
		{"spike too long", `{"text": "traffic spike 3x for 10 min"}`, http.StatusUnprocessableEntity, `Not changed:`},
		{"a fix before a finding", `{"text": "show the fix"}`, http.StatusOK, `Ask \"what broke?\" first`},
		{"lost acks", `{"text": "lose 1% of acks"}`, http.StatusOK, `1% of acknowledgements`},
		{"reset", `{"text": "reset"}`, http.StatusOK, `Reset`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, got := post(t, srv.URL+"/api/copilot", tt.body)
			if status != tt.status || !strings.Contains(got, tt.says) {
				t.Fatalf("POST %s: %d %s; want %d saying %q", tt.body, status, got, tt.status, tt.says)
			}
		})
	}
	if st := live.State(); st.Knobs.LostAcks != 0 || len(st.Changes) != 2 {
		t.Errorf("after lose 1%% of acks and reset: knobs %+v, changes %+v", st.Knobs, st.Changes)
	}

	resp, err = http.Get(srv.URL + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	var st lab.LiveState
	if err != nil || !strings.HasPrefix(line, "data: ") || json.Unmarshal([]byte(line[len("data: "):]), &st) != nil || st.Knobs.Rate != 20 {
		t.Fatalf("first event %q, %v: want the state", line, err)
	}
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
