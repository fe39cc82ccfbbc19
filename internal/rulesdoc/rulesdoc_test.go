package rulesdoc_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/verbsim/verbsim/internal/catalogue"
	"github.com/verbsim/verbsim/internal/rulesdoc"
)

var update = flag.Bool("update", false, "rewrite docs/rules.md from the catalogue and the tests")

// The catalogue is part of the repository (spec/catalogue.md).
var (
	repoRoot  = filepath.Join("..", "..")
	rulesPath = filepath.Join(repoRoot, filepath.FromSlash(catalogue.Path))
	docPath   = filepath.Join(repoRoot, "docs", "rules.md")
)

// TestRulesDocIsCurrent regenerates docs/rules.md and compares it with the
// committed page. Run `go test ./internal/rulesdoc -update` after adding a
// case or a test that names a rule, or after editing the catalogue.
func TestRulesDocIsCurrent(t *testing.T) {
	got, err := rulesdoc.Generate(rulesPath, repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(docPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", docPath)
		return
	}
	want, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatalf("%v; run go test ./internal/rulesdoc -update", err)
	}
	if msg := firstDifference(string(want), string(got)); msg != "" {
		t.Errorf("docs/rules.md is stale; run go test ./internal/rulesdoc -update\n%s", msg)
	}
}

// firstDifference describes where two texts first differ, line by line, and
// how many lines differ in all; "" when they are equal.
func firstDifference(committed, generated string) string {
	a, b := strings.Split(committed, "\n"), strings.Split(generated, "\n")
	first, n := -1, 0
	for i := 0; i < max(len(a), len(b)); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y || i >= len(a) || i >= len(b) {
			if first < 0 {
				first = i
			}
			n++
		}
	}
	if first < 0 {
		return ""
	}
	line := func(l []string) string {
		if first < len(l) {
			return l[first]
		}
		return "(end of file)"
	}
	return fmt.Sprintf("%d line(s) differ; the first is line %d:\ncommitted: %s\ngenerated: %s",
		n, first+1, line(a), line(b))
}

const sampleCatalogue = `# Catalogue

## 1. CQ — completion queue

| ID | Rule | Source | How observed |
|---|---|---|---|
| CQ-01 | Creating a CQ (e.g. with ` + "`cqe` = 0" + `) fails. Second sentence. | man | x |
| ASYNC-14 | Last WQE reached. | RM | x |
| CQ-30 | RETIRED: merged into CQ-01. | — | — |

Some prose with | pipes | that is not a rule row.

## 2. NOTIFY — arming

### 2.1 Sub-heading

| ID | Rule | Source | How observed |
|---|---|---|---|
| NOTIFY-05 | **[CONFLICT]** A (rvt ` + "`solicited \\|\\| status`" + `): every error fires. B: not. | rvt | x |
| WC-S05 | WR_FLUSH_ERR (5): the WR was outstanding, or was posted, while the QP was in ERR (or the SQ in SQE) and nothing else happened to it at all. | RM | x |
| WC-07 | WR and WC opcodes differ. | verbs.h | Constants test. |
| WC-08 | Flag bits. | verbs.h | Constants test; property WITH_IMM xor WITH_INV. |
| WC-03 | Only four fields of an error WC mean anything. | man | x |
`

func TestPendingIssue(t *testing.T) {
	for id, want := range map[string]int{
		"CQ-01": 0, "CQ-07": 0, "CQ-11": 0, "CQ-18": 0, "CQ-21": 0, "CQ-22": 0, "CQ-24": 0, "CQ-25": 0,
		"NOTIFY-05": 0, "NOTIFY-06": 0, "CHAN-08": 0,
		"ASYNC-07": 0, "ASYNC-08": 0, "ASYNC-13": 0, "ASYNC-14": 0, "ASYNC-15": 0, "ASYNC-16": 0, "ASYNC-17": 0,
		"QP-01": 0, "QP-05": 0, "QP-29": 0, "QP-30": 0, "QP-37": 0, "QP-38": 0, "QP-40": 0,
		"FLUSH-02": 0, "FLUSH-03": 0, "FLUSH-09": 0, "FLUSH-10": 0, "FLUSH-12": 0, "FLUSH-13": 0,
		"WC-03": 0, "WC-05": 0, "WC-07": 0, "WC-S03": 0, "WC-S05": 0, "WC-S07": 0, "WC-S10": 0, "WC-S22": 0, "WC-14": 0, "XFER-29": 0,
		"SRQ-08": 0, "SRQ-09": 0, "SRQ-11": 0, "MR-03": 0, "MR-08": 0, "MR-09": 0, "PD-04": 0, "PD-05": 0,
	} {
		if got := rulesdoc.PendingIssue(id); got != want {
			t.Errorf("PendingIssue(%s) = %d, want %d", id, got, want)
		}
	}
}

