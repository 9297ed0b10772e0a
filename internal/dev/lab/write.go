package lab

import (
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// rates lists burst rates ("712, 698, 731, 705").
func rates(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.0f", x)
	}
	return strings.Join(parts, ", ")
}

// warmupText says how the run started.
func warmupText(warmup string) string {
	if warmup == "" || warmup == "0s" {
		return "from a cold start"
	}
	return "after " + warmup + " of warm-up at that rate, not counted"
}

// Summary writes a run's totals and findings as text.
func Summary(w io.Writer, r *Report) {
	fmt.Fprintf(w, "== %s: %g webhooks/s for %s (%s), %.1f%% acks lost, idempotency %v, spike %s, provider %s, AWS latency %s, GOGC %d\n",
		r.Name, r.Rate, r.Duration, warmupText(r.Warmup), 100*r.LostAcks, onOff(r.Idempotency), r.Spike, r.Profile, r.AWSLatency, r.GCPercent)
	fmt.Fprintf(w, "offered %d, accepted %d, charged %d, declined %d, dead-lettered %d, lost %d; success %.2f%%\n",
		r.Offered, r.Accepted, r.Charged, r.Declined, r.DeadLettered, r.Lost, 100*r.Success)
	if r.Offered > r.Accepted {
		fmt.Fprintf(w, "not accepted: %s\n", refusals(r.NotAccepted))
	}
	fmt.Fprintf(w, "duplicate charges %d (%.0f a day at this rate); redeliveries %d\n", r.Duplicates, r.DuplicatesPerDay, r.Redeliveries)
	fmt.Fprintf(w, "webhook -> charge p50 %.0f ms, p99 %.0f ms; max queue depth %d, oldest unsettled %.1f s; drained in %s\n",
		r.P50, r.P99, r.MaxQueueDepth, r.MaxOldestAge, r.DrainedIn)
	if len(r.Stages) > 0 {
		fmt.Fprintf(w, "where the time went: %s\n", stagesLine(r.Stages))
	}
	if rt := r.Runtime; rt.GCCycles > 0 {
		fmt.Fprintf(w, "Go runtime: GC %.0f%% of the process's CPU in %d cycles; live heap %.0f MB at the end\n", 100*rt.GCShare, rt.GCCycles, rt.LiveHeapMB)
	}
	if r.SpikeDrainedIn != "" {
		fmt.Fprintf(w, "after the spike the backlog drained in %s\n", r.SpikeDrainedIn)
	}
	fmt.Fprintf(w, "webhook body: %s, %d bytes\n", r.Payload, r.PayloadBytes)
	fmt.Fprintf(w, "AWS calls per event: %s\n", calls(r.CallsPerEvent))
	fmt.Fprintf(w, "DynamoDB capacity units per event: %s\n", r.Units)
	for _, c := range r.UnitsByCall {
		fmt.Fprintf(w, "  units of one event's call: %s\n", c)
	}
	fmt.Fprintf(w, "per event: %.2f write units, %.2f read units, %.2f AWS calls; cost per million events: $%.2f (API Gateway %.2f, Lambda %.2f, SQS %.2f, DynamoDB %.2f; %s)\n",
		r.Units.Write, r.Units.Read, r.AWSCalls, r.CostPerMillion.Total, r.CostPerMillion.APIGateway, r.CostPerMillion.Lambda, r.CostPerMillion.SQS, r.CostPerMillion.DynamoDB, r.CostPerMillion.Prices)
	fmt.Fprintf(w, "ceilings, same run: full path %.0f events/s, bare pipeline %.0f events/s: full ÷ bare = %.2f× (means of %d bursts each: full %s; bare %s)\n",
		r.FullCeiling, r.BareCeiling, r.Ratio, len(r.FullCeilings), rates(r.FullCeilings), rates(r.BareCeilings))
	if c := r.BareCPU; c != nil {
		fmt.Fprintf(w, "the bare pipeline's bursts: %s\n", c)
	}
	if c := r.FullCPU; c != nil {
		fmt.Fprintf(w, "the full path's bursts: %s\n", c)
		fmt.Fprintf(w, "like with like: without the provider's side (the sender and the provider simulator, %.0f%% of the machine's CPU, which the bare pipeline does not run) the full path would reach %.0f events/s: %.2f× the bare pipeline (the goal is judged on the measured ratio)\n",
			100*c.Harness(), r.FullWithoutHarness, r.RatioWithoutHarness)
	}
	if r.BareReplays != "" {
		fmt.Fprintf(w, "the bare pipeline replays the AWS calls of one probe event: %s\n", r.BareReplays)
	}
	if len(r.Findings) == 0 {
		fmt.Fprintln(w, "what broke: nothing; every goal held")
	}
	for _, f := range r.Findings {
		fmt.Fprintf(w, "what broke: %s\n", f)
	}
	if r.Plan != nil {
		WritePlan(w, r.Plan)
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func calls(m map[string]float64) string {
	var keys []string
	total := 0.0
	for k, v := range m {
		keys = append(keys, k)
		total += v
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, m[k]))
	}
	return fmt.Sprintf("%.2f (%s)", total, strings.Join(parts, ", "))
}

