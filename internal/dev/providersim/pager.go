package providersim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/hookline/hookline/internal/pager"
)

// pagerSink records accepted pager events.
type pagerSink struct {
	mu       sync.Mutex
	pages    []pager.Event
	down     atomic.Bool
	requests atomic.Int64
}

// Pages returns a copy of every accepted pager event, in arrival order.
func (s *core) Pages() []pager.Event {
	s.pager.mu.Lock()
	defer s.pager.mu.Unlock()
	return append([]pager.Event(nil), s.pager.pages...)
}

// PagerRequests returns how many requests reached the pager sink, refused
// ones included.
func (s *core) PagerRequests() int { return int(s.pager.requests.Load()) }

// SetPagerDown makes the pager sink answer 503 to everything while down.
func (s *core) SetPagerDown(down bool) { s.pager.down.Store(down) }

// pagerReply is the Events API v2 response body.
type pagerReply struct {
	Status   string   `json:"status"`
	Message  string   `json:"message"`
	DedupKey string   `json:"dedup_key,omitempty"`
	Errors   []string `json:"errors,omitempty"`
}

func (s *core) handleEnqueue(w http.ResponseWriter, r *http.Request) {
	s.pager.requests.Add(1)
	if s.pager.down.Load() {
		writeJSON(w, http.StatusServiceUnavailable, pagerReply{Status: "unavailable", Message: "Service unavailable"})
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 512<<10))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, pagerReply{Status: "invalid event", Message: "Event object is invalid",
			Errors: []string{"body unreadable or larger than 512 KiB"}})
		return
	}
	var ev pager.Event
	if err := json.Unmarshal(data, &ev); err != nil {
		writeJSON(w, http.StatusBadRequest, pagerReply{Status: "invalid event", Message: "Event object is invalid",
			Errors: []string{"body is not a JSON event"}})
		return
	}
	if problems := checkPagerEvent(ev); len(problems) > 0 {
		writeJSON(w, http.StatusBadRequest, pagerReply{Status: "invalid event", Message: "Event object is invalid",
			Errors: problems})
		return
	}
	s.pager.mu.Lock()
	if ev.DedupKey == "" {
		ev.DedupKey = fmt.Sprintf("sim-dedup-%d", len(s.pager.pages)+1)
	}
	s.pager.pages = append(s.pager.pages, ev)
	s.pager.mu.Unlock()
	if s.onPage != nil {
		s.onPage(ev)
	}
	writeJSON(w, http.StatusAccepted, pagerReply{Status: "success", Message: "Event processed", DedupKey: ev.DedupKey})
}

// checkPagerEvent applies the Events API v2 rules on its own, so that it
// catches a client whose [pager.Event.Validate] is wrong.
func checkPagerEvent(ev pager.Event) []string {
	var out []string
	if ev.RoutingKey == "" {
		out = append(out, "'routing_key' is missing or blank")
	}
	if len(ev.DedupKey) > 255 {
		out = append(out, "'dedup_key' is longer than 255 characters")
	}
	switch ev.EventAction {
	case "trigger":
		p := ev.Payload
		if p == nil {
			out = append(out, "'payload' is missing")
			break
		}
		if p.Summary == "" {
			out = append(out, "'payload.summary' is missing or blank")
		} else if len(p.Summary) > 1024 {
			out = append(out, "'payload.summary' is longer than 1024 characters")
		}
		if p.Source == "" {
			out = append(out, "'payload.source' is missing or blank")
		}
		switch p.Severity {
		case "critical", "error", "warning", "info":
		default:
			out = append(out, "'payload.severity' must be one of critical, error, warning, info")
		}
	case "acknowledge", "resolve":
		if ev.DedupKey == "" {
			out = append(out, "'dedup_key' is required for "+ev.EventAction)
		}
	default:
		out = append(out, "'event_action' must be one of trigger, acknowledge, resolve")
	}
	return out
}
