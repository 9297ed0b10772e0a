package ops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/stack"
)

// QueueLookupAPI is the part of the SQS client a [Resolver] uses.
type QueueLookupAPI interface {
	GetQueueUrl(context.Context, *sqs.GetQueueUrlInput, ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// ResolverConfig configures [NewResolver].
type ResolverConfig struct {
	// Template is the parsed infra/template.yaml. Required.
	Template *stack.Template
	// SQS looks queue URLs and ARNs up. Required.
	SQS QueueLookupAPI
	// Lookup reads environment variables; nil means os.LookupEnv.
	Lookup func(string) (string, bool)
}

// Validate reports every problem with c at once.
func (c ResolverConfig) Validate() error {
	var errs []error
	if c.Template == nil {
		errs = append(errs, errors.New("ops: resolver needs the template"))
	}
	if c.SQS == nil {
		errs = append(errs, errors.New("ops: resolver needs an SQS client"))
	}
	return errors.Join(errs...)
}

// Resolver turns template names into deployed names, queue URLs and ARNs.
// It is safe for concurrent use.
type Resolver struct {
	cfg ResolverConfig
	// tableVars maps a table's logical ID to the variables the template's
	// functions read its name from.
	tableVars map[string][]string

	mu   sync.Mutex
	urls map[string]string
	arns map[string]string
}

// NewResolver validates cfg and builds a Resolver.
func NewResolver(cfg ResolverConfig) (*Resolver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Lookup == nil {
		cfg.Lookup = os.LookupEnv
	}
	r := &Resolver{cfg: cfg, tableVars: map[string][]string{}, urls: map[string]string{}, arns: map[string]string{}}
	for _, fn := range cfg.Template.Functions {
		for name, v := range fn.Environment {
			id := stack.LogicalID(v)
			if id == v {
				continue
			}
			if _, ok := cfg.Template.Table(id); ok && !contains(r.tableVars[id], name) {
				r.tableVars[id] = append(r.tableVars[id], name)
			}
		}
	}
	for id := range r.tableVars {
		sort.Strings(r.tableVars[id])
	}
	return r, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Template returns the template the resolver reads.
func (r *Resolver) Template() *stack.Template { return r.cfg.Template }

// TableVars returns the variables the template's functions read a table's
// name from (by logical ID), e.g. ["INTAKE_TABLE"] for IntakeTable.
func (r *Resolver) TableVars(logicalID string) []string { return r.tableVars[logicalID] }

// Table returns the deployed name of a template table, by logical ID or
// TableName: the first of its variables that is set, else its TableName.
func (r *Resolver) Table(name string) (string, error) {
	t, ok := r.cfg.Template.Table(name)
	if !ok {
		return "", fmt.Errorf("table %s: %w", name, ErrUnknownTable)
	}
	for _, v := range r.tableVars[t.LogicalID] {
		if got, ok := r.cfg.Lookup(v); ok && got != "" {
			return got, nil
		}
	}
	return t.Name, nil
}

// Lookup reads a variable as a function would see it: the environment
// first, then, for a table variable, the table name [Resolver.Table]
// resolves. It suits config.*FromEnv.
func (r *Resolver) Lookup(name string) (string, bool) {
	if v, ok := r.cfg.Lookup(name); ok && v != "" {
		return v, true
	}
	for id, vars := range r.tableVars {
		if contains(vars, name) {
			t, _ := r.cfg.Template.Table(id)
			return t.Name, true
		}
	}
	return "", false
}

// Queue finds a template queue by QueueName or logical ID.
func (r *Resolver) Queue(name string) (stack.Queue, error) {
	q, ok := r.cfg.Template.Queue(name)
	if !ok {
		return stack.Queue{}, fmt.Errorf("queue %q: %w", name, ErrUnknownQueue)
	}
	return q, nil
}

// DeadLetterQueue finds a dead-letter queue and the queue it serves, by
// the dead-letter queue's name or logical ID.
func (r *Resolver) DeadLetterQueue(name string) (dlq, source stack.Queue, err error) {
	for _, d := range r.cfg.Template.DeadLetterQueues() {
		if d.Name == name || d.LogicalID == name {
			src, _ := r.cfg.Template.Queue(d.SourceQueue)
			return d, src, nil
		}
	}
	return stack.Queue{}, stack.Queue{}, fmt.Errorf("%q: %w", name, ErrNotDeadLetterQueue)
}

// QueueURL returns a template queue's URL: QUEUE_URL_<NAME> when set, else
// GetQueueUrl on its QueueName. Answers are cached.
func (r *Resolver) QueueURL(ctx context.Context, name string) (string, error) {
	q, err := r.Queue(name)
	if err != nil {
		return "", err
	}
	if v, ok := r.cfg.Lookup(config.QueueURLVar(q.Name)); ok && v != "" {
		return v, nil
	}
	r.mu.Lock()
	url, ok := r.urls[q.LogicalID]
	r.mu.Unlock()
	if ok {
		return url, nil
	}
	out, err := r.cfg.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q.Name)})
	if err != nil {
		return "", fmt.Errorf("ops: url of queue %s (set %s to override): %w", q.Name, config.QueueURLVar(q.Name), err)
	}
	url = aws.ToString(out.QueueUrl)
	r.mu.Lock()
	r.urls[q.LogicalID] = url
	r.mu.Unlock()
	return url, nil
}

// QueueARN returns a template queue's ARN, read from its attributes.
func (r *Resolver) QueueARN(ctx context.Context, name string) (string, error) {
	q, err := r.Queue(name)
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	arn, ok := r.arns[q.LogicalID]
	r.mu.Unlock()
	if ok {
		return arn, nil
	}
	url, err := r.QueueURL(ctx, name)
	if err != nil {
		return "", err
	}
	out, err := r.cfg.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", fmt.Errorf("ops: arn of queue %s: %w", q.Name, err)
	}
	arn = out.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	if arn == "" {
		return "", fmt.Errorf("ops: queue %s reports no ARN", q.Name)
	}
	r.mu.Lock()
	r.arns[q.LogicalID] = arn
	r.mu.Unlock()
	return arn, nil
}

// ConsumerVar returns a variable of the function that consumes a queue (by
// the template's event source mappings): the environment's value when it
// sets one, else the template's, with a table reference resolved to the
// table's deployed name. It reports false when the consumer has no such
// variable.
func (r *Resolver) ConsumerVar(queue, name string) (string, bool) {
	q, err := r.Queue(queue)
	if err != nil {
		return "", false
	}
	for _, es := range r.cfg.Template.EventSources {
		if es.Queue != q.LogicalID {
			continue
		}
		fn, ok := r.cfg.Template.Function(es.Function)
		if !ok {
			continue
		}
		v, ok := fn.Environment[name]
		if !ok {
			continue
		}
		if got, ok := r.cfg.Lookup(name); ok && got != "" {
			return got, true
		}
		if id := stack.LogicalID(v); id != v {
			if _, isTable := r.cfg.Template.Table(id); isTable {
				got, err := r.Table(id)
				return got, err == nil
			}
			if d, ok := r.cfg.Template.ParameterDefault(v); ok {
				return d, true // a parameter this environment does not set
			}
		}
		return v, true
	}
	return "", false
}
