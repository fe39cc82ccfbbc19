package scenario

import (
	"fmt"
	"strings"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/trace"
)

// State is what a learner sees of the fabric after a step. It is plain
// data, the same in the text and the JSON timeline.
type State struct {
	TimeNS   uint64         `json:"time_ns"`
	CQs      []CQState      `json:"cqs,omitempty"`
	Channels []ChannelState `json:"channels,omitempty"`
	QPs      []QPState      `json:"qps,omitempty"`
	SRQs     []SRQState     `json:"srqs,omitempty"`
	Async    []AsyncState   `json:"async,omitempty"`
	// CMChannels and IDs are the connection manager's event channels and
	// IDs.
	CMChannels []CMChannelState `json:"cm_channels,omitempty"`
	IDs        []CMIDState      `json:"cm_ids,omitempty"`
	// InFlight lists the engine events ready to run now: packets on the
	// wire and QPs with work to do.
	InFlight []string `json:"in_flight,omitempty"`
	// Future lists the armed timers and delayed packets, by due time.
	Future []string `json:"future,omitempty"`
}

// CQState is one CQ.
type CQState struct {
	Name      string   `json:"name"`
	Device    string   `json:"device"`
	Channel   string   `json:"channel,omitempty"` // the completion channel it reports to
	CQE       int      `json:"cqe"`
	Ring      []WCView `json:"ring"`
	Arm       string   `json:"arm"` // none, next or solicited
	Read      uint64   `json:"events_read"`
	Acked     uint64   `json:"events_acked"`
	Overrun   bool     `json:"overrun,omitempty"`
	Destroyed bool     `json:"destroyed,omitempty"`
	// Destroying is a destroy begun and not finished: it waits for the
	// acks of the events read (CQ-13).
	Destroying bool `json:"destroying,omitempty"`
}

// WCView is one completion waiting in a CQ's ring.
type WCView struct {
	WRID   uint64 `json:"wr_id"`
	Status string `json:"status"`
	Opcode string `json:"opcode,omitempty"` // empty for an error completion, whose opcode is not valid
}

// ChannelState is one completion channel.
type ChannelState struct {
	Name      string   `json:"name"`
	Pending   []string `json:"pending"` // the CQs the queued events name, oldest first
	Destroyed bool     `json:"destroyed,omitempty"`
}

// QPState is one QP.
type QPState struct {
	Name      string `json:"name"`
	Num       uint32 `json:"qp_num"`
	Device    string `json:"device"`
	Type      string `json:"type"`
	State     string `json:"state"`
	SendBusy  int    `json:"send_outstanding"`
	SendCap   uint32 `json:"max_send_wr"`
	RecvBusy  int    `json:"recv_outstanding"`
	RecvCap   uint32 `json:"max_recv_wr"`
	Destroyed bool   `json:"destroyed,omitempty"`
}

// SRQState is one SRQ.
type SRQState struct {
	Name   string `json:"name"`
	Len    int    `json:"posted"`
	MaxWR  uint32 `json:"max_wr"`
	Limit  uint32 `json:"srq_limit"`
	Broken bool   `json:"destroyed,omitempty"`
}

// AsyncState is one context's async event queue.
type AsyncState struct {
	Ctx     string   `json:"ctx"`
	Pending []string `json:"pending"`
	Read    uint64   `json:"read"`
	Acked   uint64   `json:"acked"`
}

// CMChannelState is one event channel of the connection manager.
type CMChannelState struct {
	Name      string   `json:"name"`
	Pending   []string `json:"pending"` // the events queued and not yet read, oldest first
	Destroyed bool     `json:"destroyed,omitempty"`
}

// CMIDState is one ID of the connection manager.
type CMIDState struct {
	Name      string `json:"name"`
	PortSpace string `json:"port_space"`
	State     string `json:"state"`            // the kernel's name: IDLE, ADDR_BOUND, LISTEN, CONNECT...
	Device    string `json:"device,omitempty"` // the device it is bound to, once it is
	Local     string `json:"local,omitempty"`
	Peer      string `json:"peer,omitempty"`
	Read      int    `json:"events_read"`
	Acked     int    `json:"events_acked"`
	Destroyed bool   `json:"destroyed,omitempty"`
}

