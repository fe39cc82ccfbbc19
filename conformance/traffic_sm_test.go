package conformance_test

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/conformance/ops"
	"github.com/verbsim/verbsim/conformance/simdev"
	"github.com/verbsim/verbsim/internal/rapidtb"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
	"pgregory.net/rapid"
)

// trafficSteps is the average number of actions of one run of the traffic
// state machine, as ops.TestTrafficStateMachine runs it.
const trafficSteps = 100

// trafficHooks break a traffic fabric: a hook that is set replaces one verb and
// gets the real object. A fresh set is made for every fabric, so that hooks
// may count.
type trafficHooks struct {
	poll     func(q verbs.CQ, wcs []verbs.WC) (int, error)
	postSend func(q verbs.QP, wrs []verbs.SendWR) (int, error)
	postRecv func(q verbs.QP, wrs []verbs.RecvWR) (int, error)
	query    func(q verbs.QP, mask verbs.QPAttrMask) (verbs.QPAttr, verbs.QPInitAttr, error)
	tryAsync func(c verbs.Context) (verbs.AsyncEvent, error)
	outst    func(q verbs.QP) (send, recv int)
	// profile replaces what the fabric claims to follow: a device that
	// behaves under one reading and claims the other.
	profile func(p conformance.TrafficProfile) conformance.TrafficProfile
}

// trafficMutant is a broken fabric and the rules whose checks must catch it.
type trafficMutant struct {
	name   string
	rules  []string // the failure names one of these
	base   sim.Profile
	faults bool
	hooks  func() *trafficHooks
}

func (m trafficMutant) factory() conformance.NewTrafficFabric {
	inner := simdev.TrafficFabric(m.base)
	return func(seed uint64, faults bool) (conformance.TrafficFabric, error) {
		f, err := inner(seed, faults)
		if err != nil {
			return nil, err
		}
		h := &trafficHooks{}
		if m.hooks != nil {
			h = m.hooks()
		}
		return trafficFab{f, h}, nil
	}
}

type trafficFab struct {
	conformance.TrafficFabric
	h *trafficHooks
}

func (f trafficFab) Devices() []conformance.Device {
	var ds []conformance.Device
	for _, d := range f.TrafficFabric.Devices() {
		ds = append(ds, trafficDevice{d, f.h})
	}
	return ds
}

func (f trafficFab) TrafficProfile() conformance.TrafficProfile {
	p := f.TrafficFabric.TrafficProfile()
	if f.h.profile != nil {
		p = f.h.profile(p)
	}
	return p
}

type trafficDevice struct {
	conformance.Device
	h *trafficHooks
}

func (d trafficDevice) Open() (verbs.Context, error) {
	c, err := d.Device.Open()
	if err != nil {
		return nil, err
	}
	return trafficContext{c, d.h}, nil
}

type trafficContext struct {
	verbs.Context
	h *trafficHooks
}

func (c trafficContext) CreateCQ(cqe int, cqContext any, ch verbs.CompChannel, vec int) (verbs.CQ, error) {
	q, err := c.Context.CreateCQ(cqe, cqContext, ch, vec)
	if err != nil {
		return nil, err
	}
	return trafficCQ{q, c.h}, nil
}

func (c trafficContext) AllocPD() (verbs.PD, error) {
	pd, err := c.Context.AllocPD()
	if err != nil {
		return nil, err
	}
	return trafficPD{pd, c.h}, nil
}

func (c trafficContext) TryGetAsyncEvent() (verbs.AsyncEvent, error) {
	if c.h.tryAsync != nil {
		return c.h.tryAsync(c.Context)
	}
	return c.Context.TryGetAsyncEvent()
}

type trafficPD struct {
	verbs.PD
	h *trafficHooks
}

func (p trafficPD) CreateQP(attr verbs.QPInitAttr) (verbs.QP, error) {
	attr.SendCQ, attr.RecvCQ = attr.SendCQ.(trafficCQ).CQ, attr.RecvCQ.(trafficCQ).CQ
	q, err := p.PD.CreateQP(attr)
	if err != nil {
		return nil, err
	}
	return trafficQP{q, p.h}, nil
}

