package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/verbsim/verbsim/internal/scenario"
)

// stdin is where run -step reads its Enter presses; stdinIsTerminal says
// whether it is a terminal. Tests replace both.
var (
	stdin           io.Reader = os.Stdin
	stdinIsTerminal           = func() bool {
		fi, err := os.Stdin.Stat()
		return err == nil && fi.Mode()&os.ModeCharDevice != 0
	}
)

// tourCmd runs `verbsim` with no command, or `verbsim tour`: every built-in
// scenario in order, each under a heading.
func tourCmd(g globalFlags, args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("verbsim tour", flag.ContinueOnError)
	fset.SetOutput(stderr)
	g.register(fset)
	fset.Usage = func() {
		fmt.Fprintf(stderr, "usage: verbsim [tour] [-profile default|rxe]\n\n"+
			"The guided tour (what verbsim does with no command): every built-in scenario in\n"+
			"order, each under its heading, as annotated timelines. verbsim list names them,\n"+
			"verbsim run NAME runs one (with -step to go at your pace, -html for a page to\n"+
			"click through), verbsim explain RULE-ID explains a rule the timelines cite.\n\nFlags:\n")
		fset.PrintDefaults()
	}
	if _, code, ok := parseCommand(fset, args, &g, stderr); !ok {
		return code
	}
	files := scenario.TourFiles()
	fmt.Fprintf(stdout, "verbsim: a guided tour of verbs semantics, in %d scenarios (profile %s: %s).\n"+
		"Each step shows what the verb returned, what the simulated adapter did, the\n"+
		"state that changed and the rules of spec/catalogue.md behind it.\n"+
		"verbsim list names the scenarios; verbsim run -step NAME goes one step at a time.\n",
		len(files), g.profile, scenario.ProfileSummary(g.profile))
	for i, f := range files {
		src, err := fs.ReadFile(scenario.Tour, f)
		if err != nil {
			fmt.Fprintf(stderr, "verbsim: %v\n", err)
			return 1
		}
		s, err := scenario.Parse(f, src)
		if err != nil {
			fmt.Fprintf(stderr, "verbsim: %v\n", err)
			return 1
		}
		res, err := scenario.Run(s, g.profile)
		if err != nil {
			fmt.Fprintf(stderr, "verbsim: %v\n", err)
			return 1
		}
		name := strings.TrimSuffix(path.Base(f), ".scen")
		head := fmt.Sprintf("%d of %d. %s (verbsim run %s)", i+1, len(files), s.Title(), name)
		fmt.Fprintf(stdout, "\n\n%s\n%s\n\n", head, strings.Repeat("=", len([]rune(head))))
		if err := res.WriteText(stdout); err != nil {
			fmt.Fprintf(stderr, "verbsim: %v\n", err)
			return 1
		}
	}
	writeWhatNext(stdout, len(files), g.profile)
	return 0
}

// writeWhatNext ends the tour: where a reader who has come this far goes
// next.
func writeWhatNext(w io.Writer, n int, profile string) {
	other := "-profile rxe"
	if profile == "rxe" {
		other = "-profile default"
	}
	fmt.Fprintf(w, "\n\nWhat next\n=========\n\nThat was the tour: %d scenarios under the %s profile. From here:\n\n", n, profile)
	for _, r := range [][2]string{
		{"verbsim " + other, "the tour again, as the other profile reads the rules"},
		{"verbsim run -step NAME", "one scenario at your own pace (verbsim list names them)"},
		{"verbsim run -html page.html NAME", "a page to click through, with the diagram"},
		{"verbsim explain RULE-ID", "a rule of the timelines in full, and how a test sees it"},
		{"verbsim run FILE.scen", "a scenario of your own (docs/scenarios.md: the language)"},
		{"verbsim pingpong -e", "ibv_rc_pingpong between two simulated adapters"},
		{"verbsim explore", "notification races in completion loops (docs/explore.md)"},
	} {
		fmt.Fprintf(w, "  %-33s %s\n", r[0], r[1])
	}
	fmt.Fprintf(w, "\nTo test your own RDMA code on the simulator, read the README's \"Testing your\n"+
		"code\" and examples/echo; docs/verbs-in-one-hour.md is this tour as a tutorial.\n")
}

