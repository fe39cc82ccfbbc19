package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestExploreFindsAndReplays: verbsim explore finds the drain-then-arm lost
// wake-up and prints a token that -replay runs again with the same
// timeline.
func TestExploreFindsAndReplays(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"explore", "drain-then-arm"}, &out, &errb); code != 0 {
		t.Fatalf("explore: exit %d\n%s%s", code, out.String(), errb.String())
	}
	tok := regexp.MustCompile(`-replay (vx2\.\S+)`).FindStringSubmatch(out.String())
	if tok == nil || !strings.Contains(out.String(), "lost wake-up") {
		t.Fatalf("no lost wake-up or token:\n%s", out.String())
	}
	timeline := out.String()[strings.Index(out.String(), "setup "):]
	var rep bytes.Buffer
	if code := run([]string{"explore", "-replay", tok[1]}, &rep, &errb); code != 0 {
		t.Fatalf("replay: exit %d\n%s%s", code, rep.String(), errb.String())
	}
	got := rep.String()[strings.Index(rep.String(), "setup "):]
	if strings.TrimSpace(got) != strings.TrimSpace(timeline) {
		t.Fatalf("replayed timeline differs:\n%s\nvs\n%s", got, timeline)
	}
}

// TestExploreAll: every pattern behaves as documented under each strategy.
func TestExploreAll(t *testing.T) {
	for _, s := range []string{"random", "pct", "exhaustive"} {
		var out, errb bytes.Buffer
		// 1000: the random walk needs 821 schedules for brpc-repoll-one-cq with seed 1.
		if code := run([]string{"explore", "-strategy", s, "-schedules", "1000"}, &out, &errb); code != 0 {
			t.Errorf("%s: exit %d\n%s%s", s, code, out.String(), errb.String())
		}
	}
}