type trafficQP struct {
	verbs.QP
	h *trafficHooks
}

func (q trafficQP) PostSend(wrs []verbs.SendWR) (int, error) {
	if q.h.postSend != nil {
		return q.h.postSend(q.QP, wrs)
	}
	return q.QP.PostSend(wrs)
}

func (q trafficQP) PostRecv(wrs []verbs.RecvWR) (int, error) {
	if q.h.postRecv != nil {
		return q.h.postRecv(q.QP, wrs)
	}
	return q.QP.PostRecv(wrs)
}

func (q trafficQP) Query(mask verbs.QPAttrMask) (verbs.QPAttr, verbs.QPInitAttr, error) {
	if q.h.query != nil {
		return q.h.query(q.QP, mask)
	}
	return q.QP.Query(mask)
}

// Outstanding implements conformance.Outstander when the inner QP does.
func (q trafficQP) Outstanding() (send, recv int) {
	if q.h.outst != nil {
		return q.h.outst(q.QP)
	}
	return q.QP.(conformance.Outstander).Outstanding()
}

type trafficCQ struct {
	verbs.CQ
	h *trafficHooks
}

func (q trafficCQ) Poll(wcs []verbs.WC) (int, error) {
	if q.h.poll != nil {
		return q.h.poll(q.CQ, wcs)
	}
	return q.CQ.Poll(wcs)
}

// rewrite returns a poll hook that applies f to every completion polled.
func rewrite(f func(w *verbs.WC)) func() *trafficHooks {
	return func() *trafficHooks {
		return &trafficHooks{poll: func(q verbs.CQ, wcs []verbs.WC) (int, error) {
			n, err := q.Poll(wcs)
			for i := range wcs[:n] {
				f(&wcs[i])
			}
			return n, err
		}}
	}
}

// everyFourth returns a poll hook that applies f to every fourth poll that
// returned something.
func everyFourth(f func(wcs []verbs.WC, n int) int) func() *trafficHooks {
	return func() *trafficHooks {
		count := 0
		return &trafficHooks{poll: func(q verbs.CQ, wcs []verbs.WC) (int, error) {
			n, err := q.Poll(wcs)
			if n > 0 {
				if count++; count%4 == 0 {
					n = f(wcs, n)
				}
			}
			return n, err
		}}
	}
}

// sends returns a post-send hook that applies f to a copy of every request.
func sends(f func(w *verbs.SendWR)) func() *trafficHooks {
	return func() *trafficHooks {
		return &trafficHooks{postSend: func(q verbs.QP, wrs []verbs.SendWR) (int, error) {
			out := slices.Clone(wrs)
			for i := range out {
				out[i].SGList = slices.Clone(out[i].SGList)
				f(&out[i])
			}
			return q.PostSend(out)
		}}
	}
}

func isWrite(op verbs.WROpcode) bool {
	return op == verbs.WRRDMAWrite || op == verbs.WRRDMAWriteWithImm
}

