package command

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/gantry-cd/gantry/activities/awsauth"
	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/objstore"
	"github.com/gantry-cd/gantry/activities/registry"
	"github.com/gantry-cd/gantry/contract"
)

// artifact is the artifact a Copy or DownloadArtifact unit fetches (what names the unit's
// verb): the stage's, or in a rollback step what the infrastructure was deployed with before;
// nil without an error when a rollback has nothing to restore.
func (r *run) artifact(what string) (*contract.DeployArtifact, error) {
	switch a := r.in.Deploy.Artifact; {
	case a != nil:
		return a, nil
	case r.in.Deploy.Rollback:
		r.log.Line("no earlier successful deployment of this service to this infrastructure: no artifact to restore")
		return nil, nil
	}
	return nil, contract.Fail(contract.Unknown, "the service has no artifact to %s: give it `artifacts.primary`", what)
}

// copyArtifact fetches the artifact on the worker and writes it into dir on the host: an S3
// object under its own name, an image as a `docker load` archive, a CustomArtifact whose
// version is a URL under the URL's file name.
func (r *run) copyArtifact(ctx context.Context, dir string) error {
	a, err := r.artifact("copy")
	if a == nil {
		return err
	}
	file, body, err := r.openArtifact(ctx, a)
	if err != nil {
		return err
	}
	defer body.Close()
	dest := path.Join(dir, file)
	if err := r.c.Copy(ctx, dest, body, 0o644); err != nil {
		return err
	}
	r.log.Line(fmt.Sprintf("copied %s to %s:%s", a.String(), r.host, dest))
	return nil
}

// openArtifact opens the artifact for reading and names the file it is copied to.
func (r *run) openArtifact(ctx context.Context, a *contract.DeployArtifact) (string, io.ReadCloser, error) {
	switch {
	case a.Bucket != "":
		client, err := r.s3(ctx, a)
		if err != nil {
			return "", nil, err
		}
		out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(a.Bucket), Key: aws.String(a.Key)})
		if err != nil {
			return "", nil, awsauth.Fail(err, "read %s", a.String())
		}
		return path.Base(a.Key), out.Body, nil
	case a.Type == "CustomArtifact":
		u, err := artifactURL(a)
		if err != nil {
			return "", nil, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return "", nil, contract.Fail(contract.Unknown, "artifact %s: %v", a.String(), err)
		}
		resp, err := http.DefaultClient.Do(req)
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, whose query may hold credentials
		}
		if err != nil {
			return "", nil, contract.Fail(contract.Connectivity, "artifact %s: %v", a.String(), err)
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return "", nil, contract.Fail(contract.Verification, "artifact %s: the server answered %s", a.String(), resp.Status)
		}
		return path.Base(u.Path), resp.Body, nil
	case a.Registry != nil:
		return r.imageArchive(ctx, a)
	}
	return "", nil, contract.Fail(contract.Unknown, "a %s artifact cannot be copied: Gantry copies AmazonS3 objects, images from a registry connector, and CustomArtifact versions that are URLs", a.Type)
}

// imageArchive streams the image as a `docker load` archive named after its repository and
// tag (shop_1.4.2.tar), fetched by its digest.
func (r *run) imageArchive(ctx context.Context, a *contract.DeployArtifact) (string, io.ReadCloser, error) {
	ref, err := name.ParseReference(a.Image)
	if err != nil {
		return "", nil, contract.Fail(contract.Unknown, "artifact image %q: %v", a.Image, err)
	}
	opts, err := registry.Options(ctx, r.a.Secrets, a.Registry)
	if err != nil {
		return "", nil, err
	}
	img, err := remote.Image(ref, opts...)
	if err != nil {
		return "", nil, registry.Classify(err, a.Image)
	}
	repo, tag := ref.Context(), cmp.Or(a.Tag, "latest")
	tagged := repo.Tag(tag)
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarball.Write(tagged, img, pw)) }()
	return path.Base(repo.RepositoryStr()) + "_" + tag + ".tar", pr, nil
}

