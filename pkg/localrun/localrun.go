package localrun

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/hookline/hookline/pkg/localaws"
)

// Config configures [Start].
type Config struct {
	Logger *slog.Logger
	// Out receives the human-readable description of what is running.
	Out io.Writer
}

// System is a running local system.
type System struct {
	AWS *localaws.Env
}

// Start brings the system up. Close stops it.
func Start(ctx context.Context, cfg Config) (*System, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	env, err := localaws.Start(ctx, localaws.Options{Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("localrun: %w", err)
	}
	s := &System{AWS: env}
	if cfg.Out != nil {
		env.Describe(cfg.Out)
	}
	return s, nil
}

// Close stops everything Start started.
func (s *System) Close() error { return s.AWS.Close() }
