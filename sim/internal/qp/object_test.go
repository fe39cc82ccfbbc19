package qp

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/verbs"

	"github.com/google/go-cmp/cmp"
	"github.com/verbsim/verbsim/sim/internal/notify"
)

// fakeCQ records completions and lets a test "poll" them, which retires
// work-queue slots as a real CQ does.
type fakeCQ struct {
	cap     int
	refs    int
	dead    bool
	entries []fakeEntry
	lost    int
}

type fakeEntry struct {
	w         verbs.WC
	solicited bool
	r         Retirer
	seq       uint64
}

func (c *fakeCQ) PushWQELocked(w *verbs.WC, solicited bool, r Retirer, seq uint64) (bool, error) {
	if c.cap > 0 && len(c.entries) >= c.cap {
		c.lost++
		return true, nil
	}
	c.entries = append(c.entries, fakeEntry{*w, solicited, r, seq})
	return false, nil
}

func (c *fakeCQ) RoomLocked() int {
	if c.cap > 0 {
		return c.cap - len(c.entries)
	}
	return 1 << 20
}

func (c *fakeCQ) RefLocked() error {
	if c.dead {
		return errors.New("dead CQ")
	}
	c.refs++
	return nil
}

func (c *fakeCQ) UnrefLocked() { c.refs-- }

// poll removes every entry, retiring as it goes, and returns the completions.
func (c *fakeCQ) poll(mu *domain.Domain) []verbs.WC {
	mu.Lock()
	defer mu.Unlock()
	var out []verbs.WC
	for _, e := range c.entries {
		out = append(out, e.w)
		if e.r != nil {
			e.r.RetireLocked(e.seq)
		}
	}
	c.entries = nil
	return out
}

type fakeMem map[uint64][]byte

func (m fakeMem) ReadLocked(addr uint64, n uint32) ([]byte, bool) {
	b, ok := m[addr]
	if !ok || uint32(len(b)) < n {
		return nil, false
	}
	return b[:n], true
}

var testLimits = Limits{
	Ports:       []PortLimits{{MaxMTU: verbs.MTU4096, PKeyTableLen: 1, GIDTableLen: 1}},
	MaxQPRDAtom: 16, MaxQPInitRDAtom: 16,
}

type rig struct {
	mu    *domain.Domain
	scq   *fakeCQ
	rcq   *fakeCQ
	async *notify.AsyncQueue
	mem   fakeMem
	qpnum uint32
}

func newRig() *rig {
	r := &rig{mu: domain.New(), scq: &fakeCQ{}, rcq: &fakeCQ{}, mem: fakeMem{}, qpnum: 0x100}
	r.async = notify.NewAsyncQueue(r.mu)
	return r
}

func (r *rig) qp(t *testing.T, typ verbs.QPType, c verbs.QPCap) *QP {
	t.Helper()
	q, err := r.create(typ, c, false)
	if err != nil {
		t.Fatalf("NewLocked(%v, %+v): %v", typ, c, err)
	}
	return q
}

func (r *rig) create(typ verbs.QPType, c verbs.QPCap, sigAll bool) (*QP, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.qpnum++
	return NewLocked(Config{
		Init:   InitAttr{Type: typ, SendCQ: r.scq, RecvCQ: r.rcq, Cap: c, SQSigAll: sigAll},
		QPNum:  r.qpnum,
		Device: DeviceLimits{MaxQPWR: 64, MaxSGE: 4, MaxInline: 64},
		Modify: testLimits,
		Domain: r.mu,
		Memory: r.mem,
		Async:  r.async,
	})
}

// fullAttr is an attribute set valid for every transition of every
// transport, so a minimal mask picks what the transition needs.
func fullAttr(to verbs.QPState) *verbs.QPAttr {
	return &verbs.QPAttr{
		QPState: to, PKeyIndex: 0, PortNum: 1, QKey: 0x11111111,
		QPAccessFlags: verbs.AccessRemoteWrite | verbs.AccessRemoteRead,
		AHAttr:        verbs.AHAttr{DLID: 7, PortNum: 1},
		PathMTU:       verbs.MTU1024, DestQPNum: 0x222, RQPSN: 1, SQPSN: 1,
		MaxDestRDAtomic: 1, MinRNRTimer: 12, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRDAtomic: 1,
	}
}

