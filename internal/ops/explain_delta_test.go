package ops

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/spend"
)

func TestADeltaSaysWhichPathFoundIt(t *testing.T) {
	for _, c := range []struct {
		d    spend.Delta
		want string
	}{
		{spend.Delta{Cause: spend.PathWebhook, Record: "ur_1"}, "found by the webhook record ur_1"},
		{spend.Delta{Cause: spend.PathPoll, Record: "ce_2"}, "found by the export's record ce_2"},
		{spend.Delta{Cause: spend.PathPoll}, "found by the reconciler's poll of the provider's sums"},
		{spend.Delta{Cause: spend.PathWebhook, Record: "ur_3", Records: []string{"ur_3", "ur_4"}},
			"found by the webhook record ur_3 and 1 more records of its batch (ur_4)"},
	} {
		var out bytes.Buffer
		writeDelta(&out, c.d, spend.Bucket{})
		if !strings.Contains(out.String(), c.want) {
			t.Errorf("%+v: %q, want %q", c.d, out.String(), c.want)
		}
	}
}
