package usagein_test

import (
	"testing"

	"github.com/hookline/hookline/internal/usagein"
)

func TestScaleDecimalIsExact(t *testing.T) {
	tests := []struct {
		text  string
		scale int64
		want  int64
		err   bool
	}{
		{"12.5", 1000, 12500, false},
		{"12.500", 1000, 12500, false},
		{"12.5005", 1000, 0, true}, // more precision than the scale
		{"0.001", 1000, 1, false},
		{"0.0005", 1000, 0, true},
		{"1e3", 1, 1000, false},
		{"1.5E-1", 100, 15, false},
		{"1.25e-1", 10, 0, true},
		{"0", 1000, 0, false},
		{"0.000", 1, 0, false},
		{"-0", 1, 0, false},
		{"0e999", 1, 0, false},
		{"-1", 1, 0, true},
		{"-0.5", 1000, 0, true},
		{"9007199254740992", 1, 9007199254740992, false}, // 2^53
		{"9007199254740993", 1, 0, true},
		{"9007199254740.992", 1000, 9007199254740992, false},
		{"1e400", 1, 0, true},
		{"1e-400", 1000, 0, true},
		{"1e1000000000", 1, 0, true},
		{"99999999999999999999", 1, 0, true},
		{"+1", 1, 0, true},
		{".5", 10, 0, true},
		{"1.", 10, 0, true},
		{"01", 1, 0, true},
		{" 1", 1, 0, true},
		{"1e", 1, 0, true},
		{"1e+-1", 1, 0, true},
		{"NaN", 1, 0, true},
		{"Infinity", 1, 0, true},
		{"0x10", 1, 0, true},
		{"1_000", 1, 0, true},
		{"", 1, 0, true},
	}
	for _, tc := range tests {
		got, err := usagein.ScaleDecimal(tc.text, tc.scale)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ScaleDecimal(%q, %d) = %d, %v; want %d, error %v", tc.text, tc.scale, got, err, tc.want, tc.err)
		}
	}
}

func TestScaleDecimalRefusesABadScale(t *testing.T) {
	for _, scale := range []int64{0, -1, usagein.MaxScale + 1} {
		if _, err := usagein.ScaleDecimal("1", scale); err == nil {
			t.Errorf("scale %d accepted", scale)
		}
	}
}
