package scenario

// engine.go and state.go are the only files of the package that call into
// package sim: the verbs, the engine controls, and the read-only views the
// timeline is drawn from.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// Profiles returns the names of the built-in profiles, default first.
func Profiles() []string {
	var out []string
	for _, p := range sim.Profiles() {
		out = append(out, p.Name)
	}
	return out
}

// ProfileSummary describes a built-in profile in plain words, or "" for an
// unknown name.
func ProfileSummary(name string) string {
	switch name {
	case "default":
		return "the rdma-core man pages"
	case "rxe":
		return "Linux soft-RoCE (rxe), where it reads a rule differently"
	}
	return ""
}

func lookupProfile(name string) (sim.Profile, bool) {
	for _, p := range sim.Profiles() {
		if p.Name == name {
			return p, true
		}
	}
	return sim.Profile{}, false
}

// objects are the named objects of a run.
type objects struct {
	ctx map[string]*sim.Context
	pd  map[string]*sim.PD
	ch  map[string]*sim.CompChannel
	cq  map[string]*sim.CQ
	mr  map[string]*mrObj
	qp  map[string]*qpObj
	srq map[string]*sim.SRQ
	ah  map[string]*sim.AH
	// cqDev is each CQ's device, to tell apart QPs of equal numbers on
	// different devices.
	cqDev map[string]string
	// cqChan is each CQ's completion channel, "" for none.
	cqChan map[string]string
	kind   map[string]string // name -> kind, for the one namespace of names
	// order lists the names in creation order, for the state panel.
	order []string
}

type mrObj struct {
	mr  *sim.MR
	pd  string
	buf []byte
}

type qpObj struct {
	q   *sim.QP
	pd  string
	dev string
	// unsignaled holds the wr_ids posted without SIGNALED on a QP without
	// sq_sig_all, to explain their flush completions (FLUSH-04).
	unsignaled map[uint64]bool
	sigAll     bool
}

// interp runs one script under one profile.
type interp struct {
	file    string
	profile sim.Profile
	f       *sim.Fabric
	log     *trace.Log
	seen    int // trace records already shown
	obj     objects
	alias   map[string]string      // trace names -> scenario names
	asyncRd map[string][]asyncRead // every async event read, per context
	// prevRing is each CQ's length before the step, to tell a poll that
	// found completions from one that found none.
	// mkFabric makes the fabric instead of sim.NewFabric: an explorer's
	// world (threads.go). script is the script run, for the explore step.
	mkFabric func(sim.Config) (*sim.Fabric, error)
	script   *Script
	notes    []string // rule IDs the command itself explains
	lines    []string // what the command returned
	err      error    // the engine error of the command, if any
}

// scriptError is a mistake of the script that only shows at run time (a
// name never created). It stops the run with file:line.
type scriptError struct{ msg string }

func (e *scriptError) Error() string { return e.msg }

func newInterp(file string, p sim.Profile) *interp {
	return &interp{
		file: file, profile: p,
		obj: objects{ctx: map[string]*sim.Context{}, pd: map[string]*sim.PD{}, ch: map[string]*sim.CompChannel{},
			cq: map[string]*sim.CQ{}, mr: map[string]*mrObj{}, qp: map[string]*qpObj{}, srq: map[string]*sim.SRQ{},
			ah: map[string]*sim.AH{}, cqDev: map[string]string{}, cqChan: map[string]string{}, kind: map[string]string{}},
		alias:   map[string]string{},
		asyncRd: map[string][]asyncRead{},
	}
}

func (in *interp) close() {
	if in.f != nil {
		in.f.Close()
	}
}

// newFabric makes the fabric a script runs on.
func (in *interp) newFabric(devices []string, manual bool, seed uint64, dev func(*sim.DeviceConfig)) error {
	cfg := sim.Config{Profile: in.profile, Seed: seed, Trace: &trace.Log{}}
	if manual {
		cfg.Mode = sim.Manual
	}
	for _, d := range devices {
		c := sim.DeviceConfig{Name: d}
		if dev != nil {
			dev(&c)
		}
		cfg.Devices = append(cfg.Devices, c)
	}
	mk := sim.NewFabric
	if in.mkFabric != nil {
		mk = in.mkFabric
	}
	f, err := mk(cfg)
	if err != nil {
		return err
	}
	in.f, in.log = f, cfg.Trace
	return nil
}

// args gives typed access to a step's arguments.
type args struct {
	st  *Step
	in  *interp
	err error
}

func (a *args) get(k string) (Arg, bool) {
	for _, x := range a.st.Args {
		if !x.Bare && x.Key == k {
			return x, true
		}
	}
	return Arg{}, false
}

func (a *args) has(flag string) bool {
	for _, x := range a.st.Args {
		if x.Bare && x.Key == flag {
			return true
		}
	}
	return false
}

// name returns the bare word that names a new object.
func (a *args) name() string {
	c := commandTable[a.st.Verb]
	for _, x := range a.st.Args {
		if x.Bare && !slices.Contains(c.flags, x.Key) {
			return x.Key
		}
	}
	return ""
}

func (a *args) str(k, def string) string {
	if x, ok := a.get(k); ok {
		return x.Vals[0]
	}
	return def
}

func (a *args) num(k string, def uint64) uint64 {
	if x, ok := a.get(k); ok {
		n, _ := parseNum(x.Vals[0]) // checked by Parse
		return n
	}
	return def
}

// int reads a key that may be negative (intKey).
func (a *args) int(k string, def int64) int64 {
	if x, ok := a.get(k); ok {
		n, _ := strconv.ParseInt(x.Vals[0], 0, 64) // checked by Parse
		return n
	}
	return def
}

func (a *args) nums(k string) []uint64 {
	x, _ := a.get(k)
	var out []uint64
	for _, v := range x.Vals {
		n, _ := parseNum(v)
		out = append(out, n)
	}
	return out
}

func (a *args) list(k string) []string {
	x, _ := a.get(k)
	return x.Vals
}

