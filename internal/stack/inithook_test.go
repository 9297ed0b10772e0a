package stack

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

var update = flag.Bool("update", false, "rewrite the committed LocalStack init hook from infra/template.yaml")

const repoRoot = "../.."

func TestInitHookMatchesTemplate(t *testing.T) {
	tpl, err := LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(repoRoot, InitHookPath)
	want := GenerateInitHook(tpl)
	if *update {
		if err := os.WriteFile(path, want, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run: go test ./internal/stack -run InitHook -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from what infra/template.yaml generates; run: go test ./internal/stack -run InitHook -update\n%s",
			InitHookPath, firstDifference(got, want))
	}
}

func TestInitHookIsExecutable(t *testing.T) {
	info, err := os.Stat(filepath.Join(repoRoot, InitHookPath))
	if err != nil {
		t.Fatal(err)
	}
	// LocalStack only runs hooks that are executable and have a shebang.
	if info.Mode().Perm()&0o111 == 0 {
		t.Fatalf("%s has mode %v; LocalStack skips hooks that are not executable", InitHookPath, info.Mode().Perm())
	}
	b, err := os.ReadFile(filepath.Join(repoRoot, InitHookPath))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#!/bin/bash\n", "\nset -euo pipefail\n"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("%s lacks %q", InitHookPath, want)
		}
	}
}

func TestInitHookIsDeterministic(t *testing.T) {
	for _, file := range []string{"", filepath.Join(brokenDir, "complete.yaml")} {
		// Given the same template loaded twice,
		first, second := loadForHook(t, file), loadForHook(t, file)
		// when the hook is generated from each, then the bytes are equal.
		if a, b := GenerateInitHook(first), GenerateInitHook(second); !bytes.Equal(a, b) {
			t.Fatalf("%s: two generations differ:\n%s", first.Path, firstDifference(a, b))
		}
	}
}

// TestInitHookNamesEveryResource reads the committed script without the
// generator, so a generator bug cannot hide a missing queue or table.
func TestInitHookNamesEveryResource(t *testing.T) {
	tpl, err := LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(repoRoot, InitHookPath))
	if err != nil {
		t.Fatal(err)
	}
	var wantQueues, wantTables []string
	for _, q := range tpl.Queues {
		wantQueues = append(wantQueues, q.Name)
	}
	for _, tb := range tpl.Tables {
		wantTables = append(wantTables, tb.Name)
	}
	gotQueues := submatches(`(?m)create_queue ([^ ]+) '`, b)
	gotTables := submatches(`(?m)create-table --table-name ([^ ]+) `, b)
	for _, c := range []struct {
		name      string
		got, want []string
	}{{"queues", gotQueues, wantQueues}, {"tables", gotTables, wantTables}} {
		slices.Sort(c.got)
		slices.Sort(c.want)
		if len(c.want) == 0 {
			t.Fatalf("the template declares no %s", c.name)
		}
		if !slices.Equal(c.got, c.want) {
			t.Errorf("hook creates %s %v; template declares %v", c.name, c.got, c.want)
		}
	}
}

// TestInitHookRuns runs the generated script under bash with a recording
// stand-in for awslocal, and checks what it asked LocalStack to create.
func TestInitHookRuns(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	for _, file := range []string{"", filepath.Join(brokenDir, "complete.yaml")} {
		tpl := loadForHook(t, file)
		t.Run(filepath.Base(tpl.Path), func(t *testing.T) {
			// Given the hook generated from a template,
			calls := runHook(t, bash, GenerateInitHook(tpl))
			// when it runs, then every queue is created once, after its DLQ,
			created := map[string]int{} // queue name -> position
			for i, c := range calls {
				if len(c) >= 4 && c[0] == "sqs" && c[1] == "create-queue" {
					if _, dup := created[c[3]]; dup {
						t.Errorf("queue %s created twice", c[3])
					}
					created[c[3]] = i
					checkQueueCall(t, tpl, c, created)
				}
			}
			if len(created) != len(tpl.Queues) {
				t.Errorf("created %d queues, template has %d", len(created), len(tpl.Queues))
			}
			// and every table is created on demand with its keys and indexes.
			tables := 0
			for _, c := range calls {
				if len(c) >= 4 && c[0] == "dynamodb" && c[1] == "create-table" {
					tables++
					checkTableCall(t, tpl, c)
				}
			}
			if tables != len(tpl.Tables) {
				t.Errorf("created %d tables, template has %d", tables, len(tpl.Tables))
			}
		})
	}
}

