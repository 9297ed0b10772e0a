package spend

import (
	"slices"
	"testing"
)

// TestAnEntrysPathsStartWithThePathThatAppliedIt: an entry's paths are a
// DynamoDB string set, which comes back in no particular order, so an
// explain read "via poll+webhook" for a record the webhook applied one
// run in a few. The path that applied the record comes first, then the
// others in order.
func TestAnEntrysPathsStartWithThePathThatAppliedIt(t *testing.T) {
	for _, tc := range []struct {
		path         string
		stored, want []string
	}{
		{PathWebhook, []string{PathPoll, PathWebhook}, []string{PathWebhook, PathPoll}},
		{PathWebhook, []string{PathWebhook, PathPoll}, []string{PathWebhook, PathPoll}},
		{PathPoll, []string{PathWebhook, PathPoll}, []string{PathPoll, PathWebhook}},
		{PathPoll, nil, nil},
	} {
		got := entryItem{Path: tc.path, Paths: tc.stored}.entry().Paths
		if !slices.Equal(got, tc.want) {
			t.Errorf("applied by %s, stored %v: paths %v, want %v", tc.path, tc.stored, got, tc.want)
		}
	}
}
