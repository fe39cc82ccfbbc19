package echo_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportsOnlyVerbs keeps the application portable: its non-test files
// import package verbs and the standard library, never the simulator.
func TestImportsOnlyVerbs(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if strings.Contains(p, ".") && p != "github.com/verbsim/verbsim/verbs" {
				t.Errorf("%s imports %s; the application may import only package verbs", name, p)
			}
		}
	}
}
