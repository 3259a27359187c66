package remote

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gantry-cd/gantry/contract"
)

// Checkout lays out a checkout of a repository (a pull request's branch in CI) as the server
// lays out a start: every pipeline, input set, template and entity file of the tree in one
// workspace, named by kind and identifier, so that links resolve between them as they will
// once registered. It returns the workspace and its pipeline files by their paths in the
// checkout. Files over the snapshot limits are left out, as a server's fetch leaves them out.
func Checkout(dir string) (*Workspace, map[string]string, error) {
	tmp, err := os.MkdirTemp("", "gantry-checkout-*")
	if err != nil {
		return nil, nil, err
	}
	ws := &Workspace{Dir: tmp, names: map[string]string{}}
	pipelines := map[string]string{}
	seen := map[string]string{}
	files, total := 0, int64(0)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if x := strings.ToLower(filepath.Ext(p)); x != ".yaml" && x != ".yml" {
			return nil
		}
		info, err := d.Info()
		if err != nil || info.Size() > contract.MaxSnapshotFile {
			return err
		}
		if files++; files > contract.MaxSnapshotFiles {
			return fmt.Errorf("%s holds more than %d YAML files", dir, contract.MaxSnapshotFiles)
		}
		if total += info.Size(); total > contract.MaxSnapshotBytes {
			return fmt.Errorf("%s holds more than %d MiB of YAML files", dir, contract.MaxSnapshotBytes>>20)
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		kind, id := Identify(src)
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if kind == "" || kind == "unparsed" || id == "" {
			if kind == "unparsed" && strings.HasPrefix(rel, ".harness/") {
				// Broken YAML where the team keeps its Harness files: validated, so reported.
				kind, id = KindPipeline, "unparsed-"+fmt.Sprint(files)
			} else {
				return nil
			}
		}
		if other, dup := seen[kind+"/"+id]; dup {
			return fmt.Errorf("%s %s is defined twice: %s and %s", kind, id, other, rel)
		}
		seen[kind+"/"+id] = rel
		name := filepath.Join(tmp, kind+"-"+id+filepath.Ext(p))
		if err := os.WriteFile(name, src, 0o600); err != nil {
			return err
		}
		ws.names[name] = rel
		if kind == KindPipeline {
			pipelines[rel] = name
		}
		return nil
	})
	if err != nil {
		ws.Close()
		return nil, nil, err
	}
	return ws, pipelines, nil
}

// Sorted returns a map's keys in order.
func Sorted(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Within names the workspace's files as files of a repository at a commit ("app@2f8a720fe7fc:"
// before each path), for a checkout read from Git.
func (w *Workspace) Within(prefix string) {
	for k, v := range w.names {
		w.names[k] = prefix + v
	}
}
