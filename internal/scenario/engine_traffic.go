package scenario

// engine_traffic.go holds what lets a scenario say everything the traffic
// state machine (conformance/ops, TrafficStateMachine) does: a fabric's
// ports and faults, scatter/gather lists given as offsets into an MR,
// buffer contents (fill), addresses of device ports (av=), and memory
// windows (alloc_mw, bind_mw, dealloc_mw; type 2 windows bind with a
// post_send of opcode bind_mw).

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/verbsim/verbsim/internal/pattern"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// piece is OFF+LEN: bytes of an MR's buffer.
type piece struct{ off, len uint64 }

// parseSGEs reads a scatter/gather list: OFF+LEN pieces joined by "/", or
// "-" for an empty list.
func parseSGEs(v string) ([]piece, error) {
	if v == "-" {
		return nil, nil
	}
	var out []piece
	for _, p := range strings.Split(v, "/") {
		o, l, ok := strings.Cut(p, "+")
		off, err1 := parseNum(o)
		n, err2 := parseNum(l)
		if !ok || err1 != nil || err2 != nil || off > 1<<32 || n > 1<<32 {
			return nil, fmt.Errorf("expected OFF+LEN pieces joined by /, or -")
		}
		out = append(out, piece{off, n})
	}
	return out, nil
}

// parseAddr reads an address: NAME+OFF (an offset into MR NAME), or a
// number (name "").
func parseAddr(v string) (name string, off uint64, err error) {
	if n, e := parseNum(v); e == nil {
		return "", n, nil
	}
	name, o, ok := strings.Cut(v, "+")
	if off, err = parseNum(o); !ok || name == "" || err != nil {
		return "", 0, fmt.Errorf("expected MR+OFF or a number")
	}
	return name, off, nil
}

// sgl makes the scatter/gather list of pieces of MR m, each with lkey.
func sgl(m *mrObj, ps []piece, lkey uint32) []verbs.SGE {
	var out []verbs.SGE
	for _, p := range ps {
		out = append(out, verbs.SGE{Addr: m.mr.Addr() + p.off, Length: uint32(p.len), LKey: lkey})
	}
	return out
}

// perWR returns the value of per-request key k for the j-th of n requests:
// the j-th of a list of n, the only value of a list of one, or def. A list
// of another length is a script error.
func (a *args) perWR(k string, j, n int, def string) string {
	x, ok := a.get(k)
	switch {
	case !ok:
		return def
	case len(x.Vals) == 1:
		return x.Vals[0]
	case len(x.Vals) == n:
		return x.Vals[j]
	}
	if a.err == nil {
		a.err = &scriptError{fmt.Sprintf("%s:%d: %s= has %d values for %d wr_ids (one per request, or one for all)", a.in.file, a.st.Line, k, len(x.Vals), n)}
	}
	return def
}

// perWRNum is perWR for a number (checked by Parse).
func (a *args) perWRNum(k string, j, n int, def uint64) uint64 {
	v, err := parseNum(a.perWR(k, j, n, strconv.FormatUint(def, 10)))
	if err != nil {
		return def
	}
	return v
}

// perWRRef is perWR for a name of an object of kind, "" when not given
// or "-" (none for this request).
func (a *args) perWRRef(k, kind string, j, n int) string {
	v := a.perWR(k, j, n, "")
	if v == "" || v == "-" || a.err != nil {
		return ""
	}
	if got := a.in.obj.kind[v]; got != kind {
		a.err = &scriptError{fmt.Sprintf("%s:%d: %s=%s: no %s of that name", a.in.file, a.st.Line, k, v, kind)}
		return ""
	}
	return v
}

// accessOf reads a list of access flags.
func accessOf(xs []string) verbs.AccessFlags {
	var acc verbs.AccessFlags
	for _, x := range xs {
		acc |= map[string]verbs.AccessFlags{"local_write": verbs.AccessLocalWrite, "remote_write": verbs.AccessRemoteWrite,
			"remote_read": verbs.AccessRemoteRead, "remote_atomic": verbs.AccessRemoteAtomic, "mw_bind": verbs.AccessMWBind,
			"zero_based": verbs.AccessZeroBased}[x]
	}
	return acc
}

// fabricConfig applies fabric's mtu, link, schedule and fault keys.
func fabricConfig(a *args) func(*sim.Config) {
	return func(c *sim.Config) {
		if a.str("schedule", "fifo") == "random" {
			c.Schedule = sim.Random
		}
		c.Faults = sim.Faults{Drop: a.prob("drop"), Duplicate: a.prob("duplicate"), Delay: a.prob("delay"), MaxDelay: a.num("max_delay_ns", 0)}
		_, mtu := a.get("mtu")
		_, link := a.get("link")
		if !mtu && !link {
			return
		}
		attr := verbs.PortAttr{LinkLayer: verbs.LinkLayerInfiniBand}
		if a.str("link", "ib") == "roce" {
			attr.LinkLayer = verbs.LinkLayerEthernet
		}
		if mtu {
			attr.ActiveMTU = mtuOf(a.str("mtu", ""))
		}
		for i := range c.Devices {
			c.Devices[i].Ports = []sim.PortConfig{{Attr: attr}}
		}
	}
}

