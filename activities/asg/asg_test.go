package asg_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/activities/asg"
	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/internal/awsfake"
	"github.com/gantry-cd/gantry/plan"
)

const launchTemplate = `{"LaunchTemplateData": {"ImageId": "%s", "InstanceType": "t3.micro", "SecurityGroupIds": ["sg-1"]}}`

const configuration = `AutoScalingGroupName: web
MinSize: 1
MaxSize: 4
DesiredCapacity: 2
VPCZoneIdentifier: subnet-1,subnet-2
HealthCheckType: EC2
`

// rig is an ASG activity against a fake, with the service's manifests deploying an image.
type rig struct {
	t    testing.TB
	fake *awsfake.Server
	a    *asg.Activity
}

func newRig(t testing.TB) *rig {
	fake := awsfake.Start()
	t.Cleanup(fake.Close)
	for _, svc := range []string{"AUTO_SCALING", "EC2", "ELASTIC_LOAD_BALANCING_V2"} {
		t.Setenv("AWS_ENDPOINT_URL_"+svc, fake.URL)
	}
	return &rig{t: t, fake: fake, a: &asg.Activity{Secrets: awsfake.Secrets{"k": "secret"}, Logs: logs.Store{Dir: t.TempDir()}}}
}

func (r *rig) step(typ, exec, image, spec string) (map[string]any, *contract.Failure) {
	r.t.Helper()
	ms := []plan.Manifest{
		{ID: "lt", Type: "AsgLaunchTemplate", Files: []plan.File{{Path: "lt.json", Text: fmt.Sprintf(launchTemplate, image)}}},
		{ID: "cfg", Type: "AsgConfiguration", Files: []plan.File{{Path: "asg.yaml", Text: configuration}}},
		{ID: "sp", Type: "AsgScalingPolicy", Files: []plan.File{{Path: "policy.yaml", Text: "PolicyName: cpu\nPolicyType: TargetTrackingScaling\nTargetTrackingConfiguration:\n  TargetValue: 60\n  PredefinedMetricSpecification: {PredefinedMetricType: ASGAverageCPUUtilization}\n"}}},
	}
	in := contract.StepInput{ExecutionID: exec, StepPath: "deploy." + typ, Type: typ, Spec: json.RawMessage(spec), Timeout: time.Minute,
		Deploy: &contract.DeployInput{Aws: &plan.AwsConnector{ID: "aws", Credential: "ManualConfig", AccessKey: "AKIDASG", SecretKeyRef: "k"},
			Region: "eu-west-1", Manifests: ms}}
	res, err := r.a.Run(context.Background(), in)
	if err != nil {
		return nil, contract.Classify(err)
	}
	return res.Outputs, nil
}

func (r *rig) group(name string) awsfake.AutoScalingGroup {
	r.t.Helper()
	g, ok := r.fake.Group(name)
	if !ok {
		r.t.Fatalf("group %s does not exist", name)
	}
	return g
}

func (r *rig) image(name, version string) string {
	r.t.Helper()
	var v int
	fmt.Sscan(version, &v)
	data, ok := r.fake.LaunchTemplateVersion(name, v)
	if !ok {
		r.t.Fatalf("launch template %s has no version %s", name, version)
	}
	return data["ImageId"]
}

func all(vs []string, v string) bool {
	for _, x := range vs {
		if x != v {
			return false
		}
	}
	return len(vs) > 0
}