// ref looks up the object of kind that key k names; an unknown name is a
// script error.
func (a *args) ref(k, kind string) string {
	n := a.str(k, "")
	if n == "" || a.err != nil {
		return n
	}
	if got, ok := a.in.obj.kind[n]; !ok || got != kind {
		var have []string
		for _, m := range a.in.obj.order {
			if a.in.obj.kind[m] == kind {
				have = append(have, m)
			}
		}
		what := "nothing of that kind yet"
		if len(have) > 0 {
			what = "the " + kind + "s so far: " + strings.Join(have, ", ")
		}
		a.err = &scriptError{fmt.Sprintf("%s:%d: %s=%s: no %s of that name (%s)", a.in.file, a.st.Line, k, n, kind, what)}
	}
	return n
}

// define registers a new object's name.
func (in *interp) define(st *Step, name, kind string) error {
	if k, ok := in.obj.kind[name]; ok {
		return &scriptError{fmt.Sprintf("%s:%d: the name %s is taken (a %s)", in.file, st.Line, name, k)}
	}
	in.obj.kind[name] = kind
	in.obj.order = append(in.obj.order, name)
	return nil
}

// undefine frees the name of an object whose create failed.
func (in *interp) undefine(name string) {
	delete(in.obj.kind, name)
	if i := slices.Index(in.obj.order, name); i >= 0 {
		in.obj.order = slices.Delete(in.obj.order, i, i+1)
	}
}

// aliasNewest maps the trace name of the object a create verb just made
// (the newest record of a successful call of verb) to "kind name".
func (in *interp) aliasNewest(verb, label string) {
	recs := in.log.Records()
	for i := len(recs) - 1; i >= in.seen && i >= 0; i-- {
		if r := &recs[i]; r.Kind == trace.KindVerb && r.Name == verb && r.Errno == 0 {
			in.alias[recs[i].Object] = label
			return
		}
	}
}

func (in *interp) say(format string, args ...any) {
	in.lines = append(in.lines, fmt.Sprintf(format, args...))
}

func (in *interp) note(ids ...string) { in.notes = append(in.notes, ids...) }

// verbResult records a verb's outcome: "ok" or its errno and message.
func (in *interp) verbResult(call string, err error) {
	if err == nil {
		in.say("%s = ok", call)
		return
	}
	in.err = err
	in.say("%s failed: %s", call, describeErr(err))
}

// describeErr renders an engine error as "EINVAL: message".
func describeErr(err error) string {
	var e *verr.Error
	if errors.As(err, &e) {
		return verr.Name(e.Errno) + ": " + e.Reason
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return verr.Name(errno) + ": " + err.Error()
	}
	return err.Error()
}

// exec runs one step's command.
func (in *interp) exec(st *Step) error {
	in.lines, in.notes, in.err = nil, nil, nil
	a := &args{st: st, in: in}
	if in.f == nil && st.Verb != "fabric" {
		if err := in.newFabric([]string{"a", "b"}, false, 0, nil); err != nil {
			return err
		}
		in.say("(no fabric command: devices a and b, auto mode)")
	}
	var err error
	switch st.Verb {
	case "fabric":
		err = in.doFabric(st, a)
	case "step":
		in.say("step: ran an event: %v", in.f.Step())
	case "stabilize":
		in.say("stabilize: %d event(s) ran", in.f.Stabilize())
	case "tick":
		n := a.num("ns", 0) + a.num("us", 0)*1000 + a.num("ms", 0)*1000000
		in.f.Tick(n)
		in.say("the clock moved %s", fmtDur(n))
	case "run":
		limit := a.num("ms", 10000) * 1000000
		start := in.f.Now()
		idle := in.f.RunUntilIdle(start + limit)
		if idle {
			in.say("ran until idle: %s of virtual time passed", fmtDur(in.f.Now()-start))
		} else {
			in.say("stopped after %s: events still pending", fmtDur(in.f.Now()-start))
		}
	case "advance":
		start := in.f.Now()
		if in.f.AdvanceToNext() {
			in.say("advanced %s to the next timer or delayed packet", fmtDur(in.f.Now()-start))
		} else {
			in.say("nothing pending: the clock stays")
		}
	case "faults":
		x := sim.Faults{Drop: a.prob("drop"), Duplicate: a.prob("duplicate"), Delay: a.prob("delay")}
		in.verbResult("set fabric-wide faults", in.f.SetFaults(x))
	case "fault":
		err = in.doFault(st, a)
	case "force_status":
		q := a.ref("qp", "qp")
		if a.err != nil {
			return a.err
		}
		in.verbResult(fmt.Sprintf("force status %s on wr_id %d", a.str("status", ""), a.num("wr_id", 0)),
			in.f.ForceStatus(in.obj.qp[q].q, a.num("wr_id", 0), a.has("recv"), statusOf(a.str("status", ""))))
	case "fatal":
		q := a.ref("qp", "qp")
		if a.err != nil {
			return a.err
		}
		in.verbResult("inject a fatal error into qp "+q, in.f.InjectFatal(in.obj.qp[q].q))
		in.note("ASYNC-08")
	case "srq_error":
		s := a.ref("srq", "srq")
		if a.err != nil {
			return a.err
		}
		in.verbResult("inject an error into srq "+s, in.f.InjectSRQError(in.obj.srq[s]))
	case "link":
		d, derr := in.f.Device(a.str("dev", ""))
		if derr != nil {
			in.verbResult("link", derr)
			break
		}
		in.verbResult(fmt.Sprintf("port %d of %s goes %s", a.num("port", 1), a.str("dev", ""), map[bool]string{true: "up", false: "down"}[a.has("up")]),
			d.SetPortState(uint8(a.num("port", 1)), a.has("up")))
	case "complete":
		err = in.doComplete(st, a)
	case "thread", "daemon", "explore", "loop", "end", "exit_if", "drain_cq":
		err = threadHandlers[st.Verb](in, st, a)
	case "resize_cq", "hold", "release":
		err = in.doCQ(st, a)
	default:
		err = in.doVerb(st, a)
	}
	if err == nil {
		err = a.err
	}
	return err
}

func (a *args) prob(k string) float64 {
	p, _ := strconv.ParseFloat(a.str(k, "0"), 64)
	return p
}

