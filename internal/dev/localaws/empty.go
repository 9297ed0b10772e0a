package localaws

import (
	"bytes"
	"encoding/json"
	"reflect"
)

// minidyn's wire type tags its members omitempty, so an empty map or
// list attribute ({"M":{}}, {"L":[]}), which DynamoDB stores and answers
// as such, would be encoded as {}: a value with no type, which the SDK
// decodes as the item's previous attribute. Before an answer holding
// attribute values is encoded, each empty map gets one member under the
// name "" and each empty list one null element, neither of which a
// request can hold (an attribute name has at least one character, a list
// element is a value), and the encoded answer has them taken out again.
var (
	emptyMapMark  = []byte(`"M":{"":null}`)
	emptyListMark = []byte(`"L":[null]`)
)

// marshalKeepingEmpty encodes v as encoding/json does, with HTML left
// unescaped, keeping the empty maps and lists of the attribute values in
// it. It marks them in place: v must be the caller's own answer.
func marshalKeepingEmpty(v any) ([]byte, error) {
	marked := markEmpty(reflect.ValueOf(v))
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	out := b.Bytes()
	if marked {
		out = bytes.ReplaceAll(out, emptyMapMark, []byte(`"M":{}`))
		out = bytes.ReplaceAll(out, emptyListMark, []byte(`"L":[]`))
	}
	return out, nil
}

// markEmpty marks the empty maps and lists of every attribute value
// reachable from v, and reports whether it marked any.
func markEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return false
		}
		if a, ok := v.Interface().(*av); ok {
			return markValue(a)
		}
		return markEmpty(v.Elem())
	case reflect.Struct:
		marked := false
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				marked = markEmpty(v.Field(i)) || marked
			}
		}
		return marked
	case reflect.Map:
		marked := false
		for it := v.MapRange(); it.Next(); {
			marked = markEmpty(it.Value()) || marked
		}
		return marked
	case reflect.Slice, reflect.Array:
		marked := false
		for i := range v.Len() {
			marked = markEmpty(v.Index(i)) || marked
		}
		return marked
	}
	return false
}

// markValue marks a's empty map or list, or those nested in it.
func markValue(a *av) bool {
	marked := false
	switch {
	case a.M != nil && len(a.M) == 0:
		a.M, marked = map[string]*av{"": nil}, true
	case a.L != nil && len(a.L) == 0:
		a.L, marked = []*av{nil}, true
	}
	for k, c := range a.M {
		if k != "" && c != nil {
			marked = markValue(c) || marked
		}
	}
	for _, c := range a.L {
		if c != nil {
			marked = markValue(c) || marked
		}
	}
	return marked
}
