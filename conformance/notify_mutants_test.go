package conformance_test

import (
	"context"
	"errors"
	"sync"
	"syscall"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// notifyMutants returns the mutants of the NOTIFY family. Several keep the
// arm in the mutant ("shadow arm") instead of in the device, so a broken
// arming rule can be expressed in a few lines: the real CQ is armed only just
// before a completion the shadow decides fires, which makes the device raise
// exactly one event then.
func notifyMutants() []mutant {
	return []mutant{
		{
			name:  "arm never disarms",
			rules: []string{"NOTIFY-01", "NOTIFY-11"},
			h: newShadowArm(armAsSpec, func(s *armState, w *verbs.WC, so bool) bool {
				return fires(s.arm, w, so)
			}).hooks(),
		},
		{
			name:  "arm fires on completions already present",
			rules: []string{"NOTIFY-02", "NOTIFY-15"},
			h: hooks{reqNotify: func(q verbs.CQ, so bool) error {
				if err := q.ReqNotify(so); err != nil {
					return err
				}
				// Take everything out and put it back in order: the first
				// completion put back fires the arm just made.
				var held []verbs.WC
				buf := make([]verbs.WC, 16)
				for {
					n, err := q.Poll(buf)
					held = append(held, buf[:n]...)
					if err != nil || n == 0 {
						break
					}
				}
				for _, w := range held {
					if _, err := q.(conformance.Injector).Push(w, false); err != nil {
						return err
					}
				}
				return nil
			}},
		},
		{
			name:  "next arm ignores unsuccessful completions",
			rules: []string{"NOTIFY-03"},
			h: newShadowArm(armAsSpec, func(s *armState, w *verbs.WC, so bool) bool {
				if s.arm == sim.CQArmNext && w.Status != verbs.WCSuccess {
					return false
				}
				return fireOnce(s, w, so)
			}).hooks(),
		},
		{
			name:  "solicited arm ignores the solicited bit of receives",
			rules: []string{"NOTIFY-04"},
			h: hooks{push: func(q verbs.CQ, w verbs.WC, so bool) (bool, error) {
				if w.Status == verbs.WCSuccess && w.Opcode.IsRecv() {
					so = false
				}
				return q.(conformance.Injector).Push(w, so)
			}},
		},
		{
			name:  "solicited bit honoured on send completions",
			rules: []string{"NOTIFY-04", "NOTIFY-16"},
			h: newShadowArm(armAsSpec, func(s *armState, w *verbs.WC, so bool) bool {
				if s.arm == sim.CQArmSolicited && w.Status == verbs.WCSuccess && so {
					s.arm = sim.CQDisarmed
					return true
				}
				return fireOnce(s, w, so)
			}).hooks(),
		},
		{
			name:  "solicited arm fires on any completion",
			rules: []string{"NOTIFY-04", "NOTIFY-16"},
			h: hooks{reqNotify: func(q verbs.CQ, so bool) error {
				return q.ReqNotify(false)
			}},
		},
		{
			name:  "rxe solicited reading behind a profile that claims the man-page one",
			rules: []string{"NOTIFY-05"},
			base:  sim.RXEProfile(),
			h: hooks{profile: func(p verbs.Readings) verbs.Readings {
				p.SolicitedBitOnly = false
				return p
			}},
		},
		{
			name:  "man-page solicited reading behind a profile that claims rxe's",
			rules: []string{"NOTIFY-05"},
			h: hooks{profile: func(p verbs.Readings) verbs.Readings {
				p.SolicitedBitOnly = true
				return p
			}},
		},
		{
			name:  "solicited arm downgrades a pending next",
			rules: []string{"NOTIFY-07"},
			h: newShadowArm(func(s *armState, so bool) {
				s.arm = sim.CQArmNext
				if so {
					s.arm = sim.CQArmSolicited
				}
			}, fireOnce).hooks(),
		},
		{
			name:  "next does not upgrade a pending solicited arm",
			rules: []string{"NOTIFY-07"},
			h: newShadowArm(func(s *armState, so bool) {
				if s.arm == sim.CQDisarmed {
					s.arm = armRequest(s.arm, so)
				}
			}, fireOnce).hooks(),
		},
		{
			name:  "arms stack instead of collapsing",
			rules: []string{"NOTIFY-08"},
			h: newShadowArm(func(s *armState, so bool) {
				s.arm = armRequest(s.arm, so)
				s.n++
			}, func(s *armState, w *verbs.WC, so bool) bool {
				if s.n == 0 || !fires(s.arm, w, so) {
					return false
				}
				if s.n--; s.n == 0 {
					s.arm = sim.CQDisarmed
				}
				return true
			}).hooks(),
		},
		eventsCoalesce(),
		{
			name:  "one ack settles every event read",
			rules: []string{"NOTIFY-09", "CHAN-12"},
			h: hooks{ack: func(q verbs.CQ, n int) error {
				if err := q.AckEvents(n); err != nil {
					return err
				}
				for q.AckEvents(1) == nil {
				}
				return nil
			}},
		},
		{
			name:  "ReqNotify on a destroyed CQ succeeds",
			rules: []string{"NOTIFY-10"},
			h: hooks{reqNotify: func(q verbs.CQ, so bool) error {
				_ = q.ReqNotify(so)
				return nil
			}},
		},
		{
			name:  "ReqNotify fails with a bare -1",
			rules: []string{"NOTIFY-10"},
			h: hooks{reqNotify: func(q verbs.CQ, so bool) error {
				if err := q.ReqNotify(so); err != nil {
					return errors.New("ibv_req_notify_cq returned -1")
				}
				return nil
			}},
		},
		eventBeforeCompletion(),
		pollCancelsEvents(),
		pollDisarms(),
		channellessBorrowsChannel(),
		{
			name:  "one event per QP feeding the CQ",
			rules: []string{"NOTIFY-18"},
			h: newShadowArm(func(s *armState, so bool) {
				s.arm = armRequest(s.arm, so)
				s.qps = map[uint32]bool{}
			}, func(s *armState, w *verbs.WC, so bool) bool {
				if !fires(s.arm, w, so) || s.qps[w.QPNum] {
					return false
				}
				s.qps[w.QPNum] = true // the arm stays for the other QPs
				return true
			}).hooks(),
		},
	}
}

// armState is a shadow arm of one CQ.
type armState struct {
	arm sim.CQArm
	n   int             // pending requests, for mutants that stack them
	qps map[uint32]bool // QPs that already fired, for per-QP arms
}

// shadowArm keeps the arm of every CQ in the mutant, with broken rules for
// combining requests (request) or for firing (fires, which also decides
// whether the arm is consumed).
type shadowArm struct {
	mu      sync.Mutex
	state   map[verbs.CQ]*armState
	request func(s *armState, solicitedOnly bool)
	fires   func(s *armState, w *verbs.WC, solicited bool) bool
}

func newShadowArm(request func(*armState, bool), fires func(*armState, *verbs.WC, bool) bool) *shadowArm {
	return &shadowArm{state: map[verbs.CQ]*armState{}, request: request, fires: fires}
}

func (s *shadowArm) hooks() hooks { return hooks{reqNotify: s.reqNotify, push: s.push} }

func (s *shadowArm) get(q verbs.CQ) *armState {
	st, ok := s.state[q]
	if !ok {
		st = &armState{qps: map[uint32]bool{}}
		s.state[q] = st
	}
	return st
}

func (s *shadowArm) reqNotify(q verbs.CQ, so bool) error {
	// A zero-entry poll is a cheap liveness probe: EINVAL on a destroyed CQ,
	// whose ReqNotify must then fail as the real one does.
	if _, err := q.Poll(nil); errors.Is(err, syscall.EINVAL) {
		return q.ReqNotify(so)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.request(s.get(q), so)
	return nil
}

func (s *shadowArm) push(q verbs.CQ, w verbs.WC, so bool) (bool, error) {
	s.mu.Lock()
	fire := s.fires(s.get(q), &w, so)
	s.mu.Unlock()
	if fire {
		if err := q.ReqNotify(false); err != nil {
			return false, err
		}
	}
	return q.(conformance.Injector).Push(w, so)
}

// armAsSpec combines requests as NOTIFY-07/08 say.
func armAsSpec(s *armState, so bool) { s.arm = armRequest(s.arm, so) }

// armRequest is the arm state after one more ibv_req_notify_cq call: a
// request for any completion wins over a solicited-only one, and requests
// do not stack (NOTIFY-07, NOTIFY-08).
func armRequest(a sim.CQArm, solicitedOnly bool) sim.CQArm {
	if !solicitedOnly || a == sim.CQArmNext {
		return sim.CQArmNext
	}
	return sim.CQArmSolicited
}

// fires says whether arm a fires on completion w, solicited or not, under the
// man-page reading of NOTIFY-05: next fires on any completion (NOTIFY-03),
// solicited on a successful receive of a solicited message (NOTIFY-04,
// NOTIFY-16) and on every unsuccessful completion (NOTIFY-05 A).
func fires(a sim.CQArm, w *verbs.WC, so bool) bool {
	switch a {
	case sim.CQArmNext:
		return true
	case sim.CQArmSolicited:
		if w.Status == verbs.WCSuccess {
			return so && w.Opcode.IsClassicRecv()
		}
		return true
	}
	return false
}

// fireOnce fires as NOTIFY-01..05 say (man-page reading) and consumes the arm.
func fireOnce(s *armState, w *verbs.WC, so bool) bool {
	if fires(s.arm, w, so) {
		s.arm = sim.CQDisarmed
		return true
	}
	return false
}

// book records what some hooks need and the wrapper does not keep: the
// channel each CQ was created on, and the CQs and channels of each context.
// Keys are the inner objects the hooks receive.
type book struct {
	mu     sync.Mutex
	chanOf map[verbs.CQ]verbs.CompChannel
	ctxOf  map[verbs.CQ]verbs.Context
	cqsOf  map[verbs.Context][]verbs.CQ
	chans  map[verbs.Context][]verbs.CompChannel
}

func newBook() *book {
	return &book{
		chanOf: map[verbs.CQ]verbs.CompChannel{},
		ctxOf:  map[verbs.CQ]verbs.Context{},
		cqsOf:  map[verbs.Context][]verbs.CQ{},
		chans:  map[verbs.Context][]verbs.CompChannel{},
	}
}

// createCQ is a createCQ hook that creates the CQ as asked and records it.
func (b *book) createCQ(c verbs.Context, cqe int, cctx any, ch verbs.CompChannel, vec int) (verbs.CQ, error) {
	q, err := c.CreateCQ(cqe, cctx, ch, vec)
	if err != nil {
		return nil, err
	}
	b.record(c, q, ch)
	return q, nil
}

func (b *book) record(c verbs.Context, q verbs.CQ, ch verbs.CompChannel) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ctxOf[q] = c
	b.cqsOf[c] = append(b.cqsOf[c], q)
	if ch != nil {
		b.chanOf[q] = ch
		b.chans[c] = append(b.chans[c], ch)
	}
}

func (b *book) channel(q verbs.CQ) verbs.CompChannel {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.chanOf[q]
}

func (b *book) context(q verbs.CQ) verbs.Context {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ctxOf[q]
}

func (b *book) cqs(c verbs.Context) []verbs.CQ {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]verbs.CQ(nil), b.cqsOf[c]...)
}

