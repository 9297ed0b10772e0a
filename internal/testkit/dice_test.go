package testkit_test

import (
	"testing"

	"github.com/hookline/hookline/internal/testkit"
)

// TestDiceDecideByNameAlone: the same seed and names roll the same number
// whatever was rolled before; another seed or name rolls another.
func TestDiceDecideByNameAlone(t *testing.T) {
	a, b := testkit.NewDice(7), testkit.NewDice(7)
	b.Roll("something", "else")
	if a.Roll("event", "1") != b.Roll("event", "1") {
		t.Fatal("one seed and one name rolled twice differently")
	}
	if a.Roll("event", "1") == testkit.NewDice(8).Roll("event", "1") || a.Roll("event", "1") == a.Roll("event", "2") {
		t.Fatal("another seed or name rolled the same number")
	}
	// The parts are separated: ("ab", "c") is not ("a", "bc").
	if a.Hash("ab", "c") == a.Hash("a", "bc") {
		t.Fatal("parts run together")
	}
	if n1, n2 := a.Next("k"), a.Next("k"); n1 != 1 || n2 != 2 {
		t.Fatalf("Next = %d, %d, want 1, 2", n1, n2)
	}
}

// TestDiceRollsAreSpread: rolls lie in [0, 1) and a rate of 0.05 fires
// on about 5% of names.
func TestDiceRollsAreSpread(t *testing.T) {
	d := testkit.NewDice(1)
	hits := 0
	for i := range 20000 {
		u := d.Roll("spread", string(rune('a'+i%26)), string(rune(i)))
		if u < 0 || u >= 1 {
			t.Fatalf("roll %v outside [0, 1)", u)
		}
		if u < 0.05 {
			hits++
		}
	}
	if hits < 850 || hits > 1150 {
		t.Fatalf("%d of 20000 rolls under 0.05, want about 1000", hits)
	}
}
