package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/verbsim/verbsim/explore"
	"github.com/verbsim/verbsim/explore/patterns"
)

// exploreCmd runs `verbsim explore`: the built-in patterns of
// explore/patterns, or the threads of scenario files, under a strategy,
// or the replay of a token.
func exploreCmd(g globalFlags, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("verbsim explore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	g.register(fs)
	strategy := fs.String("strategy", "auto", "auto, random, pct or exhaustive")
	seed := fs.Uint64("seed", 1, "seed of random and pct")
	schedules := fs.Int("schedules", 0, "schedules to run at most, per pattern (0: 10000 for auto, 1000 for the others)")
	depth := fs.Int("depth", 2, "pct's bug depth")
	preempt := fs.Int("preemptions", 0, "exhaustive's preemption bound (0: 2; -1: none), auto's highest (0: no limit)")
	maxFaults := fs.Int("max-faults", 0, "packet faults a schedule may draw when a pattern's fabric has fault probabilities (0: 1 for exhaustive, no bound otherwise; -1: none)")
	budget := fs.Duration("time", 0, "bound each exploration's wall time too (e.g. 2s; 0: none): it stops after the first schedule that ends past it, and says how far it got")
	replay := fs.String("replay", "", "run the schedule of a replay token again and print its timeline")
	list := fs.Bool("list", false, "list the patterns")
	measure := fs.Int("measure", 0, "measure schedules to the first failure of every pattern and strategy over this many seeds (a markdown table)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: verbsim explore [flags] [PATTERN|FILE.scen...]\n       verbsim explore -replay TOKEN [FILE.scen]\n\n"+
			"Explores the built-in completion-loop patterns (-list) with the schedule\n"+
			"explorer (docs/explore.md): each correct one must pass, each buggy one must\n"+
			"fail the way it is documented to. With no argument it runs them all and\n"+
			"prints one line each with the replay token of the failure; naming patterns\n"+
			"also prints each failure's annotated timeline. A scenario file with thread\n"+
			"blocks (docs/scenarios.md) is explored the same way, once per explore step,\n"+
			"and the exit status is 1 when a schedule fails. -replay runs a token's\n"+
			"schedule again and prints the same failure and timeline; a token of a\n"+
			"scenario needs its file.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if *list {
		w := nameWidth(patterns.All())
		for _, p := range patterns.All() {
			want := "passes"
			if p.Want != 0 {
				want = "fails: " + p.Want.String()
			}
			fmt.Fprintf(stdout, "%-*s %s\n  %s\n", w, p.Name, want, p.Doc)
		}
		return 0
	}
	if *replay != "" {
		if fs.NArg() > 0 {
			code, err := replayScenario(*replay, fs.Arg(0), g.profile, stdout)
			if err != nil {
				fmt.Fprintf(stderr, "verbsim: %v\n", err)
			}
			return code
		}
		return exploreReplay(*replay, stdout, stderr)
	}
	st, err := explore.ParseStrategy(*strategy)
	if err != nil {
		fmt.Fprintf(stderr, "verbsim: %v\n", err)
		return 2
	}
	if *schedules <= 0 && st != explore.Auto {
		*schedules = 1000
	}
	if *measure > 0 {
		return exploreMeasure(*measure, max(*schedules, 1000), stdout)
	}
	chosen := patterns.All()
	verbose := fs.NArg() > 0
	status := 0
	if verbose {
		chosen = nil
		for _, name := range fs.Args() {
			if p, ok := patterns.Lookup(name); ok {
				chosen = append(chosen, p)
				continue
			}
			failed, err := exploreScenario(name, g.profile, explore.Options{Strategy: st, Seed: *seed, Schedules: *schedules,
				Depth: *depth, Preemptions: *preempt, MaxFaults: *maxFaults, Time: *budget}, stdout)
			if err != nil {
				if errors.As(err, new(noScenarioError)) {
					err = fmt.Errorf("%s: no built-in pattern (verbsim explore -list), scenario file or built-in scenario (verbsim list) of that name", name)
				}
				fmt.Fprintf(stderr, "verbsim: %v\n", err)
				return 2
			}
			if failed {
				status = 1
			}
		}
	}
	w := nameWidth(chosen)
	for _, p := range chosen {
		res := explore.Explore(p.World, explore.Options{Strategy: st, Seed: *seed, Schedules: *schedules,
			Depth: *depth, Preemptions: *preempt, MaxFaults: *maxFaults, Time: *budget, Name: p.Name})
		verdict := "ok"
		switch f := res.Failure; {
		case p.Want == 0 && f != nil, p.Want != 0 && f != nil && !p.Expected(f.Kind):
			verdict, status = "UNEXPECTED", 1
		case p.Want != 0 && f == nil && p.Deep > 2 && st != explore.Auto:
			verdict = fmt.Sprintf("not found: it needs %d preemptions (-strategy auto)", p.Deep)
		case p.Want != 0 && f == nil:
			verdict = "not found"
			if st != explore.Exhaustive || res.Complete {
				status = 1
			}
		}
		fmt.Fprintf(stdout, "%-*s %s  [%s]\n", w, p.Name, res, verdict)
		if f := res.Failure; f != nil {
			faults := ""
			if f.Unshrunk.Faults > 0 {
				faults = fmt.Sprintf(" (%d packet fault(s) drawn, %d once shrunk)", f.Unshrunk.Faults, f.Size.Faults)
			}
			fmt.Fprintf(stdout, "  %s\n  schedule shrunk from %d steps, %d preemption(s) to %d steps, %d preemption(s)%s (%d runs)\n  replay: verbsim explore -replay %s\n",
				f.Message, f.Unshrunk.Steps, f.Unshrunk.Preemptions, f.Size.Steps, f.Size.Preemptions, faults, f.ShrinkRuns, f.Token)
			if verbose {
				fmt.Fprintf(stdout, "\n%s\n", f.Timeline)
			}
		}
	}
	return status
}

// exploreReplay runs a token of a built-in pattern again.
func exploreReplay(tok string, stdout, stderr io.Writer) int {
	name, err := explore.TokenName(tok)
	if err != nil {
		fmt.Fprintf(stderr, "verbsim: %v\n", err)
		return 2
	}
	p, ok := patterns.Lookup(name)
	if !ok && strings.HasSuffix(name, ".scen") {
		fmt.Fprintf(stderr, "verbsim: the token is of the scenario %s: verbsim explore -replay TOKEN %s\n", name, name)
		return 2
	}
	if !ok {
		fmt.Fprintf(stderr, "verbsim: the token names no built-in pattern (%q)\n", name)
		return 2
	}
	f, err := explore.RunToken(p.World, tok)
	if err != nil {
		fmt.Fprintf(stderr, "verbsim: %v\n", err)
		return 1
	}
	if f == nil {
		fmt.Fprintf(stdout, "%s: the schedule passed\n", name)
		return 1
	}
	fmt.Fprintf(stdout, "%s: %v\n\n%s", name, f.Error(), f.Timeline)
	return 0
}

// exploreMeasure prints the table of docs/explore.md: schedules to the
// first failure of each buggy pattern, per strategy.
func exploreMeasure(seeds, budget int, stdout io.Writer) int {
	fmt.Fprintf(stdout, "| pattern | finds | random | pct (d=2) | exhaustive (2 preemptions) |\n|---|---|---|---|---|\n")
	var shrunk []string
	for _, p := range patterns.All() {
		if p.Want == 0 {
			continue
		}
		var cells, sh []string
		for _, s := range []explore.Strategy{explore.Random, explore.PCT, explore.Exhaustive} {
			m := patterns.Measure(p, s, seeds, budget)
			cells = append(cells, m.String())
			sh = append(sh, m.Shrunk())
		}
		fmt.Fprintf(stdout, "| %s | %v | %s |\n", p.Name, p.Want, strings.Join(cells, " | "))
		shrunk = append(shrunk, fmt.Sprintf("| %s | %s |", p.Name, strings.Join(sh, " | ")))
	}
	fmt.Fprintf(stdout, "\nShrinking (mean steps/preemptions of the failing schedule, as found → shrunk):\n\n"+
		"| pattern | random | pct (d=2) | exhaustive (2 preemptions) |\n|---|---|---|---|\n%s\n", strings.Join(shrunk, "\n"))
	return 0
}

// nameWidth is the width of the longest pattern name, so the columns after
// the names line up.
func nameWidth(ps []patterns.Pattern) int {
	w := 0
	for _, p := range ps {
		w = max(w, len(p.Name))
	}
	return w
}
