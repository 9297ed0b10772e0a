package localaws

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/awsconf"
	"github.com/hookline/hookline/internal/stack"
)

// Options configures [Start].
type Options struct {
	// Template is the parsed infra/template.yaml; nil loads the repository's.
	Template *stack.Template
	// Prefix is prepended to every queue and table name. Tests set it when
	// they share an external endpoint, so runs do not collide.
	Prefix string
	// SQSPort and DynamoDBPort pin the embedded emulators' ports (0: free).
	SQSPort, DynamoDBPort int
	// Latency is added to every call the embedded emulators answer, to
	// model real DynamoDB and SQS round trips. Zero reads
	// HOOKLINE_LOCAL_AWS_LATENCY (a Go duration, e.g. "5ms").
	Latency time.Duration
	// HotItems is how many items the embedded DynamoDB keeps in its
	// engine before it moves the least recently written out to compact
	// storage, from which their next use brings them back (0:
	// DefaultHotItems; negative: it keeps every item in its engine).
	HotItems int
	// NoModel turns off the embedded DynamoDB's model of AWS's contention
	// and limits (docs/local-aws.md), for a baseline: transactions then
	// wait for each other instead of conflicting. False reads
	// HOOKLINE_LOCAL_AWS_MODEL ("off" turns it off).
	NoModel bool
	// ExpireItems makes the embedded DynamoDB delete an item within about
	// a second once its table's TTL attribute (epoch seconds) has passed
	// (expiry.go), so that a long run's memory stays flat. False keeps
	// expired items, as DynamoDB may for days: no code may rely on their
	// deletion. `hookline run` reads it from HOOKLINE_LOCAL_AWS_TTL
	// ([ExpiryFromEnv]); nothing else reads the variable.
	ExpireItems bool
	// Now is the clock ExpireItems reads (nil: time.Now), for tests.
	Now func() time.Time
	// Faults injects seeded faults into the embedded emulators' answers
	// (faults.go); the zero value injects none.
	Faults Faults
	// FaultsFromEnv reads Faults from HOOKLINE_LOCAL_AWS_FAULTS
	// ([FaultsEnv]) when Faults injects nothing. Only runs and tests that
	// ask for faults set it, so a value left in a shell changes no other
	// test.
	FaultsFromEnv bool
	Logger        *slog.Logger
}

// Env is a running local AWS with every template resource created.
type Env struct {
	Config         aws.Config
	DynamoDB       *dynamodb.Client
	SQS            *sqs.Client
	DynamoEndpoint string
	SQSEndpoint    string
	Template       *stack.Template
	// Calls counts every call made through DynamoDB and SQS above.
	Calls *Calls

	queueURLs map[string]string // by logical ID and by template name
	queueARNs map[string]string
	tables    map[string]string // by logical ID and by template name
	closers   []func() error
	// dynamoHandler serves the embedded DynamoDB in-process to DynamoDB
	// above; nil when an external endpoint is used.
	dynamoHandler http.Handler
	// front is the embedded DynamoDB, for its counters; nil when an
	// external endpoint is used.
	front *dynamoFront
	// faults injects and counts the seeded faults; nil when off.
	faults *faultLayer
	// grants checks the template functions' calls (iam.go).
	grants *grants
}

// Faults returns how many faults of each configured name were injected so
// far; it is empty when the fault layer is off.
func (e *Env) Faults() FaultCounts { return e.faults.snapshot() }

// FaultsOn reports whether the fault layer injects anything.
func (e *Env) FaultsOn() bool { return e.faults != nil }

