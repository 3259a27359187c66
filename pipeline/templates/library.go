// Package templates finds template files and expands the template links of a pipeline in place
// (spec 19): every step, step group, stage or pipeline that links a template is replaced by the
// template's body with the use site's identity and inputs, before the pipeline is validated.
package templates

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
)

// StableTag marks the stable version of a template in its tags (spec 19.4.3).
const StableTag = "gantry.stable"

// Scopes of template documents (spec 19.4), by orgIdentifier and projectIdentifier: both is
// project scope, org only org scope, neither account scope. A document naming neither matches
// a reference with either prefix (`account.x`, `org.x`), so a team writing templates only for
// Gantry need not invent an organisation; an unprefixed reference never falls back to it.
const (
	scopeAccount = "account"
	scopeOrg     = "org"
	scopeProject = "project"
)

// Doc is one template version in a file.
type Doc struct {
	File   string
	Src    []byte
	T      *pipeline.Template
	scope  string
	stable bool
	// twins are other files defining the same identifier and version differently: a link to
	// it is an error naming them all (one that is not linked is only warned about).
	twins []string
}

// Key names the document as messages and execution records do: identifier@version.
func (d *Doc) Key() string { return d.T.Identifier + "@" + d.T.VersionLabel }

// Library is the templates found in a set of folders.
type Library struct {
	byID    map[string][]*Doc
	Sources diag.Sources
	Dirs    []string
	// Partial says the templates found may not be all there are (a plain validate: account- and
	// org-level templates, and templates kept in another repository, live elsewhere). A link to
	// a template not found is then a warning and its body is not checked; a run needs it.
	Partial bool
	// FromGit are the templates read from Git at their links' gitBranch (remote entities), by
	// identifier: their links' gitBranch is honoured, not ignored.
	FromGit map[string]bool
}

// Empty reports whether the library holds no template.
func (l *Library) Empty() bool { return l == nil || len(l.byID) == 0 }

// IsTemplateFile reports whether a YAML text's root key is `template:`, without parsing it.
func IsTemplateFile(src []byte) bool { return pipeline.RootKey(src) == "template" }

// Load reads the template files of dirs (every *.yaml and *.yml at any depth; a file there that
// is not a template is reported and skipped) and of beside (the pipeline's own folder: only the
// files whose root is `template:`, not its subfolders). Missing folders hold nothing.
func Load(dirs []string, beside string) (*Library, diag.List) {
	l := &Library{byID: map[string][]*Doc{}, Sources: diag.Sources{}, Dirs: dirs}
	var diags diag.List
	seen := map[string]bool{}
	for _, dir := range dirs {
		_ = filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !isYAML(path) || seen[path] {
				return nil
			}
			seen[path] = true
			l.loadFile(path, true, &diags)
			return nil
		})
	}
	if beside != "" {
		names, _ := filepath.Glob(filepath.Join(beside, "*.y*ml"))
		sort.Strings(names)
		for _, name := range names {
			if isYAML(name) && !seen[name] {
				seen[name] = true
				l.loadFile(name, false, &diags)
			}
		}
	}
	l.checkStable(&diags)
	return l, diags
}

func isYAML(path string) bool {
	ext := filepath.Ext(path)
	return ext == ".yaml" || ext == ".yml"
}

