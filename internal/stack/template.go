package stack

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/intrinsics"

	"github.com/hookline/hookline/infra"
)

// ErrNotFound is returned when no template file can be found.
var ErrNotFound = errors.New("stack: infra/template.yaml not found")

// Template is the parsed view of infra/template.yaml that the rest of
// hookline needs.
type Template struct {
	Path         string
	Queues       []Queue
	Tables       []Table
	Alarms       []Alarm
	Functions    []Function
	EventSources []EventSource
	Schedules    []Schedule
	Routes       []Route

	raw *cloudformation.Template
}

// Raw returns the goformation model, for checks this package does not wrap.
func (t *Template) Raw() *cloudformation.Template { return t.raw }

// processorOptions resolves references to logical IDs, since nothing is
// deployed.
func processorOptions() *intrinsics.ProcessorOptions {
	return &intrinsics.ProcessorOptions{
		IntrinsicHandlerOverrides: map[string]intrinsics.IntrinsicHandler{
			"Ref":        refHandler,
			"Fn::GetAtt": getAttHandler,
			"Fn::Sub":    subHandler,
			"Fn::If":     ifHandler,
		},
	}
}

// parseMu serialises goformation's parsing: it registers its YAML tag
// handlers in a package-level map on every parse, so two parses at once
// (parallel tests each starting a local AWS) crash with concurrent map
// writes.
var parseMu sync.Mutex

func parsed(parse func() (*cloudformation.Template, error)) (*cloudformation.Template, error) {
	parseMu.Lock()
	defer parseMu.Unlock()
	return parse()
}

// Load parses the template at path.
func Load(path string) (*Template, error) {
	raw, err := parsed(func() (*cloudformation.Template, error) { return goformation.OpenWithOptions(path, processorOptions()) })
	if err != nil {
		return nil, fmt.Errorf("stack: parse %s: %w", path, err)
	}
	t := &Template{Path: path, raw: raw}
	if err := t.build(); err != nil {
		return nil, fmt.Errorf("stack: %s: %w", path, err)
	}
	return t, nil
}

// Find walks up from the working directory to the repository's
// infra/template.yaml, so tests in any package can load it.
func Find() (string, error) {
	if p := os.Getenv("HOOKLINE_TEMPLATE"); p != "" {
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("stack: %w", err)
	}
	for {
		p := filepath.Join(dir, "infra", "template.yaml")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNotFound
		}
		dir = parent
	}
}

// Parse parses template YAML; name says where it came from, in errors and
// in [Template.Path].
func Parse(name string, yaml []byte) (*Template, error) {
	raw, err := parsed(func() (*cloudformation.Template, error) {
		return goformation.ParseYAMLWithOptions(yaml, processorOptions())
	})
	if err != nil {
		return nil, fmt.Errorf("stack: parse %s: %w", name, err)
	}
	t := &Template{Path: name, raw: raw}
	if err := t.build(); err != nil {
		return nil, fmt.Errorf("stack: %s: %w", name, err)
	}
	return t, nil
}

// EmbeddedName is the [Template.Path] of the embedded template.
const EmbeddedName = "embedded infra/template.yaml"

// Embedded parses the template built into the binary ([infra.Template]),
// or the file HOOKLINE_TEMPLATE names when it is set. It needs no working
// directory.
func Embedded() (*Template, error) {
	if p := os.Getenv("HOOKLINE_TEMPLATE"); p != "" {
		return Load(p)
	}
	return Parse(EmbeddedName, infra.Template)
}

// LoadDefault finds and loads the repository template.
func LoadDefault() (*Template, error) {
	p, err := Find()
	if err != nil {
		return nil, err
	}
	return Load(p)
}

func (t *Template) build() error {
	var errs []error
	for _, id := range sortedIDs(t.raw) {
		if err := t.add(id, t.raw.Resources[id]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

func sortedIDs(raw *cloudformation.Template) []string {
	ids := make([]string, 0, len(raw.Resources))
	for id := range raw.Resources {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Queue finds a queue by its QueueName.
func (t *Template) Queue(name string) (Queue, bool) {
	for _, q := range t.Queues {
		if q.Name == name || q.LogicalID == name {
			return q, true
		}
	}
	return Queue{}, false
}

// Table finds a table by logical ID or TableName.
func (t *Template) Table(name string) (Table, bool) {
	for _, tb := range t.Tables {
		if tb.Name == name || tb.LogicalID == name {
			return tb, true
		}
	}
	return Table{}, false
}

// Function finds a function by logical ID.
func (t *Template) Function(logicalID string) (Function, bool) {
	for _, f := range t.Functions {
		if f.LogicalID == logicalID {
			return f, true
		}
	}
	return Function{}, false
}

// QueueByLogicalID finds a queue by its logical ID.
func (t *Template) queueByID(id string) (Queue, bool) {
	for _, q := range t.Queues {
		if q.LogicalID == id {
			return q, true
		}
	}
	return Queue{}, false
}

// DeadLetterQueues returns the queues that some other queue redrives into.
func (t *Template) DeadLetterQueues() []Queue {
	var out []Queue
	for _, q := range t.Queues {
		if q.DeadLetterQueue == "" {
			continue
		}
		if dlq, ok := t.queueByID(q.DeadLetterQueue); ok {
			dlq.SourceQueue = q.LogicalID
			out = append(out, dlq)
		}
	}
	return out
}

// LogicalID returns the logical ID that a resolved intrinsic names: "ref:X",
// "getatt:X.Arn" and "X" all give X.
func LogicalID(v string) string {
	v = strings.TrimPrefix(v, "ref:")
	if rest, ok := strings.CutPrefix(v, "getatt:"); ok {
		v, _, _ = strings.Cut(rest, ".")
	}
	return v
}

// ParameterDefault returns the default of the template parameter named by
// v ("ref:X" or "X"), as a string. ok is false when v names no parameter
// or the parameter has no default.
func (t *Template) ParameterDefault(v string) (string, bool) {
	if t.raw == nil {
		return "", false
	}
	p, ok := t.raw.Parameters[LogicalID(v)]
	if !ok || p.Default == nil {
		return "", false
	}
	return fmt.Sprint(p.Default), true
}
