package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/verbsim/verbsim/internal/benchkit"
	"github.com/verbsim/verbsim/sim"
)

// benchOptions are the flags of `verbsim bench`.
type benchOptions struct {
	rounds  int           // measured rounds per figure; the median is kept
	per     time.Duration // the time one measurement of one side takes
	qps     int           // idle QPs of the memory figure
	pairs   int           // connected pairs of the scale figure
	mrs     int           // extra MRs of the inline SEND figure
	write   string        // a file to write the report page to
	quick   bool          // tiny sizes and times, to check the command works
	only    string        // a regular expression: run the figures whose name matches
	scale   bool          // run only the scale section
	msgs    int           // messages per pair of the scale run
	workers int           // worker goroutines of the scale run
}

// kind says how a figure compares its subject with its floor.
type kind uint8

const (
	slower     kind = iota // subject/floor, as a factor
	throughput             // floor/subject, as a percentage of the floor's throughput
	memory                 // bytes per object, no floor
	schedules              // subject/floor, as a factor, the subject also as schedules per second
)

// figure is one row of the report.
type figure struct {
	name, target string
	kind         kind
	subject      func(o benchOptions, cfg sim.Config) (benchkit.Workload, error)
	floor        func(o benchOptions, cfg sim.Config) (benchkit.Workload, error)
	subjectLabel func(o benchOptions) string // what the subject ran, beside its figure; may be nil
	floorLabel   string                      // the floor's name, beside its figure
	allocs       bool                        // report the subject's allocations per op
	note         string                      // what limits the figure today, for the page
}

// noErr adapts a workload that cannot fail.
func noErr(w benchkit.Workload) (benchkit.Workload, error) { return w, nil }

