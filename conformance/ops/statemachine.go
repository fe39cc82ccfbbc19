package ops

import (
	"fmt"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/conformance/model"
	"github.com/verbsim/verbsim/verbs"
	"pgregory.net/rapid"
)

// This file runs Machine as a rapid state machine (StateMachine).

// Limits on the state machine's world, to keep runs short and objects
// shared.
const (
	maxCQs      = 8
	maxChannels = 3
)

// StateMachine runs a rapid state machine against the device newDevice
// makes: random operations on up to eight CQs and three channels (create,
// arm, inject completions, poll, read and ack events, resize, destroy, read
// and ack async events, hold and release) and up to six QPs on those CQs
// (create, modify, post sends and receives, flush into the CQs by moving to
// ERR, reset, destroy; statemachine_qp.go), each applied to the device and
// to the reference model, with every outcome compared and the invariants of
// model.History checked after every step. The device's Profile picks the
// model's readings. Injected completions need the conformance.Injector
// capability and holding a CQ the conformance.Referencer capability;
// without them those steps are skipped.
//
// A failure reports the difference and the run so far as a scenario
// (Machine.Log), which `verbsim run` replays as it is.
//
// Run it with rapid.Check, or as a fuzz target with rapid.MakeFuzz.
func StateMachine(t *rapid.T, newDevice conformance.NewDevice) {
	m, err := NewMachine(newDevice)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	drive(t, m)
}

// drive runs StateMachine's steps on m.
func drive(t *rapid.T, m *Machine) {
	s := &run{m: m}
	// Start from a drawn world of a few channels and CQs, so that the
	// repeated steps spend their budget on interleavings.
	for range rapid.IntRange(1, maxChannels).Draw(t, "channels") {
		s.step(t, CreateChannel{Name: m.NextName("ch")})
	}
	for range rapid.IntRange(1, 4).Draw(t, "cqs") {
		s.step(t, CreateCQ{Name: m.NextName("cq"), CQE: s.size(t), Channel: s.channelOrNone(t)})
		// Arm before any completion arrives, as the consumer recipe does
		// (NOTIFY-14): 0 next, 1 solicited, 2 not at all.
		if a := rapid.IntRange(0, 2).Draw(t, "arm"); a < 2 && len(m.CQs()) > 0 {
			s.step(t, Arm{CQ: m.CQs()[len(m.CQs())-1], Solicited: a == 1})
		}
	}
	s.startQPs(t)
	actions := []action{
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
		{"hold", 1, s.hold},
		{"release", 1, s.release},
	}
	repeatWeighted(t, func(t *rapid.T) {
		if err := m.Check(); err != nil {
			t.Fatal(m.Failure(err))
		}
	}, append(actions, s.qpSteps()...))
}

// action is one action of a rapid state machine, drawn w times as often
// as an action of weight 1.
type action struct {
	name string
	w    int
	f    func(*rapid.T)
}

