package stack

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// failureMetric matches the names of the metrics that mean work stopped
// or was refused: a run or a delivery that failed, a record or read
// refused, rejected, dead-lettered or quarantined, a sweep behind, a
// source stalled, usage dropped as too old, a revised value in conflict.
var failureMetric = regexp.MustCompile(`(Failed|Refused|Rejected|DeadLettered|Quarantined|Stalled|Behind|TooOld|Conflict)$`)

// emittedMetrics lists the metric names the product's code declares: every
// string constant named Metric... in the non-test Go files under internal/
// and pkg/, by name.
func emittedMetrics(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	productSources(t, []string{"../../internal", "../../pkg"}, func(path string, f *ast.File) {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Metric") || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						out[v] = path + ": " + name.Name
					}
				}
			}
		}
	})
	return out
}

// productSources parses every non-test Go file under roots and calls fn
// with its slash-separated path and syntax tree.
func productSources(t *testing.T, roots []string, fn func(path string, f *ast.File)) {
	t.Helper()
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			fn(filepath.ToSlash(path), f)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// alarmsOn reports whether an alarm of the template watches metric in
// the product's namespace: by MetricName, or by a Metrics Insights query
// that aggregates it.
func alarmsOn(tpl *Template, metric string) bool {
	query := regexp.MustCompile(`(?i)SELECT\s+(SUM|MAX|AVG|COUNT)\(\s*"?` + regexp.QuoteMeta(metric) + `"?\s*\)\s+FROM\s+(SCHEMA\(\s*)?"?` +
		metricsNamespace + `"?`)
	return slices.ContainsFunc(tpl.Alarms, func(a Alarm) bool {
		return (a.Namespace == metricsNamespace && a.MetricName == metric) || slices.ContainsFunc(a.Queries, query.MatchString)
	})
}

// TestEveryFailureMetricHasAnAlarm: every metric the code emits that
// means work stopped or was refused has an alarm in the template, so that
// no failure is told only by a log line and an unwatched metric.
func TestEveryFailureMetricHasAnAlarm(t *testing.T) {
	tpl, err := LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	metrics := emittedMetrics(t)
	var failures []string
	for name := range metrics {
		if failureMetric.MatchString(name) {
			failures = append(failures, name)
		}
	}
	slices.Sort(failures)
	// The list must hold the failures the sums reconciler counts, or the
	// parse missed them.
	for _, want := range []string{"SumsRunFailed", "SumsStalled", "SumsReadRefused", "ReconRunFailed"} {
		if !slices.Contains(failures, want) {
			t.Fatalf("failure metrics %v lack %s", failures, want)
		}
	}
	for _, name := range failures {
		if !alarmsOn(tpl, name) {
			t.Errorf("%s (%s) has no alarm in %s", name, metrics[name], tpl.Path)
		}
	}
}

func TestAlarmQueriesMatchTheirMetricOnly(t *testing.T) {
	tpl := &Template{Alarms: []Alarm{{LogicalID: "A", Queries: []string{`SELECT SUM(SumsRunFailed) FROM hookline`}},
		{LogicalID: "B", Queries: []string{`SELECT MAX("SumsStalled") FROM SCHEMA("hookline", Source)`}},
		{LogicalID: "C", Namespace: metricsNamespace, MetricName: "WebhookFailed"}}}
	for metric, want := range map[string]bool{"SumsRunFailed": true, "SumsStalled": true, "WebhookFailed": true,
		"SumsRun": false, "RunFailed": false, "SumsReadFailed": false} {
		if got := alarmsOn(tpl, metric); got != want {
			t.Errorf("alarmsOn(%s) = %v, want %v", metric, got, want)
		}
	}
}
