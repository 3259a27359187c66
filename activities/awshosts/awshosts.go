// Package awshosts lists the hosts of an SshWinRmAws infrastructure (issue 56): the running
// EC2 instances of a region with the filter's tags, in its VPCs, signed with the
// infrastructure's Aws connector.
package awshosts

import (
	"context"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gantry-cd/gantry/activities/awsauth"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
)

// Lister lists instances with the worker's secrets.
type Lister struct {
	Secrets secrets.Resolver
}

// Describe returns the running instances the input selects, in instance ID order, each
// with the address the infrastructure reaches it at; an instance without one (no public IP
// for PublicIP) is left out.
func (l *Lister) Describe(ctx context.Context, in contract.DescribeHostsInput) ([]contract.Host, error) {
	h := in.Hosts
	cfg, err := awsauth.Config(ctx, h.Connector, h.Region, l.Secrets, nil)
	if err != nil {
		return nil, err
	}
	filters := []types.Filter{{Name: aws.String("instance-state-name"), Values: []string{"running"}}}
	keys := make([]string, 0, len(h.Tags))
	for k := range h.Tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		filters = append(filters, types.Filter{Name: aws.String("tag:" + k), Values: []string{h.Tags[k]}})
	}
	if len(h.Vpcs) > 0 {
		filters = append(filters, types.Filter{Name: aws.String("vpc-id"), Values: h.Vpcs})
	}
	var out []contract.Host
	p := ec2.NewDescribeInstancesPaginator(ec2.NewFromConfig(cfg), &ec2.DescribeInstancesInput{Filters: filters})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, awsauth.Fail(err, "list the EC2 instances of %s with connector %s", h.Region, h.Connector.ID)
		}
		for _, r := range page.Reservations {
			for _, i := range r.Instances {
				host := contract.Host{InstanceID: aws.ToString(i.InstanceId), PrivateIP: aws.ToString(i.PrivateIpAddress),
					PublicIP: aws.ToString(i.PublicIpAddress), PrivateDNS: aws.ToString(i.PrivateDnsName), PublicDNS: aws.ToString(i.PublicDnsName),
					Tags: map[string]string{}}
				for _, t := range i.Tags {
					host.Tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
				}
				host.Address = host.PrivateIP
				if h.PublicIP {
					host.Address = host.PublicIP
				}
				if host.Address != "" {
					out = append(out, host)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].InstanceID < out[j].InstanceID })
	return out, nil
}
