package idempotency

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"time"
)

// State is the stored state of a key.
type State string

// States of a stored record.
const (
	// StateInProgress: a worker holds the key until [Record.HeldUntil].
	StateInProgress State = "IN_PROGRESS"
	// StateCompleted: the work is done and [Record.Result] is its result.
	StateCompleted State = "COMPLETED"
)

// Record is one stored key. Times are stored at the precision the stores
// compare them: HeldUntil, ClaimedAt and CompletedAt in milliseconds,
// ExpiresAt in whole seconds (the DynamoDB TTL format).
type Record struct {
	// Key is the stored key: the namespace, "#", and the caller's key.
	Key   string
	State State
	// Token fences the holder. It is kept after completion, so that a holder
	// whose Complete response was lost can recognise its own result.
	Token string
	// PayloadHash is the hex SHA-256 of the fields that matter.
	PayloadHash string
	// Result is the stored result of a completed key.
	Result []byte
	// HeldUntil is when an in-progress claim may be taken over. It is zero
	// for a completed record.
	HeldUntil time.Time
	// ExpiresAt is when the record stops counting (retention). DynamoDB TTL
	// deletes it some time later; until then it is treated as absent.
	ExpiresAt   time.Time
	ClaimedAt   time.Time
	CompletedAt time.Time
	// Attempt counts the claims the key has had within its retention, the
	// current one included: 1 for the first. A record is never deleted
	// while it counts, so the count survives every release. A record
	// written before attempts were counted reads as 0.
	Attempt int
}

// Retained reports whether the record still counts at now: its retention
// has not passed. An unretained record is treated as absent.
func (r Record) Retained(now time.Time) bool {
	return r.ExpiresAt.Unix() >= now.Unix()
}

// Stale reports whether r is an in-progress claim whose holder's window has
// passed at now.
func (r Record) Stale(now time.Time) bool {
	return r.State == StateInProgress && r.HeldUntil.UnixMilli() < now.UnixMilli()
}

// Claimable reports whether a claim for payloadHash may replace r at now.
// This is the rule every [Store] applies atomically: the record has passed
// its retention, or it is a stale in-progress claim for the same payload.
// A stale claim for a different payload is never taken over: the dead
// holder may have acted on its payload under this key.
func Claimable(r Record, payloadHash string, now time.Time) bool {
	if !r.Retained(now) {
		return true
	}
	return r.Stale(now) && r.PayloadHash == payloadHash
}

// NextAttempt returns the attempt number of a claim that replaces cur at
// now: 1 when there is no record or it has passed its retention, and one
// more than cur's otherwise (a record that predates the count counts as
// one attempt). Every [Store] numbers its claims with it.
func NextAttempt(cur Record, exists bool, now time.Time) int {
	if !exists || !cur.Retained(now) {
		return 1
	}
	return max(cur.Attempt, 1) + 1
}

// Hash returns the hex SHA-256 of the fields that make two requests the
// same, for [Registry.Claim]. Each field is length-prefixed, so ("ab", "c")
// and ("a", "bc") differ. Pass only the fields that matter (amount, currency,
// customer), never volatile ones such as a delivery timestamp.
func Hash(fields ...string) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, f := range fields {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(f)))])
		h.Write([]byte(f))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// validHash reports whether s is a lower-case hex SHA-256, as [Hash]
// returns.
func validHash(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