func TestDockerComposeMountsInitHook(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "localstack", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Image       string
			Ports       []string
			Environment map[string]string
			Volumes     []string
		}
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatal(err)
	}
	ls, ok := compose.Services["localstack"]
	if !ok {
		t.Fatal("no localstack service")
	}
	image, tag, _ := strings.Cut(ls.Image, ":")
	if !strings.HasPrefix(image, "localstack/localstack") || !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(tag) {
		t.Errorf("image %q is not a LocalStack image pinned to a version", ls.Image)
	}
	if !slices.Contains(ls.Ports, "127.0.0.1:4566:4566") {
		t.Errorf("ports %v do not bind 127.0.0.1:4566 only", ls.Ports)
	}
	for _, p := range ls.Ports {
		if !strings.HasPrefix(p, "127.0.0.1:") {
			t.Errorf("port %q is reachable from other machines", p)
		}
	}
	if v := ls.Environment["LOCALSTACK_AUTH_TOKEN"]; !strings.HasPrefix(v, "${LOCALSTACK_AUTH_TOKEN") {
		t.Errorf("LOCALSTACK_AUTH_TOKEN = %q; pass it from the environment, never commit it", v)
	}
	services := strings.Split(ls.Environment["SERVICES"], ",")
	for _, s := range []string{"sqs", "dynamodb"} {
		if !slices.Contains(services, s) {
			t.Errorf("SERVICES %v lacks %s", services, s)
		}
	}
	hostDir := "./" + filepath.ToSlash(strings.TrimPrefix(filepath.Dir(InitHookPath), "localstack/"))
	mounted := slices.ContainsFunc(ls.Volumes, func(v string) bool {
		return strings.HasPrefix(v, hostDir+":/etc/localstack/init/ready.d")
	})
	if !mounted {
		t.Errorf("volumes %v do not mount %s at /etc/localstack/init/ready.d", ls.Volumes, hostDir)
	}
}

func loadForHook(t *testing.T, file string) *Template {
	t.Helper()
	var tpl *Template
	var err error
	if file == "" {
		tpl, err = LoadDefault()
	} else {
		tpl, err = Load(file)
	}
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// stubAWSLocal records each call, one line of unit-separated arguments, and
// answers the few calls whose output the hook reads.
const stubAWSLocal = `#!/bin/bash
{ printf '%s\x1f' "$@"; printf '\n'; } >>"$AWSLOCAL_LOG"
case "$1 $2" in
  "sqs create-queue") echo "http://localhost:4566/000000000000/$4" ;;
  "sqs get-queue-attributes") echo "arn:aws:sqs:us-east-1:000000000000:${4##*/}" ;;
  "sqs get-queue-url" | "dynamodb describe-table") exit 254 ;;
esac
`

func runHook(t *testing.T, bash string, script []byte) [][]string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "awslocal"), []byte(stubAWSLocal), 0o755); err != nil {
		t.Fatal(err)
	}
	hook := filepath.Join(dir, "hook.sh")
	if err := os.WriteFile(hook, script, 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "calls")
	cmd := exec.Command(bash, hook)
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "AWSLOCAL_LOG="+log)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hook failed: %v\n%s", err, out)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var calls [][]string
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		calls = append(calls, strings.Split(strings.TrimSuffix(line, "\x1f"), "\x1f"))
	}
	return calls
}

