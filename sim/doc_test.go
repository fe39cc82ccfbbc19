package sim_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// pkgDoc parses the non-test files of the package in dir with go/doc.
func pkgDoc(t *testing.T, dir string) *doc.Package {
	t.Helper()
	fset := token.NewFileSet()
	matches, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range matches {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatalf("%s: no Go files", dir)
	}
	path := files[0].Name.Name
	d, err := doc.NewFromFiles(fset, files, path)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// exportedNames lists every name the package's godoc shows: functions,
// types, constants, variables, and Type.Method and Type.Field.
func exportedNames(d *doc.Package) map[string]bool {
	names := map[string]bool{}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			for _, n := range v.Names {
				names[n] = true
			}
		}
	}
	values(d.Consts)
	values(d.Vars)
	for _, f := range d.Funcs {
		names[f.Name] = true
	}
	for _, typ := range d.Types {
		names[typ.Name] = true
		values(typ.Consts)
		values(typ.Vars)
		for _, f := range typ.Funcs {
			names[f.Name] = true
		}
		for _, m := range typ.Methods {
			names[typ.Name+"."+m.Name] = true
		}
		for _, spec := range typ.Decl.Specs {
			ts, ok := spec.(*ast.TypeSpec)
			if !ok {
				continue
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, fld := range st.Fields.List {
				for _, n := range fld.Names {
					if n.IsExported() {
						names[typ.Name+"."+n.Name] = true
					}
				}
			}
		}
	}
	return names
}

// docTable returns the rows of the preformatted table that follows the
// heading in the package doc: the first column and the Go names of the
// second.
func docTable(t *testing.T, text, heading string) (rows [][2]string) {
	t.Helper()
	_, after, ok := strings.Cut(text, "\n# "+heading+"\n")
	if !ok {
		t.Fatalf("the package doc has no section %q", heading)
	}
	if i := strings.Index(after, "\n# "); i >= 0 {
		after = after[:i]
	}
	cols := regexp.MustCompile(`\s{2,}`)
	header := true
	for line := range strings.SplitSeq(after, "\n") {
		if !strings.HasPrefix(line, "\t") {
			continue
		}
		if header { // the column titles
			header = false
			continue
		}
		c := cols.Split(strings.TrimSpace(line), -1)
		if len(c) != 2 {
			t.Errorf("%s: row %q has %d columns, want 2", heading, line, len(c))
			continue
		}
		rows = append(rows, [2]string{c[0], c[1]})
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no table", heading)
	}
	return rows
}

// TestDocVerbsMap keeps the verbs→Go map of the package doc true: every Go
// name in the tables of "From verbs to Go", "The connection manager" and
// "The simulator's controls"
// is an exported name of the package (a method, function, type, field or
// constant), no C verb has two rows, and every verb that an exported
// function or method says it is, in its first sentence, has a row.
func TestDocVerbsMap(t *testing.T) {
	d := pkgDoc(t, ".")
	names := exportedNames(d)
	text := d.Doc

	verbs := map[string]bool{}
	for _, heading := range []string{"From verbs to Go", "The connection manager", "The simulator's controls"} {
		for _, row := range docTable(t, text, heading) {
			for goName := range strings.SplitSeq(row[1], ", ") {
				if !names[goName] {
					t.Errorf("%s: %s → %s: sim has no exported %s", heading, row[0], row[1], goName)
				}
			}
			if heading == "The simulator's controls" {
				continue
			}
			for c := range strings.SplitSeq(row[0], ", ") {
				if !strings.HasPrefix(c, "ibv_") && !strings.HasPrefix(c, "rdma_") && !strings.HasPrefix(c, ".") {
					t.Errorf("%s: row %q does not start with a C name", heading, row[0])
				}
				if strings.ContainsRune(c, '.') {
					continue // a member, not a verb
				}
				if verbs[c] {
					t.Errorf("%s: %s has two rows", heading, c)
				}
				verbs[c] = true
			}
		}
	}

	// The verb a function or method says it is: "Open opens a context on
	// the device (ibv_open_device)." or "GetSRQNum is ibv_get_srq_num: ...".
	says := regexp.MustCompile(`\((ibv_[a-z0-9_]+)[;),]|\bis (ibv_[a-z0-9_]+)\b[^.]|implements rdmacm\.[A-Za-z]+: (rdma_[a-z0-9_]+)`)
	missing := map[string][]string{}
	check := func(who, comment string) {
		for _, m := range says.FindAllStringSubmatch(d.Synopsis(comment), -1) {
			v := m[1] + m[2] + m[3]
			if !verbs[v] {
				missing[v] = append(missing[v], who)
			}
		}
	}
	for _, f := range d.Funcs {
		check(f.Name, f.Doc)
	}
	for _, typ := range d.Types {
		for _, f := range typ.Funcs {
			check(f.Name, f.Doc)
		}
		for _, m := range typ.Methods {
			check(typ.Name+"."+m.Name, m.Doc)
		}
	}
	var miss []string
	for v := range missing {
		miss = append(miss, v)
	}
	sort.Strings(miss)
	for _, v := range miss {
		t.Errorf("From verbs to Go: %s has no row, though %s says it is that verb", v, strings.Join(missing[v], ", "))
	}
}
