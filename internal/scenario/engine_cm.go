package scenario

// engine_cm.go runs the connection manager's commands (the rdma_* calls of
// librdmacm) through package sim, as engine.go runs the verbs.

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// cmObjects are the named objects of the connection manager.
type cmObjects struct {
	ch map[string]*sim.CMChannel
	id map[string]*sim.CMID
	// read holds, per channel, the events read and not yet acknowledged,
	// oldest first: what rdma_ack_cm_event channel= acknowledges.
	read map[string][]rdmacm.Event
	ps   map[string]rdmacm.PortSpace // each ID's port space
	// passive marks the IDs a CONNECT_REQUEST made.
	passive map[string]bool
}

func newCMObjects() cmObjects {
	return cmObjects{ch: map[string]*sim.CMChannel{}, id: map[string]*sim.CMID{}, read: map[string][]rdmacm.Event{},
		ps: map[string]rdmacm.PortSpace{}, passive: map[string]bool{}}
}

var portSpaces = map[string]rdmacm.PortSpace{"tcp": rdmacm.PSTCP, "udp": rdmacm.PSUDP, "ib": rdmacm.PSIB}

// cmAddr is the address key=value names: addr= as written, else the IPv4
// address of port 1 of device dev= (the wildcard when neither is given),
// with port=.
func (in *interp) cmAddr(a *args) (netip.AddrPort, error) {
	port := uint16(min(a.num("port", 0), 65535))
	if s := a.str("addr", ""); s != "" {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			return netip.AddrPort{}, fmt.Errorf("addr=%s: not an IP address", s)
		}
		return netip.AddrPortFrom(ip, port), nil
	}
	return in.devAddr(a.str("dev", ""), port)
}

// devAddr is the IPv4 address of port 1 of device name ("": the wildcard)
// with port.
func (in *interp) devAddr(name string, port uint16) (netip.AddrPort, error) {
	if name == "" {
		return netip.AddrPortFrom(netip.IPv4Unspecified(), port), nil
	}
	d, err := in.f.Device(name)
	if err != nil {
		return netip.AddrPort{}, err
	}
	for _, ip := range d.PortAddrs(1) {
		if ip.Is4() {
			return netip.AddrPortFrom(ip, port), nil
		}
	}
	return netip.AddrPort{}, fmt.Errorf("device %s has no IPv4 address on port 1", name)
}

