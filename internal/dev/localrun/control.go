package localrun

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// ClockPath is the control endpoint's clock: GET shows it, POST moves it
// forward with a [ClockMove].
const ClockPath = "/dev/clock"

// ClockMove is the body of POST [ClockPath]: exactly one of Advance (a Go
// duration, "720h") and Set (an RFC 3339 time after the clock's reading).
type ClockMove struct {
	Advance string `json:"advance,omitempty"`
	Set     string `json:"set,omitempty"`
}

// ClockReading is the answer of GET and POST [ClockPath]: the run's time
// and how far it is ahead of wall time.
type ClockReading struct {
	Now time.Time `json:"now"`
	// Ahead is a Go duration ("720h0m0s").
	Ahead string `json:"ahead"`
}

// ErrBadClockMove is returned for a [ClockMove] that names no move, both,
// or one that does not parse.
var ErrBadClockMove = errors.New("localrun: bad clock move")

// maxControlBody bounds a control request's body.
const maxControlBody = 4 << 10

// serveControl serves the control endpoint on Config.ControlAddr.
func (s *System) serveControl() error {
	ln, err := net.Listen("tcp", cmp.Or(s.cfg.ControlAddr, "127.0.0.1:0"))
	if err != nil {
		return fmt.Errorf("localrun: control endpoint: %w", err)
	}
	s.ControlURL = "http://" + ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+ClockPath, s.handleClockRead)
	mux.HandleFunc("POST "+ClockPath, s.handleClockMove)
	s.control = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.wg.Go(func() {
		if err := s.control.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.cfg.Logger.Error("control endpoint stopped", "err", err)
		}
	})
	return nil
}

func (s *System) handleClockRead(w http.ResponseWriter, _ *http.Request) {
	writeControl(w, http.StatusOK, s.reading(s.clock.Now()))
}

// handleClockMove moves the clock as the body says; a bad or backward
// move is a 400 that names what is wrong, and the clock stays.
func (s *System) handleClockMove(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxControlBody))
	if err != nil {
		writeControl(w, http.StatusRequestEntityTooLarge, map[string]string{"error": "body too large"})
		return
	}
	now, err := s.moveClock(body)
	if err != nil {
		writeControl(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	s.cfg.Logger.Info("clock moved", "now", now, "ahead", s.clock.Ahead())
	writeControl(w, http.StatusOK, s.reading(now))
}

// moveClock parses a [ClockMove] and makes it.
func (s *System) moveClock(body []byte) (time.Time, error) {
	var m ClockMove
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return time.Time{}, fmt.Errorf("%w: %v", ErrBadClockMove, err)
	}
	switch {
	case (m.Advance == "") == (m.Set == ""):
		return time.Time{}, fmt.Errorf(`%w: give exactly one of "advance" and "set"`, ErrBadClockMove)
	case m.Advance != "":
		d, err := time.ParseDuration(m.Advance)
		if err != nil {
			return time.Time{}, fmt.Errorf("%w: advance %q is not a duration (720h, 90m)", ErrBadClockMove, m.Advance)
		}
		return s.clock.Move(d)
	}
	t, err := time.Parse(time.RFC3339, m.Set)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: set %q is not an RFC 3339 time (2026-12-01T08:00:00Z)", ErrBadClockMove, m.Set)
	}
	return s.clock.Set(t)
}

func (s *System) reading(now time.Time) ClockReading {
	return ClockReading{Now: now.UTC(), Ahead: s.clock.Ahead().String()}
}

func writeControl(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