func TestTestCoverage(t *testing.T) {
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
	write("sim/x/x_test.go", `package x

// TestA checks CQ-01 and NOTIFY-01..03.
func TestA(t *testing.T) {}

func TestB(t *testing.T) {
	t.Errorf("WC-S05: wrong")
}

func TestGolden_CQ07(t *testing.T) {}

func TestStatus_WCS05_ASYNC17(t *testing.T) {}

var table = "CQ-02" // outside any test function
`)
	write("sim/x/broken_test.go", "package x\n\nfunc TestC( { // CQ-02\n")
	write("sim/x/x.go", "package x // CQ-30 in a non-test file\n")
	write("conformance/cq_mutants_test.go", "package c // CQ-30\n")
	write("docs/examples_test.go", "package d // CQ-30\n")
	write("internal/rulesdoc/r_test.go", "package r // CQ-30\n")
	write(".hidden/h_test.go", "package h // CQ-30\n")
	write("sim/x/testdata/t_test.go", "package t // CQ-30\n")

	ids := map[string]bool{}
	for _, id := range []string{"CQ-01", "CQ-02", "CQ-07", "CQ-30", "NOTIFY-01", "NOTIFY-02", "NOTIFY-03", "WC-S05", "ASYNC-17"} {
		ids[id] = true
	}
	cov, err := rulesdoc.TestCoverage(root, ids)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for id, checks := range cov {
		for _, c := range checks {
			got[id] = append(got[id], c.File+":"+strings.Join(c.Funcs, ","))
		}
	}
	for _, v := range got {
		sortStrings(v)
	}
	want := map[string][]string{
		"CQ-01":     {"sim/x/x_test.go:TestA"},
		"CQ-02":     {"sim/x/broken_test.go:", "sim/x/x_test.go:"},
		"CQ-07":     {"sim/x/x_test.go:TestGolden_CQ07"},
		"NOTIFY-01": {"sim/x/x_test.go:TestA"},
		"NOTIFY-02": {"sim/x/x_test.go:TestA"},
		"NOTIFY-03": {"sim/x/x_test.go:TestA"},
		"WC-S05":    {"sim/x/x_test.go:TestB,TestStatus_WCS05_ASYNC17"},
		"ASYNC-17":  {"sim/x/x_test.go:TestStatus_WCS05_ASYNC17"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("coverage (-want +got):\n%s", d)
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func TestRender(t *testing.T) {
	rulesdoc.PinPendingForTest(t)
	rules, err := catalogue.Parse(strings.NewReader(sampleCatalogue))
	if err != nil {
		t.Fatal(err)
	}
	cov := rulesdoc.Merge(
		rulesdoc.Coverage{"CQ-01": {{Kind: rulesdoc.UnitTest, File: "sim/cq/cq_test.go", Funcs: []string{"TestCreate"}}}},
		rulesdoc.Coverage{"CQ-01": {{Kind: rulesdoc.Case, File: "conformance/cq.go", Line: 12, Name: "cqe bounds"}}},
		rulesdoc.Coverage{
			"WC-07": {{Kind: rulesdoc.UnitTest, File: "sim/wc/wc_test.go"}},
			"WC-08": {{Kind: rulesdoc.UnitTest, File: "sim/wc/wc_test.go"}},
			"WC-03": {{Kind: rulesdoc.UnitTest, File: "sim/wc/wc_test.go"}},
		},
	)
	page := string(rulesdoc.Render(rules, cov))
	for _, want := range []string{
		"**7 rules: 4 checked, 1 pending (issue #4), 2 unchecked. (1 retired rules not counted.)**",
		"| [CQ](#cq--completion-queue) | 2 | 1 | 0 | 0 | 1 |",
		"| CQ-01 | Creating a CQ (e.g. with `cqe` = 0) fails. | checked | " +
			"[conformance/cq.go](../conformance/cq.go) \"cqe bounds\"<br>" +
			"[sim/cq/cq_test.go](../sim/cq/cq_test.go) (TestCreate) |",
		"| ASYNC-14 | Last WQE reached. | **unchecked** |  |",
		"| CQ-30 | RETIRED: merged into CQ-01. | retired |  |",
		"| NOTIFY-05 | [CONFLICT] A (rvt `solicited \\|\\| status`): every error fires. | **unchecked** |  |",
		"| WC-07 | WR and WC opcodes differ. | checked | [sim/wc/wc_test.go](../sim/wc/wc_test.go) |",
		"| WC-08 | Flag bits. | checked | [sim/wc/wc_test.go](../sim/wc/wc_test.go) |",
		"| WC-03 | Only four fields of an error WC mean anything. | checked in part; the rest: issue #4 | [sim/wc/wc_test.go](../sim/wc/wc_test.go) |",
		"| WC-S05 | WR_FLUSH_ERR (5): the WR was outstanding, or was posted, while the QP was in … | pending (issue #4) |  |",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks\n%s\n---- page:\n%s", want, page)
		}
	}
}
