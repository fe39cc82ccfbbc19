package scenario

import (
	"bufio"
	"bytes"
	"io/fs"
	"regexp"
	"slices"
	"strings"

	"github.com/verbsim/verbsim/internal/catalogue"
	"github.com/verbsim/verbsim/spec"
)

// RuleInfo is one row of the rule catalogue in plain words, for verbsim
// explain.
type RuleInfo struct {
	ID      string
	Section string // the catalogue section the row sits under
	Text    string // the rule, without markdown emphasis
	// Observed is the catalogue's "how observed" column: the experiment
	// that shows the rule.
	Observed string
	// Readings are the two profiles' readings, from the catalogue's table
	// of where rxe departs from the default; empty for a rule both
	// profiles read alike.
	Readings []Reading
}

// Reading is how one profile reads a rule.
type Reading struct {
	Profile string
	Topic   string
	Text    string
}

var emphasis = strings.NewReplacer("**", "", "`", "", `\|`, "|")

// LookupRule returns the catalogue row of id (case-insensitive), or false
// when the catalogue has no live rule of that ID.
func LookupRule(id string) (RuleInfo, bool) {
	r, ok := catalogue.Lookup(id)
	if !ok || r.Retired {
		return RuleInfo{}, false
	}
	info := RuleInfo{ID: r.ID, Section: emphasis.Replace(r.Section), Text: emphasis.Replace(r.Text)}
	if r.Observed != "—" {
		info.Observed = emphasis.Replace(r.Observed)
	}
	info.Readings = profileReadings(r.ID)
	return info, true
}

// profileReadings finds id's row in the catalogue's table of the rxe
// profile's departures: | Topic (ID) | default | rxe |.
func profileReadings(id string) []Reading {
	sc := bufio.NewScanner(bytes.NewReader(spec.Catalogue))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	in := false
	idRE := regexp.MustCompile(`\b` + regexp.QuoteMeta(id) + `\b`)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = strings.Contains(line, "rxe")
			continue
		}
		if !in || !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 3 || !idRE.MatchString(cells[0]) {
			continue
		}
		topic := strings.TrimSpace(emphasis.Replace(cells[0]))
		return []Reading{
			{Profile: "default", Topic: topic, Text: strings.TrimSpace(emphasis.Replace(cells[1]))},
			{Profile: "rxe", Topic: topic, Text: strings.TrimSpace(emphasis.Replace(cells[2]))},
		}
	}
	return nil
}

// TourFiles returns the built-in scenarios' paths inside Tour, in order.
func TourFiles() []string {
	files, _ := fs.Glob(Tour, "tour/*.scen")
	slices.Sort(files)
	return files
}

// ScenariosShowing returns the tour scenarios whose timeline cites rule id
// under some profile, in tour order, and for each the steps (indexes)
// that cite it under the default profile or, failing that, rxe.
func ScenariosShowing(id string) (files []string, steps [][]int) {
	id = strings.ToUpper(id)
	for _, f := range TourFiles() {
		src, err := fs.ReadFile(Tour, f)
		if err != nil {
			continue
		}
		s, err := Parse(f, src)
		if err != nil {
			continue
		}
		for _, p := range Profiles() {
			r, err := Run(s, p)
			if err != nil {
				continue
			}
			var at []int
			for i, st := range r.Steps {
				for _, ru := range st.Rules {
					if ru.ID == id {
						at = append(at, i)
						break
					}
				}
			}
			if len(at) > 0 {
				files, steps = append(files, f), append(steps, at)
				break
			}
		}
	}
	return files, steps
}

// Title returns a scenario's title: the first sentence of its first
// narration line.
func (s *Script) Title() string {
	if len(s.Steps) == 0 || len(s.Steps[0].Narration) == 0 {
		return ""
	}
	t := s.Steps[0].Narration[0]
	if i := strings.IndexAny(t, ".:"); i >= 0 {
		t = t[:i]
	}
	return t
}

// Wrap breaks text into lines of at most width columns, each started by
// indent.
func Wrap(text, indent string, width int) string {
	var b strings.Builder
	line := indent
	for _, w := range strings.Fields(text) {
		if len(line) > len(indent) && len(line)+1+len(w) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += w
	}
	if len(line) > len(indent) {
		b.WriteString(line + "\n")
	}
	return b.String()
}