func (in *interp) doFabric(st *Step, a *args) error {
	if in.f != nil {
		return &scriptError{fmt.Sprintf("%s:%d: fabric must be the first command, and comes once", in.file, st.Line)}
	}
	devs := a.list("devices")
	if len(devs) == 0 {
		devs = []string{"a", "b"}
	}
	manual := a.str("mode", "auto") == "manual"
	if err := in.setReadings(a); err != nil {
		in.verbResult("create the fabric", err)
		return nil
	}
	if err := in.newFabric(devs, manual, a.num("seed", 0), in.limits(a)); err != nil {
		in.verbResult("create the fabric", err)
		return nil
	}
	mode := "auto: after each verb the engine runs until nothing is ready; timers wait for tick, run or advance"
	if manual {
		mode = "manual: nothing moves until step, stabilize, tick, run or advance"
	}
	in.say("devices %s; mode %s", strings.Join(devs, ", "), mode)
	if len(a.list("readings")) > 0 {
		in.say("readings: %v, whatever the profile says", in.profile.Readings)
	}
	return nil
}

func (in *interp) doFault(st *Step, a *args) error {
	pf := sim.PacketFault{Skip: int(a.num("skip", 0)), Count: int(a.num("count", 0)), Delay: a.num("delay_ns", 0)}
	switch a.str("action", "") {
	case "drop":
		pf.Action = sim.FaultDrop
	case "delay":
		pf.Action = sim.FaultDelay
	case "duplicate":
		pf.Action = sim.FaultDuplicate
	}
	var match []func(sim.Packet) bool
	var what []string
	if n := a.ref("from", "qp"); n != "" {
		match = append(match, sim.FromQP(in.obj.qp[n].q))
		what = append(what, "from qp "+n)
	}
	if n := a.ref("to", "qp"); n != "" {
		match = append(match, sim.ToQP(in.obj.qp[n].q))
		what = append(what, "to qp "+n)
	}
	if a.err != nil {
		return a.err
	}
	if ks := a.list("kind"); len(ks) > 0 {
		var kinds []trace.PacketKind
		for _, k := range ks {
			kinds = append(kinds, trace.PacketKind(slices.Index(pktKinds, k)))
		}
		match = append(match, sim.OfKind(kinds...))
		what = append(what, "of kind "+strings.Join(ks, "/"))
	}
	if len(match) > 0 {
		pf.Match = sim.All(match...)
	}
	count := "every packet"
	if pf.Count > 0 {
		count = fmt.Sprintf("%d packet(s)", pf.Count)
	}
	if len(what) == 0 {
		what = []string{"on the whole fabric"}
	}
	_, err := in.f.InjectPacketFault(pf)
	in.verbResult(fmt.Sprintf("fault: %s %s %s, after skipping %d", a.str("action", ""), count, strings.Join(what, " "), pf.Skip), err)
	return nil
}

func statusOf(name string) verbs.WCStatus {
	if name == "success" {
		return verbs.WCSuccess
	}
	for s := verbs.WCStatus(0); s.Valid(); s++ {
		if strings.EqualFold(strings.TrimPrefix(s.Name(), "IBV_WC_"), name) {
			return s
		}
	}
	return verbs.WCGeneralErr
}

func (in *interp) doComplete(st *Step, a *args) error {
	c := a.ref("cq", "cq")
	if a.err != nil {
		return a.err
	}
	w := verbs.WC{WRID: a.num("wr_id", 0), Status: statusOf(a.str("status", "success"))}
	switch a.str("opcode", "recv") {
	case "recv":
		w.Opcode, w.ByteLen = verbs.WCRecv, 64
	case "recv_imm":
		w.Opcode, w.ByteLen = verbs.WCRecvRDMAWithImm, 64
	case "send":
		w.Opcode = verbs.WCSend
	case "write":
		w.Opcode = verbs.WCRDMAWrite
	case "read":
		w.Opcode = verbs.WCRDMARead
	}
	if w.Status != verbs.WCSuccess {
		w.ByteLen = 0
	}
	completeFields(&w, a)
	over, err := in.obj.cq[c].Push(w, a.has("solicited"))
	sol := ""
	if a.has("solicited") {
		sol = " with the solicited bit"
	}
	if err != nil {
		in.verbResult("(adapter) completion", err)
		return nil
	}
	if over {
		in.say("(adapter) wr_id %d does not fit: the CQ overran", w.WRID)
		return nil
	}
	in.say("(adapter) writes a completion into cq %s: wr_id %d %s %s%s", c, w.WRID, opName(w.Opcode), statusName(w.Status), sol)
	return nil
}