// Start brings up local AWS (or attaches to AWS_ENDPOINT_URL*) and creates
// every queue and table in the template.
func Start(ctx context.Context, opts Options) (_ *Env, err error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Template == nil {
		if opts.Template, err = stack.LoadDefault(); err != nil {
			return nil, err
		}
	}
	env := &Env{Template: opts.Template, grants: &grants{}}
	defer func() {
		if err != nil {
			env.Close()
		}
	}()
	if opts.Latency == 0 {
		if opts.Latency, err = LatencyFromEnv(); err != nil {
			return nil, err
		}
	}
	if !opts.NoModel {
		if opts.NoModel, err = ModelFromEnv(); err != nil {
			return nil, err
		}
	}
	if !opts.Faults.On() && opts.FaultsFromEnv {
		if opts.Faults, err = FaultsFromEnv(); err != nil {
			return nil, err
		}
	}
	if opts.Faults.On() && External() {
		opts.Logger.Warn("local aws faults are off: an external AWS endpoint is set", "faults", opts.Faults.String())
		opts.Faults = Faults{}
	}
	env.faults = newFaultLayer(opts.Faults)
	if err = env.startEmulators(ctx, opts); err != nil {
		return nil, err
	}
	if err = env.connect(ctx); err != nil {
		return nil, err
	}
	if err = env.createResources(ctx, opts.Prefix); err != nil {
		return nil, err
	}
	if !External() {
		env.enforceGrants()
	}
	return env, nil
}

func (e *Env) startEmulators(ctx context.Context, opts Options) error {
	e.DynamoEndpoint = externalEndpoint("AWS_ENDPOINT_URL_DYNAMODB")
	if e.DynamoEndpoint == "" {
		url, h, front, closeFn, err := startDynamo(opts, e.faults, e.grants)
		if err != nil {
			return err
		}
		e.DynamoEndpoint, e.dynamoHandler, e.front = url, h, front
		e.closers = append(e.closers, closeFn)
	}
	e.SQSEndpoint = externalEndpoint("AWS_ENDPOINT_URL_SQS")
	if e.SQSEndpoint == "" {
		proc, err := startSQS(ctx, e.Template.Path, opts.SQSPort, opts.Logger)
		if err != nil {
			return err
		}
		e.SQSEndpoint = proc.URL
		e.closers = append(e.closers, proc.Close)
		url, closeFn, err := sqsFront(proc.URL, opts.Latency, e.grants)
		if err != nil {
			return err
		}
		e.SQSEndpoint = url
		e.closers = append(e.closers, closeFn)
		if e.faults.sqsOn() {
			url, closeFn, err := e.faults.sqsProxy(e.SQSEndpoint)
			if err != nil {
				return err
			}
			e.SQSEndpoint = url
			e.closers = append(e.closers, closeFn)
		}
	}
	opts.Logger.Debug("local aws endpoints", "dynamodb", e.DynamoEndpoint, "sqs", e.SQSEndpoint)
	return nil
}

// externalEndpoint returns the service endpoint named by the environment,
// if any.
func externalEndpoint(serviceVar string) string {
	if v := os.Getenv(serviceVar); v != "" {
		return v
	}
	return os.Getenv("AWS_ENDPOINT_URL")
}

// External reports whether any AWS endpoint variable is set, so that
// callers know they share resources with other runs.
func External() bool {
	return externalEndpoint("AWS_ENDPOINT_URL_SQS") != "" || externalEndpoint("AWS_ENDPOINT_URL_DYNAMODB") != ""
}

// startDynamo serves the embedded DynamoDB on a loopback port and returns
// its URL, its handler, which the harness's own client calls in-process,
// and the front inside it.
func startDynamo(opts Options, faults *faultLayer, g *grants) (string, http.Handler, *dynamoFront, func() error, error) {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", opts.DynamoDBPort))
	if err != nil {
		return "", nil, nil, nil, fmt.Errorf("localaws: dynamodb listen: %w", err)
	}
	front := newDynamoFront(opts.HotItems)
	front.model = !opts.NoModel
	front.grants = g
	stopExpiry := make(chan struct{})
	if front.expiry.on = opts.ExpireItems; front.expiry.on {
		if opts.Now != nil {
			front.expiry.now = opts.Now
		}
		go front.sweepExpired(stopExpiry)
	}
	h := faults.dynamo(withLatency(front, opts.Latency))
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	closeFn := func() error {
		close(stopExpiry)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return srv.Shutdown(ctx)
	}
	return "http://" + ln.Addr().String(), h, front, closeFn, nil
}

