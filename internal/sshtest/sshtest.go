// Package sshtest runs real OpenSSH servers (Debian's sshd, hack/ssh/install-sshd.sh) on
// loopback for tests: each with its own host key, port and configuration, a key user (the
// user the tests run as, by an authorized key of the test's) and a password user (a system
// user made once, gantry-ssh, whose password the test sets). Servers stop when the test ends;
// Stop and Start again make a host that is down and comes back.
package sshtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/gantry-cd/gantry/internal/freeport"
	"github.com/gantry-cd/gantry/internal/testproc"
)

// PasswordUser is the system user password logins use.
const PasswordUser = "gantry-ssh"

// Server is one sshd on a loopback address.
type Server struct {
	Addr string // 127.0.0.1:PORT
	Port int
	// KeyUser logs in with ClientKey (PEM); PasswordUser with Password.
	KeyUser   string
	ClientKey string
	Password  string
	// HostKey is the server's public key; KnownHosts a known_hosts line naming it.
	HostKey    ssh.PublicKey
	KnownHosts string
	// Home is a folder both users may write to (the key user's files land there too).
	Home string

	dir string
	cmd *exec.Cmd
	t   testing.TB
}

var installOnce sync.Once
var installErr error

// Start starts an sshd on 127.0.0.1, installing the package the first time if it is missing.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartOn(t, "127.0.0.1", 0)
}

// StartOn starts an sshd on a loopback address (127.0.0.2 is another host than 127.0.0.1) and
// port (0: a free one), so that several hosts can share a port as real ones do.
func StartOn(t testing.TB, ip string, port int) *Server {
	t.Helper()
	installOnce.Do(func() {
		_, installErr = testproc.Run(testproc.Hack("ssh", "install-sshd.sh"))
	})
	if installErr != nil {
		t.Fatalf("install sshd: %v", installErr)
	}
	dir := t.TempDir()
	s := &Server{dir: dir, t: t, Home: filepath.Join(dir, "home")}
	if err := os.MkdirAll(s.Home, 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(s.Home, 0o777)
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	s.KeyUser = me.Username
	// Host key and client key.
	hostPub, hostPEM := newKey(t)
	clientPub, clientPEM := newKey(t)
	s.HostKey, s.ClientKey = hostPub, clientPEM
	write(t, filepath.Join(dir, "host_key"), hostPEM, 0o600)
	keys := filepath.Join(dir, "authorized")
	if err := os.MkdirAll(keys, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(keys, s.KeyUser), string(ssh.MarshalAuthorizedKey(clientPub)), 0o644)
	if s.Port = port; port == 0 {
		ports, err := freeport.Ports(1)
		if err != nil {
			t.Fatal(err)
		}
		s.Port = ports[0]
	}
	s.Addr = net.JoinHostPort(ip, strconv.Itoa(s.Port))
	s.KnownHosts = fmt.Sprintf("[%s]:%d %s", ip, s.Port, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(hostPub))))
	s.Password = passwordUser(t)
	write(t, filepath.Join(dir, "sshd_config"), fmt.Sprintf(`Port %d
ListenAddress %s
HostKey %s
PidFile %s
AuthorizedKeysFile %s/%%u
PasswordAuthentication yes
KbdInteractiveAuthentication no
UsePAM no
PermitRootLogin yes
StrictModes no
Subsystem sftp internal-sftp
LogLevel ERROR
MaxStartups 100
`, s.Port, ip, filepath.Join(dir, "host_key"), filepath.Join(dir, "sshd.pid"), keys), 0o600)
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatalf("sshd's privilege separation folder: %v", err)
	}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// Start starts the server (again, after Stop) and waits until it accepts connections.
func (s *Server) Start() {
	s.t.Helper()
	log, err := os.OpenFile(filepath.Join(s.dir, "sshd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		s.t.Fatal(err)
	}
	s.cmd = exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", filepath.Join(s.dir, "sshd_config"))
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start sshd: %v", err)
	}
	go func() { _ = s.cmd.Wait(); log.Close() }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.DialTimeout("tcp", s.Addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(s.dir, "sshd.log"))
			s.t.Fatalf("sshd on %s did not start: %v\n%s", s.Addr, err, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop stops the server: the host is down until Start.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		for i := 0; i < 100; i++ {
			if c, err := net.DialTimeout("tcp", s.Addr, 50*time.Millisecond); err != nil {
				break
			} else {
				c.Close()
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// passwordUser makes the password user the first time (a system user without a home of its
// own) with a password of this machine's, random, kept in the cache folder so that every test
// process (packages run at once) logs in with the same; it returns the password.
func passwordUser(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("password logins need a system user: run as root")
	}
	defer ownHome(t)
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(cache, "gantry", "ssh", "password")
	b, err := os.ReadFile(file)
	if err == nil && len(b) > 0 {
		if _, err := user.Lookup(PasswordUser); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	lock := flock(t, file+".lock")
	defer lock()
	if b, err := os.ReadFile(file); err == nil && len(b) > 0 {
		if _, err := user.Lookup(PasswordUser); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	if _, err := user.Lookup(PasswordUser); err != nil {
		if out, err := exec.Command("useradd", "--no-create-home", "--shell", "/bin/bash", PasswordUser).CombinedOutput(); err != nil {
			t.Fatalf("useradd %s: %v\n%s", PasswordUser, err, out)
		}
	}
	raw := make([]byte, 18)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	pw := fmt.Sprintf("%x", raw)
	cmd := exec.Command("chpasswd")
	cmd.Stdin = strings.NewReader(PasswordUser + ":" + pw + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chpasswd: %v\n%s", err, out)
	}
	write(t, file, pw, 0o600)
	return pw
}

// ownHome gives the password user its home folder when it has none (sshd logs in there).
func ownHome(t testing.TB) {
	u, err := user.Lookup(PasswordUser)
	if err != nil || u.HomeDir == "" {
		return
	}
	if _, err := os.Stat(u.HomeDir); err == nil {
		return
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.MkdirAll(u.HomeDir, 0o755); err != nil {
		t.Fatalf("home of %s: %v", PasswordUser, err)
	}
	_ = os.Chown(u.HomeDir, uid, gid)
}

// flock takes an exclusive lock on a file (made if missing) and returns its release.
func flock(t testing.TB, name string) func() {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }
}

func newKey(t testing.TB) (ssh.PublicKey, string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return sp, string(pem.EncodeToMemory(block))
}

func write(t testing.TB, name, text string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(name, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
}
