// Package s3test starts a real S3-compatible server for tests: versitygw (hack/s3) serving a
// folder over the S3 protocol with SigV4, on a free loopback port.
package s3test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/gantry-cd/gantry/internal/freeport"
	"github.com/gantry-cd/gantry/internal/testproc"
)

// The server's root credentials.
const (
	AccessKey = "gantrytest"
	SecretKey = "gantry-test-secret-key"
	Region    = "us-east-1"
)

// Server is a running versitygw.
type Server struct {
	Endpoint string // http://127.0.0.1:PORT
	Root     string // the folder it serves: one sub-folder per bucket
	cmd      *exec.Cmd
	done     chan struct{}
}

// Start builds versitygw if its cache is cold (about a minute, once) and serves dir.
func Start(dir string) (*Server, error) {
	out, err := exec.Command(testproc.Hack("s3", "build.sh")).Output()
	if err != nil {
		return nil, fmt.Errorf("build versitygw (hack/s3/build.sh): %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	bin := lines[len(lines)-1]
	ports, err := freeport.Ports(1)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(dir, "s3")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	logf, err := os.Create(filepath.Join(dir, "versitygw.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--access", AccessKey, "--secret", SecretKey, "--region", Region, "--port", addr, "posix", root)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = testproc.DieWithTest()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start versitygw: %w", err)
	}
	s := &Server{Endpoint: "http://" + addr, Root: root, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(s.done) }()
	for deadline := time.Now().Add(30 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return s, nil
		}
		select {
		case <-s.done:
			b, _ := os.ReadFile(filepath.Join(dir, "versitygw.log"))
			return nil, fmt.Errorf("versitygw exited: %s", b)
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("versitygw did not listen on %s within 30s", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Client is an S3 client with the root credentials.
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{Region: Region, BaseEndpoint: aws.String(s.Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, "")})
}

// Bucket creates a bucket.
func (s *Server) Bucket(ctx context.Context, name string) error {
	_, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
	return err
}

// Put stores an object.
func (s *Server) Put(ctx context.Context, bucket, key string, body []byte) error {
	_, err := s.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(string(body))})
	return err
}

// Stop stops the server.
func (s *Server) Stop() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
	}
	<-s.done
}
