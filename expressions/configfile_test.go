package expressions

import (
	"strings"
	"testing"
)

// The stage's config files by identifier: as text with their expressions rendered, in base64,
// and errors naming the files there are.
func TestConfigFileFunctions(t *testing.T) {
	scope := NewScope(map[string]any{
		"pipeline":   map[string]any{"name": "shop"},
		"configFile": map[string]any{"app": "name=<+pipeline.name>\n", "raw": "a\x00b"},
	}, "")
	for src, want := range map[string]string{
		`<+configFile.getAsString("app")>`:   "name=shop\n",
		`<+configFile.getAsBase64("app")>`:   "bmFtZT1zaG9wCg==",
		`<+configFile.getAsBase64("raw")>`:   "YQBi",
		`x=<+configFile.getAsString('app')>`: "x=name=shop\n",
	} {
		got, err := RenderString(src, scope, Options{Unresolved: UnresolvedFail})
		if err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", src, got, err, want)
		}
	}
	for src, want := range map[string]string{
		`<+configFile.getAsString("nope")>`: `the service has no config file "nope"; it has app, raw`,
		`<+configFile.getAsString()>`:       "takes 1 argument",
		`<+configFile.read("app")>`:         "unknown function configFile.read()",
	} {
		if _, err := RenderString(src, scope, Options{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", src, err, want)
		}
	}
	none := NewScope(map[string]any{}, "")
	if _, err := RenderString(`<+configFile.getAsString("app")>`, none, Options{}); err == nil || !strings.Contains(err.Error(), "has no config files") {
		t.Errorf("without config files: %v", err)
	}
}
