package awsfake

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// The EC2 part of the fake answers DescribeInstances (the EC2 query protocol: form requests,
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
	case "CreateLaunchTemplate", "CreateLaunchTemplateVersion", "DescribeLaunchTemplates", "DeleteLaunchTemplate":
		s.launchTemplates(w, action, form)
		return
	}
	if action != "DescribeInstances" {
		ec2Err(w, "InvalidAction", "the fake does not serve EC2 "+action)
		return
	}
	filters := map[string][]string{}
	for i := 1; form.Get("Filter."+strconv.Itoa(i)+".Name") != ""; i++ {
		p := "Filter." + strconv.Itoa(i)
		for j := 1; form.Get(p+".Value."+strconv.Itoa(j)) != ""; j++ {
			filters[form.Get(p+".Name")] = append(filters[form.Get(p+".Name")], form.Get(p+".Value."+strconv.Itoa(j)))
		}
	}
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
