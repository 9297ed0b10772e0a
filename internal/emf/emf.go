package emf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"sync"
	"time"
)

// ErrInvalid reports a metric line that breaks the EMF specification or its
// limits: a bad name, unit, dimension or value, a clash of member names, or
// too many metrics or dimensions.
var ErrInvalid = errors.New("emf: invalid metric")

// Limits from the EMF specification and CloudWatch.
const (
	// MaxMetrics is the most metrics one directive may name.
	MaxMetrics = 100
	// MaxDimensions is the most dimension keys one dimension set may hold.
	MaxDimensions = 30
	// MaxValues is the most values one metric may carry in one line.
	MaxValues = 100
)

// Unit is a CloudWatch metric unit.
type Unit string

// Units accepted by CloudWatch.
const (
	Seconds         Unit = "Seconds"
	Microseconds    Unit = "Microseconds"
	Milliseconds    Unit = "Milliseconds"
	Bytes           Unit = "Bytes"
	Kilobytes       Unit = "Kilobytes"
	Megabytes       Unit = "Megabytes"
	Gigabytes       Unit = "Gigabytes"
	Terabytes       Unit = "Terabytes"
	Bits            Unit = "Bits"
	Kilobits        Unit = "Kilobits"
	Megabits        Unit = "Megabits"
	Gigabits        Unit = "Gigabits"
	Terabits        Unit = "Terabits"
	Percent         Unit = "Percent"
	Count           Unit = "Count"
	BytesPerSecond  Unit = "Bytes/Second"
	KilobytesPerSec Unit = "Kilobytes/Second"
	MegabytesPerSec Unit = "Megabytes/Second"
	GigabytesPerSec Unit = "Gigabytes/Second"
	TerabytesPerSec Unit = "Terabytes/Second"
	BitsPerSecond   Unit = "Bits/Second"
	KilobitsPerSec  Unit = "Kilobits/Second"
	MegabitsPerSec  Unit = "Megabits/Second"
	GigabitsPerSec  Unit = "Gigabits/Second"
	TerabitsPerSec  Unit = "Terabits/Second"
	CountPerSecond  Unit = "Count/Second"
	None            Unit = "None"
)

var units = map[Unit]bool{
	Seconds: true, Microseconds: true, Milliseconds: true,
	Bytes: true, Kilobytes: true, Megabytes: true, Gigabytes: true, Terabytes: true,
	Bits: true, Kilobits: true, Megabits: true, Gigabits: true, Terabits: true,
	Percent: true, Count: true,
	BytesPerSecond: true, KilobytesPerSec: true, MegabytesPerSec: true, GigabytesPerSec: true, TerabytesPerSec: true,
	BitsPerSecond: true, KilobitsPerSec: true, MegabitsPerSec: true, GigabitsPerSec: true, TerabitsPerSec: true,
	CountPerSecond: true, None: true,
}

// Valid reports whether u is a unit CloudWatch accepts.
func (u Unit) Valid() bool { return units[u] }

// Dims maps dimension names to values. All metrics of a line share them.
type Dims map[string]string

// output is the writer shared by a Logger and the loggers derived from it.
type output struct {
	mu sync.Mutex
	w  io.Writer
}

// Logger writes EMF lines to a writer under one namespace.
type Logger struct {
	out       *output
	namespace string
	now       func() time.Time
	props     map[string]any
}

// New returns a Logger writing to w under namespace, such as "hookline". An
// invalid namespace is reported by each write.
func New(w io.Writer, namespace string) *Logger {
	return &Logger{out: &output{w: w}, namespace: namespace, now: time.Now}
}

// WithClock returns a Logger that shares l's writer but stamps lines with now.
func (l *Logger) WithClock(now func() time.Time) *Logger {
	if l == nil {
		return nil
	}
	c := *l
	c.now = now
	return &c
}

