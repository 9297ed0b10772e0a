package spend

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestCreateWorkloadRefusesMalformedIDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	tests := []struct {
		name, id string
	}{
		{name: "slash", id: "a/b"},
		{name: "space", id: "a b"},
		{name: "bang", id: "images!"},
		{name: "600 characters", id: strings.Repeat("w", 600)},
		{name: "upper case", id: "Workload-7"},
		{name: "leading dash", id: "-w"},
		{name: "newline", id: "w\nspend cap action=pause"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// given a malformed ID, when a workload is created under it,
			// then it is refused with a typed error and nothing is stored
			_, err := f.s.Workloads.CreateWorkload(ctx, NewWorkload{ID: tc.id, Owner: "o", RoutingKey: "rk", Cap: 10})
			var bad *InvalidIDError
			if !errors.As(err, &bad) || !errors.Is(err, ErrInvalidWorkloadID) || !errors.Is(err, ErrInvalidWorkload) {
				t.Fatalf("CreateWorkload(%q) = %v, want an *InvalidIDError", tc.id, err)
			}
			if _, err := f.s.Workloads.Get(ctx, tc.id); !errors.Is(err, ErrUnknownWorkload) {
				t.Errorf("Get after a refused create = %v", err)
			}
		})
	}
	for _, id := range []string{"workload-7", "w", "img.resize_2", strings.Repeat("a", MaxWorkloadIDLen)} {
		if err := ValidWorkloadID(id); err != nil {
			t.Errorf("ValidWorkloadID(%q) = %v, want nil", id, err)
		}
	}
}
