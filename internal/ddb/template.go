package ddb

import (
	"fmt"
	"maps"
	"strings"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Template is an expression built once with the SDK's expression builder
// and given its values per call. Building an expression walks its trees
// and substitutes its names and values every time; a hot path that makes
// the same expression with other values builds it once, with a [Slot] for
// each value that changes, and binds the slots with [Template.Values].
type Template struct {
	expr  expression.Expression
	slots map[string][]string // slot name -> the value placeholders it fills
}

// slotMark prefixes the string value that stands for a slot.
const slotMark = "\x00hookline-slot:"

// Slot stands for a value given per call to [Template.Values].
func Slot(name string) expression.ValueBuilder { return expression.Value(slotMark + name) }

// NewTemplate builds b, whose per-call values are [Slot]s.
func NewTemplate(b expression.Builder) (*Template, error) {
	expr, err := b.Build()
	if err != nil {
		return nil, err
	}
	t := &Template{expr: expr, slots: map[string][]string{}}
	for placeholder, v := range expr.Values() {
		if s, ok := v.(*types.AttributeValueMemberS); ok && strings.HasPrefix(s.Value, slotMark) {
			name := strings.TrimPrefix(s.Value, slotMark)
			t.slots[name] = append(t.slots[name], placeholder)
		}
	}
	return t, nil
}

// MustTemplate is [NewTemplate] for package-level templates; it panics
// when b does not build, which is a programming error.
func MustTemplate(b expression.Builder) *Template {
	t, err := NewTemplate(b)
	if err != nil {
		panic(fmt.Sprintf("ddb: template: %v", err))
	}
	return t
}

// Condition, Update and Names are the built expression's.
func (t *Template) Condition() *string { return t.expr.Condition() }

// Update is the built update expression.
func (t *Template) Update() *string { return t.expr.Update() }

// Names are the built expression's attribute names; callers must not
// change the map, which every call shares.
func (t *Template) Names() map[string]string { return t.expr.Names() }

// Values returns the expression's attribute values with every slot bound
// to its value in bind, encoded as the expression builder encodes values.
// A slot missing from bind, or a name in bind that is no slot, is an
// error.
func (t *Template) Values(bind map[string]any) (map[string]types.AttributeValue, error) {
	if len(t.expr.Values()) == 0 && len(bind) == 0 {
		return nil, nil
	}
	out := maps.Clone(t.expr.Values())
	for name, v := range bind {
		placeholders, ok := t.slots[name]
		if !ok {
			return nil, fmt.Errorf("ddb: template has no slot %q", name)
		}
		av, err := attributevalue.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("ddb: slot %q: %w", name, err)
		}
		for _, p := range placeholders {
			out[p] = av
		}
	}
	if len(bind) != len(t.slots) {
		return nil, fmt.Errorf("ddb: template has %d slots, %d bound", len(t.slots), len(bind))
	}
	return out, nil
}