// snapshot reads the state of every named object.
func (in *interp) snapshot() State {
	st := State{TimeNS: in.now()}
	if in.f == nil {
		return st
	}
	for _, name := range in.obj.order {
		switch in.obj.kind[name] {
		case "cq":
			s := in.obj.cq[name].Snapshot()
			c := CQState{Name: name, Device: in.obj.cqDev[name], Channel: in.obj.cqChan[name], CQE: s.CQE, Arm: armName(s.Arm.String()), Read: s.CompRead, Acked: s.CompAcked,
				Overrun: s.Overrun, Destroyed: s.Destroyed, Destroying: s.Destroying && !s.Destroyed, Ring: []WCView{}}
			for _, w := range s.Completions {
				v := WCView{WRID: w.WRID, Status: statusName(w.Status)}
				if w.Status == 0 {
					v.Opcode = opName(w.Opcode)
				}
				c.Ring = append(c.Ring, v)
			}
			st.CQs = append(st.CQs, c)
		case "channel":
			ch := in.obj.ch[name]
			c := ChannelState{Name: name, Destroyed: ch.Destroyed(), Pending: []string{}}
			for _, q := range ch.Pending() {
				c.Pending = append(c.Pending, in.cqName(q))
			}
			st.Channels = append(st.Channels, c)
		case "qp":
			o := in.obj.qp[name]
			send, recv := o.q.Outstanding()
			cp := o.q.Cap()
			st.QPs = append(st.QPs, QPState{Name: name, Num: o.q.Num(), Device: o.dev, Type: o.q.Type().String(),
				State: o.q.State().String(), SendBusy: send, SendCap: cp.MaxSendWR, RecvBusy: recv, RecvCap: cp.MaxRecvWR,
				Destroyed: o.q.Destroyed()})
		case "srq":
			s := in.obj.srq[name]
			attr, err := s.Query()
			st.SRQs = append(st.SRQs, SRQState{Name: name, Len: s.Len(), MaxWR: attr.MaxWR, Limit: attr.SRQLimit, Broken: err != nil})
		case "ctx":
			c := in.obj.ctx[name]
			a := AsyncState{Ctx: name, Pending: []string{}}
			a.Read, a.Acked = c.AsyncEventCounts()
			for _, ev := range c.PendingAsyncEvents() {
				a.Pending = append(a.Pending, in.describeAsync(ev))
			}
			st.Async = append(st.Async, a)
		case "cm_channel", "id":
			in.cmSnapshot(&st, name)
		}
	}
	for _, ev := range in.f.Ready() {
		st.InFlight = append(st.InFlight, in.describeReady(ev))
	}
	for _, ev := range in.f.Future() {
		if ev.Timer == trace.TimerCM {
			st.Future = append(st.Future, fmt.Sprintf("at %s: %s", fmtTime(ev.At), in.renameIn(ev.What)))
			continue
		}
		st.Future = append(st.Future, fmt.Sprintf("at %s: %s on qp %s", fmtTime(ev.At), ev.What, in.qpName(ev.Device, ev.QPN)))
	}
	return st
}

func armName(s string) string {
	if s == "disarmed" {
		return "none"
	}
	return s
}

func (in *interp) describeReady(ev sim.ReadyEvent) string {
	switch ev.Kind {
	case sim.EventPacket:
		if ev.QPN == 1 {
			return "a CM message (a MAD to QP 1) for the connection manager of " + ev.Device
		}
		return fmt.Sprintf("packet %v psn %d to qp %s on %s", ev.Packet, ev.PSN, in.qpName(ev.Device, ev.QPN), ev.Device)
	case sim.EventRun:
		return fmt.Sprintf("qp %s has work to do (its requester or responder runs next)", in.qpName(ev.Device, ev.QPN))
	case sim.EventTimer:
		return fmt.Sprintf("a timer of qp %s has come due", in.qpName(ev.Device, ev.QPN))
	}
	return ev.Kind.String()
}

