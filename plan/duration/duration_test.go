package duration

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	ok := map[string]time.Duration{
		"10m": 10 * time.Minute, "1h30m": 90 * time.Minute, "1d": 24 * time.Hour, "1w": 7 * 24 * time.Hour,
		"1d 2h": 26 * time.Hour, "7d": 7 * 24 * time.Hour, "90s": 90 * time.Second, "10s": 10 * time.Second,
		"1m500ms": 61 * time.Second,
	}
	for s, want := range ok {
		if got, err := Parse(s); err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "5s", "500ms", "10", "m", "1h  2m", "1x", "-1m", "1h ", "ten minutes"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}
