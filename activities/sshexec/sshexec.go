// Package sshexec reaches target hosts over SSH for the traditional deployments of issue 56:
// a connection checked against known hosts, authenticated by a private key or a password,
// scripts run in a working directory with their output streamed, and files copied over SFTP
// (written aside and renamed into place, so a copy cut off never leaves half a file). Its
// failures carry the failure-strategy categories: a host that cannot be reached is
// Connectivity, refused credentials or an unknown host key Authentication.
package sshexec

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pkg/sftp"
	"go.temporal.io/sdk/activity"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
)

// Target is one host and how to log in to it. Secrets are values here: the caller resolved
// them and masks them.
type Target struct {
	Host string
	Port int // 22 when 0
	User string
	// Key is a private key (PEM), with its Passphrase if it has one; Password is used when
	// there is no key.
	Key, Passphrase, Password string
	// KnownHosts are known_hosts lines the host's key must match. Empty: any key is
	// accepted, and the caller says so in its log.
	KnownHosts string
	// Timeout bounds the connection and the login (10 s when 0).
	Timeout time.Duration
}

// Addr is host:port.
func (t Target) Addr() string {
	p := t.Port
	if p == 0 {
		p = 22
	}
	return net.JoinHostPort(t.Host, strconv.Itoa(p))
}

// Client is a logged-in connection.
type Client struct {
	c      *ssh.Client
	target Target
}

// Dial connects and logs in.
func Dial(ctx context.Context, t Target) (*Client, error) {
	auth, err := authMethods(t)
	if err != nil {
		return nil, err
	}
	hostKey, err := hostKeyCallback(t.KnownHosts)
	if err != nil {
		return nil, err
	}
	timeout := t.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	cfg := &ssh.ClientConfig{User: t.User, Auth: auth, HostKeyCallback: hostKey, Timeout: timeout}
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", t.Addr())
	if err != nil {
		return nil, contract.Fail(contract.Connectivity, "host %s cannot be reached: %v", t.Addr(), err)
	}
	_ = conn.SetDeadline(time.Now().Add(timeout))
	sc, chans, reqs, err := ssh.NewClientConn(conn, t.Addr(), cfg)
	if err != nil {
		conn.Close()
		return nil, classify(t, err)
	}
	_ = conn.SetDeadline(time.Time{})
	return &Client{c: ssh.NewClient(sc, chans, reqs), target: t}, nil
}

func authMethods(t Target) ([]ssh.AuthMethod, error) {
	if t.Key != "" {
		var signer ssh.Signer
		var err error
		if t.Passphrase != "" {
			signer, err = ssh.ParsePrivateKeyWithPassphrase([]byte(t.Key), []byte(t.Passphrase))
		} else {
			signer, err = ssh.ParsePrivateKey([]byte(t.Key))
		}
		if err != nil {
			return nil, contract.Fail(contract.Authentication, "the SSH key for %s@%s does not parse: %v", t.User, t.Host, err)
		}
		return []ssh.AuthMethod{ssh.PublicKeys(signer)}, nil
	}
	if t.Password != "" {
		return []ssh.AuthMethod{ssh.Password(t.Password)}, nil
	}
	return nil, contract.Fail(contract.Authentication, "no key or password to log in to %s as %s", t.Host, t.User)
}

// hostKeyCallback checks host keys against known_hosts lines; none accepts any key.
func hostKeyCallback(lines string) (ssh.HostKeyCallback, error) {
	if strings.TrimSpace(lines) == "" {
		return ssh.InsecureIgnoreHostKey(), nil
	}
	f, err := os.CreateTemp("", "gantry-known-hosts-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(lines + "\n"); err != nil {
		f.Close()
		return nil, err
	}
	f.Close()
	cb, err := knownhosts.New(f.Name())
	if err != nil {
		return nil, contract.Fail(contract.Authentication, "known hosts do not parse: %v", err)
	}
	return cb, nil
}

// classify turns a login error into a step failure.
func classify(t Target, err error) error {
	var ke *knownhosts.KeyError
	switch {
	case errors.As(err, &ke) && len(ke.Want) > 0:
		return contract.Fail(contract.Authentication, "host %s presented a key that is not the one known for it: refusing to log in", t.Addr())
	case errors.As(err, &ke):
		return contract.Fail(contract.Authentication, "host %s is not among the known hosts: refusing to log in", t.Addr())
	case strings.Contains(err.Error(), "unable to authenticate"):
		return contract.Fail(contract.Authentication, "host %s refused the credentials of %s", t.Addr(), t.User)
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) {
		return contract.Fail(contract.Connectivity, "host %s: the SSH handshake failed: %v", t.Addr(), err)
	}
	return contract.Fail(contract.Connectivity, "host %s: %v", t.Addr(), err)
}

// Close closes the connection.
func (c *Client) Close() error { return c.c.Close() }

