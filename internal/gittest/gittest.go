// Package gittest runs a real Git server for tests on loopback: Debian's `git http-backend`
// behind basic auth (through net/http/cgi), and an SSH server that runs `git upload-pack` for
// clients holding the authorized key. Repositories are made and changed with the git CLI.
package gittest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Server is a Git server with the repositories under Root.
type Server struct {
	Root string
	// HTTPURL is the base of the repositories' HTTP URLs (HTTPURL + "/NAME.git").
	HTTPURL            string
	Username, Password string
	// SSHURL is the base of the SSH URLs (SSHURL + "/NAME.git"); SSHKey is the client's private
	// key (PEM) and KnownHosts a known_hosts file naming the server's key.
	SSHURL     string
	SSHKey     string
	KnownHosts string

	t        testing.TB
	requests atomic.Int64
}

// Requests is how many HTTP requests the server has answered: a clone or fetch is two (the
// refs, then the pack), a ls-remote one.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Start starts both servers; they stop when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is not installed: %v", err)
	}
	s := &Server{Root: t.TempDir(), Username: "deployer", Password: "s3cret-token", t: t}
	backend := filepath.Join(strings.TrimSpace(s.git("", "--exec-path")), "git-http-backend")
	cgiHandler := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + s.Root, "GIT_HTTP_EXPORT_ALL=1"}}
	h := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != s.Username || p != s.Password {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		s.requests.Add(1)
		cgiHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(h.Close)
	s.HTTPURL = h.URL
	s.startSSH()
	return s
}

// NewRepo makes a bare repository NAME.git with one commit of files on branch main and
// returns the commit.
func (s *Server) NewRepo(name string, files map[string]string) string {
	s.t.Helper()
	bare := filepath.Join(s.Root, name+".git")
	s.git("", "init", "-q", "--bare", "-b", "main", bare)
	work := filepath.Join(s.t.TempDir(), name)
	s.git("", "clone", "-q", bare, work)
	s.git(work, "checkout", "-q", "-b", "main")
	return s.commit(work, files)
}

// Commit adds a commit of files (path → content; "" deletes) on a branch of NAME.git, making
// the branch from main if new, and returns the commit.
func (s *Server) Commit(name, branch string, files map[string]string) string {
	s.t.Helper()
	work := filepath.Join(s.t.TempDir(), name)
	s.git("", "clone", "-q", filepath.Join(s.Root, name+".git"), work)
	if strings.TrimSpace(s.git(work, "branch", "-r", "--list", "origin/"+branch)) == "" {
		s.git(work, "checkout", "-q", "-b", branch)
	} else {
		s.git(work, "checkout", "-q", branch)
	}
	return s.commit(work, files)
}

// ForcePush replaces the head commit of a branch of NAME.git by a new commit of files on its
// parent (git push --force), so that the old head is on no branch; it returns the new head.
func (s *Server) ForcePush(name, branch string, files map[string]string) string {
	s.t.Helper()
	work := filepath.Join(s.t.TempDir(), name)
	s.git("", "clone", "-q", "-b", branch, filepath.Join(s.Root, name+".git"), work)
	s.git(work, "reset", "-q", "--hard", "HEAD~1")
	sha := s.commitOnly(work, files)
	s.git(work, "push", "-q", "--force", "origin", "HEAD:"+branch)
	return sha
}

// DeleteBranch deletes a branch of NAME.git.
func (s *Server) DeleteBranch(name, branch string) {
	s.t.Helper()
	s.git(filepath.Join(s.Root, name+".git"), "branch", "-D", branch)
}

