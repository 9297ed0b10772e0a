package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunRefusesBadPaymentFlags: a bad provider, profile or mappings file
// is refused with exit 2 and a message naming the flag, before anything
// starts (a started run would not return here).
func TestRunRefusesBadPaymentFlags(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"payments":{"customer":"/c","currency":"/cur"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--provider", "paypal"}, `--provider "paypal"`},
		{[]string{"--provider", "stripe", "--provider-profile", "sometimes"}, "--provider-profile"},
		{[]string{"--payment-mappings", filepath.Join(t.TempDir(), "missing.json")}, "--payment-mappings"},
		{[]string{"--payment-mappings", bad}, "amount"},
	}
	for _, tc := range tests {
		code, _, errOut := execute(t, append([]string{"run", "--addr", "127.0.0.1:0"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("run %v: exit %d, stderr %q; want %d and %q", tc.args, code, errOut, exitUsage, tc.want)
		}
	}
}
