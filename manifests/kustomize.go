package manifests

import (
	"fmt"
	"path"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Kustomize builds the kustomization in folder dir of files (paths relative to one root, as a
// store holds them) with the Kustomize API, as `kustomize build dir` would, and splits the
// result into objects. Plugins are not loaded; files outside the given ones do not exist.
func Kustomize(files []File, dir string) ([]Object, error) {
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