// lines renders the state as one line per object, keyed by the object,
// for the text timeline (which prints only the lines that changed).
func (s State) lines() (keys, text []string) {
	add := func(k, t string) { keys, text = append(keys, k), append(text, t) }
	for _, c := range s.CQs {
		if c.Destroyed {
			add("cq "+c.Name, fmt.Sprintf("cq %s: destroyed", c.Name))
			continue
		}
		if c.Destroying {
			add("cq "+c.Name, fmt.Sprintf("cq %s: being destroyed, waiting for acks: events read %d, acked %d", c.Name, c.Read, c.Acked))
			continue
		}
		var ring []string
		for _, w := range c.Ring {
			if w.Opcode != "" {
				ring = append(ring, fmt.Sprintf("%d %s", w.WRID, w.Opcode))
			} else {
				ring = append(ring, fmt.Sprintf("%d %s", w.WRID, w.Status))
			}
		}
		over := ""
		if c.Overrun {
			over = "  IN ERROR (overrun)"
		}
		add("cq "+c.Name, fmt.Sprintf("cq %s: %d of %d [%s]  armed: %s  events read %d, acked %d%s",
			c.Name, len(c.Ring), c.CQE, strings.Join(ring, ", "), c.Arm, c.Read, c.Acked, over))
	}
	for _, c := range s.Channels {
		if c.Destroyed {
			add("channel "+c.Name, fmt.Sprintf("channel %s: destroyed", c.Name))
			continue
		}
		p := "no event waiting"
		if len(c.Pending) > 0 {
			p = fmt.Sprintf("%d event(s) waiting, for cq %s", len(c.Pending), strings.Join(c.Pending, ", cq "))
		}
		add("channel "+c.Name, fmt.Sprintf("channel %s: %s", c.Name, p))
	}
	for _, q := range s.QPs {
		if q.Destroyed {
			add("qp "+q.Name, fmt.Sprintf("qp %s: destroyed", q.Name))
			continue
		}
		recv := fmt.Sprintf("recv queue %d of %d", q.RecvBusy, q.RecvCap)
		if q.RecvCap == 0 {
			recv = "receives from its SRQ"
		}
		add("qp "+q.Name, fmt.Sprintf("qp %s (%s %#x on %s): %s  send queue %d of %d  %s",
			q.Name, q.Type, q.Num, q.Device, q.State, q.SendBusy, q.SendCap, recv))
	}
	for _, r := range s.SRQs {
		lim := "limit not armed"
		if r.Limit > 0 {
			lim = fmt.Sprintf("limit armed at %d", r.Limit)
		}
		add("srq "+r.Name, fmt.Sprintf("srq %s: %d of %d receive WRs posted, %s", r.Name, r.Len, r.MaxWR, lim))
	}
	for _, a := range s.Async {
		if len(a.Pending) == 0 && a.Read == 0 {
			continue
		}
		p := "none waiting"
		if len(a.Pending) > 0 {
			p = strings.Join(a.Pending, "; ") + " waiting"
		}
		add("async "+a.Ctx, fmt.Sprintf("async events of %s: %s; read %d, acked %d", a.Ctx, p, a.Read, a.Acked))
	}
	for _, c := range s.CMChannels {
		switch {
		case c.Destroyed:
			add("cm channel "+c.Name, fmt.Sprintf("channel %s: destroyed", c.Name))
		case len(c.Pending) == 0:
			add("cm channel "+c.Name, fmt.Sprintf("channel %s: no event waiting", c.Name))
		default:
			add("cm channel "+c.Name, fmt.Sprintf("channel %s: %d event(s) waiting: %s", c.Name, len(c.Pending), strings.Join(c.Pending, "; ")))
		}
	}
	for _, id := range s.IDs {
		if id.Destroyed {
			add("id "+id.Name, fmt.Sprintf("id %s: destroyed", id.Name))
			continue
		}
		where := ""
		switch {
		case id.Local != "" && id.Peer != "":
			where = " " + id.Local + " → " + id.Peer
		case id.Local != "":
			where = " " + id.Local
		}
		add("id "+id.Name, fmt.Sprintf("id %s (%s%s): %s  events read %d, acked %d", id.Name, id.PortSpace, where, id.State, id.Read, id.Acked))
	}
	if len(s.InFlight) > 0 {
		add("wire", "ready to run: "+strings.Join(s.InFlight, "; "))
	} else {
		add("wire", "ready to run: nothing")
	}
	if len(s.Future) > 0 {
		add("future", "later: "+strings.Join(s.Future, "; "))
	} else {
		add("future", "later: nothing")
	}
	return keys, text
}
