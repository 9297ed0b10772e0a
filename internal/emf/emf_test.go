package emf

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

var fixedNow = time.Date(2026, 11, 30, 3, 17, 0, 123e6, time.UTC)

func fixedClock() time.Time { return fixedNow }

// checkSpec decodes one line and checks it against the structure the EMF
// specification requires, returning the decoded root.
func checkSpec(t *testing.T, line []byte) map[string]any {
	t.Helper()
	if bytes.Count(line, []byte("\n")) != 0 {
		t.Fatalf("line holds a newline: %q", line)
	}
	var root map[string]any
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		t.Fatalf("line is not a JSON object: %v: %s", err, line)
	}
	aws, ok := root["_aws"].(map[string]any)
	if !ok {
		t.Fatalf("no _aws object: %s", line)
	}
	ts, ok := aws["Timestamp"].(json.Number)
	if !ok {
		t.Fatalf("_aws.Timestamp is not a number: %s", line)
	}
	if _, err := ts.Int64(); err != nil {
		t.Fatalf("_aws.Timestamp is not integer milliseconds: %s", ts)
	}
	directives, ok := aws["CloudWatchMetrics"].([]any)
	if !ok || len(directives) == 0 {
		t.Fatalf("_aws.CloudWatchMetrics is not a non-empty array: %s", line)
	}
	for _, d := range directives {
		dir, ok := d.(map[string]any)
		if !ok {
			t.Fatalf("directive is not an object: %v", d)
		}
		if ns, ok := dir["Namespace"].(string); !ok || ns == "" {
			t.Fatalf("directive Namespace is not a non-empty string: %v", dir)
		}
		sets, ok := dir["Dimensions"].([]any)
		if !ok {
			t.Fatalf("directive Dimensions is not an array: %v", dir)
		}
		for _, s := range sets {
			set, ok := s.([]any)
			if !ok || len(set) > 30 {
				t.Fatalf("dimension set is not an array of at most 30: %v", s)
			}
			for _, k := range set {
				key, ok := k.(string)
				if !ok {
					t.Fatalf("dimension key %v is not a string", k)
				}
				if _, ok := root[key].(string); !ok {
					t.Fatalf("dimension %q is not a string member at top level: %s", key, line)
				}
			}
		}
		metrics, ok := dir["Metrics"].([]any)
		if !ok || len(metrics) == 0 || len(metrics) > 100 {
			t.Fatalf("directive Metrics is not an array of 1 to 100: %v", dir)
		}
		for _, m := range metrics {
			def, ok := m.(map[string]any)
			if !ok {
				t.Fatalf("metric definition is not an object: %v", m)
			}
			name, ok := def["Name"].(string)
			if !ok || name == "" {
				t.Fatalf("metric Name is not a non-empty string: %v", def)
			}
			if unit, ok := def["Unit"].(string); ok && !Unit(unit).Valid() {
				t.Fatalf("metric %q has unit %q", name, unit)
			}
			switch v := root[name].(type) {
			case json.Number:
			case []any:
				if len(v) == 0 || len(v) > 100 {
					t.Fatalf("metric %q has %d values", name, len(v))
				}
				for _, x := range v {
					if _, ok := x.(json.Number); !ok {
						t.Fatalf("metric %q value %v is not a number", name, x)
					}
				}
			default:
				t.Fatalf("metric %q is not a number at top level: %s", name, line)
			}
		}
	}
	return root
}

// scenario writes the lines the golden file holds.
func scenario(w *bytes.Buffer) error {
	m := New(w, "hookline").WithClock(fixedClock).With(map[string]any{"function": "receiver"})
	return errors.Join(
		m.Count("accepted", 1, Dims{"source": "payments"}),
		m.Duration("event_to_intake", 1500*time.Microsecond, Dims{"source": "payments"}),
		m.Emit("rejected", 1, Count, Dims{"source": "usage", "reason": "bad_signature"}, map[string]any{"request_id": "req-1"}),
		m.Entry(Dims{"source": "usage", "workload": "workload-7"}).
			Put("ledger_lag", 12.5, Milliseconds).
			Put("ledger_lag", 40, Milliseconds).
			Put("attributed_units", 1012, None).
			Set("event_id", "evt_123").
			Flush(),
		m.Count("reconcile_runs", 1, nil),
	)
}