// walk takes q from its state along the path RESET→INIT→RTR→RTS→SQD, or to
// ERR or RESET directly, using minimal masks.
func walk(t *testing.T, q *QP, to verbs.QPState) {
	t.Helper()
	path := map[verbs.QPState][]verbs.QPState{
		verbs.QPStateInit: {verbs.QPStateInit}, verbs.QPStateRTR: {verbs.QPStateInit, verbs.QPStateRTR}, verbs.QPStateRTS: {verbs.QPStateInit, verbs.QPStateRTR, verbs.QPStateRTS}, verbs.QPStateSQD: {verbs.QPStateInit, verbs.QPStateRTR, verbs.QPStateRTS, verbs.QPStateSQD},
	}
	steps := path[to]
	switch {
	case to == verbs.QPStateErr && q.State() == verbs.QPStateReset:
		steps = []verbs.QPState{verbs.QPStateInit, verbs.QPStateErr} // RESET→ERR is refused by default (QP-08)
	case to == verbs.QPStateErr || to == verbs.QPStateReset:
		steps = []verbs.QPState{to}
	}
	for _, s := range steps {
		cur := q.State()
		mask, ok := verbs.MinimalMask(cur, s, q.Type())
		if !ok {
			t.Fatalf("no legal %v→%v for %v", cur, s, q.Type())
		}
		if err := q.Modify(fullAttr(s), mask); err != nil {
			t.Fatalf("%v→%v with %v: %v", cur, s, mask, err)
		}
	}
	if q.State() != to {
		t.Fatalf("state %v after walking to %v", q.State(), to)
	}
}

func TestCreate(t *testing.T) {
	r := newRig()
	q := r.qp(t, verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 0, MaxRecvSGE: 2, MaxInlineData: 16})
	if q.State() != verbs.QPStateReset { // QP-01
		t.Fatalf("new QP in %v, want RESET", q.State())
	}
	if c := q.Cap(); c.MaxSendWR < 4 || c.MaxRecvWR < 4 || c.MaxRecvSGE < 2 || c.MaxInlineData < 16 { // QP-02
		t.Fatalf("caps %+v below the request", c)
	}
	if r.scq.refs != 1 || r.rcq.refs != 1 {
		t.Fatalf("CQ refs %d/%d, want 1/1", r.scq.refs, r.rcq.refs)
	}
	q2 := r.qp(t, verbs.QPTypeUD, verbs.QPCap{MaxSendWR: 1})
	if q2.Num() == q.Num() {
		t.Fatal("two QPs share a number")
	}
	var nilCQ *fakeCQ
	bad := []struct {
		name string
		cfg  func(*Config)
	}{
		{"QP-02 max_send_wr", func(c *Config) { c.Init.Cap.MaxSendWR = 65 }},
		{"QP-02 max_recv_wr", func(c *Config) { c.Init.Cap.MaxRecvWR = 65 }},
		{"QP-02 max_send_sge", func(c *Config) { c.Init.Cap.MaxSendSGE = 5 }},
		{"QP-02 max_recv_sge", func(c *Config) { c.Init.Cap.MaxRecvSGE = 5 }},
		{"QP-02 max_inline", func(c *Config) { c.Init.Cap.MaxInlineData = 65 }},
		{"QP-03 no send CQ", func(c *Config) { c.Init.SendCQ = nil }},
		{"QP-03 no recv CQ", func(c *Config) { c.Init.RecvCQ = nil }},
		{"QP-03 typed nil CQ", func(c *Config) { c.Init.RecvCQ = nilCQ }},
		{"type", func(c *Config) { c.Init.Type = verbs.QPTypeRawPacket }},
		{"lock", func(c *Config) { c.Domain = nil }},
	}
	for _, b := range bad {
		cfg := Config{
			Init:   InitAttr{Type: verbs.QPTypeRC, SendCQ: r.scq, RecvCQ: r.rcq},
			Device: DeviceLimits{MaxQPWR: 64, MaxSGE: 4, MaxInline: 64}, Domain: r.mu,
		}
		b.cfg(&cfg)
		r.mu.Lock()
		q, err := NewLocked(cfg)
		r.mu.Unlock()
		if q != nil || !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%s: NewLocked = %v, %v; want EINVAL", b.name, q, err)
		}
	}
	if r.scq.refs != 2 || r.rcq.refs != 2 {
		t.Fatalf("failed creates leaked CQ refs: %d/%d", r.scq.refs, r.rcq.refs)
	}
	r.rcq.dead = true
	if _, err := r.create(verbs.QPTypeRC, verbs.QPCap{}, false); err == nil || r.scq.refs != 2 {
		t.Fatalf("create on a destroyed recv CQ: %v, send CQ refs %d", err, r.scq.refs)
	}
}

