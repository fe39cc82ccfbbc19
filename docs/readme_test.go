package docs

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// countWords are the numbers a page may spell out before a list.
var countWords = map[string]int{"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}

// countedList matches a paragraph that announces a list by its length:
// "Three packages are all most users need:", "Three more packages serve
// particular jobs:".
var countedList = regexp.MustCompile(`(?i)\b(one|two|three|four|five|six|seven|eight|nine|ten)( more)? packages\b[^.]*:$`)

// TestReadmeCountsItsLists: where the README says how many packages a list
// holds, the list that follows holds that many (issue #21: "Five packages
// are all most users need" once introduced seven).
func TestReadmeCountsItsLists(t *testing.T) {
	src, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	// Paragraphs, each with the line it starts on.
	type para struct {
		line int
		text []string
	}
	var paras []para
	for i, l := range strings.Split(string(src), "\n") {
		switch {
		case strings.TrimSpace(l) == "":
			paras = append(paras, para{line: i + 2})
		case len(paras) == 0:
			paras = append(paras, para{line: i + 1, text: []string{l}})
		default:
			paras[len(paras)-1].text = append(paras[len(paras)-1].text, l)
		}
	}
	found := 0
	for i, p := range paras {
		m := countedList.FindStringSubmatch(strings.Join(p.text, " "))
		if m == nil || i+1 == len(paras) {
			continue
		}
		found++
		want, got := countWords[strings.ToLower(m[1])], 0
		for _, l := range paras[i+1].text {
			if strings.HasPrefix(l, "- ") {
				got++
			}
		}
		if got != want {
			t.Errorf("README.md:%d says %s packages; the list after it has %d", p.line, m[1], got)
		}
	}
	if found == 0 {
		t.Error("README.md announces no counted list of packages; if the wording changed, change this test with it")
	}
}