// PullRequest publishes pull request number of NAME.git as a hosted Git server does: a commit
// of files on a branch from base, as refs/pull/N/head, and its merge into base (a merge
// commit, base having moved on with baseFiles first) as refs/pull/N/merge. It returns the
// head and the merge commits.
func (s *Server) PullRequest(name string, number int, base string, files, baseFiles map[string]string) (head, merge string) {
	s.t.Helper()
	work := filepath.Join(s.t.TempDir(), name)
	s.git("", "clone", "-q", filepath.Join(s.Root, name+".git"), work)
	s.git(work, "checkout", "-q", "-b", fmt.Sprintf("pr-%d", number), "origin/"+base)
	head = s.commitOnly(work, files)
	s.git(work, "push", "-q", "origin", fmt.Sprintf("HEAD:refs/pull/%d/head", number))
	s.git(work, "checkout", "-q", "-B", base, "origin/"+base)
	if len(baseFiles) > 0 {
		s.commitOnly(work, baseFiles)
		s.git(work, "push", "-q", "origin", "HEAD:"+base)
	}
	s.git(work, "-c", "user.name=gantry", "-c", "user.email=gantry@example.com", "merge", "-q", "--no-ff", "-m", "merge", head)
	merge = strings.TrimSpace(s.git(work, "rev-parse", "HEAD"))
	s.git(work, "push", "-q", "origin", fmt.Sprintf("HEAD:refs/pull/%d/merge", number))
	return head, merge
}

func (s *Server) commit(work string, files map[string]string) string {
	sha := s.commitOnly(work, files)
	s.git(work, "push", "-q", "origin", "HEAD")
	return sha
}

// commitOnly commits files in a working copy without pushing.
func (s *Server) commitOnly(work string, files map[string]string) string {
	for p, text := range files {
		full := filepath.Join(work, filepath.FromSlash(p))
		if text == "" {
			s.git(work, "rm", "-q", p)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			s.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			s.t.Fatal(err)
		}
		s.git(work, "add", p)
	}
	s.git(work, "-c", "user.name=gantry", "-c", "user.email=gantry@example.com", "commit", "-q", "-m", "change")
	return strings.TrimSpace(s.git(work, "rev-parse", "HEAD"))
}

func (s *Server) git(dir string, args ...string) string {
	s.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "HOME="+s.Root)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		s.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String()
}

// startSSH serves `git upload-pack` over SSH to the holder of the client key it makes.
func (s *Server) startSSH() {
	t := s.t
	_, hostPriv, _ := ed25519.GenerateKey(rand.Reader)
	hostSigner, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		t.Fatal(err)
	}
	clientPub, clientPriv, _ := ed25519.GenerateKey(rand.Reader)
	der, err := x509.MarshalPKCS8PrivateKey(clientPriv)
	if err != nil {
		t.Fatal(err)
	}
	s.SSHKey = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	authorized, _ := ssh.NewPublicKey(clientPub)
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
		if bytes.Equal(key.Marshal(), authorized.Marshal()) {
			return nil, nil
		}
		return nil, fmt.Errorf("unknown key")
	}}
	cfg.AddHostKey(hostSigner)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	addr := ln.Addr().String()
	s.SSHURL = "ssh://git@" + addr
	s.KnownHosts = filepath.Join(t.TempDir(), "known_hosts")
	line := knownhosts.Line([]string{knownhosts.Normalize(addr)}, hostSigner.PublicKey())
	if err := os.WriteFile(s.KnownHosts, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serveSSH(c, cfg)
		}
	}()
}

func (s *Server) serveSSH(c net.Conn, cfg *ssh.ServerConfig) {
	defer c.Close()
	_, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "sessions only")
			continue
		}
		ch, requests, err := nc.Accept()
		if err != nil {
			return
		}
		go func() {
			defer ch.Close()
			for req := range requests {
				if req.Type != "exec" || len(req.Payload) < 4 {
					_ = req.Reply(false, nil)
					continue
				}
				command := string(req.Payload[4:])
				verb, repo, _ := strings.Cut(command, " ")
				if verb != "git-upload-pack" {
					_ = req.Reply(false, nil)
					continue
				}
				_ = req.Reply(true, nil)
				repo = strings.Trim(repo, "'\"/")
				cmd := exec.Command("git", "upload-pack", filepath.Join(s.Root, filepath.Clean("/"+repo)))
				cmd.Stdin, cmd.Stdout, cmd.Stderr = ch, ch, ch.Stderr()
				code := 0
				if err := cmd.Run(); err != nil {
					code = 1
				}
				_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(code)}))
				return
			}
		}()
	}
}
