package cli

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func run(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestValidateExitCodes(t *testing.T) {
	code, out, _ := run("validate", "../examples/01-hello.yaml")
	if code != ExitOK || !strings.HasPrefix(out, "ok ../examples/01-hello.yaml: pipeline hello: 1 stage, 1 step") {
		t.Errorf("valid: code %d, out %q", code, out)
	}
	code, out, _ = run("validate", "../examples/invalid/10-unknown-step-type.yaml")
	if code != ExitInvalid || !strings.Contains(out, `16:25: step type "ShellScrpt" is not known`) || !strings.Contains(out, `hint: did you mean "ShellScript"?`) {
		t.Errorf("invalid: code %d, out %q", code, out)
	}
	if code, _, errs := run("validate", "../examples/nope.yaml"); code != ExitUsage || !strings.Contains(errs, "no such file") {
		t.Errorf("missing file: code %d, stderr %q", code, errs)
	}
	if code, _, _ := run("validate", "--bogus", "x.yaml"); code != ExitUsage {
		t.Errorf("bad flag: code %d", code)
	}
	if code, _, _ := run("validate"); code != ExitUsage {
		t.Errorf("no args: code %d", code)
	}
}

func TestEval(t *testing.T) {
	code, out, _ := run("eval", "--context", "../examples/context.json", "--at", "pipeline.stages.deploy.spec.execution.steps.probe",
		`<+<+pipeline.variables.csv>.split(",")[1]>-<+stage.identifier>`)
	if code != ExitOK || out != "string: green-deploy\n" {
		t.Errorf("code %d out %q", code, out)
	}
	code, out, _ = run("eval", "--condition", "--context", "../examples/context.json", `<+pipeline.sequenceId> > 41`)
	if code != ExitOK || out != "boolean: true\n" {
		t.Errorf("condition: code %d out %q", code, out)
	}
	code, out, _ = run("eval", `<+pipeline.name.toUpper()>`)
	if code != ExitInvalid || !strings.HasPrefix(out, "error at column 17: unknown method toUpper()") {
		t.Errorf("error: code %d out %q", code, out)
	}
	code, out, _ = run("eval", "--strict", `<+pipeline.variables.missing>`)
	if code != ExitInvalid || !strings.Contains(out, "unresolved expression <+pipeline.variables.missing>") {
		t.Errorf("strict: code %d out %q", code, out)
	}
}

// Keys the reference ignores are warnings unless --strict; a template not found is a warning for
// validate and an error for expand, which prints what a run would run (issue 50).
func TestValidateStrictAndMissingTemplates(t *testing.T) {
	file := "../examples/invalid/03-unknown-step-key.yaml"
	if code, out, _ := run("validate", file); code != ExitOK || !strings.Contains(out, `warning: unknown key "timout" in step; ignored, as the reference ignores it`) {
		t.Errorf("lenient: code %d, out %q", code, out)
	}
	if code, out, _ := run("validate", "--strict", file); code != ExitInvalid || !strings.Contains(out, `unknown key "timout" in step (--strict)`) {
		t.Errorf("--strict: code %d, out %q", code, out)
	}
	t.Setenv("GANTRY_STRICT", "true")
	if code, _, _ := run("validate", file); code != ExitInvalid {
		t.Errorf("GANTRY_STRICT=true: code %d", code)
	}
	t.Setenv("GANTRY_STRICT", "")
	if code, out, _ := run("validate", "--list-types"); code != ExitOK || !strings.Contains(out, "step types: ") || !strings.Contains(out, "ShellScript") {
		t.Errorf("--list-types: code %d, out %q", code, out)
	}

	p := filepath.Join(t.TempDir(), "p.yaml")
	src := "pipeline:\n  name: p\n  identifier: p\n  template: {templateRef: account.golden, versionLabel: \"1\"}\n"
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := run("validate", p); code != ExitOK || !strings.Contains(out, "warning: template account.golden@1 is not among the templates found") {
		t.Errorf("validate: code %d, out %q", code, out)
	}
	if code, out, errs := run("expand", p); code != ExitInvalid || out != "" || !strings.Contains(errs, "account.golden@1 is not among the templates found") {
		t.Errorf("expand: code %d, out %q, stderr %q", code, out, errs)
	}
}

// NAME=VALUE flags (approve --input, input --set, triggers test --header) share one reader.
func TestPairs(t *testing.T) {
	got, err := pairs("--input", "NAME=VALUE", []string{"region=eu", "note=a=b"})
	if err != nil || got["region"] != "eu" || got["note"] != "a=b" || len(got) != 2 {
		t.Errorf("pairs: %v %v", got, err)
	}
	if _, err := pairs("--set", "KEY=VALUE", []string{"nope"}); err == nil || !strings.Contains(err.Error(), `--set "nope": want KEY=VALUE`) {
		t.Errorf("missing '=': %v", err)
	}
	var seen []string
	if err := eachPair("--header", "Name=Value", []string{"X-A=1", "X-A=2"}, func(k, v string) { seen = append(seen, k+":"+v) }); err != nil || strings.Join(seen, ",") != "X-A:1,X-A:2" {
		t.Errorf("eachPair keeps repeats in order: %v %v", seen, err)
	}
}

// An identity provider that does not answer stops gantry server at start, with the reason.
func TestServerRefusesAnUnreachableIssuer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + ln.Addr().String() + "/"
	ln.Close()
	code, _, errs := run("server", "--data-dir", t.TempDir(), "--oidc-issuer", issuer, "--oidc-client-id", "gantry", "--ui-listen", "127.0.0.1:18233")
	if code != ExitUsage || !strings.Contains(errs, "OIDC issuer "+issuer) || !strings.Contains(errs, "connection refused") {
		t.Errorf("code %d, stderr %q", code, errs)
	}
	if code, _, errs := run("server", "--data-dir", t.TempDir(), "--oidc-issuer", issuer, "--oidc-client-id", "gantry", "--ui-listen", ""); code != ExitUsage || !strings.Contains(errs, "needs the Web UI") {
		t.Errorf("without a UI: code %d, stderr %q", code, errs)
	}
}
