package localaws

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// TestItemSize checks itemSize against the rules of the developer guide's
// "DynamoDB item sizes and formats"
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html).
func TestItemSize(t *testing.T) {
	tests := []struct {
		name string
		item item
		want int
	}{
		{"string: name and UTF-8 bytes", item{"ab": {S: aws.String("héllo")}}, 2 + 6},
		{"number: 1 byte per two significant digits, plus 1", item{"n": {N: aws.String("12345")}}, 1 + 3 + 1},
		{"number: leading and trailing zeros trimmed", item{"n": {N: aws.String("-000120.0100")}}, 1 + 3 + 1},
		{"number: zero", item{"n": {N: aws.String("0")}}, 1 + 1 + 1},
		{"number: exponent is not a digit", item{"n": {N: aws.String("1.5E+30")}}, 1 + 1 + 1},
		{"number: 38 digits", item{"n": {N: aws.String(strings.Repeat("9", 38))}}, 1 + 19 + 1},
		{"binary: raw bytes", item{"b": {B: []byte{1, 2, 3, 4}}}, 1 + 4},
		{"boolean", item{"ok": {BOOL: aws.Bool(true)}}, 2 + 1},
		{"null", item{"no": {NULL: aws.Bool(true)}}, 2 + 1},
		{"empty list", item{"l": {L: []*av{}}}, 1 + 3},
		{"list: 3 bytes, elements, 1 byte each", item{"l": {L: []*av{{S: aws.String("xy")}, {BOOL: aws.Bool(false)}}}}, 1 + 3 + (2 + 1) + (1 + 1)},
		{"map: element names count", item{"m": {M: item{"k": {S: aws.String("v")}}}}, 1 + 3 + (1 + 1) + 1},
		{"string set", item{"ss": {SS: aws.StringSlice([]string{"a", "bcd"})}}, 2 + 4},
		{"number set", item{"ns": {NS: aws.StringSlice([]string{"1", "1234"})}}, 2 + 2 + 3},
		{"several attributes", item{"pk": {S: aws.String("REC#1")}, "units": {N: aws.String("10")}}, (2 + 5) + (5 + 2)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := itemSize(tc.item); got != tc.want {
				t.Fatalf("itemSize = %d, want %d", got, tc.want)
			}
		})
	}
}
