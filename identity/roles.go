package identity

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// Action is what a permission allows.
type Action string

// The actions a role grants (issue 54). Admin implies every other action everywhere.
const (
	// View reads executions, their trees, logs and notifications.
	View Action = "view"
	// Execute starts, reruns and retries executions and answers execution-time inputs.
	Execute Action = "execute"
	// Abort aborts, pauses, resumes and intervenes.
	Abort Action = "abort"
	// Create runs YAML that is not one of the server's pipeline files (inline YAML).
	Create Action = "create"
	// OverrideFreeze starts executions whose deployments go through deployment freezes.
	OverrideFreeze Action = "override-freeze"
	// Admin manages users, roles and tokens and reads the audit trail.
	Admin Action = "admin"
)

// Actions lists every action, in the order the docs name them.
var Actions = []Action{View, Execute, Abort, Create, OverrideFreeze, Admin}

// Role is a named set of permissions; groups hold roles.
type Role struct {
	Name        string       `yaml:"name"`
	Description string       `yaml:"description,omitempty"`
	Permissions []Permission `yaml:"permissions"`
}

// Permission grants actions on the pipelines whose identifiers match one of Pipelines
// (shell patterns: web-*, *), and, for execute, deployments into the environments whose
// identifier or type (Production, PreProduction) matches one of Environments. An empty list
// matches everything.
type Permission struct {
	Actions      []Action `yaml:"actions"`
	Pipelines    []string `yaml:"pipelines,omitempty"`
	Environments []string `yaml:"environments,omitempty"`
}

// Environment is the environment a Deployment stage deploys to.
type Environment struct {
	ID   string
	Type string
}

// Resource is what an action is asked on: a pipeline, and for execute the environment of one
// Deployment stage (nil: the pipeline alone).
type Resource struct {
	Pipeline    string
	Environment *Environment
	// Stage names the Deployment stage in refusals.
	Stage string
}

// Forbidden is an authorization refusal; its message says who, what, where and what to do.
type Forbidden struct {
	User     string
	Action   Action
	Resource Resource
	Reason   string
}

func (f *Forbidden) Error() string {
	what := "pipeline " + f.Resource.Pipeline
	if f.Resource.Pipeline == "" {
		what = "this server"
	}
	if e := f.Resource.Environment; e != nil {
		what = fmt.Sprintf("environment %s (%s) from stage %s of %s", e.ID, e.Type, f.Resource.Stage, what)
	}
	return fmt.Sprintf("%s may not %s %s: %s", f.User, f.Action, what, f.Reason)
}

// Enforcing says whether the directory defines roles. A directory without any keeps the
// behaviour before roles existed: every user may do everything (gantry server warns).
func (d *Directory) Enforcing() bool {
	if len(d.Roles) > 0 {
		return true
	}
	for _, g := range d.Groups {
		if len(g.Roles) > 0 {
			return true
		}
	}
	return false
}

// Authorize is Gantry's one authorization rule: whether u may do a on r. nil allows; a
// refusal is a *Forbidden. Approvals are not decided here: an approval step names its own
// approver groups, which the workflow checks.
func (d *Directory) Authorize(u *User, a Action, r Resource) error {
	if !d.Enforcing() {
		return nil
	}
	if u == nil {
		return &Forbidden{User: "anonymous", Action: a, Resource: r, Reason: "no user"}
	}
	roles := d.RolesOf(u)
	if len(roles) == 0 {
		return &Forbidden{User: u.Name, Action: a, Resource: r,
			Reason: fmt.Sprintf("none of the user's groups (%s) holds a role; an admin grants one with gantry role grant", strings.Join(u.Groups, ", "))}
	}
	pipelineOK := false
	for _, role := range roles {
		for _, p := range role.Permissions {
			if slices.Contains(p.Actions, Admin) {
				return nil
			}
			if !slices.Contains(p.Actions, a) || !matchAny(p.Pipelines, r.Pipeline) {
				continue
			}
			pipelineOK = true
			if e := r.Environment; e == nil || len(p.Environments) == 0 || matchAny(p.Environments, e.ID) || matchAny(p.Environments, e.Type) {
				return nil
			}
		}
	}
	names := make([]string, len(roles))
	for i, role := range roles {
		names[i] = role.Name
	}
	reason := fmt.Sprintf("no role of the user's (%s) grants %s on it", strings.Join(names, ", "), a)
	if pipelineOK {
		reason = fmt.Sprintf("the user's roles (%s) grant %s on the pipeline but not into this environment", strings.Join(names, ", "), a)
	}
	return &Forbidden{User: u.Name, Action: a, Resource: r, Reason: reason}
}

// RolesOf returns the roles u holds through its groups, each once.
func (d *Directory) RolesOf(u *User) []Role {
	var out []Role
	seen := map[string]bool{}
	for _, g := range d.Groups {
		if !slices.Contains(u.Groups, g.Name) {
			continue
		}
		for _, name := range g.Roles {
			if seen[name] {
				continue
			}
			seen[name] = true
			if role, ok := d.Role(name); ok {
				out = append(out, role)
			}
		}
	}
	return out
}

