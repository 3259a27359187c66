// Package identity is Gantry's file-based user directory: users, their groups and API tokens,
// stored only as SHA-256 hashes, and the roles groups hold. The HTTP API and the command line
// authenticate a bearer token against it and authorize what its user asks (Authorize); the
// user and groups found are what approvals record and check.
package identity

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/gantry-cd/gantry/plan"
	"gopkg.in/yaml.v3"
)

// User is one person or service account.
type User struct {
	Name   string   `yaml:"name"`
	Email  string   `yaml:"email,omitempty"`
	Groups []string `yaml:"groups,omitempty"`
	// TokenHashes are hex SHA-256 hashes of the user's API tokens; tokens themselves are never
	// stored.
	TokenHashes []string `yaml:"tokenHashes,omitempty"`
	// Triggers makes the user a service identity: the webhook and cron triggers whose
	// identifiers match these patterns start pipelines as this user, with its groups' roles.
	Triggers []string `yaml:"triggers,omitempty"`
}

// Group is a user group's own settings: where notifications to the group go besides its
// members' e-mail addresses (spec 20.3). Values may be secret references
// (<+secrets.getValue("id")>), resolved when a notification is sent.
type Group struct {
	Name              string `yaml:"name"`
	SlackWebhookURL   string `yaml:"slackWebhookUrl,omitempty"`
	MsTeamsWebhookURL string `yaml:"msTeamsWebhookUrl,omitempty"`
	PagerDutyKey      string `yaml:"pagerDutyKey,omitempty"`
	// Roles are the roles the group's members hold.
	Roles []string `yaml:"roles,omitempty"`
	// OIDCGroups are groups of the company's identity provider (values of the groups claim)
	// whose members, signed in with OIDC, are members of this group. A claim value equal to
	// the group's name maps too.
	OIDCGroups []string `yaml:"oidcGroups,omitempty"`
}

// Directory is the content of the identity file.
type Directory struct {
	Users  []User  `yaml:"users"`
	Groups []Group `yaml:"groups,omitempty"`
	// Roles grant actions on pipelines and environments; without any, every user may do
	// everything (the behaviour before roles).
	Roles []Role `yaml:"roles,omitempty"`
}

// Group returns a group by name: declared under groups, or only named by its members. A
// scoped reference (account.ops, org.ops) names the group ops.
func (d *Directory) Group(ref string) (Group, bool) {
	name := ref
	if i := strings.LastIndexByte(ref, '.'); i >= 0 && (strings.HasPrefix(ref, "account.") || strings.HasPrefix(ref, "org.")) {
		name = ref[i+1:]
	}
	for _, g := range d.Groups {
		if g.Name == name {
			return g, true
		}
	}
	for _, u := range d.Users {
		if slices.Contains(u.Groups, name) {
			return Group{Name: name}, true
		}
	}
	return Group{}, false
}

// InAnyGroup says whether u is in one of the groups refs name, matched by identifier as an
// approval step matches its approver groups (plan.LocalRef: org.ops names ops).
func (u *User) InAnyGroup(refs []string) bool {
	return slices.ContainsFunc(refs, func(ref string) bool {
		return slices.ContainsFunc(u.Groups, func(g string) bool { return plan.LocalRef(g) == plan.LocalRef(ref) })
	})
}

// Emails are the e-mail addresses of a group's members that have one.
func (d *Directory) Emails(group string) []string {
	var out []string
	for _, u := range d.Users {
		if u.Email != "" && slices.Contains(u.Groups, group) {
			out = append(out, u.Email)
		}
	}
	return out
}

// ErrUnauthenticated means the token matches no user.
var ErrUnauthenticated = errors.New("unknown or missing API token")

var nameRe = regexp.MustCompile(`^[A-Za-z0-9_.@-]{1,128}$`)

// Load reads an identity file; a missing file is an empty directory.
func Load(path string) (*Directory, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &Directory{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read identity file: %w", err)
	}
	return parse(path, b)
}

// parse decodes and checks an identity file's content.
func parse(path string, b []byte) (*Directory, error) {
	var d Directory
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&d); err != nil && err.Error() != "EOF" {
		return nil, fmt.Errorf("identity file %s: %w", path, err)
	}
	groups := map[string]bool{}
	for _, g := range d.Groups {
		if !nameRe.MatchString(g.Name) || groups[g.Name] {
			return nil, fmt.Errorf("identity file %s: group name %q must be unique and 1-128 letters, digits or _.@-", path, g.Name)
		}
		groups[g.Name] = true
	}
	seen := map[string]bool{}
	for _, u := range d.Users {
		if !nameRe.MatchString(u.Name) {
			return nil, fmt.Errorf("identity file %s: user name %q must be 1-128 letters, digits or _.@-", path, u.Name)
		}
		if seen[u.Name] {
			return nil, fmt.Errorf("identity file %s: user %q appears twice", path, u.Name)
		}
		seen[u.Name] = true
	}
	if err := d.checkRoles(); err != nil {
		return nil, fmt.Errorf("identity file %s: %w", path, err)
	}
	return &d, nil
}

