// Package remote is Gantry's Git Experience: the registry of entities kept in Git (a pipeline,
// input set, template, service, environment, infrastructure definition or connector file at a
// path of a repository, reached through a Git connector; a policy library at a folder) and the
// reader that gathers the files
// a run needs at one commit per repository and branch, recording each file's commit.
package remote

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// The kinds of remote entities, as the registry and the API name them.
const (
	KindPipeline       = "pipeline"
	KindInputSet       = "inputSet"
	KindTemplate       = "template"
	KindService        = "service"
	KindEnvironment    = "environment"
	KindInfrastructure = "infrastructure"
	KindConnector      = "connector"
	// KindPolicy is a policy library: a folder of Rego policies and its sets.yaml, joined to
	// the server's own library for every start's on-run decision.
	KindPolicy = "policy"
)

// Kinds are the kinds an entry may have.
var Kinds = []string{KindPipeline, KindInputSet, KindTemplate, KindService, KindEnvironment, KindInfrastructure, KindConnector, KindPolicy}

// rootKeys are the YAML root keys of each kind's files.
var rootKeys = map[string][]string{
	KindPipeline: {"pipeline"}, KindInputSet: {"inputSet", "overlayInputSet"}, KindTemplate: {"template"},
	KindService: {"service"}, KindEnvironment: {"environment"}, KindInfrastructure: {"infrastructureDefinition"},
	KindConnector: {"connector"},
}

// Entry is one entity kept in Git, with the reference's Git Experience names.
type Entry struct {
	Kind       string `json:"kind" yaml:"kind"`
	Identifier string `json:"identifier" yaml:"identifier"`
	// ConnectorRef is the Git, Github, Gitlab or Bitbucket connector (a file of the server's
	// pipelines directory) that reaches the repository; RepoName names the repository for an
	// Account connector.
	ConnectorRef string `json:"connectorRef" yaml:"connectorRef"`
	RepoName     string `json:"repoName,omitempty" yaml:"repoName,omitempty"`
	FilePath     string `json:"filePath" yaml:"filePath"`
	// Branch is the default branch: what a start that names none reads.
	Branch string `json:"branch" yaml:"branch"`
	// DeclaredIn is the declarative file that lists the entry (empty: registered through the
	// API, kept in the data directory).
	DeclaredIn string `json:"declaredIn,omitempty" yaml:"-"`
}

// Key is the entry's kind and identifier, unique in a registry.
func (e Entry) Key() string { return e.Kind + "/" + e.Identifier }

// Check reports what is missing or wrong in an entry, naming the field.
func (e *Entry) Check() error {
	given := strings.TrimSpace(e.FilePath)
	e.FilePath = strings.TrimPrefix(path.Clean("/"+given), "/")
	if e.FilePath == "" && given != "" && e.Kind == KindPolicy {
		e.FilePath = "." // a policy library at the repository's root
	}
	var missing []string
	for _, f := range []struct{ name, v string }{{"kind", e.Kind}, {"identifier", e.Identifier}, {"connectorRef", e.ConnectorRef}, {"filePath", e.FilePath}, {"branch", e.Branch}} {
		if strings.TrimSpace(f.v) == "" {
			missing = append(missing, f.name)
		}
	}
	switch {
	case len(missing) > 0:
		return fmt.Errorf("a remote entity needs %s", strings.Join(missing, ", "))
	case !slices.Contains(Kinds, e.Kind):
		return fmt.Errorf("kind %q is not one of %s", e.Kind, strings.Join(Kinds, ", "))
	case !identifierRe.MatchString(e.Identifier):
		return fmt.Errorf("identifier %q is not a valid identifier", e.Identifier)
	case e.Kind == KindPolicy:
		if x := ext(e.FilePath); x != "" && x != "." {
			return fmt.Errorf("filePath %s of a policy library is a folder (its *.rego files and sets.yaml), not a file", e.FilePath)
		}
	case ext(e.FilePath) != ".yaml" && ext(e.FilePath) != ".yml":
		return fmt.Errorf("filePath %s is not a .yaml or .yml file", e.FilePath)
	}
	return nil
}

var identifierRe = regexp.MustCompile(`^[a-zA-Z_][0-9a-zA-Z_]{0,127}$`)

func ext(p string) string { return strings.ToLower(path.Ext(p)) }

