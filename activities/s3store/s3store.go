// Package s3store reads what a Deployment stage takes from S3 at its service phase: the files
// of an S3 manifest store, and an AmazonS3 artifact (a file path, or the newest object
// matching a pattern). Requests are signed with the store's or source's Aws connector.
package s3store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/gantry-cd/gantry/activities/awsauth"
	"github.com/gantry-cd/gantry/activities/objstore"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/manifests"
	"github.com/gantry-cd/gantry/plan"
)

// Reader reads buckets with the worker's secrets.
type Reader struct {
	Secrets secrets.Resolver
}

// bucket is a client for bucket signed with c.
func (r *Reader) bucket(ctx context.Context, c plan.AwsConnector, bucket, region string) (*objstore.Bucket, error) {
	cfg, err := awsauth.Config(ctx, c, region, r.Secrets, nil)
	if err != nil {
		return nil, err
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = objstore.PathStyle() })
	return &objstore.Bucket{Client: client, Name: bucket}, nil
}

// FetchManifests reads a manifest's S3 store: each path is an object's key, or a folder whose
// .yaml, .yml and .tpl objects are read (values paths: every object). Digest fingerprints the
// keys and ETags read, so a run says which versions it deployed.
func (r *Reader) FetchManifests(ctx context.Context, in contract.S3FetchInput) (contract.Fetched, error) {
	st := in.Store
	b, err := r.bucket(ctx, st.Connector, st.Bucket, st.Region)
	if err != nil {
		return contract.Fetched{}, err
	}
	sum := sha256.New()
	var out contract.Fetched
	size := 0
	read := func(paths []string, all bool) ([]plan.File, error) {
		var files []plan.File
		for _, p := range paths {
			p = strings.TrimPrefix(p, "/")
			objs, err := r.objectsAt(ctx, b, p, all)
			if err != nil {
				return nil, err
			}
			for _, o := range objs {
				body, err := b.Get(ctx, o.Key)
				if err != nil {
					return nil, awsauth.Fail(err, "manifest %s: read s3://%s/%s with connector %s", in.Manifest, st.Bucket, o.Key, st.Connector.ID)
				}
				if size += len(body); size > plan.MaxManifestBytes {
					return nil, contract.Fail(contract.Verification, "manifest %s: more than %d KiB of files in s3://%s/%s, too much to carry in a run", in.Manifest, plan.MaxManifestBytes>>10, st.Bucket, p)
				}
				fmt.Fprintf(sum, "%s %s\n", o.Key, o.ETag)
				unpacked, err := manifests.UnpackDependencyFiles(o.Key, body)
				if err != nil {
					return nil, contract.Fail(contract.Verification, "manifest %s: s3://%s/%s: %v", in.Manifest, st.Bucket, o.Key, err)
				}
				for _, f := range unpacked {
					files = append(files, plan.File{Path: f.Path, Text: f.Text})
				}
			}
		}
		return files, nil
	}
	if out.Files, err = read(st.Paths, false); err != nil {
		return contract.Fetched{}, err
	}
	if out.Values, err = read(st.ValuesPaths, true); err != nil {
		return contract.Fetched{}, err
	}
	out.Digest = "sha256:" + hex.EncodeToString(sum.Sum(nil))
	return out, nil
}

// object is a listed object with what identifies its version.
type object struct {
	Key      string
	ETag     string
	Size     int64
	Modified time.Time
}

