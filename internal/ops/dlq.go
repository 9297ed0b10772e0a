package ops

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// DLQInfo is one dead-letter queue's state.
type DLQInfo struct {
	Name string `json:"name"`
	URL  string `json:"url,omitempty"`
	// Source is the queue that dead-letters into this one.
	Source string `json:"source"`
	// Visible and InFlight are SQS's approximate counts; Depth is their sum.
	Visible  int64 `json:"visible"`
	InFlight int64 `json:"in_flight"`
	Depth    int64 `json:"depth"`
	// OldestAge is the age of the oldest of the messages sampled (at most
	// 10, by SentTimestamp); AgeKnown is false when nothing could be
	// sampled. SQS publishes the exact figure only to CloudWatch.
	OldestAge time.Duration `json:"oldest_age_ns"`
	AgeKnown  bool          `json:"age_known"`
	// Error is set when the queue could not be read.
	Error string `json:"error,omitempty"`
}

// ListDLQs reports every dead-letter queue of the template. A queue that
// cannot be read is reported with Error set; the call itself fails only
// when ctx does.
func (o *Ops) ListDLQs(ctx context.Context) ([]DLQInfo, error) {
	var out []DLQInfo
	for _, d := range o.cfg.Resolver.Template().DeadLetterQueues() {
		src, _ := o.cfg.Resolver.Queue(d.SourceQueue)
		info := DLQInfo{Name: d.Name, Source: src.Name}
		if err := o.describe(ctx, &info); err != nil {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			info.Error = err.Error()
		}
		out = append(out, info)
	}
	return out, nil
}

func (o *Ops) describe(ctx context.Context, info *DLQInfo) error {
	url, err := o.cfg.Resolver.QueueURL(ctx, info.Name)
	if err != nil {
		return err
	}
	info.URL = url
	if err := o.depth(ctx, url, info); err != nil {
		return err
	}
	if info.Visible == 0 {
		return nil
	}
	msgs, err := o.receive(ctx, url, 10, o.cfg.PeekVisibility)
	if err != nil {
		return err
	}
	o.release(ctx, url, msgs)
	now := o.cfg.Now()
	for _, m := range msgs {
		if m.SentAt.IsZero() {
			continue
		}
		if age := now.Sub(m.SentAt); !info.AgeKnown || age > info.OldestAge {
			info.OldestAge, info.AgeKnown = age, true
		}
	}
	return nil
}

func (o *Ops) depth(ctx context.Context, url string, info *DLQInfo) error {
	out, err := o.cfg.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		return fmt.Errorf("ops: attributes of %s: %w", info.Name, err)
	}
	info.Visible, _ = strconv.ParseInt(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)], 10, 64)
	info.InFlight, _ = strconv.ParseInt(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)], 10, 64)
	info.Depth = info.Visible + info.InFlight
	return nil
}

// Peek returns up to limit (default 10) messages of a dead-letter queue
// without consuming them, each with the status of its effect. Messages are
// hidden while Peek collects them, so none is returned twice, and made
// visible again before it returns, even when ctx is cancelled.
func (o *Ops) Peek(ctx context.Context, queue string, limit int) ([]Message, error) {
	dlq, src, err := o.cfg.Resolver.DeadLetterQueue(queue)
	if err != nil {
		return nil, err
	}
	url, err := o.cfg.Resolver.QueueURL(ctx, dlq.Name)
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 10
	}
	var held []Message
	defer func() { o.release(ctx, url, held) }()
	seen := map[string]bool{}
	var out []Message
	for len(out) < limit {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		msgs, err := o.receive(ctx, url, limit-len(out), o.cfg.PeekVisibility)
		if err != nil {
			return out, err
		}
		held = append(held, msgs...)
		fresh := 0
		for _, m := range msgs {
			if seen[m.MessageID] || len(out) >= limit {
				continue
			}
			seen[m.MessageID] = true
			fresh++
			m.Status = o.check(ctx, src.Name, m)
			out = append(out, m)
		}
		if fresh == 0 {
			break
		}
	}
	return out, nil
}
