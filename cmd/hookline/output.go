package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookline/hookline/internal/app"
	"github.com/hookline/hookline/internal/app/spendledger"
	"github.com/hookline/hookline/internal/awsconf"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/ops"
	"github.com/hookline/hookline/internal/reconcile"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/stack"
)

// stderr receives errors and progress; tests may replace it.
var stderr io.Writer = os.Stderr

// fail prints err and maps it to an exit code: a bad name or option is a
// usage error, anything else a failure.
func fail(cmd string, err error) int {
	fmt.Fprintf(stderr, "hookline %s: %v\n", cmd, err)
	switch {
	case errors.Is(err, ops.ErrUnknownQueue), errors.Is(err, ops.ErrNotDeadLetterQueue),
		errors.Is(err, ops.ErrInvalidOptions), errors.Is(err, spend.ErrInvalidWorkload),
		errors.Is(err, spend.ErrOverCap):
		return exitUsage
	}
	return exitFailure
}

func writeJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// jsonResult prints v as JSON and returns the command's result.
func jsonResult(out io.Writer, v any) error {
	if err := writeJSON(out, v); err != nil {
		fmt.Fprintf(stderr, "hookline: write JSON: %v\n", err)
		return exit(exitFailure)
	}
	return nil
}

func newTable(out io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return d.Round(time.Minute).String()
	default:
		return fmt.Sprintf("%dd%s", int(d.Hours())/24, (d % (24 * time.Hour)).Round(time.Hour))
	}
}

// stderrIsTTY reports whether stderr is a terminal, where progress lines
// belong; piped or redirected, commands stay quiet.
func stderrIsTTY() bool {
	f, ok := stderr.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progressLine redraws one status line on a terminal, at most every
// 200ms.
type progressLine struct {
	w     io.Writer
	label string
	last  time.Time
	drawn bool
}

// newProgress returns a progress line on stderr, or nil when stderr is not
// a terminal.
func newProgress(label string) *progressLine {
	if !stderrIsTTY() {
		return nil
	}
	return &progressLine{w: stderr, label: label}
}

func (p *progressLine) update(pr ops.Progress) {
	if p == nil || (time.Since(p.last) < 200*time.Millisecond && pr.Done != pr.Total) {
		return
	}
	p.last = time.Now()
	p.drawn = true
	fmt.Fprintf(p.w, "\r\033[K%s", formatProgress(p.label, pr))
}

// callback returns update as a func, or nil for a nil line.
func (p *progressLine) callback() func(ops.Progress) {
	if p == nil {
		return nil
	}
	return p.update
}

func (p *progressLine) text(s string) {
	if p == nil {
		return
	}
	p.drawn = true
	fmt.Fprintf(p.w, "\r\033[K%s", s)
}

// done ends the line so the report starts on its own.
func (p *progressLine) done() {
	if p != nil && p.drawn {
		fmt.Fprintln(p.w)
	}
}

func formatProgress(label string, pr ops.Progress) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d", label, pr.Done)
	if pr.Total > 0 {
		fmt.Fprintf(&b, "/%d", pr.Total)
	}
	fmt.Fprintf(&b, "  %.1f/s", pr.Rate)
	if pr.ETA > 0 {
		fmt.Fprintf(&b, "  ETA %s", pr.ETA.Round(time.Second))
	}
	return b.String()
}

// opsConn is what the ops commands talk to: the AWS that the standard
// chain and AWS_ENDPOINT_URL* point at, with names from the template.
type opsConn struct {
	ops      *ops.Ops
	resolver *ops.Resolver
	ledger   *spend.Spend
	recon    *reconcile.Store
	intake   *intake.Store
	envFile  string
	// now is the clock the operator commands read ([opsClock]).
	now func() time.Time
}

// explainSources are what explain reads; usageSource names the source
// whose intake records event explain reads.
func (c *opsConn) explainSources(usageSource string) ops.ExplainSources {
	return ops.ExplainSources{Spend: c.ledger.Explainer, Intervals: c.recon, Intake: c.intake, UsageSource: usageSource}
}

