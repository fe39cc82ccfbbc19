package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTraceCollapsesAndFilters: the trace of a 3-message ping-pong, which
// sim's writer prints as 1,000-odd lines (one per pre-posted receive),
// comes out with its posts counted, filtered by object and kind, and as
// JSON lines.
func TestTraceCollapsesAndFilters(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"pingpong", "-n", "3", "-trace", "-"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	text := out.String()
	if n := strings.Count(text, "\n"); n > 200 {
		t.Errorf("%d lines of trace and summary, want at most 200", n)
	}
	// Background mode: the clock follows the wall clock, so the run may end
	// later than it began.
	if !regexp.MustCompile(`(?m)^t=[\d.]+ (ns|µs|ms|s) #17 vsim0/qp 0x11: post_recv: 1 of 1 WR\(s\) posted ×500 \(#17…#516(, until t=[\d.]+ (ns|µs|ms|s))?\)$`).MatchString(text) {
		t.Errorf("no collapsed run of 500 post_recv in\n%.2000s", text)
	}
	if !regexp.MustCompile(`(?m)^# 11\d\d of 11\d\d records in \d+ lines`).MatchString(text) {
		t.Errorf("no summary line in\n%s", text)
	}

	out.Reset()
	if code := run([]string{"pingpong", "-n", "3", "-trace", "-", "-trace-filter", "obj=vsim1/qp*,kind=packet"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if strings.HasPrefix(l, "t=") && !regexp.MustCompile(`vsim1/qp 0x11: (send|receive) RC `).MatchString(l) {
			t.Errorf("filtered trace has %q", l)
		}
	}

	path := filepath.Join(t.TempDir(), "t.json")
	if code := run([]string{"pingpong", "-n", "3", "-trace", path, "-trace-format", "json", "-trace-filter", "kind=completion"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 12 { // 3 round trips: a SEND and a RECV completion each way
		t.Errorf("%d completion lines, want 12:\n%s", len(lines), b)
	}
	for _, l := range lines {
		var rec struct {
			Tick *uint64 `json:"tick"`
			Kind string  `json:"kind"`
			WC   *struct {
				Status string `json:"status"`
			} `json:"wc"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Tick == nil || rec.Kind != "completion" || rec.WC == nil || rec.WC.Status != "IBV_WC_SUCCESS" {
			t.Errorf("%q: %v %+v", l, err, rec)
		}
	}
}

// TestTraceFlagsEverywhere: run and walkthrough take the same flags, and
// bad values are usage errors.
func TestTraceFlagsEverywhere(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		in   []string
	}{
		{[]string{"run", "-trace", "-", "-trace-filter", "kind=packet|timer", "11-rnr-retry"}, 0,
			[]string{"The engine's trace:\n# tour/11-rnr-retry.scen, profile default\n", "t=10 µs #", "qp qb: RNR NAK", "(filter kind=packet|timer)"}},
		{[]string{"run", "-format", "json", "-trace", "-", "-trace-format", "json", "-trace-filter", "obj=cq A,kind=event", "02-arm-once"}, 0,
			[]string{`{"tick":0,"seq":`, `"kind":"event","object":"cq A","name":"arm fired"`, `"what":"arm fired: event queued on the channel"`}},
		{[]string{"walkthrough", "-trace", "-", "-trace-filter", "kind=event"}, 0,
			// (The rules the arm's record cites end its line; the test
			// names no rule ID, as it checks no rule.)
			[]string{"arm fired: event queued on the channel (", "-12) ×", "raise IBV_EVENT_CQ_ERR"}},
		{[]string{"run", "-trace-filter", "kind=packet", "01-cq-basics"}, 2, []string{"need -trace FILE"}},
		{[]string{"run", "-trace", "-", "-trace-filter", "kind=packets", "01-cq-basics"}, 2, []string{`unknown kind "packets"`}},
		{[]string{"pingpong", "-trace", "-", "-trace-format", "xml"}, 2, []string{`trace format "xml"`}},
		{[]string{"walkthrough", "-trace", "-", "-trace-filter", "color=red"}, 2, []string{`unknown key "color"`}},
	} {
		var out bytes.Buffer
		code := run(tt.args, &out, &out)
		if code != tt.code {
			t.Errorf("verbsim %q: exit %d, want %d: %s", tt.args, code, tt.code, out.String())
		}
		for _, want := range tt.in {
			if !strings.Contains(out.String(), want) {
				t.Errorf("verbsim %q: no %q in\n%s", tt.args, want, out.String())
			}
		}
	}
}

// TestRunFlagsAfterNames: verbsim run takes its flags after the scenario
// names too, and every argument after "--" is a name.
func TestRunFlagsAfterNames(t *testing.T) {
	page := filepath.Join(t.TempDir(), "lw.html")
	var out bytes.Buffer
	if code := run([]string{"run", "06-lost-wakeup", "-html", page, "-trace", "-", "-trace-filter", "kind=event"}, &out, &out); code != 0 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	if _, err := os.Stat(page); err != nil || !strings.Contains(out.String(), "The engine's trace:") {
		t.Errorf("no page (%v) or no trace in\n%s", err, out.String())
	}
	out.Reset()
	if code := run([]string{"run", "--", "-html"}, &out, &out); code != 1 || !strings.Contains(out.String(), "-html: no such file") {
		t.Errorf("after --: exit %d, %s", code, out.String())
	}
}
