package awsfake

import (
	"fmt"
	"net/http"
	"strings"
)

// The ECS part of the fake speaks ECS's and Application Auto Scaling's JSON 1.1 protocols.
// Services roll as ECS rolls them: an update starts a new PRIMARY deployment at zero tasks
// beside the old one, and every read of the service starts a task of the new deployment and
// stops one of the old, until the old one is gone and the rollout COMPLETED. A task
// definition whose image contains "crashloop" never gets a task running: its rollout FAILED.
// Tasks started by RunTask go PENDING, RUNNING, STOPPED over reads, exiting 1 when the
// request's command overrides contain "exit 1".

type ecsService struct {
	desc        map[string]any
	deployments []map[string]any
	tags        map[string]string
}

type ecsTask struct {
	desc  map[string]any
	reads int
	fail  bool
}

// EcsService is a service's state for tests.
type EcsService struct {
	TaskDefinition string
	DesiredCount   int
	Deployments    int
	Tags           map[string]string
}

// Service returns an ECS service's state, or false when there is none.
func (s *Server) Service(name string) (EcsService, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv, ok := s.services[name]
	if !ok {
		return EcsService{}, false
	}
	out := EcsService{TaskDefinition: fmt.Sprint(sv.desc["taskDefinition"]), DesiredCount: num(sv.desc["desiredCount"]), Deployments: len(sv.deployments), Tags: map[string]string{}}
	for k, v := range sv.tags {
		out.Tags[k] = v
	}
	return out, true
}

// ScalableTarget returns the min and max capacity registered for a resource id.
func (s *Server) ScalableTarget(resourceID string) (min, max int, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.targets[resourceID]
	if !ok {
		return 0, 0, false
	}
	return num(t["MinCapacity"]), num(t["MaxCapacity"]), true
}

func num(v any) int {
	switch n := v.(type) {
	case float64:
		return int(n)
	case int:
		return n
	}
	return 0
}

const account = "arn:aws:ecs:us-east-1:123456789012:"