func checkQueueCall(t *testing.T, tpl *Template, call []string, created map[string]int) {
	t.Helper()
	name := call[3]
	q, ok := tpl.Queue(name)
	if !ok {
		t.Errorf("hook creates queue %s, which the template does not declare", name)
		return
	}
	var attrs map[string]string
	if err := json.Unmarshal([]byte(flagValue(call, "--attributes")), &attrs); err != nil {
		t.Errorf("queue %s attributes: %v", name, err)
		return
	}
	want := map[string]string{
		"VisibilityTimeout":      strconv.Itoa(q.VisibilityTimeout),
		"MessageRetentionPeriod": strconv.Itoa(q.RetentionPeriod),
	}
	if q.SSE {
		want["SqsManagedSseEnabled"] = "true"
	}
	for k, v := range want {
		if attrs[k] != v {
			t.Errorf("queue %s %s = %q, want %q", name, k, attrs[k], v)
		}
	}
	if q.DeadLetterQueue == "" {
		return
	}
	dlq, _ := tpl.queueByID(q.DeadLetterQueue)
	if _, ok := created[dlq.Name]; !ok {
		t.Errorf("queue %s created before its dead-letter queue %s", name, dlq.Name)
	}
	var policy map[string]string
	if err := json.Unmarshal([]byte(attrs["RedrivePolicy"]), &policy); err != nil {
		t.Errorf("queue %s RedrivePolicy %q: %v", name, attrs["RedrivePolicy"], err)
		return
	}
	wantPolicy := map[string]string{
		"deadLetterTargetArn": "arn:aws:sqs:us-east-1:000000000000:" + dlq.Name,
		"maxReceiveCount":     strconv.Itoa(q.MaxReceiveCount),
	}
	for k, v := range wantPolicy {
		if policy[k] != v {
			t.Errorf("queue %s RedrivePolicy %s = %q, want %q", name, k, policy[k], v)
		}
	}
}

func checkTableCall(t *testing.T, tpl *Template, call []string) {
	t.Helper()
	name := flagValue(call, "--table-name")
	tb, ok := tpl.Table(name)
	if !ok {
		t.Errorf("hook creates table %s, which the template does not declare", name)
		return
	}
	if got := flagValue(call, "--billing-mode"); got != "PAY_PER_REQUEST" {
		t.Errorf("table %s billing mode %q", name, got)
	}
	wantKeys := []string{"AttributeName=" + tb.Hash.Name + ",KeyType=HASH"}
	wantDefs := map[string]string{tb.Hash.Name: tb.Hash.Type}
	if tb.Range != nil {
		wantKeys = append(wantKeys, "AttributeName="+tb.Range.Name+",KeyType=RANGE")
		wantDefs[tb.Range.Name] = tb.Range.Type
	}
	if got := flagValues(call, "--key-schema"); !slices.Equal(got, wantKeys) {
		t.Errorf("table %s key schema %q, want %q", name, got, wantKeys)
	}
	for _, idx := range tb.Indexes {
		wantDefs[idx.Hash.Name] = idx.Hash.Type
		if idx.Range != nil {
			wantDefs[idx.Range.Name] = idx.Range.Type
		}
	}
	var defs []string
	for n, typ := range wantDefs {
		defs = append(defs, "AttributeName="+n+",AttributeType="+typ)
	}
	slices.Sort(defs)
	if got := flagValues(call, "--attribute-definitions"); !slices.Equal(got, defs) {
		t.Errorf("table %s attribute definitions %q, want %q", name, got, defs)
	}
	if len(tb.Indexes) == 0 {
		return
	}
	var gsis []struct{ IndexName string }
	if err := json.Unmarshal([]byte(flagValue(call, "--global-secondary-indexes")), &gsis); err != nil {
		t.Errorf("table %s indexes: %v", name, err)
		return
	}
	if len(gsis) != len(tb.Indexes) {
		t.Errorf("table %s: %d indexes, template has %d", name, len(gsis), len(tb.Indexes))
	}
	for i := range min(len(gsis), len(tb.Indexes)) {
		if gsis[i].IndexName != tb.Indexes[i].Name {
			t.Errorf("table %s index %d = %s, want %s", name, i, gsis[i].IndexName, tb.Indexes[i].Name)
		}
	}
}

// flagValue returns the argument after flag, or "".
func flagValue(args []string, flag string) string {
	if v := flagValues(args, flag); len(v) > 0 {
		return v[0]
	}
	return ""
}

// flagValues returns the arguments after flag up to the next flag.
func flagValues(args []string, flag string) []string {
	i := slices.Index(args, flag)
	if i < 0 {
		return nil
	}
	var out []string
	for _, a := range args[i+1:] {
		if strings.HasPrefix(a, "--") {
			break
		}
		out = append(out, a)
	}
	return out
}

func submatches(pattern string, b []byte) []string {
	var out []string
	for _, m := range regexp.MustCompile(pattern).FindAllSubmatch(b, -1) {
		out = append(out, string(m[1]))
	}
	return out
}

// firstDifference shows the first line where got and want differ.
func firstDifference(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "line " + strconv.Itoa(i+1) + ":\n  committed: " + gl + "\n  generated: " + wl
		}
	}
	return "(no line differs)"
}
