package conformance_test

import (
	"context"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/verbs"
)

// InjectError implements conformance.SRQErrorInjector.
func (s *mSRQ) InjectError() error {
	if s.h.injectSRQ != nil {
		return s.h.injectSRQ(s.inner)
	}
	return s.inner.(conformance.SRQErrorInjector).InjectError()
}

// srqerrMutants returns devices that get the catastrophic SRQ error
// (ASYNC-15) wrong.
func srqerrMutants() []mutant {
	return []mutant{
		{
			name: "an SRQ error does nothing", rules: []string{"ASYNC-15"},
			h: hooks{injectSRQ: func(verbs.SRQ) error { return nil }},
		},
		{
			name: "an SRQ error also flushes the SRQ's receives", rules: []string{"ASYNC-15"},
			h: hooks{injectSRQ: func(s verbs.SRQ) error {
				if err := s.(conformance.SRQErrorInjector).InjectError(); err != nil {
					return err
				}
				c := s.(conformance.Consumer)
				for {
					if _, _, ok := c.Take(); !ok {
						return nil
					}
				}
			}},
		},
		{
			name: "SRQ_ERR names no SRQ", rules: []string{"ASYNC-15"},
			h: hooks{tryAsync: func(c verbs.Context) (verbs.AsyncEvent, error) {
				return hideObject(verbs.EventSRQErr)(c.TryGetAsyncEvent())
			}, getAsync: func(c verbs.Context, ctx context.Context) (verbs.AsyncEvent, error) {
				return hideObject(verbs.EventSRQErr)(c.GetAsyncEvent(ctx))
			}},
		},
	}
}

// hideObject returns a filter that hides the object an event of type
// typ names.
func hideObject(typ verbs.EventType) func(verbs.AsyncEvent, error) (verbs.AsyncEvent, error) {
	return func(ev verbs.AsyncEvent, err error) (verbs.AsyncEvent, error) {
		if err != nil || ev.EventType() != typ {
			return ev, err
		}
		_ = ev.Ack()
		return fakeEvent{typ, nil}, nil
	}
}
