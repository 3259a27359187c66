package sshexec

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/internal/sshtest"
)

// Against a real sshd: key and password logins checked against known hosts, a script's
// output, exit code, working directory and environment, a file copied into place; and the
// failures a deployment tells apart.
func TestSSHAgainstOpenSSH(t *testing.T) {
	srv := sshtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key := Target{Host: "127.0.0.1", Port: srv.Port, User: srv.KeyUser, Key: srv.ClientKey, KnownHosts: srv.KnownHosts}
	c, err := Dial(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dir := filepath.Join(srv.Home, "app")
	var out bytes.Buffer
	code, err := c.Run(ctx, "echo \"in $(pwd) as $(whoami): $GREETING\"\nexit 7\n", dir, map[string]string{"GREETING": "it's me"}, &out)
	if err != nil || code != 7 {
		t.Fatalf("run: code %d, %v", code, err)
	}
	if want := "in " + dir + " as " + srv.KeyUser + ": it's me"; !strings.Contains(out.String(), want) {
		t.Errorf("output %q, want %q", out.String(), want)
	}
	dest := filepath.Join(srv.Home, "releases", "app.tar")
	if err := c.Copy(ctx, dest, strings.NewReader("artifact v1"), 0o640); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(dest); err != nil || string(b) != "artifact v1" {
		t.Errorf("copied %q, %v", b, err)
	}
	if st, _ := os.Stat(dest); st == nil || st.Mode().Perm() != 0o640 {
		t.Errorf("copied file's mode: %v", st)
	}

	// Output variables: read from the shell that ran the script, set ones only, even with
	// newlines; an explicit exit leaves none to read.
	out.Reset()
	code, vals, err := c.RunOutputs(ctx, "PORT=8080\nNOTE='two\nlines'\necho started\n", dir, nil, &out, []string{"PORT", "NOTE", "UNSET"})
	if err != nil || code != 0 || vals["PORT"] != "8080" || vals["NOTE"] != "two\nlines" || len(vals) != 2 || !strings.Contains(out.String(), "started") {
		t.Errorf("outputs: %d %v %q (output %q)", code, err, vals, out.String())
	}
	if _, _, err := c.RunOutputs(ctx, "PORT=1\nexit 0\n", dir, nil, io.Discard, []string{"PORT"}); err == nil || !strings.Contains(err.Error(), "explicit exit") {
		t.Errorf("an explicit exit: %v", err)
	}
	if code, _, err := c.RunOutputs(ctx, "false", dir, nil, io.Discard, []string{"PORT"}); err != nil || code != 1 {
		t.Errorf("a failing script: %d %v", code, err)
	}
	home, _ := os.UserHomeDir() // the key user is the test's
	if left, _ := filepath.Glob(filepath.Join(home, ".gantry-outputs-*")); len(left) != 0 {
		t.Errorf("left on the host: %v", left)
	}

	// Paths at the login's home, as the reference's generated steps write them.
	sub := ".gantry-sshexec-test-" + strconv.Itoa(srv.Port)
	t.Cleanup(func() { _ = os.RemoveAll(filepath.Join(home, sub)) })
	if err := c.Copy(ctx, "$HOME/"+sub+"/app.conf", strings.NewReader("x=1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(home, sub, "app.conf")); err != nil || string(b) != "x=1" {
		t.Errorf("copied to $HOME: %q, %v", b, err)
	}
	out.Reset()
	if code, err := c.Run(ctx, "pwd; ls", "${HOME}/"+sub, nil, &out); err != nil || code != 0 || !strings.Contains(out.String(), filepath.Join(home, sub)+"\napp.conf") {
		t.Errorf("ran in ${HOME}/...: %d %v %q", code, err, out.String())
	}

	pw := Target{Host: "127.0.0.1", Port: srv.Port, User: sshtest.PasswordUser, Password: srv.Password, KnownHosts: srv.KnownHosts}
	pc, err := Dial(ctx, pw)
	if err != nil {
		t.Fatalf("password login: %v", err)
	}
	out.Reset()
	if code, err := pc.Run(ctx, "whoami", "", nil, &out); err != nil || code != 0 || strings.TrimSpace(out.String()) != sshtest.PasswordUser {
		t.Errorf("password user: %d %v %q", code, err, out.String())
	}
	pc.Close()

	other := sshtest.Start(t)
	for name, c := range map[string]struct {
		target   Target
		category contract.Category
		want     string
	}{
		"wrong password":   {Target{Host: "127.0.0.1", Port: srv.Port, User: sshtest.PasswordUser, Password: "nope", KnownHosts: srv.KnownHosts}, contract.Authentication, "refused the credentials"},
		"unknown host key": {Target{Host: "127.0.0.1", Port: srv.Port, User: srv.KeyUser, Key: srv.ClientKey, KnownHosts: strings.Replace(other.KnownHosts, other.Addr[strings.LastIndex(other.Addr, ":")+1:], srv.Addr[strings.LastIndex(srv.Addr, ":")+1:], 1)}, contract.Authentication, "not the one known"},
		"host not listed":  {Target{Host: "127.0.0.1", Port: srv.Port, User: srv.KeyUser, Key: srv.ClientKey, KnownHosts: other.KnownHosts}, contract.Authentication, "not among the known hosts"},
		"host down":        {Target{Host: "127.0.0.1", Port: other.Port, User: srv.KeyUser, Key: srv.ClientKey, KnownHosts: other.KnownHosts}, contract.Connectivity, "cannot be reached"},
	} {
		t.Run(name, func(t *testing.T) {
			if name == "host down" {
				other.Stop()
				defer other.Start()
			}
			_, err := Dial(ctx, c.target)
			f := contract.Classify(err)
			if err == nil || f.Category != c.category || !strings.Contains(f.Message, c.want) || strings.Contains(f.Message, srv.Password) {
				t.Errorf("%v (%+v), want %s %q", err, f, c.category, c.want)
			}
		})
	}
}

// slowReader hands out its bytes a little at a time and cancels once half are read: a copy
// cut off mid-way, as a worker killed during it leaves one.
type slowReader struct {
	data   []byte
	off    int
	cancel context.CancelFunc
}

func (r *slowReader) Read(p []byte) (int, error) {
	if r.off >= len(r.data) {
		return 0, io.EOF
	}
	if r.off >= len(r.data)/2 && r.cancel != nil {
		r.cancel()
		r.cancel = nil
	}
	n := copy(p[:min(len(p), 4096)], r.data[r.off:])
	r.off += n
	return n, nil
}

// A copy cut off halfway leaves the file that was there before, whole; the step's next
// attempt copies the new one into place.
func TestCopyCutOffLeavesNoHalfFile(t *testing.T) {
	srv := sshtest.Start(t)
	ctx := context.Background()
	c, err := Dial(ctx, Target{Host: "127.0.0.1", Port: srv.Port, User: srv.KeyUser, Key: srv.ClientKey, KnownHosts: srv.KnownHosts})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dest := filepath.Join(srv.Home, "app.jar")
	if err := c.Copy(ctx, dest, strings.NewReader("release 1"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("release 2 "), 200_000)
	cut, cancel := context.WithCancel(ctx)
	err = c.Copy(cut, dest, &slowReader{data: big, cancel: cancel}, 0o644)
	if err == nil {
		t.Fatal("a cancelled copy succeeded")
	}
	if b, _ := os.ReadFile(dest); string(b) != "release 1" {
		t.Fatalf("after a cut-off copy the file holds %d bytes, want the previous release whole", len(b))
	}
	if err := c.Copy(ctx, dest, bytes.NewReader(big), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dest); !bytes.Equal(b, big) {
		t.Fatalf("the retried copy wrote %d bytes, want %d", len(b), len(big))
	}
}

func TestShellPath(t *testing.T) {
	for in, want := range map[string]string{
		"/opt/shop":        `'/opt/shop'`,
		"$HOME":            `"$HOME"`,
		"$HOME/shop/prod":  `"$HOME"/'shop/prod'`,
		"${HOME}/it's":     `"$HOME"/'it'"'"'s'`,
		"~/shop":           `"$HOME"/'shop'`,
		"$HOMEDIR/shop":    `'$HOMEDIR/shop'`,
		"releases/$HOME/x": `'releases/$HOME/x'`,
	} {
		if got := ShellPath(in); got != want {
			t.Errorf("ShellPath(%q) = %s, want %s", in, got, want)
		}
	}
}
