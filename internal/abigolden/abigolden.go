// Package abigolden reads the verbs ABI golden table that
// verbs/internal/abigen/abigen.c prints from the real rdma-core libibverbs.
//
// The table lives in verbs/testdata/verbs44.golden. Tests of other packages
// load it by a path relative to their own directory, for example
//
//	rows, err := abigolden.Load("../verbs/testdata/verbs44.golden")
//	events := abigolden.Lookup(rows, abigolden.KindEventType)
//
// and compare their typed constants and String methods against it, so every
// enum value and every library string is checked against rdma-core itself
// rather than against a second hand-written copy.
//
// # Format
//
// One row per line, fields separated by a single TAB:
//
//	kind<TAB>value<TAB>enumerator[<TAB>str]
//
// value is a decimal integer. enumerator is the C name (IBV_WC_SUCCESS), or
// empty for an out-of-range probe that exists only to record what a
// libibverbs *_str function returns for it. str is present only for kinds
// that libibverbs can render (ibv_wc_status_str, ibv_event_type_str) and
// for the struct-layout kinds. Blank lines and lines starting with '#' are
// ignored.
package abigolden

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode"
)

// Kinds of rows written by abigen.c. Each names the C enum it was taken from.
const (
	KindWCStatus    = "wc_status"    // enum ibv_wc_status; Str is ibv_wc_status_str
	KindWCOpcode    = "wc_opcode"    // enum ibv_wc_opcode
	KindWCFlags     = "wc_flags"     // enum ibv_wc_flags (one row per bit)
	KindWROpcode    = "wr_opcode"    // enum ibv_wr_opcode
	KindEventType   = "event_type"   // enum ibv_event_type; Str is ibv_event_type_str
	KindQPState     = "qp_state"     // enum ibv_qp_state
	KindQPType      = "qp_type"      // enum ibv_qp_type
	KindAccessFlags = "access_flags" // enum ibv_access_flags (one row per bit)

	// KindWCField rows describe struct ibv_wc: Value is the member's
	// offset, Name the C member name, Str its size in bytes. The
	// imm_data/invalidated_rkey union is one row named imm_data.
	KindWCField = "wc_field"
	// KindWCSizeof is the single row whose Value is sizeof(struct ibv_wc).
	KindWCSizeof = "wc_sizeof"
)

// Row is one line of the golden table.
type Row struct {
	// Kind names the C enum the row belongs to; see the Kind* constants.
	Kind string
	// Value is the numeric value of the enumerator or probe.
	Value int64
	// Name is the C enumerator name, or "" for an out-of-range probe.
	Name string
	// Str is what the libibverbs *_str function returned for Value, or ""
	// for kinds that have no such function.
	Str string
}

// Load reads and parses the golden file at path. See Parse for the rules.
func Load(path string) ([]Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("abigolden: %w", err)
	}
	defer f.Close()
	rows, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("abigolden: %s: %w", path, err)
	}
	return rows, nil
}

// Parse reads a golden table from r and returns its rows in file order.
//
// It rejects malformed lines (wrong field count, empty kind, non-integer
// value) and a repeated (kind, value) pair, so Lookup never has to choose
// between two rows. Errors name the offending line number.
func Parse(r io.Reader) ([]Row, error) {
	var rows []Row
	type key struct {
		kind  string
		value int64
	}
	seen := make(map[key]int)
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexFunc(line, func(r rune) bool { return r != '\t' && unicode.IsControl(r) }); i >= 0 {
			return nil, fmt.Errorf("line %d: control character %q at byte %d", n, line[i], i)
		}
		f := strings.Split(line, "\t")
		if len(f) != 3 && len(f) != 4 {
			return nil, fmt.Errorf("line %d: want 3 or 4 tab-separated fields, got %d", n, len(f))
		}
		if f[0] == "" {
			return nil, fmt.Errorf("line %d: empty kind", n)
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: bad value %q: %w", n, f[1], err)
		}
		row := Row{Kind: f[0], Value: v, Name: f[2]}
		if len(f) == 4 {
			row.Str = f[3]
		}
		k := key{row.Kind, row.Value}
		if prev, ok := seen[k]; ok {
			return nil, fmt.Errorf("line %d: duplicate %s %d (first on line %d)", n, row.Kind, row.Value, prev)
		}
		seen[k] = n
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return rows, nil
}

// Lookup returns the rows of the given kind keyed by value. The map is empty
// (not nil) when no row has that kind.
func Lookup(rows []Row, kind string) map[int64]Row {
	m := make(map[int64]Row)
	for _, r := range rows {
		if r.Kind == kind {
			m[r.Value] = r
		}
	}
	return m
}