func (s *Server) ecs(w http.ResponseWriter, action string, in map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch action {
	case "RegisterTaskDefinition":
		family, _ := in["family"].(string)
		s.revisions[family]++
		td := map[string]any{}
		for k, v := range in {
			td[k] = v
		}
		td["revision"] = s.revisions[family]
		td["status"] = "ACTIVE"
		td["taskDefinitionArn"] = fmt.Sprintf("%stask-definition/%s:%d", account, family, s.revisions[family])
		s.taskDefs[fmt.Sprint(td["taskDefinitionArn"])] = td
		writeJSON(w, map[string]any{"taskDefinition": td})
	case "CreateService":
		name, _ := in["serviceName"].(string)
		if sv, ok := s.services[name]; ok && sv.desc["status"] == "ACTIVE" {
			jsonErr(w, http.StatusBadRequest, "InvalidParameterException", "Creation of service was not idempotent.")
			return
		}
		if _, ok := s.taskDefs[fmt.Sprint(in["taskDefinition"])]; !ok {
			jsonErr(w, http.StatusBadRequest, "ClientException", "TaskDefinition not found.")
			return
		}
		desc := map[string]any{}
		for k, v := range in {
			if k != "tags" {
				desc[k] = v
			}
		}
		desc["serviceArn"] = account + "service/" + fmt.Sprint(in["cluster"]) + "/" + name
		desc["status"] = "ACTIVE"
		sv := &ecsService{desc: desc, tags: map[string]string{}}
		if tags, ok := in["tags"].([]any); ok {
			for _, t := range tags {
				m, _ := t.(map[string]any)
				sv.tags[fmt.Sprint(m["key"])] = fmt.Sprint(m["value"])
			}
		}
		sv.deploy(fmt.Sprint(in["taskDefinition"]), num(in["desiredCount"]))
		s.services[name] = sv
		writeJSON(w, map[string]any{"service": sv.view(false)})
	case "UpdateService":
		name, _ := in["service"].(string)
		sv, ok := s.services[name]
		if !ok || sv.desc["status"] != "ACTIVE" {
			jsonErr(w, http.StatusBadRequest, "ServiceNotActiveException", "Service was not ACTIVE.")
			return
		}
		td := fmt.Sprint(sv.desc["taskDefinition"])
		if v, ok := in["taskDefinition"].(string); ok {
			if _, ok := s.taskDefs[v]; !ok {
				jsonErr(w, http.StatusBadRequest, "ClientException", "TaskDefinition not found.")
				return
			}
			td = v
		}
		count := num(sv.desc["desiredCount"])
		if v, ok := in["desiredCount"]; ok {
			count = num(v)
		}
		sv.desc["taskDefinition"], sv.desc["desiredCount"] = td, count
		sv.deploy(td, count)
		writeJSON(w, map[string]any{"service": sv.view(false)})
	case "DescribeServices":
		var out []any
		names, _ := in["services"].([]any)
		for _, n := range names {
			name := fmt.Sprint(n)
			name = name[strings.LastIndex(name, "/")+1:] // an ARN names the service last
			sv, ok := s.services[name]
			if !ok {
				continue
			}
			s.roll(sv)
			out = append(out, sv.view(true))
		}
		writeJSON(w, map[string]any{"services": out, "failures": []any{}})
	case "ListServices":
		var arns []any
		for _, sv := range s.services {
			if sv.desc["cluster"] == in["cluster"] {
				arns = append(arns, sv.desc["serviceArn"])
			}
		}
		writeJSON(w, map[string]any{"serviceArns": arns})
	case "DeleteService":
		name, _ := in["service"].(string)
		sv, ok := s.services[name]
		if !ok {
			jsonErr(w, http.StatusBadRequest, "ServiceNotFoundException", "Service not found.")
			return
		}
		sv.desc["status"] = "INACTIVE"
		view := sv.view(false)
		delete(s.services, name)
		writeJSON(w, map[string]any{"service": view})
	case "TagResource":
		arn, _ := in["resourceArn"].(string)
		for _, sv := range s.services {
			if sv.desc["serviceArn"] == arn {
				for _, t := range in["tags"].([]any) {
					m, _ := t.(map[string]any)
					sv.tags[fmt.Sprint(m["key"])] = fmt.Sprint(m["value"])
				}
				writeJSON(w, map[string]any{})
				return
			}
		}
		jsonErr(w, http.StatusBadRequest, "InvalidParameterException", "The specified resource could not be found: "+arn)
	case "RunTask":
		td, ok := s.taskDefs[fmt.Sprint(in["taskDefinition"])]
		if !ok {
			jsonErr(w, http.StatusBadRequest, "ClientException", "TaskDefinition not found.")
			return
		}
		count := max(num(in["count"]), 1)
		var tasks []any
		for i := 0; i < count; i++ {
			s.taskSeq++
			arn := fmt.Sprintf("%stask/%s/%032x", account, in["cluster"], s.taskSeq)
			var containers []any
			for _, c := range td["containerDefinitions"].([]any) {
				containers = append(containers, map[string]any{"name": c.(map[string]any)["name"]})
			}
			t := &ecsTask{desc: map[string]any{"taskArn": arn, "taskDefinitionArn": td["taskDefinitionArn"], "lastStatus": "PENDING", "containers": containers},
				fail: strings.Contains(fmt.Sprint(in["overrides"]), "exit 1")}
			s.tasks[arn] = t
			tasks = append(tasks, t.desc)
		}
		writeJSON(w, map[string]any{"tasks": tasks, "failures": []any{}})
	case "ListTasks":
		// A service's tasks are its deployments' running ones, named by the deployment.
		var arns []any
		for name, sv := range s.services {
			if sv.desc["cluster"] != in["cluster"] || (in["serviceName"] != nil && in["serviceName"] != name) {
				continue
			}
			for _, d := range sv.deployments {
				for i := 0; i < num(d["runningCount"]); i++ {
					arns = append(arns, s.serviceTask(name, d, i))
				}
			}
		}
		writeJSON(w, map[string]any{"taskArns": arns})
	case "DescribeTaskDefinition":
		ref := fmt.Sprint(in["taskDefinition"])
		for arn, td := range s.taskDefs {
			if arn == ref || strings.HasSuffix(arn, "/"+ref) {
				writeJSON(w, map[string]any{"taskDefinition": td})
				return
			}
		}
		jsonErr(w, http.StatusBadRequest, "ClientException", "Unable to describe task definition.")
	case "DescribeTasks":
		var out []any
		for _, a := range in["tasks"].([]any) {
			if t, ok := s.svcTasks[fmt.Sprint(a)]; ok {
				out = append(out, t)
				continue
			}
			t, ok := s.tasks[fmt.Sprint(a)]
			if !ok {
				continue
			}
			t.reads++
			switch {
			case t.reads >= 3:
				t.desc["lastStatus"], t.desc["stoppedReason"] = "STOPPED", "Essential container in task exited"
				code := 0
				if t.fail {
					code = 1
				}
				for _, c := range t.desc["containers"].([]any) {
					c.(map[string]any)["exitCode"] = code
				}
			case t.reads >= 1:
				t.desc["lastStatus"] = "RUNNING"
			}
			out = append(out, t.desc)
		}
		writeJSON(w, map[string]any{"tasks": out, "failures": []any{}})
	default:
		jsonErr(w, http.StatusBadRequest, "UnknownOperationException", "the fake does not serve ECS "+action)
	}
}

