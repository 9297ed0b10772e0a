package stripecharge_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// stripe-mock is pinned in go.mod as a tool (go get -tool
// github.com/stripe/stripe-mock@v0.203.0): the tests build that version
// once per run and start one child process per fixture set, on a free
// loopback port, that dies with the test.
const stripeMockModule = "github.com/stripe/stripe-mock"

var (
	buildOnce sync.Once
	mockBin   string
	mockDir   string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if mockDir != "" {
		os.RemoveAll(mockDir)
	}
	os.Exit(code)
}

func buildStripeMock(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		mockDir, buildErr = os.MkdirTemp("", "stripe-mock-")
		if buildErr != nil {
			return
		}
		mockBin = filepath.Join(mockDir, "stripe-mock")
		out, err := exec.Command("go", "build", "-o", mockBin, stripeMockModule).CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build %s: %v\n%s", stripeMockModule, err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return mockBin
}

// fixtures writes stripe-mock's bundled fixtures with patch applied to
// the named resources, and returns the file's path.
func fixtures(t *testing.T, patch map[string]map[string]any) string {
	t.Helper()
	// go mod download fetches the pinned version if the module cache
	// lacks it (a fresh clone) and says where it is.
	out, err := exec.Command("go", "mod", "download", "-json", stripeMockModule).Output()
	if err != nil {
		t.Fatalf("download %s: %v", stripeMockModule, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("locate %s: %q %v", stripeMockModule, out, err)
	}
	raw, err := os.ReadFile(filepath.Join(mod.Dir, "embedded", "openapi", "fixtures3.json"))
	if err != nil {
		t.Fatalf("read stripe-mock fixtures: %v", err)
	}
	var f struct {
		Resources map[string]map[string]any `json:"resources"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("decode stripe-mock fixtures: %v", err)
	}
	for res, fields := range patch {
		for k, v := range fields {
			f.Resources[res][k] = v
		}
	}
	patched, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "fixtures.json")
	if err := os.WriteFile(path, patched, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startStripeMock runs stripe-mock (with fixturesPath, or its bundled
// fixtures when empty) and returns its HTTP base URL.
func startStripeMock(t *testing.T, fixturesPath string) string {
	t.Helper()
	args := []string{"-http-addr", "127.0.0.1:", "-https-addr", "127.0.0.1:"}
	if fixturesPath != "" {
		args = append(args, "-fixtures", fixturesPath)
	}
	cmd := exec.Command(buildStripeMock(t), args...)
	dieWithParent(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("start stripe-mock: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "Listening for HTTP at address: "); ok {
				addr <- a
			}
		}
		close(addr)
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			t.Fatal("stripe-mock exited before listening")
		}
		return "http://" + a
	case <-time.After(30 * time.Second):
		t.Fatal("stripe-mock did not listen within 30s")
	}
	return ""
}
