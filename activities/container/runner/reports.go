package runner

import (
	"archive/tar"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// maxReports bounds what reports writes: test reports, not build outputs.
const maxReports = 32 << 20

// Reports writes, as a tar stream, the regular files below dir (or absolute) matching any of
// the patterns: a step's test reports. In a pattern `**` matches any number of directories,
// `*` and `?` characters within one.
func Reports(w io.Writer, dir string, patterns []string) error {
	var res []*regexp.Regexp
	for _, p := range patterns {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		re, err := regexp.Compile(globRegexp(filepath.Clean(p)))
		if err != nil {
			return err
		}
		res = append(res, re)
	}
	tw := tar.NewWriter(w)
	total := int64(0)
	err := filepath.WalkDir("/", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: not a report
		}
		if d.IsDir() {
			if path != "/" && !prefixOfAny(path+"/", patterns, dir) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		for _, re := range res {
			if !re.MatchString(path) {
				continue
			}
			info, err := d.Info()
			if err != nil || total+info.Size() > maxReports {
				return nil
			}
			f, err := os.Open(path)
			if err != nil {
				return nil
			}
			defer f.Close()
			if err := tw.WriteHeader(&tar.Header{Name: path, Mode: 0o644, Size: info.Size(), Typeflag: tar.TypeReg}); err != nil {
				return err
			}
			n, err := io.Copy(tw, f)
			total += n
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// prefixOfAny reports whether a directory can hold a match: it is below the fixed start of a
// pattern, or that start is below it.
func prefixOfAny(dir string, patterns []string, base string) bool {
	for _, p := range patterns {
		if !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		fixed := p
		if i := strings.IndexAny(p, "*?["); i >= 0 {
			fixed = p[:i]
		}
		if strings.HasPrefix(dir, fixed) || strings.HasPrefix(fixed, dir) {
			return true
		}
	}
	return false
}

// globRegexp turns a path pattern into an anchored regular expression.
func globRegexp(p string) string {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '*' && i+1 < len(p) && p[i+1] == '*':
			i++
			if i+1 < len(p) && p[i+1] == '/' {
				i++
				b.WriteString("(?:.*/)?") // **/ : any number of directories, none included
			} else {
				b.WriteString(".*")
			}
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return b.String()
}
