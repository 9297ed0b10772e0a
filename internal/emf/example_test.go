package emf_test

import (
	"log"
	"os"
	"time"

	"github.com/hookline/hookline/internal/emf"
)

// A fixed clock keeps the Timestamp stable; a real Logger uses time.Now.
func fixedClock() time.Time {
	return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
}

func Example() {
	m := emf.New(os.Stdout, "hookline").WithClock(fixedClock).With(map[string]any{"function": "receiver"})
	if err := m.Count("accepted", 1, emf.Dims{"source": "payments"}); err != nil {
		log.Fatal(err)
	}
	if err := m.Duration("event_to_intake", 1500*time.Microsecond, emf.Dims{"source": "payments"}); err != nil {
		log.Fatal(err)
	}
	// Output:
	// {"_aws":{"Timestamp":1796040000000,"CloudWatchMetrics":[{"Namespace":"hookline","Dimensions":[["source"]],"Metrics":[{"Name":"accepted","Unit":"Count"}]}]},"accepted":1,"function":"receiver","source":"payments"}
	// {"_aws":{"Timestamp":1796040000000,"CloudWatchMetrics":[{"Namespace":"hookline","Dimensions":[["source"]],"Metrics":[{"Name":"event_to_intake","Unit":"Milliseconds"}]}]},"event_to_intake":1.5,"function":"receiver","source":"payments"}
}

// Several metrics can share one line, and so one set of dimensions.
func ExampleLogger_Entry() {
	m := emf.New(os.Stdout, "hookline").WithClock(fixedClock)
	err := m.Entry(emf.Dims{"source": "usage"}).
		Put("ledger_lag", 12, emf.Milliseconds).
		Put("deferred", 1, emf.Count).
		Set("event_id", "evt_123").
		Flush()
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// {"_aws":{"Timestamp":1796040000000,"CloudWatchMetrics":[{"Namespace":"hookline","Dimensions":[["source"]],"Metrics":[{"Name":"ledger_lag","Unit":"Milliseconds"},{"Name":"deferred","Unit":"Count"}]}]},"deferred":1,"event_id":"evt_123","ledger_lag":12,"source":"usage"}
}
