package main

import (
	"strings"
	"testing"
	"time"
)

// TestPerftest: Debian's perftest, unmodified, as a server and a client
// process on loopback with its own TCP exchange of addresses (no RDMA-CM):
// each completes its default iterations and prints its result table.
func TestPerftest(t *testing.T) {
	dir := lib(t)
	aptTool(t, "perftest", "ib_send_bw")
	cases := []struct {
		prog      string
		args      []string
		serverToo bool // the server prints the table as well
		header    string
	}{
		{"ib_send_bw", nil, true, "BW average[MB/sec]"},
		{"ib_write_bw", nil, true, "BW average[MB/sec]"},
		{"ib_read_lat", nil, false, "t_avg[usec]"},
		{"ib_send_lat", nil, true, "t_avg[usec]"},
	}
	for _, c := range cases {
		t.Run(c.prog, func(t *testing.T) {
			var r ppResult
			for try := 1; ; try++ {
				r = pingpong(t, dir, 60*time.Second, nil, nil, c.prog, c.args...)
				if !uncalibrated(r) {
					break
				}
				// perftest times its report with the CPU's cycle counter,
				// calibrated against gettimeofday at report time; on a
				// loaded machine a preempted sample spoils the fit and the
				// program exits without its table, after the traffic ran.
				// That is the tool's clock, not the library: run again.
				t.Logf("try %d: %s could not calibrate its cycle counter (machine busy); again", try, c.prog)
				if try == 5 {
					t.Skipf("%s could not calibrate its cycle counter in %d tries on this loaded machine (perftest's get_cpu_mhz: r^2 < 0.9); its traffic ran each time", c.prog, try)
				}
			}
			if r.srvErr != nil {
				t.Errorf("server: %v", r.srvErr)
			}
			if r.cliErr != nil {
				t.Errorf("client: %v", r.cliErr)
			}
			check := func(side, out string) {
				i := strings.Index(out, c.header)
				if i < 0 {
					t.Errorf("%s printed no table (no %q)", side, c.header)
					return
				}
				// The row after the header starts with the message size.
				rest := strings.SplitN(out[i:], "\n", 3)
				if len(rest) < 2 || len(strings.Fields(rest[1])) < 4 {
					t.Errorf("%s printed a table header but no row", side)
				}
			}
			check("client", r.cli)
			if c.serverToo {
				check("server", r.srv)
			}
			t.Logf("%s: both sides done in %v", c.prog, r.took.Round(time.Millisecond))
		})
	}
}

// uncalibrated tells whether a side of r gave up on its report because
// perftest's cycle-counter calibration failed ("Correlation coefficient
// r^2: ... < 0.9", then "Can't produce a report").
func uncalibrated(r ppResult) bool {
	for _, out := range []string{r.srv, r.cli} {
		if strings.Contains(out, "Correlation coefficient r^2") && strings.Contains(out, "Can't produce a report") {
			return true
		}
	}
	return false
}
