// Package rulesdoc reads the rule catalogue, spec/catalogue.md, and
// generates docs/rules.md from it: every rule ID with its status, either
// checked (by which conformance case or unit test) or pending (with the
// issue that will cover it).
//
// The catalogue is parsed from its markdown tables, coverage comes from
// conformance.Cases() and from the rule IDs named in the repository's
// _test.go files, and Render turns both into a page. TestRulesDocIsCurrent
// compares the page with the committed one; run it with -update to rewrite
// it. Citations finds every rule ID the repository's Go files and markdown
// pages name, so that a test can check each one is in the catalogue.
package rulesdoc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// CataloguePath is where the rule catalogue lives, relative to the
// repository root (slash-separated).
const CataloguePath = "spec/catalogue.md"

// Rule is one row of the catalogue.
type Rule struct {
	ID       string // stable rule ID, e.g. "CQ-08" or "WC-S05"
	Family   string // the ID's prefix, e.g. "CQ"
	Section  string // the "## N. ..." heading the row sits under, without its number
	Text     string // the Rule column, with escaped pipes restored
	Observed string // the "How observed" column, if the row has one
	Retired  bool   // the row is marked RETIRED
}

// idPattern matches a rule ID as the catalogue writes it.
var idPattern = regexp.MustCompile(`^[A-Z]+-S?[0-9]+$`)

// sectionPattern matches a numbered level-2 heading, "## 1. CQ — ...".
var sectionPattern = regexp.MustCompile(`^## [0-9]+\. (.*)$`)

// ParseRules reads the catalogue and returns its rules in document order.
// A rule row is a table row whose first cell is a rule ID; every other line
// is ignored. A repeated ID is an error: IDs are the catalogue's keys.
func ParseRules(r io.Reader) ([]Rule, error) {
	var rules []Rule
	seen := map[string]int{}
	section := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if m := sectionPattern.FindStringSubmatch(text); m != nil {
			section = strings.TrimSpace(m[1])
			continue
		}
		if !strings.HasPrefix(text, "|") {
			continue
		}
		cells := splitRow(text)
		if len(cells) < 2 || !idPattern.MatchString(cells[0]) {
			continue
		}
		id := cells[0]
		if prev, dup := seen[id]; dup {
			return nil, fmt.Errorf("line %d: rule %s is already defined on line %d", line, id, prev)
		}
		seen[id] = line
		r := Rule{
			ID:      id,
			Family:  family(id),
			Section: section,
			Text:    cells[1],
			Retired: strings.Contains(cells[1], "RETIRED"),
		}
		if len(cells) >= 4 {
			r.Observed = cells[3]
		}
		rules = append(rules, r)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(rules) == 0 {
		return nil, fmt.Errorf("no rule rows found")
	}
	return rules, nil
}

// ParseRulesFile is ParseRules on the file at path.
func ParseRulesFile(path string) ([]Rule, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rules, err := ParseRules(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rules, nil
}

// splitRow splits a markdown table row into trimmed cells. A backslash
// escapes a pipe inside a cell ("a \|\| b"); the escape is removed.
func splitRow(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	row = strings.TrimSuffix(row, "|")
	var cells []string
	var cell strings.Builder
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row) && row[i+1] == '|':
			cell.WriteByte('|')
			i++
		case row[i] == '|':
			cells = append(cells, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(row[i])
		}
	}
	return append(cells, strings.TrimSpace(cell.String()))
}

// family returns the prefix of a rule ID: "WC" for "WC-S05".
func family(id string) string {
	if i := strings.IndexByte(id, '-'); i > 0 {
		return id[:i]
	}
	return id
}

// number returns the numeric part of a rule ID: 5 for "WC-S05", and whether
// the ID has the status-row "S" marker.
func number(id string) (n int, status bool) {
	i := strings.IndexByte(id, '-')
	if i < 0 {
		return 0, false
	}
	rest := id[i+1:]
	if strings.HasPrefix(rest, "S") {
		status = true
		rest = rest[1:]
	}
	n, _ = strconv.Atoi(rest)
	return n, status
}

// Title condenses a rule's text into a short title: the first sentence, or
// the first words up to about 80 characters, without markdown emphasis.
func Title(text string) string {
	const max = 80
	t := strings.ReplaceAll(text, "**", "")
	t = strings.Join(strings.Fields(t), " ")
	if end := sentenceEnd(t); end > 0 {
		t = t[:end]
	}
	if len(t) <= max+10 { // a little over is better than a cut just before the end
		return t
	}
	cut := strings.LastIndexByte(t[:max], ' ')
	if cut < max/2 {
		cut = max
	}
	return strings.TrimRight(t[:cut], " ,;:(—-") + " …"
}

// sentenceEnd returns the index just after the first full stop that ends a
// sentence, or 0. Stops inside abbreviations ("e.g.", "i.e.", "vs.") or
// parentheses or code spans do not count.
func sentenceEnd(t string) int {
	depth, code := 0, false
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case '`':
			code = !code
		case '(':
			if !code {
				depth++
			}
		case ')':
			if !code && depth > 0 {
				depth--
			}
		case '.':
			if code || depth > 0 || (i+1 < len(t) && t[i+1] != ' ') {
				continue
			}
			word := t[strings.LastIndexByte(t[:i], ' ')+1 : i]
			switch strings.ToLower(word) {
			case "e.g", "i.e", "vs", "cf", "etc":
				continue
			}
			return i + 1
		}
	}
	return 0
}
