// Package ami finds an AmazonMachineImage artifact's image with EC2's DescribeImages, as the
// reference does: among the account's available, non-public images of the region that carry
// every tag and pass every filter, the one named `version`, or the newest whose name matches
// `versionRegex` (a regular expression whose dots are literal, * matching any run of characters
// and ? at most one).
package ami

import (
	"context"
	"regexp"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gantry-cd/gantry/activities/awsauth"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
)

// Resolver resolves AMI artifacts with a connector's credentials.
type Resolver struct {
	Secrets secrets.Resolver
}

// Resolve finds the image.
func (r *Resolver) Resolve(ctx context.Context, in contract.AmiResolveInput) (contract.AmiResolved, error) {
	a := in.Artifact
	cfg, err := awsauth.Config(ctx, a.Connector, a.Region, r.Secrets, nil)
	if err != nil {
		return contract.AmiResolved{}, err
	}
	images, err := describe(ctx, ec2.NewFromConfig(cfg), a.Tags, a.Filters)
	if err != nil {
		return contract.AmiResolved{}, awsauth.Fail(err, "artifact %s: list images in %s (connector %s)", in.ID, a.Region, a.Connector.ID)
	}
	// Newest first, as the reference lists versions.
	sort.SliceStable(images, func(i, j int) bool {
		return aws.ToString(images[i].CreationDate) > aws.ToString(images[j].CreationDate)
	})
	var found *ec2types.Image
	if a.Version != "" {
		for i := range images {
			if aws.ToString(images[i].Name) == a.Version {
				found = &images[i]
				break
			}
		}
		if found == nil {
			return contract.AmiResolved{}, contract.Fail(contract.Verification, "artifact %s: no available image named %q in %s matches its tags and filters (%d images do)",
				in.ID, a.Version, a.Region, len(images))
		}
	} else {
		match, err := pattern(a.VersionRegex)
		if err != nil {
			return contract.AmiResolved{}, contract.Fail(contract.Verification, "artifact %s: versionRegex %q: %v", in.ID, a.VersionRegex, err)
		}
		for i := range images {
			if match.MatchString(aws.ToString(images[i].Name)) {
				found = &images[i]
				break
			}
		}
		if found == nil {
			return contract.AmiResolved{}, contract.Fail(contract.Verification, "artifact %s: no available image in %s whose name matches %q matches its tags and filters (%d images do)",
				in.ID, a.Region, a.VersionRegex, len(images))
		}
	}
	meta := map[string]string{"ownerId": aws.ToString(found.OwnerId), "imageType": string(found.ImageType)}
	for _, t := range found.Tags {
		if k := aws.ToString(t.Key); !strings.Contains(k, ".") {
			meta[k] = aws.ToString(t.Value)
		}
	}
	return contract.AmiResolved{AmiID: aws.ToString(found.ImageId), Version: aws.ToString(found.Name), Metadata: meta}, nil
}

// describe lists the images: available, not public, with the tags (tag:NAME) and filters (an
// "ami-" prefix, as the reference's filter names have, is dropped).
func describe(ctx context.Context, c *ec2.Client, tags, filters []plan.NameValue) ([]ec2types.Image, error) {
	fs := []ec2types.Filter{{Name: aws.String("is-public"), Values: []string{"false"}}, {Name: aws.String("state"), Values: []string{"available"}}}
	for _, t := range tags {
		if t.Name != "" {
			fs = append(fs, ec2types.Filter{Name: aws.String("tag:" + t.Name), Values: []string{t.Value}})
		}
	}
	for _, f := range filters {
		if f.Name != "" && f.Value != "" {
			fs = append(fs, ec2types.Filter{Name: aws.String(strings.TrimPrefix(f.Name, "ami-")), Values: []string{f.Value}})
		}
	}
	var out []ec2types.Image
	p := ec2.NewDescribeImagesPaginator(c, &ec2.DescribeImagesInput{Filters: fs})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, im := range page.Images {
			if aws.ToString(im.Name) != "" {
				out = append(out, im)
			}
		}
	}
	return out, nil
}

// pattern is a versionRegex as the reference reads it: a regular expression whose dots are
// literal, * any run of characters and ? at most one, found anywhere in the name.
func pattern(p string) (*regexp.Regexp, error) {
	return regexp.Compile(strings.NewReplacer(".", `\.`, "?", ".?", "*", ".*?").Replace(p))
}
