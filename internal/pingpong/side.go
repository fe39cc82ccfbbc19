package pingpong

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"runtime"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// Side names one end of the connection.
type Side uint8

// The two sides.
const (
	Client Side = iota // sends first
	Server             // answers
)

// String returns "client" or "server".
func (s Side) String() string {
	switch s {
	case Client:
		return "client"
	case Server:
		return "server"
	}
	return fmt.Sprintf("Side(%d)", uint8(s))
}

// peer returns the other side.
func (s Side) peer() Side { return 1 - s }

// magic opens every message header: "vsPP" in little-endian order.
const magic = 0x50507376

// Message fills b (len(b) >= HeaderSize) with the message that side sends
// in iteration iter of a run seeded with seed: the header (magic, side,
// iteration, all little-endian) and a payload from a SplitMix64 stream
// that depends on all three.
func Message(b []byte, seed uint64, side Side, iter uint64) {
	binary.LittleEndian.PutUint32(b[0:], magic)
	binary.LittleEndian.PutUint32(b[4:], uint32(side))
	binary.LittleEndian.PutUint64(b[8:], iter)
	x := seed ^ (uint64(side)+1)*0xd1b54a32d192ed03 ^ (iter+1)*0x9e3779b97f4a7c15
	p := b[HeaderSize:]
	for len(p) >= 8 {
		x = splitmix(x, p)
		p = p[8:]
	}
	if len(p) > 0 {
		var tail [8]byte
		splitmix(x, tail[:])
		copy(p, tail[:])
	}
}

// splitmix advances the SplitMix64 state x, writes the output to p[:8]
// and returns the new state.
func splitmix(x uint64, p []byte) uint64 {
	x += 0x9e3779b97f4a7c15
	z := x
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	binary.LittleEndian.PutUint64(p, z^z>>31)
	return x
}

// maxBuffer bounds the memory one side registers.
const maxBuffer = 1 << 30

// Work request IDs: a receive's wr_id is its buffer slot; a send's is
// sendTag plus its iteration.
const sendTag = 1 << 63

// What a side waits for before it may send again, rc_pingpong's pending
// bits: the completion of its previous send and the peer's next message.
const (
	pendSend = 1 << iota
	pendRecv
)

// side is one end: its verbs objects and its progress. Only the goroutine
// running the side touches it until Run has waited for that goroutine.
type side struct {
	who  Side
	cfg  Config
	dev  string
	lid  uint16
	vctx *sim.Context
	pd   *sim.PD
	ch   *sim.CompChannel // event mode only
	cq   *sim.CQ
	buf  []byte // RXDepth receive slots of Size bytes, then the send slot
	mr   *sim.MR
	qp   *sim.QP

	sqDepth  int // the send queue's real depth
	inFlight int // sends posted and not yet completed
	pending  int // pendSend|pendRecv still awaited before the next send

	sent, received, sendsDone int
	bytes                     int64
	digest                    hash.Hash
	expect                    []byte // the message the peer should send next
	polls, emptyPolls         uint64
	events, emptyEvents       uint64
	unacked                   int // events read and not acknowledged

	wcs  []verbs.WC
	swr  [1]verbs.SendWR
	ssge [1]verbs.SGE
	rwr  [1]verbs.RecvWR
	rsge [1]verbs.SGE
}

// open creates the side's objects on dev.
func (s *side) open(dev *sim.Device) error {
	cfg := s.cfg
	s.dev = dev.Name()
	var err error
	if s.vctx, err = dev.Open(); err != nil {
		return err
	}
	port, err := s.vctx.QueryPort(1)
	if err != nil {
		return err
	}
	s.lid = port.LID
	// Refuse what the device cannot take before allocating for it.
	attr := dev.Attr()
	switch need := int64(cfg.RXDepth+1) * int64(cfg.Size); {
	case cfg.RXDepth > attr.MaxQPWR:
		return fmt.Errorf("receive depth %d is above the device's max_qp_wr %d", cfg.RXDepth, attr.MaxQPWR)
	case int64(cfg.Size) > int64(port.MaxMsgSz):
		return fmt.Errorf("message size %d is above the port's max_msg_sz %d", cfg.Size, port.MaxMsgSz)
	case need > maxBuffer:
		return fmt.Errorf("%d receive slots and a send slot of %d bytes need %d bytes; the limit is %d", cfg.RXDepth, cfg.Size, need, maxBuffer)
	}
	if s.pd, err = s.vctx.AllocPD(); err != nil {
		return err
	}
	s.buf = make([]byte, (cfg.RXDepth+1)*cfg.Size)
	if s.mr, err = s.pd.RegMR(s.buf, verbs.AccessLocalWrite); err != nil {
		return err
	}
	if cfg.Events {
		if s.ch, err = s.vctx.CreateCompChannel(); err != nil {
			return err
		}
	}
	// Room for every receive and the send: the CQ can never overrun.
	if s.cq, err = s.vctx.CreateCQ(cfg.RXDepth+1, s.who, s.ch, 0); err != nil {
		return err
	}
	s.qp, err = s.pd.CreateQP(sim.QPInitAttr{Context: s.who, SendCQ: s.cq, RecvCQ: s.cq, Type: verbs.QPTypeRC, Cap: qpCap(cfg)})
	if err != nil {
		return err
	}
	s.sqDepth = int(s.qp.Cap().MaxSendWR)
	s.wcs = make([]verbs.WC, 16)
	s.digest = sha256.New()
	s.expect = make([]byte, cfg.Size)
	Message(s.expect, cfg.Seed, s.who.peer(), 0)
	s.pending = pendRecv // the server answers; the client sets both bits when it sends
	return nil
}

