package webhook

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	stripewebhook "github.com/stripe/stripe-go/v84/webhook"
)

// The peers are the reference Standard Webhooks library and stripe-go's
// webhook package, test-only dependencies. Each verifies only; hookline's
// Verify also parses the envelope. Goal: hookline's verify + parse within
// 1.2x of the fastest peer's verify alone, with at most 6 allocations.

const maxVerifyAllocs = 6

// peerCase is one scheme's request, signed now (the reference library reads
// the clock itself), and the three ways to check it.
type peerCase struct {
	name     string
	hookline func(b *testing.B) func() error
	peer     func(b *testing.B) func() error
	peerName string
}

func standardRequestNow(b testing.TB) (http.Header, []byte) {
	body := benchBody(b)
	h, err := SignHeaders(SchemeStandard, []string{standardNew}, "msg_bench", time.Now(), body)
	if err != nil {
		b.Fatal(err)
	}
	return h, body
}

func stripeRequestNow(b testing.TB) (string, []byte) {
	body := benchBody(b)
	return SignStripe(stripeNew, time.Now(), body), body
}

var peerCases = []peerCase{
	{
		name: "standard",
		hookline: func(b *testing.B) func() error {
			h, body := standardRequestNow(b)
			headers := HeaderMap{HeaderWebhookID: h.Get(HeaderWebhookID), HeaderWebhookTimestamp: h.Get(HeaderWebhookTimestamp), HeaderWebhookSignature: h.Get(HeaderWebhookSignature)}
			v, _ := NewVerifier(VerifierConfig{Scheme: SchemeStandard})
			secrets := []string{standardNew, standardOld}
			return func() error { _, err := v.Verify(headers, body, secrets); return err }
		},
		peerName: "standard-webhooks",
		peer: func(b *testing.B) func() error {
			h, body := standardRequestNow(b)
			wh, err := standardwebhooks.NewWebhook(standardNew)
			if err != nil {
				b.Fatal(err)
			}
			return func() error { return wh.Verify(body, h) }
		},
	},
	{
		name: "stripe",
		hookline: func(b *testing.B) func() error {
			sig, body := stripeRequestNow(b)
			headers := HeaderMap{HeaderStripeSignature: sig}
			v, _ := NewVerifier(VerifierConfig{Scheme: SchemeStripe})
			secrets := []string{stripeNew, stripeOld}
			return func() error { _, err := v.Verify(headers, body, secrets); return err }
		},
		peerName: "stripe-go",
		peer: func(b *testing.B) func() error {
			sig, body := stripeRequestNow(b)
			return func() error {
				return stripewebhook.ValidatePayloadWithTolerance(body, sig, stripeNew, DefaultTolerance)
			}
		},
	},
}

// nsPerOp times run over at least d and returns its mean cost.
func nsPerOp(b *testing.B, run func() error, d time.Duration) float64 {
	n, start := 0, time.Now()
	for time.Since(start) < d {
		for range 100 {
			if err := run(); err != nil {
				b.Fatal(err)
			}
		}
		n += 100
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

// BenchmarkVerifyPeers runs, in one process and side by side, hookline's
// verify + parse and each peer's verify alone (1 KiB body), interleaved
// over five rounds so that load on the machine falls on both, and reports
// the best round of each and hookline's time as a ratio of the peer's.
func BenchmarkVerifyPeers(b *testing.B) {
	for _, pc := range peerCases {
		b.Run(pc.name, func(b *testing.B) {
			ours, peer := pc.hookline(b), pc.peer(b)
			var o, p []float64
			for range 5 {
				o = append(o, nsPerOp(b, ours, 200*time.Millisecond))
				p = append(p, nsPerOp(b, peer, 200*time.Millisecond))
			}
			allocs := testing.AllocsPerRun(100, func() { ours() })
			peerAllocs := testing.AllocsPerRun(100, func() { peer() })
			b.ReportMetric(minOf(o), "hookline-verify+parse-ns")
			b.ReportMetric(minOf(p), pc.peerName+"-verify-ns")
			b.ReportMetric(minOf(o)/minOf(p), "x-"+pc.peerName)
			b.ReportMetric(allocs, "hookline-allocs")
			b.ReportMetric(peerAllocs, pc.peerName+"-allocs")
			b.ReportMetric(0, "ns/op")
		})
	}
}

func minOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs[1:] {
		m = min(m, x)
	}
	return m
}

// TestVerifyAllocations: verify + parse of a 1 KiB body stays within the
// allocation budget, for both schemes and with two active secrets.
func TestVerifyAllocations(t *testing.T) {
	body := benchBody(t)
	now := time.Unix(1_800_000_000, 0)
	for _, scheme := range []Scheme{SchemeStandard, SchemeStripe} {
		t.Run(string(scheme), func(t *testing.T) {
			secrets := []string{standardNew, standardOld}
			if scheme == SchemeStripe {
				secrets = []string{stripeNew, stripeOld}
			}
			h, err := SignHeaders(scheme, secrets[:1], "msg_alloc", now, body)
			if err != nil {
				t.Fatal(err)
			}
			headers := HeaderMap{}
			for k := range h {
				headers[k] = h.Get(k)
			}
			v, err := NewVerifier(VerifierConfig{Scheme: scheme, Now: clockAt(now)})
			if err != nil {
				t.Fatal(err)
			}
			allocs := testing.AllocsPerRun(200, func() {
				if _, err := v.Verify(headers, body, secrets); err != nil {
					t.Fatal(err)
				}
			})
			if allocs > maxVerifyAllocs {
				t.Fatalf("%s verify + parse: %.0f allocations, budget %d", scheme, allocs, maxVerifyAllocs)
			}
			t.Logf("%s verify + parse: %.0f allocations (budget %d); timestamp %s", scheme, allocs, maxVerifyAllocs, strconv.FormatInt(now.Unix(), 10))
		})
	}
}