// Compare writes two runs side by side.
func Compare(w io.Writer, a, b *Report) {
	fmt.Fprintf(w, "| | %s | %s |\n|---|---|---|\n", a.Name, b.Name)
	row := func(name, x, y string) { fmt.Fprintf(w, "| %s | %s | %s |\n", name, x, y) }
	row("idempotency", onOff(a.Idempotency), onOff(b.Idempotency))
	row("offered", fmt.Sprint(a.Offered), fmt.Sprint(b.Offered))
	row("duplicate charges", fmt.Sprint(a.Duplicates), fmt.Sprint(b.Duplicates))
	row("duplicates a day", fmt.Sprintf("%.0f", a.DuplicatesPerDay), fmt.Sprintf("%.0f", b.DuplicatesPerDay))
	row("success", fmt.Sprintf("%.2f%%", 100*a.Success), fmt.Sprintf("%.2f%%", 100*b.Success))
	row("lost", fmt.Sprint(a.Lost), fmt.Sprint(b.Lost))
	row("p99 webhook → charge", fmt.Sprintf("%.0f ms", a.P99), fmt.Sprintf("%.0f ms", b.P99))
	row("cost per million events", fmt.Sprintf("$%.2f", a.CostPerMillion.Total), fmt.Sprintf("$%.2f", b.CostPerMillion.Total))
	row("full ÷ bare (same run)", fmt.Sprintf("%.2f×", a.Ratio), fmt.Sprintf("%.2f×", b.Ratio))
	if a.RatioWithoutHarness > 0 && b.RatioWithoutHarness > 0 {
		row("full ÷ bare without the provider's side", fmt.Sprintf("%.2f×", a.RatioWithoutHarness), fmt.Sprintf("%.2f×", b.RatioWithoutHarness))
	}
}

// WriteReport writes dir/report.md, dir/report.json and the plots of each
// run (dir/<name>-*.svg). With two runs or more, report.md compares the
// first two.
func WriteReport(dir string, runs ...*Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	data, err := json.MarshalIndent(runs, "", "  ")
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), data, 0o644); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	var md strings.Builder
	md.WriteString("# Lab report\n\nWritten by `make lab` (`hookline lab`); every figure below was measured in the run it describes.\n\n")
	if len(runs) >= 2 {
		md.WriteString("## Before and after\n\n")
		Compare(&md, runs[0], runs[1])
		md.WriteString("\n")
	}
	for _, r := range runs {
		fmt.Fprintf(&md, "## %s\n\n```text\n", r.Name)
		Summary(&md, r)
		md.WriteString("```\n\n")
		for _, p := range plots {
			name := r.Name + "-" + p.file
			if err := p.draw(r, filepath.Join(dir, name)); err != nil {
				return err
			}
			fmt.Fprintf(&md, "![%s](%s)\n", p.title, name)
		}
		md.WriteString("\n")
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(md.String()), 0o644)
}

// plotSpec is one figure of a run's seconds: a title over one panel, or
// several stacked on a shared time axis, each with a y-axis of its own.
type plotSpec struct {
	file, title string
	panels      []panel
}

// panel is one plot area, its y-axis and its lines.
type panel struct {
	y     string
	lines []line
}

// line is one series with a look of its own: a wide pale line under a
// narrow dark one stays visible where the two are equal.
type line struct {
	name  string
	val   func(Second) float64
	color color.RGBA
	width vg.Length
	dash  bool
}

var (
	grey   = color.RGBA{R: 0x9a, G: 0xa5, B: 0xb1, A: 0xff}
	blue   = color.RGBA{R: 0x23, G: 0x57, B: 0xa6, A: 0xff}
	pale   = color.RGBA{R: 0xa8, G: 0xcc, B: 0xee, A: 0xff}
	green  = color.RGBA{R: 0x1e, G: 0x8a, B: 0x4c, A: 0xff}
	red    = color.RGBA{R: 0xb3, G: 0x26, B: 0x1e, A: 0xff}
	purple = color.RGBA{R: 0x6b, G: 0x3f, B: 0xa0, A: 0xff}
	orange = color.RGBA{R: 0xc2, G: 0x6a, B: 0x00, A: 0xff}
)