// download has the host fetch the artifact into dir itself, with curl (or wget): an S3 object
// through a presigned URL valid for the step's timeout, a CustomArtifact's URL.
func (r *run) download(ctx context.Context, dir string) error {
	a, err := r.artifact("download")
	if a == nil {
		return err
	}
	var link, file string
	switch {
	case a.Bucket != "":
		client, err := r.s3(ctx, a)
		if err != nil {
			return err
		}
		expires := r.in.Timeout
		if expires <= 0 || expires > 7*24*time.Hour {
			expires = time.Hour
		}
		req, err := s3.NewPresignClient(client).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(a.Bucket), Key: aws.String(a.Key)},
			s3.WithPresignExpires(expires))
		if err != nil {
			return awsauth.Fail(err, "presign %s", a.String())
		}
		link, file = req.URL, path.Base(a.Key)
	case a.Type == "CustomArtifact":
		u, err := artifactURL(a)
		if err != nil {
			return err
		}
		link, file = u.String(), path.Base(u.Path)
	case a.Registry != nil:
		return contract.Fail(contract.Unknown, "an image is not downloaded as a file: pull it on the host in a Script unit (docker pull <+artifact.image>), or Copy it as an archive")
	default:
		return contract.Fail(contract.Unknown, "a %s artifact cannot be downloaded: Gantry downloads AmazonS3 objects and CustomArtifact versions that are URLs", a.Type)
	}
	r.mask.Add(link) // a presigned URL is a credential for as long as it lives
	dest := path.Join(dir, file)
	script := `part="$GANTRY_DEST.gantry-part"
if command -v curl >/dev/null 2>&1; then curl -fsSL -o "$part" "$GANTRY_ARTIFACT_URL"
elif command -v wget >/dev/null 2>&1; then wget -q -O "$part" "$GANTRY_ARTIFACT_URL"
else echo "neither curl nor wget is installed on this host" >&2; exit 127; fi || { rc=$?; rm -f "$part"; exit $rc; }
mv -f "$part" "$GANTRY_DEST"
`
	out := &logs.Lines{Log: r.log, Mask: r.mask}
	code, err := r.c.Run(ctx, script, dir, map[string]string{"GANTRY_ARTIFACT_URL": link, "GANTRY_DEST": file}, out)
	out.Flush()
	if err != nil {
		return err
	}
	if code != 0 {
		return contract.Fail(contract.Connectivity, "host %s could not download %s (exit code %d): %s", r.host, a.String(), code, out.Last())
	}
	r.log.Line(fmt.Sprintf("%s downloaded %s to %s", r.host, a.String(), dest))
	return nil
}

// s3 is a client for the artifact's bucket, signed with its connector.
func (r *run) s3(ctx context.Context, a *contract.DeployArtifact) (*s3.Client, error) {
	if a.Aws == nil {
		return nil, contract.Fail(contract.Unknown, "artifact %s has no AWS connector", a.String())
	}
	cfg, err := awsauth.Config(ctx, *a.Aws, a.Region, r.a.Secrets, r.mask)
	if err != nil {
		return nil, err
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = objstore.PathStyle() }), nil
}

// artifactURL is a CustomArtifact's metadata.url, else its version, read as an http(s) URL.
func artifactURL(a *contract.DeployArtifact) (*url.URL, error) {
	u, err := url.Parse(cmp.Or(a.URL, a.Image))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || path.Base(u.Path) == "/" || path.Base(u.Path) == "." {
		return nil, contract.Fail(contract.Unknown,
			"a CustomArtifact is copied or downloaded from the http(s) URL of a file, its metadata.url (an attribute of the listing script) or its version; %q is not: read the version in a Script unit as <+artifact.version>", cmp.Or(a.URL, a.Image))
	}
	return u, nil
}
