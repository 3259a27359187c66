// Package diag holds positioned diagnostics: every problem Gantry finds in a pipeline, input set
// or expression is one Diagnostic pointing at file:line:col, so a user sees all of them at once.
package diag

import (
	"fmt"
	"sort"
	"strings"
)

// Pos is a position in a source file. Line and Col are 1-based; a zero Line means "whole file".
type Pos struct {
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	Col  int    `json:"col,omitempty"`
	// Via says how a position in another file got into the pipeline ("template t@v1 used at
	// p.yaml:12:9").
	Via string `json:"via,omitempty"`
}

func (p Pos) String() string {
	switch {
	case p.Line == 0:
		return p.File
	case p.File == "":
		return fmt.Sprintf("%d:%d", p.Line, p.Col)
	default:
		return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
	}
}

// Shift moves a position by a number of columns on the same line.
func (p Pos) Shift(cols int) Pos { p.Col += cols; return p }

// Severity is one of the three verdicts on input: broken (Error), valid reference YAML that
// Gantry cannot run yet (Unsupported; its code begins with "unsupported"), and accepted but
// worth saying (Warning). Errors and Unsupported block a run; warnings are only reported.
type Severity int

const (
	Error Severity = iota
	Warning
	Unsupported
)

func (s Severity) String() string {
	switch s {
	case Warning:
		return "warning"
	case Unsupported:
		return "unsupported"
	}
	return "error"
}

// MarshalText writes the severity by name in JSON.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Diagnostic is one problem: where, a stable code for tests and tooling, what, and what to do.
type Diagnostic struct {
	Pos      Pos      `json:"pos"`
	Severity Severity `json:"severity"`
	Code     string   `json:"code"`
	Message  string   `json:"message"`
	Hint     string   `json:"hint,omitempty"`
}