// TestPostStates: which states accept posts (QP-25, QP-26).
func TestPostStates(t *testing.T) {
	for _, to := range []verbs.QPState{verbs.QPStateReset, verbs.QPStateInit, verbs.QPStateRTR, verbs.QPStateRTS, verbs.QPStateSQD, verbs.QPStateSQE, verbs.QPStateErr} {
		r := newRig()
		q := r.qp(t, verbs.QPTypeUD, verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1})
		if to == verbs.QPStateSQE {
			walk(t, q, verbs.QPStateRTS)
			q.d.Lock()
			q.state = verbs.QPStateSQE // reachable only through a send error (issue #4)
			q.d.Unlock()
		} else {
			walk(t, q, to)
		}
		_, errS := q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend, AH: fakeAH(0)}})
		_, errR := q.PostRecv([]verbs.RecvWR{{WRID: 2}})
		wantS := to == verbs.QPStateRTS || to == verbs.QPStateSQD || to == verbs.QPStateSQE || to == verbs.QPStateErr
		wantR := to != verbs.QPStateReset
		if (errS == nil) != wantS || (errR == nil) != wantR {
			t.Errorf("%v: post_send %v, post_recv %v; want send ok=%v recv ok=%v", to, errS, errR, wantS, wantR)
		}
		if errS != nil && !errors.Is(errS, syscall.EINVAL) || errR != nil && !errors.Is(errR, syscall.EINVAL) {
			t.Errorf("%v: refusals %v / %v are not EINVAL", to, errS, errR)
		}
	}
}