// A rolling deploy creates the group with its launch template and policy, the next one
// versions the template and refreshes the instances; a rollback restores the version and
// capacity it recorded, or deletes a group it created; a retried deploy waits for the refresh it
// left running; a failed refresh fails the step.
func TestRolling(t *testing.T) {
	r := newRig(t)
	out, f := r.step("AsgRollingDeploy", "exec-1", "ami-1", `{}`)
	if f != nil || out["launchTemplateVersion"] != "1" || out["previousLaunchTemplateVersion"] != "none" || len(out["instances"].([]string)) != 2 {
		t.Fatalf("create: %v %+v", out, f)
	}
	g := r.group("web")
	if g.Min != 1 || g.Max != 4 || g.Desired != 2 || !reflect.DeepEqual(g.Policies, []string{"cpu"}) || r.image("web", "1") != "ami-1" {
		t.Fatalf("created %+v", g)
	}
	out, f = r.step("AsgRollingDeploy", "exec-2", "ami-2", `{"instances": {"type": "Fixed", "spec": {"min": 2, "max": 6, "desired": 3}}, "skipMatching": true}`)
	if f != nil || out["launchTemplateVersion"] != "2" || out["previousLaunchTemplateVersion"] != "1" {
		t.Fatalf("update: %v %+v", out, f)
	}
	if g = r.group("web"); g.Desired != 3 || !all(g.InstanceVersions, "2") || r.image("web", "2") != "ami-2" {
		t.Fatalf("updated %+v", g)
	}
	refreshed := false
	for _, c := range r.fake.Calls() {
		if c.Action == "StartInstanceRefresh" {
			refreshed = c.Params["Preferences.MinHealthyPercentage"] == "90" && c.Params["Preferences.SkipMatching"] == "true"
		}
	}
	if !refreshed {
		t.Fatal("no instance refresh with the default healthy percentage and skipMatching")
	}
	r.fake.StartInstanceRefresh("web") // a retried deploy finds its first try's refresh still running
	if out, f = r.step("AsgRollingDeploy", "exec-2", "ami-2", `{"instances": {"type": "Fixed", "spec": {"min": 2, "max": 6, "desired": 3}}}`); f != nil || out["previousLaunchTemplateVersion"] != "1" {
		t.Fatalf("retried update: %v %+v", out, f)
	}
	if out, f = r.step("AsgRollingRollback", "exec-2", "ami-2", `{}`); f != nil || out["rolledBack"] != true {
		t.Fatalf("rollback: %v %+v", out, f)
	}
	if g = r.group("web"); g.Version != "1" || g.Desired != 2 || g.Max != 4 || !all(g.InstanceVersions, "1") {
		t.Fatalf("rolled back %+v", g)
	}
	if out, _ = r.step("AsgRollingRollback", "exec-9", "ami-2", `{}`); out["rolledBack"] != false {
		t.Fatalf("another execution's rollback changed the group: %v", out)
	}

	r.fake.FailInstanceRefresh("api")
	if _, f = r.step("AsgRollingDeploy", "exec-3", "ami-1", `{"asgName": "api"}`); f != nil {
		t.Fatal(f)
	}
	if _, f = r.step("AsgRollingDeploy", "exec-4", "ami-2", `{"asgName": "api"}`); f == nil || f.Category != contract.Verification || !strings.Contains(f.Message, "ended Failed") {
		t.Fatalf("a failed refresh: %+v", f)
	}
	if _, f = r.step("AsgRollingDeploy", "exec-5", "ami-1", `{"asgName": "db"}`); f != nil {
		t.Fatal(f)
	}
	if out, f = r.step("AsgRollingRollback", "exec-5", "ami-1", `{"asgName": "db"}`); f != nil || out["deleted"] != true {
		t.Fatalf("first deploy's rollback: %v %+v", out, f)
	}
	if _, ok := r.fake.Group("db"); ok {
		t.Fatal("the group a first deploy created survived its rollback")
	}
	if _, f = r.step("AsgRollingDeploy", "exec-6", "", `{"asgName": "x"}`); f == nil || !strings.Contains(f.Message, "no ImageId") {
		t.Fatalf("no image: %+v", f)
	}
}