// trafficMutants are broken fabrics the traffic state machine must catch.
func trafficMutants() []trafficMutant {
	def, rxe := sim.DefaultProfile(), sim.RXEProfile()
	recvOK := func(w *verbs.WC) bool { return w.Status == verbs.WCSuccess && w.Opcode.IsRecv() }
	return []trafficMutant{
		{name: "receive byte_len off by one", rules: []string{"WC-10"}, base: def,
			hooks: rewrite(func(w *verbs.WC) {
				if recvOK(w) {
					w.ByteLen++
				}
			})},
		{name: "receive byte_len off by one, under faults", rules: []string{"WC-10", "XFER-26", "XFER-21"}, base: def, faults: true,
			hooks: rewrite(func(w *verbs.WC) {
				if recvOK(w) {
					w.ByteLen++
				}
			})},
		{name: "imm_data altered", rules: []string{"WC-09"}, base: def,
			hooks: rewrite(func(w *verbs.WC) {
				if recvOK(w) && w.WCFlags&verbs.WCWithImm != 0 {
					w.ImmData ^= 1
				}
			})},
		{name: "UD src_qp altered", rules: []string{"WC-12"}, base: def,
			hooks: rewrite(func(w *verbs.WC) { w.SrcQP ^= 1 })},
		{name: "send opcode always SEND", rules: []string{"WC-04"}, base: def,
			hooks: rewrite(func(w *verbs.WC) {
				if !w.Opcode.IsRecv() {
					w.Opcode = verbs.WCSend
				}
			})},
		{name: "receive completions have IBV_WC_RECV clear", rules: []string{"WC-06"}, base: def,
			hooks: rewrite(func(w *verbs.WC) {
				if recvOK(w) {
					w.Opcode &^= verbs.WCRecv
				}
			})},
		{name: "send completions read DRIVER1", rules: []string{"WC-06"}, base: def,
			hooks: rewrite(func(w *verbs.WC) {
				if w.Status == verbs.WCSuccess && !w.Opcode.IsRecv() {
					w.Opcode = verbs.WCDriver1
				}
			})},
		{name: "RECV_RDMA_WITH_IMM reads TM_RECV", rules: []string{"WC-06"}, base: def,
			hooks: rewrite(func(w *verbs.WC) {
				if w.Status == verbs.WCSuccess && w.Opcode == verbs.WCRecvRDMAWithImm {
					w.Opcode = verbs.WCTMRecv
				}
			})},
		{name: "flushes read INV_EEC_STATE_ERR, an RD status", rules: []string{"WC-S18"}, base: rxe,
			hooks: rewrite(func(w *verbs.WC) {
				if w.Status == verbs.WCWRFlushErr {
					w.Status = verbs.WCInvEECStateErr
				}
			})},
		// A wr_id the suite does not know is also a completion of no
		// receive request it posted (WC-06), whichever check sees it first.
		{name: "wr_id loses its high bits", rules: []string{"WC-01", "WC-06"}, base: def,
			hooks: rewrite(func(w *verbs.WC) { w.WRID &= 0xffffffff })},
		// A flush turned into a success keeps the undefined opcode of the
		// flush, which may not match the queue (WC-06).
		{name: "flush reported as success", rules: []string{"FLUSH", "CQ-19", "WC-06"}, base: def,
			hooks: rewrite(func(w *verbs.WC) {
				if w.Status == verbs.WCWRFlushErr {
					w.Status = verbs.WCSuccess
				}
			})},
		{name: "rxe reading of XFER-05 under the default profile", rules: []string{"XFER-05"}, base: def,
			hooks: rewrite(func(w *verbs.WC) {
				if w.Status == verbs.WCLocLenErr {
					w.Status = verbs.WCRemInvReqErr
				}
			})},
		{name: "default reading of XFER-05 under rxe", rules: []string{"XFER-05"}, base: rxe,
			hooks: rewrite(func(w *verbs.WC) {
				if w.Status == verbs.WCRemInvReqErr {
					w.Status = verbs.WCLocLenErr
				}
			})},
		{name: "RNR exhaustion reported as transport retry exhaustion", rules: []string{"XFER-07"}, base: def,
			hooks: rewrite(func(w *verbs.WC) {
				if w.Status == verbs.WCRNRRetryExcErr {
					w.Status = verbs.WCRetryExcErr
				}
			})},
		{name: "a completion lost", rules: []string{"is missing", "CQ-18", "XFER-01"}, base: def,
			hooks: everyFourth(func(wcs []verbs.WC, n int) int { return copy(wcs, wcs[1:n]) })},
		{name: "a completion lost, under faults", rules: []string{"is missing", "CQ-18", "XFER-01"}, base: rxe, faults: true,
			hooks: everyFourth(func(wcs []verbs.WC, n int) int { return copy(wcs, wcs[1:n]) })},
		{name: "a completion twice", rules: []string{"CQ-17"}, base: def,
			hooks: everyFourth(func(wcs []verbs.WC, n int) int {
				if n < len(wcs) {
					wcs[n] = wcs[n-1]
					n++
				}
				return n
			})},
		{name: "a batch reversed", rules: []string{"CQ-18", "XFER-01"}, base: def,
			hooks: rewriteBatch(func(wcs []verbs.WC) { slices.Reverse(wcs) })},
		{name: "unsignaled requests signaled", rules: []string{"CQ-19"}, base: def,
			hooks: sends(func(w *verbs.SendWR) { w.Flags |= verbs.SendSignaled })},
		{name: "gather list reversed", rules: []string{"XFER-03", "XFER-02", "XFER-21", "XFER-11", "XFER-12", "XFER-18"}, base: def,
			hooks: sends(func(w *verbs.SendWR) { slices.Reverse(w.SGList) })},
		{name: "WRITE lands a byte late", rules: []string{"XFER-11", "XFER-12", "XFER-18", "XFER-14"}, base: def,
			hooks: sends(func(w *verbs.SendWR) {
				if isWrite(w.Opcode) {
					w.RemoteAddr++
				}
			})},
		{name: "receive scatter list shifted", rules: []string{"XFER-02", "XFER-21", "XFER-12"}, base: def,
			hooks: func() *trafficHooks {
				return &trafficHooks{postRecv: func(q verbs.QP, wrs []verbs.RecvWR) (int, error) {
					out := slices.Clone(wrs)
					for i := range out {
						if len(out[i].SGList) > 0 {
							out[i].SGList = slices.Clone(out[i].SGList)
							out[i].SGList[0].Addr++
						}
					}
					return q.PostRecv(out)
				}}
			}},
		{name: "QP error events swallowed", rules: []string{"ASYNC-09"}, base: def,
			hooks: func() *trafficHooks {
				return &trafficHooks{tryAsync: func(c verbs.Context) (verbs.AsyncEvent, error) {
					for {
						ev, err := c.TryGetAsyncEvent()
						if err != nil || ev.EventType() != verbs.EventQPReqErr {
							return ev, err
						}
						_ = ev.Ack()
					}
				}}
			}},
		{name: "a consumed receive still counted outstanding", rules: []string{"outstanding"}, base: def,
			hooks: func() *trafficHooks {
				return &trafficHooks{outst: func(q verbs.QP) (int, int) {
					s, r := q.(conformance.Outstander).Outstanding()
					return s, r + 1
				}}
			}},
		// QP-29, QP-31: the state machine posts past reading A's room under
		// B, and to a full queue under either.
		{name: "frees slots on poll, claims QP-29 reading B", rules: []string{"QP-29", "QP-31"}, base: def,
			hooks: claimFreeSlotOnRetire(true)},
		{name: "frees slots on retire, claims QP-29 reading A", rules: []string{"QP-29", "QP-31"}, base: rxe,
			hooks: claimFreeSlotOnRetire(false)},
		{name: "frees slots on poll, claims QP-29 reading B, under faults", rules: []string{"QP-29", "QP-31"}, base: def, faults: true,
			hooks: claimFreeSlotOnRetire(true)},
		{name: "a full send queue refuses with EAGAIN", rules: []string{"QP-27"}, base: def,
			hooks: func() *trafficHooks {
				return &trafficHooks{postSend: func(q verbs.QP, wrs []verbs.SendWR) (int, error) {
					n, err := q.PostSend(wrs)
					if errors.Is(err, syscall.ENOMEM) {
						err = syscall.EAGAIN
					}
					return n, err
				}}
			}},
		{name: "state reads RTS in ERR", rules: []string{"QP-24"}, base: def,
			hooks: func() *trafficHooks {
				return &trafficHooks{query: func(q verbs.QP, mask verbs.QPAttrMask) (verbs.QPAttr, verbs.QPInitAttr, error) {
					a, ia, err := q.Query(mask)
					if a.QPState == verbs.QPStateErr {
						a.QPState = verbs.QPStateRTS
					}
					return a, ia, err
				}}
			}},
		// Memory windows (ops/traffic_mw.go).
		{name: "a failed bind reported as a successful one", rules: []string{"MW-05"}, base: def,
			hooks: rewrite(func(w *verbs.WC) {
				if w.Status == verbs.WCMWBindErr {
					w.Status, w.Opcode = verbs.WCSuccess, verbs.WCBindMW
				}
			})},
		{name: "a LOCAL_INV of nothing reported as a success", rules: []string{"MW-07"}, base: rxe,
			hooks: rewrite(func(w *verbs.WC) {
				if w.Status == verbs.WCLocQPOpErr {
					w.Status, w.Opcode = verbs.WCSuccess, verbs.WCLocalInv
				}
			})},
		{name: "an rxe fabric claims XFER-29 A: a failed SEND_WITH_INV acknowledged", rules: []string{"XFER-29", "MW-07"}, base: rxe,
			hooks: func() *trafficHooks {
				return &trafficHooks{profile: func(p conformance.TrafficProfile) conformance.TrafficProfile {
					p.SendInvErrAcked = false
					return p
				}}
			}},
		{name: "READs and atomics aim 8 bytes further", rules: []string{"XFER-13", "XFER-17", "MW-06", "QP-24"}, base: def,
			hooks: sends(func(w *verbs.SendWR) {
				if w.Opcode == verbs.WRRDMARead || w.Opcode == verbs.WRAtomicCmpAndSwp || w.Opcode == verbs.WRAtomicFetchAndAdd {
					w.RemoteAddr += 8
				}
			})},
	}
}

