// Package catalogue reads the rule catalogue, spec/catalogue.md: one Rule
// per table row whose first cell is a rule ID, with its section, text and
// how a test observes it. Rules parses the copy embedded in package spec, so
// a program built from this module (verbsim explain, the scenario runner
// naming the rule behind each step) carries it without a checkout; Parse and
// ParseFile read any copy. Title condenses a rule's text to the short form
// timelines and tables print.
//
// The package imports nothing of the suite: the command line needs the
// catalogue, not the conformance cases (internal/rulesdoc joins the two).
package catalogue

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/verbsim/verbsim/spec"
)

// Path is where the rule catalogue lives, relative to the
// repository root (slash-separated).
const Path = "spec/catalogue.md"

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

// Parse reads the catalogue and returns its rules in document order.
// A rule row is a table row whose first cell is a rule ID; every other line
// is ignored. A repeated ID is an error: IDs are the catalogue's keys.
func Parse(r io.Reader) ([]Rule, error) {
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
			Family:  Family(id),
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

// ParseFile is Parse on the file at path.
func ParseFile(path string) ([]Rule, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rules, err := Parse(f)
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

// Family returns the prefix of a rule ID: "WC" for "WC-S05".
func Family(id string) string {
	if i := strings.IndexByte(id, '-'); i > 0 {
		return id[:i]
	}
	return id
}

// Number returns the numeric part of a rule ID: 5 for "WC-S05", and whether
// the ID has the status-row "S" marker.
func Number(id string) (n int, status bool) {
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
		cut = max // a long word: cut inside it, at a character's start
		for cut > 0 && !utf8.RuneStart(t[cut]) {
			cut--
		}
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

var embedded struct {
	once  sync.Once
	rules []Rule
	byID  map[string]int
	err   error
}

// Rules returns the rules of the catalogue embedded in package spec, parsed
// once, in document order. The caller must not modify the slice.
func Rules() ([]Rule, error) {
	embedded.once.Do(func() {
		embedded.rules, embedded.err = Parse(bytes.NewReader(spec.Catalogue))
		embedded.byID = make(map[string]int, len(embedded.rules))
		for i, r := range embedded.rules {
			embedded.byID[r.ID] = i
		}
	})
	return embedded.rules, embedded.err
}

// Lookup returns the embedded catalogue's rule of id (case-insensitive,
// surrounding space ignored), or false when it has no rule of that ID or
// does not parse. A retired rule is returned with Retired set.
func Lookup(id string) (Rule, bool) {
	if _, err := Rules(); err != nil {
		return Rule{}, false
	}
	i, ok := embedded.byID[strings.ToUpper(strings.TrimSpace(id))]
	if !ok {
		return Rule{}, false
	}
	return embedded.rules[i], true
}
