package localaws

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"
)

// LatencyEnv names the variable that adds latency to every call the
// embedded emulators answer ([Options.Latency]).
const LatencyEnv = "HOOKLINE_LOCAL_AWS_LATENCY"

// LatencyFromEnv reads [LatencyEnv]: a Go duration ("5ms"), or empty for
// none.
func LatencyFromEnv() (time.Duration, error) {
	v := os.Getenv(LatencyEnv)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("localaws: %s=%q is not a non-negative duration such as 5ms", LatencyEnv, v)
	}
	return d, nil
}

// withLatency delays every request by d before h answers it, as a network
// round trip to AWS would. It holds no lock while it waits, so concurrent
// calls overlap as they do against AWS.
func withLatency(h http.Handler, d time.Duration) http.Handler {
	if d <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
		h.ServeHTTP(w, r)
	})
}

// sqsFront serves a reverse proxy to the SQS emulator on a free loopback
// port that delays every call by d (the emulator is a child process, so
// its latency is added in front of it) and refuses what SQS refuses and
// the emulator takes (sqs_charset.go), and what the template does not
// grant the function calling (iam.go).
func sqsFront(target string, d time.Duration, g *grants) (string, func() error, error) {
	u, err := url.Parse(target)
	if err != nil {
		return "", nil, fmt.Errorf("localaws: proxy target: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("localaws: sqs proxy listen: %w", err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.Transport = &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}
	proxy.ErrorHandler = quietWhenGone
	srv := &http.Server{Handler: withLatency(g.sqs(sqsCharset(proxy)), d), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	closeFn := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return srv.Shutdown(ctx)
	}
	return "http://" + ln.Addr().String(), closeFn, nil
}