func TestGolden(t *testing.T) {
	// given a fixed clock and a fixed set of metrics
	var first, second bytes.Buffer
	// when written twice
	if err := scenario(&first); err != nil {
		t.Fatal(err)
	}
	if err := scenario(&second); err != nil {
		t.Fatal(err)
	}
	// then both runs are byte-identical, every line meets the spec, and the
	// output matches the golden file
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Fatalf("output differs between runs:\n%s\n%s", first.Bytes(), second.Bytes())
	}
	sc := bufio.NewScanner(bytes.NewReader(first.Bytes()))
	lines := 0
	for sc.Scan() {
		checkSpec(t, sc.Bytes())
		lines++
	}
	if lines != 5 {
		t.Fatalf("wrote %d lines, want 5", lines)
	}
	golden := filepath.Join("testdata", "scenario.golden.jsonl")
	if *update {
		if err := os.WriteFile(golden, first.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(first.Bytes(), want) {
		t.Fatalf("output differs from %s (run go test -update if intended):\ngot:\n%s\nwant:\n%s", golden, first.Bytes(), want)
	}
}

func TestLineContents(t *testing.T) {
	// given a logger with a fixed clock
	var buf bytes.Buffer
	m := New(&buf, "hookline").WithClock(fixedClock)
	// when one duration is emitted with a dimension and a property
	err := m.Emit("intake_to_ledger", 2.25, Milliseconds, Dims{"source": "usage"}, map[string]any{"event_id": "evt_9"})
	if err != nil {
		t.Fatal(err)
	}
	// then the line carries exactly those members
	root := checkSpec(t, bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	if root["intake_to_ledger"].(json.Number).String() != "2.25" || root["source"] != "usage" || root["event_id"] != "evt_9" {
		t.Fatalf("unexpected members: %v", root)
	}
	aws := root["_aws"].(map[string]any)
	if ts, _ := aws["Timestamp"].(json.Number).Int64(); ts != fixedNow.UnixMilli() {
		t.Fatalf("Timestamp = %d, want %d", ts, fixedNow.UnixMilli())
	}
	dir := aws["CloudWatchMetrics"].([]any)[0].(map[string]any)
	if dir["Namespace"] != "hookline" || fmt.Sprint(dir["Dimensions"]) != "[[source]]" ||
		fmt.Sprint(dir["Metrics"]) != "[map[Name:intake_to_ledger Unit:Milliseconds]]" {
		t.Fatalf("unexpected directive: %v", dir)
	}
}

func TestInvalid(t *testing.T) {
	many := func(n int, prefix string) *Entry {
		e := New(&bytes.Buffer{}, "hookline").Entry(nil)
		for i := range n {
			e.Put(fmt.Sprintf("%s%d", prefix, i), 1, Count)
		}
		return e
	}
	manyDims := Dims{}
	for i := range MaxDimensions + 1 {
		manyDims[fmt.Sprintf("d%d", i)] = "v"
	}
	tests := []struct {
		name  string
		entry func(m *Logger) *Entry
	}{
		{name: "no metrics", entry: func(m *Logger) *Entry { return m.Entry(nil) }},
		{name: "101 metrics", entry: func(*Logger) *Entry { return many(MaxMetrics+1, "m") }},
		{name: "31 dimensions", entry: func(m *Logger) *Entry { return m.Entry(manyDims).Put("a", 1, Count) }},
		{name: "unknown unit", entry: func(m *Logger) *Entry { return m.Entry(nil).Put("a", 1, "Furlongs") }},
		{name: "unit changes", entry: func(m *Logger) *Entry { return m.Entry(nil).Put("a", 1, Count).Put("a", 1, None) }},
		{name: "NaN", entry: func(m *Logger) *Entry { return m.Entry(nil).Put("a", math.NaN(), Count) }},
		{name: "infinity", entry: func(m *Logger) *Entry { return m.Entry(nil).Put("a", math.Inf(1), Count) }},
		{name: "101 values", entry: func(m *Logger) *Entry {
			e := m.Entry(nil)
			for range MaxValues + 1 {
				e.Put("a", 1, Count)
			}
			return e
		}},
		{name: "empty metric name", entry: func(m *Logger) *Entry { return m.Entry(nil).Put("", 1, Count) }},
		{name: "metric name with a leading colon", entry: func(m *Logger) *Entry { return m.Entry(nil).Put(":a", 1, Count) }},
		{name: "empty dimension value", entry: func(m *Logger) *Entry { return m.Entry(Dims{"source": ""}).Put("a", 1, Count) }},
		{name: "blank dimension value", entry: func(m *Logger) *Entry { return m.Entry(Dims{"source": "  "}).Put("a", 1, Count) }},
		{name: "non-ASCII dimension value", entry: func(m *Logger) *Entry { return m.Entry(Dims{"source": "zahlungen-ä"}).Put("a", 1, Count) }},
		{name: "dimension named like a metric", entry: func(m *Logger) *Entry { return m.Entry(Dims{"a": "x"}).Put("a", 1, Count) }},
		{name: "property named like a dimension", entry: func(m *Logger) *Entry { return m.Entry(Dims{"s": "x"}).Put("a", 1, Count).Set("s", "y") }},
		{name: "property named _aws", entry: func(m *Logger) *Entry { return m.Entry(nil).Put("a", 1, Count).Set("_aws", 1) }},
		{name: "logger property named like a metric", entry: func(m *Logger) *Entry {
			return m.With(map[string]any{"a": 1}).Entry(nil).Put("a", 1, Count)
		}},
		{name: "property that cannot be JSON", entry: func(m *Logger) *Entry { return m.Entry(nil).Put("a", 1, Count).Set("c", make(chan int)) }},
		{name: "empty namespace", entry: func(*Logger) *Entry { return New(&bytes.Buffer{}, "").Entry(nil).Put("a", 1, Count) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// given a line that breaks the spec
			var buf bytes.Buffer
			m := New(&buf, "hookline")
			// when flushed
			err := tc.entry(m).Flush()
			// then it is refused and nothing is written
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Flush error = %v, want ErrInvalid", err)
			}
			if buf.Len() != 0 {
				t.Fatalf("wrote %q", buf.String())
			}
		})
	}
}

func TestLimitsAccepted(t *testing.T) {
	// given exactly 100 metrics, 30 dimensions and a colon inside a value
	var buf bytes.Buffer
	dims := Dims{"arn": "arn:aws:lambda:eu-west-1:1:function:x"}
	for i := range MaxDimensions - 1 {
		dims[fmt.Sprintf("d%d", i)] = "v"
	}
	e := New(&buf, "hookline").Entry(dims)
	for i := range MaxMetrics {
		e.Put(fmt.Sprintf("m%d", i), float64(i), Count)
	}
	// when flushed
	if err := e.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	// then the line meets the spec
	checkSpec(t, bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

func TestNilLoggerDiscards(t *testing.T) {
	// given no logger, when metrics are written, then nothing fails
	var m *Logger
	if err := errors.Join(
		m.Count("a", 1, nil),
		m.Duration("b", time.Second, nil),
		m.With(map[string]any{"x": 1}).WithClock(fixedClock).Entry(nil).Put("c", 1, Count).Flush(),
	); err != nil {
		t.Fatal(err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteError(t *testing.T) {
	// given a writer that fails, when a metric is written, then the error is returned
	err := New(failingWriter{}, "hookline").Count("a", 1, nil)
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Count error = %v", err)
	}
}

// countingWriter records each Write call separately.
type countingWriter struct {
	mu     sync.Mutex
	writes [][]byte
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, bytes.Clone(p))
	return len(p), nil
}

func TestConcurrentLinesStayWhole(t *testing.T) {
	// given loggers derived from one another, sharing an unsynchronised buffer
	var buf bytes.Buffer
	base := New(&buf, "hookline")
	derived := base.With(map[string]any{"function": "worker"})
	const goroutines, each = 8, 50
	// when they write at once
	var wg sync.WaitGroup
	for g := range goroutines {
		m := base
		if g%2 == 1 {
			m = derived
		}
		wg.Go(func() {
			for i := range each {
				if err := m.Count("accepted", float64(i), Dims{"source": fmt.Sprintf("s%d", g)}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	// then every line is whole and meets the spec
	sc := bufio.NewScanner(&buf)
	n := 0
	for sc.Scan() {
		checkSpec(t, sc.Bytes())
		n++
	}
	if n != goroutines*each {
		t.Fatalf("%d lines, want %d", n, goroutines*each)
	}
}

func TestOneWritePerLine(t *testing.T) {
	// given a writer that records calls
	w := &countingWriter{}
	m := New(w, "hookline")
	// when two lines are written
	if err := errors.Join(m.Count("a", 1, nil), m.Count("b", 2, nil)); err != nil {
		t.Fatal(err)
	}
	// then each went out in one Write ending in a newline
	if len(w.writes) != 2 {
		t.Fatalf("%d writes, want 2", len(w.writes))
	}
	for _, p := range w.writes {
		if bytes.Count(p, []byte("\n")) != 1 || p[len(p)-1] != '\n' {
			t.Fatalf("write %q is not one line", p)
		}
	}
}
