package expressions

import "testing"

// FuzzRender: any text compiles or fails with an *Error, and evaluation never panics or hangs.
func FuzzRender(f *testing.F) {
	for _, s := range []string{
		`<+<+pipeline.variables.csv>.split(",")[1]>`, `<+a> > 5`, `x <+"q" + <+b>> y`,
		`<+pipeline.stages.<+x>.status>`, `<+a ?: "b">`, `<+"<+a>".length()>`, `<+json.select("a", "{}")>`,
		`<+<+<+<+a>>>>`, `<+(1 - <+matrix.w>)>`, `<+a =~ ["x"]>`, `<+'it\'s'>`,
	} {
		f.Add(s)
	}
	sc := testScope()
	f.Fuzz(func(t *testing.T, src string) {
		for _, mode := range []Mode{Text, Condition} {
			tpl, err := compileTemplate(src, mode)
			if err != nil {
				if _, ok := err.(*Error); !ok {
					t.Fatalf("compile error of type %T: %v", err, err)
				}
				continue
			}
			_, _ = tpl.Eval(sc, Options{})
		}
	})
}
