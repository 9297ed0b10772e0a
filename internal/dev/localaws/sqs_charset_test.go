package localaws_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/internal/dev/localaws"
)

// SQS accepts in a message body only the characters #x9 | #xA | #xD |
// #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF, and refuses
// any other with InvalidMessageContents (SQS API reference, SendMessage,
// MessageBody: https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html).
// The emulator takes any text; the local SQS refuses what SQS refuses.

// charsetCases are the edges of SQS's set: the last character outside
// each range and the first inside it.
var charsetCases = []struct {
	r  rune
	ok bool
}{
	{0x0, false}, {0x1, false}, {0x8, false}, {0x9, true}, {0xA, true}, {0xB, false}, {0xC, false}, {0xD, true},
	{0xE, false}, {0x1F, false}, {0x20, true}, {0xD7FF, true}, {0xE000, true}, {0xFFFD, true},
	{0xFFFE, false}, {0xFFFF, false}, {0x10000, true}, {0x10FFFF, true},
}

func TestSQSRefusesCharactersOutsideItsSet(t *testing.T) {
	env := localaws.StartForTest(t)
	url := env.QueueURL("payments")
	for _, c := range charsetCases {
		t.Run(fmt.Sprintf("U+%04X", c.r), func(t *testing.T) {
			// Given a body with the character in a customer's name
			body := `{"customer":{"name":"Ada ` + string(c.r) + ` Lovelace"}}`
			// when it is sent
			_, err := env.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)})
			// then SQS takes it exactly when the character is in its set
			var bad *sqstypes.InvalidMessageContents
			switch {
			case c.ok && err != nil:
				t.Fatalf("send: %v; want it accepted", err)
			case !c.ok && !errors.As(err, &bad):
				t.Fatalf("send: err = %v; want InvalidMessageContents", err)
			}
		})
	}
}

// TestSQSRefusesABatchEntryOutsideItsSet: in a batch only the entry with
// such a character fails, with the code InvalidMessageContents, and the
// others are sent.
func TestSQSRefusesABatchEntryOutsideItsSet(t *testing.T) {
	env := localaws.StartForTest(t)
	url := env.QueueURL("payments")
	// Given a batch of three bodies, the second with U+FFFF
	out, err := env.SQS.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url),
		Entries: []sqstypes.SendMessageBatchRequestEntry{
			{Id: aws.String("a"), MessageBody: aws.String("first")},
			{Id: aws.String("b"), MessageBody: aws.String("second \uffff")},
			{Id: aws.String("c"), MessageBody: aws.String("third")},
		}})
	if err != nil {
		t.Fatal(err)
	}
	// then b fails alone, and a and c are on the queue
	if len(out.Failed) != 1 || aws.ToString(out.Failed[0].Id) != "b" || aws.ToString(out.Failed[0].Code) != "InvalidMessageContents" || !out.Failed[0].SenderFault {
		t.Fatalf("failed entries = %+v; want b alone, InvalidMessageContents, the sender's fault", out.Failed)
	}
	if len(out.Successful) != 2 {
		t.Fatalf("%d entries sent, want 2", len(out.Successful))
	}
	got := map[string]bool{}
	for len(got) < 2 {
		m := receiveOne(t, env, url, 30, 1)
		if m == nil {
			t.Fatalf("queue holds %v, want first and third", got)
		}
		got[aws.ToString(m.Body)] = true
	}
	if !got["first"] || !got["third"] {
		t.Fatalf("queue holds %v, want first and third", got)
	}
}
