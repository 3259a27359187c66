package expressions

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strings"
)

// configFileRoot is the context object holding the stage's service config files, by identifier
// (`<+configFile.getAsString("id")>`); the engine that runs the stage fills it.
const configFileRoot = "configFile"

// configFileFunctions read one config file: as text, or its bytes in base64.
var configFileFunctions = map[string]bool{"getAsString": true, "getAsBase64": true}

// configFile answers configFile.getAsString("id") and getAsBase64("id") from files, the
// context's configFile object (identifier → text). Expressions in the file are rendered in
// the same context first, as they are when the file is copied to a host.
func (st *state) configFile(files any, fn string, args []any) (any, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("configFile.%s(): takes 1 argument (the config file's identifier), got %d", fn, len(args))
	}
	id, err := asString(args[0], "the config file's identifier")
	if err != nil {
		return nil, fmt.Errorf("configFile.%s(): %v", fn, err)
	}
	m, _ := files.(map[string]any)
	if several, ok := m[id].([]any); ok {
		return nil, fmt.Errorf("configFile.%s(%q): config file %q holds %d files; these functions read a config file of one file", fn, id, id, len(several))
	}
	text, ok := m[id].(string)
	if !ok {
		if len(m) == 0 {
			return nil, fmt.Errorf("configFile.%s(%q): the stage's service has no config files", fn, id)
		}
		ids := make([]string, 0, len(m))
		for k := range m {
			ids = append(ids, k)
		}
		sort.Strings(ids)
		return nil, fmt.Errorf("configFile.%s(%q): the service has no config file %q; it has %s", fn, id, id, strings.Join(ids, ", "))
	}
	if strings.Contains(text, "<+") {
		if st.depth >= MaxDepth {
			return nil, fmt.Errorf("configFile.%s(%q): expression chain deeper than %d levels", fn, id, MaxDepth)
		}
		t, err := Compile(text, Text)
		if err != nil {
			return nil, fmt.Errorf("config file %q holds a broken expression: %v", id, err)
		}
		v, err := t.eval(&state{scope: st.scope, opts: st.opts, depth: st.depth + 1})
		if err != nil {
			return nil, fmt.Errorf("config file %q: %v", id, err)
		}
		text = ToString(v)
	}
	if fn == "getAsBase64" {
		return base64.StdEncoding.EncodeToString([]byte(text)), nil
	}
	return text, nil
}