// TestPostListStopsAtBadWR: QP-27 and the errno table of QP-28.
func TestPostListStopsAtBadWR(t *testing.T) {
	r := newRig()
	r.mem[0x1000] = []byte("inline payload!!")
	for _, tt := range []struct {
		name  string
		typ   verbs.QPType
		bad   verbs.SendWR
		errno syscall.Errno
	}{
		{"QP-33 write on UD", verbs.QPTypeUD, verbs.SendWR{Opcode: verbs.WRRDMAWrite, AH: fakeAH(1)}, syscall.EINVAL},
		{"QP-33 read on UC", verbs.QPTypeUC, verbs.SendWR{Opcode: verbs.WRRDMARead}, syscall.EINVAL},
		{"QP-33 atomic on UC", verbs.QPTypeUC, verbs.SendWR{Opcode: verbs.WRAtomicFetchAndAdd}, syscall.EINVAL},
		{"QP-33 unknown opcode", verbs.QPTypeRC, verbs.SendWR{Opcode: 99}, syscall.EINVAL},
		{"QP-33 bind_mw on UD", verbs.QPTypeUD, verbs.SendWR{Opcode: verbs.WRBindMW, AH: fakeAH(1)}, syscall.EINVAL},
		{"QP-33 TSO on RC", verbs.QPTypeRC, verbs.SendWR{Opcode: verbs.WRTSO}, syscall.EINVAL},
		{"unsimulated TSO on UD", verbs.QPTypeUD, verbs.SendWR{Opcode: verbs.WRTSO, AH: fakeAH(1)}, syscall.EOPNOTSUPP},
		{"QP-32 too many SGEs", verbs.QPTypeRC, verbs.SendWR{Opcode: verbs.WRSend, SGList: make([]verbs.SGE, 3)}, syscall.EINVAL},
		{"QP-34 fence on UC", verbs.QPTypeUC, verbs.SendWR{Opcode: verbs.WRSend, Flags: verbs.SendFence}, syscall.EINVAL},
		{"QP-34 inline on read", verbs.QPTypeRC, verbs.SendWR{Opcode: verbs.WRRDMARead, Flags: verbs.SendInline}, syscall.EINVAL},
		{"QP-35 inline too long", verbs.QPTypeRC, verbs.SendWR{Opcode: verbs.WRSend, Flags: verbs.SendInline, SGList: []verbs.SGE{{Addr: 0x1000, Length: 17}}}, syscall.EINVAL},
		{"inline not in memory", verbs.QPTypeRC, verbs.SendWR{Opcode: verbs.WRSend, Flags: verbs.SendInline, SGList: []verbs.SGE{{Addr: 0x2000, Length: 4}}}, syscall.EFAULT},
		{"unknown flag", verbs.QPTypeRC, verbs.SendWR{Opcode: verbs.WRSend, Flags: 1 << 9}, syscall.EINVAL},
		{"UD without AH", verbs.QPTypeUD, verbs.SendWR{Opcode: verbs.WRSend}, syscall.EINVAL},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := r.qp(t, tt.typ, verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 1, MaxSendSGE: 2, MaxRecvSGE: 1, MaxInlineData: 16})
			walk(t, q, verbs.QPStateRTS)
			good := verbs.SendWR{Opcode: verbs.WRSend, AH: fakeAH(1), WRID: 1}
			bad := tt.bad
			bad.WRID = 2
			n, err := q.PostSend([]verbs.SendWR{good, good, bad, good})
			if n != 2 || !errors.Is(err, tt.errno) {
				t.Fatalf("PostSend = %d, %v; want 2, %v", n, err, tt.errno)
			}
			if s, _ := q.Outstanding(); s != 2 {
				t.Fatalf("%d WRs outstanding, want the 2 before the bad one", s)
			}
		})
	}
}

// TestSendQueueCapacity: ENOMEM when full, and a slot frees only when the
// completion covering it is polled (QP-29 reading A, QP-31).
func TestSendQueueCapacity(t *testing.T) {
	r := newRig()
	q := r.qp(t, verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 2, MaxRecvWR: 2, MaxSendSGE: 1, MaxRecvSGE: 1})
	walk(t, q, verbs.QPStateRTS)
	wr := []verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend}, {WRID: 2, Opcode: verbs.WRSend}, {WRID: 3, Opcode: verbs.WRSend}}
	if n, err := q.PostSend(wr); n != 2 || !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("PostSend of 3 into 2 slots = %d, %v", n, err)
	}
	if n, err := q.PostRecv([]verbs.RecvWR{{WRID: 7}, {WRID: 8}, {WRID: 9}}); n != 2 || !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("PostRecv of 3 into 2 slots = %d, %v", n, err)
	}
	walk(t, q, verbs.QPStateErr) // everything flushes, but slots stay taken until polled
	if _, err := q.PostSend(wr[2:]); !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("post with flushed but unpolled completions: %v, want ENOMEM", err)
	}
	r.scq.poll(r.mu)
	if n, err := q.PostSend(wr[2:]); n != 1 || err != nil {
		t.Fatalf("post after polling: %d, %v", n, err)
	}
}

