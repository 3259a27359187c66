// Package instances runs the scripts that list what a deployment targets, with Bash on the
// worker. A CustomDeployment's FetchInstanceScript step: the deployment template's script
// writes the target instances as JSON to $INSTANCE_OUTPUT_PATH; the step reads the list at the
// template's instancesListPath and the attributes of each instance at their JSON paths. The
// hosts become the stage's <+stage.output.hosts>, each instance <+instance.*> in a loop over
// them. A CustomArtifact source's fetchAllArtifacts script (artifact.go) lists its versions.
package instances

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"go.temporal.io/sdk/activity"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
)

// NameAttribute is the attribute that holds an instance's host name.
const NameAttribute = "instancename"

// Activity runs fetch-instances scripts.
type Activity struct {
	Secrets secrets.Resolver
	Logs    logs.Store
	// WorkDir holds the script's folder while it runs; "" is the system temp directory.
	WorkDir string
}

// Run runs one FetchInstanceScript step.
func (a *Activity) Run(ctx context.Context, in contract.StepInput) (contract.StepResult, error) {
	if in.Deploy == nil || in.Deploy.Custom == nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "FetchInstanceScript runs in a Deployment stage whose infrastructure is a CustomDeployment")
	}
	c := in.Deploy.Custom
	mask := &secrets.Masker{}
	script, err := secrets.Expand(ctx, a.Secrets, mask, c.Script)
	if err != nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "fetch-instances script: %v", err)
	}
	info := activity.GetInfo(ctx)
	log, err := a.Logs.Open(in.ExecutionID, in.StepPath)
	if err != nil {
		return contract.StepResult{}, err
	}
	defer log.Close()
	log.Line(fmt.Sprintf("# gantry: %s attempt %d: the fetch-instances script of template %s", in.StepPath, info.Attempt, c.Template))
	runCtx, cancel := contract.RunContext(ctx, in.Timeout, info.HeartbeatTimeout)
	defer cancel()
	b, lastLine, runErr := runScript(runCtx, a.WorkDir, script, "INSTANCE_OUTPUT_PATH", nil, mask, log.Line)
	switch {
	case log.Err() != nil:
		return contract.StepResult{}, log.Err()
	case ctx.Err() != nil:
		return contract.StepResult{}, ctx.Err()
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		return contract.StepResult{}, contract.Fail(contract.Timeout, "the fetch-instances script ran longer than the step timeout %s", in.Timeout)
	case errors.Is(runErr, errNoOutput):
		return contract.StepResult{}, contract.Fail(contract.Verification, "the fetch-instances script wrote nothing to $INSTANCE_OUTPUT_PATH")
	case runErr != nil:
		return contract.StepResult{}, contract.Fail(contract.Unknown, "the fetch-instances script failed (%v); last output: %s", runErr, lastLine)
	}
	hosts, list, err := Parse(b, c.ListPath, c.Attributes)
	if err != nil {
		return contract.StepResult{}, contract.Fail(contract.Verification, "%s", mask.Apply(err.Error()))
	}
	log.Line(fmt.Sprintf("# %d instances: %s", len(hosts), strings.Join(hosts, ", ")))
	anyHosts := make([]any, len(hosts))
	for i, h := range hosts {
		anyHosts[i] = h
	}
	return contract.StepResult{Outputs: map[string]any{"hosts": anyHosts, "instances": list}}, nil
}

// errNoOutput says a script wrote nothing to its output file.
var errNoOutput = errors.New("no output")

// runScript runs script with Bash in a folder of its own under workDir, with env (NAME=value)
// and outputVar naming the file it writes its JSON to; each line of its output, masked, goes
// to line. It returns what the script wrote there and its last output line.
func runScript(ctx context.Context, workDir, script, outputVar string, env []string, mask *secrets.Masker, line func(string)) ([]byte, string, error) {
	dir, err := os.MkdirTemp(workDir, "script-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "output.json")
	file := filepath.Join(dir, "script.sh")
	if err := os.WriteFile(file, []byte(script), 0o700); err != nil {
		return nil, "", err
	}
	cmd := exec.CommandContext(ctx, "bash", file)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), env...), outputVar+"="+out)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	last := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		l := ""
		for sc.Scan() {
			l = mask.Apply(sc.Text())
			line(l)
		}
		last <- l
	}()
	runErr := cmd.Run()
	pw.Close()
	lastLine := <-last
	if runErr != nil {
		return nil, lastLine, runErr
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return nil, lastLine, errNoOutput
	}
	return b, lastLine, nil
}

// Parse reads the instances of a script's JSON: the list at listPath, and of each instance the
// attributes at their paths. It returns the host names in order and, for each instance,
// `<+instance.*>`: name, hostName, and host.{instanceName, hostName, properties}.
func Parse(js []byte, listPath string, attrs []plan.InstanceAttribute) ([]string, []any, error) {
	items, err := listAt(js, listPath, "instancesListPath")
	if err != nil {
		return nil, nil, err
	}
	var hosts []string
	var out []any
	seen := map[string]bool{}
	for i, it := range items {
		props := map[string]any{}
		for _, a := range attrs {
			v, err := dig(it, a.JSONPath)
			if err != nil {
				if a.Name == NameAttribute {
					return nil, nil, fmt.Errorf("instance %d: attribute %s (%s): %v", i, a.Name, a.JSONPath, err)
				}
				continue
			}
			props[a.Name] = scalar(v)
		}
		name, _ := props[NameAttribute].(string)
		if name == "" {
			return nil, nil, fmt.Errorf("instance %d has no host name: map the attribute %s to its name's JSON path", i, NameAttribute)
		}
		if seen[name] {
			return nil, nil, fmt.Errorf("host %s is listed twice", name)
		}
		seen[name] = true
		hosts = append(hosts, name)
		out = append(out, map[string]any{"name": name, "hostName": name,
			"host": map[string]any{"instanceName": name, "hostName": name, "properties": props}})
	}
	return hosts, out, nil
}

// listAt is the list at path (the field named what) in a script's JSON.
func listAt(js []byte, path, what string) ([]any, error) {
	var doc any
	if err := json.Unmarshal(js, &doc); err != nil {
		return nil, fmt.Errorf("the script's JSON does not parse: %v", err)
	}
	v, err := dig(doc, path)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %v", what, path, err)
	}
	items, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s %q is not a list but %s", what, path, kind(v))
	}
	return items, nil
}

// dig follows a dot-separated path of keys and [index]es ("items", "data.hosts[0].name"); the
// empty path is the document itself.
func dig(v any, path string) (any, error) {
	path = strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(path), "$"), ".")
	if path == "" {
		return v, nil
	}
	for _, part := range strings.Split(strings.ReplaceAll(path, "[", ".["), ".") {
		if part == "" {
			continue
		}
		if strings.HasPrefix(part, "[") && strings.HasSuffix(part, "]") {
			i, err := strconv.Atoi(part[1 : len(part)-1])
			list, ok := v.([]any)
			if err != nil || !ok || i < 0 || i >= len(list) {
				return nil, fmt.Errorf("no element %s", part)
			}
			v = list[i]
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s is not an object's field (found %s)", part, kind(v))
		}
		if v, ok = m[part]; !ok {
			return nil, fmt.Errorf("no field %s", part)
		}
	}
	return v, nil
}

func kind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case nil:
		return "null"
	}
	return "a value"
}

// scalar is an attribute's value: strings as they are, other JSON values as JSON.
func scalar(v any) any {
	switch x := v.(type) {
	case string:
		return x
	case float64, bool, nil:
		return x
	}
	b, _ := json.Marshal(v)
	return string(b)
}
