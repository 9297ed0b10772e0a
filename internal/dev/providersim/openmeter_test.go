package providersim_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
)

// omCall makes one call of the OpenMeter face and decodes its answer.
func omCall(t *testing.T, method, u, body string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(method, u, bytes.NewReader([]byte(body)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

func TestOpenMeterFaceIsDrivenFromOutside(t *testing.T) {
	t.Parallel()
	clock := providersim.NewManualClock(time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC))
	om := providersim.NewOpenMeter(providersim.OpenMeterConfig{Now: clock.Now})
	if err := om.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { om.Close() })
	base := om.URL() + providersim.OpenMeterSimPath
	// Given an event ingested late through the administration
	ev := `{"event": {"Source": "/m", "ID": "e-1", "Type": "t", "Subject": "wl", "Time": "2026-11-03T11:59:00Z", "Value": "2"}, "lag": "1h"}`
	var ingested providersim.OpenMeterEvent
	if code := omCall(t, http.MethodPost, base+"/events", ev, &ingested); code != 200 || !ingested.StoredAt.Equal(ingested.IngestedAt.Add(time.Hour)) {
		t.Fatalf("ingest: %d %+v", code, ingested)
	}
	list := func() int {
		var page struct{ Items []json.RawMessage }
		if code := omCall(t, http.MethodGet, om.URL()+"/api/v2/events", "", &page); code != 200 {
			t.Fatalf("list: %d", code)
		}
		return len(page.Items)
	}
	// Then it is not listed until it is stored
	if n := list(); n != 0 {
		t.Fatalf("listed %d before it was stored", n)
	}
	var stored map[string]int
	if code := omCall(t, http.MethodPost, base+"/store", "", &stored); code != 200 || stored["stored"] != 1 {
		t.Fatalf("store: %d %v", code, stored)
	}
	if n := list(); n != 1 {
		t.Fatalf("listed %d after it was stored", n)
	}
	// and a filter with two operators in one object is refused and counted.
	f := url.QueryEscape(`{"ingestedAt":{"$gte":"2026-11-03T00:00:00Z","$lt":"2026-11-04T00:00:00Z"}}`)
	if code := omCall(t, http.MethodGet, om.URL()+"/api/v2/events?filter="+f, "", nil); code != 400 {
		t.Fatalf("two operators: %d, want 400", code)
	}
	var calls struct {
		Calls    map[string]int
		Refusals []string
	}
	if omCall(t, http.MethodGet, base+"/calls", "", &calls); calls.Calls["events"] != 3 || calls.Calls["refused"] != 1 || len(calls.Refusals) != 1 {
		t.Fatalf("calls %+v", calls)
	}
}