// doCM runs the rdma_* commands.
func (in *interp) doCM(st *Step, a *args) error {
	name := a.name()
	if commandTable[st.Verb].name {
		if err := in.define(st, name, kindOf(st.Verb)); err != nil {
			return err
		}
	}
	cm := in.f.RDMACM()
	switch st.Verb {
	case "rdma_create_event_channel":
		ch, err := cm.CreateEventChannel()
		in.verbResult("rdma_create_event_channel", err)
		if err == nil {
			in.cm.ch[name] = ch.(*sim.CMChannel)
			in.aliasNewest("create_event_channel", "channel "+name)
		}
		in.note("CM-02")
	case "rdma_create_id":
		c := a.ref("channel", "cm_channel")
		if a.err != nil {
			return a.err
		}
		ps := portSpaces[a.str("ps", "tcp")]
		id, err := cm.CreateID(in.cm.ch[c], name, ps)
		in.verbResult(fmt.Sprintf("rdma_create_id(%s, %v)", c, ps), err)
		if err == nil {
			in.nameID(name, id, ps)
			in.say("id %s: %v, so its QP will be %v", name, ps, id.QPType())
		}
		in.note("CM-01")
	case "rdma_bind_addr", "rdma_resolve_addr":
		id := a.ref("id", "id")
		if a.err != nil {
			return a.err
		}
		addr, err := in.cmAddr(a)
		if err != nil {
			in.verbResult(st.Verb, err)
			return nil
		}
		if st.Verb == "rdma_bind_addr" {
			err = in.cm.id[id].BindAddr(addr)
			in.verbResult(fmt.Sprintf("rdma_bind_addr(%s, %v)", id, addr), err)
			if err == nil {
				in.say("id %s is bound to %v", id, in.cm.id[id].LocalAddr())
			}
			in.note("CM-06")
			return nil
		}
		var src netip.AddrPort
		from := ""
		if n := a.str("src_dev", ""); n != "" {
			if src, err = in.devAddr(n, 0); err != nil {
				in.verbResult(st.Verb, err)
				return nil
			}
			from = fmt.Sprintf("src %v, ", src.Addr())
		}
		ms := a.num("timeout_ms", 2000)
		err = in.cm.id[id].ResolveAddr(src, addr, time.Duration(min(ms, 1<<30))*time.Millisecond)
		in.verbResult(fmt.Sprintf("rdma_resolve_addr(%s, %sdst %v, timeout %d ms)", id, from, addr, ms), err)
		in.note("CM-09")
	case "rdma_listen":
		id := a.ref("id", "id")
		if a.err != nil {
			return a.err
		}
		n := min(a.num("backlog", 8), 1<<20)
		in.verbResult(fmt.Sprintf("rdma_listen(%s, backlog %d)", id, n), in.cm.id[id].Listen(int(n)))
		in.note("CM-07")
	case "rdma_resolve_route":
		id := a.ref("id", "id")
		if a.err != nil {
			return a.err
		}
		ms := a.num("timeout_ms", 2000)
		in.verbResult(fmt.Sprintf("rdma_resolve_route(%s, timeout %d ms)", id, ms),
			in.cm.id[id].ResolveRoute(time.Duration(min(ms, 1<<30))*time.Millisecond))
		in.note("CM-10")
	case "rdma_create_qp":
		return in.cmCreateQP(a, name)
	case "rdma_connect", "rdma_accept", "rdma_reject":
		id := a.ref("id", "id")
		if a.err != nil {
			return a.err
		}
		priv := make([]byte, min(a.num("private", 0), 1024))
		for i := range priv {
			priv[i] = byte(i + 1)
		}
		x := in.cm.id[id]
		p := &rdmacm.ConnParam{PrivateData: priv, ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7}
		call := fmt.Sprintf("%s(%s, %d bytes of private data)", st.Verb, id, len(priv))
		switch st.Verb {
		case "rdma_connect":
			in.verbResult(call, x.Connect(p))
			in.note("CM-13")
		case "rdma_accept":
			in.verbResult(call, x.Accept(p))
			in.note("CM-16")
		default:
			in.verbResult(call, x.Reject(priv))
			in.note("CM-19")
		}
	case "rdma_get_cm_event":
		return in.cmGetEvent(st, a)
	case "rdma_ack_cm_event":
		c := a.ref("channel", "cm_channel")
		if a.err != nil {
			return a.err
		}
		if len(in.cm.read[c]) == 0 {
			in.say("nothing to acknowledge: no event read from %s is left unacknowledged", c)
			return nil
		}
		ev := in.cm.read[c][0]
		in.cm.read[c] = in.cm.read[c][1:]
		of := "id " + in.idName(ev.ID())
		if ev.Type() == rdmacm.EventConnectRequest {
			of += ", counted on listener " + in.idName(ev.ListenID())
		}
		in.verbResult(fmt.Sprintf("rdma_ack_cm_event(%s of %s)", ev.Type(), of), ev.Ack())
		in.note("CM-03")
	case "rdma_disconnect":
		id := a.ref("id", "id")
		if a.err != nil {
			return a.err
		}
		in.verbResult("rdma_disconnect("+id+")", in.cm.id[id].Disconnect())
		in.note("CM-21")
	case "rdma_destroy_qp":
		id := a.ref("id", "id")
		if a.err != nil {
			return a.err
		}
		in.verbResult("rdma_destroy_qp("+id+")", in.cm.id[id].DestroyQP())
	case "rdma_destroy_id":
		id := a.ref("id", "id")
		if a.err != nil {
			return a.err
		}
		wait, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		err := in.cm.id[id].Destroy(wait)
		cancel()
		in.verbResult("rdma_destroy_id("+id+")", err)
		if errors.Is(err, syscall.EINTR) {
			in.say("(librdmacm would wait for ever here; verbsim gave up after 10 ms of wall time)")
		}
		in.note("CM-03", "CM-22")
	case "rdma_destroy_event_channel":
		c := a.ref("channel", "cm_channel")
		if a.err != nil {
			return a.err
		}
		in.verbResult("rdma_destroy_event_channel("+c+")", in.cm.ch[c].Destroy())
		in.note("CM-02")
	}
	return nil
}

