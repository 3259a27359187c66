package container

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/gantry-cd/gantry/activities"
	"github.com/gantry-cd/gantry/activities/awsauth"
	"github.com/gantry-cd/gantry/activities/container/wire"
	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/objstore"
)

// cacheSpec is a SaveCacheS3 or RestoreCacheS3 step's rendered spec.
type cacheSpec struct {
	ConnectorRef      string   `json:"connectorRef"`
	Region            string   `json:"region"`
	Bucket            string   `json:"bucket"`
	Key               string   `json:"key"`
	Endpoint          string   `json:"endpoint"`
	PathStyle         text     `json:"pathStyle"`
	ArchiveFormat     string   `json:"archiveFormat"`
	SourcePaths       []string `json:"sourcePaths"`
	Override          text     `json:"override"`
	FailIfKeyNotFound text     `json:"failIfKeyNotFound"`
}

// maxCache bounds a cache archive, which the worker holds in memory while it moves it.
const maxCache = 1 << 30

// cacheBucket opens the step's bucket with its Aws connector's credentials.
func (a *Activity) cacheBucket(ctx context.Context, in activities.StepInput, what string) (*objstore.Bucket, cacheSpec, error) {
	var spec cacheSpec
	if err := json.Unmarshal(in.Spec, &spec); err != nil {
		return nil, spec, activities.Fail(activities.Unknown, "%s spec: %v", what, err)
	}
	conn, ok := in.Pod.Pod.Pod.Aws[spec.ConnectorRef]
	if !ok {
		return nil, spec, activities.Fail(activities.Unknown, "%s: connector %q was not resolved before the run", what, spec.ConnectorRef)
	}
	cfg, err := awsauth.Config(ctx, conn, spec.Region, a.Secrets, nil)
	if err != nil {
		return nil, spec, err
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if spec.Endpoint != "" {
			o.BaseEndpoint = aws.String(spec.Endpoint)
		}
		o.UsePathStyle = spec.Endpoint != "" || strings.EqualFold(string(spec.PathStyle), "true") || objstore.PathStyle()
	})
	return &objstore.Bucket{Client: client, Name: spec.Bucket}, spec, nil
}

// saveCache archives the step's sourcePaths in the pod (the helper writes them as a tar
// stream) and writes the archive to bucket/key. With override false an existing key is kept.
func (a *Activity) saveCache(ctx context.Context, k *cluster, ns string, in activities.StepInput, log *logs.Writer) (activities.StepResult, error) {
	b, spec, err := a.cacheBucket(ctx, in, "SaveCacheS3")
	if err != nil {
		return activities.StepResult{}, err
	}
	where := b.URL(spec.Key)
	if strings.EqualFold(string(spec.Override), "false") {
		if _, err := b.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.Name), Key: aws.String(spec.Key)}); err == nil {
			log.Line(fmt.Sprintf("cache %s exists and override is false: kept", where))
			return activities.StepResult{Outputs: map[string]any{"key": spec.Key, "saved": "false"}}, nil
		}
	}
	var tarball, errs bytes.Buffer
	cmd := append([]string{"/gantry-helper", "tar", wire.Workspace}, spec.SourcePaths...)
	if err := stream(ctx, k, ns, in.Pod.Pod.Name, activities.PodHelperContainer, cmd, nil, limitWriter(&tarball, maxCache), &errs); err != nil {
		return activities.StepResult{}, activities.Fail(activities.Unknown, "SaveCacheS3: archive %v: %v %s", spec.SourcePaths, err, strings.TrimSpace(errs.String()))
	}
	body := tarball.Bytes()
	if spec.ArchiveFormat == "Gzip" {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		_, _ = zw.Write(body)
		if err := zw.Close(); err != nil {
			return activities.StepResult{}, err
		}
		body = z.Bytes()
	}
	if err := b.Put(ctx, spec.Key, body); err != nil {
		return activities.StepResult{}, awsauth.Fail(err, "SaveCacheS3: write %s with connector %s", where, spec.ConnectorRef)
	}
	log.Line(fmt.Sprintf("saved %v to %s (%d bytes)", spec.SourcePaths, where, len(body)))
	return activities.StepResult{Outputs: map[string]any{"key": spec.Key, "saved": "true", "size": len(body)}}, nil
}

// restoreCache unpacks bucket/key into the pod where its files were saved from. A missing key
// is a success (nothing to restore) unless failIfKeyNotFound.
func (a *Activity) restoreCache(ctx context.Context, k *cluster, ns string, in activities.StepInput, log *logs.Writer) (activities.StepResult, error) {
	b, spec, err := a.cacheBucket(ctx, in, "RestoreCacheS3")
	if err != nil {
		return activities.StepResult{}, err
	}
	where := b.URL(spec.Key)
	body, err := b.Get(ctx, spec.Key)
	switch {
	case errors.Is(err, objstore.ErrNotFound) && strings.EqualFold(string(spec.FailIfKeyNotFound), "true"):
		return activities.StepResult{}, activities.Fail(activities.Unknown, "RestoreCacheS3: no cache at %s (failIfKeyNotFound)", where)
	case errors.Is(err, objstore.ErrNotFound):
		log.Line(fmt.Sprintf("no cache at %s: nothing restored", where))
		return activities.StepResult{Outputs: map[string]any{"key": spec.Key, "restored": "false"}}, nil
	case err != nil:
		return activities.StepResult{}, awsauth.Fail(err, "RestoreCacheS3: read %s with connector %s", where, spec.ConnectorRef)
	}
	var r io.Reader = bytes.NewReader(body)
	if spec.ArchiveFormat == "Gzip" {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return activities.StepResult{}, activities.Fail(activities.Unknown, "RestoreCacheS3: %s is not a gzip archive: %v", where, err)
		}
		r = zr
	}
	out := &output{log: log}
	err = stream(ctx, k, ns, in.Pod.Pod.Name, activities.PodHelperContainer, []string{"/gantry-helper", "untar", "/"}, r, out, out)
	_, last := out.flush()
	if err != nil {
		return activities.StepResult{}, activities.Fail(activities.Unknown, "RestoreCacheS3: unpack %s: %v%s", where, err, lastLine(last))
	}
	log.Line(fmt.Sprintf("restored %s (%d bytes)", where, len(body)))
	return activities.StepResult{Outputs: map[string]any{"key": spec.Key, "restored": "true"}}, nil
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
