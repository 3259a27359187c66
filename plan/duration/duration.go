// Package duration parses Harness durations; it is a leaf so workflow code can use it.
package duration

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

var durationTermRe = regexp.MustCompile(`^(\d+)(ms|w|d|h|m|s)`)

// Parse reads Harness durations (spec 1.10): one or more <int><unit> terms with units
// w, d, h, m, s, optionally separated by single spaces (`10m`, `1h30m`, `1d 2h`, `7d`). A
// seconds-only value must be at least 10s; `ms` is accepted only inside multi-term values and
// rounds up to whole seconds.
func Parse(s string) (time.Duration, error) {
	d, short, err := parse(s)
	if err == nil && short {
		return 0, fmt.Errorf("duration %q is below the 10s minimum", s)
	}
	return d, err
}

// ParseInterval reads a duration as Parse does, without the 10s minimum of a seconds-only
// value: an interval between reads (retryInterval) may be shorter than a step's timeout may.
func ParseInterval(s string) (time.Duration, error) {
	d, _, err := parse(s)
	return d, err
}

// parse reads a duration and says whether it is a seconds-only value under 10s.
func parse(s string) (time.Duration, bool, error) {
	if s == "" {
		return 0, false, fmt.Errorf("empty duration")
	}
	var total time.Duration
	rest, terms, units := s, 0, ""
	for rest != "" {
		if terms > 0 && rest[0] == ' ' {
			rest = rest[1:]
		}
		m := durationTermRe.FindStringSubmatch(rest)
		if m == nil {
			return 0, false, fmt.Errorf("invalid duration %q", s)
		}
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || n > 1<<31 {
			return 0, false, fmt.Errorf("duration %q is too large", s)
		}
		unit := map[string]time.Duration{"w": 7 * 24 * time.Hour, "d": 24 * time.Hour, "h": time.Hour,
			"m": time.Minute, "s": time.Second, "ms": time.Millisecond}[m[2]]
		total += time.Duration(n) * unit
		units += m[2] + " "
		rest = rest[len(m[0]):]
		terms++
	}
	if terms == 1 && units == "ms " {
		return 0, false, fmt.Errorf("duration %q: milliseconds are only accepted next to other units (e.g. 1m500ms); the minimum step is 10s", s)
	}
	short := terms == 1 && units == "s " && total < 10*time.Second
	if rem := total % time.Second; rem != 0 {
		total += time.Second - rem
	}
	if strings.HasSuffix(s, " ") {
		return 0, false, fmt.Errorf("invalid duration %q", s)
	}
	return total, short, nil
}
