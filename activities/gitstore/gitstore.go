// Package gitstore fetches manifest and values files from Git repositories (the reference's
// Git, Github, Gitlab and Bitbucket stores) with go-git: a branch's head through a shallow
// clone, or a given commit, with HTTP (username and password or token) or SSH key auth from
// the secret resolver. Each commit's files are cached on disk per worker, so the second deploy
// of the same commit reads no repository.
package gitstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/manifests"
	"github.com/gantry-cd/gantry/plan"
)

// Fetcher fetches a store's files. Safe for concurrent use.
type Fetcher struct {
	Secrets secrets.Resolver
	// CacheDir holds fetched files by repository and commit (default: the user's cache
	// directory, gantry/git).
	CacheDir string

	locks sync.Map // cache key → *sync.Mutex
}

// Fetch resolves the store's branch (unless it names a commit) and returns the files of its
// paths and values paths at that commit. Failures are step failures with a category:
// Authentication, Connectivity, Verification (no such repository, branch, commit or path) or
// Unknown; their messages name the repository, the ref and the path, never a credential.
func (f *Fetcher) Fetch(ctx context.Context, st *plan.GitStore) (contract.Fetched, error) {
	repoURL := st.RepoURL()
	where := redact(repoURL)
	auth, err := f.auth(ctx, st.Connector)
	if err != nil {
		return contract.Fetched{}, err
	}
	commit, branch := st.Commit, st.Branch
	if commit == "" {
		if st.Branch == "" {
			return contract.Fetched{}, contract.Fail(contract.Verification, "%s: the store names neither a branch nor a commit", where)
		}
		if commit, err = headOf(ctx, repoURL, st.Branch, auth); err != nil {
			return contract.Fetched{}, classify(err, "%s, branch %s", where, st.Branch)
		}
	}
	key := cacheKey(repoURL, commit)
	mu, _ := f.locks.LoadOrStore(key, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	dir := filepath.Join(f.cacheDir(), key)
	wanted := append(append([]string(nil), st.Paths...), st.ValuesPaths...)
	out := contract.Fetched{Commit: commit, Cached: cached(dir, wanted)}
	if !out.Cached {
		// The branch's head was resolved above: fetch that commit, even if the branch moves.
		if out.Commit, err = fetchInto(ctx, dir, repoURL, branch, commit, auth, wanted); err != nil {
			return contract.Fetched{}, err
		}
	}
	for _, p := range st.Paths {
		files, err := readTree(dir, p, !st.AllFiles)
		if err != nil {
			return contract.Fetched{}, contract.Fail(contract.Verification, "%s at %s: %v", where, short(out.Commit), err)
		}
		out.Files = append(out.Files, files...)
	}
	for _, p := range st.ValuesPaths {
		files, err := readTree(dir, p, false)
		if err != nil {
			return contract.Fetched{}, contract.Fail(contract.Verification, "%s at %s: values %v", where, short(out.Commit), err)
		}
		out.Values = append(out.Values, files...)
	}
	return out, nil
}

// Activity is the FetchManifests activity.
func (f *Fetcher) Activity(ctx context.Context, in contract.FetchInput) (contract.Fetched, error) {
	return f.Fetch(ctx, &in.Store)
}

// headOf asks the server for a branch's head commit (git ls-remote).
func headOf(ctx context.Context, repoURL, branch string, auth transport.AuthMethod) (string, error) {
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{repoURL}})
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: auth})
	if err != nil {
		return "", err
	}
	want := plumbing.NewBranchReferenceName(branch)
	for _, r := range refs {
		if r.Name() == want {
			return r.Hash().String(), nil
		}
	}
	return "", fmt.Errorf("%w: no branch %q", plumbing.ErrReferenceNotFound, branch)
}