// figures are the rows of issue #14's table, in its order.
var figures = []figure{
	{
		name: "RC SEND 64 B, post → poll of both completions", target: "≤ 4×", kind: slower, allocs: true,
		subject:    func(_ benchOptions, cfg sim.Config) (benchkit.Workload, error) { return benchkit.RCSend64(cfg) },
		floor:      func(benchOptions, sim.Config) (benchkit.Workload, error) { return noErr(benchkit.RingPushPop2()) },
		floorLabel: "two mutex-guarded ring push+pops of a WC",
		note: "Since the direct path (issue #14, Deliver 1), a lone one-packet RC request that meets an " +
			"idle engine with no fault, trace, Chooser or Remote, and a responder ready to accept it, is " +
			"carried out inside PostSend: no packet built, routed or queued, no ACK timer armed and " +
			"stopped, the payload copied once and the source resolved once " +
			"(sim/internal/qp/direct.go; the conditions and the rules they preserve in " +
			"docs/transport.md#the-direct-path; TestDirectMatchesEngine runs random workloads both ways, " +
			"in Auto and Background mode, and requires identical observations). Instruction counts " +
			"(scripts/instr-compare.sh with GOGC=off; on a shared machine this row's wall time swings " +
			"1.5×, instructions do not): 5,762 per message on the seam's main, 4,597 after the engine " +
			"pass (LID slice routing, QPN and MR-key caches, timers re-armed in place), 3,045 with the direct " +
			"path, 2,438 now (hot-path pass: compact work-queue slots, a verb entry that takes the lock " +
			"directly when no scheduler or sink is installed, completions built in place and written " +
			"once into the ring, the clock read only for CQs that ask for timestamps, one SGE resolved " +
			"without the list walk, the peer's route cached on the QP against topology and attribute " +
			"generations). What is left, per message (callgrind): PostSend 1,765, of which the direct " +
			"path 1,387 (the two SGE resolutions through qp.Host about 140 each, the send completion " +
			"234 and the receive completion 180, of which the CQ pushes about 80 each, the cached route " +
			"68, the copy 59, the rest its checks), the post's own checks and slot 195 and the verb " +
			"entry and exit about 110; PostRecv 221; the two polls about 390. Each is now a few dozen " +
			"lines of a few instructions: ≤ 4× (about 600 instructions for four verbs) would need " +
			"another shape altogether (no interface calls between the QP, the CQ and the host, one " +
			"function per verb), not one more lever.",
	},
	{
		name: "poll a batch of 16 (with the retire step the engine uses)", target: "≤ 2×", kind: slower, allocs: true,
		subject:    func(benchOptions, sim.Config) (benchkit.Workload, error) { return benchkit.PollBatch16() },
		floor:      func(benchOptions, sim.Config) (benchkit.Workload, error) { return noErr(benchkit.RingPop16()) },
		floorLabel: "ring pop of 16",
		note: "Poll copies from at most two contiguous runs of the ring, tells each run of one " +
			"work queue's completions once (a retirer's contract is cumulative), and clears only the " +
			"entry's retirer reference instead of zeroing it: instructions inside Poll for a batch of " +
			"16 went 1,169 → 567 (no retirer, this row) and 1,361 → 930 (work-queue retirers), a poll " +
			"of one 209 → 175 (callgrind, GOGC=off), which brings the row within its target. What is " +
			"left per entry is the copy out of a " +
			"72-byte ring entry and the loop; the lock and its deferred release are per call. A plain " +
			"[]verbs.WC ring with copy() measured 1.75× the floor in the issue's profile. The ex-CQ " +
			"iterator's read methods no longer lock (the iterator copies the current completion): " +
			"BenchmarkExPollBatch16 15,363 → 9,993 instructions per batch, refills included; " +
			"NextPoll still locks, as it must see completions pushed meanwhile.",
	},
	{
		name: "arm + completion + blocked get-event wake-up + ack", target: "≤ 1.5×", kind: slower, allocs: true,
		subject:    func(_ benchOptions, cfg sim.Config) (benchkit.Workload, error) { return benchkit.EventWakeup(cfg) },
		floor:      func(benchOptions, sim.Config) (benchkit.Workload, error) { return noErr(benchkit.ChannelPingPong()) },
		floorLabel: "goroutine ping-pong over a Go channel",
		note: "A round trip is two goroutine wake-ups, one each way, as in the floor (runtime trace: " +
			"2.00 per round trip in both; no blocking on the lock, no timer, no clock goroutine), and " +
			"seven takings of the domain lock (push, get_cq_event before it blocks and after its " +
			"wake-up, ack, arm, two polls). Since the seam a verb that gives the engine no work leaves " +
			"with an Unlock, and a GetEvent whose context cannot end blocks in a plain receive: 4,382 " +
			"instructions per round trip (5,228 on the seam's main). Now the verbs of the round trip " +
			"take the domain's fast paths inlined (TryEnter; FastLeave, then Unlock) and release the " +
			"lock without a defer, their traces and errors out of line; a read that found its queue " +
			"empty blocks through WaitNotReady without checking it again, a context whose Done is nil " +
			"is not asked again, and Wake compares objects by identity: 3,762 instructions against " +
			"the floor's 2,638 (BenchmarkEventWakeup and BenchmarkChannelPingPong in sim, " +
			"callgrind, GOGC=off), 1.66× → 1.43× in instructions. What is left of ours, about 1,100 " +
			"instructions: the push with its event and wake-up about 330, the blocked read about 370 " +
			"(the waiter table, Auto mode's look for a due timer about 45, the generic event FIFO), " +
			"the two polls about 190, ack and arm about 130. Handing the event straight to a blocked " +
			"reader (no FIFO, no relock after the wake-up) was tried and measured 3,690: the reader " +
			"must then give its waiter back without the lock, an atomic each way for the two the relock " +
			"cost, so it was not kept. Below this, the next step is the shape of the verbs themselves " +
			"(fewer layers between a handle and its engine object, a non-generic event queue).",
	},
	{
		name: "RDMA WRITE 1 MiB", target: "≥ 80%", kind: throughput,
		subject:    func(_ benchOptions, cfg sim.Config) (benchkit.Workload, error) { return benchkit.RDMAWrite(cfg, 1<<20) },
		floor:      func(benchOptions, sim.Config) (benchkit.Workload, error) { return noErr(benchkit.Copy(1 << 20)) },
		floorLabel: "copy() of 1 MiB",
		note: "The WRITE takes the direct path (docs/transport.md, \"The direct path\"): its 256 packets " +
			"(MTU 4096) and their ACK are settled inside the post verb, the payload copied once, " +
			"straight from the source into the target, as one memmove (the engine gathers every " +
			"packet at transmit, before the first is delivered, so a source that overlaps its " +
			"target reads the same), instead of into 256 packets and out of them (about 3 MiB " +
			"live). 28% → 97% of copy throughput in one run of `verbsim bench -only WRITE`. What is " +
			"left is the copy itself and the fixed cost of the verbs around it (post, poll). A WRITE " +
			"the engine must run (faults, trace, Manual mode, something in flight) still copies twice.",
	},
	{
		name: "RDMA READ 4 KiB", target: "≤ 4×", kind: slower,
		subject:    func(_ benchOptions, cfg sim.Config) (benchkit.Workload, error) { return benchkit.RDMARead(cfg, 4096) },
		floor:      func(benchOptions, sim.Config) (benchkit.Workload, error) { return noErr(benchkit.Copy(4096)) },
		floorLabel: "copy() of 4 KiB",
		note: "A READ of one packet takes the direct path of the RC SEND row: the target is copied once, " +
			"straight into the local buffer, instead of into a response packet and then out of it, and " +
			"the three events, two packets and the timer are gone: 4,770 → 2,363 instructions per READ " +
			"(scripts/instr-compare.sh, GOGC=off). What is left is the fixed cost of the verbs around it " +
			"(post, poll, the CQ push) and the copy itself; the hot-path pass of the RC SEND row took it " +
			"from 2,491 to 2,126 (scripts/instr-compare.sh, GOGC=off).",
	},
	{
		name: "idle RC QP with 16-deep queues", target: "≤ 2 KiB", kind: memory,
		subjectLabel: func(o benchOptions) string { return commas(int64(o.qps)) + " QPs" },
		note: "A work queue allocates its slots when first used (the first post), so an idle QP " +
			"holds its counters, attributes and timers only (1,681 B: the direct path's cached route and " +
			"the attribute generation added 113 B to 1,568). A QP once posted to holds its slot arrays: " +
			"a send slot keeps the request's fields packed (112 B; atomics', binds' and UD/XRC " +
			"destinations' fields in a side array made at the first request that needs them) instead " +
			"of a copy of the whole send request with a duplicated SGE slice header (248 B), and a " +
			"receive slot only its wr_id and SGE list (32 B): 2,816 B of slots with 16-deep queues and " +
			"one SGE, against 8,704 B before.",
	},
	{
		name: "RC SEND 64 B with many active pairs vs 1 pair", target: "≤ 1.5×", kind: slower,
		subject: func(o benchOptions, cfg sim.Config) (benchkit.Workload, error) {
			return benchkit.ManyPairs(cfg, o.pairs)
		},
		floor:        func(_ benchOptions, cfg sim.Config) (benchkit.Workload, error) { return benchkit.ManyPairs(cfg, 1) },
		subjectLabel: func(o benchOptions) string { return commas(int64(o.pairs)) + " pairs" },
		floorLabel:   "1 pair",
		note: "The same code runs per message (the direct path, as in the RC SEND row); the difference " +
			"is cache misses: each pair's QPs, slots and CQs are cold when its turn comes. The direct " +
			"path cut both sides (2.38 µs → about 1.6 µs with 10,000 pairs, 350 → about 210 ns with " +
			"one); the hot-path pass cut the lines a message touches (slots a third of their size, QP " +
			"numbers in a directly indexed table instead of a map, the route cached on the QP): 1.65 µs " +
			"→ 1.03 µs with 10,000 pairs and 215 → 193 ns with one, 7.7× → 5.4× (one run each, load " +
			"about 5 on 2 cores). What is left is the cold QP, slot, CQ and MR lines themselves, so ≤ 1.5× " +
			"is not in reach by cutting instructions: the next step is the layout of what one message " +
			"touches (the QP's hot fields and its first slots in one allocation, the CQ's ring entry), in as " +
			"few cache lines as possible; this VM exposes no hardware counters (perf) to count the misses, so " +
			"that work needs a machine that does.",
	},
	{
		name: "inline SEND with many MRs registered on the device", target: "O(1): ≈ 1×", kind: slower,
		subject: func(o benchOptions, cfg sim.Config) (benchkit.Workload, error) {
			return benchkit.InlineSendMRs(cfg, o.mrs)
		},
		floor:        func(_ benchOptions, cfg sim.Config) (benchkit.Workload, error) { return benchkit.InlineSendMRs(cfg, 0) },
		subjectLabel: func(o benchOptions) string { return commas(int64(o.mrs)) + " MRs" },
		floorLabel:   "same send with no MRs",
		note: "An inline SEND reads its payload by address, without a key (QP-35), so the device must " +
			"find the registration that covers the address. This used to scan every MR of the device " +
			"(3.7 ns per MR in the issue; 44.6 µs against 490 ns, 91×, in the first run of this command " +
			"with 10,000 MRs, load 2.3 on 2 cores). The device now keeps its placements sorted by address " +
			"and binary-searches them, so the row stays near 1× whatever the number of MRs.",
	},
}