// doVerb runs the libibverbs verbs.
func (in *interp) doVerb(st *Step, a *args) error {
	name := a.name()
	if commandTable[st.Verb].name {
		if err := in.define(st, name, kindOf(st.Verb)); err != nil {
			return err
		}
		defer func() {
			if in.err != nil { // a create that failed names nothing
				in.undefine(name)
			}
		}()
	}
	switch st.Verb {
	case "open_device":
		d, err := in.f.Device(a.str("dev", in.f.Devices()[0].Name()))
		if err != nil {
			in.verbResult("ibv_open_device", err)
			return nil
		}
		c, err := d.Open()
		in.verbResult("ibv_open_device("+d.Name()+")", err)
		if err == nil {
			in.obj.ctx[name] = c
			in.aliasNewest("open_device", "ctx "+name)
		}
	case "alloc_pd":
		c := a.ref("ctx", "ctx")
		if a.err != nil {
			return a.err
		}
		pd, err := in.obj.ctx[c].AllocPD()
		in.verbResult("ibv_alloc_pd", err)
		if err == nil {
			in.obj.pd[name] = pd
			in.aliasNewest("alloc_pd", "pd "+name)
		}
	case "create_comp_channel":
		c := a.ref("ctx", "ctx")
		if a.err != nil {
			return a.err
		}
		ch, err := in.obj.ctx[c].CreateCompChannel()
		in.verbResult("ibv_create_comp_channel", err)
		if err == nil {
			in.obj.ch[name] = ch
			in.aliasNewest("create_comp_channel", "channel "+name)
		}
	case "create_cq":
		c, chName := a.ref("ctx", "ctx"), a.ref("channel", "channel")
		if a.err != nil {
			return a.err
		}
		var ch *sim.CompChannel
		if chName != "" {
			ch = in.obj.ch[chName]
		}
		want := max(min(a.int("cqe", 0), 1<<31), -1<<31)
		vec := int(max(min(a.int("vector", 0), 1<<31), -1<<31))
		q, err := in.obj.ctx[c].CreateCQ(int(want), name, ch, vec)
		in.verbResult(fmt.Sprintf("ibv_create_cq(cqe=%d%s)", want, vectorArg(vec)), err)
		if err == nil {
			in.obj.cq[name] = q
			in.obj.cqDev[name] = in.obj.ctx[c].Device().Name()
			in.obj.cqChan[name] = chName
			in.aliasNewest("create_cq", "cq "+name)
			if int64(q.CQE()) != want {
				in.say("cq->cqe = %d: the capacity may be more than asked for", q.CQE())
				in.note("CQ-02")
			}
		}
	case "reg_mr":
		p := a.ref("pd", "pd")
		if a.err != nil {
			return a.err
		}
		acc := verbs.AccessLocalWrite
		if xs := a.list("access"); len(xs) > 0 {
			acc = 0
			for _, x := range xs {
				acc |= map[string]verbs.AccessFlags{"local_write": verbs.AccessLocalWrite, "remote_write": verbs.AccessRemoteWrite,
					"remote_read": verbs.AccessRemoteRead, "remote_atomic": verbs.AccessRemoteAtomic}[x]
			}
		}
		buf := make([]byte, min(a.num("size", 4096), 1<<24))
		mr, err := in.obj.pd[p].RegMR(buf, acc)
		in.verbResult(fmt.Sprintf("ibv_reg_mr(%d bytes, %v)", len(buf), acc), err)
		if err == nil {
			in.obj.mr[name] = &mrObj{mr: mr, pd: p, buf: buf}
			in.aliasNewest("reg_mr", "mr "+name)
		}
	case "create_srq":
		p := a.ref("pd", "pd")
		if a.err != nil {
			return a.err
		}
		s, err := in.obj.pd[p].CreateSRQ(sim.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: uint32(min(a.num("max_wr", 8), 1<<20)), MaxSGE: 1,
			SRQLimit: uint32(min(a.num("limit", 0), 1<<20))}})
		in.verbResult("ibv_create_srq", err)
		if err == nil {
			in.obj.srq[name] = s
			in.aliasNewest("create_srq", "srq "+name)
		}
	case "create_qp":
		return in.doCreateQP(st, a, name)
	case "create_ah":
		p, d := a.ref("pd", "pd"), a.ref("dest", "qp")
		if a.err != nil {
			return a.err
		}
		dev := in.obj.pd[p].Context().Device().Name()
		if d != "" {
			dev = in.obj.qp[d].dev
		}
		ah, err := in.obj.pd[p].CreateAH(verbs.AHAttr{DLID: in.lidOf(dev), PortNum: 1})
		in.verbResult(fmt.Sprintf("ibv_create_ah(dlid %d: port 1 of %s)", in.lidOf(dev), dev), err)
		if err == nil {
			in.obj.ah[name] = ah
			in.aliasNewest("create_ah", "ah "+name)
			in.note("PD-03")
		}
	case "modify_srq":
		n := a.ref("srq", "srq")
		if a.err != nil {
			return a.err
		}
		lim := uint32(min(a.num("limit", 0), 1<<31))
		err := in.obj.srq[n].Modify(&verbs.SRQAttr{SRQLimit: lim}, verbs.SRQLimit)
		in.verbResult(fmt.Sprintf("ibv_modify_srq(%s, srq_limit=%d, IBV_SRQ_LIMIT)", n, lim), err)
		if err == nil {
			in.say("armed: the event comes when taking a WR leaves fewer than %d queued", lim)
		}
		in.note("SRQ-04", "SRQ-06")
	case "query_srq":
		n := a.ref("srq", "srq")
		if a.err != nil {
			return a.err
		}
		attr, err := in.obj.srq[n].Query()
		if err != nil {
			in.verbResult("ibv_query_srq("+n+")", err)
			return nil
		}
		in.say("ibv_query_srq(%s) = ok: max_wr %d, max_sge %d, srq_limit %d", n, attr.MaxWR, attr.MaxSGE, attr.SRQLimit)
		if attr.SRQLimit == 0 {
			in.say("srq_limit 0: the limit is not armed (never armed, or it has fired)")
			in.note("SRQ-05")
		}
	case "destroy_ah":
		n := a.ref("ah", "ah")
		if a.err != nil {
			return a.err
		}
		in.verbResult("ibv_destroy_ah("+n+")", in.obj.ah[n].Destroy())
	case "dereg_mr":
		n := a.ref("mr", "mr")
		if a.err != nil {
			return a.err
		}
		in.verbResult("ibv_dereg_mr("+n+")", in.obj.mr[n].mr.Dereg())
	case "dealloc_pd":
		n := a.ref("pd", "pd")
		if a.err != nil {
			return a.err
		}
		in.verbResult("ibv_dealloc_pd("+n+")", in.obj.pd[n].Dealloc())
	case "modify_qp":
		return in.doModify(st, a)
	case "connect":
		x, y := a.ref("a", "qp"), a.ref("b", "qp")
		if a.err != nil {
			return a.err
		}
		o := sim.ConnectOptions{Timeout: uint8(a.num("timeout", 0)), RetryCnt: uint8(a.num("retry_cnt", 0)),
			RNRRetry: uint8(a.num("rnr_retry", 0)), MinRNRTimer: uint8(a.num("min_rnr_timer", 0))}
		if _, ok := a.get("retry_cnt"); ok {
			o.NoDefaults = true
			o = fillConnectDefaults(o, a)
		} else if _, ok := a.get("rnr_retry"); ok {
			o.NoDefaults = true
			o = fillConnectDefaults(o, a)
		}
		in.verbResult(fmt.Sprintf("connect %s and %s: RESET→INIT→RTR→RTS on both", x, y), sim.Connect(in.obj.qp[x].q, in.obj.qp[y].q, o))
	case "post_send":
		return in.doPostSend(st, a)
	case "post_recv", "post_srq_recv":
		return in.doPostRecv(st, a)
	case "poll_cq":
		c := a.ref("cq", "cq")
		if a.err != nil {
			return a.err
		}
		n := int(min(a.num("n", 16), 1024))
		buf := make([]verbs.WC, n)
		poll, call := in.obj.cq[c].Poll, fmt.Sprintf("ibv_poll_cq(%s, %d)", c, n)
		if a.has("ex") {
			poll = func(wcs []verbs.WC) (int, error) { return pollEx(in.obj.cq[c], wcs) }
			call = fmt.Sprintf("the poll iterator of %s (ibv_start_poll, ibv_next_poll, ibv_end_poll), up to %d", c, n)
		}
		got, err := poll(buf)
		if err != nil {
			in.verbResult(call, err)
			return nil
		}
		if got == 0 {
			in.say("%s = 0: the CQ is empty", call)
			in.note("CQ-14")
			return nil
		}
		in.say("%s = %d, oldest first:", call, got)
		for _, w := range buf[:got] {
			in.say("  %s", in.describeWC(in.obj.cqDev[c], w))
			in.explainWC(in.obj.cqDev[c], w)
		}
		in.note("CQ-17")
	case "req_notify_cq":
		c := a.ref("cq", "cq")
		if a.err != nil {
			return a.err
		}
		q := in.obj.cq[c]
		before := q.Armed()
		sol := a.has("solicited")
		err := q.ReqNotify(sol)
		in.verbResult(fmt.Sprintf("ibv_req_notify_cq(%s, solicited_only=%d)", c, map[bool]int{false: 0, true: 1}[sol]), err)
		if err != nil {
			return nil
		}
		after := q.Armed()
		switch {
		case before == sim.CQArmNext && sol:
			in.say("the CQ stays armed for next: next outranks solicited")
			in.note("NOTIFY-07")
		case before == sim.CQArmSolicited && !sol:
			in.note("NOTIFY-07")
		case before == after && before != sim.CQDisarmed:
			in.note("NOTIFY-08")
		}
		if q.Len() > 0 {
			in.say("%d completion(s) already in the CQ: they will not fire this arm", q.Len())
			in.note("NOTIFY-02")
		}
		if sol {
			in.note("NOTIFY-04")
		} else {
			in.note("NOTIFY-03")
		}
	case "get_cq_event":
		n := a.ref("channel", "channel")
		if a.err != nil {
			return a.err
		}
		q, ctx, err := in.obj.ch[n].TryGetEvent()
		if err != nil {
			in.verbResult("ibv_get_cq_event("+n+")", err)
			if errors.Is(err, syscall.EAGAIN) {
				in.say("(a blocking read would sleep here)")
				in.note("CHAN-04")
			}
			return nil
		}
		in.say("ibv_get_cq_event(%s) = ok: cq %v (cq_context %q); the event carries no completion", n, in.cqName(q), fmt.Sprint(ctx))
		in.note("CHAN-10", "CHAN-07")
		if q.Len() == 0 {
			in.say("the CQ is empty: an event with nothing to poll is legal")
			in.note("NOTIFY-13")
		}
	case "ack_cq_events":
		c := a.ref("cq", "cq")
		if a.err != nil {
			return a.err
		}
		k := max(min(a.int("n", 1), 1<<20), -1<<20)
		in.verbResult(fmt.Sprintf("ibv_ack_cq_events(%s, %d)", c, k), in.obj.cq[c].AckEvents(int(k)))
		in.note("CHAN-07", "CHAN-12")
	case "get_async_event":
		c := a.ref("ctx", "ctx")
		if a.err != nil {
			return a.err
		}
		ev, err := in.obj.ctx[c].TryGetAsyncEvent()
		if err != nil {
			in.verbResult("ibv_get_async_event("+c+")", err)
			return nil
		}
		in.asyncRd[c] = append(in.asyncRd[c], asyncRead{ev: ev})
		in.say("ibv_get_async_event(%s) = ok: %s", c, in.describeAsync(ev))
		in.note("ASYNC-05")
		switch ev.Type() {
		case verbs.EventCQErr:
			in.note("ASYNC-07")
		case verbs.EventQPFatal:
			in.note("ASYNC-08")
		case verbs.EventQPAccessErr, verbs.EventQPReqErr:
			in.note("ASYNC-11", "XFER-15")
		case verbs.EventSRQLimitReached:
			in.note("SRQ-04", "ASYNC-15")
		case verbs.EventQPLastWQEReached:
			in.note("ASYNC-14")
		}
	case "ack_async_event":
		c := a.ref("ctx", "ctx")
		if a.err != nil {
			return a.err
		}
		return in.ackAsync(c, a)
	case "destroy_cq":
		c := a.ref("cq", "cq")
		if a.err != nil {
			return a.err
		}
		wait, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		err := in.obj.cq[c].DestroyContext(wait)
		cancel()
		in.verbResult("ibv_destroy_cq("+c+")", err)
		if errors.Is(err, syscall.EINTR) {
			in.say("(libibverbs would wait for ever here; verbsim gave up after 10 ms of wall time)")
		}
	case "destroy_qp":
		q := a.ref("qp", "qp")
		if a.err != nil {
			return a.err
		}
		in.verbResult("ibv_destroy_qp("+q+")", in.obj.qp[q].q.Destroy())
	case "destroy_srq":
		s := a.ref("srq", "srq")
		if a.err != nil {
			return a.err
		}
		in.verbResult("ibv_destroy_srq("+s+")", in.obj.srq[s].Destroy())
	case "destroy_comp_channel":
		n := a.ref("channel", "channel")
		if a.err != nil {
			return a.err
		}
		in.verbResult("ibv_destroy_comp_channel("+n+")", in.obj.ch[n].Destroy())
	}
	return nil
}

