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

// ifHandler resolves !If [Condition, A, B] to A or B by evaluating the
// condition against the parameters' defaults, as a deployment with no
// parameter given would: !Ref AWS::NoValue in the branch taken leaves the
// value out. A condition it cannot evaluate resolves to nothing.
func ifHandler(_ string, input, template interface{}) interface{} {
	arr, ok := input.([]interface{})
	if !ok || len(arr) != 3 {
		return nil
	}
	name, _ := arr[0].(string)
	tpl, _ := template.(map[string]interface{})
	conds, _ := tpl["Conditions"].(map[string]interface{})
	v, ok := evalCondition(conds[name], tpl, 0)
	switch {
	case !ok:
		return nil
	case v:
		return arr[1]
	default:
		return arr[2]
	}
}

// evalCondition evaluates a condition of Fn::Not, Fn::And, Fn::Or,
// Fn::Equals, Condition and Ref (a parameter's default).
func evalCondition(c interface{}, tpl map[string]interface{}, depth int) (bool, bool) {
	m, ok := c.(map[string]interface{})
	if !ok || len(m) != 1 || depth > 16 {
		return false, false
	}
	for fn, arg := range m {
		args, _ := arg.([]interface{})
		switch fn {
		case "Fn::Not":
			if len(args) != 1 {
				return false, false
			}
			v, ok := evalCondition(args[0], tpl, depth+1)
			return !v, ok
		case "Fn::And", "Fn::Or":
			and := fn == "Fn::And"
			for _, a := range args {
				v, ok := evalCondition(a, tpl, depth+1)
				if !ok {
					return false, false
				}
				if v != and {
					return v, true
				}
			}
			return and, true
		case "Fn::Equals":
			if len(args) != 2 {
				return false, false
			}
			a, okA := conditionValue(args[0], tpl)
			b, okB := conditionValue(args[1], tpl)
			return a == b, okA && okB
		case "Condition":
			name, _ := arg.(string)
			conds, _ := tpl["Conditions"].(map[string]interface{})
			return evalCondition(conds[name], tpl, depth+1)
		}
	}
	return false, false
}

// conditionValue is a literal, or the default of the parameter a Ref
// names, as text.
func conditionValue(v interface{}, tpl map[string]interface{}) (string, bool) {
	m, ok := v.(map[string]interface{})
	if !ok {
		return fmt.Sprint(v), true
	}
	name, ok := m["Ref"].(string)
	if !ok {
		return "", false
	}
	params, _ := tpl["Parameters"].(map[string]interface{})
	p, _ := params[name].(map[string]interface{})
	d, ok := p["Default"]
	if !ok {
		return "", false
	}
	return fmt.Sprint(d), true
}
