package container

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/gantry-cd/gantry/activities/awsauth"
	"github.com/gantry-cd/gantry/activities/container/wire"
	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/objstore"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/stepspec"
)

// bucketRef is where a cache or upload step's objects are: a bucket reached with an Aws
// connector's credentials, at an endpoint of its own (an S3-compatible store) or AWS's.
type bucketRef struct {
	connectorRef, region, endpoint, bucket string
	pathStyle                              text
}

func cacheRef(c stepspec.CacheS3) bucketRef {
	return bucketRef{connectorRef: c.ConnectorRef, region: c.Region, endpoint: c.Endpoint, bucket: c.Bucket, pathStyle: c.PathStyle}
}

// decodeHelperSpec reads a helper step's rendered spec into its type's spec S.
func decodeHelperSpec[S any](in contract.StepInput) (S, error) {
	sp, err := stepspec.Decode[S](in.Spec)
	if err != nil {
		return sp, contract.Fail(contract.Unknown, "%s spec: %v", in.Type, err)
	}
	return sp, nil
}

// maxCache bounds a cache archive, which the worker holds in memory while it moves it.
const maxCache = 1 << 30

// cacheBucket opens the step's bucket with its Aws connector's credentials.
func (a *Activity) cacheBucket(ctx context.Context, in contract.StepInput, ref bucketRef) (*objstore.Bucket, error) {
	conn, ok := in.Pod.Pod.Pod.Aws[ref.connectorRef]
	if !ok {
		return nil, contract.Fail(contract.Unknown, "%s: connector %q was not resolved before the run", in.Type, ref.connectorRef)
	}
	cfg, err := awsauth.Config(ctx, conn, ref.region, a.Secrets, nil)
	if err != nil {
		return nil, err
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if ref.endpoint != "" {
			o.BaseEndpoint = aws.String(ref.endpoint)
		}
		o.UsePathStyle = ref.endpoint != "" || ref.pathStyle.Bool() || objstore.PathStyle()
	})
	return &objstore.Bucket{Client: client, Name: ref.bucket}, nil
}

// saveCache archives the step's sourcePaths in the pod (the helper writes them as a tar
// stream) and writes the archive to bucket/key. With override false an existing key is kept.
func (a *Activity) saveCache(ctx context.Context, k *cluster, ns string, in contract.StepInput, log *logs.Writer) (contract.StepResult, error) {
	spec, err := decodeHelperSpec[stepspec.SaveCacheS3Spec](in)
	if err != nil {
		return contract.StepResult{}, err
	}
	b, err := a.cacheBucket(ctx, in, cacheRef(spec.CacheS3))
	if err != nil {
		return contract.StepResult{}, err
	}
	where := b.URL(spec.Key)
	if strings.EqualFold(string(spec.Override), "false") {
		if _, err := b.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.Name), Key: aws.String(spec.Key)}); err == nil {
			log.Line(fmt.Sprintf("cache %s exists and override is false: kept", where))
			return contract.StepResult{Outputs: map[string]any{"key": spec.Key, "saved": "false"}}, nil
		}
	}
	var tarball, errs bytes.Buffer
	cmd := append([]string{"/gantry-helper", "tar", wire.Workspace}, spec.SourcePaths...)
	if err := stream(ctx, k, ns, in.Pod.Pod.Name, contract.PodHelperContainer, cmd, nil, limitWriter(&tarball, maxCache), &errs); err != nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "SaveCacheS3: archive %v: %v %s", spec.SourcePaths, err, strings.TrimSpace(errs.String()))
	}
	body := tarball.Bytes()
	if spec.ArchiveFormat == "Gzip" {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		_, _ = zw.Write(body)
		if err := zw.Close(); err != nil {
			return contract.StepResult{}, err
		}
		body = z.Bytes()
	}
	if err := b.Put(ctx, spec.Key, body); err != nil {
		return contract.StepResult{}, awsauth.Fail(err, "SaveCacheS3: write %s with connector %s", where, spec.ConnectorRef)
	}
	log.Line(fmt.Sprintf("saved %v to %s (%d bytes)", spec.SourcePaths, where, len(body)))
	return contract.StepResult{Outputs: map[string]any{"key": spec.Key, "saved": "true", "size": len(body)}}, nil
}