// A canary runs the new version in NAME__Canary at a share of the live group, then goes;
// AsgScale and AsgSteadyState act on a named group.
func TestCanaryScaleAndSteadyState(t *testing.T) {
	r := newRig(t)
	if _, f := r.step("AsgRollingDeploy", "exec-1", "ami-1", `{"instances": {"type": "Fixed", "spec": {"min": 1, "max": 8, "desired": 4}}}`); f != nil {
		t.Fatal(f)
	}
	out, f := r.step("AsgCanaryDeploy", "exec-2", "ami-2", `{"instanceSelection": {"type": "Percentage", "spec": {"percentage": 25}}}`)
	if f != nil || out["asgName"] != "web__Canary" || out["desiredCapacity"] != int32(1) {
		t.Fatalf("canary: %v %+v", out, f)
	}
	if g := r.group("web__Canary"); g.Desired != 1 || r.image("web__Canary", g.Version) != "ami-2" || r.group("web").Desired != 4 {
		t.Fatalf("canary group %+v", g)
	}
	if out, f = r.step("AsgCanaryDelete", "exec-2", "ami-2", `{}`); f != nil || out["deleted"] != true {
		t.Fatalf("canary delete: %v %+v", out, f)
	}
	if _, ok := r.fake.Group("web__Canary"); ok {
		t.Fatal("the canary group survived AsgCanaryDelete")
	}
	if out, f = r.step("AsgScale", "exec-3", "", `{"asgName": "web", "instanceSelection": {"type": "Count", "spec": {"count": 10}}}`); f != nil || out["previousDesiredCapacity"] != int32(4) {
		t.Fatalf("scale: %v %+v", out, f)
	}
	if g := r.group("web"); g.Desired != 10 || g.Max != 10 || len(g.InstanceVersions) != 10 {
		t.Fatalf("scaled %+v", g)
	}
	if out, f = r.step("AsgSteadyState", "exec-3", "", `{"asgName": "web", "pollingInterval": "1s"}`); f != nil || len(out["instances"].([]string)) != 10 {
		t.Fatalf("steady state: %v %+v", out, f)
	}
	if _, f = r.step("AsgScale", "exec-3", "", `{"asgName": "nope", "instanceSelection": {"type": "Count", "spec": {"count": 1}}}`); f == nil || !strings.Contains(f.Message, "does not exist") {
		t.Fatalf("scale of a missing group: %+v", f)
	}
}

const (
	prodListener = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener/app/web/1/prod"
	prodRule     = prodListener + "/rule-1"
	stageRule    = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener/app/web/1/stage/rule-2"
	tgBlue       = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/web-a/1"
	tgGreen      = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/web-b/2"
)

// Blue-green: the first deploy goes behind prod, the second behind stage; the swap exchanges
// the listeners and downsizes the old group; a rollback swaps back, restores the old group's
// capacity and the new one's version.
func TestBlueGreen(t *testing.T) {
	r := newRig(t)
	r.fake.AddListener(prodListener, prodRule, tgBlue)
	r.fake.AddListener(strings.TrimSuffix(stageRule, "/rule-2"), stageRule, tgGreen)
	lb := `"loadBalancer": "web", "prodListener": "` + prodListener + `", "prodListenerRuleArn": "` + prodRule +
		`", "stageListener": "x", "stageListenerRuleArn": "` + stageRule + `"`
	// The steps after the deploy receive its listeners as compile gives them: a loadBalancers list.
	followed := `"loadBalancers": [{` + lb + `}]`
	out, f := r.step("AsgBlueGreenDeploy", "exec-1", "ami-1", `{`+lb+`}`)
	if f != nil || out["asgName"] != "web__1" || out["prodAsgName"] != "" {
		t.Fatalf("first: %v %+v", out, f)
	}
	if g := r.group("web__1"); g.Tags["BG_VERSION"] != "BLUE" || !reflect.DeepEqual(g.TargetGroups, []string{tgBlue}) {
		t.Fatalf("first group %+v", g)
	}
	if out, f = r.step("AsgBlueGreenSwapService", "exec-1", "ami-1", `{"downsizeOldAsg": true, `+followed+`}`); f != nil || out["swapped"] != false {
		t.Fatalf("first swap: %v %+v", out, f)
	}
	out, f = r.step("AsgBlueGreenDeploy", "exec-2", "ami-2", `{`+lb+`, "instances": {"type": "CurrentRunning"}}`)
	if f != nil || out["asgName"] != "web__2" || out["prodAsgName"] != "web__1" {
		t.Fatalf("second: %v %+v", out, f)
	}
	if g := r.group("web__2"); g.Tags["BG_VERSION"] != "GREEN" || !reflect.DeepEqual(g.TargetGroups, []string{tgGreen}) || g.Desired != 2 {
		t.Fatalf("second group %+v", g)
	}
	if out, f = r.step("AsgBlueGreenSwapService", "exec-2", "", `{"downsizeOldAsg": true, `+followed+`}`); f != nil || out["swapped"] != true {
		t.Fatalf("swap: %v %+v", out, f)
	}
	if r.fake.Forwards(prodRule) != tgGreen || r.fake.Forwards(stageRule) != tgBlue || r.group("web__1").Desired != 0 || r.group("web__2").Tags["BG_VERSION"] != "BLUE" {
		t.Fatalf("after the swap prod → %s, stage → %s, old %+v", r.fake.Forwards(prodRule), r.fake.Forwards(stageRule), r.group("web__1"))
	}
	if out, f = r.step("AsgBlueGreenRollback", "exec-2", "", `{`+followed+`}`); f != nil || out["deleted"] != true || out["prodAsgName"] != "web__1" {
		t.Fatalf("rollback: %v %+v", out, f)
	}
	if r.fake.Forwards(prodRule) != tgBlue || r.fake.Forwards(stageRule) != tgGreen || r.group("web__1").Desired != 2 || r.group("web__1").Tags["BG_VERSION"] != "BLUE" {
		t.Fatalf("after the rollback prod → %s, stage → %s, old %+v", r.fake.Forwards(prodRule), r.fake.Forwards(stageRule), r.group("web__1"))
	}
	if _, ok := r.fake.Group("web__2"); ok {
		t.Fatal("the group the rolled-back deploy created survived")
	}
	if _, f = r.step("AsgBlueGreenSwapService", "exec-7", "", `{"downsizeOldAsg": false, `+followed+`}`); f == nil || !strings.Contains(f.Message, "AsgBlueGreenDeploy comes first") {
		t.Fatalf("swap without a deploy: %+v", f)
	}
}

