package container

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/gantry-cd/gantry/activities/container/wire"
	"github.com/gantry-cd/gantry/activities/gitstore"
	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/stepspec"
)

// gitCloneSpec is a GitClone step's rendered spec, its build always present (its spec too).
type gitCloneSpec = stepspec.GitCloneSpec

// decodeGitClone reads a GitClone step's spec.
func decodeGitClone(in contract.StepInput) (gitCloneSpec, error) {
	spec, err := decodeHelperSpec[gitCloneSpec](in)
	if spec.Build == nil {
		spec.Build = &stepspec.GitBuild{}
	}
	if spec.Build.Spec == nil {
		spec.Build.Spec = &stepspec.GitBuildSpec{}
	}
	return spec, err
}

// gitClone clones a repository on the worker with go-git (the connector's credentials never
// enter the pod) and streams the working copy, .git included, into the workspace through the
// pod's gantry container.
func (a *Activity) gitClone(ctx context.Context, k *cluster, ns string, in contract.StepInput, log *logs.Writer) (contract.StepResult, error) {
	return cloneAndPut(ctx, a.Secrets, in, "", log, func(tmp, dest string) error {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(tarDir(tmp, pw)) }()
		out := &output{log: log, mask: nil}
		err := stream(ctx, k, ns, in.Pod.Pod.Name, in.Pod.Container, []string{"/gantry-helper", "untar", dest}, pr, out, out)
		pr.Close()
		if _, last := out.flush(); err != nil {
			return fmt.Errorf("%v%s", err, lastLine(last))
		}
		return nil
	})
}

// cloneAndPut clones the repository a GitClone step names into a new folder below tmpBase
// ("": the system's) and hands it to put with the clone directory, as the step's spec names it
// in the workspace.
func cloneAndPut(ctx context.Context, r secrets.Resolver, in contract.StepInput, tmpBase string, log *logs.Writer, put func(tmp, dest string) error) (contract.StepResult, error) {
	spec, err := decodeGitClone(in)
	if err != nil {
		return contract.StepResult{}, err
	}
	conn, ok := in.Pod.Pod.Pod.Git[spec.ConnectorRef]
	if !ok {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "GitClone: connector %q was not resolved before the run", spec.ConnectorRef)
	}
	repoURL := (&plan.GitStore{Connector: conn, RepoName: spec.RepoName}).RepoURL()
	where := gitstore.Redact(repoURL)
	auth, err := (&gitstore.Fetcher{Secrets: r}).Auth(ctx, conn)
	if err != nil {
		return contract.StepResult{}, err
	}
	opts, ref, depth, err := cloneOptions(spec, repoURL, auth)
	if err != nil {
		return contract.StepResult{}, err
	}
	tmp, err := os.MkdirTemp(tmpBase, "gantry-clone-")
	if err != nil {
		return contract.StepResult{}, err
	}
	defer os.RemoveAll(tmp)
	var repo *git.Repository
	if spec.Build.Type == "PR" {
		repo, err = clonePullRequest(ctx, tmp, conn, spec, opts, depth)
	} else {
		repo, err = git.PlainCloneContext(ctx, tmp, false, opts)
	}
	if err != nil {
		return contract.StepResult{}, gitstore.Classify(err, "%s, %s", where, ref)
	}
	if err := checkoutCommit(repo, spec, where, ref, depth); err != nil {
		return contract.StepResult{}, err
	}
	head, err := repo.Head()
	if err != nil {
		return contract.StepResult{}, gitstore.Classify(err, "%s, %s", where, ref)
	}
	dest := cloneDirectory(spec.CloneDirectory, spec.RepoName, repoURL)
	if err := put(tmp, dest); err != nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "GitClone of %s into %s: %v", where, dest, err)
	}
	log.Line(fmt.Sprintf("cloned %s, %s, at %s into %s", where, ref, head.Hash(), dest))
	return contract.StepResult{Outputs: map[string]any{"commitSha": head.Hash().String(), "cloneDirectory": dest}}, nil
}

// cloneOptions are go-git's options for a GitClone spec: the ref to fetch (a branch or tag
// shallowly, to depth), and ref named for messages.
func cloneOptions(spec gitCloneSpec, repoURL string, auth transport.AuthMethod) (opts *git.CloneOptions, ref string, depth int, err error) {
	opts = &git.CloneOptions{URL: repoURL, Auth: auth, Tags: git.NoTags, InsecureSkipTLS: strings.EqualFold(string(spec.SSLVerify), "false")}
	if strings.EqualFold(string(spec.FetchTags), "true") {
		opts.Tags = git.AllTags
	}
	depth = 1
	if spec.Depth != "" {
		if depth, err = strconv.Atoi(string(spec.Depth)); err != nil {
			return nil, "", 0, contract.Fail(contract.Unknown, "GitClone depth %q is not a number", spec.Depth)
		}
	}
	switch spec.Build.Type {
	case "branch":
		ref = "branch " + spec.Build.Spec.Branch
		opts.ReferenceName, opts.SingleBranch, opts.Depth = plumbing.NewBranchReferenceName(spec.Build.Spec.Branch), true, depth
	case "tag":
		ref = "tag " + spec.Build.Spec.Tag
		opts.ReferenceName, opts.SingleBranch, opts.Depth = plumbing.NewTagReferenceName(spec.Build.Spec.Tag), true, depth
	case "commitSha":
		ref = "commit " + spec.Build.Spec.CommitSha // servers refuse a shallow fetch of any commit
	case "PR":
		ref = "pull request " + string(spec.Build.Spec.Number)
	default:
		return nil, "", 0, contract.Fail(contract.Unknown, "GitClone build type %q is not branch, tag, PR or commitSha", spec.Build.Type)
	}
	return opts, ref, depth, nil
}