// Errorf builds an error diagnostic.
func Errorf(pos Pos, code, format string, args ...any) Diagnostic {
	return Diagnostic{Pos: pos, Severity: Error, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Unsupportedf builds the verdict on valid reference YAML that Gantry cannot run yet; code
// begins with "unsupported" and the message names exactly what.
func Unsupportedf(pos Pos, code, format string, args ...any) Diagnostic {
	return Diagnostic{Pos: pos, Severity: Unsupported, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Warnf builds a warning diagnostic.
func Warnf(pos Pos, code, format string, args ...any) Diagnostic {
	return Diagnostic{Pos: pos, Severity: Warning, Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithHint returns the diagnostic with a hint telling the user what to do.
func (d Diagnostic) WithHint(format string, args ...any) Diagnostic {
	d.Hint = fmt.Sprintf(format, args...)
	return d
}

// String renders the first line of the diagnostic: "file:line:col: message".
func (d Diagnostic) String() string {
	prefix := ""
	if d.Severity != Error {
		prefix = d.Severity.String() + ": "
	}
	return fmt.Sprintf("%s: %s%s", d.Pos, prefix, d.Message)
}

func (d Diagnostic) Error() string { return d.String() }

// List collects diagnostics.
type List []Diagnostic

// Add appends diagnostics.
func (l *List) Add(ds ...Diagnostic) { *l = append(*l, ds...) }

// Errorf appends an error and returns a pointer to it so a hint can be attached.
func (l *List) Errorf(pos Pos, code, format string, args ...any) *Diagnostic {
	*l = append(*l, Errorf(pos, code, format, args...))
	return &(*l)[len(*l)-1]
}

// Unsupportedf appends an unsupported verdict and returns a pointer to it for a hint.
func (l *List) Unsupportedf(pos Pos, code, format string, args ...any) *Diagnostic {
	*l = append(*l, Unsupportedf(pos, code, format, args...))
	return &(*l)[len(*l)-1]
}

// Warnf appends a warning and returns a pointer to it so a hint can be attached.
func (l *List) Warnf(pos Pos, code, format string, args ...any) *Diagnostic {
	*l = append(*l, Warnf(pos, code, format, args...))
	return &(*l)[len(*l)-1]
}

// Hint sets the hint of a diagnostic added with List.Errorf or List.Warnf.
func (d *Diagnostic) SetHint(format string, args ...any) { d.Hint = fmt.Sprintf(format, args...) }

// HasErrors reports whether any diagnostic blocks a run: an error or an unsupported feature.
func (l List) HasErrors() bool {
	for _, d := range l {
		if d.Severity != Warning {
			return true
		}
	}
	return false
}

// Errors returns what blocks a run: errors and unsupported features.
func (l List) Errors() List {
	var out List
	for _, d := range l {
		if d.Severity != Warning {
			out = append(out, d)
		}
	}
	return out
}

// Invalid returns only the errors (broken input), without unsupported features.
func (l List) Invalid() List { return l.filter(Error) }

// UnsupportedOnly returns only the unsupported features.
func (l List) UnsupportedOnly() List { return l.filter(Unsupported) }

// Warnings returns only the warnings.
func (l List) Warnings() List { return l.filter(Warning) }

func (l List) filter(s Severity) List {
	var out List
	for _, d := range l {
		if d.Severity == s {
			out = append(out, d)
		}
	}
	return out
}

// Sort orders diagnostics by file, line and column, and drops exact duplicates.
func (l List) Sort() List {
	out := append(List(nil), l...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Pos, out[j].Pos
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	seen := map[Diagnostic]bool{}
	dedup := out[:0]
	for _, d := range out {
		if !seen[d] {
			seen[d] = true
			dedup = append(dedup, d)
		}
	}
	return dedup
}

// UnknownKey is the code of a key that an object does not define. The reference ignores such
// keys, so they are warnings unless the object is closed or the check is strict.
const UnknownKey = "unknown-key"

// UnknownReference is the code of an expression path that names nothing the pipeline defines:
// a warning, as it renders null rather than failing, unless the check is strict.
const UnknownReference = "unknown-reference"

// Strict returns the list with every unknown-key warning made an error (`--strict`: for teams
// that want a typo to fail rather than be ignored, as the reference would ignore it).
func (l List) Strict() List {
	out := append(List(nil), l...)
	for i := range out {
		if (out[i].Code == UnknownKey || out[i].Code == UnknownReference) && out[i].Severity == Warning {
			out[i].Severity = Error
			m := strings.Replace(out[i].Message, "; ignored, as the reference ignores it", " (--strict)", 1)
			m = strings.Replace(m, "; it would render as null", " (--strict)", 1)
			if m == out[i].Message {
				m += " (--strict)"
			}
			out[i].Message = m
		}
	}
	return out
}

// Err returns the list as an error when it holds errors, else nil.
func (l List) Err() error {
	if !l.HasErrors() {
		return nil
	}
	return ListError(l.Errors().Sort())
}

// ListError is a List used as an error value.
type ListError List

func (e ListError) Error() string {
	lines := make([]string, len(e))
	for i, d := range e {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

// Sources gives the text of files by name, for caret snippets.
type Sources map[string][]byte

// Render writes each diagnostic as "file:line:col: message", the source line with a caret under
// the column, and the hint.
func (l List) Render(src Sources) string {
	var b strings.Builder
	for _, d := range l {
		b.WriteString(d.String())
		b.WriteByte('\n')
		if line, ok := sourceLine(src[d.Pos.File], d.Pos.Line); ok && d.Pos.Col > 0 {
			fmt.Fprintf(&b, "  %5d | %s\n", d.Pos.Line, line)
			fmt.Fprintf(&b, "        | %s^\n", caretPad(line, d.Pos.Col-1))
		}
		if d.Pos.Via != "" {
			fmt.Fprintf(&b, "  in %s\n", d.Pos.Via)
		}
		if d.Hint != "" {
			fmt.Fprintf(&b, "  hint: %s\n", d.Hint)
		}
	}
	return b.String()
}

func sourceLine(src []byte, n int) (string, bool) {
	if src == nil || n <= 0 {
		return "", false
	}
	lines := strings.Split(string(src), "\n")
	if n > len(lines) {
		return "", false
	}
	return strings.ReplaceAll(strings.TrimRight(lines[n-1], "\r"), "\t", " "), true
}

// caretPad keeps the caret under the right character when the line has multi-byte runes.
func caretPad(line string, col int) string {
	runes := []rune(line)
	if col > len(runes) {
		col = len(runes)
	}
	return strings.Repeat(" ", col)
}
