// Package portreport runs a C program on verbsim's drop-in libibverbs once
// under each provider profile and reports where its run depended on a
// provider's behaviour: `verbsim report` (docs/profiles.md, "The
// portability report").
//
// Each process of a run appends to the file VERBSIM_REPORT names one line
// (capi's writeReport): its profile, the profile's readings, and the
// readings that decided something during its run. Run gathers them per
// profile; Write prints, for each profile, how the program ended, and for
// each reading some run consulted on which the profiles disagree, what a
// program sees under each.
package portreport

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// Options say what to run and how.
type Options struct {
	// Lib is the directory holding the drop-in libibverbs.so.1
	// (capi/build.sh DIR); it goes first on LD_LIBRARY_PATH.
	Lib string
	// Profiles are the profiles to run under; empty: sim.Profiles().
	Profiles []sim.Profile
	// Command is the program and its arguments; a shell line runs as
	// []string{"sh", "-c", line}, which may start several processes.
	Command []string
	// Env is added to each run's environment (after the current one).
	Env []string
	// Timeout bounds each run in wall time (a hang guard); 0: 2 minutes.
	Timeout time.Duration
}

// Run is one run of the program under one profile.
type Run struct {
	Profile string
	// ExitCode is the program's exit status; -1 when it did not exit
	// (killed, or it could not start: Err says).
	ExitCode int
	Err      error
	Output   []byte // stdout and stderr, interleaved
	// Processes is how many processes wrote a report line: processes that
	// opened a device and exited normally.
	Processes int
	// Readings are the profile's readings as the processes reported them;
	// Consulted the union of the readings that decided something.
	Readings  verbs.Readings
	Consulted verbs.ReadingSet
}

// RunAll runs o.Command once under each profile, one run after another,
// each on a fabric of its own (VERBSIM_FABRIC), and returns the runs.
func RunAll(ctx context.Context, o Options) ([]Run, error) {
	if len(o.Command) == 0 {
		return nil, errors.New("portreport: no command")
	}
	if _, err := os.Stat(filepath.Join(o.Lib, "libibverbs.so.1")); err != nil {
		return nil, fmt.Errorf("portreport: the drop-in library: %w (build it with capi/build.sh %s)", err, o.Lib)
	}
	ps := o.Profiles
	if len(ps) == 0 {
		ps = sim.Profiles()
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	dir, err := os.MkdirTemp("", "verbsim-report-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var runs []Run
	for i, p := range ps {
		report := filepath.Join(dir, p.Name+".report")
		rctx, cancel := context.WithTimeout(ctx, timeout)
		cmd := exec.CommandContext(rctx, o.Command[0], o.Command[1:]...)
		cmd.Env = append(append(os.Environ(),
			"LD_LIBRARY_PATH="+o.Lib+string(filepath.ListSeparator)+os.Getenv("LD_LIBRARY_PATH"),
			"VERBSIM_PROFILE="+p.Name,
			"VERBSIM_REPORT="+report,
			fmt.Sprintf("VERBSIM_FABRIC=report%d-%d", os.Getpid(), i),
		), o.Env...)
		out, err := cmd.CombinedOutput()
		cancel()
		r := Run{Profile: p.Name, Output: out, ExitCode: -1, Err: err}
		var exit *exec.ExitError
		switch {
		case err == nil:
			r.ExitCode = 0
		case errors.As(err, &exit) && exit.Exited():
			r.ExitCode, r.Err = exit.ExitCode(), nil
		}
		if data, err := os.ReadFile(report); err == nil {
			if r.Readings, r.Consulted, r.Processes, err = Parse(data); err != nil {
				return runs, err
			}
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// Parse reads the lines the processes of one run wrote to VERBSIM_REPORT
// and returns their profile's readings, the union of what they consulted
// and how many lines there were. Lines of another form are an error.
func Parse(data []byte) (verbs.Readings, verbs.ReadingSet, int, error) {
	var rs, consulted verbs.ReadingSet
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if f[0] != "verbsim-report" {
			return verbs.Readings{}, 0, n, fmt.Errorf("portreport: %q is not a report line", sc.Text())
		}
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "readings", "consulted":
				x, err := strconv.ParseUint(v, 0, 64)
				if err != nil {
					return verbs.Readings{}, 0, n, fmt.Errorf("portreport: %s in %q: %v", k, sc.Text(), err)
				}
				if k == "readings" {
					rs = verbs.ReadingSet(x)
				} else {
					consulted |= verbs.ReadingSet(x)
				}
			}
		}
		n++
	}
	return rs.Readings(), consulted, n, sc.Err()
}

// Write prints the report of runs: how the program ended under each
// profile, whether the outcomes differ, and the behaviours the runs
// depended on where the profiles disagree.
func Write(w io.Writer, command []string, runs []Run) {
	fmt.Fprintf(w, "verbsim report: %s, under %d profile(s)\n\n", shellJoin(command), len(runs))
	fmt.Fprintf(w, "  %-8s %-5s %-9s %s\n", "profile", "exit", "processes", "last line of output")
	exits := map[string][]string{}
	var order []string
	var union verbs.ReadingSet
	for _, r := range runs {
		exit := strconv.Itoa(r.ExitCode)
		if r.Err != nil {
			exit = "-"
		}
		last := lastLine(r.Output)
		if r.Err != nil {
			last = r.Err.Error()
		}
		fmt.Fprintf(w, "  %-8s %-5s %-9d %s\n", r.Profile, exit, r.Processes, last)
		if exits[exit] == nil {
			order = append(order, exit)
		}
		exits[exit] = append(exits[exit], r.Profile)
		union |= r.Consulted
	}
	fmt.Fprintln(w)
	if len(order) > 1 {
		var parts []string
		for _, e := range order {
			parts = append(parts, fmt.Sprintf("exit %s under %s", e, strings.Join(exits[e], ", ")))
		}
		fmt.Fprintf(w, "The outcome differs between providers: %s.\n\n", strings.Join(parts, "; "))
	} else if len(runs) > 0 {
		fmt.Fprintf(w, "Every run exited %s.\n\n", order[0])
	}
	diffs := sim.NewPortability(sim.DefaultProfile(), union).Differences
	if len(diffs) == 0 {
		fmt.Fprintf(w, "No run depended on a behaviour where the profiles differ.\n")
		return
	}
	fmt.Fprintf(w, "Where the runs depended on a provider's behaviour (%d reading(s)):\n", len(diffs))
	for _, d := range diffs {
		var who []string
		for _, r := range runs {
			if r.Consulted.Has(d.Reading) {
				who = append(who, r.Profile)
			}
		}
		fmt.Fprintf(w, "  %s (%s), met by the run under %s\n", d.Reading.Rules(), d.Reading, strings.Join(who, ", "))
		fmt.Fprintf(w, "    %s: %s\n", strings.Join(d.Off, ", "), d.Reading.Behaviour(false))
		fmt.Fprintf(w, "    %s: %s\n", strings.Join(d.On, ", "), d.Reading.Behaviour(true))
	}
}

// lastLine returns the last non-empty line of out, at most 60 bytes.
func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	s := strings.TrimSpace(lines[len(lines)-1])
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// shellJoin joins a command's words as a shell would read them back: a
// word with a space or a quote in it is put in single quotes.
func shellJoin(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		if w == "" || strings.ContainsAny(w, " \t\n'\"$&;|<>()*?") {
			w = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		out[i] = w
	}
	return strings.Join(out, " ")
}
