package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/verbsim/verbsim/internal/scenario"
)

// runCmd runs `verbsim run FILE...`: each scenario's annotated timeline.
// A FILE that is not on disk is looked up among the built-in scenarios, by
// file name with or without .scen ("verbsim run 01-cq-basics").
func runCmd(g globalFlags, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("verbsim run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	g.register(fs)
	format := fs.String("format", "text", "output format: text (the annotated timeline) or json")
	step := fs.Bool("step", false, "wait for Enter between steps (stdin must be a terminal)")
	svgOut := fs.String("svg", "", "also write a sequence diagram of the scenario to this `file` (SVG)")
	htmlOut := fs.String("html", "", "also write a self-contained page that steps through the scenario to this `file`")
	var tf traceFlags
	tf.register(fs, "the engine's whole trace of each scenario (verb calls included, objects named as the script names them)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: verbsim run [-profile default|rxe] [-format text|json] [-step] [-svg FILE] [-html FILE]\n"+
			"       [-trace FILE [-trace-filter F] [-trace-format text|json]] FILE...\n\n"+
			"Runs scenario files and prints, after each step, what the verb returned, what the\n"+
			"engine did, the state that changed (CQ rings, arm states, channel events, acks,\n"+
			"QP states and queue depths, packets in flight, virtual time) and the rules of\n"+
			"spec/catalogue.md that explain it. A FILE not found on disk names a built-in\n"+
			"scenario (verbsim list shows them). docs/scenarios.md describes the language.\n\nFlags:\n")
		fs.PrintDefaults()
		fmt.Fprintf(stderr, "\nCommands of the language:\n")
		scenario.WriteHelp(stderr)
	}
	// Flags may also follow the scenario names (verbsim run 06-lost-wakeup
	// -html lw.html); after "--" every argument is a name.
	var names []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if err == flag.ErrHelp {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		if used := len(rest) - fs.NArg(); used > 0 && rest[used-1] == "--" {
			names = append(names, fs.Args()...)
			break
		}
		names = append(names, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if err := tf.check(); err != nil {
		fmt.Fprintf(stderr, "verbsim run: %v\n", err)
		return 2
	}
	if *format != "text" && *format != "json" {
		fmt.Fprintf(stderr, "verbsim: unknown format %q (want text or json)\n", *format)
		return 2
	}
	if len(names) == 0 {
		fmt.Fprintf(stderr, "verbsim run: no scenario named (verbsim list shows the built-in ones)\n")
		return 2
	}
	if _, ok := lookupProfile(g.profile); !ok {
		fmt.Fprintf(stderr, "verbsim: unknown profile %q (want default or rxe)\n", g.profile)
		return 2
	}
	if (*svgOut != "" || *htmlOut != "") && len(names) != 1 {
		fmt.Fprintf(stderr, "verbsim run: -svg and -html draw one scenario; name exactly one\n")
		return 2
	}
	if *step && (*format != "text" || !stdinIsTerminal()) {
		fmt.Fprintf(stderr, "verbsim run: -step waits for Enter on a terminal, and stdin is not one (or -format is json): printing the whole timeline\n")
		*step = false
	}
	var traces []tracePart
	for i, name := range names {
		src, file, err := readScenario(name)
		if err != nil {
			fmt.Fprintf(stderr, "verbsim: %v\n", err)
			return 1
		}
		s, err := scenario.Parse(file, src)
		if err != nil {
			fmt.Fprintf(stderr, "verbsim: %v\n", err)
			return 1
		}
		res, runErr := scenario.Run(s, g.profile)
		if i > 0 && *format == "text" {
			fmt.Fprintln(stdout)
		}
		if res != nil {
			switch {
			case *format == "json":
				err = res.WriteJSON(stdout)
			case *step:
				err = stepThrough(res, stdout)
			default:
				err = res.WriteText(stdout)
			}
			if err != nil {
				fmt.Fprintf(stderr, "verbsim: %v\n", err)
				return 1
			}
		}
		if res != nil && tf.on() {
			traces = append(traces, tracePart{label: res.File + ", profile " + res.Profile, recs: res.Trace})
		}
		if runErr != nil {
			if tf.on() {
				_ = tf.writeAll(stdout, traces) // what ran up to the error, to look into it
			}
			fmt.Fprintf(stderr, "verbsim: %v\n", runErr)
			return 1
		}
		for _, out := range []struct {
			path  string
			write func(io.Writer) error
		}{{*svgOut, res.WriteSVG}, {*htmlOut, res.WriteHTML}} {
			if out.path == "" {
				continue
			}
			if err := writeFile(out.path, out.write); err != nil {
				fmt.Fprintf(stderr, "verbsim: %v\n", err)
				return 1
			}
		}
	}
	if tf.on() {
		if tf.path == "-" && *format == "text" {
			fmt.Fprintf(stdout, "\nThe engine's trace:\n")
		}
		if err := tf.writeAll(stdout, traces); err != nil {
			fmt.Fprintf(stderr, "verbsim: writing the trace: %v\n", err)
			return 1
		}
	}
	return 0
}

// writeFile creates path and writes it with write.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readScenario reads a scenario from disk or, failing that, from the
// built-in tour.
func readScenario(name string) ([]byte, string, error) {
	src, err := os.ReadFile(name)
	if err == nil {
		return src, name, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, "", err
	}
	base := strings.TrimSuffix(path.Base(name), ".scen") + ".scen"
	if b, err := fs.ReadFile(scenario.Tour, "tour/"+base); err == nil {
		return b, "tour/" + base, nil
	}
	return nil, "", noScenarioError(name)
}

// noScenarioError: readScenario found no file and no built-in scenario
// of the name.
type noScenarioError string

func (e noScenarioError) Error() string {
	return string(e) + ": no such file, and no built-in scenario of that name (verbsim list shows them)"
}

// listCmd runs `verbsim list`: the built-in scenarios with their first
// line of narration.
func listCmd(g globalFlags, args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("verbsim list", flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.Usage = func() {
		fmt.Fprintf(stderr, "usage: verbsim list\n\nLists the built-in scenarios; run one with verbsim run NAME.\n")
	}
	if _, code, ok := parseCommand(fset, args, &g, stderr); !ok {
		return code
	}
	files, err := fs.Glob(scenario.Tour, "tour/*.scen")
	if err != nil {
		fmt.Fprintf(stderr, "verbsim: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "Built-in scenarios (verbsim run NAME; -profile rxe for soft-RoCE):\n")
	for _, f := range files {
		src, _ := fs.ReadFile(scenario.Tour, f)
		s, err := scenario.Parse(f, src)
		title := ""
		if err == nil && len(s.Steps[0].Narration) > 0 {
			title = s.Steps[0].Narration[0]
			if i := strings.IndexAny(title, ".:"); i >= 0 {
				title = title[:i] // the first sentence or clause is the title
			}
		}
		fmt.Fprintf(stdout, "  %-28s %s\n", strings.TrimSuffix(path.Base(f), ".scen"), title)
	}
	return 0
}
