package awsfake

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// The EC2 Auto Scaling part of the fake speaks the query protocol (XML answers) for the calls
// ASG deployments make: groups created, updated, described and deleted, their tags, target
// groups, scaling policies and scheduled actions, and instance refreshes. Instances are
// simulated: a group launches Pending instances of its launch template version up to its
// desired capacity, each InService from the next describe; scaling in terminates instances of
// other versions first, then the oldest. A refresh is InProgress on its first describe, when
// it replaces the instances (those already on the version too, unless SkipMatching), and
// Successful on the next, or Failed for a group named by FailInstanceRefresh.

const asgNS = "http://autoscaling.amazonaws.com/doc/2011-01-01/"

type asGroup struct {
	name             string
	template         string // launch template name
	version          string // as set: a number, $Latest or $Default
	min, max, want   int
	targetGroups     []string
	tags             map[string]string
	instances        []*asInstance
	policies         map[string]string // name → policy type
	scheduled        map[string]string // name → recurrence
	refreshes        []*asRefresh
	failRefresh      bool
	vpcZone, created string
}

type asInstance struct{ id, version, state string }

type asRefresh struct {
	id, status   string
	skipMatching bool
	ticks        int
}

// AutoScalingGroup is a group as the fake holds it.
type AutoScalingGroup struct {
	Name                string
	LaunchTemplate      string
	Version             string // as set
	Min, Max, Desired   int
	TargetGroups        []string
	Tags                map[string]string
	InstanceVersions    []string // the launch template version of each instance, resolved
	Policies, Scheduled []string // names, sorted
}

// Group returns an Auto Scaling group.
func (s *Server) Group(name string) (AutoScalingGroup, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.groups[name]
	if !ok {
		return AutoScalingGroup{}, false
	}
	out := AutoScalingGroup{Name: g.name, LaunchTemplate: g.template, Version: g.version, Min: g.min, Max: g.max, Desired: g.want,
		TargetGroups: append([]string(nil), g.targetGroups...), Tags: map[string]string{}}
	for k, v := range g.tags {
		out.Tags[k] = v
	}
	for _, in := range g.instances {
		out.InstanceVersions = append(out.InstanceVersions, in.version)
	}
	out.Policies, out.Scheduled = sortedKeys(g.policies), sortedKeys(g.scheduled)
	return out, true
}

// FailInstanceRefresh makes every instance refresh of a group fail.
func (s *Server) FailInstanceRefresh(group string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failRefresh[group] = true
}

