package docs_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSnippetsAreExamples checks that every ```go block of the pages in this
// directory appears, line for line (indentation and blank lines aside), in
// examples_test.go or another *examples_test.go file (explore_examples_test.go),
// where it is compiled and its output checked. A page
// that shows code the examples do not run fails here.
func TestSnippetsAreExamples(t *testing.T) {
	files, err := filepath.Glob("*examples_test.go")
	if err != nil || len(files) == 0 {
		t.Fatal("no examples_test.go", err)
	}
	var examples [][]string
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		examples = append(examples, normalize(strings.Split(string(src), "\n")))
	}
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := 0
	for _, page := range pages {
		for _, b := range goBlocks(t, page) {
			blocks++
			found := false
			for _, ex := range examples {
				found = found || containsRun(ex, normalize(b.lines))
			}
			if !found {
				t.Errorf("%s:%d: this go block is not in %s; copy it from (or into) an Example there", page, b.line, strings.Join(files, " or "))
			}
		}
	}
	if blocks == 0 {
		t.Error("no go blocks found in the pages")
	}
}

type block struct {
	line  int
	lines []string
}

func goBlocks(t *testing.T, page string) []block {
	t.Helper()
	f, err := os.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []block
	var cur *block
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```go":
			cur = &block{line: n}
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Errorf("%s:%d: unterminated code block", page, cur.line)
	}
	return out
}

// normalize trims every line and drops the empty ones.
func normalize(lines []string) []string {
	var out []string
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// containsRun reports whether needle occurs in haystack as a contiguous run.
func containsRun(haystack, needle []string) bool {
	if len(needle) == 0 {
		return true
	}
outer:
	for i := 0; i+len(needle) <= len(haystack); i++ {
		for j := range needle {
			if haystack[i+j] != needle[j] {
				continue outer
			}
		}
		return true
	}
	return false
}
