package conformance

import (
	"fmt"

	"github.com/verbsim/verbsim/conformance/model"
	"pgregory.net/rapid"
)

// This file runs Machine as a rapid state machine (StateMachine).

// Limits on the state machine's world, to keep runs short and objects
// shared.
const (
	smMaxCQs      = 8
	smMaxChannels = 3
)

// StateMachine runs a rapid state machine against the device newDevice
// makes: random operations on up to eight CQs and three channels (create,
// arm, inject completions, poll, read and ack events, resize, destroy, read
// and ack async events, hold and release) and up to six QPs on those CQs
// (create, modify, post sends and receives, flush into the CQs by moving to
// ERR, reset, destroy; statemachine_qp.go), each applied to the device and
// to the reference model, with every outcome compared and the invariants of
// model.History checked after every step. The device's Profile picks the
// model's readings. Injected completions need the Injector capability and
// references the Referencer capability; without them those steps are
// skipped.
//
// Run it with rapid.Check, or as a fuzz target with rapid.MakeFuzz.
func StateMachine(t *rapid.T, newDevice NewDevice) {
	m, err := NewMachine(newDevice)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s := &smRun{m: m}
	// Start from a drawn world of a few channels and CQs, so that the
	// repeated steps spend their budget on interleavings.
	for range rapid.IntRange(1, smMaxChannels).Draw(t, "channels") {
		s.step(t, Op{Kind: OpCreateChannel})
	}
	for range rapid.IntRange(1, 4).Draw(t, "cqs") {
		n, above := s.size(t)
		s.step(t, Op{Kind: OpCreateCQ, N: n, AboveMax: above, Channel: s.channelOrNone(t)})
		// Arm before any completion arrives, as the consumer recipe does
		// (NOTIFY-14): 0 next, 1 solicited, 2 not at all.
		if a := rapid.IntRange(0, 2).Draw(t, "arm"); a < 2 && len(s.m.cqs) > 0 {
			s.step(t, Op{Kind: OpArm, CQ: len(s.m.cqs) - 1, Solicited: a == 1})
		}
	}
	s.startQPs(t)
	actions := []smAction{
		{"create-channel", 1, s.createChannel},
		{"create-cq", 1, s.createCQ},
		{"arm", 3, s.arm},
		{"push", 3, s.push},
		{"push-burst", 1, s.pushBurst},
		{"poll", 2, s.poll},
		{"get-event", 3, s.getEvent},
		{"ack", 2, s.ack},
		{"consume", 2, s.consume},
		{"resize", 1, s.resize},
		{"destroy-cq", 1, s.destroyCQ},
		{"destroy-channel", 1, s.destroyChannel},
		{"get-async", 1, s.getAsync},
		{"ack-async", 1, s.ackAsync},
		{"ref", 1, s.ref},
		{"unref", 1, s.unref},
	}
	repeatWeighted(t, func(t *rapid.T) {
		if err := m.Check(); err != nil {
			t.Fatal(err)
		}
	}, append(actions, s.qpSteps()...))
}

// smAction is one action of a rapid state machine, drawn w times as often
// as an action of weight 1.
type smAction struct {
	name string
	w    int
	f    func(*rapid.T)
}

// repeatWeighted runs the actions with t.Repeat, check after each. rapid
// picks actions uniformly, so an action of weight w gets w entries, named
// "action", "action/2"...
func repeatWeighted(t *rapid.T, check func(*rapid.T), as []smAction) {
	actions := map[string]func(*rapid.T){"": check}
	for _, a := range as {
		for j := range a.w {
			name := a.name
			if j > 0 {
				name = fmt.Sprintf("%s/%d", a.name, j+1)
			}
			actions[name] = a.f
		}
	}
	t.Repeat(actions)
}

// smRun holds one run of StateMachine: the machine and how steps draw their
// arguments.
//
// A step whose precondition fails (no CQ yet, no async event read, CQs
// without a capability) does nothing rather than calling t.Skip: under
// rapid.MakeFuzz the input may keep choosing the same step, and rapid gives
// up on a run where every choice is skipped.
type smRun struct {
	m    *Machine
	wrid uint64
}