// StartInstanceRefresh starts a refresh of a group, as another tool (or an earlier try of a
// step) would.
func (s *Server) StartInstanceRefresh(group string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.groups[group]; g != nil {
		s.refreshSeq++
		g.refreshes = append(g.refreshes, &asRefresh{id: fmt.Sprintf("refresh-%04d", s.refreshSeq), status: "Pending"})
	}
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// members are the values of a query list: PREFIX.member.1, PREFIX.member.2...
func members(form url.Values, prefix string) []string {
	var out []string
	for i := 1; form.Has(prefix + ".member." + strconv.Itoa(i)); i++ {
		out = append(out, form.Get(prefix+".member."+strconv.Itoa(i)))
	}
	return out
}

func atoi(v string) int { n, _ := strconv.Atoi(v); return n }

// resolve is the version number a group's instances launch with.
func (s *Server) resolve(g *asGroup) string {
	lt := s.templates[g.template]
	switch {
	case lt == nil:
		return g.version
	case g.version == "$Latest":
		return strconv.Itoa(len(lt.versions))
	case g.version == "$Default" || g.version == "":
		return strconv.Itoa(lt.defaultVersion)
	}
	return g.version
}

// converge launches or terminates instances to the desired capacity.
func (s *Server) converge(g *asGroup) {
	v := s.resolve(g)
	for len(g.instances) < g.want {
		s.instanceSeq++
		g.instances = append(g.instances, &asInstance{id: fmt.Sprintf("i-0asg%08d", s.instanceSeq), version: v, state: "Pending"})
	}
	if extra := len(g.instances) - g.want; extra > 0 {
		sort.SliceStable(g.instances, func(i, j int) bool { return g.instances[i].version != v && g.instances[j].version == v })
		g.instances = g.instances[extra:]
	}
}

type asgTag struct {
	Key               string `xml:"Key"`
	Value             string `xml:"Value"`
	ResourceID        string `xml:"ResourceId"`
	ResourceType      string `xml:"ResourceType"`
	PropagateAtLaunch bool   `xml:"PropagateAtLaunch"`
}

type asgLaunchTemplate struct {
	ID      string `xml:"LaunchTemplateId"`
	Name    string `xml:"LaunchTemplateName"`
	Version string `xml:"Version"`
}

type asgInstanceXML struct {
	InstanceID     string            `xml:"InstanceId"`
	LifecycleState string            `xml:"LifecycleState"`
	HealthStatus   string            `xml:"HealthStatus"`
	Zone           string            `xml:"AvailabilityZone"`
	LaunchTemplate asgLaunchTemplate `xml:"LaunchTemplate"`
	Protected      bool              `xml:"ProtectedFromScaleIn"`
}

type asgGroupXML struct {
	Name           string             `xml:"AutoScalingGroupName"`
	ARN            string             `xml:"AutoScalingGroupARN"`
	LaunchTemplate *asgLaunchTemplate `xml:"LaunchTemplate,omitempty"`
	Min            int                `xml:"MinSize"`
	Max            int                `xml:"MaxSize"`
	Desired        int                `xml:"DesiredCapacity"`
	Cooldown       int                `xml:"DefaultCooldown"`
	Zones          []string           `xml:"AvailabilityZones>member"`
	HealthCheck    string             `xml:"HealthCheckType"`
	Created        string             `xml:"CreatedTime"`
	VPCZone        string             `xml:"VPCZoneIdentifier,omitempty"`
	Instances      []asgInstanceXML   `xml:"Instances>member"`
	TargetGroups   []string           `xml:"TargetGroupARNs>member"`
	Tags           []asgTag           `xml:"Tags>member"`
}

func (s *Server) groupXML(g *asGroup) asgGroupXML {
	x := asgGroupXML{Name: g.name, ARN: "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:uuid:autoScalingGroupName/" + g.name,
		Min: g.min, Max: g.max, Desired: g.want, Cooldown: 300, Zones: []string{"us-east-1a"}, HealthCheck: "EC2", Created: g.created,
		VPCZone: g.vpcZone, TargetGroups: g.targetGroups}
	if g.template != "" {
		x.LaunchTemplate = &asgLaunchTemplate{ID: s.templateID(g.template), Name: g.template, Version: g.version}
	}
	for _, in := range g.instances {
		x.Instances = append(x.Instances, asgInstanceXML{InstanceID: in.id, LifecycleState: in.state, HealthStatus: "Healthy", Zone: "us-east-1a",
			LaunchTemplate: asgLaunchTemplate{ID: s.templateID(g.template), Name: g.template, Version: in.version}})
	}
	for _, k := range sortedKeys(g.tags) {
		x.Tags = append(x.Tags, asgTag{Key: k, Value: g.tags[k], ResourceID: g.name, ResourceType: "auto-scaling-group"})
	}
	return x
}

func (s *Server) templateID(name string) string {
	if lt := s.templates[name]; lt != nil {
		return lt.id
	}
	return ""
}

// setGroup applies the fields of a CreateAutoScalingGroup or UpdateAutoScalingGroup request.
func (s *Server) setGroup(g *asGroup, form url.Values) error {
	if form.Has("LaunchTemplate.LaunchTemplateName") || form.Has("LaunchTemplate.LaunchTemplateId") {
		name := form.Get("LaunchTemplate.LaunchTemplateName")
		if name == "" {
			for n, lt := range s.templates {
				if lt.id == form.Get("LaunchTemplate.LaunchTemplateId") {
					name = n
				}
			}
		}
		lt := s.templates[name]
		if lt == nil {
			return fmt.Errorf("ValidationError: The specified launch template, with template name %s, does not exist.", name)
		}
		g.template, g.version = name, form.Get("LaunchTemplate.Version")
		if v := atoi(g.version); v > len(lt.versions) {
			return fmt.Errorf("ValidationError: The specified launch template version %s of %s does not exist.", g.version, name)
		}
	}
	for key, p := range map[string]*int{"MinSize": &g.min, "MaxSize": &g.max, "DesiredCapacity": &g.want} {
		if form.Has(key) {
			*p = atoi(form.Get(key))
		}
	}
	if form.Has("VPCZoneIdentifier") {
		g.vpcZone = form.Get("VPCZoneIdentifier")
	}
	if g.min > g.max || g.want < g.min || g.want > g.max {
		return fmt.Errorf("ValidationError: Desired capacity:%d must be between the specified min size:%d and max size:%d", g.want, g.min, g.max)
	}
	return nil
}

func (s *Server) autoScaling(w http.ResponseWriter, key string, form url.Values) {
	action := form.Get("Action")
	params := map[string]string{}
	for k := range form {
		params[k] = form.Get(k)
	}
	s.record(Call{Service: "autoscaling", Action: action, AccessKeyID: key, Params: params})
	s.mu.Lock()
	defer s.mu.Unlock()
	name := form.Get("AutoScalingGroupName")
	g := s.groups[name]
	notFound := func() { stsErr(w, http.StatusBadRequest, "ValidationError", "AutoScalingGroup name not found - "+name) }
	empty := func() {
		writeXML(w, http.StatusOK, struct {
			XMLName xml.Name
			NS      string `xml:"xmlns,attr"`
		}{XMLName: xml.Name{Local: action + "Response"}, NS: asgNS})
	}
	switch action {
	case "DescribeAutoScalingGroups":
		type result struct {
			Groups []asgGroupXML `xml:"AutoScalingGroups>member"`
		}
		var out result
		names := members(form, "AutoScalingGroupNames")
		if len(names) == 0 {
			for n := range s.groups {
				names = append(names, n)
			}
			sort.Strings(names)
		}
		for _, n := range names {
			if g := s.groups[n]; g != nil {
				out.Groups = append(out.Groups, s.groupXML(g))
				for _, in := range g.instances {
					if in.state == "Pending" {
						in.state = "InService"
					}
				}
			}
		}
		writeXML(w, http.StatusOK, struct {
			XMLName xml.Name `xml:"DescribeAutoScalingGroupsResponse"`
			NS      string   `xml:"xmlns,attr"`
			Result  result   `xml:"DescribeAutoScalingGroupsResult"`
		}{NS: asgNS, Result: out})
	case "CreateAutoScalingGroup":
		if g != nil {
			stsErr(w, http.StatusBadRequest, "AlreadyExists", "AutoScalingGroup by this name already exists - A group with the name "+name+" already exists")
			return
		}
		g = &asGroup{name: name, tags: map[string]string{}, policies: map[string]string{}, scheduled: map[string]string{},
			targetGroups: members(form, "TargetGroupARNs"), created: "2026-01-01T00:00:00Z", failRefresh: s.failRefresh[name]}
		if err := s.setGroup(g, form); err != nil {
			code, msg, _ := strings.Cut(err.Error(), ": ")
			stsErr(w, http.StatusBadRequest, code, msg)
			return
		}
		for i := 1; form.Has(fmt.Sprintf("Tags.member.%d.Key", i)); i++ {
			g.tags[form.Get(fmt.Sprintf("Tags.member.%d.Key", i))] = form.Get(fmt.Sprintf("Tags.member.%d.Value", i))
		}
		s.groups[name] = g
		s.converge(g)
		empty()
	case "UpdateAutoScalingGroup":
		if g == nil {
			notFound()
			return
		}
		next := *g
		if err := s.setGroup(&next, form); err != nil {
			code, msg, _ := strings.Cut(err.Error(), ": ")
			stsErr(w, http.StatusBadRequest, code, msg)
			return
		}
		*g = next
		s.converge(g)
		empty()
	case "DeleteAutoScalingGroup":
		if g == nil {
			notFound()
			return
		}
		if len(g.instances) > 0 && form.Get("ForceDelete") != "true" {
			stsErr(w, http.StatusBadRequest, "ResourceInUse", "You cannot delete an AutoScalingGroup while there are instances still in the group.")
			return
		}
		delete(s.groups, name)
		empty()
	case "CreateOrUpdateTags", "DeleteTags":
		for i := 1; form.Has(fmt.Sprintf("Tags.member.%d.Key", i)); i++ {
			p := fmt.Sprintf("Tags.member.%d.", i)
			t := s.groups[form.Get(p+"ResourceId")]
			if t == nil {
				stsErr(w, http.StatusBadRequest, "ValidationError", "AutoScalingGroup name not found - "+form.Get(p+"ResourceId"))
				return
			}
			if action == "DeleteTags" {
				delete(t.tags, form.Get(p+"Key"))
			} else {
				t.tags[form.Get(p+"Key")] = form.Get(p + "Value")
			}
		}
		empty()
	case "AttachLoadBalancerTargetGroups", "DetachLoadBalancerTargetGroups":
		if g == nil {
			notFound()
			return
		}
		for _, tg := range members(form, "TargetGroupARNs") {
			g.targetGroups = removeString(g.targetGroups, tg)
			if action == "AttachLoadBalancerTargetGroups" {
				g.targetGroups = append(g.targetGroups, tg)
			}
		}
		empty()
	case "StartInstanceRefresh":
		if g == nil {
			notFound()
			return
		}
		for _, r := range g.refreshes {
			if r.status == "Pending" || r.status == "InProgress" {
				stsErr(w, http.StatusBadRequest, "InstanceRefreshInProgress", "An Instance Refresh is already in progress and blocks the execution of this Instance Refresh.")
				return
			}
		}
		s.refreshSeq++
		r := &asRefresh{id: fmt.Sprintf("refresh-%04d", s.refreshSeq), status: "Pending", skipMatching: form.Get("Preferences.SkipMatching") == "true"}
		g.refreshes = append(g.refreshes, r)
		writeXML(w, http.StatusOK, struct {
			XMLName xml.Name `xml:"StartInstanceRefreshResponse"`
			NS      string   `xml:"xmlns,attr"`
			ID      string   `xml:"StartInstanceRefreshResult>InstanceRefreshId"`
		}{NS: asgNS, ID: r.id})
	case "DescribeInstanceRefreshes":
		if g == nil {
			notFound()
			return
		}
		type refresh struct {
			ID      string `xml:"InstanceRefreshId"`
			Group   string `xml:"AutoScalingGroupName"`
			Status  string `xml:"Status"`
			Reason  string `xml:"StatusReason,omitempty"`
			Percent int    `xml:"PercentageComplete"`
		}
		var out []refresh
		ids := members(form, "InstanceRefreshIds")
		for _, r := range g.refreshes {
			if len(ids) > 0 && !contains(ids, r.id) {
				continue
			}
			s.refreshTick(g, r)
			x := refresh{ID: r.id, Group: g.name, Status: r.status, Percent: map[string]int{"InProgress": 50, "Successful": 100}[r.status]}
			if r.status == "Failed" {
				x.Reason = "Instances failed to pass their health checks during the refresh"
			}
			out = append(out, x)
		}
		writeXML(w, http.StatusOK, struct {
			XMLName   xml.Name  `xml:"DescribeInstanceRefreshesResponse"`
			NS        string    `xml:"xmlns,attr"`
			Refreshes []refresh `xml:"DescribeInstanceRefreshesResult>InstanceRefreshes>member"`
		}{NS: asgNS, Refreshes: out})
	case "PutScalingPolicy", "DeletePolicy":
		if g == nil {
			notFound()
			return
		}
		if action == "DeletePolicy" {
			delete(g.policies, form.Get("PolicyName"))
			empty()
			return
		}
		g.policies[form.Get("PolicyName")] = form.Get("PolicyType")
		writeXML(w, http.StatusOK, struct {
			XMLName xml.Name `xml:"PutScalingPolicyResponse"`
			NS      string   `xml:"xmlns,attr"`
			ARN     string   `xml:"PutScalingPolicyResult>PolicyARN"`
		}{NS: asgNS, ARN: "arn:aws:autoscaling:us-east-1:123456789012:scalingPolicy:uuid:autoScalingGroupName/" + name + ":policyName/" + form.Get("PolicyName")})
	case "DescribePolicies":
		type policy struct {
			Group string `xml:"AutoScalingGroupName"`
			Name  string `xml:"PolicyName"`
			Type  string `xml:"PolicyType"`
		}
		var out []policy
		if g != nil {
			for _, n := range sortedKeys(g.policies) {
				out = append(out, policy{Group: name, Name: n, Type: g.policies[n]})
			}
		}
		writeXML(w, http.StatusOK, struct {
			XMLName  xml.Name `xml:"DescribePoliciesResponse"`
			NS       string   `xml:"xmlns,attr"`
			Policies []policy `xml:"DescribePoliciesResult>ScalingPolicies>member"`
		}{NS: asgNS, Policies: out})
	case "PutScheduledUpdateGroupAction", "DeleteScheduledAction":
		if g == nil {
			notFound()
			return
		}
		if action == "DeleteScheduledAction" {
			delete(g.scheduled, form.Get("ScheduledActionName"))
		} else {
			g.scheduled[form.Get("ScheduledActionName")] = form.Get("Recurrence")
		}
		empty()
	case "DescribeScheduledActions":
		type scheduled struct {
			Group      string `xml:"AutoScalingGroupName"`
			Name       string `xml:"ScheduledActionName"`
			Recurrence string `xml:"Recurrence,omitempty"`
		}
		var out []scheduled
		if g != nil {
			for _, n := range sortedKeys(g.scheduled) {
				out = append(out, scheduled{Group: name, Name: n, Recurrence: g.scheduled[n]})
			}
		}
		writeXML(w, http.StatusOK, struct {
			XMLName xml.Name    `xml:"DescribeScheduledActionsResponse"`
			NS      string      `xml:"xmlns,attr"`
			Actions []scheduled `xml:"DescribeScheduledActionsResult>ScheduledUpdateGroupActions>member"`
		}{NS: asgNS, Actions: out})
	default:
		stsErr(w, http.StatusBadRequest, "InvalidAction", "the fake does not serve Auto Scaling "+action)
	}
}

// refreshTick moves a refresh on: Pending to InProgress (replacing the instances), then to Successful
// or Failed.
func (s *Server) refreshTick(g *asGroup, r *asRefresh) {
	switch r.status {
	case "Pending":
		r.status = "InProgress"
		v := s.resolve(g)
		kept := g.instances[:0]
		for _, in := range g.instances {
			if r.skipMatching && in.version == v {
				kept = append(kept, in)
			}
		}
		g.instances = kept
		s.converge(g)
	case "InProgress":
		r.status = "Successful"
		if g.failRefresh {
			r.status = "Failed"
		}
	}
}

func removeString(list []string, s string) []string {
	out := list[:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// The EC2 launch templates ASG deployments version: created, versioned, described, deleted.
// A version's data is kept as the request's LaunchTemplateData.* parameters.

type launchTemplate struct {
	id             string
	defaultVersion int
	versions       []map[string]string
}

// LaunchTemplateVersion returns a launch template version's data, as the query parameters
// that set it without their LaunchTemplateData. prefix ("ImageId", "UserData"...).
func (s *Server) LaunchTemplateVersion(name string, version int) (map[string]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lt := s.templates[name]
	if lt == nil || version < 1 || version > len(lt.versions) {
		return nil, false
	}
	out := map[string]string{}
	for k, v := range lt.versions[version-1] {
		out[k] = v
	}
	return out, true
}

type ltXML struct {
	ID      string `xml:"launchTemplateId"`
	Name    string `xml:"launchTemplateName"`
	Default int    `xml:"defaultVersionNumber"`
	Latest  int    `xml:"latestVersionNumber"`
}

func (s *Server) launchTemplates(w http.ResponseWriter, action string, form url.Values) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := form.Get("LaunchTemplateName")
	data := map[string]string{}
	for k := range form {
		if rest, ok := strings.CutPrefix(k, "LaunchTemplateData."); ok {
			data[rest] = form.Get(k)
		}
	}
	lt := s.templates[name]
	type versionXML struct {
		ID      string `xml:"launchTemplateId"`
		Name    string `xml:"launchTemplateName"`
		Version int    `xml:"versionNumber"`
		Default bool   `xml:"defaultVersion"`
	}
	ns := "http://ec2.amazonaws.com/doc/2016-11-15/"
	switch action {
	case "CreateLaunchTemplate":
		if lt != nil {
			ec2Err(w, "InvalidLaunchTemplateName.AlreadyExistsException", "Launch template name already in use.")
			return
		}
		s.templateSeq++
		lt = &launchTemplate{id: fmt.Sprintf("lt-0%016d", s.templateSeq), defaultVersion: 1, versions: []map[string]string{data}}
		s.templates[name] = lt
		writeXML(w, http.StatusOK, struct {
			XMLName xml.Name `xml:"CreateLaunchTemplateResponse"`
			NS      string   `xml:"xmlns,attr"`
			LT      ltXML    `xml:"launchTemplate"`
		}{NS: ns, LT: ltXML{ID: lt.id, Name: name, Default: 1, Latest: 1}})
	case "CreateLaunchTemplateVersion":
		if lt == nil {
			ec2Err(w, "InvalidLaunchTemplateName.NotFoundException", "The specified launch template, with template name "+name+", does not exist.")
			return
		}
		lt.versions = append(lt.versions, data)
		writeXML(w, http.StatusOK, struct {
			XMLName xml.Name   `xml:"CreateLaunchTemplateVersionResponse"`
			NS      string     `xml:"xmlns,attr"`
			V       versionXML `xml:"launchTemplateVersion"`
		}{NS: ns, V: versionXML{ID: lt.id, Name: name, Version: len(lt.versions)}})
	case "DescribeLaunchTemplates":
		var out []ltXML
		for i := 1; form.Has("LaunchTemplateName." + strconv.Itoa(i)); i++ {
			n := form.Get("LaunchTemplateName." + strconv.Itoa(i))
			t := s.templates[n]
			if t == nil {
				ec2Err(w, "InvalidLaunchTemplateName.NotFoundException", "At least one of the launch templates specified in the request does not exist.")
				return
			}
			out = append(out, ltXML{ID: t.id, Name: n, Default: t.defaultVersion, Latest: len(t.versions)})
		}
		writeXML(w, http.StatusOK, struct {
			XMLName xml.Name `xml:"DescribeLaunchTemplatesResponse"`
			NS      string   `xml:"xmlns,attr"`
			LTs     []ltXML  `xml:"launchTemplates>item"`
		}{NS: ns, LTs: out})
	case "DescribeLaunchTemplateVersions":
		if lt == nil {
			ec2Err(w, "InvalidLaunchTemplateName.NotFoundException", "The specified launch template, with template name "+name+", does not exist.")
			return
		}
		type dataXML struct {
			ImageID      string `xml:"imageId,omitempty"`
			InstanceType string `xml:"instanceType,omitempty"`
		}
		type item struct {
			versionXML
			Data dataXML `xml:"launchTemplateData"`
		}
		var out []item
		for i := 1; form.Has("LaunchTemplateVersion." + strconv.Itoa(i)); i++ {
			v := form.Get("LaunchTemplateVersion." + strconv.Itoa(i))
			n, err := strconv.Atoi(v)
			switch {
			case v == "$Latest":
				n = len(lt.versions)
			case v == "$Default":
				n = lt.defaultVersion
			case err != nil || n < 1 || n > len(lt.versions):
				ec2Err(w, "InvalidLaunchTemplateId.VersionNotFound", "Could not find launch template version "+v+" of "+name+".")
				return
			}
			d := lt.versions[n-1]
			out = append(out, item{versionXML{ID: lt.id, Name: name, Version: n, Default: n == lt.defaultVersion}, dataXML{d["ImageId"], d["InstanceType"]}})
		}
		writeXML(w, http.StatusOK, struct {
			XMLName  xml.Name `xml:"DescribeLaunchTemplateVersionsResponse"`
			NS       string   `xml:"xmlns,attr"`
			Versions []item   `xml:"launchTemplateVersionSet>item"`
		}{NS: ns, Versions: out})
	case "DeleteLaunchTemplate":
		if lt == nil {
			ec2Err(w, "InvalidLaunchTemplateName.NotFoundException", "The specified launch template, with template name "+name+", does not exist.")
			return
		}
		delete(s.templates, name)
		writeXML(w, http.StatusOK, struct {
			XMLName xml.Name `xml:"DeleteLaunchTemplateResponse"`
			NS      string   `xml:"xmlns,attr"`
			LT      ltXML    `xml:"launchTemplate"`
		}{NS: ns, LT: ltXML{ID: lt.id, Name: name, Default: lt.defaultVersion, Latest: len(lt.versions)}})
	}
}
