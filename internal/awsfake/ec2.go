package awsfake

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
)

// The EC2 part of the fake answers DescribeImages over the images a test adds, the launch
// template calls of ASG deployments (autoscaling.go), and DescribeInstances (the EC2 query protocol: form requests,
// XML answers with `item` lists) over the instances a test adds, with the filters SSH
// infrastructures send: tag:KEY, vpc-id and instance-state-name.

// Instance is an EC2 instance the fake lists.
type Instance struct {
	ID                    string
	State                 string // running, stopped...; "" is running
	PrivateIP, PublicIP   string
	PrivateDNS, PublicDNS string
	VpcID                 string
	Tags                  map[string]string
}

// AddInstance adds an instance.
func (s *Server) AddInstance(in Instance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if in.State == "" {
		in.State = "running"
	}
	s.instances = append(s.instances, in)
}

type ec2Tag struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

type ec2Instance struct {
	InstanceID string   `xml:"instanceId"`
	PrivateIP  string   `xml:"privateIpAddress,omitempty"`
	PublicIP   string   `xml:"ipAddress,omitempty"`
	PrivateDNS string   `xml:"privateDnsName"`
	PublicDNS  string   `xml:"dnsName"`
	VpcID      string   `xml:"vpcId,omitempty"`
	StateName  string   `xml:"instanceState>name"`
	StateCode  int      `xml:"instanceState>code"`
	Tags       []ec2Tag `xml:"tagSet>item"`
}

type ec2Reservation struct {
	ID        string        `xml:"reservationId"`
	Instances []ec2Instance `xml:"instancesSet>item"`
}

func (s *Server) ec2(w http.ResponseWriter, key string, form url.Values) {
	action := form.Get("Action")
	params := map[string]string{}
	for k := range form {
		params[k] = form.Get(k)
	}
	s.record(Call{Service: "ec2", Action: action, AccessKeyID: key, Params: params})
	switch action {
	case "CreateLaunchTemplate", "CreateLaunchTemplateVersion", "DescribeLaunchTemplates", "DescribeLaunchTemplateVersions", "DeleteLaunchTemplate":
		s.launchTemplates(w, action, form)
		return
	case "DescribeImages":
		s.describeImages(w, form)
		return
	}
	if action != "DescribeInstances" {
		ec2Err(w, "InvalidAction", "the fake does not serve EC2 "+action)
		return
	}
	filters := queryFilters(form)
	s.mu.Lock()
	var out []ec2Reservation
	for _, in := range s.instances {
		if !instanceMatches(in, filters) {
			continue
		}
		x := ec2Instance{InstanceID: in.ID, PrivateIP: in.PrivateIP, PublicIP: in.PublicIP, PrivateDNS: in.PrivateDNS, PublicDNS: in.PublicDNS,
			VpcID: in.VpcID, StateName: in.State, StateCode: map[string]int{"running": 16, "stopped": 80}[in.State]}
		keys := make([]string, 0, len(in.Tags))
		for k := range in.Tags {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			x.Tags = append(x.Tags, ec2Tag{k, in.Tags[k]})
		}
		out = append(out, ec2Reservation{ID: "r-" + strings.TrimPrefix(in.ID, "i-"), Instances: []ec2Instance{x}})
	}
	s.mu.Unlock()
	writeXML(w, http.StatusOK, struct {
		XMLName      xml.Name         `xml:"DescribeInstancesResponse"`
		NS           string           `xml:"xmlns,attr"`
		RequestID    string           `xml:"requestId"`
		Reservations []ec2Reservation `xml:"reservationSet>item"`
	}{NS: "http://ec2.amazonaws.com/doc/2016-11-15/", RequestID: "req-1", Reservations: out})
}

// Image is an AMI the fake lists.
type Image struct {
	ID, Name string
	Created  string // CreationDate, RFC 3339
	Public   bool
	State    string // "" is available
	Tags     map[string]string
}

// AddImage adds an image.
func (s *Server) AddImage(im Image) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if im.State == "" {
		im.State = "available"
	}
	s.images = append(s.images, im)
}

