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

// TestExploreScenario: verbsim explore FILE explores the threads of a
// scenario (the tour's 19-explore-threads: the lost wake-up of its first
// explore step, and its fix passing), exits 1 because a schedule failed,
// and -replay TOKEN FILE prints the same timeline; without the file the
// token says which file it needs; a name that is neither says so.
func TestExploreScenario(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"explore", "19-explore-threads"}, &out, &errb); code != 1 {
		t.Fatalf("explore: exit %d, want 1\n%s%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"lost wake-up found", "NOTIFY-02", "complete [", "no failure"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q:\n%s", want, out.String())
		}
	}
	tok := regexp.MustCompile(`-replay (vx2\.\S+) 19-explore-threads`).FindStringSubmatch(out.String())
	if tok == nil {
		t.Fatalf("no token:\n%s", out.String())
	}
	var rep bytes.Buffer
	if code := run([]string{"explore", "-replay", tok[1], "19-explore-threads"}, &rep, &errb); code != 0 {
		t.Fatalf("replay: exit %d\n%s%s", code, rep.String(), errb.String())
	}
	at := strings.Index(rep.String(), "setup ")
	if at < 0 || !strings.Contains(out.String(), rep.String()[at:]) {
		t.Errorf("the replay's timeline differs:\n%s", rep.String())
	}
	errb.Reset()
	if code := run([]string{"explore", "-replay", tok[1]}, &rep, &errb); code != 2 || !strings.Contains(errb.String(), "19-explore-threads.scen") {
		t.Errorf("replay without the file: exit %d, %s", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"explore", "no-such-thing"}, &rep, &errb); code != 2 || !strings.Contains(errb.String(), "no built-in pattern (verbsim explore -list), scenario file or built-in scenario") {
		t.Errorf("an unknown name: exit %d, %s", code, errb.String())
	}
}

// TestExploreTimeBudget: -time bounds the wall time too; a budget no run
// reaches changes nothing (the same schedules, the same finding), and a
// malformed one is refused. (How far a short budget gets depends on the
// machine, so no test asserts it.)
func TestExploreTimeBudget(t *testing.T) {
	var plain, timed, errb bytes.Buffer
	if code := run([]string{"explore", "drain-then-arm"}, &plain, &errb); code != 0 {
		t.Fatalf("explore: exit %d\n%s", code, errb.String())
	}
	if code := run([]string{"explore", "-time", "24h", "drain-then-arm"}, &timed, &errb); code != 0 {
		t.Fatalf("explore -time 24h: exit %d\n%s", code, errb.String())
	}
	if first := strings.SplitN(plain.String(), "\n", 2)[0]; first != strings.SplitN(timed.String(), "\n", 2)[0] {
		t.Errorf("a budget no run reaches changed the result:\n%s\nvs\n%s", first, timed.String())
	}
	errb.Reset()
	if code := run([]string{"explore", "-time", "soon", "drain-then-arm"}, &timed, &errb); code != 2 {
		t.Errorf("-time soon: exit %d, %s", code, errb.String())
	}
}