// explorerFigure is the explorer's row, after issue #14's table: the issue
// asks for its schedules per second once the explorer exists, and names no
// target.
var explorerFigure = figure{
	name: "schedule explorer: one schedule of the recipe world (random walk)", target: "– (none set)", kind: schedules,
	subject:    func(benchOptions, sim.Config) (benchkit.Workload, error) { return benchkit.ExploreRecipe(), nil },
	floor:      func(benchOptions, sim.Config) (benchkit.Workload, error) { return benchkit.PlainRecipe(), nil },
	floorLabel: "a plain run of the same world (explore.RunPlain: Auto mode, Go's scheduler)",
	note: "The world is explore/patterns' \"recipe\": a producer adds 3 completions and a consumer runs " +
		"get, ack, re-arm, poll until empty, about 9 steps per schedule. Per schedule the explorer builds " +
		"the world's fabric in Manual mode, hands the turn from goroutine to goroutine over channels at " +
		"every verb (two hand-offs per step) and lists the engine's ready events; the plain run builds " +
		"the same fabric and lets Go schedule the goroutines. The fabric's creation dominates both " +
		"sides; the explorer's own overhead is about 1 µs per step (`go test -bench Explore ./explore` " +
		"reports it apart).",
}

func init() { figures = append(figures, explorerFigure) }

