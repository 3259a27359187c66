package expressions

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func testScope() *Scope {
	data := map[string]any{
		"pipeline": map[string]any{
			"name": "Checkout", "identifier": "checkout", "sequenceId": int64(7),
			"tags":          map[string]any{"team": "payments"},
			"currentStatus": "SUCCEEDED",
			"variables": map[string]any{
				"csv": "red,green,blue", "n": int64(3), "env": "prod", "target": "deploy",
				"list": []any{"eu", "us"}, "flag": "true", "db.url": "postgres://db",
				"regions": "eu-west-1,us-east-1", "chain": "<+pipeline.variables.env>-x",
				"loop": "<+pipeline.variables.loop>", "hook": "hook_secret", "weight": 2.5,
			},
			"stages": map[string]any{
				"deploy": map[string]any{
					"identifier": "deploy", "status": "RUNNING", "currentStatus": "SUCCEEDED",
					"variables": map[string]any{"x": "a", "tier": "gold"},
					"spec": map[string]any{"execution": map[string]any{"steps": map[string]any{
						"dry": map[string]any{"status": "SUCCEEDED", "output": map[string]any{"outputVariables": map[string]any{"ver": "1.4.2"}}},
						"probe": map[string]any{"status": "RUNNING", "spec": map[string]any{"url": "http://x", "environmentVariables": map[string]any{"hook": "hook_secret"}},
							"output": map[string]any{"httpResponseCode": int64(200), "httpResponseBody": `{"status":"ok","build":{"id":"b1"}}`}},
						"canary": map[string]any{"status": "SUCCEEDED", "variables": map[string]any{"weight": int64(10)},
							"steps": map[string]any{"check": map[string]any{"status": "FAILED"}}},
					}}},
				},
				"deploy_1": map[string]any{"variables": map[string]any{"x": "looped"}},
			},
		},
		"matrix":   map[string]any{"env": "us", "weight": "25", "target": `{"region":"eu"}`},
		"strategy": map[string]any{"iteration": int64(1), "iterations": int64(3), "identifierPostFix": "_1"},
		"repeat":   map[string]any{"item": "web-2"},
		"env":      map[string]any{"type": "Production", "name": "prod-eu"},
	}
	return NewScope(data, "pipeline.stages.deploy.spec.execution.steps.probe")
}

