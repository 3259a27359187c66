package runner

import (
	"regexp"
	"testing"
)

// Report patterns: ** spans directories (none included), * and ? stay within one.
func TestGlobRegexp(t *testing.T) {
	for _, c := range []struct {
		pattern, path string
		match         bool
	}{
		{"/harness/reports/*.xml", "/harness/reports/unit.xml", true},
		{"/harness/reports/*.xml", "/harness/reports/sub/unit.xml", false},
		{"/harness/**/*.xml", "/harness/unit.xml", true},
		{"/harness/**/*.xml", "/harness/a/b/TEST-x.xml", true},
		{"/harness/**/TEST-?.xml", "/harness/a/TEST-x.xml", true},
		{"/harness/**/TEST-?.xml", "/harness/a/TEST-xy.xml", false},
		{"/harness/target/surefire-reports/*.xml", "/harness/target/surefire-reports/TEST-A.xml", true},
		{"/harness/a+b/*.xml", "/harness/a+b/r.xml", true},
	} {
		if got := regexp.MustCompile(globRegexp(c.pattern)).MatchString(c.path); got != c.match {
			t.Errorf("%s ~ %s: %v, want %v", c.pattern, c.path, got, c.match)
		}
	}
}