// Registry is the remote entities a server knows: those of its declarative file (read at
// start, so that the registry itself can live in Git) and those registered through the API,
// kept in a file of the data directory. Safe for concurrent use.
type Registry struct {
	mu       sync.Mutex
	declared map[string]Entry
	stored   map[string]Entry
	path     string // where stored entries are kept; "" keeps them in memory
}

// registryFile is the declarative file's form.
type registryFile struct {
	RemoteEntities []Entry `yaml:"remoteEntities"`
}

// Open reads the declarative file (none when "") and the stored entries at storePath.
func Open(declared, storePath string) (*Registry, error) {
	r := &Registry{declared: map[string]Entry{}, stored: map[string]Entry{}, path: storePath}
	if declared != "" {
		b, err := os.ReadFile(declared)
		if err != nil {
			return nil, fmt.Errorf("read the remote entities file: %w", err)
		}
		var f registryFile
		dec := yaml.NewDecoder(strings.NewReader(string(b)))
		dec.KnownFields(true)
		if err := dec.Decode(&f); err != nil {
			return nil, fmt.Errorf("%s: %v (the file lists remoteEntities: kind, identifier, connectorRef, repoName, filePath, branch)", declared, err)
		}
		for i, e := range f.RemoteEntities {
			if err := e.Check(); err != nil {
				return nil, fmt.Errorf("%s: remoteEntities[%d]: %v", declared, i, err)
			}
			if _, dup := r.declared[e.Key()]; dup {
				return nil, fmt.Errorf("%s: %s %s is declared twice", declared, e.Kind, e.Identifier)
			}
			e.DeclaredIn = declared
			r.declared[e.Key()] = e
		}
	}
	if storePath != "" {
		b, err := os.ReadFile(storePath)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("read the registered remote entities: %w", err)
		default:
			var list []Entry
			if err := json.Unmarshal(b, &list); err != nil {
				return nil, fmt.Errorf("%s is not a list of remote entities: %v", storePath, err)
			}
			for _, e := range list {
				r.stored[e.Key()] = e
			}
		}
	}
	return r, nil
}

// List returns every entry, by kind and identifier.
func (r *Registry) List() []Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Entry
	for k, e := range r.stored {
		if _, shadowed := r.declared[k]; !shadowed {
			out = append(out, e)
		}
	}
	for _, e := range r.declared {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

// Find returns the entry of a kind and identifier.
func (r *Registry) Find(kind, id string) (Entry, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.declared[kind+"/"+id]; ok {
		return e, true
	}
	e, ok := r.stored[kind+"/"+id]
	return e, ok
}

// Empty reports whether no entity is registered.
func (r *Registry) Empty() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.declared)+len(r.stored) == 0
}

// ErrDeclared refuses to change an entry of the declarative file through the API.
var ErrDeclared = errors.New("declared in the remote entities file")

// Put registers or replaces an entry (with its identifier) and keeps the registry.
func (r *Registry) Put(e Entry) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d, ok := r.declared[e.Key()]; ok {
		return fmt.Errorf("%s %s is %w %s; change it there", e.Kind, e.Identifier, ErrDeclared, d.DeclaredIn)
	}
	e.DeclaredIn = ""
	old, had := r.stored[e.Key()]
	r.stored[e.Key()] = e
	if err := r.save(); err != nil {
		if had {
			r.stored[e.Key()] = old
		} else {
			delete(r.stored, e.Key())
		}
		return err
	}
	return nil
}

// Remove unregisters an entry; ok is false when none was registered.
func (r *Registry) Remove(kind, id string) (ok bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := kind + "/" + id
	if d, ok := r.declared[key]; ok {
		return false, fmt.Errorf("%s %s is %w %s; remove it there", kind, id, ErrDeclared, d.DeclaredIn)
	}
	old, had := r.stored[key]
	if !had {
		return false, nil
	}
	delete(r.stored, key)
	if err := r.save(); err != nil {
		r.stored[key] = old
		return false, err
	}
	return true, nil
}

// save writes the stored entries atomically (a crash leaves the old list or the new one).
func (r *Registry) save() error {
	if r.path == "" {
		return nil
	}
	list := make([]Entry, 0, len(r.stored))
	for _, e := range r.stored {
		list = append(list, e)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Key() < list[j].Key() })
	b, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(r.path), 0o755); err != nil {
		return fmt.Errorf("keep the registered remote entities: %w", err)
	}
	tmp := r.path + ".part"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("keep the registered remote entities: %w", err)
	}
	if err := os.Rename(tmp, r.path); err != nil {
		return fmt.Errorf("keep the registered remote entities: %w", err)
	}
	return nil
}