func (l *Library) loadFile(path string, inTemplatesDir bool, diags *diag.List) {
	src, err := os.ReadFile(path)
	if err != nil {
		diags.Errorf(diag.Pos{File: path}, "io", "cannot read template file: %v", err)
		return
	}
	if !IsTemplateFile(src) {
		if inTemplatesDir {
			diags.Warnf(diag.Pos{File: path, Line: 1, Col: 1}, "not-a-template", "%s is in a templates folder but its root is not `template:`; it is ignored", path)
		}
		return
	}
	l.Sources[path] = src
	f, d := pipeline.Parse(path, src)
	diags.Add(d...)
	if f.Template == nil || d.HasErrors() {
		return
	}
	t := f.Template
	doc := &Doc{File: path, Src: src, T: t, stable: t.Tags[StableTag] == "true"}
	switch {
	case t.OrgIdentifier != "" && t.ProjectIdentifier != "":
		doc.scope = scopeProject
	case t.OrgIdentifier != "":
		doc.scope = scopeOrg
	case t.ProjectIdentifier != "":
		diags.Errorf(pipeline.NodePos(path, pipeline.Key(t.Node, "projectIdentifier")), "template-scope",
			"template %s names a projectIdentifier without an orgIdentifier", t.Identifier).
			SetHint("add the orgIdentifier, or remove both for a template every scope may use")
		return
	default:
		doc.scope = scopeAccount
	}
	for _, other := range l.byID[t.Identifier] {
		if other.T.VersionLabel == t.VersionLabel && other.scope == doc.scope &&
			other.T.OrgIdentifier == t.OrgIdentifier && other.T.ProjectIdentifier == t.ProjectIdentifier {
			if sameBody(other.T.Node, t.Node) {
				return // a copy of the same template is no conflict
			}
			other.twins = append(other.twins, path)
			diags.Warnf(pipeline.NodePos(path, pipeline.ValueAt(t.Node, "versionLabel")), "duplicate-template",
				"template %s version %s is defined twice, differently: here and in %s; a pipeline that links it is refused", t.Identifier, t.VersionLabel, other.File).
				SetHint("give one of them another versionLabel, or delete one")
			return
		}
	}
	l.byID[t.Identifier] = append(l.byID[t.Identifier], doc)
}

// checkStable reports two versions of one template both tagged stable.
func (l *Library) checkStable(diags *diag.List) {
	for _, docs := range l.byID {
		var stable []*Doc
		for _, d := range docs {
			if d.stable {
				stable = append(stable, d)
			}
		}
		for _, d := range stable[min(1, len(stable)):] {
			if d.scope == stable[0].scope && d.T.OrgIdentifier == stable[0].T.OrgIdentifier && d.T.ProjectIdentifier == stable[0].T.ProjectIdentifier {
				diags.Errorf(pipeline.NodePos(d.File, pipeline.ValueAt(d.T.Node, "tags")), "duplicate-stable",
					"template %s has two stable versions: %s here and %s in %s", d.T.Identifier, d.T.VersionLabel, stable[0].T.VersionLabel, stable[0].File).
					SetHint("keep the %s: \"true\" tag on one version", StableTag)
			}
		}
	}
}

// lookupError is a failed lookup: a stable code and a message with a hint.
type lookupError struct {
	code, msg, hint string
}

// MissingTemplate is the code of a link to a template, or a version of it, that is not among
// the templates found.
const MissingTemplate = "missing-template"

