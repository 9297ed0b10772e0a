package worker

import (
	"github.com/hookline/hookline/internal/app"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/pkg/queue"
)

// Queue is the worker's queue and its dead-letter queue, w.QueueURL and
// w.DeadLetterQueueURL.
func Queue(d app.Deps, w config.Worker) (*queue.Queue, error) {
	api, err := app.SQS[queue.SQSAPI](d.Clients)
	if err != nil {
		return nil, err
	}
	return queue.New(queue.Config{SQS: api, URL: w.QueueURL, DeadLetterURL: w.DeadLetterQueueURL, Logger: d.Log()})
}

// ReadingPayloads puts a queue worker's handler behind the reader of the
// payloads that messages carry by reference to their intake record in
// table ([intake.Payloads]): the intake sends a payload so when no
// message body holds it.
func ReadingPayloads(d app.Deps, table string, h intake.SQSHandler) (intake.SQSHandler, error) {
	p, err := intake.NewPayloads(d.Clients.DynamoDB, table, d.Log())
	if err != nil {
		return nil, err
	}
	return p.Handler(h), nil
}
