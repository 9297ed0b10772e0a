package coldstart

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/stack"
)

// ldflags are the release link flags of `make build`.
const ldflags = "-s -w"

// goalBytes is the size goal for one bootstrap, 10 MB in decimal
// megabytes (the unit of the figures it was set from), reported as a ratio
// so that the figure is read against it.
const goalBytes = 10_000_000

// initRuns is how many fresh emulators each function is started under; the
// median is reported.
const initRuns = 5

// build compiles pkg into out for goos/goarch with the release tags.
func build(b *testing.B, pkg, out, goarch string, strip bool) int64 {
	b.Helper()
	args := []string{"build", "-trimpath", "-tags", "lambda.norpc", "-o", out}
	if strip {
		args = append(args, "-ldflags", ldflags)
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+goarch, "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build %s: %v\n%s", pkg, err, msg)
	}
	fi, err := os.Stat(out)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}

var (
	rieOnce sync.Once
	riePath string
	rieErr  error
)

// rie builds the runtime interface emulator declared as a tool in go.mod.
func rie(b *testing.B) string {
	b.Helper()
	rieOnce.Do(func() {
		riePath = filepath.Join(os.TempDir(), "hookline-coldstart-rie")
		cmd := exec.Command("go", "build", "-o", riePath, "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie")
		if msg, err := cmd.CombinedOutput(); err != nil {
			rieErr = fmt.Errorf("build aws-lambda-rie: %v\n%s", err, msg)
		}
	})
	if rieErr != nil {
		b.Fatal(rieErr)
	}
	return riePath
}

func freePort(b *testing.B) int {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// initReport is the emulator's record of the init phase: from exec of the
// bootstrap to its first request for work.
var initReport = regexp.MustCompile(`INIT REPORT\(durationMs: ([0-9.]+)\)`)

// initTime starts bootstrap under a fresh emulator, invokes it once with
// event and returns the init duration the emulator reports.
func initTime(b *testing.B, bootstrap string, env []string, event string) time.Duration {
	b.Helper()
	port := freePort(b)
	var out syncBuffer
	cmd := exec.Command(rie(b), "--runtime-interface-emulator-address", fmt.Sprintf("127.0.0.1:%d", port), bootstrap)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	url := fmt.Sprintf("http://127.0.0.1:%d/2015-03-31/functions/function/invocations", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Post(url, "application/json", strings.NewReader(event))
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("emulator never answered: %v\n%s", err, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The emulator's log may trail its answer.
	text := out.String()
	for end := time.Now().Add(5 * time.Second); !strings.Contains(text, "INIT RTDONE(") && time.Now().Before(end); text = out.String() {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(text, "INIT RTDONE(status: success)") {
		b.Fatalf("%s failed its init:\n%s", bootstrap, text)
	}
	if m := initReport.FindStringSubmatch(text); m != nil {
		ms, _ := strconv.ParseFloat(m[1], 64)
		return time.Duration(ms * float64(time.Millisecond))
	}
	b.Fatalf("no INIT REPORT:\n%s", text)
	return 0
}

// syncBuffer collects a child's output while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// events are a harmless first invocation per function name.
var events = map[string]string{
	"receiver":       `{"version":"2.0","routeKey":"ANY /webhooks/{source}","rawPath":"/webhooks/none","pathParameters":{"source":"none"},"requestContext":{"http":{"method":"POST"}}}`,
	"admission":      `{"version":"2.0","rawPath":"/workloads/none/admission","pathParameters":{"id":"none"},"requestContext":{"http":{"method":"GET"}}}`,
	"payment-worker": `{"Records":[]}`,
	"spend-worker":   `{"Records":[]}`,
	"reconciler":     `{"source":"coldstart","detail-type":"probe","detail":{}}`,
}

// BenchmarkBootstrap reports, per function, the shipped bootstrap's size
// (in bytes, in MB of 10^6 bytes, and as a ratio of the unstripped build
// and of the 10 MB goal) and its cold-start init time under the runtime interface emulator (ms, and as
// a ratio of the minimal bootstrap's in the same run). The functions' AWS
// endpoints are local emulators; the credentials that Lambda reads from
// Secrets Manager are given as plain variables here, so the init time
// excludes that one GetSecretValue call.
func BenchmarkBootstrap(b *testing.B) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	env := localaws.StartForTest(b)
	host := runtime.GOARCH

	minimal := filepath.Join(dir, "minimal")
	build(b, "./testdata/minimal", minimal, host, true)
	var base []time.Duration
	for range initRuns {
		base = append(base, initTime(b, minimal, nil, `{}`))
	}
	baseline := median(base)
	b.Logf("baseline: minimal lambda.Start bootstrap init %s (median of %d)", baseline, initRuns)

	tpl, err := stack.LoadDefault()
	if err != nil {
		b.Fatal(err)
	}
	common := []string{
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"AWS_ENDPOINT_URL_SQS=" + env.SQSEndpoint, "AWS_ENDPOINT_URL_DYNAMODB=" + env.DynamoEndpoint,
		"AWS_ENDPOINT_URL_SECRETSMANAGER=http://127.0.0.1:1",
	}
	for _, fn := range tpl.Functions {
		b.Run(fn.Name, func(b *testing.B) {
			pkg := "./" + filepath.ToSlash(filepath.Join("functions", fn.Name))
			shipped := filepath.Join(dir, fn.Name+"-arm64")
			unstripped := filepath.Join(dir, fn.Name+"-arm64-full")
			local := filepath.Join(dir, fn.Name+"-"+host)
			cwd, _ := os.Getwd()
			os.Chdir(root)
			size := build(b, pkg, shipped, "arm64", true)
			full := build(b, pkg, unstripped, "arm64", false)
			build(b, pkg, local, host, true)
			os.Chdir(cwd)

			vars, err := env.FunctionEnv(fn.LogicalID)
			if err != nil {
				b.Fatal(err)
			}
			fenv := slices.Clone(common)
			for k, v := range vars {
				if name, ok := strings.CutSuffix(k, "_SECRET_ID"); ok {
					fenv = append(fenv, name+"=coldstart-"+strings.ToLower(name))
					continue
				}
				if id := stack.LogicalID(v); id != v {
					// A parameter: its default, as a deployer would leave it.
					if p, ok := tpl.Raw().Parameters[id]; ok && p.Default != nil {
						v = fmt.Sprint(p.Default)
					}
				}
				fenv = append(fenv, k+"="+v)
			}
			var runs []time.Duration
			for range initRuns {
				runs = append(runs, initTime(b, local, fenv, events[fn.Name]))
			}
			init := median(runs)
			b.ReportMetric(float64(size), "bytes")
			b.ReportMetric(float64(size)/1e6, "MB")
			b.ReportMetric(float64(size)/float64(full), "x-unstripped")
			b.ReportMetric(float64(size)/goalBytes, "x-10MB-goal")
			b.ReportMetric(float64(init.Microseconds())/1000, "init-ms")
			b.ReportMetric(float64(init)/float64(baseline), "x-minimal-init")
			b.ReportMetric(0, "ns/op")
		})
	}
}
