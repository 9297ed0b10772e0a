package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/spf13/cobra"

	"github.com/hookline/hookline/internal/awsconf"
	"github.com/hookline/hookline/internal/ops"
)

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// httpDo makes one request and returns the status and at most 4 KiB of the
// trimmed answer.
func httpDo(ctx context.Context, method, target string, body []byte) (int, []byte, error) {
	return httpDoSigned(ctx, method, target, body, false)
}

// emptySHA256 is the hex SHA-256 of an empty payload, as SigV4 signs it.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// httpDoSigned is httpDo, signing a GET with SigV4 for API Gateway
// (service execute-api) with the standard credential chain when sign is set.
func httpDoSigned(ctx context.Context, method, target string, body []byte, sign bool) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		r = strings.NewReader(string(body))
	}
	req, err := http.NewRequestWithContext(ctx, method, target, r)
	if err != nil {
		return 0, nil, err
	}
	if sign {
		if body != nil {
			return 0, nil, fmt.Errorf("hookline: signing a request with a body is not supported")
		}
		cfg, err := awsconf.Load(ctx)
		if err != nil {
			return 0, nil, err
		}
		creds, err := cfg.Credentials.Retrieve(ctx)
		if err != nil {
			return 0, nil, fmt.Errorf("hookline: credentials to sign the request: %w", err)
		}
		if err := v4.NewSigner().SignHTTP(ctx, creds, req, emptySHA256, "execute-api", cfg.Region, time.Now()); err != nil {
			return 0, nil, fmt.Errorf("hookline: sign the request: %w", err)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, []byte(strings.TrimSpace(string(answer))), nil
}

// loadEndpoints reads the endpoints `hookline run` wrote, without
// overriding variables already set, and returns the file it read ("" when
// none).
func loadEndpoints() string {
	envFile, err := ops.LoadEnvFile(os.LookupEnv, os.Setenv)
	if err != nil {
		fmt.Fprintln(stderr, "hookline:", err)
	}
	return envFile
}

// apiURL is the HTTP API's base URL: the flag, else the local run's.
func apiURL(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return envOr("HOOKLINE_API_URL", "http://127.0.0.1:8080")
}

// isLoopback reports whether host names this machine.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// admissionJSON is what workload admission prints with --json.
type admissionJSON struct {
	Workload string          `json:"workload"`
	Status   int             `json:"status"`
	Answer   json.RawMessage `json:"answer,omitempty"`
}

// newWorkloadAdmissionCmd asks the HTTP API whether a workload may start new
// work, as its producers do.
func newWorkloadAdmissionCmd() *cobra.Command {
	var base, sign string
	cmd := &cobra.Command{
		Use:   "admission <workload> [--url URL] [--sigv4 auto|always|never]",
		Short: "Ask the HTTP API whether a workload may start new work (200 allowed, 423 paused)",
		Long: `Ask the HTTP API whether a workload may start new work, as its producers do:
200 allowed, 423 paused. In AWS the route requires IAM authorization, so the
request is signed with SigV4 (service execute-api) using the standard
credential chain, for example the credentials of AdmissionCallerRole. The
local system needs no signature: by default only a non-loopback URL is
signed.`,
		Example: "  hookline workload admission workload-7\n  hookline workload admission workload-7 --url https://abc123.execute-api.eu-west-1.amazonaws.com",
		Args:    cobra.ExactArgs(1),
	}
	cmd.Flags().StringVar(&base, "url", "", "base URL of the HTTP API (default: the one 'hookline run' wrote, else http://127.0.0.1:8080)")
	cmd.Flags().StringVar(&sign, "sigv4", "auto", "sign with SigV4: auto (when the URL is not loopback), always or never")
	asJSON := jsonFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if sign != "auto" && sign != "always" && sign != "never" {
			return usageErrorf("--sigv4 must be auto, always or never, got %q", sign)
		}
		if envFile := loadEndpoints(); devBuild && envFile == "" && base == "" && os.Getenv("HOOKLINE_API_URL") == "" {
			// Without a local run the default URL refuses the connection.
			fmt.Fprintln(stderr, "hookline workload admission: no local run found: start one with `make run` (or `hookline run`), "+
				"or pass --url to ask a deployed API")
			return exit(exitFailure)
		}
		target := strings.TrimSuffix(apiURL(base), "/") + "/workloads/" + url.PathEscape(args[0]) + "/admission"
		u, err := url.Parse(target)
		if err != nil || u.Host == "" {
			return usageErrorf("--url %q is not an absolute URL", base)
		}
		signIt := sign == "always" || (sign == "auto" && !isLoopback(u.Hostname()))
		status, answer, err := httpDoSigned(cmd.Context(), http.MethodGet, target, nil, signIt)
		if err != nil {
			fmt.Fprintln(stderr, "hookline workload admission:", err)
			return exit(exitFailure)
		}
		code := exitOK
		if status != http.StatusOK && status != http.StatusLocked {
			code = exitFailure
		}
		out := cmd.OutOrStdout()
		if *asJSON {
			v := admissionJSON{Workload: args[0], Status: status}
			if json.Valid(answer) {
				v.Answer = answer
			}
			if err := jsonResult(out, v); err != nil {
				return err
			}
			return exit(code)
		}
		fmt.Fprintf(out, "%d %s\n", status, answer)
		return exit(code)
	}
	return cmd
}
