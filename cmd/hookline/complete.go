package main

import (
	"github.com/spf13/cobra"

	"github.com/hookline/hookline/internal/stack"
	"github.com/hookline/hookline/pkg/webhook"
)

// completeDLQs completes dead-letter queue names from the embedded
// template; it needs no AWS.
func completeDLQs(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	t, err := stack.Embedded()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var names []string
	for _, q := range t.DeadLetterQueues() {
		names = append(names, q.Name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// completeSources completes webhook source names from the receiver's
// HOOKLINE_SOURCES in the embedded template.
func completeSources(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	t, err := stack.Embedded()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var names []string
	for _, f := range t.Functions {
		text, ok := f.Environment["HOOKLINE_SOURCES"]
		if !ok {
			continue
		}
		specs, err := webhook.ParseSources(text)
		if err != nil {
			continue
		}
		for _, s := range specs {
			names = append(names, s.Name)
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}
