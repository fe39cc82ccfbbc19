package rulesdoc_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/verbsim/verbsim/internal/catalogue"
	"github.com/verbsim/verbsim/internal/rulesdoc"
)

// sharedPath is where the engineers' shared research notes keep the catalogue
// the project's own was written from, when a shared/ directory happens to sit
// beside the repository. The repository does not need it.
var sharedPath = filepath.Join(repoRoot, "..", "shared", "spec", "RULES.md")

// parseCatalogue parses spec/catalogue.md or stops the test.
func parseCatalogue(t *testing.T) []catalogue.Rule {
	t.Helper()
	rules, err := catalogue.ParseFile(rulesPath)
	if err != nil {
		t.Fatalf("the rule catalogue does not parse: %v", err)
	}
	return rules
}

// wellFormedID is an ID as the catalogue must write it: a family, a dash, an
// optional S (the status rows of WC) and two digits or more.
var wellFormedID = regexp.MustCompile(`^[A-Z]+-S?[0-9]{2,}$`)

// TestCatalogue checks the repository's own catalogue: it parses, its IDs
// are well formed and unique, every row says something, and every section
// holds the rules of one family.
func TestCatalogue(t *testing.T) {
	rules := parseCatalogue(t)
	seen := map[string]bool{}
	sectionFamily := map[string]string{}
	for _, r := range rules {
		if !wellFormedID.MatchString(r.ID) {
			t.Errorf("%s: not a well-formed rule ID", r.ID)
		}
		if seen[r.ID] {
			t.Errorf("%s: defined twice", r.ID)
		}
		seen[r.ID] = true
		if strings.TrimSpace(r.Text) == "" {
			t.Errorf("%s: the Rule cell is empty", r.ID)
		}
		if r.Observed == "" {
			t.Errorf("%s: the row has no How observed cell (write — when nothing observes it)", r.ID)
		}
		if r.Section == "" {
			t.Errorf("%s: not under a numbered section heading", r.ID)
		}
		if f, ok := sectionFamily[r.Section]; ok && f != r.Family {
			t.Errorf("%s: in section %q, which holds %s rules", r.ID, r.Section, f)
		}
		sectionFamily[r.Section] = r.Family
		for _, tag := range []string{"IMPL", "CONFLICT"} {
			if strings.Contains(r.Text, "["+tag+"]") && !strings.Contains(r.Text, "**["+tag+"]**") {
				t.Errorf("%s: write the tag as **[%s]**", r.ID, tag)
			}
		}
		if (strings.Contains(r.Text, "[IMPL]") || strings.Contains(r.Text, "[CONFLICT]")) &&
			!strings.Contains(r.Text, "Sim default") {
			t.Errorf("%s: an [IMPL] or [CONFLICT] rule must name its Sim default", r.ID)
		}
	}
}

// TestCitedRulesExist checks that every rule ID named in the repository's Go
// files and markdown pages (comments, case registrations, test names'
// spelled-out IDs, docs) is a rule of the catalogue, so that no citation
// points at a rule that does not exist.
func TestCitedRulesExist(t *testing.T) {
	rules := parseCatalogue(t)
	ids, families := map[string]bool{}, map[string]bool{}
	for _, r := range rules {
		ids[r.ID] = true
		families[r.Family] = true
	}
	cites, err := rulesdoc.Citations(repoRoot, families)
	if err != nil {
		t.Fatal(err)
	}
	if len(cites) == 0 {
		t.Fatal("no rule ID cited anywhere in the repository; is the scan looking in the right place?")
	}
	var unknown []string
	for id := range cites {
		if !ids[id] {
			unknown = append(unknown, id)
		}
	}
	sort.Strings(unknown)
	for _, id := range unknown {
		var where []string
		for _, c := range cites[id] {
			where = append(where, c.String())
		}
		t.Errorf("%s is cited but not in %s: %s", id, catalogue.Path, strings.Join(where, ", "))
	}
}

// TestCatalogueMatchesShared checks, when the shared research notes sit
// beside the repository, that the project's catalogue keeps every ID of
// the catalogue it was written from. A clone on its own skips it.
func TestCatalogueMatchesShared(t *testing.T) {
	if _, err := os.Stat(sharedPath); err != nil {
		t.Skipf("no shared catalogue beside the repository (%s): nothing to compare %s with; "+
			"the project's catalogue stands on its own", sharedPath, catalogue.Path)
	}
	shared, err := catalogue.ParseFile(sharedPath)
	if err != nil {
		t.Fatal(err)
	}
	ids := func(rules []catalogue.Rule) []string {
		var out []string
		for _, r := range rules {
			out = append(out, r.ID)
		}
		sort.Strings(out)
		return out
	}
	// The project's catalogue keeps every ID of the shared one and may add
	// its own (new readings and verb families get new IDs).
	ours := map[string]bool{}
	for _, id := range ids(parseCatalogue(t)) {
		ours[id] = true
	}
	for _, id := range ids(shared) {
		if !ours[id] {
			t.Errorf("rule %s of the shared catalogue is missing from %s", id, catalogue.Path)
		}
	}
}

func TestCitations(t *testing.T) {
	root := t.TempDir()
	write := func(rel, src string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sim/x/x.go", "package x\n\n// CQ-01 and NOTIFY-01..03; CQ-2 sorts before CQ-10.\n// A ConnectX-6, SHA-256.\nvar _ = \"WC-S05\"\n")
	write("docs/page.md", "Rule QP-07, then\nQP-99.\n")
	write("sim/x/notes.txt", "CQ-05\n")
	write("sim/x/testdata/t.go", "package t // CQ-06\n")
	write(".hidden/h.go", "package h // CQ-07\n")
	write("internal/rulesdoc/r.go", "package r // CQ-08\n")

	cites, err := rulesdoc.Citations(root, map[string]bool{"CQ": true, "NOTIFY": true, "WC": true, "QP": true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for id, cs := range cites {
		for _, c := range cs {
			got[id] = append(got[id], c.String())
		}
	}
	want := map[string][]string{
		"CQ-01":     {"sim/x/x.go:3"},
		"CQ-10":     {"sim/x/x.go:3"},
		"NOTIFY-01": {"sim/x/x.go:3"},
		"NOTIFY-02": {"sim/x/x.go:3"},
		"NOTIFY-03": {"sim/x/x.go:3"},
		"WC-S05":    {"sim/x/x.go:5"},
		"QP-07":     {"docs/page.md:1"},
		"QP-99":     {"docs/page.md:2"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("citations (-want +got):\n%s", d)
	}
}
