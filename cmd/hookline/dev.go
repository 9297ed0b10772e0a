//go:build !oncall

package main

import "github.com/spf13/cobra"

// whereNote ends the root's help: where this build's commands go.
const whereNote = ` Without that file, this developer build goes to
AWS only when the environment chooses it (AWS_ENDPOINT_URL*, AWS_PROFILE,
AWS_ACCESS_KEY_ID, a web identity or container credentials); otherwise a
command says that no local run was found, and how to start one.`

// devBuild is true in the developer build: commands without a local run
// and without an AWS chosen in the environment say how to start one
// (localRunRule).
const devBuild = true

// devCommands are the local system and developer commands: run, lab and
// dev. They link the local AWS, the simulators and the lab, so the
// on-call build (-tags oncall) leaves them out.
func devCommands() []*cobra.Command {
	return []*cobra.Command{newRunCmd(), newLabCmd(), newDevCmd()}
}