// connect loads the endpoints file of `hookline run` (unless the variables
// are already set), builds the clients and resolves the template's names.
func connect(ctx context.Context, verbose bool) (*opsConn, error) {
	envFile, err := ops.LoadEnvFile(os.LookupEnv, os.Setenv)
	if err != nil {
		return nil, err
	}
	if err := localRunRule(envFile, os.LookupEnv); err != nil {
		return nil, err
	}
	log := logger(verbose)
	if envFile != "" {
		log.Debug("endpoints loaded", "file", envFile)
	}
	cfg, err := awsconf.Load(ctx)
	if err != nil {
		return nil, err
	}
	db, sqsClient := awsconf.DynamoDB(cfg, ""), awsconf.SQS(cfg, "")
	tmpl, err := stack.Embedded()
	if err != nil {
		return nil, err
	}
	r, err := ops.NewResolver(ops.ResolverConfig{Template: tmpl, SQS: sqsClient})
	if err != nil {
		return nil, err
	}
	// The CLI never sends pages, so the reconciliation routing key, which
	// the ledger requires for the pages it enqueues, may stay unset here.
	lookup := func(name string) (string, bool) {
		v, ok := r.Lookup(name)
		if !ok && name == "RECON_ROUTING_KEY" {
			return "unset-in-cli", true
		}
		return v, ok
	}
	spendCfg, err := config.SpendFromEnv(lookup)
	if err != nil {
		return nil, err
	}
	now := opsClock(ctx)
	ledger, err := spendledger.New(app.Deps{Clients: app.Clients{DynamoDB: db, SQS: sqsClient}, Lookup: lookup, Logger: log, Now: now}, spendCfg)
	if err != nil {
		return nil, err
	}
	checkers, err := ops.NewCheckers(r, ops.CheckerDeps{DynamoDB: db, Ledger: ledger.Spend.Ledger})
	if err != nil {
		return nil, err
	}
	intakeTable, err := r.Table("IntakeTable")
	if err != nil {
		return nil, err
	}
	store, err := intake.New(intake.Config{DynamoDB: db, SQS: sqsClient, Table: intakeTable, Logger: log})
	if err != nil {
		return nil, err
	}
	o, err := ops.New(ops.Config{SQS: sqsClient, Resolver: r, Checkers: checkers, Intake: store, Logger: log})
	if err != nil {
		return nil, err
	}
	recon, err := reconcile.NewStore(reconcile.StoreConfig{DB: db, Table: spendCfg.LedgerTable})
	if err != nil {
		return nil, err
	}
	return &opsConn{ops: o, resolver: r, ledger: ledger.Spend, recon: recon, intake: store, envFile: envFile, now: now}, nil
}

// connectCmd connects for cmd, printing a failure.
func connectCmd(cmd *cobra.Command) (*opsConn, error) {
	s, err := connect(cmd.Context(), verbose)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), err)
		return nil, exit(exitFailure)
	}
	return s, nil
}

// hint explains where the command looked, after an AWS error.
func (s *opsConn) hint(cmd string) {
	where := "the AWS account of the standard credential chain"
	if v := os.Getenv("AWS_ENDPOINT_URL_SQS"); v != "" {
		where = "SQS at " + v
	}
	if s.envFile != "" {
		where += " (from " + s.envFile + "; is `hookline run` still running?)"
	}
	fmt.Fprintf(stderr, "hookline %s: talking to %s\n", cmd, where)
}

// errNoLocalRun is what the developer build says when no local run is up
// and no AWS is chosen: it would otherwise go to whatever account the
// credential chain finds, down to the instance metadata service.
var errNoLocalRun = errors.New("no local run found: start one with `make run` (or `hookline run`), " +
	"or set AWS_PROFILE/AWS_ENDPOINT_URL to use AWS")

// awsChoices are the variables that choose an AWS endpoint or account on
// purpose: an endpoint, a profile, keys, a web identity or a container's
// credentials. AWS_REGION alone, or a default profile in ~/.aws, does not.
var awsChoices = []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_DYNAMODB",
	"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_WEB_IDENTITY_TOKEN_FILE",
	"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"}

// localRunRule is the developer build's rule of where commands go: to the
// local run whose endpoints file was read (envFile), or to an AWS chosen
// in the environment (awsChoices); else nowhere, with [errNoLocalRun].
// The on-call build, made for AWS, keeps the standard chain's choice.
func localRunRule(envFile string, lookup func(string) (string, bool)) error {
	if !devBuild || envFile != "" {
		return nil
	}
	for _, k := range awsChoices {
		if v, ok := lookup(k); ok && v != "" {
			return nil
		}
	}
	return errNoLocalRun
}
