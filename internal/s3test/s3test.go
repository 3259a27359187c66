// Package s3test starts a real S3-compatible server for tests: versitygw (hack/s3) serving a
// folder over the S3 protocol with SigV4, on a free loopback port.
package s3test

import (
	"context"
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
	*testproc.Daemon
}

// Start builds versitygw if its cache is cold (about a minute, once) and serves dir.
func Start(dir string) (*Server, error) {
	bin, err := testproc.Built("s3")
	if err != nil {
		return nil, err
	}
	ports, err := freeport.Ports(1)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(dir, "s3")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	cmd := exec.Command(bin, "--access", AccessKey, "--secret", SecretKey, "--region", Region, "--port", addr, "posix", root)
	d, err := testproc.StartDaemon("versitygw", filepath.Join(dir, "versitygw.log"), cmd)
	if err != nil {
		return nil, err
	}
	listening := func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := d.Ready(30*time.Second, 20*time.Millisecond, listening); err != nil {
		return nil, err
	}
	return &Server{Endpoint: "http://" + addr, Root: root, Daemon: d}, nil
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