func (e *Env) connect(ctx context.Context) error {
	cfg, err := awsconf.Load(ctx)
	if err != nil {
		return err
	}
	if !External() {
		cfg.Credentials = awsconf.Static()
	}
	e.Calls = &Calls{}
	cfg.APIOptions = append(cfg.APIOptions, e.Calls.middleware)
	// One process plays many Lambda instances here, so keep enough idle
	// connections for all of them (the SDK's default keeps 10 per host).
	cfg.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 128
	})
	e.Config = cfg
	dynamoCfg := cfg
	if e.dynamoHandler != nil {
		// In-process, nothing checks a signature: anonymous credentials
		// make the SDK skip SigV4 signing (and hashing the payload), and
		// the rest of its stack runs as against AWS.
		dynamoCfg.HTTPClient = &http.Client{Transport: inProcess{e.dynamoHandler}}
		dynamoCfg.Credentials = aws.AnonymousCredentials{}
	}
	e.DynamoDB = awsconf.DynamoDB(dynamoCfg, e.DynamoEndpoint)
	e.SQS = awsconf.SQS(cfg, e.SQSEndpoint)
	return nil
}

// Close stops every emulator this Env started.
func (e *Env) Close() error {
	var errs []error
	for i := len(e.closers) - 1; i >= 0; i-- {
		errs = append(errs, e.closers[i]())
	}
	e.closers = nil
	return errors.Join(errs...)
}

// QueueURL returns the URL of a template queue, by logical ID or name. It
// returns "" for an unknown queue.
func (e *Env) QueueURL(name string) string { return e.queueURLs[name] }

// QueueARN returns the ARN of a template queue, by logical ID or name.
func (e *Env) QueueARN(name string) string { return e.queueARNs[name] }

// TableName returns the deployed name of a template table, by logical ID or
// template name.
func (e *Env) TableName(name string) string { return e.tables[name] }

// Resolve turns a resolved template value ("ref:PaymentsQueue",
// "getatt:PaymentsQueue.Arn", "ref:IntakeTable") into the local value: a
// queue URL, an ARN or a table name. Other strings are returned unchanged.
func (e *Env) Resolve(v string) string {
	id := stack.LogicalID(v)
	if id == v {
		return v
	}
	if strings.HasSuffix(v, ".Arn") {
		if arn, ok := e.queueARNs[id]; ok {
			return arn
		}
	}
	if strings.HasSuffix(v, ".QueueName") {
		if q, ok := e.Template.Queue(id); ok {
			return q.Name
		}
	}
	if u, ok := e.queueURLs[id]; ok {
		return u
	}
	if t, ok := e.tables[id]; ok {
		return t
	}
	return v
}

// FunctionEnv returns a template function's environment variables with
// every reference resolved against this Env, as Lambda would set them.
func (e *Env) FunctionEnv(logicalID string) (map[string]string, error) {
	fn, ok := e.Template.Function(logicalID)
	if !ok {
		return nil, fmt.Errorf("localaws: no function %s in template", logicalID)
	}
	out := make(map[string]string, len(fn.Environment))
	for k, v := range fn.Environment {
		out[k] = e.Resolve(v)
	}
	return out, nil
}

// Describe writes the endpoints and resources, for `make run`.
func (e *Env) Describe(w io.Writer) {
	fmt.Fprintf(w, "dynamodb  %s\nsqs       %s\n", e.DynamoEndpoint, e.SQSEndpoint)
	for _, q := range e.Template.Queues {
		fmt.Fprintf(w, "queue     %-14s %s\n", q.Name, e.queueURLs[q.LogicalID])
	}
	for _, t := range e.Template.Tables {
		fmt.Fprintf(w, "table     %-14s %s\n", t.LogicalID, e.tables[t.LogicalID])
	}
}
