package usagein_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/usagein"
)

// BenchmarkReadCloudEvents measures the door's reading of a structured
// event and of a batch of 100, and reports the envelope's size.
func BenchmarkReadCloudEvents(b *testing.B) {
	ms, err := usagein.ParseMappings([]byte(tokensMapping))
	if err != nil {
		b.Fatal(err)
	}
	m := ms.For("meters")
	one := tokenEvent("e1", "com.example.tokens", `"tokens":"12.5"`, `,"traceparent":"00-ab"`)
	evs := make([]string, 100)
	for i := range evs {
		evs[i] = tokenEvent(fmt.Sprintf("e%d", i), "com.example.tokens", `"tokens":12.5`, "")
	}
	for _, tc := range []struct {
		name, body string
	}{{"structured", one}, {"batch of 100", "[" + strings.Join(evs, ",") + "]"}} {
		b.Run(tc.name, func(b *testing.B) {
			req := usagein.Request{Source: "meters", Seen: seen}
			b.SetBytes(int64(len(tc.body)))
			var env []byte
			for b.Loop() {
				body, err := m.Read([]byte(tc.body), req)
				if err != nil {
					b.Fatal(err)
				}
				for _, it := range body.Items {
					env = m.Envelope("meters", it.Record)
				}
			}
			b.ReportMetric(float64(len(env)), "envelope-bytes")
		})
	}
}