// Role returns a role by name.
func (d *Directory) Role(name string) (Role, bool) {
	for _, r := range d.Roles {
		if r.Name == name {
			return r, true
		}
	}
	return Role{}, false
}

// TriggerIdentity is the service identity a trigger acts as: the first user whose triggers
// patterns match the trigger's identifier, or nil.
func (d *Directory) TriggerIdentity(trigger string) *User {
	for i := range d.Users {
		if matchAny(d.Users[i].Triggers, trigger) && len(d.Users[i].Triggers) > 0 {
			return &d.Users[i]
		}
	}
	return nil
}

// matchAny: an empty pattern list matches everything.
func matchAny(patterns []string, s string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p, s); ok {
			return true
		}
	}
	return false
}

// checkRoles validates the roles and the groups' references to them.
func (d *Directory) checkRoles() error {
	names := map[string]bool{}
	for _, r := range d.Roles {
		if !nameRe.MatchString(r.Name) || names[r.Name] {
			return fmt.Errorf("role name %q must be unique and 1-128 letters, digits or _.@-", r.Name)
		}
		names[r.Name] = true
		if len(r.Permissions) == 0 {
			return fmt.Errorf("role %s grants nothing: give it permissions with actions", r.Name)
		}
		for _, p := range r.Permissions {
			if len(p.Actions) == 0 {
				return fmt.Errorf("role %s has a permission without actions (one of %s)", r.Name, actionList())
			}
			for _, a := range p.Actions {
				if !slices.Contains(Actions, a) {
					return fmt.Errorf("role %s: unknown action %q (one of %s)", r.Name, a, actionList())
				}
			}
			for _, pat := range append(slices.Clone(p.Pipelines), p.Environments...) {
				if _, err := path.Match(pat, ""); err != nil {
					return fmt.Errorf("role %s: bad pattern %q: %v", r.Name, pat, err)
				}
			}
		}
	}
	for _, g := range d.Groups {
		for _, r := range g.Roles {
			if !names[r] {
				return fmt.Errorf("group %s holds role %q, which is not defined under roles", g.Name, r)
			}
		}
	}
	for _, u := range d.Users {
		for _, pat := range u.Triggers {
			if _, err := path.Match(pat, ""); err != nil {
				return fmt.Errorf("user %s: bad trigger pattern %q: %v", u.Name, pat, err)
			}
		}
	}
	return nil
}

func actionList() string {
	s := make([]string, len(Actions))
	for i, a := range Actions {
		s[i] = string(a)
	}
	return strings.Join(s, ", ")
}

// Grant adds role to group (declaring the group when only its members named it).
func (d *Directory) Grant(group, role string) error {
	if _, ok := d.Role(role); !ok {
		return fmt.Errorf("no role %q: define it first with gantry role add", role)
	}
	if !nameRe.MatchString(group) {
		return fmt.Errorf("group name %q must be 1-128 letters, digits or _.@-", group)
	}
	for i := range d.Groups {
		if d.Groups[i].Name == group {
			if !slices.Contains(d.Groups[i].Roles, role) {
				d.Groups[i].Roles = append(d.Groups[i].Roles, role)
			}
			return nil
		}
	}
	d.Groups = append(d.Groups, Group{Name: group, Roles: []string{role}})
	return nil
}

// Revoke removes role from group; it reports whether the group held it.
func (d *Directory) Revoke(group, role string) bool {
	for i := range d.Groups {
		if d.Groups[i].Name == group {
			n := len(d.Groups[i].Roles)
			d.Groups[i].Roles = slices.DeleteFunc(d.Groups[i].Roles, func(r string) bool { return r == role })
			return len(d.Groups[i].Roles) < n
		}
	}
	return false
}

// SetRole defines or replaces a role.
func (d *Directory) SetRole(r Role) error {
	for i := range d.Roles {
		if d.Roles[i].Name == r.Name {
			d.Roles[i] = r
			return d.checkRoles()
		}
	}
	d.Roles = append(d.Roles, r)
	return d.checkRoles()
}

// RemoveRole deletes a role and every group's hold on it.
func (d *Directory) RemoveRole(name string) bool {
	n := len(d.Roles)
	d.Roles = slices.DeleteFunc(d.Roles, func(r Role) bool { return r.Name == name })
	for i := range d.Groups {
		d.Groups[i].Roles = slices.DeleteFunc(d.Groups[i].Roles, func(r string) bool { return r == name })
	}
	return len(d.Roles) < n
}

// SetTriggers adds trigger patterns to a user, making it a service identity.
func (d *Directory) SetTriggers(user string, patterns []string) error {
	for i := range d.Users {
		if d.Users[i].Name == user {
			for _, p := range patterns {
				if !slices.Contains(d.Users[i].Triggers, p) {
					d.Users[i].Triggers = append(d.Users[i].Triggers, p)
				}
			}
			return d.checkRoles()
		}
	}
	return fmt.Errorf("no user %q", user)
}