// Run runs a Bash script on the host in dir (created if missing; "" is the login folder)
// with env exported, its output (stdout and stderr) to out. It returns the script's exit
// code; cancelling ctx closes the session.
func (c *Client) Run(ctx context.Context, script, dir string, env map[string]string, out io.Writer) (int, error) {
	s, err := c.c.NewSession()
	if err != nil {
		return -1, contract.Fail(contract.Connectivity, "host %s: open a session: %v", c.target.Addr(), err)
	}
	defer s.Close()
	var b strings.Builder
	for k, v := range env {
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(v))
	}
	if dir != "" {
		fmt.Fprintf(&b, "mkdir -p %s && cd %s || exit 1\n", ShellPath(dir), ShellPath(dir))
	}
	b.WriteString(script)
	s.Stdin = strings.NewReader(b.String())
	w := &lockedWriter{w: out} // stdout and stderr are copied by two goroutines
	s.Stdout, s.Stderr = w, w
	done := make(chan error, 1)
	go func() { done <- s.Run("bash -s") }()
	select {
	case <-ctx.Done():
		_ = s.Signal(ssh.SIGKILL)
		s.Close()
		return -1, ctx.Err()
	case err := <-done:
		var exit *ssh.ExitError
		switch {
		case err == nil:
			return 0, nil
		case errors.As(err, &exit):
			return exit.ExitStatus(), nil
		}
		return -1, contract.Fail(contract.Connectivity, "host %s: the session ended: %v", c.target.Addr(), err)
	}
}

// shellName is a shell variable's name.
var shellName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ShellName reports whether s names a shell variable.
func ShellName(s string) bool { return shellName.MatchString(s) }

// RunOutputs runs script as Run does, then reads back the values of the shell variables
// names that the script left set (exported or not) from the shell that ran it. A script
// that ends with an explicit `exit` leaves none to read: that is an error.
func (c *Client) RunOutputs(ctx context.Context, script, dir string, env map[string]string, out io.Writer, names []string) (int, map[string]string, error) {
	if len(names) == 0 {
		code, err := c.Run(ctx, script, dir, env, out)
		return code, nil, err
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	file := ".gantry-outputs-" + hex.EncodeToString(id[:]) // in the user's home, where SFTP starts
	var b strings.Builder
	b.WriteString(script)
	b.WriteString("\n__gantry_rc=$?\n[ $__gantry_rc -ne 0 ] || { :")
	for _, n := range names {
		fmt.Fprintf(&b, "; if [ -n \"${%[1]s+set}\" ]; then printf '%%s\\0%%s\\0' %[1]s \"$%[1]s\"; fi", n)
	}
	fmt.Fprintf(&b, "; } > \"$HOME/%s\"\nexit $__gantry_rc\n", file)
	code, err := c.Run(ctx, b.String(), dir, env, out)
	if err != nil || code != 0 {
		return code, nil, err
	}
	sc, err := sftp.NewClient(c.c)
	if err != nil {
		return code, nil, contract.Fail(contract.Connectivity, "host %s: start SFTP: %v", c.target.Addr(), err)
	}
	defer sc.Close()
	f, err := sc.Open(file)
	if err != nil {
		return code, nil, contract.Fail(contract.Unknown,
			"host %s: output variables could not be captured: the script ended with an explicit exit before they were recorded", c.target.Addr())
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxOutputs+1))
	f.Close()
	_ = sc.Remove(file)
	if err != nil {
		return code, nil, contract.Fail(contract.Connectivity, "host %s: read the output variables: %v", c.target.Addr(), err)
	}
	if len(raw) > maxOutputs {
		return code, nil, contract.Fail(contract.Unknown, "host %s: output variables total more than %d bytes", c.target.Addr(), maxOutputs)
	}
	values := map[string]string{}
	parts := strings.Split(string(raw), "\x00")
	for i := 0; i+1 < len(parts); i += 2 {
		values[parts[i]] = parts[i+1]
	}
	return code, values, nil
}

// maxOutputs bounds the output variables of one script, as a ShellScript's are bounded.
const maxOutputs = 512 << 10

// Copy writes content to the file dest on the host (its folder made if missing), aside first
// and renamed into place, with mode.
func (c *Client) Copy(ctx context.Context, dest string, content io.Reader, mode os.FileMode) error {
	sc, err := sftp.NewClient(c.c)
	if err != nil {
		return contract.Fail(contract.Connectivity, "host %s: start SFTP: %v", c.target.Addr(), err)
	}
	defer sc.Close()
	if rest, ok := homeRelative(dest); ok {
		home, err := sc.Getwd() // SFTP starts in the login's home
		if err != nil {
			return contract.Fail(contract.Connectivity, "host %s: find the home folder: %v", c.target.Addr(), err)
		}
		dest = path.Join(home, rest)
	}
	if err := sc.MkdirAll(path.Dir(dest)); err != nil {
		return contract.Fail(contract.Unknown, "host %s: make %s: %v", c.target.Addr(), path.Dir(dest), err)
	}
	tmp := path.Join(path.Dir(dest), "."+path.Base(dest)+".gantry-part")
	f, err := sc.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return contract.Fail(contract.Unknown, "host %s: write %s: %v", c.target.Addr(), dest, err)
	}
	if _, err := io.Copy(f, contextReader{ctx, content}); err != nil {
		f.Close()
		_ = sc.Remove(tmp)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return contract.Fail(contract.Connectivity, "host %s: copy to %s: %v", c.target.Addr(), dest, err)
	}
	if err := f.Close(); err != nil {
		return contract.Fail(contract.Connectivity, "host %s: copy to %s: %v", c.target.Addr(), dest, err)
	}
	if err := sc.Chmod(tmp, mode); err != nil {
		return contract.Fail(contract.Unknown, "host %s: chmod %s: %v", c.target.Addr(), dest, err)
	}
	if err := sc.PosixRename(tmp, dest); err != nil {
		return contract.Fail(contract.Unknown, "host %s: rename into %s: %v", c.target.Addr(), dest, err)
	}
	return nil
}

