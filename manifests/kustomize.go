package manifests

import (
	"fmt"
	"path"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Kustomize builds the kustomization in folder dir of files (paths relative to one root, as a
// store holds them) with the Kustomize API, as `kustomize build dir` would, and splits the
// result into objects. Plugins are not loaded; files outside the given ones do not exist.
// patches are strategic-merge patch files added to the kustomization (as the reference adds a
// service's KustomizePatches manifests to its patchesStrategicMerge), after its own patches.
func Kustomize(files []File, dir string, patches ...File) ([]Object, error) {
	fs := filesys.MakeFsInMemory()
	for _, f := range files {
		p := "/" + strings.TrimPrefix(path.Clean("/"+f.Path), "/")
		if err := fs.MkdirAll(path.Dir(p)); err != nil {
			return nil, err
		}
		if err := fs.WriteFile(p, []byte(f.Text)); err != nil {
			return nil, err
		}
	}
	root := path.Clean("/" + dir)
	if len(patches) > 0 {
		if err := addPatches(fs, root, patches); err != nil {
			return nil, fmt.Errorf("kustomize build %s: %v", strings.TrimPrefix(root, "/"), err)
		}
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, root)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %v", strings.TrimPrefix(root, "/"), err)
	}
	out, err := res.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %v", strings.TrimPrefix(root, "/"), err)
	}
	return Split(strings.TrimPrefix(root, "/")+" (kustomize build)", out)
}

// patchFolder holds the patch files inside the kustomization's folder, where Kustomize's load
// restrictor lets it read them.
const patchFolder = ".gantry-patches"

// addPatches writes the patch files below the kustomization and lists them in its `patches`
// (which applies strategic-merge files as patchesStrategicMerge does, without Kustomize's
// deprecation warning for that field).
func addPatches(fs filesys.FileSystem, root string, patches []File) error {
	var name string
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if fs.Exists(path.Join(root, n)) {
			name = path.Join(root, n)
			break
		}
	}
	if name == "" {
		return fmt.Errorf("no kustomization file (kustomization.yaml) in the folder to add patches to")
	}
	b, err := fs.ReadFile(name)
	if err != nil {
		return err
	}
	var k map[string]any
	if err := yaml.Unmarshal(b, &k); err != nil {
		return fmt.Errorf("%s: %v", strings.TrimPrefix(name, "/"), err)
	}
	if k == nil {
		k = map[string]any{}
	}
	list, _ := k["patches"].([]any)
	for i, p := range patches {
		rel := path.Join(patchFolder, fmt.Sprintf("%02d-%s", i, path.Base(p.Path)))
		if err := fs.MkdirAll(path.Join(root, patchFolder)); err != nil {
			return err
		}
		if err := fs.WriteFile(path.Join(root, rel), []byte(p.Text)); err != nil {
			return err
		}
		list = append(list, map[string]any{"path": rel})
	}
	k["patches"] = list
	out, err := yaml.Marshal(k)
	if err != nil {
		return err
	}
	return fs.WriteFile(name, out)
}