// With only a prod rule forwarding to two target groups, AsgShiftTraffic moves its weight to
// the new group; at 100 the old one is downsized; a rollback gives the old group all of it.
func TestShiftTraffic(t *testing.T) {
	r := newRig(t)
	r.fake.AddListener(prodListener, prodRule, tgBlue)
	lb := `"loadBalancers": [{"loadBalancer": "web", "prodListener": "` + prodListener + `", "prodListenerRuleArn": "` + prodRule + `"}]`
	if _, f := r.step("AsgBlueGreenDeploy", "exec-1", "ami-1", `{`+lb+`}`); f != nil {
		t.Fatal(f)
	}
	if _, f := r.step("AsgBlueGreenDeploy", "exec-2", "ami-2", `{`+lb+`}`); f == nil || !strings.Contains(f.Message, "second target group") {
		t.Fatalf("a prod rule with one target group: %+v", f)
	}
	weighted := fmt.Sprintf(`{"loadBalancers": [{"prodListener": %q, "prodListenerRuleArn": %q}], "weight": 0, "downsizeOldAsg": false}`, prodListener, prodRule)
	if _, f := r.step("AsgShiftTraffic", "exec-1", "", weighted); f != nil { // one group: it has all the traffic already
		t.Fatal(f)
	}
	setWeights(t, r, 100, 0)
	out, f := r.step("AsgBlueGreenDeploy", "exec-3", "ami-2", `{`+lb+`}`)
	if f != nil || out["asgName"] != "web__2" || !reflect.DeepEqual(r.group("web__2").TargetGroups, []string{tgGreen}) {
		t.Fatalf("deploy: %v %+v", out, f)
	}
	shift := func(w int, downsize bool) {
		t.Helper()
		if _, f := r.step("AsgShiftTraffic", "exec-3", "", fmt.Sprintf(`{%s, "weight": %d, "downsizeOldAsg": %v}`, lb, w, downsize)); f != nil {
			t.Fatal(f)
		}
	}
	shift(25, true)
	if got := r.fake.Weights(prodRule); got[tgGreen] != 25 || got[tgBlue] != 75 || r.group("web__1").Desired != 2 {
		t.Fatalf("at 25: %v", got)
	}
	if _, f = r.step("AsgBlueGreenRollback", "exec-3", "", `{`+lb+`}`); f != nil {
		t.Fatal(f)
	}
	if got := r.fake.Weights(prodRule); got[tgBlue] != 100 || got[tgGreen] != 0 {
		t.Fatalf("after the rollback: %v", got)
	}
	if _, f = r.step("AsgBlueGreenDeploy", "exec-4", "ami-3", `{`+lb+`}`); f != nil {
		t.Fatal(f)
	}
	if _, f := r.step("AsgShiftTraffic", "exec-4", "", fmt.Sprintf(`{%s, "weight": 100, "downsizeOldAsg": true}`, lb)); f != nil {
		t.Fatal(f)
	}
	if got := r.fake.Weights(prodRule); got[tgGreen] != 100 || r.group("web__1").Desired != 0 || r.group("web__2").Tags["BG_VERSION"] != "BLUE" {
		t.Fatalf("at 100: %v, old %+v", got, r.group("web__1"))
	}
}

