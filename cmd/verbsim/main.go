// Command verbsim runs verbsim's simulated RDMA adapter from the command line.
//
// Usage:
//
//	verbsim [global flags] [command] [command flags]
//
// Commands:
//
//	tour          (the default) the guided tour: every built-in scenario in order
//	walkthrough   narrate a CQ, its arm state and its channel
//	pingpong      ibv_rc_pingpong's exchange between two simulated devices
//	bench         the performance figures against their floors (docs/performance.md)
//	run FILE...   scenario files as annotated timelines (-format text|json)
//	list          the built-in scenarios
//	explain ID    a rule of spec/catalogue.md in plain words, and a scenario showing it
//	explore       the schedule explorer on the built-in completion-loop patterns
//	report CMD    a C program on the drop-in libibverbs under every profile: where it depends on one
//	help [cmd]    list the commands and the global flags, or a command's flags
//
// Global flags, accepted before the command name and after it (a value
// given after the command wins):
//
//	-profile NAME   behaviour profile: default (the man pages), rxe (Linux
//	                soft-RoCE), mlx5 (NVIDIA ConnectX), siw (soft-iWARP) or
//	                irdma (Intel E810); docs/profiles.md
//
// tour, what verbsim does with no command, runs every built-in scenario
// (the files of internal/scenario/tour) in order, each under a heading.
//
// So `verbsim -profile rxe`, `verbsim -profile=rxe walkthrough`,
// `verbsim walkthrough -profile rxe` and `verbsim -profile rxe pingpong -e`
// all work.
//
// walkthrough narrates, step by step on real engine objects,
// what a completion queue, its arm state and its completion channel do:
// completions before and after arming, solicited versus next, the event that
// finds an empty CQ, the lost wake-up, acknowledgements and destroy, and
// overrun into IBV_EVENT_CQ_ERR. -trace FILE writes the fabric's trace.
//
// run [-format text|json] [-step] [-svg FILE] [-html FILE] [-trace FILE] FILE... runs scenario files (docs/scenarios.md)
// and prints, after each step, the verb's result, what the engine did, the
// state that changed and the rules that explain it; a FILE not on disk names
// a built-in scenario, which list shows. -step waits for Enter between
// steps when stdin is a terminal; -svg writes a sequence diagram of the
// scenario and -html a self-contained page that steps through it; -trace
// writes the engine's whole trace of each scenario. With -profile all it
// runs each scenario under every profile and prints it as its file reads,
// each step's output once where the profiles agree and once per group of
// profiles where they differ (">> profile default, rxe").
//
// explain RULE-ID prints the catalogue's row for a rule (with each
// profile's reading where they differ) and runs the first built-in
// scenario whose timeline cites it.
//
// pingpong [-n iters] [-s size] [-e] [-r rx-depth] [-m mtu] [-drop p]
// [-dup p] [-delay p] [-seed n] [-trace file] runs ibv_rc_pingpong's
// exchange between two simulated devices,
// busy polling or (with -e) sleeping on completion events, optionally
// through a lossy, duplicating fabric, checks every message, and prints
// rc_pingpong's summary with the virtual time and the faults; see
// docs/pingpong.md.
//
// Every -trace takes -trace-filter obj=PATTERN|...,kind=KIND|... (kinds
// verb, packet, completion, event, timer, state, fault, other) and
// -trace-format text|json; the text prints the virtual time with its unit
// and folds runs of identical records into one line with a count
// (internal/tracefmt).
//
// report [-lib DIR] [-profiles a,b,...] [-timeout D] COMMAND [ARG...] runs
// a C program (sh -c '...' for a server and a client) on verbsim's drop-in
// libibverbs (capi/build.sh DIR, or $VERBSIM_LIB) once under each profile
// and prints how each run ended and, for every behaviour on which the
// providers differ that a run depended on, what each profile does there
// (docs/profiles.md, "The portability report").
//
// explore [-strategy random|pct|exhaustive] [-seed n] [-schedules n]
// [-depth d] [-preemptions k] [PATTERN...] explores the completion-loop
// patterns of explore/patterns (-list) and prints, for each failure, its
// replay token (and its annotated timeline when patterns are named);
// explore -replay TOKEN runs the token's schedule again with the same
// timeline; explore -measure N prints schedules to the first failure per
// strategy over N seeds (docs/explore.md).
//
// bench [-rounds n] [-time d] [-qps n] [-pairs n] [-mrs n] [-msgs n]
// [-workers n] [-quick] [-only regexp | -scale] [-write file] runs every figure of the performance table
// (issue #14) next to its floor, a plain-Go operation measured in the same
// process, alternating the two round by round, and prints subject, floor,
// ratio and target; -only runs the figures whose name matches; -write
// docs/performance.md also writes the report page with the machine, the
// load and the command. After the figures it runs the scale run: -pairs
// connected pairs exchanging -msgs messages each with -workers goroutines,
// in Auto and Background mode, against 1 pair; -scale runs only that.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/trace"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// profileUsage describes the -profile flag wherever it is defined.
const profileUsage = "behaviour profile: default (the man pages), rxe (Linux soft-RoCE), mlx5 (NVIDIA ConnectX), siw (soft-iWARP) or irdma (Intel E810); docs/profiles.md"

// globalFlags are the flags every command accepts, before its name or after
// it.
type globalFlags struct {
	profile string // a name of sim.Profiles()
}

