package localaws

import "testing"

func TestWildcardMatchAsIAMMatches(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"arn:aws:dynamodb:r:1:table/t", "arn:aws:dynamodb:r:1:table/t", true},
		{"arn:aws:dynamodb:r:1:table/t", "arn:aws:dynamodb:r:1:table/t/index/i", false},
		{"arn:aws:dynamodb:r:1:table/t/index/*", "arn:aws:dynamodb:r:1:table/t/index/i", true},
		{"arn:aws:dynamodb:r:1:table/t/index/*", "arn:aws:dynamodb:r:1:table/t", false},
		{"arn:aws:dynamodb:*:1:table/t*", "arn:aws:dynamodb:r:1:table/tt/index/i", true},
		{"arn:aws:sqs:*:*:usage?dlq", "arn:aws:sqs:r:1:usage-dlq", true},
		{"arn:aws:sqs:*:*:usage?dlq", "arn:aws:sqs:r:1:usage--dlq", false},
		{"*", "", true},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYcZ", false},
	} {
		if got := wildcardMatch(c.pattern, c.s); got != c.want {
			t.Errorf("wildcardMatch(%q, %q) = %v, want %v", c.pattern, c.s, got, c.want)
		}
	}
	if !matchesAny([]string{"DynamoDB:getitem"}, "dynamodb:GetItem", true) || matchesAny([]string{"dynamodb:Get*"}, "dynamodb:BatchGetItem", true) {
		t.Error("actions match without regard to case, and only from their start")
	}
}