// serviceTask is the ARN of a service deployment's i-th running task, described as running
// and healthy in a zone of its own.
func (s *Server) serviceTask(service string, d map[string]any, i int) string {
	arn := fmt.Sprintf("%stask/%s/%s-%s-%d", account, s.services[service].desc["cluster"], service, strings.ReplaceAll(fmt.Sprint(d["id"]), "/", "-"), i)
	var containers []any
	if td, ok := s.taskDefs[fmt.Sprint(d["taskDefinition"])]; ok {
		for _, c := range td["containerDefinitions"].([]any) {
			m := c.(map[string]any)
			containers = append(containers, map[string]any{"name": m["name"], "image": m["image"], "lastStatus": "RUNNING"})
		}
	}
	s.svcTasks[arn] = map[string]any{"taskArn": arn, "taskDefinitionArn": d["taskDefinition"], "lastStatus": "RUNNING", "desiredStatus": "RUNNING",
		"healthStatus": "HEALTHY", "group": "service:" + service, "availabilityZone": fmt.Sprintf("us-east-1%c", 'a'+i%3), "containers": containers}
	return arn
}

// deploy starts a deployment of td; earlier deployments become ACTIVE and drain.
func (sv *ecsService) deploy(td string, count int) {
	for _, d := range sv.deployments {
		d["status"] = "ACTIVE"
	}
	sv.deployments = append([]map[string]any{{"id": fmt.Sprintf("ecs-svc/%d", len(sv.deployments)+1), "status": "PRIMARY", "taskDefinition": td,
		"desiredCount": count, "runningCount": 0, "pendingCount": count, "rolloutState": "IN_PROGRESS"}}, sv.deployments...)
}

// roll moves the rollout one task on.
func (s *Server) roll(sv *ecsService) {
	if len(sv.deployments) == 0 {
		return
	}
	p := sv.deployments[0]
	td := s.taskDefs[fmt.Sprint(p["taskDefinition"])]
	if strings.Contains(fmt.Sprint(td["containerDefinitions"]), "crashloop") {
		p["rolloutState"], p["rolloutStateReason"] = "FAILED", "ECS deployment circuit breaker: tasks failed to start."
		return
	}
	if num(p["runningCount"]) < num(p["desiredCount"]) {
		p["runningCount"] = num(p["runningCount"]) + 1
	} else if num(p["runningCount"]) > num(p["desiredCount"]) {
		p["runningCount"] = num(p["runningCount"]) - 1
	}
	p["pendingCount"] = num(p["desiredCount"]) - num(p["runningCount"])
	keep := sv.deployments[:1]
	for _, d := range sv.deployments[1:] {
		if n := num(d["runningCount"]) - 1; n > 0 {
			d["runningCount"] = n
			keep = append(keep, d)
		}
	}
	sv.deployments = keep
	if len(keep) == 1 && num(p["runningCount"]) == num(p["desiredCount"]) {
		p["rolloutState"] = "COMPLETED"
	}
}

// view is a service as DescribeServices answers.
func (sv *ecsService) view(withTags bool) map[string]any {
	out := map[string]any{}
	for k, v := range sv.desc {
		out[k] = v
	}
	running := 0
	var deps []any
	for _, d := range sv.deployments {
		running += num(d["runningCount"])
		deps = append(deps, d)
	}
	out["deployments"], out["runningCount"] = deps, running
	if withTags {
		var tags []any
		for k, v := range sv.tags {
			tags = append(tags, map[string]any{"key": k, "value": v})
		}
		out["tags"] = tags
	}
	return out
}

func (s *Server) autoscaling(w http.ResponseWriter, action string, in map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, _ := in["ResourceId"].(string)
	switch action {
	case "RegisterScalableTarget":
		t := s.targets[id]
		if t == nil {
			t = map[string]any{"ResourceId": id, "ServiceNamespace": in["ServiceNamespace"], "ScalableDimension": in["ScalableDimension"]}
			s.targets[id] = t
		}
		for _, k := range []string{"MinCapacity", "MaxCapacity"} {
			if v, ok := in[k]; ok {
				t[k] = v
			}
		}
		writeJSON(w, map[string]any{"ScalableTargetARN": "arn:aws:application-autoscaling:us-east-1:123456789012:scalable-target/" + id})
	case "DescribeScalableTargets":
		var out []any
		for _, r := range in["ResourceIds"].([]any) {
			if t, ok := s.targets[fmt.Sprint(r)]; ok {
				out = append(out, t)
			}
		}
		writeJSON(w, map[string]any{"ScalableTargets": out})
	case "DeregisterScalableTarget":
		delete(s.targets, id)
		delete(s.policies, id)
		writeJSON(w, map[string]any{})
	case "PutScalingPolicy":
		if _, ok := s.targets[id]; !ok {
			jsonErr(w, http.StatusBadRequest, "ObjectNotFoundException", "No scalable target registered for service namespace: ecs, resource ID: "+id)
			return
		}
		if s.policies[id] == nil {
			s.policies[id] = map[string]map[string]any{}
		}
		s.policies[id][fmt.Sprint(in["PolicyName"])] = in
		writeJSON(w, map[string]any{"PolicyARN": "arn:aws:autoscaling:us-east-1:123456789012:scalingPolicy:" + fmt.Sprint(in["PolicyName"])})
	default:
		jsonErr(w, http.StatusBadRequest, "UnknownOperationException", "the fake does not serve Application Auto Scaling "+action)
	}
}
