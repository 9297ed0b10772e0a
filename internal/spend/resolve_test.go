package spend

import (
	"context"
	"fmt"
	"testing"
)

func TestResolveRefs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	// Given 120 workloads (more than one BatchGetItem holds), one of them
	// also known by a provider alias
	var refs []string
	for i := range 120 {
		id := fmt.Sprintf("w-%03d", i)
		f.workload(t, id, 1000, 0)
		refs = append(refs, id, id) // each twice: resolved once
	}
	if err := f.s.Workloads.AddAlias(ctx, "prov:proj/images", "w-007"); err != nil {
		t.Fatal(err)
	}
	refs = append(refs, "prov:proj/images", "prov:unknown")

	// When every reference is resolved in one call
	ids, err := f.s.Workloads.ResolveRefs(ctx, refs)
	if err != nil {
		t.Fatal(err)
	}

	// Then each resolves as Resolve does, and the unknown one is absent
	for _, ref := range refs {
		w, err := f.s.Workloads.Resolve(ctx, ref)
		got, ok := ids[ref]
		if err != nil {
			if ok {
				t.Errorf("%s: ResolveRefs = %q, Resolve failed: %v", ref, got, err)
			}
			continue
		}
		if got != w.ID {
			t.Errorf("%s: ResolveRefs = %q, Resolve = %q", ref, got, w.ID)
		}
	}
	if len(ids) != 121 {
		t.Errorf("resolved %d references, want 121", len(ids))
	}
}

func TestApplyResolvedMatchesApply(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.workload(t, "w-a", 1000, 0)

	// Given a record applied with its reference resolved beforehand
	ids, err := f.s.Workloads.ResolveRefs(ctx, []string{"w-a", "w-missing"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.s.Ledger.ApplyResolved(ctx, usage("rec-1", "w-a", 5), ids["w-a"])
	if err != nil || res.Outcome != Applied || res.Total != 5 {
		t.Fatalf("ApplyResolved = %+v, %v", res, err)
	}

	// When the same record comes through Apply, then it is a duplicate
	if res := f.apply(t, usage("rec-1", "w-a", 5)); res.Outcome != Duplicate || res.Total != 5 {
		t.Errorf("Apply after ApplyResolved = %+v", res)
	}
	// and a reference that resolved to nothing is deferred as unknown
	res, err = f.s.Ledger.ApplyResolved(ctx, usage("rec-2", "w-missing", 5), ids["w-missing"])
	if err != nil || res.Outcome != Deferred || res.Deferred.Reason != ReasonUnknownWorkload {
		t.Errorf("ApplyResolved unknown = %+v, %v", res, err)
	}
}
