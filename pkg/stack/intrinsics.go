package stack

import (
	"fmt"
	"regexp"
	"strings"
)

// refHandler resolves !Ref to "ref:<LogicalID>", and AWS::NoValue to nil.
func refHandler(_ string, input, _ interface{}) interface{} {
	name, ok := input.(string)
	if !ok {
		return nil
	}
	if name == "AWS::NoValue" {
		return nil
	}
	return "ref:" + name
}

// getAttHandler resolves !GetAtt X.Attr to "getatt:X.Attr".
func getAttHandler(_ string, input, _ interface{}) interface{} {
	switch v := input.(type) {
	case string:
		return "getatt:" + v
	case []interface{}:
		parts := make([]string, 0, len(v))
		for _, p := range v {
			parts = append(parts, fmt.Sprint(p))
		}
		return "getatt:" + strings.Join(parts, ".")
	}
	return nil
}

var subVar = regexp.MustCompile(`\$\{([^}!]+)\}`)

// subHandler resolves !Sub "a/${X}" to "a/X": each variable becomes the
// logical ID (or pseudo parameter) it names.
func subHandler(_ string, input, _ interface{}) interface{} {
	var s string
	switch v := input.(type) {
	case string:
		s = v
	case []interface{}:
		if len(v) == 0 {
			return nil
		}
		s, _ = v[0].(string)
	}
	return subVar.ReplaceAllStringFunc(s, func(m string) string {
		name := subVar.FindStringSubmatch(m)[1]
		id, _, _ := strings.Cut(name, ".")
		return id
	})
}