// Rows of spec 9.2 (operators, methods, functors), 9.5 (built-ins that need no running
// pipeline), C70, and the forms real users write (issue 2).
func TestRender(t *testing.T) {
	cases := []struct {
		src  string
		want any
	}{
		// Plain references and interpolation.
		{`<+pipeline.name>`, "Checkout"},
		{`<+pipeline.sequenceId>`, int64(7)},
		{`run-<+pipeline.sequenceId>`, "run-7"},
		{`<+pipeline.tags.team>`, "payments"},
		{`<+pipeline.variables.list>`, []any{"eu", "us"}},
		{`us-east-1/<+env.name>/app`, "us-east-1/prod-eu/app"},
		{`${HARNESS_KUBE_CONFIG_PATH} stays`, "${HARNESS_KUBE_CONFIG_PATH} stays"},
		{`<+pipeline.variables.weight>`, 2.5},
		{`n=<+pipeline.variables.n>`, "n=3"},
		// C70: nested expressions and methods.
		{`<+<+pipeline.variables.csv>.split(",")[1]>`, "green"},
		{`<+<+pipeline.variables.csv>.contains("blue")>`, true},
		{`<+<+pipeline.variables.csv>.length() > 5 ? "long" : "short">`, "long"},
		// Paths built from inner expressions.
		{`<+pipeline.stages.<+stage.identifier>.spec.execution.steps.dry.status>`, "SUCCEEDED"},
		{`<+pipeline.stages.deploy<+strategy.identifierPostFix>.variables.x>`, "looped"},
		{`<+pipeline.stages.<+pipeline.variables.target>.variables.tier>`, "gold"},
		{`<+secrets.getValue(<+spec.environmentVariables.hook>)>`, SecretRef{ID: "hook_secret"}},
		// Arithmetic and concatenation.
		{`<+(100 - <+matrix.weight>)>`, int64(75)},
		{`<+"0.1." + <+pipeline.sequenceId>>`, "0.1.7"},
		{`<+"/tmp/" + <+pipeline.sequenceId>>`, "/tmp/7"},
		{`<+<+pipeline.variables.n> * 2 + 1>`, int64(7)},
		{`<+7 / 2>`, int64(3)},
		{`<+7.0 / 2>`, 3.5},
		{`<+7 % 4>`, int64(3)},
		{`<+-<+pipeline.variables.n>>`, int64(-3)},
		{`<+<+<+pipeline.variables.regions>.split(",")>.size()>`, int64(2)},
		{`<+<+pipeline.variables.regions>.split(",")>`, []any{"eu-west-1", "us-east-1"}},
		// Comparison and logic (JEXL word forms too).
		{`<+<+pipeline.variables.n> == 3>`, true},
		{`<+<+pipeline.variables.n> == "3">`, true},
		{`<+<+pipeline.variables.n> != 3>`, false},
		{`<+<+pipeline.variables.n> >= 3 && <+pipeline.variables.n> < 4>`, true},
		{`<+<+pipeline.variables.n> gt 2 and <+pipeline.variables.env> eq "prod">`, true},
		{`<+not (<+pipeline.variables.env> ne "prod")>`, true},
		{`<+!(<+pipeline.variables.n> le 2)>`, true},
		{`<+<+pipeline.variables.flag> == true>`, true},
		{`<+<+pipeline.variables.env> == true>`, false},
		{`<+<+pipeline.variables.missing> == null>`, true},
		{`<+<+pipeline.variables.missing> != "x">`, true},
		{`<+<+pipeline.variables.missing> ?: "fallback">`, "fallback"},
		{`<+<+pipeline.variables.env> ?: "fallback">`, "prod"},
		{`<+<+pipeline.variables.env> == "prod"?"yes":"no">`, "yes"},
		{`<+<+pipeline.variables.env> == "prod" ? "a:b" : "c">`, "a:b"},
		// Pattern operators.
		{`<+<+pipeline.variables.env> =~ "pr.*">`, true},
		{`<+<+pipeline.variables.env> =~ "r.*">`, false},
		{`<+<+pipeline.variables.env> =~ ["dev","prod"]>`, true},
		{`<+<+pipeline.variables.env> !~ ["dev","qa"]>`, true},
		{`<+<+pipeline.variables.env> =^ "pr">`, true},
		{`<+<+pipeline.variables.env> =$ "od">`, true},
		// String methods.
		{`<+<+pipeline.variables.env>.startsWith("pr")>`, true},
		{`<+<+pipeline.variables.env>.endsWith("x")>`, false},
		{`<+<+pipeline.variables.env>.equalsIgnoreCase("PROD")>`, true},
		{`<+<+pipeline.variables.env>.equals("prod")>`, true},
		{`<+<+pipeline.variables.env>.toUpperCase()>`, "PROD"},
		{`<+"  x ".trim()>`, "x"},
		{`<+<+pipeline.variables.env>.substring(1)>`, "rod"},
		{`<+<+pipeline.variables.env>.substring(1, 3)>`, "ro"},
		{`<+<+pipeline.variables.env>.indexOf("o")>`, int64(2)},
		{`<+<+pipeline.variables.env>.charAt(0)>`, "p"},
		{`<+<+pipeline.variables.env>.replace("p", "P")>`, "Prod"},
		{`<+<+pipeline.variables.csv>.replaceAll("[aeiou]", "_")>`, "r_d,gr__n,bl__"},
		{`<+<+pipeline.variables.env>.concat("-1")>`, "prod-1"},
		{`<+<+pipeline.variables.env>.matches("p[a-z]+")>`, true},
		{`<+<+pipeline.variables.env>.isEmpty()>`, false},
		{`<+<+pipeline.variables.csv>.split(",").length>`, nil}, // property, not method: no such key
		{`<+pipeline.sequenceId.toString()>`, "7"},
		{`<+"axb".replace("x", "<+pipeline.variables.env>")>`, "aprodb"},
		{`<+pipeline.variables.get("db.url")>`, "postgres://db"},
		// Lists and maps.
		{`<+<+pipeline.variables.list>.size()>`, int64(2)},
		{`<+<+pipeline.variables.list>.get(1)>`, "us"},
		{`<+<+pipeline.variables.list>[0]>`, "eu"},
		{`<+<+pipeline.variables.list>.contains("us")>`, true},
		{`<+pipeline.tags.keySet()>`, []any{"team"}},
		{`<+pipeline.tags.get("team")>`, "payments"},
		{`<+empty(<+pipeline.variables.missing>)>`, true},
		{`<+size(<+pipeline.variables.list>)>`, int64(2)},
		{`<+["a", "b"].contains("b")>`, true},
		{`<+{"k": 1}.get("k")>`, int64(1)},
		{`<+execution.steps.probe.spec["url"]>`, "http://x"},
		// Functors.
		{`<+json.select("status", <+execution.steps.probe.output.httpResponseBody>)>`, "ok"},
		{`<+json.select("build.id", <+execution.steps.probe.output.httpResponseBody>)>`, "b1"},
		{`<+json.list("a", "{\"a\": [1, 2]}")>`, []any{float64(1), float64(2)}},
		{`<+json.object(<+matrix.target>).region>`, "eu"},
		{`<+json.format(<+pipeline.variables.list>)>`, `["eu","us"]`},
		{`<+xml.select("/lib/book[2]/title", "<lib><book><title>A</title></book><book><title>B</title></book></lib>")>`, "B"},
		{`<+xml.select("//book/@id", "<lib><book id=\"7\"/></lib>")>`, "7"},
		{`<+xml.select("count(//book)", "<lib><book/><book/></lib>")>`, int64(2)},
		{`<+xml.select("/lib/none", "<lib/>")>`, nil},
		{`<+regex.match("o+", "foo")>`, true},
		{`<+regex.extract("v[0-9]+", "release v12 now")>`, "v12"},
		{`<+regex.replace("[0-9]", "#", "a1b2")>`, "a#b#"},
		{`<+shell.quote("it's")>`, `'it'\''s'`},
		{`<+shell.doubleQuote("a\"b$c")>`, `"a\"b\$c"`},
		{`<+shell.escapeChars("hello", "ho")>`, `\hell\o`},
		{`<+shell.enclose("'", "x")>`, `'x'`},
		{`Bearer <+secrets.getValue("health_token")>`, `Bearer <+secrets.getValue("health_token")>`},
		// Relative references (spec 9.4).
		{`<+stage.variables.x>`, "a"},
		{`<+stage.identifier>`, "deploy"},
		{`<+step.spec.url>`, "http://x"},
		{`<+spec.url>`, "http://x"},
		{`<+httpResponseCode>`, int64(200)},
		{`<+execution.steps.dry.output.outputVariables.ver>`, "1.4.2"},
		{`<+execution.steps.canary.steps.check.status>`, "FAILED"},
		{`<+execution.steps.canary.variables.weight>`, int64(10)},
		{`<+deploy.variables.tier>`, "gold"},
		{`<+steps.dry.status>`, "SUCCEEDED"},
		{`<+matrix.env>`, "us"},
		{`<+repeat.item>`, "web-2"},
		{`<+strategy.iteration>`, int64(1)},
		{`<+OnStageSuccess>`, true},
		{`<+OnPipelineFailure>`, false},
		{`<+Always>`, true},
		// Recursive resolution, and its depth limit.
		{`<+pipeline.variables.chain>`, "prod-x"},
		{`<+pipeline.variables.loop>`, nil},
		// Unresolved renders null (spec 9.9 default).
		{`<+pipeline.variables.missing>`, nil},
		{`echo "<+pipeline.variables.missing>"`, `echo "null"`},
		{`<+pipeline.stages.nope.spec.execution.steps.x.status>`, nil},
		{`<+pipeline.stages.deploy.spec.execution.steps.probe.output.httpResponseCode>`, int64(200)},
	}
	sc := testScope()
	for _, c := range cases {
		got, err := Render(c.src, Text, sc, Options{})
		if err != nil {
			t.Errorf("%s: unexpected error %v", c.src, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.src, got, c.want)
		}
	}
}