// contextReader stops a copy when its context ends.
type contextReader struct {
	ctx context.Context
	r   io.Reader
}

func (c contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'" }

// homeRelative splits a path that starts at the login's home ($HOME, ${HOME} or ~, as the
// reference's generated Command steps write destinations and working directories) into the
// part below it; ok is false for any other path.
func homeRelative(p string) (rest string, ok bool) {
	for _, prefix := range []string{"${HOME}", "$HOME", "~"} {
		if r, found := strings.CutPrefix(p, prefix); found && (r == "" || r[0] == '/') {
			return strings.TrimPrefix(r, "/"), true
		}
	}
	return "", false
}

// ShellPath quotes a path for the host's shell, its home prefix expanded there.
func ShellPath(p string) string {
	if rest, ok := homeRelative(p); ok {
		if rest == "" {
			return `"$HOME"`
		}
		return `"$HOME"/` + shellQuote(rest)
	}
	return shellQuote(p)
}

// lockedWriter serialises the writes of a session's two output streams.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TargetFor is the login to host (a name, or host:port) with an SSH credential: its secrets
// resolved and masked, its key file read, and the host keys of the known_hosts file named
// ("" accepts any key; an empty file knows no host).
func TargetFor(ctx context.Context, r secrets.Resolver, mask *secrets.Masker, cr plan.SSHCredential, host, knownHosts string) (Target, error) {
	t := Target{Host: host, Port: cr.Port, User: cr.User}
	if h, p, err := net.SplitHostPort(host); err == nil {
		n, _ := strconv.Atoi(p)
		t.Host, t.Port = h, n
	}
	resolve := func(ref, what string) (string, error) {
		if ref == "" {
			return "", nil
		}
		v, err := secrets.Value(ctx, r, mask, "Secret", ref)
		if err != nil {
			return "", contract.Fail(contract.Authentication, "SSH credential %s: %s: %v", cr.ID, what, err)
		}
		return v, nil
	}
	var err error
	if t.Key, err = resolve(cr.KeyRef, "key"); err != nil {
		return t, err
	}
	if cr.KeyPath != "" {
		b, err := os.ReadFile(cr.KeyPath)
		if err != nil {
			return t, contract.Fail(contract.Authentication, "SSH credential %s: the key file on this worker: %v", cr.ID, err)
		}
		t.Key = string(b)
	}
	if t.Passphrase, err = resolve(cr.PassphraseRef, "passphrase"); err != nil {
		return t, err
	}
	if t.Password, err = resolve(cr.PasswordRef, "password"); err != nil {
		return t, err
	}
	if knownHosts != "" {
		b, err := os.ReadFile(knownHosts)
		if err != nil {
			return t, contract.Fail(contract.Unknown, "the worker's known hosts: %v", err)
		}
		t.KnownHosts = string(b)
		if strings.TrimSpace(t.KnownHosts) == "" {
			t.KnownHosts = "# no host is known\n"
		}
	}
	return t, nil
}

// Session is a step's login to its host: the step's log, opened with a line saying which
// attempt runs where as whom, the step's run context (its timeout, heartbeats) and the
// connection made within it.
type Session struct {
	Log    *logs.Writer
	Ctx    context.Context
	Client *Client
	cancel context.CancelFunc
}

// Open opens a step's log and logs in to target.
func Open(ctx context.Context, store logs.Store, in contract.StepInput, target Target) (*Session, error) {
	info := activity.GetInfo(ctx)
	log, err := store.Open(in.ExecutionID, in.StepPath)
	if err != nil {
		return nil, err
	}
	log.Line(fmt.Sprintf("# gantry: %s attempt %d on host %s as %s", in.StepPath, info.Attempt, target.Addr(), target.User))
	if target.KnownHosts == "" {
		log.Line("# the host's key is not checked: start the worker with --ssh-known-hosts")
	}
	runCtx, cancel := contract.RunContext(ctx, in.Timeout, info.HeartbeatTimeout)
	c, err := Dial(runCtx, target)
	if err != nil {
		cancel()
		log.Close()
		return nil, err
	}
	return &Session{Log: log, Ctx: runCtx, Client: c, cancel: cancel}, nil
}

// Close logs out and closes the log.
func (s *Session) Close() {
	s.Client.Close()
	s.cancel()
	s.Log.Close()
}