func fillConnectDefaults(o sim.ConnectOptions, a *args) sim.ConnectOptions {
	o.Timeout = uint8(a.num("timeout", 14))
	o.RetryCnt = uint8(a.num("retry_cnt", 7))
	o.RNRRetry = uint8(a.num("rnr_retry", 7))
	o.MinRNRTimer = uint8(a.num("min_rnr_timer", 12))
	o.RDAtomic = 16
	o.Access = verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic
	return o
}

func kindOf(verb string) string {
	switch verb {
	case "open_device":
		return "ctx"
	case "alloc_pd":
		return "pd"
	case "create_comp_channel":
		return "channel"
	case "create_cq":
		return "cq"
	case "reg_mr":
		return "mr"
	case "create_srq":
		return "srq"
	case "create_qp":
		return "qp"
	case "create_ah":
		return "ah"
	}
	return verb
}

func (in *interp) doCreateQP(st *Step, a *args, name string) error {
	p := a.ref("pd", "pd")
	both, sc, rc, s := a.ref("cq", "cq"), a.ref("send_cq", "cq"), a.ref("recv_cq", "cq"), a.ref("srq", "srq")
	if a.err != nil {
		return a.err
	}
	if sc == "" {
		sc = both
	}
	if rc == "" {
		rc = both
	}
	attr := sim.QPInitAttr{Context: name, SendCQ: in.obj.cq[sc], RecvCQ: in.obj.cq[rc], SQSigAll: a.has("sq_sig_all"),
		Cap: verbs.QPCap{MaxSendWR: uint32(min(a.num("send_wr", 4), 1<<20)), MaxRecvWR: uint32(min(a.num("recv_wr", 4), 1<<20)), MaxSendSGE: 1, MaxRecvSGE: 1}}
	if s != "" {
		attr.SRQ = in.obj.srq[s]
		attr.Cap.MaxRecvWR = 0
	}
	switch a.str("type", "rc") {
	case "rc":
		attr.Type = verbs.QPTypeRC
	case "uc":
		attr.Type = verbs.QPTypeUC
	case "ud":
		attr.Type = verbs.QPTypeUD
	default:
		attr.Type = verbs.QPType(a.num("type", 0)) // a type that does not exist
	}
	q, err := in.obj.pd[p].CreateQP(attr)
	in.verbResult(fmt.Sprintf("ibv_create_qp(%v)", attr.Type), err)
	if err != nil {
		return nil
	}
	dev := in.obj.pd[p].Context().Device().Name()
	in.obj.qp[name] = &qpObj{q: q, pd: p, dev: dev, unsignaled: map[uint64]bool{}, sigAll: attr.SQSigAll}
	in.alias[fmt.Sprintf("%s/qp %#x", dev, q.Num())] = "qp " + name
	in.say("qp %s is qp_num %#x on device %s, in RESET", name, q.Num(), dev)
	in.note("QP-01")
	return nil
}