func (b *book) lastChannel(c verbs.Context) verbs.CompChannel {
	b.mu.Lock()
	defer b.mu.Unlock()
	if chs := b.chans[c]; len(chs) > 0 {
		return chs[len(chs)-1]
	}
	return nil
}

// pollDisarms: polling the CQ cancels a pending arm, as if the consumer
// polling meant it no longer needed waking.
func pollDisarms() mutant {
	s := newShadowArm(armAsSpec, fireOnce)
	h := s.hooks()
	h.poll = func(q verbs.CQ, wcs []verbs.WC) (int, error) {
		s.mu.Lock()
		s.get(q).arm = sim.CQDisarmed
		s.mu.Unlock()
		return q.Poll(wcs)
	}
	return mutant{name: "polling disarms the CQ", rules: []string{"NOTIFY-14"}, h: h}
}

// eventsCoalesce: the channel keeps at most one unread event per CQ; a
// second event of a CQ whose first is still unread is merged into it. The
// mutant's non-blocking read drains the channel into a buffer and drops
// (acking them itself) the other events of the CQ it hands out.
func eventsCoalesce() mutant {
	var mu sync.Mutex
	buf := map[verbs.CompChannel][]stashed{}
	take := func(ch verbs.CompChannel) (stashed, bool) {
		mu.Lock()
		defer mu.Unlock()
		for {
			q, c, err := ch.TryGetEvent()
			if err != nil {
				break
			}
			buf[ch] = append(buf[ch], stashed{q, c})
		}
		s := buf[ch]
		if len(s) == 0 {
			return stashed{}, false
		}
		ev, rest := s[0], s[:0:0]
		for _, o := range s[1:] {
			if o.q == ev.q {
				_ = o.q.AckEvents(1)
				continue
			}
			rest = append(rest, o)
		}
		buf[ch] = rest
		return ev, true
	}
	return mutant{
		name:  "events of one CQ coalesce on the channel",
		rules: []string{"NOTIFY-09"},
		h: hooks{
			tryGetEvent: func(ch verbs.CompChannel) (verbs.CQ, any, error) {
				if ev, ok := take(ch); ok {
					return ev.q, ev.c, nil
				}
				return ch.TryGetEvent()
			},
			getEvent: func(ch verbs.CompChannel, ctx context.Context) (verbs.CQ, any, error) {
				if ev, ok := take(ch); ok {
					return ev.q, ev.c, nil
				}
				return ch.GetEvent(ctx) // blocking reads do not read ahead
			},
		},
	}
}