// prepost posts RXDepth receives, once the QP is connected and before
// either side starts, so the peer never meets an empty receive queue.
func (s *side) prepost() error {
	for slot := range s.cfg.RXDepth {
		if err := s.postRecv(slot); err != nil {
			return err
		}
	}
	return nil
}

// slot returns the bytes of buffer slot i; slot RXDepth is the send slot.
func (s *side) slot(i int) []byte {
	n := s.cfg.Size
	return s.buf[i*n : (i+1)*n : (i+1)*n]
}

func (s *side) sge(i int) verbs.SGE {
	return verbs.SGE{Addr: s.mr.Addr() + uint64(i*s.cfg.Size), Length: uint32(s.cfg.Size), LKey: s.mr.LKey()}
}

func (s *side) postRecv(slot int) error {
	s.rsge[0] = s.sge(slot)
	s.rwr[0] = verbs.RecvWR{WRID: uint64(slot), SGList: s.rsge[:]}
	_, err := s.qp.PostRecv(s.rwr[:])
	return err
}

// postSend writes the next message into the send slot and posts it,
// signaled. The send slot is free: the previous send has completed.
func (s *side) postSend() error {
	if s.inFlight >= s.sqDepth {
		return fmt.Errorf("send %d: the send queue (depth %d) is full", s.sent, s.sqDepth)
	}
	i := s.cfg.RXDepth
	Message(s.slot(i), s.cfg.Seed, s.who, uint64(s.sent))
	s.ssge[0] = s.sge(i)
	s.swr[0] = verbs.SendWR{WRID: sendTag | uint64(s.sent), Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: s.ssge[:]}
	if _, err := s.qp.PostSend(s.swr[:]); err != nil {
		return fmt.Errorf("send %d: %w", s.sent, err)
	}
	s.sent++
	s.inFlight++
	s.pending = pendSend | pendRecv
	return nil
}

// done reports whether the side has sent and received everything and seen
// every send complete.
func (s *side) done() bool {
	n := s.cfg.Iters
	return s.sent == n && s.sendsDone == n && s.received == n
}

// run is the side's loop.
func (s *side) run(ctx context.Context) error {
	if s.cfg.Events {
		return s.runEvents(ctx)
	}
	return s.runPolling(ctx)
}

// start is the first move: the client sends message 0.
func (s *side) start() error {
	if s.who == Client && s.cfg.Iters > 0 {
		return s.postSend()
	}
	return nil
}

// runPolling busy-polls the CQ, yielding the processor between empty
// polls so that the peer and the fabric's clock get to run.
func (s *side) runPolling(ctx context.Context) error {
	if err := s.start(); err != nil {
		return err
	}
	for !s.done() {
		n, err := s.pollOnce()
		if err != nil {
			return err
		}
		if n == 0 {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			runtime.Gosched()
		}
	}
	return nil
}

// runEvents is the completion-channel loop of docs/notify.md (NOTIFY-14):
// arm, and from then on wait for an event, acknowledge it, re-arm, and
// only then poll until the CQ is empty. Arming before the drain means a
// completion that arrives at any moment is either found by the drain or
// fires the arm; draining first and arming after would lose the wakeup of
// a completion that slipped in between (NOTIFY-15).
func (s *side) runEvents(ctx context.Context) error {
	// Arm before the first wait, and before this side's first send can
	// cause a completion. Anything that completed earlier (the peer may
	// have started first) is found by the drain below.
	if err := s.cq.ReqNotify(false); err != nil {
		return err
	}
	if err := s.start(); err != nil {
		return err
	}
	for {
		n, err := s.drain()
		if err != nil {
			return err
		}
		if s.events > 0 && n == 0 {
			s.emptyEvents++ // NOTIFY-13: already drained after the previous re-arm
		}
		if s.done() {
			return nil
		}
		got, _, err := s.ch.GetEvent(ctx)
		if err != nil {
			return err
		}
		s.events++
		s.unacked++
		if got != s.cq {
			return fmt.Errorf("an event named another CQ (%v)", got.CQContext())
		}
		if err := got.AckEvents(1); err != nil {
			return err
		}
		s.unacked--
		if err := got.ReqNotify(false); err != nil { // re-arm, then drain
			return err
		}
	}
}