// Head resolves a store's branch to its head commit with one call to the server (git
// ls-remote); failures are categorised as Fetch's are.
func (f *Fetcher) Head(ctx context.Context, st *plan.GitStore) (string, error) {
	auth, err := f.auth(ctx, st.Connector)
	if err != nil {
		return "", err
	}
	commit, err := headOf(ctx, st.RepoURL(), st.Branch, auth)
	if err != nil {
		return "", classify(err, "%s, branch %s", redact(st.RepoURL()), st.Branch)
	}
	return commit, nil
}

// fetchInto writes the files under the wanted paths of a commit into dir and returns the full
// commit hash. A branch is cloned shallowly: its head is the commit wanted unless the branch
// moved since it was resolved. Then, and for a commit without a branch, the history is cloned
// (the branch's, then every branch's), as servers refuse a shallow fetch of an arbitrary commit.
func fetchInto(ctx context.Context, dir, repoURL, branch, commit string, auth transport.AuthMethod, wanted []string) (string, error) {
	return cloneAt(ctx, repoURL, branch, commit, auth, func(tree *object.Tree) error {
		for _, p := range wanted {
			if err := writePath(tree, dir, p); err != nil {
				return err
			}
		}
		return nil
	})
}

// cloneAt clones the commit (see fetchInto) and passes its tree to write.
func cloneAt(ctx context.Context, repoURL, branch, commit string, auth transport.AuthMethod, write func(*object.Tree) error) (string, error) {
	where := redact(repoURL)
	var attempts []*git.CloneOptions
	if branch != "" {
		ref := plumbing.NewBranchReferenceName(branch)
		attempts = append(attempts, &git.CloneOptions{ReferenceName: ref, SingleBranch: true, Depth: 1})
		if commit != "" {
			attempts = append(attempts, &git.CloneOptions{ReferenceName: ref, SingleBranch: true})
		}
	}
	if commit != "" {
		attempts = append(attempts, &git.CloneOptions{})
	}
	var repo *git.Repository
	var hash plumbing.Hash
	found := false
	for _, opts := range attempts {
		opts.URL, opts.Auth, opts.Tags = repoURL, auth, git.NoTags
		var err error
		if repo, err = git.CloneContext(ctx, memory.NewStorage(), nil, opts); err != nil {
			return "", classify(err, "%s, %s", where, refName(branch, commit))
		}
		if commit == "" {
			head, err := repo.Head()
			if err != nil {
				return "", classify(err, "%s, branch %s", where, branch)
			}
			hash, found = head.Hash(), true
			break
		}
		if h, err := repo.ResolveRevision(plumbing.Revision(commit)); err == nil {
			if _, err := repo.CommitObject(*h); err == nil {
				hash, found = *h, true
				break
			}
		}
	}
	if !found {
		return "", contract.Fail(contract.Verification, "%s: no commit %s", where, commit)
	}
	c, err := repo.CommitObject(hash)
	if err != nil {
		return "", classify(err, "%s, commit %s", where, short(hash.String()))
	}
	tree, err := c.Tree()
	if err != nil {
		return "", classify(err, "%s, commit %s", where, short(hash.String()))
	}
	if err := write(tree); err != nil {
		return "", contract.Fail(contract.Verification, "%s at %s: %v", where, short(hash.String()), err)
	}
	return hash.String(), nil
}

