// Package manifests renders a service's Kubernetes manifests: Go templates over the merged
// values files (with Sprig's functions, as Harness offers), split into objects. Expressions
// (`<+...>`) are rendered before this, by the workflow, in both manifests and values.
package manifests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
)

// File is one manifest or values file.
type File struct {
	Path string
	Text string
}

// funcs are the template functions: Sprig's, minus those that read the environment or make
// output differ between runs of the same input.
var funcs = func() template.FuncMap {
	m := sprig.TxtFuncMap()
	for _, f := range []string{"env", "expandenv", "now", "date", "dateInZone", "date_in_zone", "randAlpha",
		"randAlphaNum", "randAscii", "randNumeric", "randBytes", "uuidv4", "genPrivateKey", "genCA",
		"genSelfSignedCert", "genSignedCert", "derivePassword", "getHostByName"} {
		delete(m, f)
	}
	m["toYaml"] = func(v any) string {
		b, err := yaml.Marshal(v)
		if err != nil {
			return ""
		}
		return strings.TrimSuffix(string(b), "\n")
	}
	return m
}()

// Check parses every manifest as a template, so syntax errors are found before a run starts.
// The error names the file and line.
func Check(f File) error {
	_, err := template.New(f.Path).Funcs(funcs).Option("missingkey=zero").Parse(f.Text)
	return err
}

// Values merges values files, later files overriding earlier ones key by key.
func Values(files []File) (map[string]any, error) {
	out := map[string]any{}
	for _, f := range files {
		var v map[string]any
		if err := yaml.Unmarshal([]byte(f.Text), &v); err != nil {
			return nil, fmt.Errorf("values file %s: %v", f.Path, err)
		}
		merge(out, v)
	}
	return out, nil
}

func merge(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				merge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

// Object is a rendered Kubernetes object and the file it came from.
type Object struct {
	File string
	*unstructured.Unstructured
}

// Render executes the templates with `.Values` and splits the output into objects. Empty
// documents are dropped; a document without apiVersion or kind is an error naming its file.
func Render(files []File, values map[string]any) ([]Object, error) {
	data := map[string]any{"Values": values}
	var out []Object
	for _, f := range files {
		t, err := template.New(f.Path).Funcs(funcs).Option("missingkey=zero").Parse(f.Text)
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, data); err != nil {
			return nil, err
		}
		objs, err := Split(f.Path, buf.Bytes())
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// Split decodes a multi-document YAML text into objects.
func Split(path string, text []byte) ([]Object, error) {
	var out []Object
	dec := k8syaml.NewYAMLOrJSONDecoder(bytes.NewReader(text), 4096)
	for i := 1; ; i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: document %d: %v", path, i, err)
		}
		// utiljson keeps whole numbers int64, as the API machinery expects.
		var m map[string]any
		if err := utiljson.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("%s: document %d: %v", path, i, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetAPIVersion() == "" || u.GetKind() == "" {
			return nil, fmt.Errorf("%s: document %d has no apiVersion or kind", path, i)
		}
		if u.GetName() == "" {
			return nil, fmt.Errorf("%s: %s in document %d has no metadata.name", path, u.GetKind(), i)
		}
		out = append(out, Object{File: path, Unstructured: u})
	}
}
