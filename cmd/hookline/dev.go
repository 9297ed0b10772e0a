//go:build !oncall

package main

import "github.com/spf13/cobra"

// devCommands are the local system and developer commands: run, lab and
// dev. They link the local AWS, the simulators and the lab, so the
// on-call build (-tags oncall) leaves them out.
func devCommands() []*cobra.Command {
	return []*cobra.Command{newRunCmd(), newLabCmd(), newDevCmd()}
}
