// Package triggers decides whether a trigger fires: its conditions (the operators of spec
// 13.3), webhook signatures and payloads, and the log of what each delivery did. The folder
// of trigger files a server reads is triggers/directory.
package triggers

import (
	"fmt"
	"regexp"
	"strings"
)

// Operators are the condition operators of spec 13.3.
var Operators = []string{"Equals", "NotEquals", "In", "NotIn", "StartsWith", "EndsWith", "Contains", "DoesNotContain", "Regex"}

// Match evaluates one payload or header condition: input is the value taken from the event,
// value the configured one.
func Match(op, input, value string) (bool, error) {
	if op == "" && input == "" && value == "" {
		return true, nil
	}
	switch op {
	case "Equals":
		return input == value, nil
	case "NotEquals":
		return input != value, nil
	}
	if value == "" { // every other operator: an empty value is no constraint
		return true, nil
	}
	switch op {
	case "In":
		return in(input, value)
	case "NotIn":
		ok, err := in(input, value)
		return !ok, err
	case "StartsWith":
		return input != "" && strings.HasPrefix(input, value), nil
	case "EndsWith":
		return input != "" && strings.HasSuffix(input, value), nil
	case "Contains":
		return input != "" && strings.Contains(input, value), nil
	case "DoesNotContain":
		return input != "" && !strings.Contains(input, value), nil
	case "Regex":
		re, err := regexp.Compile(`(?s)^(?:` + value + `)$`)
		if err != nil {
			return false, fmt.Errorf("condition regex %q: %v", value, err)
		}
		return re.MatchString(input), nil
	}
	return false, fmt.Errorf("unknown condition operator %q; operators: %s", op, strings.Join(Operators, ", "))
}

// in is true when input equals an item of the comma-separated list, or fully matches an item
// read as a regex. Items may be double-quoted to contain commas.
func in(input, list string) (bool, error) {
	for _, item := range splitList(list) {
		if input == item {
			return true, nil
		}
		re, err := regexp.Compile(`(?s)^(?:` + item + `)$`)
		if err == nil && re.MatchString(input) {
			return true, nil
		}
	}
	return false, nil
}

// splitList splits a comma-separated list, trimming items and honouring double quotes.
func splitList(s string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for _, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
		case r == ',' && !quoted:
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	return append(out, strings.TrimSpace(cur.String()))
}
