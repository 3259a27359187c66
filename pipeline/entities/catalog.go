// Package entities loads the CD entity files (services, environments, infrastructure
// definitions, connectors) from directories and resolves a pipeline's Deployment stages against
// them into plan.Deployment values, manifests included (spec 15.1).
package entities

import (
	"os"
	"path/filepath"
	"sort"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/templates"
)

// Catalog is the entities found in a set of directories.
type Catalog struct {
	Services     map[string]*pipeline.File
	Environments map[string]*pipeline.File
	Infras       map[string]*pipeline.File // by environment and identifier: "prod/eks_eu"
	EnvGroups    map[string]*pipeline.File
	Connectors   map[string]*pipeline.File
	Secrets      map[string]*pipeline.File // SSH credentials
	Freezes      map[string]*pipeline.File // deployment freeze windows
	Monitored    map[string]*pipeline.File // monitored services, read by Verify steps
	// Unsupported are valid entity files Gantry cannot run yet, by kind and identifier
	// ("service/web"): a reference to one is unsupported, not missing.
	Unsupported map[string]*pipeline.File
	Sources     diag.Sources
	Dirs        []string
	// Templates are the templates found beside the pipeline: CustomDeployment infrastructures
	// and services name their deployment template among them.
	Templates *templates.Library

	check   func(*pipeline.File) diag.List
	checked map[string]bool // template files checked when first used
}

// IsEntityFile reports whether a YAML text's root key is one of the entity kinds, without
// parsing it: manifest folders hold templates that are not YAML until rendered.
func IsEntityFile(src []byte) bool {
	switch pipeline.RootKey(src) {
	case "service", "environment", "infrastructureDefinition", "connector", "environmentGroup", "secret", "freeze", "monitoredService":
		return true
	}
	return false
}

// Load reads every *.yaml and *.yml file directly in dirs whose root is an entity, parses it
// and checks it with check (pipeline/validate's File, passed by the front end). Other files
// are ignored. An identifier defined twice is an error.
func Load(dirs []string, check func(*pipeline.File) diag.List) (*Catalog, diag.List) {
	c := &Catalog{Services: map[string]*pipeline.File{}, Environments: map[string]*pipeline.File{},
		Infras: map[string]*pipeline.File{}, Connectors: map[string]*pipeline.File{}, Unsupported: map[string]*pipeline.File{},
		EnvGroups: map[string]*pipeline.File{}, Secrets: map[string]*pipeline.File{}, Freezes: map[string]*pipeline.File{},
		Monitored: map[string]*pipeline.File{}, Sources: diag.Sources{}, Dirs: dirs, check: check, checked: map[string]bool{}}
	var diags diag.List
	seen := map[string]bool{}
	for _, dir := range dirs {
		// The pipeline's own folder is always read; naming it again (--entities .) is no error.
		if abs, err := filepath.Abs(dir); err == nil {
			if seen[abs] {
				continue
			}
			seen[abs] = true
		}
		names, _ := filepath.Glob(filepath.Join(dir, "*.y*ml"))
		sort.Strings(names)
		for _, name := range names {
			if ext := filepath.Ext(name); ext != ".yaml" && ext != ".yml" {
				continue
			}
			src, err := os.ReadFile(name)
			if err != nil || !IsEntityFile(src) {
				continue
			}
			c.Sources[name] = src
			f, d := pipeline.Parse(name, src)
			diags.Add(d...)
			if f.Root == nil || len(d.Invalid()) > 0 {
				continue
			}
			vd := check(f)
			diags.Add(vd...)
			if len(d.UnsupportedOnly())+len(vd.UnsupportedOnly()) > 0 {
				if kind, id := entityKey(f); kind != "" {
					c.Unsupported[kind+"/"+id] = f
				}
				continue
			}
			c.add(f, &diags)
		}
	}
	return c, diags
}

// entityKey is the kind ("service", "environment", "infrastructure definition", "connector")
// and identifier of an entity file.
func entityKey(f *pipeline.File) (kind, id string) {
	switch {
	case f.Service != nil:
		return "service", f.Service.Identifier
	case f.Environment != nil:
		return "environment", f.Environment.Identifier
	case f.Infrastructure != nil:
		// Infrastructure identifiers are unique within their environment.
		return "infrastructure definition", InfraKey(f.Infrastructure.EnvironmentRef, f.Infrastructure.Identifier)
	case f.EnvGroup != nil:
		return "environment group", f.EnvGroup.Identifier
	case f.Connector != nil:
		return "connector", f.Connector.Identifier
	case f.Secret != nil:
		return "secret", f.Secret.Identifier
	case f.Freeze != nil:
		return "freeze", f.Freeze.Identifier
	case f.Monitored != nil:
		return "monitored service", f.Monitored.Identifier
	}
	return "", ""
}

func (c *Catalog) add(f *pipeline.File, diags *diag.List) {
	what, id := entityKey(f)
	m := map[string]map[string]*pipeline.File{"service": c.Services, "environment": c.Environments,
		"infrastructure definition": c.Infras, "connector": c.Connectors, "environment group": c.EnvGroups, "secret": c.Secrets, "freeze": c.Freezes,
		"monitored service": c.Monitored}[what]
	if m == nil {
		return
	}
	if prev, ok := m[id]; ok {
		diags.Errorf(pipeline.NodePos(f.Name, f.Root), "duplicate-identifier", "%s %q is defined twice", what, id).
			SetHint("it is also defined in %s; identifiers of one kind must be unique across the entity directories", prev.Name)
		return
	}
	m[id] = f
}

// InfraKey is the catalog key of an infrastructure definition: its environment and identifier.
func InfraKey(envRef, id string) string {
	return pipeline.LocalRef(envRef) + "/" + pipeline.LocalRef(id)
}