var maskOf = map[string]verbs.QPAttrMask{"state": verbs.QPAttrState, "cur_state": verbs.QPAttrCurState, "en_sqd_async_notify": verbs.QPAttrEnSQDAsyncNotify,
	"access_flags": verbs.QPAttrAccessFlags, "pkey_index": verbs.QPAttrPKeyIndex, "port": verbs.QPAttrPort, "qkey": verbs.QPAttrQKey, "av": verbs.QPAttrAV,
	"path_mtu": verbs.QPAttrPathMTU, "timeout": verbs.QPAttrTimeout, "retry_cnt": verbs.QPAttrRetryCnt, "rnr_retry": verbs.QPAttrRNRRetry,
	"rq_psn": verbs.QPAttrRQPSN, "max_qp_rd_atomic": verbs.QPAttrMaxQPRDAtomic, "alt_path": verbs.QPAttrAltPath, "min_rnr_timer": verbs.QPAttrMinRNRTimer,
	"sq_psn": verbs.QPAttrSQPSN, "max_dest_rd_atomic": verbs.QPAttrMaxDestRDAtomic, "path_mig_state": verbs.QPAttrPathMigState, "cap": verbs.QPAttrCap,
	"dest_qpn": verbs.QPAttrDestQPN}

func stateOf(s string) verbs.QPState {
	return verbs.QPState(slices.Index(states, s))
}

func (in *interp) doModify(st *Step, a *args) error {
	n, peer := a.ref("qp", "qp"), a.ref("peer", "qp")
	if a.err != nil {
		return a.err
	}
	o := in.obj.qp[n]
	cur := o.q.State()
	to := cur
	if s := a.str("state", ""); s != "" {
		to = stateOf(s)
	}
	var mask verbs.QPAttrMask
	if bits := a.list("mask"); len(bits) > 0 {
		for _, b := range bits {
			mask |= maskOf[b]
		}
	} else if m, ok := verbs.MinimalMask(cur, to, o.q.Type()); ok {
		mask = m
	} else {
		mask = verbs.QPAttrState
	}
	dest := uint32(a.num("dest_qpn", uint64(o.q.Num())))
	if peer != "" {
		dest = in.obj.qp[peer].q.Num()
	}
	var dlid uint16 = 1
	if peer != "" {
		dlid = in.lidOf(in.obj.qp[peer].dev)
	}
	attr := verbs.QPAttr{QPState: to, PortNum: 1, QKey: 0x11111111, QPAccessFlags: verbs.AccessRemoteWrite | verbs.AccessRemoteRead,
		PathMTU: verbs.MTU1024, DestQPNum: dest, MaxDestRDAtomic: 1, MinRNRTimer: uint8(a.num("min_rnr_timer", 12)),
		AHAttr: verbs.AHAttr{DLID: dlid, PortNum: 1}, Timeout: uint8(a.num("timeout", 14)), RetryCnt: uint8(a.num("retry_cnt", 7)),
		RNRRetry: uint8(a.num("rnr_retry", 7)), MaxRDAtomic: 1}
	err := o.q.Modify(&attr, mask)
	in.verbResult(fmt.Sprintf("ibv_modify_qp(%s, %v→%v, mask %v)", n, cur, to, mask), err)
	if err == nil {
		in.note("QP-07")
		if to == verbs.QPStateErr && cur != verbs.QPStateErr {
			in.note("FLUSH-01", "FLUSH-13")
		}
	}
	return nil
}

// lidOf returns the LID of port 1 of a device (1 when it cannot be read).
func (in *interp) lidOf(dev string) uint16 {
	var lid uint16 = 1
	if d, err := in.f.Device(dev); err == nil {
		if c, err := d.Open(); err == nil {
			if pa, err := c.QueryPort(1); err == nil {
				lid = pa.LID
			}
			c.Close()
		}
	}
	return lid
}