// With returns a Logger that shares l's writer and adds props to every line,
// for example the function name. Later props replace earlier ones.
func (l *Logger) With(props map[string]any) *Logger {
	if l == nil {
		return nil
	}
	c := *l
	c.props = make(map[string]any, len(l.props)+len(props))
	for k, v := range l.props {
		c.props[k] = v
	}
	for k, v := range props {
		c.props[k] = v
	}
	return &c
}

// Count writes one line with the metric name counting n.
func (l *Logger) Count(name string, n float64, dims Dims) error {
	return l.Emit(name, n, Count, dims, nil)
}

// Duration writes one line with the metric name set to d in milliseconds.
func (l *Logger) Duration(name string, d time.Duration, dims Dims) error {
	return l.Emit(name, float64(d)/float64(time.Millisecond), Milliseconds, dims, nil)
}

// Emit writes one line with one metric, its dimensions and extra properties.
func (l *Logger) Emit(name string, value float64, unit Unit, dims Dims, props map[string]any) error {
	e := l.Entry(dims).Put(name, value, unit)
	for k, v := range props {
		e.Set(k, v)
	}
	return e.Flush()
}

// Entry starts a line with the given dimensions; add metrics with
// [Entry.Put] and properties with [Entry.Set], then write it with
// [Entry.Flush].
func (l *Logger) Entry(dims Dims) *Entry {
	return &Entry{l: l, dims: dims, values: map[string][]float64{}, units: map[string]Unit{}, props: map[string]any{}}
}

// Entry is one EMF line being built. It is not safe for concurrent use.
type Entry struct {
	l      *Logger
	dims   Dims
	names  []string // metric names in the order first put
	values map[string][]float64
	units  map[string]Unit
	props  map[string]any
	err    error
}

// Put adds a value for the metric name. Putting the same name again adds
// another value to the line (an EMF value array); the unit must not change.
func (e *Entry) Put(name string, value float64, unit Unit) *Entry {
	if u, ok := e.units[name]; ok {
		if u != unit {
			e.fail(fmt.Errorf("metric %q: unit %q after %q: %w", name, unit, u, ErrInvalid))
		}
	} else {
		e.names = append(e.names, name)
		e.units[name] = unit
	}
	e.values[name] = append(e.values[name], value)
	return e
}

// Set adds a property: a top-level member that is logged but not a metric.
func (e *Entry) Set(key string, value any) *Entry {
	e.props[key] = value
	return e
}

func (e *Entry) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// directive is the MetricDirective of the EMF specification.
type directive struct {
	Namespace  string       `json:"Namespace"`
	Dimensions [][]string   `json:"Dimensions"`
	Metrics    []metricDecl `json:"Metrics"`
}

type metricDecl struct {
	Name string `json:"Name"`
	Unit Unit   `json:"Unit"`
}

type metadata struct {
	Timestamp         int64       `json:"Timestamp"`
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
}

// Flush validates the line and writes it as one JSON line. Nothing is written
// when it is invalid.
func (e *Entry) Flush() error {
	if e.l == nil {
		return nil
	}
	line, err := e.encode()
	if err != nil {
		return err
	}
	out := e.l.out
	out.mu.Lock()
	defer out.mu.Unlock()
	if _, err := out.w.Write(line); err != nil {
		return fmt.Errorf("emf: write: %w", err)
	}
	return nil
}