func (s *smRun) step(t *rapid.T, op Op) {
	t.Helper()
	t.Log(op.String())
	if err := s.m.Apply(op); err != nil {
		t.Fatal(err)
	}
}

// pick draws an index below n, those for which first holds being likelier
// (rapid favours the front of a SampledFrom list). ok is false when n is 0.
func (s *smRun) pick(t *rapid.T, label string, n int, first func(int) bool) (i int, ok bool) {
	if n == 0 {
		return 0, false
	}
	var front, back []int
	for i := range n {
		if first(i) {
			front = append(front, i)
		} else {
			back = append(back, i)
		}
	}
	return rapid.SampledFrom(append(front, back...)).Draw(t, label), true
}

// anyCQ draws a CQ, live ones first.
func (s *smRun) anyCQ(t *rapid.T) (int, bool) {
	return s.pick(t, "cq", len(s.m.cqs), func(i int) bool { return s.m.m.State(i) == model.Live })
}

// anyChannel draws a channel, those with unread events first.
func (s *smRun) anyChannel(t *rapid.T) (int, bool) {
	return s.pick(t, "channel", len(s.m.channels), func(i int) bool { n, _ := s.m.m.Unread(i); return n > 0 })
}

// channelOrNone draws a channel, or less often -1 (none).
func (s *smRun) channelOrNone(t *rapid.T) int {
	n := len(s.m.channels)
	k := rapid.IntRange(0, 3*n).Draw(t, "channel")
	if k == 3*n {
		return -1
	}
	return k % n
}

// size draws a cqe: half the time a small valid value, so that overruns are
// common, otherwise anything from -1 to max_cqe+1 (max_cqe+1 alone when
// max_cqe is large).
func (s *smRun) size(t *rapid.T) (n int, aboveMax bool) {
	top := 9
	if s.m.lim.MaxCQE <= smallMaxCQE {
		top = s.m.lim.MaxCQE
	}
	n = rapid.OneOf(rapid.IntRange(1, 4), rapid.IntRange(0, top+2)).Draw(t, "cqe")
	if n == top+2 {
		return -1, false
	}
	return n, n == top+1
}

// cqWith draws a CQ if there is one and the CQs have capability c (nil: no
// capability needed).
func (s *smRun) cqWith(t *rapid.T, c func(CQ) bool) (int, bool) {
	if len(s.m.cqs) > 0 && c != nil && !c(s.m.cqs[0]) {
		return 0, false
	}
	return s.anyCQ(t)
}

func injectable(q CQ) bool { _, ok := q.(Injector); return ok }

func referencer(q CQ) bool { _, ok := q.(Referencer); return ok }

func (s *smRun) createChannel(t *rapid.T) {
	if len(s.m.channels) < smMaxChannels {
		s.step(t, Op{Kind: OpCreateChannel})
	}
}

func (s *smRun) createCQ(t *rapid.T) {
	if len(s.m.cqs) >= smMaxCQs {
		return
	}
	n, above := s.size(t)
	ch := s.channelOrNone(t)
	vec := rapid.SampledFrom([]int{0, 0, 0, s.m.lim.NumCompVectors - 1, -1, s.m.lim.NumCompVectors}).Draw(t, "vector")
	s.step(t, Op{Kind: OpCreateCQ, N: n, AboveMax: above, Channel: ch, Vector: vec})
}

func (s *smRun) arm(t *rapid.T) {
	if i, ok := s.anyCQ(t); ok {
		s.step(t, Op{Kind: OpArm, CQ: i, Solicited: rapid.Bool().Draw(t, "solicited")})
	}
}

func (s *smRun) pushTo(t *rapid.T, i int) {
	k := WCKind(rapid.IntRange(0, int(NumWCKinds)-1).Draw(t, "kind"))
	s.wrid++
	s.step(t, Op{Kind: OpPush, CQ: i, WC: k.WC(s.wrid), Solicited: rapid.Bool().Draw(t, "solicited")})
}