// setWeights makes the prod rule forward to both target groups.
func setWeights(t *testing.T, r *rig, blue, green int) {
	t.Helper()
	r.fake.SetWeights(prodRule, map[string]int{tgBlue: blue, tgGreen: green})
}

// The phased canary: setup creates NAME__2 at no instances, phases move capacity to it from
// NAME__1, a rollback deletes it and gives NAME__1 its capacity back.
func TestPhased(t *testing.T) {
	r := newRig(t)
	base := `"asgName": "shop"`
	if _, f := r.step("AsgSetup", "exec-1", "ami-1", `{`+base+`, "resizeStrategy": "resize_new_first", "instances": {"type": "Fixed", "spec": {"min": 0, "max": 6, "desired": 4}}}`); f != nil {
		t.Fatal(f)
	}
	if out, f := r.step("AsgPhasedDeploy", "exec-1", "", `{`+base+`, "instanceSelection": {"type": "Percentage", "spec": {"percentage": 100}}}`); f != nil || out["desiredCapacity"] != int32(4) {
		t.Fatalf("first phase: %v %+v", out, f)
	}
	out, f := r.step("AsgSetup", "exec-2", "ami-2", `{`+base+`, "resizeStrategy": "downsize_old_first", "instances": {"type": "CurrentRunning"}}`)
	if f != nil || out["asgName"] != "shop__2" || out["targetDesiredCapacity"] != int32(4) || r.group("shop__2").Desired != 0 {
		t.Fatalf("setup: %v %+v", out, f)
	}
	if _, f = r.step("AsgPhasedDeploy", "exec-2", "", `{`+base+`, "instanceSelection": {"type": "Count", "spec": {"count": 1}}}`); f != nil {
		t.Fatal(f)
	}
	if n, o := r.group("shop__2").Desired, r.group("shop__1").Desired; n != 1 || o != 3 {
		t.Fatalf("after a phase of 1: new %d, old %d", n, o)
	}
	if _, f = r.step("AsgPhasedDeploy", "exec-2", "", `{`+base+`, "instanceSelection": {"type": "Percentage", "spec": {"percentage": 50}}}`); f != nil {
		t.Fatal(f)
	}
	if n, o := r.group("shop__2").Desired, r.group("shop__1").Desired; n != 2 || o != 2 {
		t.Fatalf("after 50%%: new %d, old %d", n, o)
	}
	if out, f = r.step("AsgRollback", "exec-2", "", `{`+base+`}`); f != nil || out["deletedAsgName"] != "shop__2" {
		t.Fatalf("rollback: %v %+v", out, f)
	}
	if g := r.group("shop__1"); g.Desired != 4 {
		t.Fatalf("after the rollback the old group wants %d", g.Desired)
	}
	if _, ok := r.fake.Group("shop__2"); ok {
		t.Fatal("the new group survived the rollback")
	}
	if _, f = r.step("AsgPhasedDeploy", "exec-3", "", `{`+base+`, "instanceSelection": {"type": "Count", "spec": {"count": 1}}}`); f == nil || !strings.Contains(f.Message, "AsgSetup comes first") {
		t.Fatalf("a phase without setup: %+v", f)
	}
}
