package conformance

import (
	"errors"
	"syscall"

	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// env is what a case works with: a fresh device, an open context on it, the
// device's profile, and helpers that fail the case on unexpected errors.
// Objects made through an env are torn down when the case ends.
type env struct {
	T       *tester
	Dev     Device
	Ctx     verbs.Context
	Profile verbs.Readings

	cqs      []verbs.CQ
	channels []verbs.CompChannel
}

func (e *env) teardown() {
	for _, q := range e.cqs {
		ctx, cancel := graceful()
		_ = q.DestroyContext(ctx) // may already be destroyed by the case
		cancel()
	}
	for _, ch := range e.channels {
		_ = ch.Destroy()
	}
	_ = e.Ctx.Close()
}

// Channel creates a completion channel or fails the case.
func (e *env) Channel() verbs.CompChannel {
	e.T.Helper()
	ch, err := e.Ctx.CreateCompChannel()
	if err != nil {
		e.T.Fatalf("ibv_create_comp_channel: %v", err)
	}
	e.channels = append(e.channels, ch)
	return ch
}

// CQ creates a CQ of at least cqe entries on ch (which may be nil) with
// context cqContext and comp_vector 0, or fails the case.
func (e *env) CQ(cqe int, cqContext any, ch verbs.CompChannel) verbs.CQ {
	e.T.Helper()
	q, err := e.Ctx.CreateCQ(cqe, cqContext, ch, 0)
	if err != nil {
		e.T.Fatalf("ibv_create_cq(cqe=%d): %v", cqe, err)
	}
	e.cqs = append(e.cqs, q)
	return q
}

// Track makes the environment tear q down at the end of the case.
func (e *env) Track(q verbs.CQ) { e.cqs = append(e.cqs, q) }

// Injector returns q's injection capability; an implementation without it
// cannot run cases that need completions before QPs exist, and the case
// fails saying so.
func (e *env) Injector(q verbs.CQ) Injector {
	e.T.Helper()
	in, ok := q.(Injector)
	if !ok {
		e.T.Fatalf("the CQ cannot take injected completions (conformance.Injector); this case needs them")
	}
	return in
}

// Push injects w into q and fails the case on error; it returns whether q
// overran.
func (e *env) Push(q verbs.CQ, w verbs.WC, solicited bool) bool {
	e.T.Helper()
	over, err := e.Injector(q).Push(w, solicited)
	if err != nil {
		e.T.Fatalf("injecting wr_id %d: %v", w.WRID, err)
	}
	return over
}

// SendWC returns a successful send completion with wr_id id.
func SendWC(id uint64) verbs.WC {
	return verbs.WC{WRID: id, Status: verbs.WCSuccess, Opcode: verbs.WCSend, QPNum: 0x11}
}

// RecvWC returns a successful receive completion with wr_id id.
func RecvWC(id uint64) verbs.WC {
	return verbs.WC{WRID: id, Status: verbs.WCSuccess, Opcode: verbs.WCRecv, QPNum: 0x12, ByteLen: 64}
}

// ErrWC returns an unsuccessful completion with wr_id id and status s.
func ErrWC(id uint64, s verbs.WCStatus) verbs.WC {
	return verbs.WC{WRID: id, Status: s, QPNum: 0x11, VendorErr: 0x99}
}

// PollAll polls q until it is empty, max entries at a time, and returns
// everything polled. It fails the case on an unexpected error.
func (e *env) PollAll(q verbs.CQ, max int) []verbs.WC {
	e.T.Helper()
	var all []verbs.WC
	buf := make([]verbs.WC, max)
	for {
		n, err := q.Poll(buf)
		all = append(all, buf[:n]...)
		if err != nil {
			e.T.Fatalf("ibv_poll_cq: %v", err)
		}
		if n == 0 {
			return all
		}
	}
}

// WantErrno fails the case unless err carries errno.
func (e *env) WantErrno(what string, err error, errno syscall.Errno) {
	e.T.Helper()
	if !errors.Is(err, errno) {
		e.T.Errorf("%s: got error %v, want %s", what, err, verr.Name(errno))
	}
}

// WantOK fails the case if err is not nil.
func (e *env) WantOK(what string, err error) {
	e.T.Helper()
	if err != nil {
		e.T.Fatalf("%s: unexpected error %v", what, err)
	}
}

// NoEvent fails the case if ch has an event queued.
func (e *env) NoEvent(what string, ch verbs.CompChannel) {
	e.T.Helper()
	q, _, err := ch.TryGetEvent()
	if !errors.Is(err, syscall.EAGAIN) {
		e.T.Errorf("%s: want no event (EAGAIN), got cq=%v err=%v", what, q, err)
	}
}

// GetEvent takes the next event from ch without blocking, fails the case if
// there is none, and returns its CQ and context.
func (e *env) GetEvent(what string, ch verbs.CompChannel) (verbs.CQ, any) {
	e.T.Helper()
	q, c, err := ch.TryGetEvent()
	if err != nil {
		e.T.Fatalf("%s: want an event, got %v", what, err)
	}
	return q, c
}

// Limits reads the limits of the device under test (LimitsOf) or fails the
// case.
func (e *env) Limits() Limits {
	e.T.Helper()
	l, err := LimitsOf(e.Ctx)
	if err != nil {
		e.T.Fatalf("reading the device limits (ibv_query_device, ibv_query_port): %v", err)
	}
	return l
}
