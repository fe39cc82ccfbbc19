// Command verbsim runs verbsim's simulated RDMA adapter from the command line.
//
// Usage:
//
//	verbsim [walkthrough] [-profile default|rxe]
//	verbsim pingpong [-n iters] [-s size] [-e] [-r rx-depth] [-m mtu] [-drop p] [-dup p] [-delay p] [-seed n] [-profile default|rxe] [-trace file]
//
// walkthrough (the default) narrates, step by step on real engine objects,
// what a completion queue, its arm state and its completion channel do:
// completions before and after arming, solicited versus next, the event that
// finds an empty CQ, the lost wake-up, acknowledgements and destroy, and
// overrun into IBV_EVENT_CQ_ERR.
//
// pingpong runs ibv_rc_pingpong's exchange between two simulated devices,
// busy polling or (with -e) sleeping on completion events, optionally
// through a lossy, duplicating fabric, checks every message, and prints
// rc_pingpong's summary with the virtual time and the faults; see
// docs/pingpong.md.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/verbsim/verbsim/sim"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cmd := "walkthrough"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	if cmd == "pingpong" {
		return pingpongCmd(args, stdout, stderr)
	}
	fs := flag.NewFlagSet("verbsim "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	profile := fs.String("profile", "default", "behaviour profile: default (man pages) or rxe (Linux soft-RoCE)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: verbsim [walkthrough] [-profile default|rxe]\n\n")
		fmt.Fprintf(stderr, "Commands:\n  walkthrough  narrate the completion queue, arming and events on live objects (default)\n  pingpong     run ibv_rc_pingpong's exchange between two simulated devices (verbsim pingpong -h)\n  help         show this text\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if cmd == "help" {
		fs.Usage()
		return 0
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "verbsim: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	var p sim.Profile
	found := false
	for _, q := range sim.Profiles() {
		if q.Name == *profile {
			p, found = q, true
		}
	}
	if !found {
		fmt.Fprintf(stderr, "verbsim: unknown profile %q (want default or rxe)\n", *profile)
		return 2
	}
	switch cmd {
	case "walkthrough":
		if err := walkthrough(stdout, p); err != nil {
			fmt.Fprintf(stderr, "verbsim: %v\n", err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(stderr, "verbsim: unknown command %q\n", cmd)
	fs.Usage()
	return 2
}
