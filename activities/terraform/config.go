package terraform

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/gantry-cd/gantry/activities/gitstore"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/stepspec"
)

// Config is everything a plan or an apply is made of, fetched: the root module's files, the
// var files in order, the backend configuration and the settings. It is what a provisioner
// keeps (sealed) so that a rollback re-applies exactly what was applied. Values keep their
// secret references (`<+secrets.getValue(...)>`); they are expanded only when a command runs.
type Config struct {
	// Source says where the files came from, for the log: a repository and commit, or inline.
	Source    string            `json:"source"`
	Files     map[string]string `json:"files"` // relative to the root module
	VarFiles  []NamedText       `json:"varFiles,omitempty"`
	Backend   string            `json:"backend,omitempty"` // key = value lines
	Workspace string            `json:"workspace,omitempty"`
	Targets   []string          `json:"targets,omitempty"`
	Env       []EnvVar          `json:"env,omitempty"`
}

// NamedText is a var file: where it came from and its content.
type NamedText struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

// EnvVar is one of the step's environmentVariables; a Secret's value names the secret.
type EnvVar struct {
	Name  string `json:"name"`
	Type  string `json:"type,omitempty"`
	Value string `json:"value"`
}

// maxConfigBytes bounds a configuration: it travels sealed through Temporal, whose payloads
// stop at 2 MB, with its plan.
const maxConfigBytes = 512 << 10

// fetchConfig gathers a configuration's files: inline ones as written, Git ones through the
// worker's Git fetcher at the branch's head (or the commit named).
func fetchConfig(ctx context.Context, git *gitstore.Fetcher, refs *plan.StepRefs, f *stepspec.TerraformFiles) (*Config, error) {
	if f.ConfigFiles == nil || f.ConfigFiles.Store == nil || f.ConfigFiles.Store.Spec == nil {
		return nil, contract.Fail(contract.Unknown, "the configuration names no configFiles with a store")
	}
	c := &Config{Files: map[string]string{}, Workspace: f.Workspace, Targets: stringList(f.TargetList)}
	st := f.ConfigFiles.Store
	switch st.Type {
	case "Inline":
		c.Source, c.Files["main.tf"] = "inline", st.Spec.Content
	default:
		folder := strings.Trim(path.Clean("/"+st.Spec.FolderPath), "/")
		files, where, err := fetchStore(ctx, git, refs, st, []string{st.Spec.FolderPath})
		if err != nil {
			return nil, err
		}
		c.Source = where + " " + st.Spec.FolderPath
		for _, file := range files {
			rel := strings.TrimPrefix(strings.TrimPrefix(file.Path, folder), "/")
			if folder == "" {
				rel = file.Path
			}
			c.Files[rel] = file.Text
		}
	}
	for _, v := range f.VarFiles {
		if v.VarFile == nil || v.VarFile.Spec == nil {
			return nil, contract.Fail(contract.Unknown, "a var file of the configuration has no spec")
		}
		texts, err := varTexts(ctx, git, refs, v.VarFile.Type, v.VarFile.Spec, "var file "+v.VarFile.Identifier)
		if err != nil {
			return nil, err
		}
		c.VarFiles = append(c.VarFiles, texts...)
	}
	if b := f.BackendConfig; b != nil && b.Spec != nil && (b.Type != "" || b.Spec.Content != "" || b.Spec.Store != nil) {
		texts, err := varTexts(ctx, git, refs, b.Type, b.Spec, "backendConfig")
		if err != nil {
			return nil, err
		}
		for _, t := range texts {
			c.Backend += t.Text + "\n"
		}
	}
	for _, e := range f.EnvironmentVariables {
		c.Env = append(c.Env, EnvVar{Name: e.Name, Type: e.Type, Value: string(e.Value)})
	}
	if n := c.size(); n > maxConfigBytes {
		return nil, contract.Fail(contract.Verification, "the configuration is %d KiB; Gantry keeps configurations of at most %d KiB with their provisioner", n>>10, maxConfigBytes>>10)
	}
	return c, nil
}

// varTexts reads an Inline or Remote var file (or backend configuration).
func varTexts(ctx context.Context, git *gitstore.Fetcher, refs *plan.StepRefs, typ string, s *stepspec.TerraformVarFileSpec, what string) ([]NamedText, error) {
	if typ == "Inline" || s.Store == nil || s.Store.Spec == nil {
		return []NamedText{{Name: what, Text: s.Content}}, nil
	}
	files, where, err := fetchStore(ctx, git, refs, s.Store, stringList(s.Store.Spec.PathList))
	if err != nil {
		if s.Optional == "true" {
			return nil, nil
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	var out []NamedText
	for _, f := range files {
		out = append(out, NamedText{Name: where + " " + f.Path, Text: f.Text})
	}
	return out, nil
}

// fetchStore reads paths of a Git store through the connector resolved before the run.
func fetchStore(ctx context.Context, git *gitstore.Fetcher, refs *plan.StepRefs, st *stepspec.TerraformStore, paths []string) ([]plan.File, string, error) {
	var gc plan.GitConnector
	ok := false
	if refs != nil {
		gc, ok = refs.Git[st.Spec.ConnectorRef]
	}
	if !ok {
		return nil, "", contract.Fail(contract.Verification, "connector %q of a %s store was not resolved before the run; name a Git connector defined beside the pipeline", st.Spec.ConnectorRef, st.Type)
	}
	gs := &plan.GitStore{Type: st.Type, Connector: gc, RepoName: st.Spec.RepoName, Paths: paths, AllFiles: true}
	if st.Spec.GitFetchType == "Commit" {
		gs.Commit = st.Spec.CommitID
	} else {
		gs.Branch = st.Spec.Branch
	}
	got, err := git.Fetch(ctx, gs)
	if err != nil {
		return nil, "", err
	}
	return got.Files, fmt.Sprintf("%s@%s", gs.RepoDisplay(), shortCommit(got.Commit)), nil
}

// write lays the configuration out in dir: the root module's files, the var files as
// .gantry-N.tfvars and the backend configuration, with secret references in the last two
// expanded; it returns their paths.
func (c *Config) write(dir string, expand func(string) (string, error)) (varFiles []string, backend string, err error) {
	for name, text := range c.Files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if !strings.HasPrefix(p, filepath.Clean(dir)+string(filepath.Separator)) {
			return nil, "", fmt.Errorf("file %q lies outside the configuration's folder", name)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return nil, "", err
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			return nil, "", err
		}
	}
	for i, v := range c.VarFiles {
		p := filepath.Join(dir, fmt.Sprintf(".gantry-%d.tfvars", i+1))
		text, err := expand(v.Text)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", v.Name, err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			return nil, "", err
		}
		varFiles = append(varFiles, p)
	}
	if c.Backend != "" {
		backend = filepath.Join(dir, ".gantry-backend.tfbackend")
		text, err := expand(c.Backend)
		if err != nil {
			return nil, "", fmt.Errorf("backendConfig: %w", err)
		}
		if err := os.WriteFile(backend, []byte(text), 0o600); err != nil {
			return nil, "", err
		}
	}
	return varFiles, backend, nil
}

func (c *Config) size() int {
	b, _ := json.Marshal(c)
	return len(b)
}

// stringList reads a list of strings, or one string, of a rendered spec.
func stringList(v any) []string {
	switch x := v.(type) {
	case string:
		if strings.TrimSpace(x) == "" {
			return nil
		}
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s := scalar(e); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func scalar(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	default:
		return fmt.Sprint(x)
	}
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