// Conditions bind <+...> as values and allow operators and methods after the closing '>'.
func TestConditions(t *testing.T) {
	cases := []struct {
		src  string
		want bool
	}{
		{`<+execution.steps.probe.output.httpResponseBody>.contains("ok")`, true},
		{`<+pipeline.variables.list>.contains("<+matrix.env>")`, true},
		{`<+stage.variables.x> == "a" || <+stage.variables.x> == "b"`, true},
		{`<+httpResponseCode> == 200 && <+json.select("status", httpResponseBody)> == "ok"`, true},
		{`<+pipeline.variables.n> > 2`, true},
		{`<+pipeline.variables.n> > 5`, false},
		{`true`, true},
		{`false`, false},
		{`<+pipeline.variables.flag>`, true},
		{`<+pipeline.variables.missing> == null`, true},
		{`<+pipeline.variables.env> != "dev"`, true},
		{`<+OnStageSuccess> && <+env.type> == "Production"`, true},
	}
	sc := testScope()
	for _, c := range cases {
		got, err := Render(c.src, Condition, sc, Options{})
		if err != nil {
			t.Errorf("%s: unexpected error %v", c.src, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s = %v, want %v", c.src, got, c.want)
		}
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		src     string
		mode    Mode
		msg     string
		col     int
		compile bool
	}{
		{`echo <+pipeline.name`, Text, "unterminated expression", 6, true},
		{`<+pipeline.x + * 2>`, Text, `unexpected token Operator("*")`, 16, true},
		{`<+pipeline.name.toUpper()>`, Text, "unknown method toUpper()", 17, true},
		{`<+json.parse("{}")>`, Text, "unknown function json.parse()", 8, true},
		{`<+a = 1>`, Text, "", 0, true},
		{`<+let x = 1; x>`, Text, "statements and assignments are not allowed", 7, true},
		{`<+__s>`, Text, "reserved", 3, true},
		{`<+>`, Text, "empty expression", 1, true},
		{`<+pipeline.variables.env> > 2`, Condition, "> compares numbers", 27, false},
		{`<+pipeline.variables.env>`, Condition, `expected a boolean, got string "prod"`, 1, false},
		{`<+pipeline.variables.missing>`, Condition, "got null", 1, false},
		{`<+<+pipeline.variables.list>.length(1)>`, Text, "length(): takes no arguments", 30, false},
		{`<+<+pipeline.variables.env>.substring(9)>`, Text, "out of range", 29, false},
		{`<+<+pipeline.variables.n> / 0>`, Text, "division by zero", 27, false},
		{`<+secrets.getValue("x").length()>`, Text, "secret values cannot be inspected", 25, false},
	}
	sc := testScope()
	for _, c := range cases {
		tpl, err := Compile(c.src, c.mode)
		if c.compile {
			if err == nil {
				t.Errorf("%s: compiled, want error %q", c.src, c.msg)
				continue
			}
		} else {
			if err != nil {
				t.Errorf("%s: compile error %v", c.src, err)
				continue
			}
			_, err = tpl.Eval(sc, Options{})
			if err == nil {
				t.Errorf("%s: evaluated, want error %q", c.src, c.msg)
				continue
			}
		}
		e, ok := err.(*Error)
		if !ok {
			t.Errorf("%s: error %T %v is not *Error", c.src, err, err)
			continue
		}
		if !strings.Contains(e.Message, c.msg) {
			t.Errorf("%s: error %q, want it to contain %q", c.src, e.Message, c.msg)
		}
		if c.col > 0 && e.Column(c.src) != c.col {
			t.Errorf("%s: error at column %d, want %d (%s)", c.src, e.Column(c.src), c.col, e.Message)
		}
	}
}

func TestUnresolvedModes(t *testing.T) {
	sc := testScope()
	got, err := Render(`Bearer <+pipeline.variables.missing>`, Text, sc, Options{Unresolved: UnresolvedVerbatim})
	if err != nil || got != `Bearer <+pipeline.variables.missing>` {
		t.Errorf("verbatim: %v %v", got, err)
	}
	got, err = Render(`<+pipeline.variables.missing>`, Text, sc, Options{Unresolved: UnresolvedVerbatim})
	if err != nil || got != `<+pipeline.variables.missing>` {
		t.Errorf("verbatim whole: %v %v", got, err)
	}
	_, err = Render(`x <+pipeline.variables.missing>`, Text, sc, Options{Unresolved: UnresolvedFail})
	ue, ok := err.(*UnresolvedError)
	if !ok || ue.Path != "pipeline.variables.missing" {
		t.Errorf("strict: want UnresolvedError naming the path, got %T %v", err, err)
	}
}

func TestCompileIsCached(t *testing.T) {
	a, _ := Compile(`<+pipeline.name>-x`, Text)
	b, _ := Compile(`<+pipeline.name>-x`, Text)
	if a != b {
		t.Fatal("same text compiled twice")
	}
}

func TestToStringNumbers(t *testing.T) {
	for v, want := range map[any]string{3.0: "3", 2.5: "2.5", int64(-4): "-4", true: "true"} {
		if got := ToString(v); got != want {
			t.Errorf("ToString(%v) = %q, want %q", v, got, want)
		}
	}
}

// The reference engine's semantics for nested values, `>` followed by `==`, and null operands
// (issue 19): a value that holds expressions is evaluated as an expression first and rendered as
// text only when it is none.
func TestReferenceNestedSemantics(t *testing.T) {
	scope := NewScope(map[string]any{
		"a": int64(5), "b": int64(12), "c": "<+a> + 2 * <+b>", "d": "<+c> - <+a>", "e": "<+a>",
		"f": "abc", "g": "def", "h": "v2", "company": "harness", "hello": "Hello <+company>",
		"var1": "'archit' + <+company>", "var2": "'archit<+f>' + <+company>",
		"variables": map[string]any{"v1": "<+f><+g>", "v2": "'harness' + '<+f><+g>'", "v3": "<+f><+g>harness",
			"v4": "<+f> + <+g>", "v5": "archit-harness"},
	}, "")
	render := []struct {
		src  string
		want any
	}{
		{`<+var1>`, "architharness"},
		{`<+var2>`, "architabcharness"},
		{`expression-<+var2>-<+g>`, "expression-architabcharness-def"},
		{`<+variables.v1>`, "abcdef"},
		{`<+variables.v2>`, "harnessabcdef"},
		{`<+variables.v3>`, "abcdefharness"},
		{`harness<+variables.v4><+variables.v3>`, "harnessabcdefabcdefharness"},
		{`<+variables.<+h>>`, "harnessabcdef"},
		{`<+c>`, int64(29)},
		{`<+hello>`, "Hello harness"},
		{`archit-<+company>`, "archit-harness"},
		{`<+a>==5`, "5==5"},
		{`<+ <+a>==5?<+f>:<+g> >`, "abc"},
		// A nested render with spaces, and ternaries whose branches glue an inner value to
		// text: the inner value and the text read as one name, which resolves to nothing, so
		// the branch is that text.
		{`<+<+a> > + <+ <+b>> = <+<+a> + <+b>>`, "5 + 12 = 17"},
		{`<+ <+a>==5?<+<+f>harness>:<+<+g>def> >`, "abcharness"},
		{`<+ <+a>==<+a>?<+<+f>harness>:<+<+g>def> >`, "abcharness"},
		{`<+ <+a>==<+b>?<+<+f>harness>:<+<+g>def> >`, "defdef"},
	}
	for _, c := range render {
		got, err := Render(c.src, Text, scope, Options{})
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("render %s = %#v (%v), want %#v", c.src, got, err, c.want)
		}
	}
	for _, src := range []string{
		`<+a>==5`, `<+a> + <+b> == 17`, `<+c> - 2 * <+b> == 5`, `<+c> - 2 * <+b> == <+a>`,
		`<+<+c> - 2 * <+b>> == 5`, `<+<+<+d>> * <+d>> == <+571 + <+<+a>>>`, `<+e> - <+<+e>> + 1 == 1`,
	} {
		got, err := Render(src, Condition, scope, Options{})
		if err != nil || got != true {
			t.Errorf("condition %s = %v (%v), want true", src, got, err)
		}
	}
	// An unresolved reference inside arithmetic fails instead of adding "null".
	if _, err := Render(`<+a> + <+nope> == 5`, Condition, scope, Options{}); err == nil || !strings.Contains(err.Error(), "null operand") {
		t.Errorf("null operand: %v", err)
	}
}