// nameID registers a new ID under name.
func (in *interp) nameID(name string, id rdmacm.ID, ps rdmacm.PortSpace) {
	x := id.(*sim.CMID)
	in.cm.id[name], in.cm.ps[name] = x, ps
	in.alias[x.TraceName()] = "id " + name
}

// idName returns the script's name of an ID, or its trace name.
func (in *interp) idName(id rdmacm.ID) string {
	for n, x := range in.cm.id {
		if rdmacm.ID(x) == id {
			return n
		}
	}
	if x, ok := id.(*sim.CMID); ok {
		return x.TraceName()
	}
	return "?"
}

// cmCreateQP is rdma_create_qp with the ID's own PD and CQs the call
// makes, the way rping and most librdmacm programs let it.
func (in *interp) cmCreateQP(a *args, name string) error {
	id := a.ref("id", "id")
	if a.err != nil {
		return a.err
	}
	x := in.cm.id[id]
	attr := verbs.QPInitAttr{Context: name, Cap: verbs.QPCap{MaxSendWR: uint32(min(a.num("send_wr", 4), 1<<20)),
		MaxRecvWR: uint32(min(a.num("recv_wr", 4), 1<<20)), MaxSendSGE: 1, MaxRecvSGE: 1}}
	err := x.CreateQP(nil, &attr)
	in.verbResult(fmt.Sprintf("rdma_create_qp(%s, pd NULL, no CQs)", id), err)
	in.note("CM-12")
	if err != nil {
		return nil
	}
	q, _ := sim.QPOf(x.QP())
	dev := q.Context().Device().Name()
	in.obj.qp[name] = &qpObj{q: q, dev: dev, unsignaled: map[uint64]bool{}}
	in.alias[fmt.Sprintf("%s/qp %#x", dev, q.Num())] = "qp " + name
	in.say("qp %s is qp_num %#x on device %s, with a send and a receive CQ of its own; the CM moved it to %v",
		name, q.Num(), dev, q.State())
	return nil
}

