//go:build oncall

package main

import "github.com/spf13/cobra"

// devCommands is empty in the on-call build: it links no local AWS,
// simulator, lab or profiler.
func devCommands() []*cobra.Command { return nil }