// checkoutCommit checks out the commit a spec names (commitSha, or checkout), if any; a
// pull request's ref names what to build already.
func checkoutCommit(repo *git.Repository, spec gitCloneSpec, where, ref string, depth int) error {
	commit := spec.Checkout
	switch {
	case spec.Build.Type == "commitSha":
		commit = spec.Build.Spec.CommitSha
	case spec.Build.Type == "PR":
		commit = "" // the pull request's ref names what to build; its head commit is not the merge
	}
	if commit != "" {
		h, err := repo.ResolveRevision(plumbing.Revision(commit))
		if err != nil {
			return contract.Fail(contract.Verification, "%s, %s: no commit %s (a clone of depth %d)", where, ref, commit, depth)
		}
		wt, err := repo.Worktree()
		if err == nil {
			err = wt.Checkout(&git.CheckoutOptions{Hash: *h, Force: true})
		}
		if err != nil {
			return contract.Fail(contract.Unknown, "%s: check out %s: %v", where, commit, err)
		}
	}
	return nil
}

// pullRequestRef is the ref a Git server publishes a pull request under: its head, or the
// merge into its target the server computed (GitHub, Gitea and Bitbucket refs/pull/N/...,
// GitLab refs/merge-requests/N/...).
func pullRequestRef(conn plan.GitConnector, number, strategy string) string {
	base, head, merge := "refs/pull/", "/head", "/merge"
	if conn.Type == "Gitlab" {
		base = "refs/merge-requests/"
	}
	if strategy == "SourceBranch" {
		return base + number + head
	}
	return base + number + merge
}

// clonePullRequest fetches a pull request's ref into a new repository and checks it out: with
// MergeCommit, the merge the server computed; with SourceBranch, the pull request's head.
func clonePullRequest(ctx context.Context, dir string, conn plan.GitConnector, spec gitCloneSpec, opts *git.CloneOptions, depth int) (*git.Repository, error) {
	number := strings.TrimSpace(string(spec.Build.Spec.Number))
	if number == "" {
		return nil, contract.Fail(contract.Unknown, "a pull request build names no number")
	}
	ref := pullRequestRef(conn, number, spec.PrCloneStrategy)
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		return nil, err
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{opts.URL}}); err != nil {
		return nil, err
	}
	local := plumbing.NewBranchReferenceName("pr-" + number)
	err = repo.FetchContext(ctx, &git.FetchOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{config.RefSpec("+" + ref + ":" + local.String())},
		Depth: depth, Auth: opts.Auth, InsecureSkipTLS: opts.InsecureSkipTLS, Tags: git.NoTags})
	var missing git.NoMatchingRefSpecError
	switch {
	case errors.As(err, &missing) && spec.PrCloneStrategy != "SourceBranch":
		return nil, contract.Fail(contract.Verification, "the Git server has no %s: the pull request does not merge cleanly, or the server publishes no merge refs; set the codebase's prCloneStrategy: SourceBranch to build its head", ref)
	case errors.As(err, &missing):
		return nil, contract.Fail(contract.Verification, "the Git server has no %s: is %s a pull request of this repository?", ref, number)
	case err != nil:
		return nil, err
	}
	wt, err := repo.Worktree()
	if err != nil {
		return nil, err
	}
	if err := wt.Checkout(&git.CheckoutOptions{Branch: local, Force: true}); err != nil {
		return nil, err
	}
	return repo, nil
}

// downloadManifests writes the stage service's manifests (their files and values files, as
// the service phase resolved them) into the workspace: /harness/<manifest identifier>/<path>.
func (a *Activity) downloadManifests(ctx context.Context, k *cluster, ns string, in contract.StepInput, log *logs.Writer) (contract.StepResult, error) {
	if in.Deploy == nil || len(in.Deploy.Manifests) == 0 {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "DownloadManifests: the stage's service has no manifests")
	}
	var files []plan.File
	var dirs []string
	for _, m := range in.Deploy.Manifests {
		for _, f := range append(append([]plan.File(nil), m.Files...), m.Values...) {
			files = append(files, plan.File{Path: path.Join(m.ID, f.Path), Text: f.Text})
		}
		dirs = append(dirs, path.Join(wire.Workspace, m.ID))
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarFiles(files, pw)) }()
	out := &output{log: log}
	err := stream(ctx, k, ns, in.Pod.Pod.Name, in.Pod.Container, []string{"/gantry-helper", "untar", wire.Workspace}, pr, out, out)
	pr.Close()
	_, last := out.flush()
	if err != nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "DownloadManifests into %s: %v%s", wire.Workspace, err, lastLine(last))
	}
	return contract.StepResult{Outputs: map[string]any{"manifests": strings.Join(dirs, ",")}}, nil
}

// tarFiles writes files as a tar stream.
func tarFiles(files []plan.File, w io.Writer) error {
	tw := tar.NewWriter(w)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.Path, Mode: 0o644, Size: int64(len(f.Text)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := io.WriteString(tw, f.Text); err != nil {
			return err
		}
	}
	return tw.Close()
}

// cloneDirectory is where a clone goes: the step's cloneDirectory (relative to the workspace),
// else the workspace's folder named after the repository.
func cloneDirectory(dir, repoName, repoURL string) string {
	if dir == "" {
		name := repoName
		if name == "" {
			name = strings.TrimSuffix(path.Base(strings.TrimSuffix(repoURL, "/")), ".git")
		}
		dir = path.Base(name)
	}
	if !path.IsAbs(dir) {
		dir = path.Join(wire.Workspace, dir)
	}
	return path.Clean(dir)
}

// tarDir writes the files under dir as a tar stream.
func tarDir(dir string, w io.Writer) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&os.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