// Save writes the directory with owner-only permissions.
func (d *Directory) Save(path string) error {
	b, err := yaml.Marshal(d)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// Hash is the stored form of a token.
func Hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Authenticate returns the user owning a token. Every stored hash is compared in constant time.
func (d *Directory) Authenticate(token string) (*User, error) {
	if token == "" {
		return nil, ErrUnauthenticated
	}
	h := []byte(Hash(token))
	var found *User
	for i := range d.Users {
		for _, th := range d.Users[i].TokenHashes {
			if subtle.ConstantTimeCompare(h, []byte(th)) == 1 && found == nil {
				found = &d.Users[i]
			}
		}
	}
	if found == nil {
		return nil, ErrUnauthenticated
	}
	return found, nil
}

// ErrNoGroup means a person signed in with the identity provider but neither the identity file
// lists them nor maps any of their provider groups onto one of its groups.
var ErrNoGroup = errors.New("signed in, but no group of the identity file maps any of your identity provider's groups")

// Federated is the user a person signed in with the identity provider is: the identity file's
// user of that name or e-mail address (with the file's groups), joined by every declared group
// that maps one of the person's provider groups (OIDCGroups, or the same name). The file is
// read on every request, so a mapping removed there applies to the next one.
func (d *Directory) Federated(name, email string, claimGroups []string) (*User, error) {
	u, listed := User{Name: name, Email: email}, false
	for _, fu := range d.Users {
		if fu.Name == name || (email != "" && strings.EqualFold(fu.Email, email)) {
			u.Name, u.Groups, listed = fu.Name, slices.Clone(fu.Groups), true
			if u.Email == "" {
				u.Email = fu.Email
			}
			break
		}
	}
	for _, g := range d.Groups {
		if slices.Contains(u.Groups, g.Name) {
			continue
		}
		if slices.Contains(claimGroups, g.Name) || slices.ContainsFunc(g.OIDCGroups, func(c string) bool { return slices.Contains(claimGroups, c) }) {
			u.Groups = append(u.Groups, g.Name)
		}
	}
	if len(u.Groups) == 0 && !listed {
		return nil, ErrNoGroup
	}
	sort.Strings(u.Groups)
	return &u, nil
}

// AddUser creates or updates a user, adds the groups and issues a new token, returned once.
func (d *Directory) AddUser(name, email string, groups []string) (string, error) {
	if !nameRe.MatchString(name) {
		return "", fmt.Errorf("user name %q must be 1-128 letters, digits or _.@-", name)
	}
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	token := "gty_" + hex.EncodeToString(raw)
	var u *User
	for i := range d.Users {
		if d.Users[i].Name == name {
			u = &d.Users[i]
		}
	}
	if u == nil {
		d.Users = append(d.Users, User{Name: name})
		u = &d.Users[len(d.Users)-1]
	}
	if email != "" {
		u.Email = email
	}
	set := map[string]bool{}
	for _, g := range append(u.Groups, groups...) {
		set[g] = true
	}
	u.Groups = u.Groups[:0]
	for g := range set {
		u.Groups = append(u.Groups, g)
	}
	sort.Strings(u.Groups)
	u.TokenHashes = append(u.TokenHashes, Hash(token))
	return token, nil
}

// File reads an identity file on every call but parses it only when its content changed, so
// a request costs a read and a hash, and an edit applies to the next request. The directory
// it returns is shared: callers must not change it.
type File struct {
	Path string

	mu   sync.Mutex
	sum  [sha256.Size]byte
	dir  *Directory
	read bool
}

// Load returns the file's directory as it is now.
func (f *File) Load() (*Directory, error) {
	b, err := os.ReadFile(f.Path)
	if errors.Is(err, os.ErrNotExist) {
		return &Directory{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read identity file: %w", err)
	}
	sum := sha256.Sum256(b)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.read && sum == f.sum {
		return f.dir, nil
	}
	d, err := parse(f.Path, b)
	if err != nil {
		return nil, err
	}
	f.sum, f.dir, f.read = sum, d, true
	return d, nil
}