// TestFlush: FLUSH-01, 02, 04, 05, 06, 08, 14.
func TestFlush(t *testing.T) {
	r := newRig()
	q := r.qp(t, verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1})
	walk(t, q, verbs.QPStateRTS)
	q.PostRecv([]verbs.RecvWR{{WRID: 10}, {WRID: 11}})
	q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend}, {WRID: 2, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled}})
	if len(r.scq.entries)+len(r.rcq.entries) != 0 {
		t.Fatal("completions before the error")
	}
	walk(t, q, verbs.QPStateErr)
	flush := func(ids ...uint64) []verbs.WC {
		var out []verbs.WC
		for _, id := range ids {
			out = append(out, verbs.WC{WRID: id, Status: verbs.WCWRFlushErr, QPNum: q.Num()})
		}
		return out
	}
	if d := cmp.Diff(flush(1, 2), r.scq.poll(r.mu)); d != "" {
		t.Errorf("send flushes (-want +got):\n%s", d)
	}
	if d := cmp.Diff(flush(10, 11), r.rcq.poll(r.mu)); d != "" {
		t.Errorf("receive flushes (-want +got):\n%s", d)
	}
	if r.async.Len() != 0 {
		t.Error("modify→ERR raised an async event (FLUSH-14)")
	}
	// FLUSH-05: posts in ERR are accepted and flushed at once.
	if n, err := q.PostSend([]verbs.SendWR{{WRID: 3, Opcode: verbs.WRSend}}); n != 1 || err != nil {
		t.Fatalf("post_send in ERR: %d, %v", n, err)
	}
	if n, err := q.PostRecv([]verbs.RecvWR{{WRID: 12}}); n != 1 || err != nil {
		t.Fatalf("post_recv in ERR: %d, %v", n, err)
	}
	if d := cmp.Diff(flush(3), r.scq.poll(r.mu)); d != "" {
		t.Errorf("send flush after ERR (-want +got):\n%s", d)
	}
	if d := cmp.Diff(flush(12), r.rcq.poll(r.mu)); d != "" {
		t.Errorf("receive flush after ERR (-want +got):\n%s", d)
	}
	// FLUSH-08: ERR→RESET empties silently, and the QP can be used again.
	walk(t, q, verbs.QPStateReset)
	walk(t, q, verbs.QPStateRTS)
	q.PostRecv([]verbs.RecvWR{{WRID: 13}})
	if s, rr := q.Outstanding(); s != 0 || rr != 1 {
		t.Fatalf("after reuse: outstanding %d/%d, want 0/1", s, rr)
	}
	if a, _, _ := q.Query(); a.QPState != verbs.QPStateRTS || a.DestQPNum != 0x222 {
		t.Fatalf("query after reuse: state %v dest %x", a.QPState, a.DestQPNum)
	}
}

// TestModifyAllOrNothing: a refused modify changes nothing (QP-13).
func TestModifyAllOrNothing(t *testing.T) {
	r := newRig()
	q := r.qp(t, verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1})
	walk(t, q, verbs.QPStateInit)
	before, _, _ := q.Query()
	attr := fullAttr(verbs.QPStateRTR)
	attr.Timeout = 40 // invalid and not allowed in INIT→RTR
	mask, _ := verbs.MinimalMask(verbs.QPStateInit, verbs.QPStateRTR, verbs.QPTypeRC)
	if err := q.Modify(attr, mask|verbs.QPAttrTimeout); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("bad modify: %v", err)
	}
	after, _, _ := q.Query()
	if d := cmp.Diff(before, after); d != "" {
		t.Fatalf("a refused modify changed the QP (-before +after):\n%s", d)
	}
	if err := q.Modify(nil, verbs.QPAttrState); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("Modify(nil): %v", err)
	}
}

// TestInlineCapture: the inline payload is copied during the post (QP-35).
func TestInlineCapture(t *testing.T) {
	r := newRig()
	buf := []byte("hello, verbs")
	r.mem[0x1000] = buf
	q := r.qp(t, verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 2, MaxSendSGE: 2, MaxInlineData: 32})
	walk(t, q, verbs.QPStateRTS)
	if _, err := q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendInline, SGList: []verbs.SGE{{Addr: 0x1000, Length: 5}, {Addr: 0x1000, Length: 12}}}}); err != nil {
		t.Fatal(err)
	}
	copy(buf, "XXXXXXXXXXXX")
	q.d.Lock()
	got := string(q.sq.slot(0).inline)
	q.d.Unlock()
	if got != "hellohello, verbs" {
		t.Fatalf("captured %q", got)
	}
}

