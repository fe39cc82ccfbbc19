package rulesdoc

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// citationPattern matches what looks like a rule ID in any text: a family,
// a dash, an optional S and at least two digits, optionally followed by a
// range end ("QP-14..20"). Catalogue IDs always have two digits or more, so
// "CQ-2" in a comment about sorting, or "ConnectX-6", is not a citation.
var citationPattern = regexp.MustCompile(`\b([A-Z]+)-(S?)([0-9]{2,})(?:\.\.S?([0-9]+))?\b`)

// Citation is one place that names a rule ID.
type Citation struct {
	File string // slash-separated path relative to the repository root
	Line int
}

func (c Citation) String() string { return fmt.Sprintf("%s:%d", c.File, c.Line) }

// Citations returns, for every ID of one of families that a .go or .md file
// under root names, the places that name it, in file and line order. IDs of
// other families ("SHA-256", "EUI-64") are not citations. A range such as
// "NOTIFY-01..05" cites each ID in it.
//
// Not searched: hidden directories, testdata, vendor, and internal/rulesdoc,
// whose tests are full of sample IDs. docs/rules.md is searched like any
// page; it only repeats the catalogue's IDs.
func Citations(root string, families map[string]bool) (map[string][]Citation, error) {
	out := map[string][]Citation{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		name := d.Name()
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" ||
				rel == "internal/rulesdoc") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, ".md") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		line, counted := 1, 0
		for _, loc := range citationPattern.FindAllSubmatchIndex(src, -1) {
			if !families[string(src[loc[2]:loc[3]])] {
				continue
			}
			line += strings.Count(string(src[counted:loc[0]]), "\n")
			counted = loc[0]
			for _, id := range expand(src, loc) {
				out[id] = append(out[id], Citation{File: rel, Line: line})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, cs := range out {
		sort.Slice(cs, func(i, j int) bool {
			if cs[i].File != cs[j].File {
				return cs[i].File < cs[j].File
			}
			return cs[i].Line < cs[j].Line
		})
	}
	return out, nil
}
