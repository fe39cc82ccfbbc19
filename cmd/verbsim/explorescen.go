package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/verbsim/verbsim/explore"
	"github.com/verbsim/verbsim/internal/scenario"
)

// scenWorld is one world of a scenario file: the threads before one of
// its explore steps (or before its end).
type scenWorld struct {
	label string
	world func(*explore.World)
}

// scenarioWorlds reads a scenario and returns its worlds: one per explore
// step, and one for the threads after the last (if any).
func scenarioWorlds(name, profile string) (string, []scenWorld, error) {
	src, file, err := readScenario(name)
	if err != nil {
		return "", nil, err
	}
	s, err := scenario.Parse(file, src)
	if err != nil {
		return "", nil, err
	}
	var out []scenWorld
	threads := 0
	for i, st := range s.Steps {
		switch st.Verb {
		case "thread", "daemon":
			threads++
			continue
		case "explore":
		default:
			continue
		}
		if threads > 0 {
			w, err := scenario.World(s, profile, i)
			if err != nil {
				return "", nil, err
			}
			out = append(out, scenWorld{fmt.Sprintf("%s:%d", filepath.Base(file), st.Line), w})
		}
		threads = 0
	}
	if threads > 0 {
		w, err := scenario.World(s, profile, len(s.Steps))
		if err != nil {
			return "", nil, err
		}
		out = append(out, scenWorld{filepath.Base(file), w})
	}
	if len(out) == 0 {
		return "", nil, fmt.Errorf("%s: no thread to explore (thread NAME ... end; docs/explore.md)", file)
	}
	return filepath.Base(file), out, nil
}

// exploreScenario explores the worlds of a scenario file with o and
// prints each result with its failure's timeline. It reports whether a
// world failed.
func exploreScenario(name, profile string, o explore.Options, stdout io.Writer) (bool, error) {
	base, worlds, err := scenarioWorlds(name, profile)
	if err != nil {
		return false, err
	}
	failed := false
	for _, sw := range worlds {
		o.Name = base
		res := explore.Explore(sw.world, o)
		fmt.Fprintf(stdout, "%s  %s\n", sw.label, res)
		if f := res.Failure; f != nil {
			failed = true
			fmt.Fprintf(stdout, "  %s\n  schedule shrunk from %d steps, %d preemption(s) to %d steps, %d preemption(s) (%d runs)\n  replay: verbsim explore -replay %s %s\n\n%s\n",
				f.Message, f.Unshrunk.Steps, f.Unshrunk.Preemptions, f.Size.Steps, f.Size.Preemptions, f.ShrinkRuns, f.Token, name, f.Timeline)
		}
	}
	return failed, nil
}

// replayScenario runs a token on the world of the scenario it was made
// on: of the file's worlds, the one whose identity the token carries.
func replayScenario(tok, name, profile string, stdout io.Writer) (int, error) {
	_, worlds, err := scenarioWorlds(name, profile)
	if err != nil {
		return 2, err
	}
	var last error
	for _, sw := range worlds {
		f, err := explore.RunToken(sw.world, tok)
		if err != nil {
			last = err
			continue
		}
		if f == nil {
			fmt.Fprintf(stdout, "%s: the schedule passed\n", sw.label)
			return 1, nil
		}
		fmt.Fprintf(stdout, "%s: %v\n\n%s", sw.label, f.Error(), f.Timeline)
		return 0, nil
	}
	if last == nil {
		last = errors.New("no world to replay the token on")
	}
	return 1, fmt.Errorf("%s: %w", name, last)
}