var plots = []plotSpec{
	{"rate.svg", "offered, accepted and charged", []panel{{"events/s", []line{
		{"offered", func(s Second) float64 { return float64(s.Offered) }, grey, 5, false},
		{"accepted", func(s Second) float64 { return float64(s.Accepted) }, blue, 1.5, true},
		{"charged", func(s Second) float64 { return float64(s.Charged) }, green, 1, false},
	}}}},
	{"latency.svg", "webhook → charge", []panel{{"ms", []line{
		{"p50", func(s Second) float64 { return s.P50 }, blue, 1.5, false},
		{"p99", func(s Second) float64 { return s.P99 }, red, 1.5, true},
	}}}},
	{"duplicates.svg", "duplicate charges and redeliveries", []panel{{"per second", []line{
		{"redeliveries", func(s Second) float64 { return float64(s.Redeliveries) }, pale, 7, false},
		{"duplicate charges", func(s Second) float64 { return float64(s.Duplicates) }, red, 1.5, false},
	}}}},
	{"queue.svg", "queue", []panel{
		{"messages", []line{{"depth", func(s Second) float64 { return float64(s.QueueDepth) }, purple, 1.5, false}}},
		{"seconds", []line{{"oldest unsettled", func(s Second) float64 { return s.OldestAge }, orange, 1.5, false}}},
	}},
}

// Figure layout: the title on a strip of its own, and the legends in a
// column right of the plot areas, text after its sample, so that a
// wider font than the one laid out runs into empty space, not off the
// frame.
const (
	figureWidth  = 8 * vg.Inch
	panelHeight  = 2.6 * vg.Inch
	titleHeight  = 0.35 * vg.Inch
	legendWidth  = 2.1 * vg.Inch
	figureMargin = 0.1 * vg.Inch
)

func (p plotSpec) draw(r *Report, path string) error {
	height := titleHeight + vg.Length(len(p.panels))*panelHeight
	c := vgsvg.New(figureWidth, height)
	dc := draw.New(c)
	title := plot.New().Title.TextStyle
	title.XAlign, title.YAlign = draw.XCenter, draw.YTop
	dc.FillText(title, vg.Point{X: figureWidth / 2, Y: height - figureMargin}, fmt.Sprintf("%s: %s", r.Name, p.title))
	body := draw.Crop(dc, 0, -legendWidth, 0, -titleHeight)
	pls := make([][]*plot.Plot, len(p.panels))
	legends := make([]plot.Legend, len(p.panels))
	for i, pn := range p.panels {
		pl, lg, err := pn.plot(r)
		if err != nil {
			return err
		}
		if i == len(p.panels)-1 {
			pl.X.Label.Text = "second"
		}
		pls[i], legends[i] = []*plot.Plot{pl}, lg
	}
	tiles := draw.Tiles{Rows: len(p.panels), Cols: 1, PadX: figureMargin, PadY: figureMargin, PadLeft: figureMargin, PadBottom: figureMargin}
	areas := plot.Align(pls, tiles, body)
	for i := range pls {
		pls[i][0].Draw(areas[i][0])
		side := areas[i][0]
		side.Min.X, side.Max.X = side.Max.X+figureMargin, figureWidth-figureMargin
		legends[i].Draw(draw.Crop(side, 0, 0, 0, -figureMargin))
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("lab: plot %s: %w", path, err)
	}
	defer f.Close()
	if _, err := c.WriteTo(f); err != nil {
		return fmt.Errorf("lab: plot %s: %w", path, err)
	}
	return nil
}

// plot is one panel's plot and its legend, its lines drawn in order: a
// later one on top.
func (pn panel) plot(r *Report) (*plot.Plot, plot.Legend, error) {
	pl := plot.New()
	pl.Y.Label.Text = pn.y
	pl.Y.Min = 0
	pl.Y.Tick.Marker = plainTicks{}
	lg := plot.NewLegend()
	lg.Left, lg.Top = true, true
	lg.TextStyle.Font.Size = vg.Points(10)
	lg.Padding = vg.Points(5)
	for _, l := range pn.lines {
		pts := make(plotter.XYs, len(r.Seconds))
		for j, s := range r.Seconds {
			pts[j].X, pts[j].Y = float64(s.T), max(l.val(s), 0)
		}
		ln, err := plotter.NewLine(pts)
		if err != nil {
			return nil, lg, fmt.Errorf("lab: plot: %w", err)
		}
		ln.Color, ln.Width = l.color, l.width
		if l.dash {
			ln.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		pl.Add(ln)
		lg.Add(l.name, ln)
	}
	return pl, lg, nil
}

// plainTicks are gonum's default ticks labelled without trailing zeros
// ("500", not "500.00").
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i, t := range ticks {
		if t.Label != "" {
			ticks[i].Label = strconv.FormatFloat(t.Value, 'f', -1, 64)
		}
	}
	return ticks
}