// describeImages answers DescribeImages with the images every filter matches: is-public,
// state, name (with * wildcards), image-id and tag:KEY.
func (s *Server) describeImages(w http.ResponseWriter, form url.Values) {
	filters := queryFilters(form)
	type imageXML struct {
		ID      string   `xml:"imageId"`
		Name    string   `xml:"name"`
		Created string   `xml:"creationDate"`
		State   string   `xml:"imageState"`
		Owner   string   `xml:"imageOwnerId"`
		Type    string   `xml:"imageType"`
		Public  bool     `xml:"isPublic"`
		Tags    []ec2Tag `xml:"tagSet>item"`
	}
	var out []imageXML
	s.mu.Lock()
	for _, im := range s.images {
		ok := true
		for name, values := range filters {
			got := ""
			switch {
			case name == "is-public":
				got = strconv.FormatBool(im.Public)
			case name == "state":
				got = im.State
			case name == "image-id":
				got = im.ID
			case name == "name":
				got = im.Name
			case strings.HasPrefix(name, "tag:"):
				v, has := im.Tags[strings.TrimPrefix(name, "tag:")]
				if !has {
					ok = false
				}
				got = v
			default:
				ok = false
			}
			matched := false
			for _, v := range values {
				m, _ := path.Match(v, got)
				matched = matched || m
			}
			ok = ok && matched
		}
		if !ok {
			continue
		}
		x := imageXML{ID: im.ID, Name: im.Name, Created: im.Created, State: im.State, Owner: "123456789012", Type: "machine", Public: im.Public}
		keys := make([]string, 0, len(im.Tags))
		for k := range im.Tags {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			x.Tags = append(x.Tags, ec2Tag{k, im.Tags[k]})
		}
		out = append(out, x)
	}
	s.mu.Unlock()
	writeXML(w, http.StatusOK, struct {
		XMLName   xml.Name   `xml:"DescribeImagesResponse"`
		NS        string     `xml:"xmlns,attr"`
		RequestID string     `xml:"requestId"`
		Images    []imageXML `xml:"imagesSet>item"`
	}{NS: "http://ec2.amazonaws.com/doc/2016-11-15/", RequestID: "req-1", Images: out})
}

// queryFilters reads an EC2 request's Filter.N.Name and Filter.N.Value.M parameters.
func queryFilters(form url.Values) map[string][]string {
	filters := map[string][]string{}
	for i := 1; form.Get("Filter."+strconv.Itoa(i)+".Name") != ""; i++ {
		p := "Filter." + strconv.Itoa(i)
		for j := 1; form.Get(p+".Value."+strconv.Itoa(j)) != ""; j++ {
			filters[form.Get(p+".Name")] = append(filters[form.Get(p+".Name")], form.Get(p+".Value."+strconv.Itoa(j)))
		}
	}
	return filters
}

// instanceMatches applies the filters: every filter matches one of its values.
func instanceMatches(in Instance, filters map[string][]string) bool {
	for name, values := range filters {
		var got string
		switch {
		case name == "instance-state-name":
			got = in.State
		case name == "vpc-id":
			got = in.VpcID
		case strings.HasPrefix(name, "tag:"):
			v, ok := in.Tags[strings.TrimPrefix(name, "tag:")]
			if !ok {
				return false
			}
			got = v
		default:
			return false
		}
		found := false
		for _, v := range values {
			found = found || v == got
		}
		if !found {
			return false
		}
	}
	return true
}

func ec2Err(w http.ResponseWriter, code, msg string) {
	writeXML(w, http.StatusBadRequest, struct {
		XMLName xml.Name `xml:"Response"`
		Errors  struct {
			Code    string `xml:"Error>Code"`
			Message string `xml:"Error>Message"`
		} `xml:"Errors"`
		RequestID string `xml:"RequestID"`
	}{Errors: struct {
		Code    string `xml:"Error>Code"`
		Message string `xml:"Error>Message"`
	}{code, msg}, RequestID: "req-1"})
}