// restoreCache unpacks bucket/key into the pod where its files were saved from. A missing key
// is a success (nothing to restore) unless failIfKeyNotFound.
func (a *Activity) restoreCache(ctx context.Context, k *cluster, ns string, in contract.StepInput, log *logs.Writer) (contract.StepResult, error) {
	spec, err := decodeHelperSpec[stepspec.RestoreCacheS3Spec](in)
	if err != nil {
		return contract.StepResult{}, err
	}
	b, err := a.cacheBucket(ctx, in, cacheRef(spec.CacheS3))
	if err != nil {
		return contract.StepResult{}, err
	}
	where := b.URL(spec.Key)
	body, err := b.Get(ctx, spec.Key)
	switch {
	case errors.Is(err, objstore.ErrNotFound) && strings.EqualFold(string(spec.FailIfKeyNotFound), "true"):
		return contract.StepResult{}, contract.Fail(contract.Unknown, "RestoreCacheS3: no cache at %s (failIfKeyNotFound)", where)
	case errors.Is(err, objstore.ErrNotFound):
		log.Line(fmt.Sprintf("no cache at %s: nothing restored", where))
		return contract.StepResult{Outputs: map[string]any{"key": spec.Key, "restored": "false"}}, nil
	case err != nil:
		return contract.StepResult{}, awsauth.Fail(err, "RestoreCacheS3: read %s with connector %s", where, spec.ConnectorRef)
	}
	var r io.Reader = bytes.NewReader(body)
	if spec.ArchiveFormat == "Gzip" {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return contract.StepResult{}, contract.Fail(contract.Unknown, "RestoreCacheS3: %s is not a gzip archive: %v", where, err)
		}
		r = zr
	}
	out := &output{log: log}
	err = stream(ctx, k, ns, in.Pod.Pod.Name, contract.PodHelperContainer, []string{"/gantry-helper", "untar", "/"}, r, out, out)
	_, last := out.flush()
	if err != nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "RestoreCacheS3: unpack %s: %v%s", where, err, lastLine(last))
	}
	log.Line(fmt.Sprintf("restored %s (%d bytes)", where, len(body)))
	return contract.StepResult{Outputs: map[string]any{"key": spec.Key, "restored": "true"}}, nil
}

// limitWriter fails writes past n bytes.
func limitWriter(w io.Writer, n int64) io.Writer { return &limited{w: w, left: n} }

type limited struct {
	w    io.Writer
	left int64
}

func (l *limited) Write(p []byte) (int, error) {
	if int64(len(p)) > l.left {
		return 0, fmt.Errorf("the archive is larger than %d bytes", maxCache)
	}
	l.left -= int64(len(p))
	return l.w.Write(p)
}

// s3Upload uploads the workspace files sourcePath matches (a path or a pattern, relative to
// /harness; `**` spans directories) to bucket/target: each under target joined with its path
// below the workspace, stripPrefix removed, as the reference's S3 upload plugin names them.
func (a *Activity) s3Upload(ctx context.Context, k *cluster, ns string, in contract.StepInput, log *logs.Writer) (contract.StepResult, error) {
	spec, err := decodeHelperSpec[stepspec.S3UploadSpec](in)
	if err != nil {
		return contract.StepResult{}, err
	}
	b, err := a.cacheBucket(ctx, in, bucketRef{connectorRef: spec.ConnectorRef, region: spec.Region, endpoint: spec.Endpoint, bucket: spec.Bucket})
	if err != nil {
		return contract.StepResult{}, err
	}
	var files, errs bytes.Buffer
	cmd := []string{"/gantry-helper", "reports", wire.Workspace, spec.SourcePath}
	if err := stream(ctx, k, ns, in.Pod.Pod.Name, contract.PodHelperContainer, cmd, nil, limitWriter(&files, maxCache), &errs); err != nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "S3Upload: find %s: %v %s", spec.SourcePath, err, strings.TrimSpace(errs.String()))
	}
	tr := tar.NewReader(&files)
	var keys []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return contract.StepResult{}, contract.Fail(contract.Unknown, "S3Upload: read the files of %s: %v", spec.SourcePath, err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			return contract.StepResult{}, err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(h.Name, wire.Workspace), "/")
		rel = strings.TrimPrefix(strings.TrimPrefix(rel, strings.TrimPrefix(spec.StripPrefix, "/")), "/")
		key := path.Join(spec.Target, rel)
		if err := b.Put(ctx, key, body); err != nil {
			return contract.StepResult{}, awsauth.Fail(err, "S3Upload: write %s with connector %s", b.URL(key), spec.ConnectorRef)
		}
		log.Line(fmt.Sprintf("uploaded %s to %s (%d bytes)", h.Name, b.URL(key), len(body)))
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "S3Upload: no file of the workspace matches %s", spec.SourcePath)
	}
	return contract.StepResult{Outputs: map[string]any{"uploaded": strings.Join(keys, ",")}}, nil
}