// register defines the global flags on fs, with g's current values as their
// defaults: a command's own flag set so starts from what was given before
// the command name, and a value after the name overrides it.
func (g *globalFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.profile, "profile", g.profile, profileUsage)
}

// lookupProfile returns the built-in profile called name, or an error
// that lists the known names (sim.ProfileByName).
func lookupProfile(name string) (sim.Profile, error) {
	p, err := sim.ProfileByName(name)
	if err != nil {
		return p, fmt.Errorf("-profile %s: %s", name, strings.TrimPrefix(err.Error(), "sim: "))
	}
	return p, nil
}

// command is one subcommand: run parses args (what follows the command
// name) on top of the global flags g and does the work.
type command struct {
	name, summary string
	run           func(g globalFlags, args []string, stdout, stderr io.Writer) int
}

// commands lists the subcommands in the order the usage shows them; the
// first is the default.
var commands = []command{
	{"tour", "the guided tour: every built-in scenario in order (the default)", tourCmd},
	{"walkthrough", "narrate the completion queue, arming and events on live objects", walkthroughCmd},
	{"pingpong", "run ibv_rc_pingpong's exchange between two simulated devices", pingpongCmd},
	{"bench", "measure the performance figures against their floors; -write docs/performance.md", benchCmd},
	{"run", "run scenario files (or built-in scenarios) and print their annotated timelines", runCmd},
	{"list", "list the built-in scenarios", listCmd},
	{"explain", "print a rule of spec/catalogue.md in plain words and run a scenario that shows it", explainCmd},
	{"explore", "find notification races in the built-in completion-loop patterns; -replay TOKEN", exploreCmd},
	{"report", "run a C program on the drop-in libibverbs under every provider profile; report where they differ", reportCmd},
}

// usage prints the top-level help: the commands and the global flags.
func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: verbsim [global flags] [command] [command flags]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "  %-12s %s\n", "help", "show this text; help <command> shows the command's flags")
	fmt.Fprintf(w, "\nGlobal flags, accepted before the command or after it (after wins):\n")
	fs := flag.NewFlagSet("verbsim", flag.ContinueOnError)
	fs.SetOutput(w)
	(&globalFlags{profile: "default"}).register(fs)
	fs.PrintDefaults()
	fmt.Fprintf(w, "\nExamples:\n  verbsim\n  verbsim run -step 06-lost-wakeup\n  verbsim explain NOTIFY-02\n  verbsim -profile rxe\n  verbsim -profile=rxe walkthrough\n  verbsim -profile rxe pingpong -n 1000 -e -drop 0.05\n")
}

// run is main without the process: it parses args (os.Args[1:]), runs the
// command they name and returns the exit status: 0, 1 when the command
// failed, 2 for a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	g := globalFlags{profile: "default"}
	fs := flag.NewFlagSet("verbsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	g.register(fs)
	fs.Usage = func() { usage(stderr) }
	// Parsing stops at the first argument that is not a flag: the command.
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	args = fs.Args()
	name := commands[0].name
	if len(args) > 0 {
		name, args = args[0], args[1:]
	}
	if name == "help" {
		if len(args) == 0 {
			usage(stdout)
			return 0
		}
		name, args = args[0], []string{"-h"}
	}
	for _, c := range commands {
		if c.name == name {
			return c.run(g, args, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "verbsim: unknown command %q\n", name)
	usage(stderr)
	return 2
}

// walkthroughCmd runs `verbsim walkthrough`.
func walkthroughCmd(g globalFlags, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("verbsim walkthrough", flag.ContinueOnError)
	fs.SetOutput(stderr)
	g.register(fs)
	var tf traceFlags
	tf.register(fs, "the fabric's trace (every verb call and engine event of the walkthrough)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: verbsim walkthrough [-profile NAME] [-trace FILE [-trace-filter F] [-trace-format text|json]]\n\n"+
			"Narrates, on live objects, what a completion queue, its arm state and its\n"+
			"completion channel do. The global flag -profile may also come before the\n"+
			"command name: verbsim -profile rxe walkthrough.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	p, code, ok := parseCommand(fs, args, &g, stderr)
	if !ok {
		return code
	}
	if err := tf.check(); err != nil {
		fmt.Fprintf(stderr, "verbsim walkthrough: %v\n", err)
		return 2
	}
	var log *trace.Log
	if tf.on() {
		log = &trace.Log{}
	}
	err := walkthrough(stdout, p, log)
	if log != nil {
		if werr := tf.write(stdout, log.Records(), log.Dropped); werr != nil {
			fmt.Fprintf(stderr, "verbsim walkthrough: writing the trace: %v\n", werr)
			return 1
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "verbsim: %v\n", err)
		return 1
	}
	return 0
}

// parseCommand parses a command's flags, which take no arguments besides
// flags, and looks up the profile the global flag names. When the command
// should not run it reports false and the exit code: 0 after -help, 2
// after a usage error (already printed).
func parseCommand(fs *flag.FlagSet, args []string, g *globalFlags, stderr io.Writer) (sim.Profile, int, bool) {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return sim.Profile{}, 0, false
		}
		return sim.Profile{}, 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "verbsim: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return sim.Profile{}, 2, false
	}
	p, err := lookupProfile(g.profile)
	if err != nil {
		fmt.Fprintf(stderr, "verbsim: %v\n", err)
		return sim.Profile{}, 2, false
	}
	return p, 0, true
}
