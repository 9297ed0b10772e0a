package providersim_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/pager"
)

func enqueue(t *testing.T, sim *providersim.Sim, body []byte) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(sim.URL()+"/v2/enqueue", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var reply map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil {
		t.Fatalf("reply: %v", err)
	}
	return resp.StatusCode, reply
}

func TestPagerSinkValidatesFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/pager/*.json")
	if err != nil || len(files) < 8 {
		t.Fatalf("fixtures = %v %v", files, err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			// Given a pager sink and a fixture event
			seen := make(chan pager.Event, 1)
			sim := start(t, providersim.Config{OnPage: func(ev pager.Event) { seen <- ev }})
			body, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			valid := strings.HasPrefix(name, "valid_")

			// When it is enqueued
			status, reply := enqueue(t, sim, body)

			// Then valid events are accepted and recorded, invalid ones refused
			if valid {
				if status != http.StatusAccepted || reply["status"] != "success" || reply["message"] != "Event processed" ||
					reply["dedup_key"] == "" || len(sim.Pager.Pages()) != 1 || len(seen) != 1 {
					t.Fatalf("status = %d reply = %v pages = %d", status, reply, len(sim.Pager.Pages()))
				}
				if reply["dedup_key"] != sim.Pager.Pages()[0].DedupKey {
					t.Fatalf("dedup key %v vs recorded %q", reply["dedup_key"], sim.Pager.Pages()[0].DedupKey)
				}
				return
			}
			if status != http.StatusBadRequest || reply["status"] != "invalid event" || len(sim.Pager.Pages()) != 0 || len(seen) != 0 {
				t.Fatalf("status = %d reply = %v pages = %d", status, reply, len(sim.Pager.Pages()))
			}
		})
	}
}

func TestPagerSinkDownSwitch(t *testing.T) {
	// Given a sink switched down
	sim := start(t, providersim.Config{})
	body, err := os.ReadFile("testdata/pager/valid_trigger.json")
	if err != nil {
		t.Fatal(err)
	}
	sim.Pager.SetPagerDown(true)

	// When an event arrives
	status, _ := enqueue(t, sim, body)

	// Then it is refused with 503 and not recorded
	if status != http.StatusServiceUnavailable || len(sim.Pager.Pages()) != 0 {
		t.Fatalf("status = %d pages = %d", status, len(sim.Pager.Pages()))
	}

	// When the sink comes back
	sim.Pager.SetPagerDown(false)
	status, _ = enqueue(t, sim, body)

	// Then the event is recorded
	if status != http.StatusAccepted || len(sim.Pager.Pages()) != 1 || sim.Pager.PagerRequests() != 2 {
		t.Fatalf("status = %d pages = %d requests = %d", status, len(sim.Pager.Pages()), sim.Pager.PagerRequests())
	}
}