// mrFor returns the MR a WR uses: the one named, or the first MR of pd.
func (in *interp) mrFor(a *args, pd string) *mrObj {
	if n := a.ref("mr", "mr"); n != "" {
		return in.obj.mr[n]
	}
	for _, name := range in.obj.order {
		if m, ok := in.obj.mr[name]; ok && m.pd == pd {
			return m
		}
	}
	return nil
}

var sendOpOf = map[string]verbs.WROpcode{"send": verbs.WRSend, "send_imm": verbs.WRSendWithImm, "write": verbs.WRRDMAWrite,
	"write_imm": verbs.WRRDMAWriteWithImm, "read": verbs.WRRDMARead, "cas": verbs.WRAtomicCmpAndSwp, "faa": verbs.WRAtomicFetchAndAdd}

func (in *interp) doPostSend(st *Step, a *args) error {
	n := a.ref("qp", "qp")
	rem := a.ref("remote", "mr")
	ah, dest := a.ref("ah", "ah"), a.ref("dest", "qp")
	if a.err != nil {
		return a.err
	}
	o := in.obj.qp[n]
	m := in.mrFor(a, o.pd)
	if a.err != nil {
		return a.err
	}
	op := sendOpOf[a.str("opcode", "send")]
	length := a.num("len", 64)
	if op == verbs.WRAtomicCmpAndSwp || op == verbs.WRAtomicFetchAndAdd {
		length = 8
	}
	var flags verbs.SendFlags
	if a.has("signaled") {
		flags |= verbs.SendSignaled
	}
	if a.has("solicited") {
		flags |= verbs.SendSolicited
	}
	if a.has("inline") {
		flags |= verbs.SendInline
	}
	ids := a.nums("wr_id")
	wrs := make([]verbs.SendWR, 0, len(ids))
	for _, id := range ids {
		w := verbs.SendWR{WRID: id, Opcode: op, Flags: flags}
		if slices.Contains(a.nums("signaled"), id) {
			w.Flags |= verbs.SendSignaled
		}
		if length > 0 && m != nil {
			w.SGList = []verbs.SGE{{Addr: m.mr.Addr(), Length: uint32(min(length, uint64(len(m.buf)))), LKey: m.mr.LKey()}}
		}
		if rem != "" {
			w.RemoteAddr, w.RKey = in.obj.mr[rem].mr.Addr(), in.obj.mr[rem].mr.RKey()
		}
		if _, ok := a.get("rkey"); ok {
			w.RKey = uint32(a.num("rkey", 0))
		}
		if ah != "" {
			w.AH = in.obj.ah[ah]
		}
		if dest != "" {
			w.RemoteQPN, w.RemoteQKey = in.obj.qp[dest].q.Num(), uint32(a.num("qkey", 0x11111111))
		} else if _, ok := a.get("dest_qpn"); ok {
			w.RemoteQPN, w.RemoteQKey = uint32(a.num("dest_qpn", 0)), uint32(a.num("qkey", 0x11111111))
		}
		wrs = append(wrs, w)
	}
	wasErr := o.q.State() == verbs.QPStateErr
	k, err := o.q.PostSend(wrs)
	to := ""
	switch {
	case rem != "":
		to = fmt.Sprintf(" to mr %s (rkey %#x)", rem, wrs[0].RKey)
	case len(wrs) > 0 && wrs[0].RKey != 0:
		to = fmt.Sprintf(" (rkey %#x)", wrs[0].RKey)
	}
	if dest != "" {
		to += fmt.Sprintf(" to qp %s (qpn %#x, qkey %#x)", dest, wrs[0].RemoteQPN, wrs[0].RemoteQKey)
	} else if len(wrs) > 0 && wrs[0].RemoteQPN != 0 {
		to += fmt.Sprintf(" to qpn %#x (qkey %#x)", wrs[0].RemoteQPN, wrs[0].RemoteQKey)
	}
	call := fmt.Sprintf("ibv_post_send(%s, %d WR(s): %s %v%s, flags %v)", n, len(wrs), strings.TrimPrefix(op.Name(), "IBV_WR_"), fmtIDs(ids), to, flags)
	if err != nil {
		in.verbResult(call, err)
		if k > 0 {
			in.say("the first %d WR(s) were posted; the rest were not (bad_wr)", k)
		}
	} else {
		in.say("%s = ok", call)
	}
	for _, w := range wrs[:k] {
		if !o.sigAll && w.Flags&verbs.SendSignaled == 0 {
			o.unsignaled[w.WRID] = true
		}
	}
	if k > 0 && flags&verbs.SendSignaled == 0 && !o.sigAll {
		in.say("unsignaled: a success makes no completion; an error or flush does")
		in.note("CQ-19")
	}
	if k > 0 && wasErr {
		in.note("FLUSH-05")
	}
	return nil
}

func fmtIDs(ids []uint64) string {
	var s []string
	for _, id := range ids {
		s = append(s, strconv.FormatUint(id, 10))
	}
	return "wr_id " + strings.Join(s, ",")
}

func (in *interp) doPostRecv(st *Step, a *args) error {
	var pd, target string
	var post func([]verbs.RecvWR) (int, error)
	if st.Verb == "post_srq_recv" {
		target = a.ref("srq", "srq")
		if a.err != nil {
			return a.err
		}
		s := in.obj.srq[target]
		for name, p := range in.obj.pd {
			if any(p) == s.PD() {
				pd = name
			}
		}
		post = s.PostRecv
	} else {
		target = a.ref("qp", "qp")
		if a.err != nil {
			return a.err
		}
		pd = in.obj.qp[target].pd
		post = in.obj.qp[target].q.PostRecv
	}
	m := in.mrFor(a, pd)
	if a.err != nil {
		return a.err
	}
	ids := a.nums("wr_id")
	length := a.num("len", 64)
	wrs := make([]verbs.RecvWR, 0, len(ids))
	for _, id := range ids {
		w := verbs.RecvWR{WRID: id}
		if m != nil && length > 0 {
			w.SGList = []verbs.SGE{{Addr: m.mr.Addr(), Length: uint32(min(length, uint64(len(m.buf)))), LKey: m.mr.LKey()}}
		}
		wrs = append(wrs, w)
	}
	k, err := post(wrs)
	call := fmt.Sprintf("ibv_%s(%s, %d WR(s): %s, %d bytes each)", st.Verb, target, len(wrs), fmtIDs(ids), length)
	in.verbResult(call, err)
	if err != nil && k > 0 {
		in.say("the first %d WR(s) were posted; the rest were not (bad_wr)", k)
	}
	return nil
}