// sameBody reports whether two template documents say the same, whatever their layout.
func sameBody(a, b *yaml.Node) bool {
	x, err1 := yaml.Marshal(a)
	y, err2 := yaml.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// find resolves a reference (`[account.|org.]id`) and an optional version label made from a
// document at scope from; a template defined twice, differently, is an error naming the files.
func (l *Library) find(ref, version, from string) (*Doc, *lookupError) {
	d, le := l.lookup(ref, version, from)
	if le == nil && len(d.twins) > 0 {
		return nil, &lookupError{"duplicate-template",
			fmt.Sprintf("template %s version %s is defined twice, differently: in %s and %s", d.T.Identifier, d.T.VersionLabel, d.File, strings.Join(d.twins, " and ")),
			"give one of them another versionLabel, or delete one"}
	}
	return d, le
}

// lookup is find without the check for twins.
func (l *Library) lookup(ref, version, from string) (*Doc, *lookupError) {
	want, id := scopeProject, ref
	switch {
	case strings.HasPrefix(ref, "account."):
		want, id = scopeAccount, strings.TrimPrefix(ref, "account.")
	case strings.HasPrefix(ref, "org."):
		want, id = scopeOrg, strings.TrimPrefix(ref, "org.")
	}
	if !allowedFrom(from, want) {
		return nil, &lookupError{"template-scope-violation", fmt.Sprintf("a template at %s scope cannot link %s, a template at %s scope", from, ref, want),
			"a template may link templates of its own scope or above (project → org → account)"}
	}
	var cands []*Doc
	for _, d := range l.byID[id] {
		if d.scope == want || (want == scopeOrg && d.scope == scopeAccount) {
			cands = append(cands, d)
		}
	}
	var exact []*Doc
	for _, d := range cands {
		if d.scope == want {
			exact = append(exact, d)
		}
	}
	if len(exact) > 0 {
		cands = exact
	}
	if len(cands) == 0 {
		hint := fmt.Sprintf("put a file whose root is `template:` with identifier %s in %s", id, l.where())
		if others := l.byID[id]; len(others) > 0 {
			hint = fmt.Sprintf("template %s exists at %s scope (%s): link it as %s", id, others[0].scope, others[0].File, prefixFor(others[0].scope)+id)
		}
		return nil, &lookupError{MissingTemplate, fmt.Sprintf("template %s is not defined", ref), hint}
	}
	owners := map[string]string{}
	for _, d := range cands {
		owners[d.T.OrgIdentifier+"/"+d.T.ProjectIdentifier] = d.File
	}
	if len(owners) > 1 {
		var files []string
		for _, f := range owners {
			files = append(files, f)
		}
		sort.Strings(files)
		return nil, &lookupError{"ambiguous-template", fmt.Sprintf("template %s matches documents of several organisations or projects: %s", ref, strings.Join(files, ", ")),
			"keep one organisation and project per templates folder"}
	}
	var labels []string
	for _, d := range cands {
		labels = append(labels, d.T.VersionLabel)
		if version != "" && d.T.VersionLabel == version {
			return d, nil
		}
	}
	sort.Strings(labels)
	if version != "" {
		return nil, &lookupError{MissingTemplate, fmt.Sprintf("template %s has no version %s", ref, version),
			fmt.Sprintf("versions: %s", strings.Join(labels, ", "))}
	}
	var stable []*Doc
	for _, d := range cands {
		if d.stable {
			stable = append(stable, d)
		}
	}
	switch {
	case len(stable) == 1:
		return stable[0], nil
	case len(cands) == 1:
		return cands[0], nil
	}
	return nil, &lookupError{"no-stable-version", fmt.Sprintf("template %s has versions %s and none is stable", ref, strings.Join(labels, ", ")),
		fmt.Sprintf("give a versionLabel, or tag one version `%s: \"true\"`", StableTag)}
}

// allowedFrom reports whether a document at scope from may link a template at scope want.
func allowedFrom(from, want string) bool {
	rank := map[string]int{scopeProject: 0, scopeOrg: 1, scopeAccount: 2}
	return rank[want] >= rank[from]
}

func prefixFor(scope string) string {
	switch scope {
	case scopeAccount:
		return "account."
	case scopeOrg:
		return "org."
	}
	return ""
}

func (l *Library) where() string {
	if len(l.Dirs) == 0 {
		return "a templates folder (--templates DIR)"
	}
	return strings.Join(l.Dirs, ", ")
}

// Lookup finds the template a reference (`[account.|org.]id`) and an optional version label
// name, as a project-level document would link it; the error says what is missing and what to
// do, and its code is Code.
func (l *Library) Lookup(ref, version string) (*Doc, *LookupError) {
	if l == nil {
		return nil, &LookupError{Code: MissingTemplate, Message: fmt.Sprintf("template %s is not defined", ref), Hint: "no templates folder was found"}
	}
	d, e := l.find(ref, version, scopeProject)
	if e != nil {
		return nil, &LookupError{Code: e.code, Message: e.msg, Hint: e.hint}
	}
	return d, nil
}

// LookupError is a failed Lookup.
type LookupError struct{ Code, Message, Hint string }