// A relative reference to a step identifier that steps of several step groups share, and that
// reaches none by path, is an evaluation error naming them (spec 1.8 revised, issue 50); one
// that reaches a step by path, or matches one nested step, is not.
func TestAmbiguousRelativeStepReference(t *testing.T) {
	step := func(word string) map[string]any {
		return map[string]any{"status": "SUCCEEDED", "output": map[string]any{"outputVariables": map[string]any{"w": word}}}
	}
	data := map[string]any{"pipeline": map[string]any{"stages": map[string]any{"s": map[string]any{
		"spec": map[string]any{"execution": map[string]any{"steps": map[string]any{
			"canary": map[string]any{"steps": map[string]any{"approve": step("a"), "only": step("o")}},
			"prod":   map[string]any{"steps": map[string]any{"approve": step("b")}},
			"report": map[string]any{},
			// A step inside a group of its own identifier, and a step of the list itself whose
			// output is missing: neither is ambiguous (earlier histories render as before).
			"outer": map[string]any{"steps": map[string]any{"check": map[string]any{"steps": map[string]any{"check": step("c")}}}},
			"top":   map[string]any{"status": "RUNNING"},
			"g":     map[string]any{"steps": map[string]any{"top": step("t")}},
		}}}}}}}
	scope := NewScope(data, "pipeline.stages.s.spec.execution.steps.report")
	_, err := Render("<+execution.steps.approve.output.outputVariables.w>", Text, scope, Options{})
	if err == nil || !strings.Contains(err.Error(), "canary.steps.approve, prod.steps.approve") {
		t.Fatalf("want an ambiguity error naming both steps, got %v", err)
	}
	for src, want := range map[string]any{
		"<+execution.steps.canary.steps.approve.output.outputVariables.w>": "a",
		"<+execution.steps.only.output.outputVariables.w>":                 "null",
		"<+steps.prod.steps.approve.output.outputVariables.w>":             "b",
		"<+execution.steps.check.output.outputVariables.w>":                "null",
		"<+execution.steps.top.output.outputVariables.w>":                  "null",
	} {
		got, err := Render(src, Text, scope, Options{})
		if err != nil || ToString(got) != want {
			t.Errorf("%s = %v (%v), want %v", src, got, err, want)
		}
	}
}