// cqName returns the scenario name of a CQ.
func (in *interp) cqName(q *sim.CQ) string {
	for n, c := range in.obj.cq {
		if c == q {
			return n
		}
	}
	return "?"
}

// qpName returns the scenario name of QP num on device dev ("": any
// device), or the number in hex.
func (in *interp) qpName(dev string, num uint32) string {
	for _, n := range in.obj.order {
		if o, ok := in.obj.qp[n]; ok && o.q.Num() == num && (dev == "" || o.dev == dev) {
			return n
		}
	}
	return fmt.Sprintf("%#x", num)
}

// isUD reports whether QP num of device dev is a UD QP.
func (in *interp) isUD(dev string, num uint32) bool {
	o, ok := in.obj.qp[in.qpName(dev, num)]
	return ok && o.q.Type() == verbs.QPTypeUD
}

// peerName returns the name of QP num, preferring one on a device other
// than dev: the sender of a UD message.
func (in *interp) peerName(dev string, num uint32) string {
	for _, n := range in.obj.order {
		if o, ok := in.obj.qp[n]; ok && o.q.Num() == num && o.dev != dev {
			return n
		}
	}
	return in.qpName(dev, num)
}

func (in *interp) describeAsync(ev sim.AsyncEvent) string {
	what := ev.Type().String()
	if c := ev.CQ(); c != nil {
		return what + " on cq " + in.cqName(c)
	}
	if o := ev.QP(); o != nil {
		for _, n := range in.obj.order {
			if x, ok := in.obj.qp[n]; ok && x.q == o {
				return what + " on qp " + n
			}
		}
		return what + " on qp " + in.qpName("", o.Num())
	}
	if o := ev.SRQ(); o != nil {
		for n, s := range in.obj.srq {
			if s == o {
				return what + " on srq " + n
			}
		}
	}
	if ev.Port() != 0 {
		return fmt.Sprintf("%s on port %d", what, ev.Port())
	}
	return what
}

// opName and statusName are how the scenarios print a completion's opcode
// and status: the C enumerator, as the trace, the timelines and WC.String
// do (package verbs, "Names").
func opName(o verbs.WCOpcode) string { return o.String() }

func statusName(s verbs.WCStatus) string { return s.String() }

// describeWC renders a completion for a learner.
func (in *interp) describeWC(dev string, w verbs.WC) string {
	if w.Status != verbs.WCSuccess {
		// Only wr_id, status, qp_num and vendor_err are valid in an error
		// completion (FLUSH-06); the opcode is not shown.
		if w.QPNum == 0 {
			return fmt.Sprintf("wr_id %d  %s", w.WRID, statusName(w.Status))
		}
		return fmt.Sprintf("wr_id %d  %s  (qp %s)", w.WRID, statusName(w.Status), in.qpName(dev, w.QPNum))
	}
	s := fmt.Sprintf("wr_id %d  %s  %s", w.WRID, statusName(w.Status), opName(w.Opcode))
	if w.Opcode.IsRecv() || w.Opcode == verbs.WCRDMARead {
		s += fmt.Sprintf("  %d bytes", w.ByteLen)
	}
	if in.isUD(dev, w.QPNum) && w.Opcode.IsRecv() {
		grh := "no GRH flag: no GRH came, those 40 are undefined"
		if w.WCFlags&verbs.WCGRH != 0 {
			grh = "GRH flag: the GRH is in those 40"
		}
		s += fmt.Sprintf(" = 40 kept for the GRH + %d of payload (%s)  src_qp %s", max(int(w.ByteLen)-40, 0), grh, in.peerName(dev, w.SrcQP))
	}
	if w.QPNum == 0 {
		return s
	}
	return s + fmt.Sprintf("  (qp %s)", in.qpName(dev, w.QPNum))
}

// explainWC notes the rules a polled completion shows.
func (in *interp) explainWC(dev string, w verbs.WC) {
	switch w.Status {
	case verbs.WCSuccess:
		if in.isUD(dev, w.QPNum) && w.Opcode.IsRecv() {
			in.note("XFER-21", "WC-10", "WC-12")
		}
	case verbs.WCWRFlushErr:
		in.note("FLUSH-01")
		for _, n := range in.obj.order {
			if o, ok := in.obj.qp[n]; ok && o.q.Num() == w.QPNum && o.dev == dev && o.unsignaled[w.WRID] {
				in.note("FLUSH-04")
			}
		}
	case verbs.WCRNRRetryExcErr:
		in.note("XFER-07", "XFER-08")
	case verbs.WCRetryExcErr:
		in.note("XFER-10")
	case verbs.WCRemAccessErr:
		in.note("XFER-14", "XFER-15")
	case verbs.WCRemInvReqErr, verbs.WCLocLenErr:
		in.note("XFER-05", "FLUSH-12")
	default:
		in.note("FLUSH-03")
	}
}

// records returns the trace records added since the last call, with the
// objects they name (Object, Peer) translated to the script's names.
func (in *interp) records() []trace.Record {
	if in.log == nil {
		return nil
	}
	all := in.log.Records()
	if in.seen > len(all) {
		in.seen = 0
	}
	out := all[in.seen:]
	in.seen = len(all)
	for i := range out {
		out[i].Object = in.rename(out[i].Object)
		out[i].Peer = in.rename(out[i].Peer)
	}
	return out
}

func (in *interp) rename(s string) string {
	if n, ok := in.alias[s]; ok {
		return n
	}
	return s
}

func (in *interp) now() uint64 {
	if in.f == nil {
		return 0
	}
	return in.f.Now()
}
