package conformance_test

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"time"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/verbs"
)

// asyncMutants returns the mutants of the ASYNC family.
func asyncMutants() []mutant {
	return []mutant{
		{
			name:  "GetAsyncEvent does not block",
			rules: []string{"ASYNC-01"},
			h: hooks{getAsync: func(c verbs.Context, ctx context.Context) (verbs.AsyncEvent, error) {
				return c.TryGetAsyncEvent()
			}},
		},
		{
			name:  "idle TryGetAsyncEvent reports success",
			rules: []string{"ASYNC-02"},
			h: hooks{tryAsync: func(c verbs.Context) (verbs.AsyncEvent, error) {
				ev, err := c.TryGetAsyncEvent()
				if errors.Is(err, syscall.EAGAIN) {
					return nil, nil
				}
				return ev, err
			}},
		},
		cqErrNamesAnotherCQ(),
		{
			name:  "event type off by one",
			rules: []string{"ASYNC-03", "ASYNC-04", "ASYNC-17"},
			h: rewriteAsync(func(c verbs.Context, ev verbs.AsyncEvent) verbs.AsyncEvent {
				return retyped{ev, ev.EventType() + 1}
			}),
		},
		destroyAcksAsync(),
		asyncToTwoReaders(),
		cqErrOnErrorCompletion(),
	}
}

// rewriteAsync returns hooks that pass every async event read through f.
func rewriteAsync(f func(c verbs.Context, ev verbs.AsyncEvent) verbs.AsyncEvent) hooks {
	wrap := func(c verbs.Context, ev verbs.AsyncEvent, err error) (verbs.AsyncEvent, error) {
		if err != nil || ev == nil {
			return ev, err
		}
		return f(c, ev), nil
	}
	return hooks{
		getAsync: func(c verbs.Context, ctx context.Context) (verbs.AsyncEvent, error) {
			ev, err := c.GetAsyncEvent(ctx)
			return wrap(c, ev, err)
		},
		tryAsync: func(c verbs.Context) (verbs.AsyncEvent, error) {
			ev, err := c.TryGetAsyncEvent()
			return wrap(c, ev, err)
		},
	}
}

type retyped struct {
	verbs.AsyncEvent
	typ verbs.EventType
}

func (e retyped) EventType() verbs.EventType { return e.typ }

type renamed = objEvent

// cqErrNamesAnotherCQ: CQ_ERR names the first CQ of the context, whichever
// CQ overran.
func cqErrNamesAnotherCQ() mutant {
	b := newBook()
	h := rewriteAsync(func(c verbs.Context, ev verbs.AsyncEvent) verbs.AsyncEvent {
		if ev.EventType() != verbs.EventCQErr {
			return ev
		}
		for _, q := range b.cqs(c) {
			if q != evObject(ev) {
				return renamed{ev, q}
			}
		}
		return ev
	})
	h.createCQ = b.createCQ
	return mutant{name: "CQ_ERR names another CQ", rules: []string{"ASYNC-03"}, h: h}
}

// destroyAcksAsync: destroying a CQ acknowledges the async events read for it
// itself, so the destroy never waits for the application's acks.
func destroyAcksAsync() mutant {
	var mu sync.Mutex
	read := map[any][]verbs.AsyncEvent{}
	h := rewriteAsync(func(c verbs.Context, ev verbs.AsyncEvent) verbs.AsyncEvent {
		mu.Lock()
		defer mu.Unlock()
		read[evObject(ev)] = append(read[evObject(ev)], ev)
		return ev
	})
	h.destroyCQ = func(q verbs.CQ, ctx context.Context) error {
		mu.Lock()
		evs := read[q]
		delete(read, q)
		mu.Unlock()
		for _, ev := range evs {
			_ = ev.Ack()
		}
		return q.DestroyContext(ctx)
	}
	return mutant{name: "destroy acks the CQ's async events itself", rules: []string{"ASYNC-05"}, h: h}
}

// asyncToTwoReaders: every async event is handed out twice, to two reads.
func asyncToTwoReaders() mutant {
	var mu sync.Mutex
	extra := map[verbs.Context][]verbs.AsyncEvent{}
	try := func(c verbs.Context) (verbs.AsyncEvent, error) {
		mu.Lock()
		defer mu.Unlock()
		if s := extra[c]; len(s) > 0 {
			extra[c] = s[1:]
			return s[0], nil
		}
		ev, err := c.TryGetAsyncEvent()
		if err == nil {
			extra[c] = append(extra[c], ev)
		}
		return ev, err
	}
	return mutant{
		name:  "async event delivered to two readers",
		rules: []string{"ASYNC-06"},
		h: hooks{
			tryAsync: try,
			getAsync: func(c verbs.Context, ctx context.Context) (verbs.AsyncEvent, error) {
				for {
					ev, err := try(c)
					if !errors.Is(err, syscall.EAGAIN) {
						return ev, err
					}
					select {
					case <-ctx.Done():
						return nil, syscall.EINTR
					case <-time.After(time.Millisecond):
					}
				}
			},
		},
	}
}

// fakeCQErr is a CQ_ERR the mutant makes up.
type fakeCQErr struct{ q verbs.CQ }

func (e fakeCQErr) EventType() verbs.EventType { return verbs.EventCQErr }
func (e fakeCQErr) CQ() verbs.CQ               { return e.q }
func (e fakeCQErr) QP() verbs.QP               { return nil }
func (e fakeCQErr) SRQ() verbs.SRQ             { return nil }
func (e fakeCQErr) Port() uint8                { return 0 }
func (e fakeCQErr) Ack() error                 { return nil }

// cqErrOnErrorCompletion: an unsuccessful completion raises CQ_ERR naming its
// CQ, as if CQ_ERR reported failed work requests rather than overruns.
func cqErrOnErrorCompletion() mutant {
	b := newBook()
	var mu sync.Mutex
	fakes := map[verbs.Context][]verbs.AsyncEvent{}
	fake := func(c verbs.Context) (verbs.AsyncEvent, bool) {
		mu.Lock()
		defer mu.Unlock()
		if s := fakes[c]; len(s) > 0 {
			fakes[c] = s[1:]
			return s[0], true
		}
		return nil, false
	}
	return mutant{
		name:  "CQ_ERR raised for unsuccessful completions",
		rules: []string{"ASYNC-07"},
		h: hooks{
			createCQ: b.createCQ,
			push: func(q verbs.CQ, w verbs.WC, so bool) (bool, error) {
				over, err := q.(conformance.Injector).Push(w, so)
				if err == nil && !over && w.Status != verbs.WCSuccess {
					c := b.context(q)
					mu.Lock()
					fakes[c] = append(fakes[c], fakeCQErr{q})
					mu.Unlock()
				}
				return over, err
			},
			tryAsync: func(c verbs.Context) (verbs.AsyncEvent, error) {
				if ev, ok := fake(c); ok {
					return ev, nil
				}
				return c.TryGetAsyncEvent()
			},
			getAsync: func(c verbs.Context, ctx context.Context) (verbs.AsyncEvent, error) {
				if ev, ok := fake(c); ok {
					return ev, nil
				}
				return c.GetAsyncEvent(ctx)
			},
		},
	}
}
