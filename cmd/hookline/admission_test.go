package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAdmissionSignsWithSigV4: against AWS the admission route requires
// IAM authorization, so the CLI signs its request like a producer would.
func TestAdmissionSignsWithSigV4(t *testing.T) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		if r.URL.Path != "/workloads/workload-7/admission" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"allowed":true,"status":"active","attributed":0,"cap":1000}`))
	}))
	defer srv.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDPRODUCER")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("HOOKLINE_ENV_FILE", t.TempDir()+"/none.env")

	for _, tc := range []struct {
		name   string
		args   []string
		signed bool
	}{
		{name: "loopback is not signed by default", args: []string{"--url", srv.URL}},
		{name: "always signs", args: []string{"--url", srv.URL, "--sigv4", "always"}, signed: true},
		{name: "never", args: []string{"--url", srv.URL, "--sigv4", "never"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got = nil
			code, out, errOut := execute(t, append([]string{"workload", "admission", "workload-7"}, tc.args...)...)
			if code != exitOK || !strings.HasPrefix(out, "200 ") {
				t.Fatalf("exit %d, out %q, stderr %q", code, out, errOut)
			}
			auth := got.Get("Authorization")
			if !tc.signed {
				if auth != "" {
					t.Fatalf("signed anyway: %s", auth)
				}
				return
			}
			if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDPRODUCER/") || !strings.Contains(auth, "/eu-west-1/execute-api/aws4_request") {
				t.Fatalf("Authorization = %q, want SigV4 for execute-api in eu-west-1", auth)
			}
			if got.Get("X-Amz-Date") == "" {
				t.Fatalf("X-Amz-Date missing: %v", got)
			}
		})
	}
	if code, _, _ := execute(t, "workload", "admission", "workload-7", "--url", srv.URL, "--sigv4", "maybe"); code != exitUsage {
		t.Fatalf("--sigv4 maybe: exit %d, want %d", code, exitUsage)
	}
}
