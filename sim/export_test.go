package sim

import (
	"fmt"
	"strings"

	"github.com/verbsim/verbsim/sim/internal/cq"
	"github.com/verbsim/verbsim/sim/internal/notify"
	"github.com/verbsim/verbsim/sim/internal/qp"
)

// The helpers below let package sim_test's bad-input test see the
// bookkeeping a rejected verb must leave alone.

// DeviceCounts describes d's live objects of each kind, its last QP
// number, its open contexts and its port states.
func DeviceCounts(d *Device) string {
	f := d.fabric
	f.d.Lock()
	defer f.d.Unlock()
	s := fmt.Sprintf("dev %s: cqs=%d pds=%d ahs=%d mrs=%d qps=%d srqs=%d srqn=%d qpn=%d contexts=%d",
		d.name, d.cqs, d.pds, d.ahs, len(d.mrs.byIndex), d.qps, d.srqs, d.srqn, d.qpn, len(d.contexts))
	for _, p := range d.ports {
		s += fmt.Sprintf(" port%d=%v", p.num, p.attr.State)
	}
	return s
}

// ContextCounts describes c's state and live objects.
func ContextCounts(c *Context) string {
	f := c.dev.fabric
	f.d.Lock()
	defer f.d.Unlock()
	return fmt.Sprintf("closed=%v cqs=%d pds=%d pdSeq=%d xrcds=%d", c.closed, c.cqs, c.pds, c.pdSeq, c.xrcds)
}

// XRCDState describes an XRC domain: closed, and its XRC SRQs.
func XRCDState(x *XRCD) string {
	f := x.ctx.dev.fabric
	f.d.Lock()
	defer f.d.Unlock()
	return fmt.Sprintf("dead=%v srqs=%d", x.dead, x.srqs)
}

// PDCounts describes pd's state and children.
func PDCounts(pd *PD) string {
	f := pd.ctx.dev.fabric
	f.d.Lock()
	defer f.d.Unlock()
	return fmt.Sprintf("pd %d: dead=%v children=%v", pd.handle, pd.dead, pd.children)
}

// PDChildren returns pd's count of live objects of kind k.
func PDChildren(pd *PD, k childKind) int {
	f := pd.ctx.dev.fabric
	f.d.Lock()
	defer f.d.Unlock()
	return pd.children[k]
}

// MRUsable reports whether mr's keys may resolve: false once a command
// error of ibv_rereg_mr left it unusable (MR-14).
func MRUsable(mr *MR) bool {
	f := mr.pd.ctx.dev.fabric
	f.d.Lock()
	defer f.d.Unlock()
	return !mr.broken
}

// MWState describes mw: its type, keys, binding and whether it is dead.
func MWState(mw *MW) string {
	f := mw.pd.ctx.dev.fabric
	f.d.Lock()
	defer f.d.Unlock()
	return fmt.Sprintf("type=%v rkey=%#x key=%#x dead=%v bound=%v mr=%p addr=%#x len=%d access=%v live=%d",
		mw.typ, mw.rkey, mw.key, mw.dead, mw.bound, mw.mr, mw.addr, mw.length, mw.access, mw.pd.ctx.dev.mrs.mwLive)
}

// EngineCQ returns the engine object behind a CQ handle, for tests of the
// engine-facing hooks.
func EngineCQ(c *CQ) *cq.CQ { return c.eng() }

// EngineChannel returns the engine object behind a channel handle.
func EngineChannel(ch *CompChannel) *cq.Channel { return ch.eng() }

// EngineQP returns the engine object behind a QP handle.
func EngineQP(q *QP) *qp.QP { return q.eng() }

// EngineSRQ returns the engine object behind an SRQ handle.
func EngineSRQ(s *SRQ) *qp.SRQ { return s.eng() }

// EngineAsyncQueue returns the async event queue of a device context; nil
// for a nil context.
func EngineAsyncQueue(c *Context) *notify.AsyncQueue {
	if c == nil {
		return nil
	}
	return c.async
}

// SetDirect turns the direct path (direct.go) on or off for f: off, every
// message goes through the engine's events.
func SetDirect(f *Fabric, on bool) {
	f.d.Lock()
	defer f.d.Unlock()
	f.eng.noDirect = !on
}

// EngineSeq returns the engine's last sequence number and how many
// messages the direct path carried out.
func EngineSeq(f *Fabric) (seq, directs uint64) {
	f.d.Lock()
	defer f.d.Unlock()
	return f.eng.seq, f.eng.directs
}

// EngineDirectMulti returns how many of the messages the direct path
// carried out had several packets one way.
func EngineDirectMulti(f *Fabric) uint64 {
	f.d.Lock()
	defer f.d.Unlock()
	return f.eng.directMulti
}

// CMState describes the connection manager: each ID's state, bindings,
// connection and event counts, each channel's queue, the bindings.
func CMState(f *Fabric) string {
	f.d.Lock()
	defer f.d.Unlock()
	a := f.cm
	var b strings.Builder
	for _, id := range a.ids {
		conn := "-"
		if id.conn != nil {
			conn = id.conn.state.String()
		}
		qpn := uint32(0)
		if id.qp != nil {
			qpn = id.qp.q.Num()
		}
		fmt.Fprintf(&b, "\n  %s: %v src=%v dst=%v bound=%v conn=%s read=%d acked=%d qp=%#x sync=%v backlog=%d mcs=%d freed=%v",
			id.name, id.state, id.src, id.dst, id.bound, conn, id.reported, id.acked, qpn, id.sync, id.backlog, len(id.mcs), id.freed)
		if id.ch != nil {
			fmt.Fprintf(&b, " chan=%s len=%d ids=%d dead=%v", id.ch.name, id.ch.q.LenLocked(), id.ch.ids, id.ch.dead)
		}
	}
	fmt.Fprintf(&b, "\n  binds=%d conns=%d lastPort=%d", len(a.binds), len(a.conns), a.lastPort)
	return "cm:" + b.String()
}
