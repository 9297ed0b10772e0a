package spend

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/hookline/hookline/internal/dev/localaws"
)

// TestFleetListsEveryWorkloadAndItsReferencesPageByPage: the scan of the
// workloads table is read page by page (three items a page here), and
// each workload comes back once, in ID order, with every reference that
// resolves to it, its own ID included.
func TestFleetListsEveryWorkloadAndItsReferencesPageByPage(t *testing.T) {
	defer func(p int32) { fleetPage = p }(fleetPage)
	fleetPage = 3
	env := localaws.StartForTest(t)
	f := newFixtureWith(t, env, env.DynamoDB, nil)
	ctx := context.Background()
	want := map[string][]string{}
	for i := range 7 {
		id := fmt.Sprintf("wl-%d", i)
		f.workload(t, id, 100, 0)
		want[id] = []string{id}
		for a := range i % 3 {
			ref := fmt.Sprintf("cus_%d_%d", i, a)
			if err := f.s.Workloads.AddAlias(ctx, ref, id); err != nil {
				t.Fatal(err)
			}
			want[id] = append(want[id], ref)
		}
		slices.Sort(want[id])
	}
	fl, err := f.s.Workloads.Fleet(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, w := range fl.Workloads {
		ids = append(ids, w.ID)
		if w.Cap != 100 || w.RoutingKey != "rk-"+w.ID {
			t.Errorf("workload %+v, want cap 100 and its routing key", w)
		}
		if !slices.Equal(fl.Refs[w.ID], want[w.ID]) {
			t.Errorf("%s's references %v, want %v", w.ID, fl.Refs[w.ID], want[w.ID])
		}
	}
	if !slices.Equal(ids, []string{"wl-0", "wl-1", "wl-2", "wl-3", "wl-4", "wl-5", "wl-6"}) {
		t.Fatalf("workloads %v, want wl-0..wl-6 once each in order", ids)
	}
}
