package ops

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Move task statuses, as SQS reports them.
const (
	MoveRunning   = "RUNNING"
	MoveCompleted = "COMPLETED"
	MoveFailed    = "FAILED"
	MoveCancelled = "CANCELLED"
)

// MoveTask is one SQS message move task (the native redrive).
type MoveTask struct {
	// Handle identifies a running task; SQS drops it once the task ends.
	Handle        string    `json:"handle,omitempty"`
	Status        string    `json:"status"`
	Moved         int64     `json:"moved"`
	ToMove        int64     `json:"to_move"`
	Source        string    `json:"source_arn"`
	Destination   string    `json:"destination_arn,omitempty"`
	Rate          int32     `json:"max_per_second,omitempty"`
	StartedAt     time.Time `json:"started_at"`
	FailureReason string    `json:"failure_reason,omitempty"`
}

// Running reports whether the task has not ended yet.
func (t MoveTask) Running() bool { return t.Status == MoveRunning || t.Status == "CANCELLING" }

// MaxMoveRate is the highest rate, in messages a second, that an SQS move
// task takes (StartMessageMoveTask, MaxNumberOfMessagesPerSecond).
const MaxMoveRate = 500

// StartMove starts an SQS message move task from a dead-letter queue to its
// source queue (named explicitly, since messages the workers dead-letter
// themselves carry no SQS source), at most rate messages per second (0: the
// SQS default, no fixed rate; at most [MaxMoveRate]). It is a plain bulk
// move: no per-message checks.
func (o *Ops) StartMove(ctx context.Context, queue string, rate int) (MoveTask, error) {
	dlq, src, err := o.cfg.Resolver.DeadLetterQueue(queue)
	if err != nil {
		return MoveTask{}, err
	}
	if rate < 0 || rate > MaxMoveRate {
		return MoveTask{}, fmt.Errorf("%w: a move task's rate is 0 (no fixed rate) or 1 to %d messages a second", ErrInvalidOptions, MaxMoveRate)
	}
	dlqARN, err := o.cfg.Resolver.QueueARN(ctx, dlq.Name)
	if err != nil {
		return MoveTask{}, err
	}
	srcARN, err := o.cfg.Resolver.QueueARN(ctx, src.Name)
	if err != nil {
		return MoveTask{}, err
	}
	in := &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqARN), DestinationArn: aws.String(srcARN)}
	if rate > 0 {
		in.MaxNumberOfMessagesPerSecond = aws.Int32(int32(rate))
	}
	out, err := o.cfg.SQS.StartMessageMoveTask(ctx, in)
	if err != nil {
		return MoveTask{}, fmt.Errorf("ops: start move task %s -> %s: %w", dlq.Name, src.Name, err)
	}
	task := MoveTask{Handle: aws.ToString(out.TaskHandle), Status: MoveRunning, Source: dlqARN, Destination: srcARN, StartedAt: o.cfg.Now()}
	if tasks, err := o.MoveTasks(ctx, dlq.Name); err == nil {
		if t, ok := findTask(tasks, task.Handle); ok {
			task = t
		}
	}
	return task, nil
}

// MoveTasks lists the most recent move tasks (at most 10) of a dead-letter
// queue, newest first.
func (o *Ops) MoveTasks(ctx context.Context, queue string) ([]MoveTask, error) {
	dlq, _, err := o.cfg.Resolver.DeadLetterQueue(queue)
	if err != nil {
		return nil, err
	}
	arn, err := o.cfg.Resolver.QueueARN(ctx, dlq.Name)
	if err != nil {
		return nil, err
	}
	out, err := o.cfg.SQS.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(arn), MaxResults: aws.Int32(10)})
	if err != nil {
		return nil, fmt.Errorf("ops: list move tasks of %s: %w", dlq.Name, err)
	}
	tasks := make([]MoveTask, 0, len(out.Results))
	for _, r := range out.Results {
		tasks = append(tasks, MoveTask{
			Handle: aws.ToString(r.TaskHandle), Status: aws.ToString(r.Status),
			Moved: r.ApproximateNumberOfMessagesMoved, ToMove: aws.ToInt64(r.ApproximateNumberOfMessagesToMove),
			Source: aws.ToString(r.SourceArn), Destination: aws.ToString(r.DestinationArn),
			Rate: aws.ToInt32(r.MaxNumberOfMessagesPerSecond), StartedAt: time.UnixMilli(r.StartedTimestamp).UTC(),
			FailureReason: aws.ToString(r.FailureReason),
		})
	}
	return tasks, nil
}

// findTask finds a task by handle; without a handle match (SQS drops the
// handle of an ended task) it takes the newest.
func findTask(tasks []MoveTask, handle string) (MoveTask, bool) {
	for _, t := range tasks {
		if handle != "" && t.Handle == handle {
			return t, true
		}
	}
	if len(tasks) == 0 {
		return MoveTask{}, false
	}
	newest := tasks[0]
	for _, t := range tasks[1:] {
		if t.StartedAt.After(newest.StartedAt) {
			newest = t
		}
	}
	return newest, true
}

// WaitMove polls a dead-letter queue's move task (by handle, else the
// newest) every poll interval until it ends, calling progress with each
// state, and returns its last state. ctx ends the wait, not the task.
func (o *Ops) WaitMove(ctx context.Context, queue, handle string, poll time.Duration, progress func(MoveTask)) (MoveTask, error) {
	if poll <= 0 {
		poll = time.Second
	}
	for {
		tasks, err := o.MoveTasks(ctx, queue)
		if err != nil {
			return MoveTask{}, err
		}
		t, ok := findTask(tasks, handle)
		if !ok {
			return MoveTask{}, fmt.Errorf("ops: no move task on %s", queue)
		}
		if progress != nil {
			progress(t)
		}
		if !t.Running() {
			return t, nil
		}
		select {
		case <-ctx.Done():
			return t, ctx.Err()
		case <-time.After(poll):
		}
	}
}
