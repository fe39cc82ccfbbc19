package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/verbsim/verbsim/internal/portreport"
	"github.com/verbsim/verbsim/sim"
)

const reportUsage = "usage: verbsim report [-lib DIR] [-profiles a,b,...] [-timeout D] [--] COMMAND [ARG...]\n\n" +
	"Runs a C program on verbsim's drop-in libibverbs once under each provider\n" +
	"profile and reports how it ended under each and where its runs depended\n" +
	"on a behaviour on which providers differ (docs/profiles.md). COMMAND may be\n" +
	"sh -c '...' to start several processes (a server and a client); each run\n" +
	"has a fabric of its own. The library is the one capi/build.sh DIR builds.\n\nFlags:\n"

// reportCmd runs `verbsim report`.
func reportCmd(g globalFlags, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("verbsim report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	g.register(fs)
	lib := fs.String("lib", os.Getenv("VERBSIM_LIB"), "the directory of the drop-in libibverbs.so.1 (capi/build.sh DIR); default $VERBSIM_LIB")
	names := fs.String("profiles", strings.Join(sim.ProfileNames(), ","), "the profiles to run under, comma separated")
	timeout := fs.Duration("timeout", 2*time.Minute, "wall-time bound of each run (a hang guard)")
	fs.Usage = func() {
		fmt.Fprint(stderr, reportUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintf(stderr, "verbsim report: name the program to run\n")
		fs.Usage()
		return 2
	}
	if *lib == "" {
		fmt.Fprintf(stderr, "verbsim report: where is the drop-in library? -lib DIR or VERBSIM_LIB (build it with capi/build.sh DIR)\n")
		return 2
	}
	var ps []sim.Profile
	for _, n := range strings.Split(*names, ",") {
		p, err := lookupProfile(strings.TrimSpace(n))
		if err != nil {
			fmt.Fprintf(stderr, "verbsim report: %v\n", err)
			return 2
		}
		ps = append(ps, p)
	}
	runs, err := portreport.RunAll(context.Background(), portreport.Options{Lib: *lib, Profiles: ps, Command: fs.Args(), Timeout: *timeout})
	if err != nil {
		fmt.Fprintf(stderr, "verbsim report: %v\n", err)
		return 1
	}
	portreport.Write(stdout, fs.Args(), runs)
	return 0
}