func (s *smRun) push(t *rapid.T) {
	if i, ok := s.cqWith(t, injectable); ok {
		s.pushTo(t, i)
	}
}

func (s *smRun) pushBurst(t *rapid.T) {
	if i, ok := s.cqWith(t, injectable); ok {
		for range rapid.IntRange(2, 9).Draw(t, "burst") {
			s.pushTo(t, i)
		}
	}
}

func (s *smRun) poll(t *rapid.T) {
	if i, ok := s.anyCQ(t); ok {
		s.step(t, Op{Kind: OpPoll, CQ: i, N: rapid.IntRange(0, 10).Draw(t, "n"), Ex: rapid.Bool().Draw(t, "ex")})
	}
}

func (s *smRun) getEvent(t *rapid.T) {
	if ch, ok := s.anyChannel(t); ok {
		s.step(t, Op{Kind: OpGetEvent, Channel: ch})
	}
}

// consume is one turn of the consumer loop of NOTIFY-14 on a channel: read
// an event; if there was one, ack it, re-arm its CQ and poll it.
func (s *smRun) consume(t *rapid.T) {
	ch, ok := s.anyChannel(t)
	if !ok {
		return
	}
	s.step(t, Op{Kind: OpGetEvent, Channel: ch})
	i := s.m.lastEventCQ
	if i < 0 {
		return
	}
	s.step(t, Op{Kind: OpAck, CQ: i, N: 1})
	s.step(t, Op{Kind: OpArm, CQ: i, Solicited: rapid.Bool().Draw(t, "solicited")})
	s.step(t, Op{Kind: OpPoll, CQ: i, N: rapid.IntRange(1, 10).Draw(t, "n"), Ex: rapid.Bool().Draw(t, "ex")})
}

// ack acks 0..3 events, or -1, on a CQ, those owing acks first.
func (s *smRun) ack(t *rapid.T) {
	i, ok := s.pick(t, "cq", len(s.m.cqs), func(i int) bool {
		q := s.m.m.CQ(i)
		return q.CompRead > q.CompAcked
	})
	if !ok {
		return
	}
	n := rapid.IntRange(0, 4).Draw(t, "n")
	if n == 4 {
		n = -1
	}
	s.step(t, Op{Kind: OpAck, CQ: i, N: n})
}

func (s *smRun) resize(t *rapid.T) {
	if i, ok := s.anyCQ(t); ok {
		n, above := s.size(t)
		s.step(t, Op{Kind: OpResize, CQ: i, N: n, AboveMax: above})
	}
}

func (s *smRun) destroyCQ(t *rapid.T) {
	if i, ok := s.anyCQ(t); ok {
		s.step(t, Op{Kind: OpDestroyCQ, CQ: i})
	}
}

func (s *smRun) destroyChannel(t *rapid.T) {
	if ch, ok := s.anyChannel(t); ok {
		s.step(t, Op{Kind: OpDestroyChannel, Channel: ch})
	}
}

func (s *smRun) getAsync(t *rapid.T) {
	s.step(t, Op{Kind: OpGetAsync})
}

func (s *smRun) ackAsync(t *rapid.T) {
	if len(s.m.async) > 0 {
		s.step(t, Op{Kind: OpAckAsync, N: rapid.IntRange(0, len(s.m.async)-1).Draw(t, "event")})
	}
}

func (s *smRun) ref(t *rapid.T) {
	if i, ok := s.cqWith(t, referencer); ok {
		s.step(t, Op{Kind: OpRef, CQ: i})
	}
}

func (s *smRun) unref(t *rapid.T) {
	var held []int
	for i := range s.m.cqs {
		if s.m.m.CQ(i).Refs > 0 {
			held = append(held, i)
		}
	}
	if len(held) > 0 {
		s.step(t, Op{Kind: OpUnref, CQ: rapid.SampledFrom(held).Draw(t, "cq")})
	}
}
