// Package objstore reads and writes objects of one S3 bucket (AWS S3 or any S3-compatible
// server): step logs shipped off the worker that ran them, S3 manifest stores and artifacts.
package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Config says where a bucket is and how to sign requests to it.
type Config struct {
	// Location is "BUCKET" or "BUCKET/PREFIX" (an s3:// prefix is allowed).
	Location string
	// Endpoint is an S3-compatible server's URL; empty is AWS S3 (or AWS_ENDPOINT_URL_S3).
	// Requests to an endpoint use path-style addressing.
	Endpoint string
	Region   string
	// Profile is a shared-config profile; with no static keys, the SDK's default chain
	// (environment, shared config, web identity, instance role) signs.
	Profile string
	// AccessKeyID and SecretAccessKey are static keys.
	AccessKeyID, SecretAccessKey string
}

// Bucket is a bucket and the prefix every key is below.
type Bucket struct {
	Client *s3.Client
	Name   string
	Prefix string // "" or ending in "/"
}

// Object is a listed object: its key below the bucket's prefix and its size.
type Object struct {
	Key  string
	Size int64
}

// ErrNotFound is returned by Get for a key with no object.
var ErrNotFound = errors.New("no such object")

// Open returns the bucket c names. It does not call S3.
func Open(ctx context.Context, c Config) (*Bucket, error) {
	name, prefix := SplitLocation(c.Location)
	if name == "" {
		return nil, fmt.Errorf("bucket %q: give a bucket name, optionally followed by /PREFIX", c.Location)
	}
	var opts []func(*config.LoadOptions) error
	if c.Region != "" {
		opts = append(opts, config.WithRegion(c.Region))
	}
	if c.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(c.Profile))
	}
	if c.AccessKeyID != "" || c.SecretAccessKey != "" {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, "")))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration for bucket %s: %w", name, err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1" // S3-compatible servers mostly ignore it; SigV4 needs one
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if c.Endpoint != "" {
			o.BaseEndpoint = aws.String(c.Endpoint)
		}
		o.UsePathStyle = c.Endpoint != "" || PathStyle()
	})
	return &Bucket{Client: client, Name: name, Prefix: prefix}, nil
}

// SplitLocation splits "s3://bucket/some/prefix" or "bucket/some/prefix" into the bucket and a
// prefix ending in "/" (or "").
func SplitLocation(loc string) (bucket, prefix string) {
	loc = strings.TrimPrefix(loc, "s3://")
	bucket, prefix, _ = strings.Cut(loc, "/")
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	return bucket, prefix
}

// PathStyle reports whether the environment points S3 at another endpoint (AWS_ENDPOINT_URL or
// AWS_ENDPOINT_URL_S3): S3-compatible servers on an address take path-style requests.
func PathStyle() bool {
	return envSet("AWS_ENDPOINT_URL_S3") || envSet("AWS_ENDPOINT_URL")
}

// URL is s3://bucket/prefix+key, for messages.
func (b *Bucket) URL(key string) string {
	return (&url.URL{Scheme: "s3", Host: b.Name, Path: "/" + b.Prefix + key}).String()
}

// Put writes an object.
func (b *Bucket) Put(ctx context.Context, key string, body []byte) error {
	_, err := b.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b.Name), Key: aws.String(b.Prefix + key),
		Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))})
	if err != nil {
		return fmt.Errorf("write %s: %w", b.URL(key), err)
	}
	return nil
}

// Get reads an object whole; ErrNotFound (wrapped) when there is none.
func (b *Bucket) Get(ctx context.Context, key string) ([]byte, error) {
	out, err := b.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.Name), Key: aws.String(b.Prefix + key)})
	if err != nil {
		var nk *types.NoSuchKey
		if errors.As(err, &nk) {
			return nil, fmt.Errorf("read %s: %w", b.URL(key), ErrNotFound)
		}
		return nil, fmt.Errorf("read %s: %w", b.URL(key), err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", b.URL(key), err)
	}
	return body, nil
}

// List returns the objects below prefix (relative to the bucket's prefix), in key order.
func (b *Bucket) List(ctx context.Context, prefix string) ([]Object, error) {
	var out []Object
	p := s3.NewListObjectsV2Paginator(b.Client, &s3.ListObjectsV2Input{Bucket: aws.String(b.Name), Prefix: aws.String(b.Prefix + prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", b.URL(prefix), err)
		}
		for _, o := range page.Contents {
			out = append(out, Object{Key: strings.TrimPrefix(aws.ToString(o.Key), b.Prefix), Size: aws.ToInt64(o.Size)})
		}
	}
	return out, nil
}

func envSet(name string) bool { v, ok := os.LookupEnv(name); return ok && v != "" }