// Snapshot writes every .yaml, .yml and .rego file of a commit (up to the snapshot limits; larger
// files are left out) under DIR/files once, and returns DIR and the full commit hash. The
// branch is a hint: a commit at its head is cloned shallowly. Later calls for the same commit
// read nothing from the server.
func (f *Fetcher) Snapshot(ctx context.Context, st *plan.GitStore) (string, string, error) {
	repoURL := st.RepoURL()
	if st.Commit == "" {
		return "", "", contract.Fail(contract.Verification, "%s: a snapshot needs a commit", redact(repoURL))
	}
	key := cacheKey(repoURL, st.Commit)
	mu, _ := f.locks.LoadOrStore(key, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	dir := filepath.Join(f.cacheDir(), key)
	const all = "\x00snapshot"
	if full, err := os.ReadFile(markOf(dir, all)); err == nil {
		return dir, string(full), nil
	}
	auth, err := f.auth(ctx, st.Connector)
	if err != nil {
		return "", "", err
	}
	var full string
	full, err = cloneAt(ctx, repoURL, st.Branch, st.Commit, auth, func(tree *object.Tree) error {
		files, total := 0, int64(0)
		err := tree.Files().ForEach(func(file *object.File) error {
			if ext := strings.ToLower(path.Ext(file.Name)); (ext != ".yaml" && ext != ".yml" && ext != ".rego") || file.Size > contract.MaxSnapshotFile {
				return nil
			}
			if files++; files > contract.MaxSnapshotFiles {
				return fmt.Errorf("more than %d YAML and Rego files", contract.MaxSnapshotFiles)
			}
			if total += file.Size; total > contract.MaxSnapshotBytes {
				return fmt.Errorf("more than %d MiB of YAML and Rego files", contract.MaxSnapshotBytes>>20)
			}
			r, err := file.Reader()
			if err != nil {
				return err
			}
			defer r.Close()
			return writeFile(filepath.Join(dir, "files", filepath.FromSlash(file.Name)), r)
		})
		if err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return "", "", err
	}
	// The mark, written last, holds the full hash (the commit asked for may be abbreviated).
	if err := writeFile(markOf(dir, all), strings.NewReader(full)); err != nil {
		return "", "", err
	}
	return dir, full, nil
}

// writePath copies a file, or every file under a folder, of the tree into dir, then marks the
// path as complete (the mark is what a later fetch trusts).
func writePath(tree *object.Tree, dir, p string) error {
	clean := strings.Trim(path.Clean("/"+p), "/")
	write := func(name string, f *object.File) error {
		r, err := f.Reader()
		if err != nil {
			return err
		}
		defer r.Close()
		return writeFile(filepath.Join(dir, "files", filepath.FromSlash(name)), r)
	}
	if f, err := tree.File(clean); err == nil {
		if err := write(clean, f); err != nil {
			return err
		}
	} else {
		sub, err := tree.Tree(clean)
		if clean == "" {
			sub, err = tree, nil
		}
		if err != nil {
			return fmt.Errorf("%s: no such file or folder", p)
		}
		err = sub.Files().ForEach(func(f *object.File) error { return write(path.Join(clean, f.Name), f) })
		if err != nil {
			return err
		}
	}
	return writeFile(markOf(dir, p), strings.NewReader(p))
}

func writeFile(name string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), ".part-*")
	if err != nil {
		return err
	}
	if _, err := io.Copy(tmp, r); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), name)
}

func markOf(dir, p string) string {
	sum := sha256.Sum256([]byte(p))
	return filepath.Join(dir, "paths", hex.EncodeToString(sum[:8]))
}

func cached(dir string, wanted []string) bool {
	for _, p := range wanted {
		if _, err := os.Stat(markOf(dir, p)); err != nil {
			return false
		}
	}
	return true
}