// explainCmd runs `verbsim explain RULE-ID`: the catalogue's row in plain
// words, and a tour scenario that shows the rule.
func explainCmd(g globalFlags, args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("verbsim explain", flag.ContinueOnError)
	fset.SetOutput(stderr)
	g.register(fset)
	brief := fset.Bool("brief", false, "print the rule only, without running a scenario")
	fset.Usage = func() {
		fmt.Fprintf(stderr, "usage: verbsim explain [-profile default|rxe] [-brief] RULE-ID\n\n"+
			"Prints a rule of spec/catalogue.md in plain words (with each profile's reading\n"+
			"when the sources disagree) and runs the first built-in scenario whose timeline\n"+
			"cites it. Example: verbsim explain NOTIFY-02\n\nFlags:\n")
		fset.PrintDefaults()
	}
	if err := fset.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fset.NArg() > 1 { // flags after the rule ID: verbsim explain XFER-05 -brief
		id := fset.Arg(0)
		if err := fset.Parse(fset.Args()[1:]); err != nil {
			if err == flag.ErrHelp {
				return 0
			}
			return 2
		}
		if fset.NArg() == 0 {
			fset.Parse([]string{id})
		}
	}
	if fset.NArg() != 1 {
		fmt.Fprintf(stderr, "verbsim explain: name one rule, such as NOTIFY-02\n")
		fset.Usage()
		return 2
	}
	if _, ok := lookupProfile(g.profile); !ok {
		fmt.Fprintf(stderr, "verbsim: unknown profile %q (want default or rxe)\n", g.profile)
		return 2
	}
	r, ok := scenario.LookupRule(fset.Arg(0))
	if !ok {
		fmt.Fprintf(stderr, "verbsim explain: no rule %q in spec/catalogue.md (IDs look like CQ-17, NOTIFY-02, XFER-14)\n", fset.Arg(0))
		return 1
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s)\n\n", r.ID, r.Section)
	b.WriteString(scenario.Wrap(r.Text, "  ", 78))
	if len(r.Readings) > 0 {
		fmt.Fprintf(&b, "\nThe two profiles read it differently (%s):\n", r.Readings[0].Topic)
		for _, rd := range r.Readings {
			b.WriteString(scenario.Wrap(fmt.Sprintf("%-8s %s", rd.Profile+":", rd.Text), "  ", 78))
		}
	}
	if r.Observed != "" {
		b.WriteString("\nHow to see it:\n")
		b.WriteString(scenario.Wrap(r.Observed, "  ", 78))
	}
	io.WriteString(stdout, b.String())
	if *brief {
		return 0
	}
	files, steps := scenario.ScenariosShowing(r.ID)
	if len(files) == 0 {
		fmt.Fprintf(stdout, "\nNo built-in scenario shows %s yet (verbsim list names them).\n", r.ID)
		return 0
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(path.Base(f), ".scen"))
	}
	var at []string
	for _, i := range steps[0] {
		at = append(at, fmt.Sprintf("[%d]", i+1))
	}
	fmt.Fprintf(stdout, "\nShown by: %s. Here is %s; steps %s cite %s.\n", strings.Join(names, ", "), names[0], strings.Join(at, " "), r.ID)
	if len(r.Readings) > 0 {
		other := "rxe"
		if g.profile == "rxe" {
			other = "default"
		}
		fmt.Fprintf(stdout, "(verbsim explain -profile %s %s runs it as the other profile reads the rule.)\n", other, r.ID)
	}
	fmt.Fprintln(stdout)
	return runCmd(g, []string{names[0]}, stdout, stderr)
}

// stepThrough prints a timeline one step at a time, waiting for Enter
// between steps; q then Enter stops.
func stepThrough(res *scenario.Result, stdout io.Writer) error {
	if err := res.WriteHeader(stdout); err != nil {
		return err
	}
	in := bufio.NewReader(stdin)
	for i := range res.Steps {
		if i > 0 {
			fmt.Fprintf(stdout, "-- Enter: step %d of %d; q Enter: stop ", i+1, len(res.Steps))
			line, err := in.ReadString('\n')
			if strings.TrimSpace(line) == "q" || err != nil {
				fmt.Fprintln(stdout)
				return nil
			}
		}
		if err := res.WriteStep(stdout, i); err != nil {
			return err
		}
	}
	return nil
}