// drain polls until the CQ is empty and returns how many completions it
// handled.
func (s *side) drain() (int, error) {
	total := 0
	for {
		n, err := s.pollOnce()
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
}

// pollOnce polls once and handles what it got.
func (s *side) pollOnce() (int, error) {
	n, err := s.cq.Poll(s.wcs)
	s.polls++
	if n == 0 {
		s.emptyPolls++
	}
	for i := range n {
		if err := s.handle(&s.wcs[i]); err != nil {
			return i, err
		}
	}
	if err != nil {
		return n, fmt.Errorf("poll: %w", err)
	}
	return n, nil
}

// handle processes one completion: a send frees the send slot, a receive
// is checked, hashed and replaced; and when both the send and the receive
// the side was waiting for are in, it sends the next message.
func (s *side) handle(w *verbs.WC) error {
	if w.Status != verbs.WCSuccess {
		what := fmt.Sprintf("receive %d", s.received)
		if w.WRID&sendTag != 0 {
			what = fmt.Sprintf("send %d", w.WRID&^sendTag)
		}
		return fmt.Errorf("%s (wr_id %#x) completed with %s: %v", what, w.WRID, w.Status.Name(), w.Status)
	}
	if w.WRID&sendTag != 0 {
		iter := int(w.WRID &^ sendTag)
		switch {
		case w.Opcode != verbs.WCSend:
			return fmt.Errorf("send %d completed with opcode %v", iter, w.Opcode)
		case iter != s.sendsDone || s.inFlight == 0:
			return fmt.Errorf("completion of send %d, expected send %d", iter, s.sendsDone)
		}
		s.sendsDone++
		s.inFlight--
		s.pending &^= pendSend
	} else {
		slot := int(w.WRID)
		switch {
		case slot < 0 || slot >= s.cfg.RXDepth:
			return fmt.Errorf("receive completion with unknown wr_id %#x", w.WRID)
		case w.Opcode != verbs.WCRecv:
			return fmt.Errorf("receive %d completed with opcode %v", s.received, w.Opcode)
		case int(w.ByteLen) != s.cfg.Size:
			return fmt.Errorf("receive %d: %d bytes, expected %d", s.received, w.ByteLen, s.cfg.Size)
		case s.received >= s.cfg.Iters:
			return fmt.Errorf("receive %d: the peer sends only %d messages (duplicate delivery?)", s.received, s.cfg.Iters)
		}
		msg := s.slot(slot)
		if err := s.check(msg); err != nil {
			return err
		}
		s.digest.Write(msg)
		s.bytes += int64(len(msg))
		s.received++
		Message(s.expect, s.cfg.Seed, s.who.peer(), uint64(s.received))
		// The data has been consumed: the slot can take a new message.
		if err := s.postRecv(slot); err != nil {
			return fmt.Errorf("repost receive: %w", err)
		}
		s.pending &^= pendRecv
	}
	if s.sent < s.cfg.Iters && s.pending == 0 {
		return s.postSend()
	}
	return nil
}

// check compares a received message with the one the peer should have
// sent next, and says precisely what differs.
func (s *side) check(msg []byte) error {
	if bytes.Equal(msg, s.expect) {
		return nil
	}
	m, side, iter := binary.LittleEndian.Uint32(msg[0:]), binary.LittleEndian.Uint32(msg[4:]), binary.LittleEndian.Uint64(msg[8:])
	want := s.received
	switch {
	case m != magic:
		return fmt.Errorf("receive %d: bad magic %#x", want, m)
	case Side(side) != s.who.peer():
		return fmt.Errorf("receive %d: the message comes from side %v", want, Side(side))
	case iter != uint64(want):
		return fmt.Errorf("receive %d: the message is the peer's number %d (lost, duplicated or reordered delivery)", want, iter)
	}
	for i := range msg {
		if msg[i] != s.expect[i] {
			return fmt.Errorf("receive %d: payload differs at byte %d: %#02x, expected %#02x", want, i, msg[i], s.expect[i])
		}
	}
	return nil
}

// stats returns the side's account. Call it only after the side's
// goroutine has ended.
func (s *side) stats() SideStats {
	st := SideStats{
		Device: s.dev, LID: s.lid,
		Sent: s.sent, Received: s.received, SendsCompleted: s.sendsDone,
		Bytes: s.bytes,
		Polls: s.polls, EmptyPolls: s.emptyPolls,
		Events: s.events, EmptyEvents: s.emptyEvents,
	}
	if s.qp != nil {
		st.QPN = s.qp.Num()
	}
	if s.digest != nil {
		s.digest.Sum(st.Digest[:0])
	}
	return st
}