// readTree reads a cached file, or a folder's files in path order: for manifests its *.yaml,
// *.yml and *.tpl files, for values every file.
func readTree(dir, p string, onlyManifests bool) ([]plan.File, error) {
	clean := strings.Trim(path.Clean("/"+p), "/")
	root := filepath.Join(dir, "files", filepath.FromSlash(clean))
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("%s: no such file or folder", p)
	}
	var names []string
	if !st.IsDir() {
		names = []string{root}
	} else {
		err = filepath.WalkDir(root, func(n string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			switch filepath.Ext(n) {
			case ".yaml", ".yml", ".tpl":
				names = append(names, n)
			default:
				if !onlyManifests {
					names = append(names, n)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(names)
		if len(names) == 0 {
			return nil, fmt.Errorf("%s: folder holds no .yaml, .yml or .tpl files", p)
		}
	}
	var out []plan.File
	size := 0
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		if size += len(b); size > plan.MaxManifestBytes {
			return nil, fmt.Errorf("%s: more than %d KiB of files, too much to carry in a run (Temporal payloads stop at 2 MB)", p, plan.MaxManifestBytes>>10)
		}
		rel, _ := filepath.Rel(filepath.Join(dir, "files"), n)
		files, err := manifests.UnpackDependencyFiles(filepath.ToSlash(rel), b)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			out = append(out, plan.File{Path: f.Path, Text: f.Text})
		}
	}
	return out, nil
}

// auth builds the connector's credentials from the secret resolver.
func (f *Fetcher) auth(ctx context.Context, c plan.GitConnector) (transport.AuthMethod, error) {
	switch {
	case c.SSHKeyRef != "":
		user, key, err := secrets.Login(ctx, f.Secrets, c.ID, c.Username, c.UsernameRef, c.SSHKeyRef)
		if err != nil {
			return nil, err
		}
		if user == "" {
			user = "git"
		}
		keys, err := gitssh.NewPublicKeys(user, []byte(key), "")
		if err != nil {
			return nil, contract.Fail(contract.Authentication, "connector %s: sshKeyRef %s does not hold a private key this worker can read: %v", c.ID, c.SSHKeyRef, err)
		}
		// Host keys are checked against known_hosts ($SSH_KNOWN_HOSTS, else ~/.ssh/known_hosts).
		cb, err := gitssh.NewKnownHostsCallback()
		if err != nil {
			return nil, contract.Fail(contract.Authentication, "connector %s: no known_hosts to check the server's key against (set SSH_KNOWN_HOSTS or fill ~/.ssh/known_hosts): %v", c.ID, err)
		}
		keys.HostKeyCallback = cb
		return keys, nil
	case c.PasswordRef != "":
		user, pw, err := secrets.Login(ctx, f.Secrets, c.ID, c.Username, c.UsernameRef, c.PasswordRef)
		if err != nil {
			return nil, err
		}
		return &githttp.BasicAuth{Username: user, Password: pw}, nil
	}
	return nil, nil // anonymous
}

// classify turns a go-git error into a step failure of the right category.
func classify(err error, format string, args ...any) error {
	where := fmt.Sprintf(format, args...)
	var netErr net.Error
	var opErr *net.OpError
	switch {
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed),
		strings.Contains(err.Error(), "unable to authenticate"):
		return contract.Fail(contract.Authentication, "%s: the server refused the connector's credentials: %v", where, err)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return contract.Fail(contract.Verification, "%s: repository not found", where)
	case errors.Is(err, plumbing.ErrReferenceNotFound), errors.Is(err, git.NoMatchingRefSpecError{}):
		return contract.Fail(contract.Verification, "%s: not found in the repository", where)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &opErr), errors.As(err, &netErr),
		strings.Contains(err.Error(), "connection refused"), strings.Contains(err.Error(), "no such host"):
		return contract.Fail(contract.Connectivity, "%s: cannot reach the Git server: %v", where, err)
	}
	return contract.Fail(contract.Unknown, "%s: %v", where, err)
}

func (f *Fetcher) cacheDir() string {
	if f.CacheDir != "" {
		return f.CacheDir
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "gantry", "git")
}

func cacheKey(repoURL, commit string) string {
	sum := sha256.Sum256([]byte(redact(repoURL)))
	return filepath.Join(hex.EncodeToString(sum[:8]), commit)
}

func refName(branch, commit string) string {
	if commit != "" {
		return "commit " + commit
	}
	return "branch " + branch
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// redact drops a password written into a repository URL.
func redact(repoURL string) string {
	if u, err := url.Parse(repoURL); err == nil && u.User != nil {
		return u.Redacted()
	}
	return repoURL
}

// Auth is how this worker authenticates to a connector's Git server (nil: anonymous).
func (f *Fetcher) Auth(ctx context.Context, c plan.GitConnector) (transport.AuthMethod, error) {
	return f.auth(ctx, c)
}

// Classify turns a go-git error into a step failure with its category, saying what was done.
func Classify(err error, format string, args ...any) error { return classify(err, format, args...) }

// Redact is a repository URL without the credentials it may hold.
func Redact(repoURL string) string { return redact(repoURL) }