// objectsAt lists the object p names, or the objects of folder p (manifest files only unless
// all), in key order.
func (r *Reader) objectsAt(ctx context.Context, b *objstore.Bucket, p string, all bool) ([]object, error) {
	list, err := list(ctx, b, p)
	if err != nil {
		return nil, awsauth.Fail(err, "list s3://%s/%s", b.Name, p)
	}
	var out []object
	for _, o := range list {
		if o.Key == p {
			return []object{o}, nil
		}
		inFolder := p == "" || strings.HasPrefix(o.Key, strings.TrimSuffix(p, "/")+"/")
		if !inFolder || strings.HasSuffix(o.Key, "/") {
			continue
		}
		switch path.Ext(o.Key) {
		case ".yaml", ".yml", ".tpl":
			out = append(out, o)
		default:
			if all {
				out = append(out, o)
			}
		}
	}
	if len(out) == 0 {
		return nil, contract.Fail(contract.Verification, "s3://%s/%s: no such object, and no manifest files (.yaml, .yml, .tpl) below it", b.Name, p)
	}
	return out, nil
}

func list(ctx context.Context, b *objstore.Bucket, prefix string) ([]object, error) {
	var out []object
	pages := s3.NewListObjectsV2Paginator(b.Client, &s3.ListObjectsV2Input{Bucket: aws.String(b.Name), Prefix: aws.String(prefix)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			out = append(out, object{Key: aws.ToString(o.Key), ETag: strings.Trim(aws.ToString(o.ETag), `"`), Size: aws.ToInt64(o.Size), Modified: aws.ToTime(o.LastModified)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// ResolveArtifact finds an AmazonS3 artifact's object: its filePath (checked to exist), or the
// newest object whose key matches filePathRegex (a regular expression matching the whole key;
// a pattern that is not one is taken as a glob, * matching within a folder).
func (r *Reader) ResolveArtifact(ctx context.Context, in contract.S3ResolveInput) (contract.S3Resolved, error) {
	a := in.Artifact
	b, err := r.bucket(ctx, a.Connector, a.Bucket, a.Region)
	if err != nil {
		return contract.S3Resolved{}, err
	}
	where := fmt.Sprintf("artifact %s: s3://%s", in.ID, a.Bucket)
	var found *object
	if a.FilePath != "" {
		key := strings.TrimPrefix(a.FilePath, "/")
		out, err := b.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(a.Bucket), Key: aws.String(key)})
		if err != nil {
			return contract.S3Resolved{}, awsauth.Fail(err, "%s/%s (connector %s)", where, key, a.Connector.ID)
		}
		found = &object{Key: key, ETag: strings.Trim(aws.ToString(out.ETag), `"`), Size: aws.ToInt64(out.ContentLength), Modified: aws.ToTime(out.LastModified)}
	} else {
		match, prefix := matcher(a.FilePathRegex)
		objs, err := list(ctx, b, prefix)
		if err != nil {
			return contract.S3Resolved{}, awsauth.Fail(err, "%s: list objects (connector %s)", where, a.Connector.ID)
		}
		for i, o := range objs {
			if match(o.Key) && (found == nil || o.Modified.After(found.Modified) || o.Modified.Equal(found.Modified) && o.Key > found.Key) {
				found = &objs[i]
			}
		}
		if found == nil {
			return contract.S3Resolved{}, contract.Fail(contract.Verification, "%s: no object matches filePathRegex %q", where, a.FilePathRegex)
		}
	}
	region := cmp.Or(a.Region, b.Client.Options().Region)
	return contract.S3Resolved{Bucket: a.Bucket, FilePath: found.Key, Region: region, ETag: found.ETag, Size: found.Size,
		Modified: found.Modified.UTC().Format(time.RFC3339), URL: (&objstore.Bucket{Name: a.Bucket}).URL(found.Key)}, nil
}

// matcher matches keys against a filePathRegex and returns the literal prefix to list.
func matcher(pattern string) (func(string) bool, string) {
	pattern = strings.TrimPrefix(pattern, "/")
	prefix := pattern
	if i := strings.IndexAny(pattern, `.*+?()[]{}|^$\`); i >= 0 {
		prefix = pattern[:i]
	}
	if re, err := regexp.Compile("^(?:" + pattern + ")$"); err == nil {
		return re.MatchString, prefix
	}
	return func(key string) bool { ok, _ := path.Match(pattern, key); return ok }, prefix
}
