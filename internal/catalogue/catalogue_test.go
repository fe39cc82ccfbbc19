package catalogue_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/verbsim/verbsim/internal/catalogue"
)

// sample is a catalogue in miniature: two numbered sections, a sub-heading,
// prose with pipes that is not a row, a retired row, escaped pipes, and a
// status row (an S before the number). Its families are made up, so that
// internal/rulesdoc credits no real rule to this file.
const sample = `# Catalogue

## 1. EX — examples

| ID | Rule | Source | How observed |
|---|---|---|---|
| EX-01 | Creating a CQ fails. Second sentence. | man | x |
| EX-30 | RETIRED: merged into EX-01. | — | — |

Some prose with | pipes | that is not a rule row.

## 2. DEMO — more examples

### 2.1 Sub-heading

| ID | Rule | Source | How observed |
|---|---|---|---|
| DEMO-05 | A (rvt ` + "`solicited \\|\\| status`" + `): every error fires. | rvt | Constants test. |
| EX-S05 | WR_FLUSH_ERR (5). | RM |
`

func TestParse(t *testing.T) {
	rules, err := catalogue.Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	want := []catalogue.Rule{
		{ID: "EX-01", Family: "EX", Section: "EX — examples", Text: "Creating a CQ fails. Second sentence.", Observed: "x"},
		{ID: "EX-30", Family: "EX", Section: "EX — examples", Text: "RETIRED: merged into EX-01.", Observed: "—", Retired: true},
		{ID: "DEMO-05", Family: "DEMO", Section: "DEMO — more examples", Text: "A (rvt `solicited || status`): every error fires.", Observed: "Constants test."},
		{ID: "EX-S05", Family: "EX", Section: "DEMO — more examples", Text: "WR_FLUSH_ERR (5)."},
	}
	if d := cmp.Diff(want, rules); d != "" {
		t.Errorf("parsed rules (-want +got):\n%s", d)
	}
}

func TestParseRejects(t *testing.T) {
	dup := sample + "| EX-30 | Again. | x | x |\n"
	if _, err := catalogue.Parse(strings.NewReader(dup)); err == nil || !strings.Contains(err.Error(), "EX-30") {
		t.Errorf("duplicate ID: err = %v, want one naming EX-30", err)
	}
	if _, err := catalogue.Parse(strings.NewReader("# nothing\n")); err == nil {
		t.Error("a file without rules parsed without error")
	}
}

func TestTitle(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"Creating a CQ (e.g. with `cqe` = 0) fails. Second sentence.", "Creating a CQ (e.g. with `cqe` = 0) fails."},
		{"**[IMPL]** Polling, e.g. with zero. More.", "[IMPL] Polling, e.g. with zero."},
		{"Calls `ibv_x.y` here. More.", "Calls `ibv_x.y` here."},
		{"Short rule without a stop", "Short rule without a stop"},
		{
			"WR_FLUSH_ERR (5): the WR was outstanding, or was posted, while the QP was in ERR (or the SQ in SQE) and nothing else.",
			"WR_FLUSH_ERR (5): the WR was outstanding, or was posted, while the QP was in …",
		},
		// A long word is cut at a character's start, not inside one.
		{strings.Repeat("€", 60), strings.Repeat("€", 26) + " …"},
	} {
		if got := catalogue.Title(tt.in); got != tt.want {
			t.Errorf("Title(%q)\n = %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

func TestFamilyAndNumber(t *testing.T) {
	for _, tt := range []struct {
		id     string
		family string
		n      int
		status bool
	}{
		{"EX-08", "EX", 8, false},
		{"EX-S05", "EX", 5, true},
		{"DEMO-33", "DEMO", 33, false},
		{"nodash", "nodash", 0, false},
	} {
		n, status := catalogue.Number(tt.id)
		if f := catalogue.Family(tt.id); f != tt.family || n != tt.n || status != tt.status {
			t.Errorf("%s: family %q, number %d, status %v; want %q, %d, %v", tt.id, f, n, status, tt.family, tt.n, tt.status)
		}
	}
}

// TestEmbedded checks the copy the command line carries: it parses, and
// Lookup finds a rule by its ID whatever its case and surrounding space.
func TestEmbedded(t *testing.T) {
	rules, err := catalogue.Rules()
	if err != nil {
		t.Fatalf("the embedded catalogue does not parse: %v", err)
	}
	if len(rules) < 100 {
		t.Fatalf("the embedded catalogue has %d rules; the repository's has hundreds", len(rules))
	}
	for _, r := range rules {
		for _, id := range []string{r.ID, " " + strings.ToLower(r.ID) + "\t"} {
			got, ok := catalogue.Lookup(id)
			if !ok || got != r {
				t.Fatalf("Lookup(%q) = %+v, %v; want the row %+v", id, got, ok, r)
			}
		}
	}
	if r, ok := catalogue.Lookup("NOPE-99"); ok {
		t.Errorf("Lookup(NOPE-99) = %+v, true; want false", r)
	}
}

// FuzzParse: any text parses or is refused with an error, never a panic;
// what parses has well-formed, unique IDs in their families, and every
// rule's title is short and a prefix of its text's words (or all of them).
func FuzzParse(f *testing.F) {
	f.Add(sample)
	f.Add("| EX-01 | a. b. | c |\n| EX-01 | again |\n")
	f.Add("## 1. X\n| X-S01 | **bold** \\| pipe (e.g. this). Next. |\n")
	f.Fuzz(func(t *testing.T, text string) {
		rules, err := catalogue.Parse(strings.NewReader(text))
		if err != nil {
			if rules != nil {
				t.Fatalf("an error (%v) with %d rules", err, len(rules))
			}
			return
		}
		seen := map[string]bool{}
		for _, r := range rules {
			if seen[r.ID] || r.Family != catalogue.Family(r.ID) || !strings.HasPrefix(r.ID, r.Family+"-") {
				t.Fatalf("rule %+v: a repeated ID or a wrong family", r)
			}
			seen[r.ID] = true
			title := catalogue.Title(r.Text)
			if utf8.ValidString(r.Text) && !utf8.ValidString(title) {
				t.Fatalf("Title(%q) = %q: not UTF-8", r.Text, title)
			}
			words := strings.Join(strings.Fields(strings.ReplaceAll(r.Text, "**", "")), " ")
			if len([]rune(title)) > 95 || !strings.HasPrefix(words, strings.TrimSuffix(title, " …")) && !strings.HasPrefix(words, title) {
				t.Fatalf("Title(%q) = %q: not a short prefix of its words", r.Text, title)
			}
		}
	})
}
