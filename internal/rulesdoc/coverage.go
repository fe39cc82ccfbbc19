package rulesdoc

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/verbsim/verbsim/conformance"
)

// Kind says what checks a rule.
type Kind uint8

const (
	_ Kind = iota
	// Case is a conformance case, registered under the rule's ID.
	Case
	// UnitTest is a _test.go file that names the rule's ID.
	UnitTest
)

// Check is one place that checks a rule.
type Check struct {
	Kind  Kind
	File  string   // slash-separated path relative to the repository root
	Line  int      // the line of a conformance case; 0 for unit tests
	Name  string   // the conformance case's name; empty for unit tests
	Funcs []string // for unit tests: the Test, Fuzz or Example functions that name the rule
}

// Coverage maps a rule ID to the places that check it.
type Coverage map[string][]Check

func (c Coverage) add(id string, ch Check) { c[id] = append(c[id], ch) }

// CaseCoverage records the conformance cases in cases.
func CaseCoverage(cases []conformance.Case) (Coverage, error) {
	cov := Coverage{}
	for _, c := range cases {
		src := c.Source()
		i := strings.LastIndexByte(src, ':')
		if i < 0 {
			return nil, fmt.Errorf("case %s (%s): source %q is not file:line", c.ID, c.Name, src)
		}
		line, err := strconv.Atoi(src[i+1:])
		if err != nil {
			return nil, fmt.Errorf("case %s (%s): source %q is not file:line", c.ID, c.Name, src)
		}
		cov.add(c.ID, Check{Kind: Case, File: src[:i], Line: line, Name: c.Name})
	}
	return cov, nil
}

// mentionPattern matches a rule ID in source text, optionally followed by a
// range end: "NOTIFY-01..05" names NOTIFY-01 to NOTIFY-05.
var mentionPattern = regexp.MustCompile(`\b([A-Z]+)-(S?)([0-9]+)(?:\.\.S?([0-9]+))?\b`)

// funcNamePattern matches a rule ID squeezed into a function name, as in
// TestOpcodeGolden_WC07 or TestStatus_WCS05 (the family is matched lazily so
// that the S of a status row stays with the number).
var funcNamePattern = regexp.MustCompile(`([A-Z]+?)(S?[0-9]{2,})`)

// skipDirs are not searched for unit tests, relative to the repository root:
// the documentation's examples illustrate rules rather than check them, and
// this package's own tests are full of sample IDs.
var skipDirs = map[string]bool{"docs": true, "internal/rulesdoc": true}

// TestCoverage finds the _test.go files under root that name a rule of ids
// and records, per file, the test functions that do. A mention inside a
// function or its doc comment is credited to that function; a mention
// elsewhere in the file, to the file alone.
//
// Not searched: hidden directories, testdata, vendor, the directories in
// skipDirs, and the files of mutants (a name with "mutant" in it, as
// cq_mutants_test.go and mutant_test.go), whose rule IDs say which case
// must catch a broken device rather than what the file checks.
func TestCoverage(root string, ids map[string]bool) (Coverage, error) {
	cov := Coverage{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		name := d.Name()
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
				name == "testdata" || name == "vendor" || skipDirs[rel]) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, "_test.go") || strings.Contains(name, "mutant") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for id, funcs := range mentions(rel, src, ids) {
			cov.add(id, Check{Kind: UnitTest, File: rel, Funcs: funcs})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return cov, nil
}

// mentions returns the rules of ids that src names, each with the sorted
// test functions that name it (nil when only the file does).
func mentions(filename string, src []byte, ids map[string]bool) map[string][]string {
	type span struct {
		from, to int
		name     string
	}
	var funcs []span
	fset := token.NewFileSet()
	// A file another engineer is halfway through editing may not parse; its
	// mentions are then credited to the file alone.
	if f, err := parser.ParseFile(fset, filename, src, parser.ParseComments); err == nil {
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !isTestFunc(fd.Name.Name) {
				continue
			}
			from := fd.Pos()
			if fd.Doc != nil {
				from = fd.Doc.Pos()
			}
			funcs = append(funcs, span{fset.Position(from).Offset, fset.Position(fd.End()).Offset, fd.Name.Name})
			for _, m := range funcNamePattern.FindAllStringSubmatch(fd.Name.Name, -1) {
				id := m[1] + "-" + m[2] // "WC" + "S05"
				if ids[id] {
					funcs = append(funcs, span{-1, -1, fd.Name.Name + "\x00" + id})
				}
			}
		}
	}
	found := map[string]map[string]bool{}
	note := func(id, fn string) {
		if !ids[id] {
			return
		}
		if found[id] == nil {
			found[id] = map[string]bool{}
		}
		if fn != "" {
			found[id][fn] = true
		}
	}
	for _, loc := range mentionPattern.FindAllSubmatchIndex(src, -1) {
		fn := ""
		for _, s := range funcs {
			if s.from <= loc[0] && loc[1] <= s.to {
				fn = s.name
				break
			}
		}
		for _, id := range expand(src, loc) {
			note(id, fn)
		}
	}
	for _, s := range funcs {
		if s.from < 0 {
			fn, id, _ := strings.Cut(s.name, "\x00")
			note(id, fn)
		}
	}
	out := map[string][]string{}
	for id, fns := range found {
		var list []string
		for fn := range fns {
			list = append(list, fn)
		}
		sort.Strings(list)
		out[id] = list
	}
	return out
}

func isTestFunc(name string) bool {
	for _, p := range []string{"Test", "Fuzz", "Example", "Benchmark"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// expand turns one mentionPattern match into the IDs it names, keeping the
// zero padding of the first: "CQ-08..10" is CQ-08, CQ-09, CQ-10.
func expand(src []byte, loc []int) []string {
	fam := string(src[loc[2]:loc[3]])
	s := string(src[loc[4]:loc[5]])
	digits := string(src[loc[6]:loc[7]])
	first, _ := strconv.Atoi(digits)
	last := first
	if loc[8] >= 0 {
		last, _ = strconv.Atoi(string(src[loc[8]:loc[9]]))
	}
	if last < first || last-first > 50 {
		last = first
	}
	var ids []string
	for n := first; n <= last; n++ {
		ids = append(ids, fmt.Sprintf("%s-%s%0*d", fam, s, len(digits), n))
	}
	return ids
}

// Merge returns the union of several coverages, each rule's checks sorted:
// conformance cases first, then unit tests, each by file and line.
func Merge(covs ...Coverage) Coverage {
	out := Coverage{}
	for _, c := range covs {
		for id, checks := range c {
			out[id] = append(out[id], checks...)
		}
	}
	for _, checks := range out {
		sort.SliceStable(checks, func(i, j int) bool {
			a, b := checks[i], checks[j]
			if a.Kind != b.Kind {
				return a.Kind < b.Kind
			}
			if a.File != b.File {
				return a.File < b.File
			}
			return a.Line < b.Line
		})
	}
	return out
}

// link renders a check as a markdown link relative to docs/.
func (c Check) link() string {
	target := path.Join("..", c.File)
	switch c.Kind {
	case Case:
		// No line number: the page must not go stale when a case file shifts.
		return fmt.Sprintf("[%s](%s) %q", c.File, target, c.Name)
	default:
		s := fmt.Sprintf("[%s](%s)", c.File, target)
		if len(c.Funcs) > 0 {
			s += " (" + strings.Join(c.Funcs, ", ") + ")"
		}
		return s
	}
}