// claimFreeSlotOnRetire returns hooks under which the fabric claims reading
// B of QP-29 (onRetire) or A, whatever its devices do.
func claimFreeSlotOnRetire(onRetire bool) func() *trafficHooks {
	return func() *trafficHooks {
		return &trafficHooks{profile: func(p conformance.TrafficProfile) conformance.TrafficProfile {
			p.FreeSlotOnRetire = onRetire
			return p
		}}
	}
}

// rewriteBatch returns a poll hook that applies f to every batch polled.
func rewriteBatch(f func(wcs []verbs.WC)) func() *trafficHooks {
	return func() *trafficHooks {
		return &trafficHooks{poll: func(q verbs.CQ, wcs []verbs.WC) (int, error) {
			n, err := q.Poll(wcs)
			f(wcs[:n])
			return n, err
		}}
	}
}

// TestTrafficStateMachineCatchesMutants requires the traffic state machine
// to fail on every broken fabric of trafficMutants, naming one of the
// mutant's rules, and to pass the transparent wrapper.
func TestTrafficStateMachineCatchesMutants(t *testing.T) {
	if testing.Short() {
		t.Skip("a mutant sweep: runs without -short (rapid makes fewer checks under -short, too few to meet every mutant)")
	}
	setFlag(t, "rapid.nofailfile", "true") // failures are expected: leave no fail files
	setFlag(t, "rapid.shrinktime", "1ms")  // detection is all that matters here
	setFlag(t, "rapid.seed", "20261122")   // the same walks on every run
	setFlag(t, "rapid.checks", "200")
	setFlag(t, "rapid.steps", strconv.Itoa(trafficSteps)) // windows need a few steps to be allocated, bound and reached
	for _, p := range sim.Profiles() {
		for _, faults := range []bool{false, true} {
			r := rapidtb.New("identity")
			r.Check(func(rt *rapid.T) { ops.TrafficStateMachine(rt, trafficMutant{base: p}.factory(), faults) })
			if r.Failed() {
				t.Fatalf("profile %s, faults %v: the state machine fails the transparent wrapper:\n%s", p.Name, faults, r.Message())
			}
		}
	}
	for _, m := range trafficMutants() {
		t.Run(m.name, func(t *testing.T) {
			r := rapidtb.New(m.name)
			r.Check(func(rt *rapid.T) { ops.TrafficStateMachine(rt, m.factory(), m.faults) })
			switch msg := r.Message(); {
			case !r.Failed():
				t.Errorf("the traffic state machine passes a fabric that breaks %v", m.rules)
			case !slices.ContainsFunc(m.rules, func(rule string) bool { return strings.Contains(msg, rule) }):
				t.Errorf("caught, but the failure names none of %v:\n%s", m.rules, firstLine(msg))
			}
		})
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
