package docs_test

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/verbsim/verbsim/verbs"
)

// transitionHeader is the header row of the transition table in qp.md.
const transitionHeader = "| transition | transport | must supply | may supply |"

// edgeKey names one (from, to, transport) cell of the transition table.
type edgeKey struct {
	from, to verbs.QPState
	typ      verbs.QPType
}

// edgeBits is what one row says about an edge, and where it says it.
type edgeBits struct {
	req, opt verbs.QPAttrMask
	line     int
}

// TestTransitionTableMatchesCode checks the hand-written table of qp.md,
// "What each transition takes", against verbs.Transition under the default
// policy: every legal (from, to, transport) appears exactly once with the
// same required and optional bits, and nothing else appears. A change to the
// kernel table in verbs that the page does not follow fails here, and so
// does a typo on the page.
func TestTransitionTableMatchesCode(t *testing.T) {
	page := parseTransitionTable(t, "qp.md")
	types := []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD, verbs.QPTypeXRCSend, verbs.QPTypeXRCRecv}
	for from := verbs.QPStateReset; from <= verbs.QPStateErr; from++ {
		for to := verbs.QPStateReset; to <= verbs.QPStateErr; to++ {
			for _, typ := range types {
				k := edgeKey{from, to, typ}
				req, opt, ok := verbs.Transition(from, to, typ, verbs.Readings{})
				row, listed := page[k]
				switch {
				case ok && !listed:
					t.Errorf("qp.md: %v→%v on %v is legal (must %v, may %v) but missing from the table", from, to, typ, req, opt)
				case !ok && listed:
					t.Errorf("qp.md:%d: %v→%v on %v is in the table but not a legal transition", row.line, from, to, typ)
				case ok && (row.req != req || row.opt != opt):
					t.Errorf("qp.md:%d: %v→%v on %v says must %v, may %v; the code says must %v, may %v",
						row.line, from, to, typ, row.req, row.opt, req, opt)
				}
			}
		}
	}
}

// parseTransitionTable reads the table that starts with transitionHeader.
// A row is
//
//	| FROM[, FROM...] → TO | all, or RC/UC/UD/XRC_SEND/XRC_RECV separated by commas | bits | bits |
//
// where bits are mask names without IBV_QP_ (in backquotes or not),
// separated by spaces, and "—" means none.
func parseTransitionTable(t *testing.T, name string) map[edgeKey]edgeBits {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	states := map[string]verbs.QPState{}
	for s := verbs.QPStateReset; s <= verbs.QPStateErr; s++ {
		states[s.String()] = s
	}
	types := map[string][]verbs.QPType{"RC": {verbs.QPTypeRC}, "UC": {verbs.QPTypeUC}, "UD": {verbs.QPTypeUD},
		"XRC_SEND": {verbs.QPTypeXRCSend}, "XRC_RECV": {verbs.QPTypeXRCRecv},
		"all": {verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD, verbs.QPTypeXRCSend, verbs.QPTypeXRCRecv}}
	bits := map[string]verbs.QPAttrMask{}
	for _, b := range verbs.KnownQPAttrs.Bits() {
		bits[strings.TrimPrefix(b.Name(), "IBV_QP_")] = b
	}

	out := map[edgeKey]edgeBits{}
	sc := bufio.NewScanner(f)
	in, seen := false, false
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == transitionHeader:
			if seen {
				t.Fatalf("%s:%d: a second transition table", name, n)
			}
			in, seen = true, true
			continue
		case !in:
			continue
		case !strings.HasPrefix(line, "|"):
			in = false
			continue
		case strings.HasPrefix(line, "|---"):
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 {
			t.Fatalf("%s:%d: want 4 cells, got %d", name, n, len(cells))
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(strings.ReplaceAll(cells[i], "`", ""))
		}
		froms, to, err := parseArrow(cells[0], states)
		if err != nil {
			t.Fatalf("%s:%d: %v", name, n, err)
		}
		var typs []verbs.QPType
		for _, s := range strings.Split(cells[1], ",") {
			ts, ok := types[strings.TrimSpace(s)]
			if !ok {
				t.Fatalf("%s:%d: unknown transport %q", name, n, s)
			}
			typs = append(typs, ts...)
		}
		req, err := parseBits(cells[2], bits)
		if err != nil {
			t.Fatalf("%s:%d: must supply: %v", name, n, err)
		}
		opt, err := parseBits(cells[3], bits)
		if err != nil {
			t.Fatalf("%s:%d: may supply: %v", name, n, err)
		}
		for _, from := range froms {
			for _, typ := range typs {
				k := edgeKey{from, to, typ}
				if prev, dup := out[k]; dup {
					t.Fatalf("%s:%d: %v→%v on %v is already on line %d", name, n, from, to, typ, prev.line)
				}
				out[k] = edgeBits{req, opt, n}
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !seen {
		t.Fatalf("%s: no table with the header %q", name, transitionHeader)
	}
	return out
}

func parseArrow(cell string, states map[string]verbs.QPState) (froms []verbs.QPState, to verbs.QPState, err error) {
	lhs, rhs, ok := strings.Cut(cell, "→")
	if !ok {
		return nil, 0, fmt.Errorf("transition %q has no →", cell)
	}
	to, ok = states[strings.TrimSpace(rhs)]
	if !ok {
		return nil, 0, fmt.Errorf("unknown state %q", rhs)
	}
	for _, s := range strings.Split(lhs, ",") {
		from, ok := states[strings.TrimSpace(s)]
		if !ok {
			return nil, 0, fmt.Errorf("unknown state %q", s)
		}
		froms = append(froms, from)
	}
	return froms, to, nil
}

func parseBits(cell string, bits map[string]verbs.QPAttrMask) (verbs.QPAttrMask, error) {
	if cell == "—" {
		return 0, nil
	}
	var m verbs.QPAttrMask
	for _, f := range strings.Fields(cell) {
		b, ok := bits[f]
		if !ok {
			return 0, fmt.Errorf("unknown attribute %q", f)
		}
		if m&b != 0 {
			return 0, fmt.Errorf("%s listed twice", f)
		}
		m |= b
	}
	if m == 0 {
		return 0, fmt.Errorf("empty cell; write — for none")
	}
	return m, nil
}

// TestReadmeExample checks that every go block of the repository's README
// appears, line for line, in examples_test.go, where it compiles and its
// output is checked, as TestSnippetsAreExamples does for these pages.
func TestReadmeExample(t *testing.T) {
	src, err := os.ReadFile("examples_test.go")
	if err != nil {
		t.Fatal(err)
	}
	examples := normalize(strings.Split(string(src), "\n"))
	blocks := goBlocks(t, "../README.md")
	if len(blocks) == 0 {
		t.Fatal("README.md has no go block")
	}
	for _, b := range blocks {
		if !containsRun(examples, normalize(b.lines)) {
			t.Errorf("README.md:%d: this go block is not in docs/examples_test.go; copy it from (or into) an Example there", b.line)
		}
	}
}
