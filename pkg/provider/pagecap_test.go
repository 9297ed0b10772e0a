package provider

import (
	"errors"
	"testing"
)

func TestNextTokenCapsThePages(t *testing.T) {
	// Given a listing that has followed MaxUsagePages-1 fresh tokens
	seen := map[string]bool{}
	if err := nextToken(seen, "fresh", MaxUsagePages-1); err != nil {
		t.Fatal(err)
	}
	// When the page at the cap names yet another fresh token
	err := nextToken(seen, "fresher", MaxUsagePages)
	// Then the listing ends with ErrPageLoop
	var ee *ExportError
	if !errors.As(err, &ee) || !errors.Is(err, ErrPageLoop) || ee.Page != MaxUsagePages {
		t.Fatalf("err = %v, want ErrPageLoop at page %d", err, MaxUsagePages)
	}
}
