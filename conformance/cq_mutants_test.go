package conformance_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/conformance/simdev"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// cqMutants returns the mutants of the CQ family. Each breaks one behaviour a
// CQ case checks; the hooks reach into the simulator (*sim.CQ) where the
// conformance interfaces offer no way to break it. None of them makes a case
// wait for Patience: a mutant that hangs a verb would only slow the suite
// down.
func cqMutants() []mutant {
	// CQs created without a channel, for the mutant that refuses to arm them.
	var chanless sync.Map
	// The inner context of each inner CQ, for the mutant whose destroy
	// leaks its max_cq slot.
	var owner sync.Map

	return []mutant{
		{
			name:  "cqe 0 accepted",
			rules: []string{"CQ-01"},
			h: hooks{createCQ: func(c verbs.Context, cqe int, cctx any, ch verbs.CompChannel, vec int) (verbs.CQ, error) {
				if cqe == 0 {
					cqe = 1
				}
				return c.CreateCQ(cqe, cctx, ch, vec)
			}},
		},
		{
			name:  "cqe max_cqe refused",
			rules: []string{"CQ-01"},
			h: hooks{createCQ: func(c verbs.Context, cqe int, cctx any, ch verbs.CompChannel, vec int) (verbs.CQ, error) {
				if cqe == limits(c).MaxCQE {
					return nil, verr.New("ibv_create_cq", syscall.EINVAL, "mutant: max_cqe refused")
				}
				return c.CreateCQ(cqe, cctx, ch, vec)
			}},
		},
		{
			name:  "poll returns newest first",
			rules: []string{"CQ-17"},
			h: hooks{poll: func(q verbs.CQ, wcs []verbs.WC) (int, error) {
				n, err := q.Poll(wcs)
				for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
					wcs[i], wcs[j] = wcs[j], wcs[i]
				}
				return n, err
			}},
		},

		// CQ-02, CQ-09: the reported capacity.
		{
			name:  "cqe reported one below the capacity",
			rules: []string{"CQ-02", "CQ-09"},
			h:     hooks{cqe: func(q verbs.CQ) int { return q.CQE() - 1 }},
		},
		{
			name:  "cqe reported one above the capacity",
			rules: []string{"CQ-02", "CQ-09", "CQ-22"},
			h:     hooks{cqe: func(q verbs.CQ) int { return q.CQE() + 1 }},
		},
		{
			name:  "profile claims exact cqe, device rounds up",
			rules: []string{"CQ-02", "CQ-09"},
			h: hooks{profile: func(p verbs.Readings) verbs.Readings {
				p.ExactCQE = true
				return p
			}},
		},
		{
			name:  "resize gives half the request",
			rules: []string{"CQ-09"},
			h: hooks{resize: func(q verbs.CQ, n int) error {
				return q.Resize(max(1, n/2))
			}},
		},

		// CQ-03: comp_vector.
		{
			name:  "comp_vector num_comp_vectors accepted",
			rules: []string{"CQ-03"},
			h: hooks{createCQ: func(c verbs.Context, cqe int, cctx any, ch verbs.CompChannel, vec int) (verbs.CQ, error) {
				if vec == limits(c).NumCompVectors {
					vec = 0
				}
				return c.CreateCQ(cqe, cctx, ch, vec)
			}},
		},
		{
			name:  "last valid comp_vector refused",
			rules: []string{"CQ-03"},
			h: hooks{createCQ: func(c verbs.Context, cqe int, cctx any, ch verbs.CompChannel, vec int) (verbs.CQ, error) {
				if nv := limits(c).NumCompVectors; nv > 1 && vec == nv-1 {
					return nil, verr.New("ibv_create_cq", syscall.EINVAL, "mutant: last vector refused")
				}
				return c.CreateCQ(cqe, cctx, ch, vec)
			}},
		},

		// CQ-04: cq_context.
		{
			name:  "event hands back no cq_context",
			rules: []string{"CQ-04"},
			h: hooks{
				getEvent: func(ch verbs.CompChannel, ctx context.Context) (verbs.CQ, any, error) {
					q, _, err := ch.GetEvent(ctx)
					return q, nil, err
				},
				tryGetEvent: func(ch verbs.CompChannel) (verbs.CQ, any, error) {
					q, _, err := ch.TryGetEvent()
					return q, nil, err
				},
			},
		},

		// CQ-05: the optional channel.
		{
			name:  "arming a CQ without a channel fails",
			rules: []string{"CQ-05"},
			h: hooks{
				createCQ: func(c verbs.Context, cqe int, cctx any, ch verbs.CompChannel, vec int) (verbs.CQ, error) {
					q, err := c.CreateCQ(cqe, cctx, ch, vec)
					if err == nil && ch == nil {
						chanless.Store(q, true)
					}
					return q, err
				},
				reqNotify: func(q verbs.CQ, so bool) error {
					if _, ok := chanless.Load(q); ok {
						return verr.New("ibv_req_notify_cq", syscall.EINVAL, "mutant: no channel")
					}
					return q.ReqNotify(so)
				},
			},
		},
		{
			name:  "channel destroy ignores the CQs using it",
			rules: []string{"CQ-05"},
			h: hooks{destroyCh: func(ch verbs.CompChannel) error {
				if err := ch.Destroy(); !errors.Is(err, syscall.EBUSY) {
					return err
				}
				return nil
			}},
		},

		// CQ-06: max_cq.
		{
			name:  "max_cq exhaustion reported as EINVAL",
			rules: []string{"CQ-06"},
			h: hooks{createCQ: func(c verbs.Context, cqe int, cctx any, ch verbs.CompChannel, vec int) (verbs.CQ, error) {
				q, err := c.CreateCQ(cqe, cctx, ch, vec)
				if errors.Is(err, syscall.ENOMEM) {
					return nil, verr.New("ibv_create_cq", syscall.EINVAL, "mutant: wrong errno")
				}
				return q, err
			}},
		},
		{
			name:  "destroy does not give back the max_cq slot",
			rules: []string{"CQ-06"},
			h: hooks{
				createCQ: func(c verbs.Context, cqe int, cctx any, ch verbs.CompChannel, vec int) (verbs.CQ, error) {
					q, err := c.CreateCQ(cqe, cctx, ch, vec)
					if err == nil {
						owner.Store(q, c)
					}
					return q, err
				},
				destroyCQ: func(q verbs.CQ, ctx context.Context) error {
					err := q.DestroyContext(ctx)
					if c, ok := owner.Load(q); ok && err == nil {
						// A hidden CQ takes the freed slot.
						_, _ = c.(verbs.Context).CreateCQ(1, nil, nil, 0)
					}
					return err
				},
			},
		},

		// CQ-08, CQ-10: resize.
		{
			name:  "resize below the unpolled count drops the oldest",
			rules: []string{"CQ-08"},
			h: hooks{resize: func(q verbs.CQ, n int) error {
				for {
					err := q.Resize(n)
					if !errors.Is(err, syscall.EINVAL) || n < 1 {
						return err
					}
					var one [1]verbs.WC
					if k, _ := q.Poll(one[:]); k == 0 {
						return err
					}
				}
			}},
		},
		{
			name:  "resize to 0 accepted as a no-op",
			rules: []string{"CQ-08"},
			h: hooks{resize: func(q verbs.CQ, n int) error {
				if n == 0 {
					return nil
				}
				return q.Resize(n)
			}},
		},
		{
			name:  "resize rotates the unpolled completions",
			rules: []string{"CQ-10"},
			h: hooks{resize: func(q verbs.CQ, n int) error {
				all := drainInner(q)
				err := q.Resize(n)
				if err == nil && len(all) > 1 {
					all = append(all[1:], all[0])
				}
				for _, w := range all {
					_, _ = q.(conformance.Injector).Push(w, false)
				}
				return err
			}},
		},

		// CQ-11: references.
		{
			name:  "destroy ignores references",
			rules: []string{"CQ-11"},
			h: hooks{destroyCQ: func(q verbs.CQ, ctx context.Context) error {
				for range 100 {
					err := q.DestroyContext(ctx)
					if !errors.Is(err, syscall.EBUSY) {
						return err
					}
					q.(conformance.Referencer).Unref()
				}
				return q.DestroyContext(ctx)
			}},
		},
		{
			name:  "refused destroy drops the completions",
			rules: []string{"CQ-11"},
			h:     hooks{destroyCQ: destroyDroppingOnBusy},
		},

		// CQ-12: what a destroy must accept, and a destroyed CQ.
		{
			name:  "destroy refuses a CQ with unpolled completions",
			rules: []string{"CQ-12"},
			h: hooks{destroyCQ: func(q verbs.CQ, ctx context.Context) error {
				if s, ok := sim.CQOf(q); ok && !s.Destroyed() && s.Len() > 0 {
					return verr.New("ibv_destroy_cq", syscall.EBUSY, "mutant: unpolled completions")
				}
				return q.DestroyContext(ctx)
			}},
		},
		{
			name:  "destroy refuses an armed CQ",
			rules: []string{"CQ-12"},
			h: hooks{destroyCQ: func(q verbs.CQ, ctx context.Context) error {
				if s, ok := sim.CQOf(q); ok && !s.Destroyed() && s.Armed() != sim.CQDisarmed {
					return verr.New("ibv_destroy_cq", syscall.EBUSY, "mutant: armed")
				}
				return q.DestroyContext(ctx)
			}},
		},
		{
			name:  "verbs on a destroyed CQ succeed",
			rules: []string{"CQ-12"},
			h: hooks{
				poll: func(q verbs.CQ, wcs []verbs.WC) (int, error) {
					n, err := q.Poll(wcs)
					if errors.Is(err, syscall.EINVAL) {
						return 0, nil
					}
					return n, err
				},
				destroyCQ: func(q verbs.CQ, ctx context.Context) error {
					if err := q.DestroyContext(ctx); !errors.Is(err, syscall.EINVAL) {
						return err
					}
					return nil
				},
			},
		},

		// CQ-13: destroy and acks.
		{
			name:  "destroy does not wait for completion-event acks",
			rules: []string{"CQ-13"},
			h: hooks{destroyCQ: func(q verbs.CQ, ctx context.Context) error {
				if s, ok := sim.CQOf(q); ok {
					if snap := s.Snapshot(); snap.CompRead > snap.CompAcked {
						_ = s.AckEvents(int(snap.CompRead - snap.CompAcked))
					}
				}
				return q.DestroyContext(ctx)
			}},
		},
		{
			name:  "destroy does not wait for CQ_ERR acks",
			rules: []string{"CQ-13"},
			h: hooks{
				getAsync: func(c verbs.Context, ctx context.Context) (verbs.AsyncEvent, error) {
					return preAck(c.GetAsyncEvent(ctx))
				},
				tryAsync: func(c verbs.Context) (verbs.AsyncEvent, error) {
					return preAck(c.TryGetAsyncEvent())
				},
			},
		},
		func() mutant {
			// The events a destroy discarded are handed out again, after
			// the channel's own, as if the destroy had left them queued.
			type ghost struct {
				cq   *sim.CQ
				cctx any
			}
			var mu sync.Mutex
			ghosts := map[*sim.CompChannel][]ghost{}
			// haunt returns a queued event, else a ghost, else wait().
			haunt := func(ch verbs.CompChannel, wait func() (verbs.CQ, any, error)) (verbs.CQ, any, error) {
				if q, cctx, err := ch.TryGetEvent(); err == nil {
					return q, cctx, err
				}
				if sch, ok := sim.ChannelOf(ch); ok {
					mu.Lock()
					g := ghosts[sch]
					if len(g) > 0 {
						ghosts[sch] = g[1:]
					}
					mu.Unlock()
					if len(g) > 0 {
						return sim.VerbsCQ(g[0].cq), g[0].cctx, nil
					}
				}
				return wait()
			}
			return mutant{
				name:  "unread events outlive their CQ",
				rules: []string{"CQ-13"},
				h: hooks{
					destroyCQ: func(q verbs.CQ, ctx context.Context) error {
						s, ok := sim.CQOf(q)
						if !ok || s.Channel() == nil {
							return q.DestroyContext(ctx)
						}
						ch := s.Channel()
						before := ch.Len()
						err := q.DestroyContext(ctx)
						mu.Lock()
						for range before - ch.Len() {
							ghosts[ch] = append(ghosts[ch], ghost{s, s.CQContext()})
						}
						mu.Unlock()
						return err
					},
					getEvent: func(ch verbs.CompChannel, ctx context.Context) (verbs.CQ, any, error) {
						return haunt(ch, func() (verbs.CQ, any, error) { return ch.GetEvent(ctx) })
					},
					tryGetEvent: func(ch verbs.CompChannel) (verbs.CQ, any, error) {
						return haunt(ch, ch.TryGetEvent)
					},
				},
			}
		}(),
		{
			name:  "abandoned destroy returns EINTR without the context's error",
			rules: []string{"CQ-13"},
			h: hooks{destroyCQ: func(q verbs.CQ, ctx context.Context) error {
				err := q.DestroyContext(ctx)
				if errors.Is(err, context.DeadlineExceeded) {
					return verr.New("ibv_destroy_cq", syscall.EINTR, "mutant: interrupted")
				}
				return err
			}},
		},
		{
			name:  "negative ack count accepted",
			rules: []string{"CQ-13"},
			h: hooks{ack: func(q verbs.CQ, n int) error {
				if n < 0 {
					return nil
				}
				return q.AckEvents(n)
			}},
		},
		{
			name:  "refused over-ack still counts the events it could",
			rules: []string{"CQ-13"},
			h: hooks{ack: func(q verbs.CQ, n int) error {
				err := q.AckEvents(n)
				if s, ok := sim.CQOf(q); ok && n > 0 && errors.Is(err, syscall.EINVAL) {
					if snap := s.Snapshot(); snap.CompRead > snap.CompAcked {
						_ = s.AckEvents(int(snap.CompRead - snap.CompAcked))
					}
				}
				return err
			}},
		},
		{
			name:  "profile claims a waiting destroy, device refuses with EBUSY",
			rules: []string{"CQ-13"},
			base:  sim.Profile{Name: "busy", Readings: verbs.Readings{DestroyBusyOnUnacked: true}},
			h: hooks{profile: func(p verbs.Readings) verbs.Readings {
				p.DestroyBusyOnUnacked = false
				return p
			}},
		},
		{
			name:  "EBUSY destroy drops the completions",
			rules: []string{"CQ-13", "CQ-11"},
			base:  sim.Profile{Name: "busy", Readings: verbs.Readings{DestroyBusyOnUnacked: true}},
			h:     hooks{destroyCQ: destroyDroppingOnBusy},
		},

		// CQ-14, CQ-15, CQ-16: polling.
		{
			name:  "poll on an empty CQ returns EAGAIN",
			rules: []string{"CQ-14"},
			h: hooks{poll: func(q verbs.CQ, wcs []verbs.WC) (int, error) {
				n, err := q.Poll(wcs)
				if n == 0 && err == nil && len(wcs) > 0 {
					return 0, verr.New("ibv_poll_cq", syscall.EAGAIN, "mutant: empty")
				}
				return n, err
			}},
		},
		{
			name:  "poll writes past the entries it returns",
			rules: []string{"CQ-15"},
			h: hooks{poll: func(q verbs.CQ, wcs []verbs.WC) (int, error) {
				n, err := q.Poll(wcs)
				if n < cap(wcs) {
					wcs[:cap(wcs)][n] = verbs.WC{}
				}
				return n, err
			}},
		},
		{
			name:  "poll returns one fewer than it could",
			rules: []string{"CQ-15"},
			h: hooks{poll: func(q verbs.CQ, wcs []verbs.WC) (int, error) {
				if len(wcs) > 1 {
					wcs = wcs[:len(wcs)-1]
				}
				return q.Poll(wcs)
			}},
		},
		{
			name:  "poll of 0 entries removes one",
			rules: []string{"CQ-16"},
			h: hooks{poll: func(q verbs.CQ, wcs []verbs.WC) (int, error) {
				if len(wcs) == 0 {
					var one [1]verbs.WC
					_, _ = q.Poll(one[:])
					return 0, nil
				}
				return q.Poll(wcs)
			}},
		},

		// CQ-22, CQ-23: overrun.
		{
			name:  "overrun stores the completion, evicting the oldest",
			rules: []string{"CQ-22"},
			h: hooks{push: func(q verbs.CQ, w verbs.WC, solicited bool) (bool, error) {
				if s, ok := sim.CQOf(q); ok && !s.Destroyed() && s.Len() >= s.CQE() {
					var one [1]verbs.WC
					_, _ = s.Poll(one[:])
				}
				return q.(conformance.Injector).Push(w, solicited)
			}},
		},
		{
			name:  "one overrun raises two CQ_ERR",
			rules: []string{"CQ-22"},
			h: hooks{push: func(q verbs.CQ, w verbs.WC, solicited bool) (bool, error) {
				in := q.(conformance.Injector)
				over, err := in.Push(w, solicited)
				if over && err == nil {
					_, _ = in.Push(w, solicited)
				}
				return over, err
			}},
		},
		{
			name:  "CQ_ERR names no CQ",
			rules: []string{"CQ-22"},
			h: hooks{
				getAsync: func(c verbs.Context, ctx context.Context) (verbs.AsyncEvent, error) {
					return anonymous(c.GetAsyncEvent(ctx))
				},
				tryAsync: func(c verbs.Context) (verbs.AsyncEvent, error) {
					return anonymous(c.TryGetAsyncEvent())
				},
			},
		},
		{
			name:  "poll with an error loses the completions it took",
			rules: []string{"CQ-22", "CQ-23"},
			h: hooks{poll: func(q verbs.CQ, wcs []verbs.WC) (int, error) {
				n, err := q.Poll(wcs)
				if err != nil {
					return 0, err
				}
				return n, nil
			}},
		},
		{
			name:  "poll hides the overrun error",
			rules: []string{"CQ-23"},
			h: hooks{poll: func(q verbs.CQ, wcs []verbs.WC) (int, error) {
				n, err := q.Poll(wcs)
				if errors.Is(err, syscall.EIO) {
					err = nil
				}
				return n, err
			}},
		},
		{
			name:  "profile claims a sticky overrun, the CQ keeps working",
			rules: []string{"CQ-23"},
			base:  sim.RXEProfile(),
			h: hooks{profile: func(p verbs.Readings) verbs.Readings {
				p.OverrunDrops = false
				return p
			}},
		},
		{
			name:  "profile claims a single lost completion, the CQ stays in error",
			rules: []string{"CQ-22", "CQ-23"},
			h: hooks{profile: func(p verbs.Readings) verbs.Readings {
				p.OverrunDrops = true
				return p
			}},
		},
	}
}

