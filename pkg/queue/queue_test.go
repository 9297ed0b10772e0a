package queue

import "testing"

func TestParseMaxReceive(t *testing.T) {
	tests := []struct {
		name, policy string
		want         int
	}{
		{"number, as CloudFormation writes it", `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:0:dlq","maxReceiveCount":5}`, 5},
		{"string, as GetQueueAttributes returns it", `{"deadLetterTargetArn":"arn","maxReceiveCount":"7"}`, 7},
		{"no policy", ``, 0},
		{"garbage", `{"maxReceiveCount":`, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseMaxReceive(tc.policy); got != tc.want {
				t.Fatalf("parseMaxReceive(%q) = %d, want %d", tc.policy, got, tc.want)
			}
		})
	}
}
