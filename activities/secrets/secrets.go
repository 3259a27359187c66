// Package secrets resolves secret references inside step activities and masks their values.
// Workflow code only ever holds references (`<+secrets.getValue("id")>`), so plaintext never
// reaches Temporal history.
package secrets

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// Mask replaces secret values in logs and outputs (spec 9.10).
const Mask = "**************"

// Resolver looks up a secret's plaintext by identifier.
type Resolver interface {
	Resolve(ctx context.Context, id string) (string, error)
}

// Store resolves secrets from the environment (GANTRY_SECRET_<ID>, the identifier upper-cased
// with every other character turned into _), then from a YAML file of id: value pairs, then
// from Next (a secret manager) when set.
type Store struct {
	File string
	Next Resolver

	once   sync.Once
	values map[string]string
	err    error
}

// EnvName is the environment variable that holds secret id.
func EnvName(id string) string {
	var b strings.Builder
	b.WriteString("GANTRY_SECRET_")
	for _, r := range strings.ToUpper(id) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// Resolve implements Resolver.
func (s *Store) Resolve(ctx context.Context, id string) (string, error) {
	if v, ok := os.LookupEnv(EnvName(id)); ok {
		return v, nil
	}
	s.once.Do(s.load)
	if s.err != nil {
		return "", s.err
	}
	if v, ok := s.values[id]; ok {
		return v, nil
	}
	if s.Next != nil {
		return s.Next.Resolve(ctx, id)
	}
	return "", fmt.Errorf("secret %q is not defined: %s on the worker", id, s.Where(id))
}

// Where says how to give the store secret id.
func (s *Store) Where(id string) string {
	where := "set " + EnvName(id)
	if s.File != "" {
		where += " or add it to " + s.File
	}
	return where
}

// Listed says whether the store knows every secret it can resolve: it does unless a secret
// manager stands behind it, which is asked one secret at a time.
func (s *Store) Listed() bool { return s.Next == nil }

// Has reports whether the environment or the secrets file holds secret id (not a secret
// manager behind the store: see Listed).
func (s *Store) Has(id string) bool {
	if _, ok := os.LookupEnv(EnvName(id)); ok {
		return true
	}
	s.once.Do(s.load)
	_, ok := s.values[id]
	return ok
}

func (s *Store) load() {
	if s.File == "" {
		return
	}
	b, err := os.ReadFile(s.File)
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		s.err = fmt.Errorf("read secrets file: %w", err)
		return
	}
	if err := yaml.Unmarshal(b, &s.values); err != nil {
		s.err = fmt.Errorf("secrets file %s: %w", s.File, err)
	}
}

var refRe = regexp.MustCompile(`<\+secrets\.getValue\("([^"]+)"\)>`)

// Masker collects resolved secret values and hides them in text.
type Masker struct {
	mu     sync.Mutex
	values []string
	r      *strings.Replacer
}

// Add registers a plaintext to hide. Empty values are ignored.
func (m *Masker) Add(v string) {
	if v == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.values = append(m.values, v)
	// Longest first, so a secret containing another is masked whole.
	sort.Slice(m.values, func(i, j int) bool { return len(m.values[i]) > len(m.values[j]) })
	var pairs []string
	for _, x := range m.values {
		pairs = append(pairs, x, Mask)
	}
	m.r = strings.NewReplacer(pairs...)
}

// Values returns the registered plaintexts (for masking them elsewhere, e.g. in a plan's JSON).
func (m *Masker) Values() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.values...)
}

// Apply returns s with every registered secret replaced by Mask.
func (m *Masker) Apply(s string) string {
	m.mu.Lock()
	r := m.r
	m.mu.Unlock()
	if r == nil {
		return s
	}
	return r.Replace(s)
}

// Expand replaces every secret reference in s with its plaintext and registers it with m.
func Expand(ctx context.Context, r Resolver, m *Masker, s string) (string, error) {
	return ExpandTo(ctx, r, m, s, func(string) (string, bool) { return "", false })
}

// ExpandTo is Expand where stand-in, when it has one for a secret, replaces the reference
// instead of the plaintext (which is still resolved and masked): a container step's pod
// carries its secrets itself, so the command sent to it names them only.
func ExpandTo(ctx context.Context, r Resolver, m *Masker, s string, standIn func(id string) (string, bool)) (string, error) {
	if !strings.Contains(s, "<+secrets.") {
		return s, nil
	}
	var firstErr error
	out := refRe.ReplaceAllStringFunc(s, func(ref string) string {
		id := refRe.FindStringSubmatch(ref)[1]
		v, err := r.Resolve(ctx, id)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return ref
		}
		m.Add(v)
		if p, ok := standIn(id); ok {
			return p
		}
		return v
	})
	return out, firstErr
}

// Value resolves a step variable's value: a Secret-typed value that is not an expression names
// a secret; other values have their secret references expanded. A Secret's plaintext is masked.
func Value(ctx context.Context, r Resolver, m *Masker, typ, value string) (string, error) {
	secret := strings.EqualFold(typ, "Secret")
	if secret && !strings.Contains(value, "<+secrets.") {
		v, err := r.Resolve(ctx, value)
		if err != nil {
			return "", err
		}
		m.Add(v)
		return v, nil
	}
	v, err := Expand(ctx, r, m, value)
	if err != nil {
		return "", err
	}
	if secret {
		m.Add(v)
	}
	return v, nil
}
