package provider_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hookline/hookline/pkg/provider"
)

func TestListUsageRefusesATokenCycle(t *testing.T) {
	// Given an export whose tokens run A, B, A, ...
	next := map[string]string{"": "A", "A": "B", "B": "A"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := r.URL.Query().Get("page_token")
		fmt.Fprintf(w, `{"records":[{"record_id":"ur_%s","workload_ref":"w1","units":1,"occurred_at":"2026-11-30T03:00:00Z"}],"next_page_token":%q}`,
			tok, next[tok])
	}))
	defer srv.Close()
	c := newUsageClient(t, srv.URL, 10)

	// When the listing runs (stopped by the callback after 50 pages, so
	// that a loop cannot hold the test)
	pages := 0
	err := c.ListUsage(context.Background(), t0, t0.Add(time.Hour), func([]provider.UsageRecord) error {
		if pages++; pages > 50 {
			return errors.New("still paging")
		}
		return nil
	})

	// Then it ends on the third page with a typed error
	var ee *provider.ExportError
	if !errors.As(err, &ee) || !errors.Is(err, provider.ErrPageLoop) || !errors.Is(err, provider.ErrExportFailed) {
		t.Fatalf("err = %v, want an ExportError wrapping ErrPageLoop", err)
	}
	if ee.Page != 3 {
		t.Fatalf("failed on page %d, want 3", ee.Page)
	}
}
