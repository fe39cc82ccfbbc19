package conformance_test

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"time"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// chanMutants returns the mutants of the CHAN family.
func chanMutants() []mutant {
	return []mutant{
		{
			name:  "channel born destroyed",
			rules: []string{"CHAN-01", "CHAN-04"},
			h: hooks{
				tryGetEvent: func(ch verbs.CompChannel) (verbs.CQ, any, error) {
					return nil, nil, syscall.EBADF
				},
				getEvent: func(ch verbs.CompChannel, ctx context.Context) (verbs.CQ, any, error) {
					return nil, nil, syscall.EBADF
				},
			},
		},
		{
			name:  "event loses the CQ's context",
			rules: []string{"CHAN-02", "NOTIFY-18"},
			h: hooks{
				tryGetEvent: func(ch verbs.CompChannel) (verbs.CQ, any, error) {
					q, _, err := ch.TryGetEvent()
					return q, nil, err
				},
				getEvent: func(ch verbs.CompChannel, ctx context.Context) (verbs.CQ, any, error) {
					q, _, err := ch.GetEvent(ctx)
					return q, nil, err
				},
			},
		},
		{
			name:  "GetEvent does not block",
			rules: []string{"CHAN-03"},
			h: hooks{getEvent: func(ch verbs.CompChannel, ctx context.Context) (verbs.CQ, any, error) {
				return ch.TryGetEvent()
			}},
		},
		{
			name:  "blocking read swallows the event it woke for",
			rules: []string{"CHAN-03"},
			h: hooks{getEvent: func(ch verbs.CompChannel, ctx context.Context) (verbs.CQ, any, error) {
				q, _, err := ch.GetEvent(ctx)
				if err != nil {
					return nil, nil, err
				}
				_ = q.AckEvents(1)
				return nil, nil, syscall.EINTR
			}},
		},
		{
			name:  "idle TryGetEvent reports success",
			rules: []string{"CHAN-04"},
			h: hooks{tryGetEvent: func(ch verbs.CompChannel) (verbs.CQ, any, error) {
				q, c, err := ch.TryGetEvent()
				if errors.Is(err, syscall.EAGAIN) {
					return nil, nil, nil
				}
				return q, c, err
			}},
		},
		readAhead("Len misses events read ahead into a buffer", []string{"CHAN-05"}, false),
		readAhead("channel hands events out LIFO", []string{"CHAN-06"}, true),
		{
			name:  "a batched ack counts as one",
			rules: []string{"CHAN-07", "CHAN-12"},
			// EBUSY instead of a wait makes the missing acks show at once.
			base: sim.Profile{Name: "busy", Readings: verbs.Readings{DestroyBusyOnUnacked: true}},
			h: hooks{ack: func(q verbs.CQ, n int) error {
				return q.AckEvents(min(n, 1))
			}},
		},
		{
			name:  "over-ack accepted",
			rules: []string{"CHAN-08"},
			h: hooks{ack: func(q verbs.CQ, n int) error {
				if err := q.AckEvents(n); !errors.Is(err, syscall.EINVAL) {
					return err
				}
				return nil
			}},
		},
		{
			name:  "over-ack acks what it can",
			rules: []string{"CHAN-08"},
			h: hooks{ack: func(q verbs.CQ, n int) error {
				err := q.AckEvents(n)
				if errors.Is(err, syscall.EINVAL) {
					for q.AckEvents(1) == nil {
					}
				}
				return err
			}},
		},
		{
			name:  "channel destroy ignores its CQs",
			rules: []string{"CHAN-09"},
			h: hooks{destroyCh: func(ch verbs.CompChannel) error {
				if err := ch.Destroy(); !errors.Is(err, syscall.EBUSY) {
					return err
				}
				return nil
			}},
		},
		{
			name:  "reading an event consumes the completion",
			rules: []string{"CHAN-10"},
			h: hooks{
				tryGetEvent: func(ch verbs.CompChannel) (verbs.CQ, any, error) {
					return consume(ch.TryGetEvent())
				},
				getEvent: func(ch verbs.CompChannel, ctx context.Context) (verbs.CQ, any, error) {
					return consume(ch.GetEvent(ctx))
				},
			},
		},
		eventsToTwoReaders(),
	}
}

func consume(q verbs.CQ, c any, err error) (verbs.CQ, any, error) {
	if err == nil && q != nil {
		_, _ = q.Poll(make([]verbs.WC, 1))
	}
	return q, c, err
}

// stashed is an event a mutant holds outside the device's channel.
type stashed struct {
	q verbs.CQ
	c any
}

// readAhead: every read drains the device's channel into a buffer and hands
// out from the buffer (last first when lifo). The device's depth no longer
// counts the buffered events.
func readAhead(name string, rules []string, lifo bool) mutant {
	var mu sync.Mutex
	buf := map[verbs.CompChannel][]stashed{}
	take := func(ch verbs.CompChannel) (stashed, bool) {
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
		var ev stashed
		if lifo {
			ev, buf[ch] = s[len(s)-1], s[:len(s)-1]
		} else {
			ev, buf[ch] = s[0], s[1:]
		}
		return ev, true
	}
	return mutant{
		name:  name,
		rules: rules,
		h: hooks{
			tryGetEvent: func(ch verbs.CompChannel) (verbs.CQ, any, error) {
				mu.Lock()
				defer mu.Unlock()
				if ev, ok := take(ch); ok {
					return ev.q, ev.c, nil
				}
				return ch.TryGetEvent()
			},
			getEvent: func(ch verbs.CompChannel, ctx context.Context) (verbs.CQ, any, error) {
				mu.Lock()
				ev, ok := take(ch)
				mu.Unlock()
				if ok {
					return ev.q, ev.c, nil
				}
				return ch.GetEvent(ctx)
			},
		},
	}
}

// eventsToTwoReaders: every event is handed out twice, to two reads.
func eventsToTwoReaders() mutant {
	var mu sync.Mutex
	extra := map[verbs.CompChannel][]stashed{}
	try := func(ch verbs.CompChannel) (verbs.CQ, any, error) {
		mu.Lock()
		defer mu.Unlock()
		if s := extra[ch]; len(s) > 0 {
			extra[ch] = s[1:]
			return s[0].q, s[0].c, nil
		}
		q, c, err := ch.TryGetEvent()
		if err == nil {
			extra[ch] = append(extra[ch], stashed{q, c})
		}
		return q, c, err
	}
	return mutant{
		name:  "events delivered to two readers",
		rules: []string{"CHAN-11"},
		h: hooks{
			tryGetEvent: try,
			getEvent: func(ch verbs.CompChannel, ctx context.Context) (verbs.CQ, any, error) {
				for {
					q, c, err := try(ch)
					if !errors.Is(err, syscall.EAGAIN) {
						return q, c, err
					}
					select {
					case <-ctx.Done():
						return nil, nil, syscall.EINTR
					case <-time.After(time.Millisecond):
					}
				}
			},
		},
	}
}