// TestSQDrainedEvent: RTS→SQD with EnSQDAsyncNotify raises SQ_DRAINED once
// (ASYNC-13); without it, nothing.
func TestSQDrainedEvent(t *testing.T) {
	r := newRig()
	q := r.qp(t, verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 1})
	walk(t, q, verbs.QPStateRTS)
	a := fullAttr(verbs.QPStateSQD)
	a.EnSQDAsyncNotify = true
	if err := q.Modify(a, verbs.QPAttrState|verbs.QPAttrEnSQDAsyncNotify); err != nil {
		t.Fatal(err)
	}
	ev, err := r.async.TryGetAsyncEvent()
	if err != nil || ev.Type != verbs.EventSQDrained || ev.Object != q {
		t.Fatalf("event %v, %v", ev, err)
	}
	// Destroy waits for the ack of the event (ASYNC-05).
	ctx, cancel := context.WithTimeout(context.Background(), 1)
	defer cancel()
	if err := q.DestroyContext(ctx); !errors.Is(err, syscall.EINTR) {
		t.Fatalf("destroy with an unacked event: %v", err)
	}
	ev.Ack()
	if err := q.Destroy(); err != nil {
		t.Fatal(err)
	}
}

// TestDestroy: outstanding WRs vanish (QP-37), CQ references are dropped,
// and every verb afterwards is EINVAL.
func TestDestroy(t *testing.T) {
	r := newRig()
	q := r.qp(t, verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 2, MaxRecvWR: 2, MaxSendSGE: 1, MaxRecvSGE: 1})
	walk(t, q, verbs.QPStateRTS)
	q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend}})
	q.PostRecv([]verbs.RecvWR{{WRID: 2}})
	if err := q.Destroy(); err != nil {
		t.Fatal(err)
	}
	if len(r.scq.entries)+len(r.rcq.entries) != 0 || r.scq.refs != 0 || r.rcq.refs != 0 {
		t.Fatalf("after destroy: %d completions, refs %d/%d", len(r.scq.entries)+len(r.rcq.entries), r.scq.refs, r.rcq.refs)
	}
	_, errS := q.PostSend([]verbs.SendWR{{Opcode: verbs.WRSend}})
	_, errR := q.PostRecv([]verbs.RecvWR{{}})
	_, _, errQ := q.Query()
	for name, err := range map[string]error{
		"PostSend": errS, "PostRecv": errR, "Query": errQ, "Modify": q.Modify(fullAttr(verbs.QPStateErr), verbs.QPAttrState), "Destroy": q.Destroy(),
	} {
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%s on a destroyed QP: %v, want EINVAL", name, err)
		}
	}
	var nq *QP
	_, errS = nq.PostSend(nil)
	if !errors.Is(errS, syscall.EINVAL) || !errors.Is(nq.Destroy(), syscall.EINVAL) || !errors.Is(nq.Modify(&verbs.QPAttr{}, 0), syscall.EINVAL) {
		t.Error("verbs on a nil QP are not EINVAL")
	}
}

// TestPostAllocatesNothing: the posting hot path, successes and a full
// queue alike.
func TestPostAllocatesNothing(t *testing.T) {
	r := newRig()
	q := r.qp(t, verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 64, MaxRecvWR: 64, MaxSendSGE: 2, MaxRecvSGE: 2})
	walk(t, q, verbs.QPStateRTS)
	send := []verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend, SGList: []verbs.SGE{{Addr: 1, Length: 8, LKey: 3}}}}
	recv := []verbs.RecvWR{{WRID: 2, SGList: []verbs.SGE{{Addr: 1, Length: 8, LKey: 3}}}}
	if n := testing.AllocsPerRun(200, func() {
		q.PostSend(send)
		q.PostRecv(recv)
		q.d.Lock()
		q.sq.done, q.sq.retired = q.sq.tail, q.sq.tail // as if completed and polled
		q.rq.done, q.rq.retired = q.rq.tail, q.rq.tail
		q.d.Unlock()
	}); n != 0 {
		t.Fatalf("posting allocates %v times", n)
	}
}

// fakeAH stands for an address handle; the QP without a host only checks
// that a UD request names one.
type fakeAH int

func (fakeAH) Destroy() error { return nil }