// result is a measured figure.
type result struct {
	fig              *figure
	subject, floor   float64 // ns per op, or bytes per QP for memory
	allocs           float64 // the subject's allocations per op, when measured
	subjectLabel     string
	hasAllocs        bool
	subjectN, floorN int
}

// benchCmd runs `verbsim bench`.
func benchCmd(g globalFlags, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("verbsim bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	g.register(fs)
	var o benchOptions
	fs.IntVar(&o.rounds, "rounds", 5, "measured rounds per figure; subject and floor alternate, and the median is kept")
	fs.DurationVar(&o.per, "time", 200*time.Millisecond, "how long one measurement of one side runs")
	fs.IntVar(&o.qps, "qps", 100_000, "idle QPs created for the memory figure")
	fs.IntVar(&o.pairs, "pairs", 10_000, "connected pairs for the many-pairs figure and the scale run")
	fs.BoolVar(&o.scale, "scale", false, "run only the scale run: -pairs pairs exchanging -msgs messages each, in Auto and Background mode, against 1 pair (not with -write or -only)")
	fs.IntVar(&o.msgs, "msgs", 50, "messages per pair in the scale run (rounded up to even: one SEND each way per round)")
	fs.IntVar(&o.workers, "workers", 4, "worker goroutines of the scale run, each owning a shard of the pairs")
	fs.IntVar(&o.mrs, "mrs", 10_000, "MRs registered for the inline SEND figure")
	fs.StringVar(&o.write, "write", "", "also write the report page (machine, load, command, table, notes) to this file, e.g. docs/performance.md")
	fs.BoolVar(&o.quick, "quick", false, "a smoke run: 1 round of 1ms, 200 QPs, 20 pairs, 100 MRs (the figures mean nothing)")
	fs.StringVar(&o.only, "only", "", "run only the figures whose name matches this regular expression, e.g. -only 'RC SEND 64 B, post' (not with -write)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: verbsim bench [-rounds n] [-time d] [-qps n] [-pairs n] [-mrs n] [-msgs n] [-workers n] [-quick] [-only regexp | -scale] [-write file]\n\n"+
			"Runs every figure of issue #14's performance table next to its floor, a plain-Go\n"+
			"operation measured in the same process, alternating subject and floor round by round,\n"+
			"and prints subject, floor, ratio and target for each (median of the rounds), then a\n"+
			"scale run: -pairs connected pairs exchanging messages in Auto and Background mode\n"+
			"against 1 pair (-scale runs only that). With\n"+
			"-write it also writes the report page: go run ./cmd/verbsim bench -write docs/performance.md\n\n"+
			"Flags:\n")
		fs.PrintDefaults()
	}
	p, code, ok := parseCommand(fs, args, &g, stderr)
	if !ok {
		return code
	}
	if o.quick {
		o.rounds, o.per, o.qps, o.pairs, o.mrs, o.msgs = 1, time.Millisecond, 200, 20, 100, 4
	}
	if o.rounds < 1 || o.per <= 0 || o.qps < 1 || o.pairs < 1 || o.mrs < 0 || o.msgs < 1 || o.workers < 1 {
		fmt.Fprintf(stderr, "verbsim: -rounds, -time, -qps, -pairs, -msgs and -workers must be positive, -mrs not negative\n")
		return 2
	}
	if o.scale && (o.write != "" || o.only != "") {
		fmt.Fprintf(stderr, "verbsim: -scale runs the scale run alone: not with -write or -only\n")
		return 2
	}
	cfg := sim.Config{Profile: p}
	if o.scale {
		return scaleCmd(o, cfg, stdout, stderr)
	}
	var only *regexp.Regexp
	if o.only != "" {
		var err error
		if only, err = regexp.Compile(o.only); err != nil {
			fmt.Fprintf(stderr, "verbsim: -only: %v\n", err)
			return 2
		}
		if o.write != "" {
			fmt.Fprintf(stderr, "verbsim: -only and -write: the page needs every figure\n")
			return 2
		}
	}
	loadBefore := loadAvg()
	// The memory figure runs last: its 100k QPs leave a heap behind that
	// slowed the timed figures after it by 3× in a trial run. Each figure
	// starts after a collection.
	results := make([]result, len(figures))
	var order []int
	for i, f := range figures {
		if f.kind != memory && (only == nil || only.MatchString(f.name)) {
			order = append(order, i)
		}
	}
	for i, f := range figures {
		if f.kind == memory && (only == nil || only.MatchString(f.name)) {
			order = append(order, i)
		}
	}
	if len(order) == 0 {
		fmt.Fprintf(stderr, "verbsim: -only %q matches no figure\n", o.only)
		return 2
	}
	for _, i := range order {
		fmt.Fprintf(stderr, "bench: %s\n", figures[i].name)
		runtime.GC()
		r, err := measure(&figures[i], o, cfg)
		if err != nil {
			fmt.Fprintf(stderr, "verbsim: bench %s: %v\n", figures[i].name, err)
			return 1
		}
		results[i] = r
	}
	var scale []scaleRow
	if only == nil {
		// Last: its 10,000 pairs leave a heap behind, as the memory figure's QPs do.
		var err error
		if scale, err = runScale(o, cfg, stderr); err != nil {
			fmt.Fprintf(stderr, "verbsim: bench scale run: %v\n", err)
			return 1
		}
	}
	loadAfter := loadAvg()
	table := renderTable(results, o)
	fmt.Fprintf(stdout, "load average before %s, after %s; %d round(s) of %v per side, median\n\n", loadBefore, loadAfter, o.rounds, o.per)
	fmt.Fprint(stdout, table)
	var scaleTable string
	if scale != nil {
		scaleTable = renderScale(scale)
		fmt.Fprintf(stdout, "\nScale run: %s\n\n%s", scaleHow(o), scaleTable)
	}
	if o.write != "" {
		cmd := "verbsim bench"
		if g.profile != "default" {
			cmd += " -profile " + g.profile
		}
		if len(args) > 0 {
			cmd += " " + strings.Join(args, " ")
		}
		page := renderPage(results, o, cmd, loadBefore, loadAfter, table, scaleTable)
		if err := os.WriteFile(o.write, []byte(page), 0o644); err != nil {
			fmt.Fprintf(stderr, "verbsim: %v\n", err)
			return 1
		}
	}
	return 0
}