// encode builds the JSON line, newline included.
func (e *Entry) encode() ([]byte, error) {
	if e.err != nil {
		return nil, e.err
	}
	if err := checkName("namespace", e.l.namespace, 255); err != nil {
		return nil, err
	}
	if len(e.names) == 0 {
		return nil, fmt.Errorf("no metrics: %w", ErrInvalid)
	}
	if len(e.names) > MaxMetrics {
		return nil, fmt.Errorf("%d metrics, limit %d: %w", len(e.names), MaxMetrics, ErrInvalid)
	}
	if len(e.dims) > MaxDimensions {
		return nil, fmt.Errorf("%d dimensions, limit %d: %w", len(e.dims), MaxDimensions, ErrInvalid)
	}

	root := make(map[string]any, len(e.l.props)+len(e.props)+len(e.dims)+len(e.names)+1)
	for k, v := range e.l.props {
		root[k] = v
	}
	for k, v := range e.props {
		root[k] = v
	}
	taken := map[string]string{"_aws": "reserved"}
	claim := func(kind, key string) error {
		if other, ok := taken[key]; ok {
			return fmt.Errorf("%s %q clashes with a %s of the same name: %w", kind, key, other, ErrInvalid)
		}
		taken[key] = kind
		return nil
	}

	keys := make([]string, 0, len(e.dims))
	for k, v := range e.dims {
		if err := checkName("dimension name", k, 255); err != nil {
			return nil, err
		}
		if err := checkValue("dimension "+k+" value", v, 1024); err != nil {
			return nil, err
		}
		if err := claim("dimension", k); err != nil {
			return nil, err
		}
		keys = append(keys, k)
		root[k] = v
	}
	sort.Strings(keys)

	decls := make([]metricDecl, 0, len(e.names))
	for _, name := range e.names {
		if err := checkName("metric name", name, 255); err != nil {
			return nil, err
		}
		if err := claim("metric", name); err != nil {
			return nil, err
		}
		unit := e.units[name]
		if !unit.Valid() {
			return nil, fmt.Errorf("metric %q: unit %q unknown: %w", name, unit, ErrInvalid)
		}
		values := e.values[name]
		if len(values) > MaxValues {
			return nil, fmt.Errorf("metric %q: %d values, limit %d: %w", name, len(values), MaxValues, ErrInvalid)
		}
		for _, v := range values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("metric %q: value is not finite: %w", name, ErrInvalid)
			}
		}
		decls = append(decls, metricDecl{Name: name, Unit: unit})
		if len(values) == 1 {
			root[name] = values[0]
		} else {
			root[name] = values
		}
	}
	for k := range e.props {
		if _, ok := taken[k]; ok {
			return nil, fmt.Errorf("property %q clashes with a %s of the same name: %w", k, taken[k], ErrInvalid)
		}
	}
	for k := range e.l.props {
		if _, ok := taken[k]; ok {
			return nil, fmt.Errorf("property %q clashes with a %s of the same name: %w", k, taken[k], ErrInvalid)
		}
	}

	root["_aws"] = metadata{
		Timestamp: e.l.now().UnixMilli(),
		CloudWatchMetrics: []directive{{
			Namespace:  e.l.namespace,
			Dimensions: [][]string{keys},
			Metrics:    decls,
		}},
	}
	line, err := json.Marshal(root)
	if err != nil {
		return nil, fmt.Errorf("encode: %v: %w", err, ErrInvalid)
	}
	return append(line, '\n'), nil
}

// checkName applies CloudWatch's rules for names: 1 to limit bytes of ASCII
// without control characters, not only spaces, and not starting with ':'.
func checkName(what, s string, limit int) error {
	if s != "" && s[0] == ':' {
		return fmt.Errorf("%s: must not start with ':': %w", what, ErrInvalid)
	}
	return checkValue(what, s, limit)
}

// checkValue applies CloudWatch's rules for dimension values: 1 to limit bytes
// of ASCII without control characters, not only spaces.
func checkValue(what, s string, limit int) error {
	if s == "" || len(s) > limit {
		return fmt.Errorf("%s: want 1 to %d bytes: %w", what, limit, ErrInvalid)
	}
	blank := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < ' ' || c > '~' {
			return fmt.Errorf("%s: want printable ASCII: %w", what, ErrInvalid)
		}
		if c != ' ' {
			blank = false
		}
	}
	if blank {
		return fmt.Errorf("%s: is blank: %w", what, ErrInvalid)
	}
	return nil
}
