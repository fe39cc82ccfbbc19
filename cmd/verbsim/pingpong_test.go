package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestPingpongSummary runs a short ping-pong in each mode and checks
// rc_pingpong's summary lines and ours.
func TestPingpongSummary(t *testing.T) {
	for _, tt := range []struct {
		args  []string
		bytes int
		lines []string // regular expressions, each matching a whole line
	}{
		{[]string{"pingpong", "-n", "100"}, 100 * 4096 * 2, []string{
			`  local address:  LID 0x0002, QPN 0x[0-9a-f]{6}, device vsim1 \(client\)`,
			`  remote address: LID 0x0001, QPN 0x[0-9a-f]{6}, device vsim0 \(server\)`,
			`819200 bytes in \d+\.\d\d seconds = \d+\.\d\d Mbit/sec`,
			`100 iters in \d+\.\d\d seconds = \d+\.\d\d usec/iter`,
			`virtual time: \d+\.\d\d seconds = \d+\.\d\d usec/iter`,
			`faults: drop 0, duplicate 0: 1000 packets sent, 0 dropped, 0 duplicated, 0 timers fired`,
			`busy polling: client \d+ polls \(\d+ empty\), server \d+ polls \(\d+ empty\)`,
			`data: 200 messages checked, digest [0-9a-f]{16}`,
		}},
		{[]string{"pingpong", "-n", "100", "-s", "64", "-e", "-drop", "0.05", "-dup", "0.05", "-seed", "9"}, 100 * 64 * 2, []string{
			`12800 bytes in \d+\.\d\d seconds = \d+\.\d\d Mbit/sec`,
			`100 iters in \d+\.\d\d seconds = \d+\.\d\d usec/iter`,
			`faults: drop 0.05, duplicate 0.05: \d+ packets sent, [1-9]\d* dropped, [1-9]\d* duplicated, [1-9]\d* timers fired`,
			`completion events: client [1-9]\d* \(\d+ found the CQ empty\), server [1-9]\d* \(\d+ found the CQ empty\)`,
			`data: 200 messages checked, digest [0-9a-f]{16}`,
		}},
		{[]string{"pingpong", "-n", "100", "-s", "1000", "-m", "256", "-delay", "0.3", "-profile", "rxe"}, 100 * 1000 * 2, []string{
			`faults: drop 0, duplicate 0, delay 0.3: \d+ packets sent, 0 dropped, 0 duplicated, [1-9]\d* delayed, \d+ timers fired`,
			`data: 200 messages checked, digest [0-9a-f]{16}`,
		}},
	} {
		var out, errOut bytes.Buffer
		if code := run(tt.args, &out, &errOut); code != 0 {
			t.Fatalf("verbsim %v: exit %d: %s", tt.args, code, errOut.String())
		}
		got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		for _, want := range tt.lines {
			re := regexp.MustCompile("^" + want + "$")
			found := false
			for _, l := range got {
				found = found || re.MatchString(l)
			}
			if !found {
				t.Errorf("verbsim %v: no line matches %q in\n%s", tt.args, want, out.String())
			}
		}
		if !strings.HasPrefix(got[2], strconv.Itoa(tt.bytes)+" bytes in ") {
			t.Errorf("verbsim %v: line 3 is %q, want %d bytes", tt.args, got[2], tt.bytes)
		}
	}
}

func TestPingpongCommandLine(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		in   string
	}{
		{[]string{"pingpong", "-h"}, 0, "usage: verbsim pingpong"},
		{[]string{"help"}, 0, "pingpong"},
		{[]string{"pingpong", "-n", "0"}, 2, "at least one round trip"},
		{[]string{"pingpong", "-s", "8"}, 2, "at least 16 bytes"},
		{[]string{"pingpong", "-r", "0"}, 2, "at least one receive"},
		{[]string{"pingpong", "-m", "300"}, 2, "not an MTU"},
		{[]string{"pingpong", "-drop", "1"}, 2, "a probability below 1"},
		{[]string{"pingpong", "-dup", "-0.5"}, 2, "a probability"},
		{[]string{"pingpong", "-delay", "2"}, 2, "a probability"},
		{[]string{"pingpong", "-profile", "mlx9"}, 2, `unknown profile "mlx9"`},
		{[]string{"pingpong", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"pingpong", "-bogus"}, 2, "flag provided but not defined"},
		{[]string{"pingpong", "-r", "40000"}, 1, "max_qp_wr"},
		{[]string{"pingpong", "-n", "50", "-drop", "0.95"}, 1, "IBV_WC_RETRY_EXC_ERR"},
	} {
		var out bytes.Buffer
		code := run(tt.args, &out, &out)
		if code != tt.code || !strings.Contains(out.String(), tt.in) {
			t.Errorf("verbsim %v: exit %d, output %q; want exit %d containing %q", tt.args, code, out.String(), tt.code, tt.in)
		}
	}
}

// TestPingpongTrace: -trace writes the fabric's trace, verbs and engine
// events, to a file or (with -) before the summary on standard output; an
// unwritable path fails the command.
func TestPingpongTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pp.trace")
	var out, errOut bytes.Buffer
	// rxe: retry_cnt 7 retries for ever, so no unlucky run of drops (the
	// Background mode's interleaving varies) can end it; a hundred-odd
	// packets at 20 % make a run without any drop vanishingly rare.
	if code := run([]string{"pingpong", "-n", "10", "-e", "-drop", "0.2", "-seed", "4", "-profile", "rxe", "-trace", path}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"vsim0/ctx#1: open_device", "modify_qp: INIT→RTR", "post_send: 1 of 1", "req_notify_cq", "get_cq_event", "ack_cq_events", "(fault: drop)", "destroy_qp"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the trace has no %q", want)
		}
	}
	out.Reset()
	// Background mode: the ticks follow the wall clock, so only the record
	// sequence number is fixed; the time has its unit.
	first := regexp.MustCompile(`^t=[\d.]+ (ns|µs|ms|s) #1 vsim0/ctx#1: open_device\n`)
	if code := run([]string{"pingpong", "-n", "1", "-trace", "-"}, &out, &errOut); code != 0 || !first.MatchString(out.String()) {
		t.Errorf("-trace -: exit %d, output begins %.80q", code, out.String())
	}
	out.Reset()
	if code := run([]string{"pingpong", "-n", "1", "-trace", filepath.Join(path, "no", "such", "dir")}, &out, &out); code != 1 || !strings.Contains(out.String(), "writing the trace") {
		t.Errorf("unwritable -trace: exit %d, output %q", code, out.String())
	}
}