// measure runs one figure: set-up of both sides, a calibration that also
// warms them up, then o.rounds rounds in which subject and floor alternate
// (which goes first alternates too); it keeps the medians.
func measure(f *figure, o benchOptions, cfg sim.Config) (result, error) {
	r := result{fig: f}
	if f.subjectLabel != nil {
		r.subjectLabel = f.subjectLabel(o)
	}
	if f.kind == memory {
		v, err := benchkit.IdleQPBytes(cfg, o.qps)
		r.subject = v
		return r, err
	}
	sub, err := f.subject(o, cfg)
	if err != nil {
		return r, err
	}
	defer closeWorkload(sub)
	flo, err := f.floor(o, cfg)
	if err != nil {
		return r, err
	}
	defer closeWorkload(flo)
	if r.subjectN, err = calibrate(sub.Op, o.per); err != nil {
		return r, err
	}
	if r.floorN, err = calibrate(flo.Op, o.per); err != nil {
		return r, err
	}
	var subs, flos []float64
	run := func(op benchkit.Op, n int, into *[]float64) error {
		d, err := op(n)
		*into = append(*into, float64(d.Nanoseconds())/float64(n))
		return err
	}
	for i := range o.rounds {
		first, second := func() error { return run(flo.Op, r.floorN, &flos) }, func() error { return run(sub.Op, r.subjectN, &subs) }
		if i%2 == 1 {
			first, second = second, first
		}
		if err := first(); err != nil {
			return r, err
		}
		if err := second(); err != nil {
			return r, err
		}
	}
	r.subject, r.floor = median(subs), median(flos)
	if f.allocs {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := sub.Op(r.subjectN); err != nil {
			return r, err
		}
		runtime.ReadMemStats(&after)
		r.allocs, r.hasAllocs = float64(after.Mallocs-before.Mallocs)/float64(r.subjectN), true
	}
	return r, nil
}

