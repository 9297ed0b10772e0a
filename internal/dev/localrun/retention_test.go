package localrun_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/internal/stack"
)

// TestRetentionsAreCheckedAsTheTemplateIs: a local run may shorten the
// retentions (INTAKE_RETENTION=2m IDEMPOTENCY_RETENTION=5m hookline run,
// with HOOKLINE_LOCAL_AWS_TTL=prompt, keeps a long run's memory flat),
// but not so that intake records outlive idempotency keys, which the
// template check refuses: a replay of a record whose key has expired
// would charge its event again.
func TestRetentionsAreCheckedAsTheTemplateIs(t *testing.T) {
	for _, tt := range []struct {
		name              string
		intake, idem, age string
		refused           bool
	}{
		{name: "minutes, intake first", intake: "2m", idem: "5m", age: "1m"},
		{name: "equal", intake: "5m", idem: "5m", age: "1m"},
		{name: "intake outlives idempotency", intake: "10m", idem: "5m", age: "1m", refused: true},
		{name: "only intake, past the template's keys", intake: "9000h", age: "1m", refused: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			vars := map[string]string{stack.IntakeRetentionVar: tt.intake, stack.IdempotencyRetentionVar: tt.idem, "MAX_EVENT_AGE": tt.age}
			sys, err := localrun.Start(context.Background(), localrun.Config{Addr: "127.0.0.1:0", NoWorkers: true,
				Lookup: func(name string) (string, bool) { v, ok := vars[name]; return v, ok && v != "" }})
			if err == nil {
				sys.Close()
			}
			if refused := errors.Is(err, stack.ErrIntakeOutlivesIdempotency); refused != tt.refused {
				t.Fatalf("Start with INTAKE_RETENTION=%q IDEMPOTENCY_RETENTION=%q: %v; want refused %v", tt.intake, tt.idem, err, tt.refused)
			}
		})
	}
}
