//go:build oncall

package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"
)

// whereNote ends the root's help: this build follows the standard chain.
const whereNote = ` This on-call build follows the standard chain
wherever it points.`

// devBuild is false in the on-call build, made for AWS: the standard
// credential chain decides where commands go.
const devBuild = false

// devCommands is empty in the on-call build: it links no local AWS,
// simulator, lab or profiler.
func devCommands() []*cobra.Command { return nil }

// opsClock is the clock the operator commands read: the real one,
// always, in the on-call build.
func opsClock(context.Context) func() time.Time { return time.Now }