func TestReferencesAreThePathsWrittenOut(t *testing.T) {
	cases := []struct {
		src  string
		mode Mode
		want []string // path@offset
	}{
		{`built <+execution.steps.bulid.output.outputVariables.version>`, Text,
			[]string{"execution.steps.bulid.output.outputVariables.version@8"}},
		{`<+pipeline.variables.get("a-b")> <+stage.variables.x.length()>`, Text,
			[]string{"pipeline.variables@2", "stage.variables.x@35"}},
		{`<+<+pipeline.variables.a> == "x" ? <+stage.name> : "n">`, Text,
			[]string{"pipeline.variables.a@4", "stage.name@37"}},
		{`<+pipeline.stages.s.spec["execution"].steps[<+matrix.k>].status>`, Text,
			[]string{"pipeline.stages.s.spec.execution.steps@2", "matrix.k@46"}},
		{`<+stage.variables.a> == "x" && <+env.name> != null`, Condition,
			[]string{"stage.variables.a@2", "env.name@33"}},
	}
	for _, c := range cases {
		tpl, err := Compile(c.src, c.mode)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		var got []string
		for _, r := range tpl.References() {
			got = append(got, fmt.Sprintf("%s@%d", strings.Join(r.Path, "."), r.Offset))
		}
		slices.Sort(got)
		want := slices.Clone(c.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s:\n got %v\nwant %v", c.src, got, want)
		}
	}
}
