package localaws

import (
	"crypto/sha256"
	"strconv"
	"testing"
	"time"
)

func TestTokensAnswerForTenMinutes(t *testing.T) {
	// Given a successful call's token
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	tk := newTokens()
	tk.now = func() time.Time { return now }
	a, b := sha256.Sum256([]byte("a")), sha256.Sum256([]byte("b"))
	if v := tk.begin("t", a); v != tokenRun {
		t.Fatalf("first call: %v, want run", v)
	}
	// When it is repeated while it runs, then after it succeeded
	if v := tk.begin("t", a); v != tokenRunning {
		t.Fatalf("repeat while running: %v, want running", v)
	}
	tk.finish("t", true)
	// Then a repeat is answered as done for 10 minutes, a mismatch refused
	now = now.Add(tokenWindow - time.Second)
	if v := tk.begin("t", a); v != tokenDone {
		t.Fatalf("repeat within the window: %v, want done", v)
	}
	if v := tk.begin("t", b); v != tokenMismatch {
		t.Fatalf("other parameters: %v, want mismatch", v)
	}
	// and after the window it is a new call
	now = now.Add(2 * time.Second)
	if v := tk.begin("t", b); v != tokenRun {
		t.Fatalf("after the window: %v, want run", v)
	}
	// and a failed call frees its token
	tk.finish("t", false)
	if v := tk.begin("t", a); v != tokenRun {
		t.Fatalf("after a failure: %v, want run", v)
	}
}

func TestTokensStayBounded(t *testing.T) {
	// Given more successful calls than maxTokens within one window
	tk := newTokens()
	d := sha256.Sum256(nil)
	for i := range maxTokens + 100 {
		tk.begin(strconv.Itoa(i), d)
		tk.finish(strconv.Itoa(i), true)
	}
	// Then only maxTokens are kept, the newest
	if len(tk.byKey) != maxTokens || len(tk.order) != maxTokens {
		t.Fatalf("kept %d tokens (%d in order), want %d", len(tk.byKey), len(tk.order), maxTokens)
	}
	if v := tk.begin(strconv.Itoa(maxTokens+99), d); v != tokenDone {
		t.Fatalf("newest token: %v, want done", v)
	}
	if v := tk.begin("0", d); v != tokenRun {
		t.Fatalf("oldest token: %v, want forgotten", v)
	}
}