// avOf returns the path to port 1 of device dev: its LID, or on an
// Ethernet (RoCE) port its GID 0 in a GRH, as conformance/simdev's traffic
// fabric names it.
func (in *interp) avOf(dev string) (verbs.AHAttr, error) {
	d, err := in.f.Device(dev)
	if err != nil {
		return verbs.AHAttr{}, err
	}
	c, err := d.Open()
	if err != nil {
		return verbs.AHAttr{}, err
	}
	defer c.Close()
	pa, err := c.QueryPort(1)
	if err != nil {
		return verbs.AHAttr{}, err
	}
	if pa.LinkLayer != verbs.LinkLayerEthernet {
		return verbs.AHAttr{PortNum: 1, DLID: pa.LID}, nil
	}
	gid, err := c.QueryGID(1, 0)
	if err != nil {
		return verbs.AHAttr{}, err
	}
	return verbs.AHAttr{PortNum: 1, IsGlobal: true, GRH: verbs.GlobalRoute{DGID: gid, HopLimit: 64}}, nil
}

// doFill runs fill: bytes into an MR's buffer.
func (in *interp) doFill(_ *Step, a *args) error {
	n := a.ref("mr", "mr")
	if a.err != nil {
		return a.err
	}
	m := in.obj.mr[n]
	ps, _ := parseSGEs(a.str("at", "-"))
	total := uint64(0)
	for _, p := range ps {
		if p.off > uint64(len(m.buf)) || p.len > uint64(len(m.buf))-p.off {
			return &scriptError{fmt.Sprintf("%s:%d: at=: %d+%d is outside mr %s (%d bytes)", in.file, a.st.Line, p.off, p.len, n, len(m.buf))}
		}
		total += p.len
	}
	var data []byte
	what := ""
	switch {
	case keyGiven(a, "pattern"):
		data, what = pattern.Fill(a.num("pattern", 0), int(total)), fmt.Sprintf("pattern %#x", a.num("pattern", 0))
	case keyGiven(a, "payload"):
		data, what = pattern.Payload(a.num("payload", 0), int(total)), fmt.Sprintf("payload %#x", a.num("payload", 0))
	default:
		b := byte(a.num("byte", 0))
		data, what = []byte(strings.Repeat(string([]byte{b}), int(total))), fmt.Sprintf("byte %#x", b)
	}
	for _, p := range ps {
		copy(m.buf[p.off:p.off+p.len], data)
		data = data[p.len:]
	}
	in.say("wrote %d bytes of %s into mr %s", total, what, n)
	return nil
}

func keyGiven(a *args, k string) bool { _, ok := a.get(k); return ok }

// doAllocMW runs alloc_mw (ibv_alloc_mw).
func (in *interp) doAllocMW(_ *Step, a *args) error {
	name := a.name()
	p := a.ref("pd", "pd")
	if a.err != nil {
		return a.err
	}
	typ := verbs.MWType1
	if a.str("type", "1") == "2" {
		typ = verbs.MWType2
	}
	mw, err := in.obj.pd[p].AllocMW(typ)
	in.verbResult(fmt.Sprintf("ibv_alloc_mw(%s, %v)", p, typ), err)
	if err == nil {
		in.obj.mw[name] = mw
		in.say("mw %s: rkey %#x", name, mw.RKey())
		in.note("MW-01")
	}
	return nil
}

// doBindMW runs bind_mw (ibv_bind_mw, a type 1 window).
func (in *interp) doBindMW(_ *Step, a *args) error {
	q, w, m := a.ref("qp", "qp"), a.ref("mw", "mw"), a.ref("mr", "mr")
	if a.err != nil {
		return a.err
	}
	ps, _ := parseSGEs(a.str("at", "-"))
	var at piece
	if len(ps) > 0 {
		at = ps[0]
	}
	info := verbs.MWBindInfo{MR: in.obj.mr[m].mr, Addr: in.obj.mr[m].mr.Addr() + at.off, Length: at.len, Access: accessOf(a.list("access"))}
	var flags verbs.SendFlags
	if a.has("signaled") {
		flags = verbs.SendSignaled
	}
	mw := in.obj.mw[w]
	err := in.obj.qp[q].q.BindMW(mw, a.num("wr_id", 0), flags, info)
	in.verbResult(fmt.Sprintf("ibv_bind_mw(%s, %s to %d+%d of mr %s, %v)", q, w, at.off, at.len, m, info.Access), err)
	if err == nil {
		in.say("mw %s: rkey %#x", w, mw.RKey())
	}
	in.note("MW-04")
	return nil
}

// doDeallocMW runs dealloc_mw (ibv_dealloc_mw).
func (in *interp) doDeallocMW(_ *Step, a *args) error {
	w := a.ref("mw", "mw")
	if a.err != nil {
		return a.err
	}
	in.verbResult("ibv_dealloc_mw("+w+")", in.obj.mw[w].Dealloc())
	return nil
}

// mtuOf reads an MTU in bytes ("256"); Parse checked it is one of the five.
func mtuOf(s string) verbs.MTU {
	for m := verbs.MTU256; m <= verbs.MTU4096; m++ {
		if m.String() == s {
			return m
		}
	}
	return verbs.MTU1024
}