func closeWorkload(w benchkit.Workload) {
	if w.Close != nil {
		w.Close()
	}
}

// calibrate finds an iteration count for which op takes about per, growing
// it as the testing package does.
func calibrate(op benchkit.Op, per time.Duration) (int, error) {
	n := 1
	for {
		d, err := op(n)
		if err != nil {
			return 0, err
		}
		if d >= per || n >= 1<<30 {
			return n, nil
		}
		next := n * 100
		if d > 0 {
			next = int(float64(n) * 1.2 * float64(per) / float64(d))
		}
		n = max(min(next, 100*n), n+1)
	}
}

// median returns the median of xs (the mean of the middle two for an even
// count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// fmtNS prints a duration in nanoseconds with a unit suited to its size.
func fmtNS(ns float64) string {
	switch {
	case ns < 1e3:
		return fmt.Sprintf("%.1f ns", ns)
	case ns < 1e6:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	default:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	}
}

// renderTable prints the results as a Markdown table, the form both the
// terminal and the page use.
func renderTable(rs []result, o benchOptions) string {
	var b strings.Builder
	b.WriteString("| figure | subject | floor (same run) | ratio | target |\n|---|---|---|---|---|\n")
	for _, r := range rs {
		f := r.fig
		if f == nil {
			continue // not run (-only)
		}
		subject := fmtNS(r.subject)
		if r.subjectLabel != "" {
			subject += " (" + r.subjectLabel + ")"
		}
		var floor, ratio string
		switch f.kind {
		case slower:
			floor = f.floorLabel + ": " + fmtNS(r.floor)
			ratio = fmt.Sprintf("%.2f×", r.subject/r.floor)
		case throughput:
			floor = f.floorLabel + ": " + fmtNS(r.floor)
			ratio = fmt.Sprintf("%.0f%% of copy throughput", 100*r.floor/r.subject)
		case memory:
			subject = fmt.Sprintf("%s B/QP (%s)", commas(int64(r.subject+0.5)), r.subjectLabel)
			floor, ratio = "–", "–"
		case schedules:
			subject = fmt.Sprintf("%s per schedule (%s schedules/s)", fmtNS(r.subject), commas(int64(1e9/r.subject+0.5)))
			floor = f.floorLabel + ": " + fmtNS(r.floor)
			ratio = fmt.Sprintf("%.2f×", r.subject/r.floor)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", f.name, subject, floor, ratio, f.target)
	}
	var allocs []string
	for _, r := range rs {
		if r.hasAllocs {
			allocs = append(allocs, fmt.Sprintf("%.2f", r.allocs))
		}
	}
	fmt.Fprintf(&b, "| allocations per op on the post, poll and event rows (runtime.MemStats) | %s | – | – | 0 (keep) |\n", strings.Join(allocs, ", "))
	if o.quick {
		b.WriteString("\n(-quick: sizes and times are tiny; these figures mean nothing)\n")
	}
	return b.String()
}

// commas writes n with thousands separators.
func commas(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + commas(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// loadAvg returns the three load averages of /proc/loadavg, or "unknown".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// cpuModel returns the first "model name" of /proc/cpuinfo, or "unknown".
func cpuModel() string {
	fh, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// renderPage is docs/performance.md.
func renderPage(rs []result, o benchOptions, cmd, loadBefore, loadAfter, table, scaleTable string) string {
	var b strings.Builder
	b.WriteString("# Performance\n\n")
	b.WriteString("<!-- Generated by `verbsim bench -write docs/performance.md`; edit cmd/verbsim/bench.go, not this file. -->\n\n")
	b.WriteString("How fast verbsim is, measured as ratios against the machine's floors (issue #14). Every\n" +
		"figure is a subject, a verbsim operation on real objects, and a floor, the least a plain Go program\n" +
		"doing the same job must spend, run in the same process: subject and floor alternate in time,\n" +
		"round by round (which goes first alternates too), and each is the median of its rounds. Ratios,\n" +
		"not absolute times, are what carries from one machine and one load to another.\n\n")
	b.WriteString("Regenerate it on a fresh clone with:\n\n    go run ./cmd/verbsim bench -write docs/performance.md\n\n")
	b.WriteString("## Run\n\n")
	fmt.Fprintf(&b, "- Machine: %s, %d logical CPUs (GOMAXPROCS %d), %s/%s, %s\n", cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(&b, "- Load average (1, 5, 15 min): %s before, %s after\n", loadBefore, loadAfter)
	fmt.Fprintf(&b, "- Command: `%s`\n", cmd)
	fmt.Fprintf(&b, "- %d round(s) of %v per side per figure; %d idle QPs, %d pairs, %d MRs; scale run: %d pairs, %d messages per pair, %d workers\n", o.rounds, o.per, o.qps, o.pairs, o.mrs, o.pairs, o.msgs+o.msgs%2, o.workers)
	fmt.Fprintf(&b, "- Date: %s\n\n", time.Now().UTC().Format("2006-01-02"))
	b.WriteString("A loaded machine (load above its core count) slows subject and floor alike but not evenly:\n" +
		"treat ratios measured under load as rough.\n\n")
	b.WriteString("## Figures\n\n")
	b.WriteString(table)
	b.WriteString("\n## What limits each figure today\n\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "**%s.** %s\n\n", r.fig.name, r.fig.note)
	}
	b.WriteString("**Allocations.** The steady-state post, poll and event paths allocate nothing; unit tests\n" +
		"assert it with testing.AllocsPerRun (sim/mr_test.go, sim/internal/cq/bench_test.go); the figure above is\n" +
		"the process-wide malloc count during the subject's run, divided by its iterations.\n")
	if scaleTable != "" {
		b.WriteString("\n## Scale run\n\n")
		b.WriteString("Not a timed test and not a ratio against a floor: how verbsim holds up with many connections\n" +
			"at once (issue #14, Deliver 3), run after the figures above in the same process. ")
		b.WriteString(scaleHow(o) + "\n\n")
		b.WriteString(scaleTable)
		b.WriteString("\n" + scaleNote + "\n")
	}
	return b.String()
}
