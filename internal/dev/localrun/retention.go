package localrun

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/hookline/hookline/internal/stack"
)

// checkRetentions refuses the retentions the template check refuses
// (stack.CheckRetention: intake records kept longer than idempotency
// keys), with the values the functions will read: the environment's
// INTAKE_RETENTION and IDEMPOTENCY_RETENTION (or Config.Lookup's) over
// the template's. A local run may shorten both, to keep a long run's
// memory flat, but not in the wrong order.
func (s *System) checkRetentions() error {
	t := *s.AWS.Template
	t.Functions = slices.Clone(t.Functions)
	for i, fn := range t.Functions {
		lookup, err := s.functionLookup(fn.LogicalID)
		if err != nil {
			return err
		}
		env := maps.Clone(fn.Environment)
		for _, name := range []string{stack.IntakeRetentionVar, stack.IdempotencyRetentionVar} {
			if _, set := env[name]; !set {
				continue
			}
			if v, ok := lookup(name); ok {
				env[name] = v
			}
		}
		t.Functions[i].Environment = env
	}
	if errs := stack.CheckRetention(&t); len(errs) > 0 {
		return fmt.Errorf("localrun: %w", errors.Join(errs...))
	}
	return nil
}
