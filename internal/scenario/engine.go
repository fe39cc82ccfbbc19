package scenario

// engine.go holds the interpreter: the named objects of a run, typed access
// to a step's arguments, and exec, which hands each command to its handler.
// The handlers live in engine_*.go, one file per family of commands. The
// engine files and state.go are the only files of the package that call
// into package sim: the verbs, the engine controls, and the read-only views
// the timeline is drawn from.

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"

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
	case "mlx5":
		return "NVIDIA ConnectX through rdma-core's mlx5 provider, where it reads a rule differently"
	case "siw":
		return "Linux soft-iWARP (siw): RC only, no atomics, immediate data or windows"
	case "irdma":
		return "Intel E810 (irdma) in RoCE v2: no UC, SRQs or atomics"
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
	mw  map[string]*sim.MW
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
	config  func(*sim.Config) // what fabric adds to the fabric's configuration
	f       *sim.Fabric
	log     *trace.Log
	seen    int // trace records already shown
	obj     objects
	cm      cmObjects
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
	// failed names the objects whose create failed: the device refused it
	// (a UD QP on siw, an SRQ on irdma...), so a later step that needs one
	// stops the run under this profile (stopError).
	failed map[string]bool
}

// scriptError is a mistake of the script that only shows at run time (a
// name never created). It stops the run with file:line.
type scriptError struct{ msg string }

func (e *scriptError) Error() string { return e.msg }

// stopError ends a run before a step that needs an object this profile's
// device refused to create: not a mistake of the script.
type stopError struct{ why string }

func (e *stopError) Error() string { return e.why }

func newInterp(file string, p sim.Profile) *interp {
	return &interp{
		file: file, profile: p,
		obj: objects{ctx: map[string]*sim.Context{}, pd: map[string]*sim.PD{}, ch: map[string]*sim.CompChannel{},
			cq: map[string]*sim.CQ{}, mr: map[string]*mrObj{}, qp: map[string]*qpObj{}, srq: map[string]*sim.SRQ{},
			ah: map[string]*sim.AH{}, mw: map[string]*sim.MW{}, cqDev: map[string]string{}, cqChan: map[string]string{}, kind: map[string]string{}},
		cm:      newCMObjects(),
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
	// The scenarios address ports by LID: their ports are InfiniBand under
	// every profile, whatever link the profile's provider runs on, so that
	// a step differs between profiles only where their readings do.
	ib := []sim.PortConfig{{Attr: verbs.PortAttr{LinkLayer: verbs.LinkLayerInfiniBand}}}
	for _, d := range devices {
		c := sim.DeviceConfig{Name: d, Ports: ib}
		if dev != nil {
			dev(&c)
		}
		cfg.Devices = append(cfg.Devices, c)
	}
	if in.config != nil {
		in.config(&cfg)
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
	if a.in.failed[n] {
		a.err = &stopError{fmt.Sprintf("%s %s was not created under profile %s", kind, n, a.in.profile.Name)}
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
	delete(in.failed, name)
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
	recs := in.log.From(in.seen)
	for i := len(recs) - 1; i >= 0; i-- {
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
	// The connection manager's commands (engine_cm.go) name their own
	// objects.
	if commandTable[st.Verb].name && !strings.HasPrefix(st.Verb, "rdma_") {
		name := a.name()
		if err := in.define(st, name, kindOf(st.Verb)); err != nil {
			return err
		}
		defer func() {
			if in.err != nil { // a create that failed names nothing
				in.undefine(name)
				if in.failed == nil {
					in.failed = map[string]bool{}
				}
				in.failed[name] = true
			}
		}()
	}
	h := handlers[st.Verb]
	if th, ok := threadHandlers[st.Verb]; ok {
		h = th // threads.go; not in handlers, as exploreStep runs exec again
	}
	err := h(in, st, a)
	if err == nil {
		err = a.err
	}
	return err
}

// handlers runs each command of commandTable. The engine_*.go files hold
// them by family (STYLE.md §1): time, faults, complete, objects, srq, qp,
// post, poll, async, destroy, cq.
var handlers = map[string]func(*interp, *Step, *args) error{
	"fabric": (*interp).doFabric, "step": (*interp).doStep, "stabilize": (*interp).doStabilize,
	"tick": (*interp).doTick, "run": (*interp).doRun, "advance": (*interp).doAdvance,
	"faults": (*interp).doFaults, "fault": (*interp).doFault, "force_status": (*interp).doForceStatus,
	"fatal": (*interp).doFatal, "srq_error": (*interp).doSRQError, "link": (*interp).doLink,
	"complete":    (*interp).doComplete,
	"open_device": (*interp).doOpenDevice, "alloc_pd": (*interp).doAllocPD,
	"create_comp_channel": (*interp).doCreateCompChannel, "create_cq": (*interp).doCreateCQ,
	"reg_mr": (*interp).doRegMR, "create_ah": (*interp).doCreateAH,
	"resize_cq": (*interp).doCQ, "hold": (*interp).doCQ, "release": (*interp).doCQ,
	"create_srq": (*interp).doCreateSRQ, "modify_srq": (*interp).doModifySRQ, "query_srq": (*interp).doQuerySRQ,
	"create_qp": (*interp).doCreateQP, "modify_qp": (*interp).doModify, "connect": (*interp).doConnect,
	"post_send": (*interp).doPostSend, "post_recv": (*interp).doPostRecv, "post_srq_recv": (*interp).doPostRecv,
	"poll_cq": (*interp).doPollCQ, "req_notify_cq": (*interp).doReqNotifyCQ,
	"get_cq_event": (*interp).doGetCQEvent, "ack_cq_events": (*interp).doAckCQEvents,
	"get_async_event": (*interp).doGetAsyncEvent, "ack_async_event": (*interp).doAckAsyncEvent,
	"destroy_cq": (*interp).doDestroyCQ, "destroy_qp": (*interp).doDestroyQP, "destroy_srq": (*interp).doDestroySRQ,
	"destroy_ah": (*interp).doDestroyAH, "destroy_comp_channel": (*interp).doDestroyCompChannel,
	"dereg_mr": (*interp).doDeregMR, "dealloc_pd": (*interp).doDeallocPD,
	"rdma_create_event_channel": (*interp).doCM, "rdma_create_id": (*interp).doCM, "rdma_bind_addr": (*interp).doCM,
	"rdma_listen": (*interp).doCM, "rdma_resolve_addr": (*interp).doCM, "rdma_resolve_route": (*interp).doCM,
	"rdma_create_qp": (*interp).doCM, "rdma_connect": (*interp).doCM, "rdma_accept": (*interp).doCM, "rdma_reject": (*interp).doCM,
	"rdma_get_cm_event": (*interp).doCM, "rdma_ack_cm_event": (*interp).doCM, "rdma_disconnect": (*interp).doCM,
	"rdma_destroy_qp": (*interp).doCM, "rdma_destroy_id": (*interp).doCM, "rdma_destroy_event_channel": (*interp).doCM,
	"fill": (*interp).doFill, "alloc_mw": (*interp).doAllocMW, "bind_mw": (*interp).doBindMW, "dealloc_mw": (*interp).doDeallocMW,
}

// records returns the trace records added since the last call, with the
// objects they name (Object, Peer) translated to the script's names.
func (in *interp) records() []trace.Record {
	if in.log == nil {
		return nil
	}
	if in.seen > in.log.Len() {
		in.seen = 0
	}
	out := in.log.From(in.seen)
	in.seen = in.log.Len()
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