// repeatWeighted runs the actions with t.Repeat, check after each. rapid
// picks actions uniformly, so an action of weight w gets w entries, named
// "action", "action/2"...
func repeatWeighted(t *rapid.T, check func(*rapid.T), as []action) {
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

// run is one run of StateMachine: the machine and how steps draw their
// operations.
//
// A step whose operation the machine cannot apply (no CQ yet, no async
// event read, CQs without a capability, a post that would execute) does
// nothing rather than calling t.Skip: under rapid.MakeFuzz the input may
// keep choosing the same step, and rapid gives up on a run where every
// choice is skipped.
type run struct {
	m *Machine
}

// step applies op if the machine allows it, and fails the run on a
// difference.
func (s *run) step(t *rapid.T, op Op) {
	t.Helper()
	if !s.m.Allows(op) {
		return
	}
	if err := s.m.Apply(op); err != nil {
		t.Fatal(s.m.Failure(err))
	}
}

// pick draws one of names, those for which first holds being likelier
// (rapid favours the front of a SampledFrom list). ok is false when there
// is none.
func pick(t *rapid.T, label string, names []string, first func(i int) bool) (name string, ok bool) {
	if len(names) == 0 {
		return "", false
	}
	var front, back []string
	for i, n := range names {
		if first(i) {
			front = append(front, n)
		} else {
			back = append(back, n)
		}
	}
	return rapid.SampledFrom(append(front, back...)).Draw(t, label), true
}

// anyCQ draws a CQ, live ones first.
func (s *run) anyCQ(t *rapid.T) (string, bool) {
	return pick(t, "cq", s.m.CQs(), func(i int) bool { return s.m.m.State(i) == model.Live })
}

// anyChannel draws a channel, those with unread events first.
func (s *run) anyChannel(t *rapid.T) (string, bool) {
	return pick(t, "channel", s.m.Channels(), func(i int) bool { n, _ := s.m.m.Unread(i); return n > 0 })
}

// channelOrNone draws a channel, or less often "" (none).
func (s *run) channelOrNone(t *rapid.T) string {
	chs := s.m.Channels()
	k := rapid.IntRange(0, 3*len(chs)).Draw(t, "channel")
	if k == 3*len(chs) {
		return ""
	}
	return chs[k%len(chs)]
}

// size draws a cqe: half the time a small valid value, so that overruns are
// common, otherwise anything from -1 to max_cqe+1 (max_cqe+1 alone when
// max_cqe is large).
func (s *run) size(t *rapid.T) int {
	top := 9
	if s.m.lim.MaxCQE <= smallMaxCQE {
		top = s.m.lim.MaxCQE
	}
	n := rapid.OneOf(rapid.IntRange(1, 4), rapid.IntRange(0, top+2)).Draw(t, "cqe")
	switch n {
	case top + 2:
		return -1
	case top + 1:
		return s.m.lim.MaxCQE + 1
	}
	return n
}

func (s *run) createChannel(t *rapid.T) {
	if len(s.m.Channels()) < maxChannels {
		s.step(t, CreateChannel{Name: s.m.NextName("ch")})
	}
}

func (s *run) createCQ(t *rapid.T) {
	if len(s.m.CQs()) >= maxCQs {
		return
	}
	n := s.size(t)
	ch := s.channelOrNone(t)
	vec := rapid.SampledFrom([]int{0, 0, 0, s.m.lim.NumCompVectors - 1, -1, s.m.lim.NumCompVectors}).Draw(t, "vector")
	s.step(t, CreateCQ{Name: s.m.NextName("cq"), CQE: n, Channel: ch, Vector: vec})
}

func (s *run) arm(t *rapid.T) {
	if c, ok := s.anyCQ(t); ok {
		s.step(t, Arm{CQ: c, Solicited: rapid.Bool().Draw(t, "solicited")})
	}
}

func (s *run) pushTo(t *rapid.T, c string) {
	k := WCKind(rapid.IntRange(0, int(NumWCKinds)-1).Draw(t, "kind"))
	s.step(t, Push{CQ: c, WC: k.WC(s.m.NextWRIDs(1)[0]), Solicited: rapid.Bool().Draw(t, "solicited")})
}

// injectable reports whether the CQs take injected completions (the
// machine's CQs come from one device: the first answers for all).
func (s *run) injectable() bool {
	return len(s.m.cqs.items) > 0 && s.m.Allows(Push{CQ: s.m.CQs()[0]})
}

func (s *run) push(t *rapid.T) {
	if !s.injectable() {
		return
	}
	if c, ok := s.anyCQ(t); ok {
		s.pushTo(t, c)
	}
}

func (s *run) pushBurst(t *rapid.T) {
	if !s.injectable() {
		return
	}
	if c, ok := s.anyCQ(t); ok {
		for range rapid.IntRange(2, 9).Draw(t, "burst") {
			s.pushTo(t, c)
		}
	}
}

func (s *run) poll(t *rapid.T) {
	if c, ok := s.anyCQ(t); ok {
		s.step(t, Poll{CQ: c, N: rapid.IntRange(0, 10).Draw(t, "n"), Ex: rapid.Bool().Draw(t, "ex")})
	}
}

func (s *run) getEvent(t *rapid.T) {
	if ch, ok := s.anyChannel(t); ok {
		s.step(t, GetEvent{Channel: ch})
	}
}

// consume is one turn of the consumer loop of NOTIFY-14 on a channel: read
// an event; if there was one, ack it, re-arm its CQ and poll it.
func (s *run) consume(t *rapid.T) {
	ch, ok := s.anyChannel(t)
	if !ok {
		return
	}
	s.step(t, GetEvent{Channel: ch})
	c, ok := s.m.LastEventCQ()
	if !ok {
		return
	}
	s.step(t, Ack{CQ: c, N: 1})
	s.step(t, Arm{CQ: c, Solicited: rapid.Bool().Draw(t, "solicited")})
	s.step(t, Poll{CQ: c, N: rapid.IntRange(1, 10).Draw(t, "n"), Ex: rapid.Bool().Draw(t, "ex")})
}

// ack acks 0..3 events, or -1, on a CQ, those owing acks first.
func (s *run) ack(t *rapid.T) {
	c, ok := pick(t, "cq", s.m.CQs(), func(i int) bool {
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
	s.step(t, Ack{CQ: c, N: n})
}

func (s *run) resize(t *rapid.T) {
	if c, ok := s.anyCQ(t); ok {
		s.step(t, Resize{CQ: c, CQE: s.size(t)})
	}
}

func (s *run) destroyCQ(t *rapid.T) {
	if c, ok := s.anyCQ(t); ok {
		s.step(t, DestroyCQ{CQ: c})
	}
}

func (s *run) destroyChannel(t *rapid.T) {
	if ch, ok := s.anyChannel(t); ok {
		s.step(t, DestroyChannel{Channel: ch})
	}
}

func (s *run) getAsync(t *rapid.T) { s.step(t, GetAsync{}) }

func (s *run) ackAsync(t *rapid.T) {
	if n := s.m.AsyncRead(); n > 0 {
		s.step(t, AckAsync{Event: rapid.IntRange(0, n-1).Draw(t, "event")})
	}
}

func (s *run) hold(t *rapid.T) {
	if len(s.m.CQs()) == 0 || !s.m.Allows(Hold{CQ: s.m.CQs()[0]}) {
		return
	}
	if c, ok := s.anyCQ(t); ok {
		s.step(t, Hold{CQ: c})
	}
}

func (s *run) release(t *rapid.T) {
	var held []string
	for i, c := range s.m.CQs() {
		if s.m.m.CQ(i).Refs > 0 {
			held = append(held, c)
		}
	}
	if len(held) > 0 {
		s.step(t, Release{CQ: rapid.SampledFrom(held).Draw(t, "cq")})
	}
}

// WCKind is a kind of completion the state machines inject.
type WCKind uint8

// The completion kinds.
const (
	KindSend      WCKind = iota // successful send
	KindWrite                   // successful RDMA write, send side
	KindRecv                    // successful receive
	KindRecvImm                 // successful RECV_RDMA_WITH_IMM
	KindLocLen                  // LOC_LEN_ERR
	KindFlush                   // WR_FLUSH_ERR
	KindRemAccess               // REM_ACCESS_ERR
	KindLocProt                 // LOC_PROT_ERR
	NumWCKinds                  // number of kinds
)

// WC returns a completion of kind k with wr_id id.
func (k WCKind) WC(id uint64) verbs.WC {
	switch k {
	case KindWrite:
		w := conformance.SendWC(id)
		w.Opcode = verbs.WCRDMAWrite
		return w
	case KindRecv:
		return conformance.RecvWC(id)
	case KindRecvImm:
		w := conformance.RecvWC(id)
		w.Opcode, w.WCFlags, w.ImmData = verbs.WCRecvRDMAWithImm, verbs.WCWithImm, uint32(id)
		return w
	case KindLocLen:
		return conformance.ErrWC(id, verbs.WCLocLenErr)
	case KindFlush:
		return conformance.ErrWC(id, verbs.WCWRFlushErr)
	case KindRemAccess:
		return conformance.ErrWC(id, verbs.WCRemAccessErr)
	case KindLocProt:
		return conformance.ErrWC(id, verbs.WCLocProtErr)
	}
	return conformance.SendWC(id)
}
