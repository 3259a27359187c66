package workflows

import "testing"

// A HostNames filter keeps the hosts it names, with or without their port; none keeps all.
func TestHostKept(t *testing.T) {
	for _, c := range []struct {
		host string
		only []string
		want bool
	}{
		{"web-1", nil, true},
		{"web-1", []string{"web-1"}, true},
		{"web-1:2222", []string{"web-1"}, true},
		{"web-1:2222", []string{"web-1:2222"}, true},
		{"web-2", []string{"web-1"}, false},
		{"web-1:2222", []string{"web-1:22"}, false},
	} {
		if got := hostKept(c.host, c.only); got != c.want {
			t.Errorf("hostKept(%q, %v) = %v", c.host, c.only, got)
		}
	}
}
