package lab_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/dev/lab"
)

// svgText is one text element of an SVG plot.
type svgText struct {
	X          float64
	Style, Txt string
}

// svgDoc is what the tests read of an SVG plot: its texts and the styles
// of its paths.
type svgDoc struct {
	Texts  []svgText
	Paths  []string
	Width  float64
	Source string
}

var (
	svgWidth = regexp.MustCompile(`viewBox="0 0 ([0-9.]+) `)
	svgTexts = regexp.MustCompile(`(?s)<text x="([-0-9.]+)"[^>]*style="([^"]*)"[^>]*>([^<]*)</text>`)
	svgPaths = regexp.MustCompile(`<path [^>]*style="([^"]*)"`)
)

func readSVG(t *testing.T, path string) svgDoc {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := svgDoc{Source: string(b)}
	if m := svgWidth.FindStringSubmatch(doc.Source); m != nil {
		doc.Width, _ = strconv.ParseFloat(m[1], 64)
	}
	for _, m := range svgTexts.FindAllStringSubmatch(doc.Source, -1) {
		x, _ := strconv.ParseFloat(m[1], 64)
		doc.Texts = append(doc.Texts, svgText{X: x, Style: m[2], Txt: strings.TrimSpace(m[3])})
	}
	for _, m := range svgPaths.FindAllStringSubmatch(doc.Source, -1) {
		doc.Paths = append(doc.Paths, m[1])
	}
	if doc.Width == 0 || len(doc.Texts) == 0 {
		t.Fatalf("%s: no viewBox or no texts", path)
	}
	return doc
}

var (
	fontSize    = regexp.MustCompile(`font-size:([0-9.]+)px`)
	strokeWidth = regexp.MustCompile(`stroke-width:([0-9.]+)`)
)

// TestPlotsReadCorrectly draws the report's plots for a spike (a queue in
// the thousands, an oldest event in seconds) and a run whose duplicate
// charges equal its redeliveries, and checks what a reader would see.
func TestPlotsReadCorrectly(t *testing.T) {
	r := &lab.Report{Name: "spike", Rate: 500}
	for i := range 60 {
		depth, age := 5, 0.02
		if i >= 20 && i < 50 {
			depth, age = 400*(i-19), float64(i-19)/2
		}
		r.Seconds = append(r.Seconds, lab.Second{T: i, Offered: 500, Accepted: 500, Charged: 500, Duplicates: i % 3, Redeliveries: i % 3,
			QueueDepth: depth, OldestAge: age, P50: 30, P99: 120})
	}
	dir := t.TempDir()
	if err := lab.WriteReport(dir, r); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"rate", "latency", "duplicates", "queue"} {
		doc := readSVG(t, filepath.Join(dir, "spike-"+name+".svg"))
		// Then every text ends inside the frame even in a font a fifth
		// wider than the one it was laid out in (a viewer without
		// Liberation Serif substitutes another)
		for _, tx := range doc.Texts {
			size := 12.0
			if m := fontSize.FindStringSubmatch(tx.Style); m != nil {
				size, _ = strconv.ParseFloat(m[1], 64)
			}
			if end := tx.X + 1.2*0.55*size*float64(len([]rune(tx.Txt))); end > doc.Width {
				t.Errorf("%s: %q runs to x=%.0f, past the frame's %.0f", name, tx.Txt, end, doc.Width)
			}
		}
	}
	// Then duplicate charges and redeliveries, equal here, are drawn
	// apart: the redeliveries wide, the duplicates narrow on top of them
	doc := readSVG(t, filepath.Join(dir, "spike-duplicates.svg"))
	widths := map[string]bool{}
	for _, style := range doc.Paths {
		if m := strokeWidth.FindStringSubmatch(style); m != nil {
			widths[m[1]] = true
		}
	}
	if len(widths) < 3 { // the axes' width, and one for each line
		t.Errorf("duplicates.svg draws its lines in widths %v: equal lines would hide each other", widths)
	}
	// Then the queue's depth and the oldest event's age have axes of
	// their own
	doc = readSVG(t, filepath.Join(dir, "spike-queue.svg"))
	labels := []string{""}
	for _, tx := range doc.Texts {
		labels = append(labels, tx.Txt)
	}
	all := strings.Join(append(labels, ""), "|")
	if !strings.Contains(all, "|messages|") || !strings.Contains(all, "|seconds|") {
		t.Errorf("queue.svg: want a messages axis and a seconds axis, got texts %q", all)
	}
}
