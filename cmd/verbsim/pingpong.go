package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/verbs"

	"github.com/verbsim/verbsim/internal/pingpong"
)

const pingpongUsage = "usage: verbsim pingpong [-n iters] [-s size] [-e] [-r rx-depth] [-m mtu] [-drop p] [-dup p] [-delay p] [-seed n] [-profile NAME] [-trace file [-trace-filter F] [-trace-format text|json]]\n"

// pingpongCmd runs `verbsim pingpong`: ibv_rc_pingpong's exchange between
// two devices of an in-memory fabric, and its summary.
func pingpongCmd(g globalFlags, args []string, stdout, stderr io.Writer) int {
	cfg, tf, exit, ok := parsePingpong(g, args, stderr)
	if !ok {
		return exit
	}
	if tf.on() {
		cfg.Trace = &trace.Log{Limit: 1_000_000}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	r, err := pingpong.Run(ctx, cfg)
	if cfg.Trace != nil {
		if werr := tf.write(stdout, cfg.Trace.Records(), cfg.Trace.Dropped); werr != nil {
			fmt.Fprintf(stderr, "verbsim pingpong: writing the trace: %v\n", werr)
			return 1
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "verbsim pingpong: %v\n", err)
		return 1
	}
	printSummary(stdout, r)
	return 0
}

// parsePingpong parses pingpong's flags, args, on top of the global flags g,
// into the run's configuration and the -trace flags. When ok is false it
// has printed why (or the help) and exit is the status to return.
func parsePingpong(g globalFlags, args []string, stderr io.Writer) (cfg pingpong.Config, tf traceFlags, exit int, ok bool) {
	fs := flag.NewFlagSet("verbsim pingpong", flag.ContinueOnError)
	fs.SetOutput(stderr)
	iters := fs.Int("n", pingpong.DefaultIters, "number of round trips")
	size := fs.Int("s", pingpong.DefaultSize, fmt.Sprintf("message size in bytes (at least %d, the header)", pingpong.HeaderSize))
	events := fs.Bool("e", false, "sleep on completion events instead of busy polling")
	rx := fs.Int("r", pingpong.DefaultRXDepth, "receives posted ahead on each side")
	mtu := fs.Int("m", pingpong.DefaultMTU.Bytes(), "path MTU in bytes: 256, 512, 1024, 2048 or 4096")
	drop := fs.Float64("drop", 0, "probability that a packet is lost, in [0, 1)")
	dup := fs.Float64("dup", 0, "probability that a packet arrives twice, in [0, 1]")
	delay := fs.Float64("delay", 0, "probability that a packet arrives 1 to 10 µs late, in [0, 1]")
	seed := fs.Uint64("seed", 0, "seed of the faults and of the message payloads")
	g.register(fs)
	tf.register(fs, "the fabric's trace (every verb call and engine event, the last 1,000,000)")
	fs.Usage = func() {
		fmt.Fprint(stderr, pingpongUsage)
		fmt.Fprintf(stderr, "\nRuns ibv_rc_pingpong's exchange over an RC connection between two simulated\n"+
			"devices and prints its summary. The global flag -profile may also come before\n"+
			"the command name: verbsim -profile rxe pingpong.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return cfg, tf, 0, false
		}
		return cfg, tf, 2, false
	}
	usage := func(format string, a ...any) (pingpong.Config, traceFlags, int, bool) {
		fmt.Fprintf(stderr, "verbsim pingpong: "+format+"\n", a...)
		fmt.Fprint(stderr, pingpongUsage)
		return cfg, tf, 2, false
	}
	if fs.NArg() > 0 {
		return usage("unexpected argument %q", fs.Arg(0))
	}
	if err := tf.check(); err != nil {
		return usage("%v", err)
	}
	cfg = pingpong.Config{Iters: *iters, Size: *size, Events: *events, RXDepth: *rx,
		Drop: *drop, Duplicate: *dup, Delay: *delay, Seed: *seed}
	switch {
	case *iters < 1:
		return usage("-n %d: at least one round trip", *iters)
	case *size < pingpong.HeaderSize:
		return usage("-s %d: at least %d bytes", *size, pingpong.HeaderSize)
	case *rx < 1:
		return usage("-r %d: at least one receive", *rx)
	case !(*drop >= 0 && *drop < 1):
		return usage("-drop %v: a probability below 1", *drop)
	case !(*dup >= 0 && *dup <= 1):
		return usage("-dup %v: a probability", *dup)
	case !(*delay >= 0 && *delay <= 1):
		return usage("-delay %v: a probability", *delay)
	}
	for m := verbs.MTU256; m <= verbs.MTU4096; m++ {
		if m.Bytes() == *mtu {
			cfg.MTU = m
		}
	}
	if cfg.MTU == 0 {
		return usage("-m %d: not an MTU (256, 512, 1024, 2048 or 4096)", *mtu)
	}
	p, err := lookupProfile(g.profile)
	if err != nil {
		return usage("%v", err)
	}
	cfg.Profile = p
	return cfg, tf, 0, true
}

// printSummary prints rc_pingpong's two lines, then what only a simulator
// can tell: virtual time, faults and how the completions were collected.
func printSummary(w io.Writer, r pingpong.Result) {
	c := r.Config
	addr := func(label string, s pingpong.SideStats, who string) {
		fmt.Fprintf(w, "  %-15s LID 0x%04x, QPN 0x%06x, device %s (%s)\n", label, s.LID, s.QPN, s.Device, who)
	}
	addr("local address:", r.Client, "client")
	addr("remote address:", r.Server, "server")
	usec := float64(r.Wall.Nanoseconds()) / 1e3
	fmt.Fprintf(w, "%d bytes in %.2f seconds = %.2f Mbit/sec\n", r.Bytes, usec/1e6, r.MbitPerSec())
	fmt.Fprintf(w, "%d iters in %.2f seconds = %.2f usec/iter\n", r.RoundTrips, usec/1e6, r.USecPerIter())
	vusec := float64(r.Virtual.Nanoseconds()) / 1e3
	fmt.Fprintf(w, "virtual time: %.2f seconds = %.2f usec/iter\n", vusec/1e6, vusec/float64(max(r.RoundTrips, 1)))
	st := r.Stats
	if c.Delay > 0 {
		fmt.Fprintf(w, "faults: drop %g, duplicate %g, delay %g: %d packets sent, %d dropped, %d duplicated, %d delayed, %d timers fired\n",
			c.Drop, c.Duplicate, c.Delay, st.Packets, st.Dropped, st.Duplicated, st.Delayed, st.Timers)
	} else {
		fmt.Fprintf(w, "faults: drop %g, duplicate %g: %d packets sent, %d dropped, %d duplicated, %d timers fired\n",
			c.Drop, c.Duplicate, st.Packets, st.Dropped, st.Duplicated, st.Timers)
	}
	if c.Events {
		fmt.Fprintf(w, "completion events: client %d (%d found the CQ empty), server %d (%d found the CQ empty)\n",
			r.Client.Events, r.Client.EmptyEvents, r.Server.Events, r.Server.EmptyEvents)
	} else {
		fmt.Fprintf(w, "busy polling: client %d polls (%d empty), server %d polls (%d empty)\n",
			r.Client.Polls, r.Client.EmptyPolls, r.Server.Polls, r.Server.EmptyPolls)
	}
	fmt.Fprintf(w, "data: %d messages checked, digest %x\n", r.Client.Received+r.Server.Received, r.Digest[:8])
	fmt.Fprint(w, r.Portability)
}