// eventBeforeCompletion: the event is handed out before the completion that
// fired it can be polled; the first poll after an event finds nothing.
func eventBeforeCompletion() mutant {
	var mu sync.Mutex
	hidden := map[verbs.CQ]bool{}
	hide := func(q verbs.CQ, c any, err error) (verbs.CQ, any, error) {
		if err == nil && q != nil {
			mu.Lock()
			hidden[q] = true
			mu.Unlock()
		}
		return q, c, err
	}
	return mutant{
		name:  "event handed out before its completion is pollable",
		rules: []string{"NOTIFY-12"},
		h: hooks{
			tryGetEvent: func(ch verbs.CompChannel) (verbs.CQ, any, error) {
				return hide(ch.TryGetEvent())
			},
			getEvent: func(ch verbs.CompChannel, ctx context.Context) (verbs.CQ, any, error) {
				return hide(ch.GetEvent(ctx))
			},
			poll: func(q verbs.CQ, wcs []verbs.WC) (int, error) {
				mu.Lock()
				h := hidden[q]
				delete(hidden, q)
				mu.Unlock()
				if h && len(wcs) > 0 {
					return 0, nil
				}
				return q.Poll(wcs)
			},
		},
	}
}

// pollCancelsEvents: polling completions withdraws the queued events of the
// CQ's channel, as if an event were only owed for unpolled completions.
func pollCancelsEvents() mutant {
	b := newBook()
	return mutant{
		name:  "polling withdraws queued events",
		rules: []string{"NOTIFY-13"},
		h: hooks{
			createCQ: b.createCQ,
			poll: func(q verbs.CQ, wcs []verbs.WC) (int, error) {
				n, err := q.Poll(wcs)
				if ch := b.channel(q); n > 0 && ch != nil {
					for {
						eq, _, err := ch.TryGetEvent()
						if err != nil {
							break
						}
						_ = eq.AckEvents(1)
					}
				}
				return n, err
			},
		},
	}
}

// channellessBorrowsChannel: a CQ created without a channel delivers its
// events to the last channel another CQ of the context was created on.
func channellessBorrowsChannel() mutant {
	b := newBook()
	return mutant{
		name:  "channel-less CQ borrows another CQ's channel",
		rules: []string{"NOTIFY-17"},
		h: hooks{createCQ: func(c verbs.Context, cqe int, cctx any, ch verbs.CompChannel, vec int) (verbs.CQ, error) {
			if ch == nil {
				ch = b.lastChannel(c)
			}
			return b.createCQ(c, cqe, cctx, ch, vec)
		}},
	}
}