// drainInner polls everything out of q, ignoring errors.
func drainInner(q verbs.CQ) []verbs.WC {
	var all []verbs.WC
	buf := make([]verbs.WC, 16)
	for {
		n, _ := q.Poll(buf)
		if n == 0 {
			return all
		}
		all = append(all, buf[:n]...)
	}
}

// destroyDroppingOnBusy destroys q; when the destroy is refused with EBUSY it
// throws away q's completions first, which a refused destroy must not do.
func destroyDroppingOnBusy(q verbs.CQ, ctx context.Context) error {
	err := q.DestroyContext(ctx)
	if errors.Is(err, syscall.EBUSY) {
		drainInner(q)
	}
	return err
}

// preAcked is an async event acknowledged as soon as it was read; its Ack does
// nothing.
type preAcked struct{ verbs.AsyncEvent }

func (preAcked) Ack() error { return nil }

func preAck(ev verbs.AsyncEvent, err error) (verbs.AsyncEvent, error) {
	if err != nil {
		return nil, err
	}
	_ = ev.Ack()
	return preAcked{ev}, nil
}

// anonymousEvent is an async event that names no object.
type anonymousEvent = objEvent

func anonymous(ev verbs.AsyncEvent, err error) (verbs.AsyncEvent, error) {
	if err != nil {
		return nil, err
	}
	return anonymousEvent{ev, nil}, nil
}

// TestCQCasesUnderOtherReadings runs the suite on the simulator under readings
// no built-in profile combines (EBUSY on unacked destroy, exact capacity) and
// requires every CQ case to pass: the cases must follow whatever profile the
// device declares.
func TestCQCasesUnderOtherReadings(t *testing.T) {
	for _, p := range []sim.Profile{
		{Name: "busy", Readings: verbs.Readings{DestroyBusyOnUnacked: true}},
		{Name: "exact", Readings: verbs.Readings{ExactCQE: true}},
		{Name: "rxe-busy-exact", Readings: verbs.Readings{OverrunDrops: true, DestroyBusyOnUnacked: true,
			ExactCQE: true, SolicitedBitOnly: true}},
	} {
		t.Run(p.Name, func(t *testing.T) {
			err := conformance.Check(simdev.Factory(p))
			if err == nil {
				return
			}
			errs := []error{err}
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				errs = j.Unwrap()
			}
			for _, e := range errs {
				if strings.HasPrefix(e.Error(), "CQ-") {
					t.Error(e)
				}
			}
		})
	}
}
