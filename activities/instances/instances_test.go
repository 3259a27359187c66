package instances

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/plan"
)

// Parse finds the list at its path and each attribute at its own, nested or indexed; a list
// that is missing, not a list, or an instance without a host name is an error saying where.
func TestParse(t *testing.T) {
	attrs := []plan.InstanceAttribute{{Name: "instancename", JSONPath: "meta.name"}, {Name: "ip", JSONPath: "addrs[1]"}, {Name: "port", JSONPath: "port"}, {Name: "none", JSONPath: "missing"}}
	js := `{"data": {"items": [{"meta": {"name": "a"}, "addrs": ["x", "10.0.0.1"], "port": 8080}, {"meta": {"name": "b"}, "addrs": ["y", "10.0.0.2"], "port": 9090}]}}`
	hosts, list, err := Parse([]byte(js), "data.items", attrs)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(hosts, []string{"a", "b"}) {
		t.Errorf("hosts %v", hosts)
	}
	props := list[1].(map[string]any)["host"].(map[string]any)["properties"].(map[string]any)
	if props["ip"] != "10.0.0.2" || props["port"] != 9090.0 || props["instancename"] != "b" {
		t.Errorf("instance b's properties %v", props)
	}
	if _, ok := props["none"]; ok {
		t.Error("a missing optional attribute is set")
	}
	for _, c := range []struct{ js, path, want string }{
		{`{"hosts": {}}`, "hosts", "is not a list but an object"},
		{`{"hosts": []}`, "servers", `instancesListPath "servers": no field servers`},
		{`{"hosts": [{"ip": "1"}]}`, "hosts", "instance 0: attribute instancename (meta.name)"},
		{`{"hosts": [{"meta": {"name": "a"}}, {"meta": {"name": "a"}}]}`, "hosts", "host a is listed twice"},
		{`not json`, "hosts", "does not parse"},
	} {
		if _, _, err := Parse([]byte(c.js), c.path, attrs); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s at %s: %v, want %q", c.js, c.path, err, c.want)
		}
	}
}
