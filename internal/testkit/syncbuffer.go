package testkit

import (
	"bytes"
	"sync"
)

// SyncBuffer is a [bytes.Buffer] that many goroutines may write at once:
// the sink of the EMF lines or logs of a system under test, read when
// the test checks them.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
