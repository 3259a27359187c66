package manifests

import (
	"bytes"
	"fmt"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
)

// LoadChart loads the chart in folder dir of files (paths relative to one root) with the Helm
// SDK's loader: its Chart.yaml, values, templates, CRDs and dependencies in charts/.
func LoadChart(files []File, dir string) (*chart.Chart, error) {
	root := strings.Trim(path.Clean("/"+dir), "/")
	var buffered []*loader.BufferedFile
	for _, f := range files {
		p := strings.Trim(path.Clean("/"+f.Path), "/")
		name, ok := strings.CutPrefix(p, root+"/")
		if root == "" {
			name, ok = p, true
		}
		if ok {
			buffered = append(buffered, &loader.BufferedFile{Name: name, Data: []byte(f.Text)})
		}
	}
	if len(buffered) == 0 {
		return nil, fmt.Errorf("chart %s: no files", root)
	}
	ch, err := loader.LoadFiles(buffered)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %v", root, err)
	}
	return ch, nil
}

// HelmValues merges values files in order, later ones winning, as `-f a -f b` does.
func HelmValues(values []File) (map[string]any, error) {
	vals := map[string]any{}
	for _, v := range values {
		m, err := chartutil.ReadValues([]byte(v.Text))
		if err != nil {
			return nil, fmt.Errorf("values %s: %v", v.Path, err)
		}
		vals = chartutil.CoalesceTables(m, vals) // m wins over what came before
	}
	return vals, nil
}

// Release names the Helm release a chart is rendered for (`.Release.*`).
type Release struct {
	Name, Namespace string
	Revision        int
}

// Helm renders the chart in folder dir of files (paths relative to one root) client-side with
// the Helm SDK, as `helm template` does: the chart's values.yaml, then each values file in
// order (later ones win), its CRDs first, templates in name order, NOTES and partials left out.
func Helm(files []File, dir string, values []File, rel Release) ([]Object, error) {
	root := strings.Trim(path.Clean("/"+dir), "/")
	ch, err := LoadChart(files, dir)
	if err != nil {
		return nil, err
	}
	vals, err := HelmValues(values)
	if err != nil {
		return nil, err
	}
	if rel.Revision == 0 {
		rel.Revision = 1
	}
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: rel.Name, Namespace: rel.Namespace,
		Revision: rel.Revision, IsInstall: rel.Revision == 1, IsUpgrade: rel.Revision > 1}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("chart %s: values: %v", ch.Name(), err)
	}
	rendered, err := engine.Render(ch, rv)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %v", ch.Name(), err)
	}
	var out []Object
	for _, crd := range ch.CRDObjects() {
		objs, err := Split(path.Join(root, crd.Filename), crd.File.Data)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	names := make([]string, 0, len(rendered))
	for name := range rendered {
		base := path.Base(name)
		if strings.HasPrefix(base, "_") || strings.EqualFold(base, "NOTES.txt") || strings.TrimSpace(rendered[name]) == "" {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		objs, err := Split(path.Join(root, strings.TrimPrefix(name, ch.Name()+"/")), []byte(rendered[name]))
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// UnpackDependencyFiles is UnpackDependency for any file of a folder: the file itself when it
// is not a packaged dependency.
func UnpackDependencyFiles(name string, data []byte) ([]File, error) {
	files, ok, err := UnpackDependency(name, data)
	if err != nil || ok {
		return files, err
	}
	return []File{{Path: name, Text: string(data)}}, nil
}

// UnpackDependency turns a chart's packaged dependency (a file charts/NAME.tgz anywhere in a
// chart folder, as `helm dependency update` leaves it) into the files of charts/NAME/, which
// Helm loads as it loads the archive; ok is false for any other file. Manifest files travel
// as text in a run's payloads, which an archive's bytes would not survive.
func UnpackDependency(name string, data []byte) (files []File, ok bool, err error) {
	sub, isArchive := strings.CutSuffix(name, ".tgz")
	if !isArchive || path.Base(path.Dir(name)) != "charts" {
		return nil, false, nil
	}
	inner, err := loader.LoadArchiveFiles(bytes.NewReader(data))
	if err != nil {
		return nil, true, fmt.Errorf("dependency %s: %v", name, err)
	}
	for _, f := range inner {
		more, nested, err := UnpackDependency(path.Join(sub, f.Name), f.Data)
		if err != nil {
			return nil, true, err
		}
		if !nested {
			more = []File{{Path: path.Join(sub, f.Name), Text: string(f.Data)}}
		}
		files = append(files, more...)
	}
	return files, true, nil
}
