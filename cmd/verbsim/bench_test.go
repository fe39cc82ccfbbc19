package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchQuick runs `verbsim bench -quick -write` so that the command and
// every workload keep working. It asserts nothing about the figures: they
// depend on the machine and its load.
func TestBenchQuick(t *testing.T) {
	page := filepath.Join(t.TempDir(), "performance.md")
	var out, errs bytes.Buffer
	if code := run([]string{"bench", "-quick", "-write", page}, &out, &errs); code != 0 {
		t.Fatalf("verbsim bench -quick: exit %d\n%s%s", code, out.String(), errs.String())
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range figures {
		if !strings.Contains(out.String(), "| "+f.name+" |") {
			t.Errorf("the table lacks %q:\n%s", f.name, out.String())
		}
		if !strings.Contains(string(b), "**"+f.name+".**") {
			t.Errorf("the page has no note on %q", f.name)
		}
	}
	for _, want := range []string{"## Run", "- Machine: ", "- Load average", "- Command: `verbsim bench -quick -write ", "| figure | subject | floor (same run) | ratio | target |", "-quick",
		"## Scale run", "| auto | 20 (4) | 80 |", "| background | 1 | ", "VmHWM"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the page lacks %q:\n%s", want, b)
		}
	}
}

// TestBenchHelp checks bench's --help and its refusal of bad values.
func TestBenchHelp(t *testing.T) {
	for _, args := range [][]string{{"help", "bench"}, {"bench", "--help"}, {"-profile", "rxe", "bench", "-h"}} {
		var out bytes.Buffer
		if code := run(args, &out, &out); code != 0 || !strings.Contains(out.String(), "usage: verbsim bench") ||
			!strings.Contains(out.String(), "-write string") {
			t.Errorf("verbsim %v: exit %d, output %q; want bench's flags", args, code, out.String())
		}
	}
	var out bytes.Buffer
	if code := run([]string{"help"}, &out, &out); code != 0 || !strings.Contains(out.String(), "  bench ") {
		t.Errorf("verbsim help does not list bench:\n%s", out.String())
	}
	for _, args := range [][]string{{"bench", "-rounds", "0"}, {"bench", "-pairs", "-1"}, {"bench", "-msgs", "0"}, {"bench", "-workers", "0"},
		{"bench", "-scale", "-write", "x.md"}, {"bench", "-scale", "-only", "x"}, {"bench", "extra"}, {"bench", "-profile", "nope"}} {
		var out bytes.Buffer
		if code := run(args, &out, &out); code != 2 {
			t.Errorf("verbsim %v: exit %d, want 2", args, code)
		}
	}
}

// TestBenchOnly runs one figure with -only, and refuses -only with -write
// and a pattern that matches nothing.
func TestBenchOnly(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"bench", "-quick", "-only", "^RC SEND 64 B, post"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errs.String())
	}
	if got := strings.Count(out.String(), "\n| "); got != 3 {
		t.Errorf("%d rows, want the header, the figure and the allocations:\n%s", got, out.String())
	}
	for _, args := range [][]string{{"-only", "x", "-write", filepath.Join(t.TempDir(), "p.md")}, {"-only", "no such figure"}, {"-only", "("}} {
		out.Reset()
		errs.Reset()
		if code := run(append([]string{"bench", "-quick"}, args...), &out, &errs); code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, code, errs.String())
		}
	}
}

// TestBenchScale runs `verbsim bench -scale` with a few pairs: the scale run
// alone, in both modes, against 1 pair. Every message completing is checked
// inside the run (benchkit.Scale fails otherwise); nothing about time is.
func TestBenchScale(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"bench", "-scale", "-pairs", "10", "-msgs", "3", "-workers", "3"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errs.String())
	}
	for _, want := range []string{"| auto | 1 (1) | 40 |", "| auto | 10 (3) | 40 |", "| background | 1 (1) | 40 |", "| background | 10 (3) | 40 |",
		"| auto | 10 | ", "| background | 10 | ", "4 timed messages per pair", "3 worker goroutines"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "| figure |") {
		t.Errorf("-scale ran the figures too:\n%s", out.String())
	}
}