// cmGetEvent is rdma_get_cm_event on a non-blocking channel.
func (in *interp) cmGetEvent(st *Step, a *args) error {
	c := a.ref("channel", "cm_channel")
	if a.err != nil {
		return a.err
	}
	ev, err := in.cm.ch[c].TryGetEvent()
	if err != nil {
		in.verbResult("rdma_get_cm_event("+c+")", err)
		if errors.Is(err, syscall.EAGAIN) {
			in.say("(a blocking read would sleep here)")
		}
		in.note("CM-02")
		return nil
	}
	in.cm.read[c] = append(in.cm.read[c], ev)
	t := ev.Type()
	if t == rdmacm.EventConnectRequest {
		n := a.str("new_id", "")
		if n == "" {
			for i := 1; ; i++ {
				if _, taken := in.obj.kind[fmt.Sprintf("conn%d", i)]; !taken {
					n = fmt.Sprintf("conn%d", i)
					break
				}
			}
		}
		if err := in.define(st, n, "id"); err != nil {
			return err
		}
		in.nameID(n, ev.ID(), in.cm.ps[in.idName(ev.ListenID())])
		in.cm.passive[n] = true
	}
	s := fmt.Sprintf("rdma_get_cm_event(%s) = ok: %s on id %s", c, t, in.idName(ev.ID()))
	if t == rdmacm.EventConnectRequest {
		s += fmt.Sprintf(" (a new ID, from listener %s)", in.idName(ev.ListenID()))
	}
	if ev.Status() != 0 {
		s += fmt.Sprintf(", status %d", ev.Status())
	}
	in.say("%s", s)
	in.note("CM-02", "CM-03")
	switch {
	case t == rdmacm.EventEstablished && in.cm.passive[in.idName(ev.ID())]:
		in.note("CM-18")
	case t == rdmacm.EventRejected:
		in.note(map[int]string{8: "CM-15", 28: "CM-19"}[ev.Status()])
		if ev.Status() != 8 && ev.Status() != 28 {
			in.note("CM-20", "CM-23")
		}
	default:
		in.note(eventRules[t]...)
	}
	switch t {
	case rdmacm.EventConnectRequest, rdmacm.EventConnectResponse, rdmacm.EventEstablished, rdmacm.EventRejected:
		if n := len(ev.Conn().PrivateData); n > 0 {
			in.say("private data: %d bytes, the message's whole field: what the sender wrote, then zeros", n)
			in.note("CM-33")
		}
	}
	if t == rdmacm.EventRejected && ev.Status() == 28 {
		in.say("status 28: the peer's application rejected the request (rdma_reject; reason 28, consumer defined)")
	}
	return nil
}

// eventRules are the rules that explain each event.
var eventRules = map[rdmacm.EventType][]string{
	rdmacm.EventAddrResolved:    {"CM-09"},
	rdmacm.EventAddrError:       {"CM-09"},
	rdmacm.EventRouteResolved:   {"CM-10"},
	rdmacm.EventRouteError:      {"CM-10"},
	rdmacm.EventConnectRequest:  {"CM-14"},
	rdmacm.EventConnectResponse: {"CM-17"},
	rdmacm.EventEstablished:     {"CM-17"},
	rdmacm.EventRejected:        {"CM-15", "CM-19"},
	rdmacm.EventUnreachable:     {"CM-20", "CM-23"},
	rdmacm.EventDisconnected:    {"CM-21"},
	rdmacm.EventTimewaitExit:    {"CM-21"},
	rdmacm.EventDeviceRemoval:   {"CM-24"},
}

// cmSnapshot adds the connection manager's objects to the state.
func (in *interp) cmSnapshot(st *State, name string) {
	switch in.obj.kind[name] {
	case "cm_channel":
		ch := in.cm.ch[name]
		c := CMChannelState{Name: name, Destroyed: ch.Destroyed(), Pending: []string{}}
		for _, p := range ch.Pending() {
			c.Pending = append(c.Pending, in.renameIn(p))
		}
		st.CMChannels = append(st.CMChannels, c)
	case "id":
		x := in.cm.id[name]
		s := CMIDState{Name: name, PortSpace: strings.TrimPrefix(in.cm.ps[name].String(), "RDMA_PS_"), State: x.State(),
			Destroyed: x.Destroyed()}
		if l := x.LocalAddr(); l.Addr().IsValid() {
			s.Local = l.String()
		}
		if p := x.PeerAddr(); p.Addr().IsValid() && p.Port() != 0 {
			s.Peer = p.String()
		}
		if c, ok := sim.ContextOf(x.Verbs()); ok {
			s.Device = c.Device().Name()
		}
		s.Read, s.Acked = x.EventCounts()
		st.IDs = append(st.IDs, s)
	}
}

// renameIn replaces the trace names inside a text (a CM event a channel
// holds, a CM timer's owner), longest first.
func (in *interp) renameIn(s string) string {
	keys := make([]string, 0, len(in.alias))
	for k := range in.alias {
		if strings.Contains(s, k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) })
	for _, k := range keys {
		s = strings.ReplaceAll(s, k, in.alias[k])
	}
	return s
}
