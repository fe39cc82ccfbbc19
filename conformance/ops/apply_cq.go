package ops

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/conformance/model"
	"github.com/verbsim/verbsim/verbs"
)

// The CQ and channel operations: check says whether the machine can apply
// one now, apply applies it to the device and the model and compares them.

func (o CreateChannel) check(m *Machine) error { return m.fresh("ch", o.Name) }

func (o CreateChannel) apply(m *Machine) error {
	m.created["ch"]++
	ch, err := m.ctx.CreateCompChannel()
	if e := m.same(o, "ibv_create_comp_channel", err, 0); e != nil {
		return e
	}
	m.chans.add(o.Name, ch)
	m.m.CreateChannel()
	return nil
}

func (o CreateCQ) check(m *Machine) error {
	if o.Channel != "" {
		if _, err := m.channel(o.Channel); err != nil {
			return err
		}
	}
	return m.fresh("cq", o.Name)
}

func (o CreateCQ) apply(m *Machine) error {
	m.created["cq"]++
	chID := m.chans.find(o.Channel)
	var ch verbs.CompChannel
	if chID >= 0 {
		ch = m.chans.items[chID]
	}
	tag := cqTag{m.tags}
	m.tags++
	q, err := m.ctx.CreateCQ(o.CQE, tag, ch, o.Vector)
	id, want := m.m.CreateCQ(o.CQE, tag, chID, o.Vector)
	if e := m.same(o, "ibv_create_cq", err, want); e != nil {
		return e
	}
	if want != 0 {
		return nil
	}
	if q == nil {
		return fmt.Errorf("%v: ibv_create_cq returned no CQ and no error", o)
	}
	m.cqs.add(o.Name, q)
	if err := m.m.AcceptCQE(id, q.CQE()); err != nil {
		return fmt.Errorf("%v: %w", o, err)
	}
	return nil
}

func (o Arm) check(m *Machine) error { _, err := m.cq(o.CQ); return err }

func (o Arm) apply(m *Machine) error {
	i, _ := m.cq(o.CQ)
	err := m.cqs.items[i].ReqNotify(o.Solicited)
	if err == nil {
		m.h.Armed(i)
	}
	return m.same(o, "ibv_req_notify_cq", err, m.m.Arm(i, o.Solicited))
}

func (o Push) check(m *Machine) error {
	i, err := m.cq(o.CQ)
	if err != nil {
		return err
	}
	if _, ok := m.cqs.items[i].(conformance.Injector); !ok {
		return errors.New("the CQ cannot take injected completions (conformance.Injector)")
	}
	return nil
}

func (o Push) apply(m *Machine) error {
	i, _ := m.cq(o.CQ)
	over, err := m.cqs.items[i].(conformance.Injector).Push(o.WC, o.Solicited)
	wantOver, want := m.m.Push(i, o.WC, o.Solicited)
	if err == nil && !over {
		m.h.Accepted(i, o.WC)
	}
	if e := m.same(o, "push", err, want); e != nil {
		return e
	}
	if over != wantOver {
		return fmt.Errorf("%v: push reported overrun=%t; the model expects %t (CQ-22)", o, over, wantOver)
	}
	return nil
}

func (o Poll) check(m *Machine) error {
	if o.N < 0 {
		return fmt.Errorf("num_entries %d is negative", o.N)
	}
	_, err := m.cq(o.CQ)
	return err
}

func (o Poll) apply(m *Machine) error {
	i, _ := m.cq(o.CQ)
	q := m.cqs.items[i]
	if x, ok := q.(verbs.ExCQ); ok && o.Ex && o.N > 0 {
		return m.pollEx(o, i, x)
	}
	canary := verbs.WC{WRID: 0xCA11A27, Status: verbs.WCGeneralErr, VendorErr: 0xCA11A27}
	buf := make([]verbs.WC, o.N)
	for j := range buf {
		buf[j] = canary
	}
	k, err := q.Poll(buf)
	ps, want := m.m.PollFrom(i, o.N)
	if k < 0 || k > o.N {
		return fmt.Errorf("%v: ibv_poll_cq returned %d for %d entries (CQ-15)", o, k, o.N)
	}
	got, dev := meaningful(ps, buf[:k])
	m.h.Polled(i, dev)
	if e := m.same(o, "ibv_poll_cq", err, want); e != nil {
		return e
	}
	if d := cmp.Diff(got, dev, cmpopts.EquateEmpty()); d != "" {
		return fmt.Errorf("%v: polled completions differ from the model's (%s) (-model +device):\n%s", o, pollRules(ps), d)
	}
	for j := k; j < o.N; j++ {
		if buf[j] != canary {
			return fmt.Errorf("%v: ibv_poll_cq returned %d but wrote entry %d (CQ-15)", o, k, j)
		}
	}
	return nil
}

// pollEx reads up to o.N completions of CQ i with the poll iterator and
// checks them, and each call's outcome, against the model as Poll does
// (CQX-04, CQX-05, CQX-08, CQX-10). Where ibv_poll_cq would report an error
// with its completions (EIO after an overrun, CQ-23), the iterator reports
// it in place of ENOENT at the end.
func (m *Machine) pollEx(o Poll, i int, q verbs.ExCQ) error {
	ps, want := m.m.PollFrom(i, o.N)
	var dev []verbs.WC
	err := q.StartPoll()
	for err == nil {
		w, rerr := verbs.ReadWC(q)
		if rerr != nil {
			return fmt.Errorf("%v: reading completion %d through the iterator: %v (CQX-03)", o, len(dev), rerr)
		}
		dev = append(dev, w)
		if len(dev) == o.N {
			break
		}
		err = q.NextPoll()
	}
	started := len(dev) > 0
	if started {
		if e := m.same(o, "ibv_end_poll", q.EndPoll(), 0); e != nil {
			return e
		}
	}
	got, devm := meaningful(ps, dev)
	m.h.Polled(i, devm)
	// The call that ended the walk: start_poll on an empty CQ, or next_poll
	// past the last completion; none when o.N completions were read.
	if len(dev) < o.N {
		end := want
		if end == 0 {
			end = syscall.ENOENT
		}
		verb := "ibv_next_poll at the end"
		if !started {
			verb = "ibv_start_poll"
		}
		if e := m.same(o, verb, err, end); e != nil {
			return e
		}
	}
	if d := cmp.Diff(got, devm, cmpopts.EquateEmpty()); d != "" {
		return fmt.Errorf("%v: completions read through the poll iterator differ from the model's (%s, CQX-10) (-model +device):\n%s", o, pollRules(ps), d)
	}
	return nil
}

// meaningful returns the model's polled completions and the device's, where
// a device completion that completes a QP's work request and agrees with the
// model on wr_id, status and qp_num is replaced by the model's: the other
// fields of an error completion mean nothing (FLUSH-06, WC-03).
func meaningful(ps []model.Polled, dev []verbs.WC) (want, got []verbs.WC) {
	got = append([]verbs.WC(nil), dev...)
	for j, p := range ps {
		want = append(want, p.WC)
		if p.QP >= 0 && j < len(got) {
			g := got[j]
			if g.WRID == p.WC.WRID && g.Status == p.WC.Status && g.QPNum == p.WC.QPNum {
				got[j] = p.WC
			}
		}
	}
	return want, got
}

// pollRules names the rules a poll's completions follow: CQ-17 for any, and
// the flush rules when some came from QPs.
func pollRules(ps []model.Polled) string {
	for _, p := range ps {
		if p.QP >= 0 {
			return "CQ-17, CQ-26, FLUSH-01, FLUSH-02, FLUSH-04, FLUSH-06"
		}
	}
	return "CQ-17"
}

func (o GetEvent) check(m *Machine) error { _, err := m.channel(o.Channel); return err }

func (o GetEvent) apply(m *Machine) error {
	i, _ := m.channel(o.Channel)
	q, cctx, err := m.chans.items[i].TryGetEvent()
	ev, want := m.m.GetEvent(i)
	m.lastEventCQ = ""
	id := -1
	if err == nil {
		if id = m.cqs.of(q); id >= 0 {
			m.h.EventRead(id)
			m.lastEventCQ = m.cqs.names[id]
		}
	}
	if e := m.same(o, "ibv_get_cq_event", err, want); e != nil {
		return e
	}
	if want != 0 {
		return nil
	}
	if id != ev.CQ {
		return fmt.Errorf("%v: the event names %s; the model expects %s (CHAN-06)", o, m.cqName(id), m.cqName(ev.CQ))
	}
	if cctx != ev.Context {
		return fmt.Errorf("%v: the event carries context %v; the model expects %v (CQ-04)", o, cctx, ev.Context)
	}
	return nil
}

// cqName names CQ i for messages.
func (m *Machine) cqName(i int) string {
	if i < 0 || i >= len(m.cqs.names) {
		return "no CQ of the machine"
	}
	return m.cqs.names[i]
}

func (o Ack) check(m *Machine) error { _, err := m.cq(o.CQ); return err }

func (o Ack) apply(m *Machine) error {
	i, _ := m.cq(o.CQ)
	err := m.cqs.items[i].AckEvents(o.N)
	if err == nil {
		m.h.Acked(i, o.N)
	}
	return m.same(o, "ibv_ack_cq_events", err, m.m.Ack(i, o.N))
}

func (o Resize) check(m *Machine) error { _, err := m.cq(o.CQ); return err }

func (o Resize) apply(m *Machine) error {
	i, _ := m.cq(o.CQ)
	q := m.cqs.items[i]
	want := m.m.Resize(i, o.CQE)
	if e := m.same(o, "ibv_resize_cq", q.Resize(o.CQE), want); e != nil {
		return e
	}
	if want == 0 {
		if err := m.m.AcceptCQE(i, q.CQE()); err != nil {
			return fmt.Errorf("%v: %w", o, err)
		}
	}
	return nil
}

func (o DestroyCQ) check(m *Machine) error { _, err := m.cq(o.CQ); return err }

func (o DestroyCQ) apply(m *Machine) error {
	i, _ := m.cq(o.CQ)
	blocked, want := m.m.DestroyCQ(i)
	var ctx context.Context
	var cancel context.CancelFunc
	if blocked {
		// The model says the call would wait for acks: give it a context that
		// is already done, so a correct device returns at once.
		ctx, cancel = context.WithCancel(context.Background())
		cancel()
	} else {
		ctx, cancel = patient()
		defer cancel()
	}
	err := m.cqs.items[i].DestroyContext(ctx)
	if !blocked {
		return m.same(o, "ibv_destroy_cq", err, want)
	}
	m.record(err)
	if err != nil && m.CheckError != nil {
		if e := m.CheckError(o, err); e != nil {
			return fmt.Errorf("%v: ibv_destroy_cq: %w", o, e)
		}
	}
	if err == nil || !(errors.Is(err, syscall.EINTR) || errors.Is(err, context.Canceled)) {
		return fmt.Errorf("%v: ibv_destroy_cq returned %v; the model expects it to wait for %d unacked event(s) (CQ-13), so with a context already cancelled it must return EINTR",
			o, err, m.m.CQ(i).Unacked())
	}
	return nil
}

func (o DestroyChannel) check(m *Machine) error { _, err := m.channel(o.Channel); return err }

func (o DestroyChannel) apply(m *Machine) error {
	i, _ := m.channel(o.Channel)
	return m.same(o, "ibv_destroy_comp_channel", m.chans.items[i].Destroy(), m.m.DestroyChannel(i))
}

func (GetAsync) check(*Machine) error { return nil }

func (o GetAsync) apply(m *Machine) error {
	ev, err := m.ctx.TryGetAsyncEvent()
	mev, want := m.m.GetAsync()
	if err == nil && ev != nil {
		m.async = append(m.async, asyncRead{ev: ev, want: mev})
		if id := m.cqs.of(ev.CQ()); id >= 0 && ev.CQ() != nil {
			m.h.AsyncRead(id)
		}
	}
	if e := m.same(o, "ibv_get_async_event", err, want); e != nil {
		return e
	}
	if want != 0 {
		return nil
	}
	if ev == nil {
		return fmt.Errorf("%v: ibv_get_async_event returned no event and no error", o)
	}
	got, expect := m.eventName(ev), m.modelEventName(mev)
	if ev.EventType() != verbs.EventType(mev.Type) || got != expect {
		return fmt.Errorf("%v: got %v naming %s; the model expects %v naming %s (ASYNC-03, ASYNC-07, ASYNC-13)",
			o, ev.EventType(), got, verbs.EventType(mev.Type), expect)
	}
	return nil
}

// eventName names the CQ or QP of the machine that ev names.
func (m *Machine) eventName(ev verbs.AsyncEvent) string {
	if q := ev.QP(); q != nil {
		if i := m.qps.of(q); i >= 0 {
			return m.qps.names[i]
		}
		return "a QP not of the machine"
	}
	if q := ev.CQ(); q != nil {
		return m.cqName(m.cqs.of(q))
	}
	return "no CQ or QP"
}

// modelEventName names the CQ or QP that ev, a model event, names.
func (m *Machine) modelEventName(ev model.AsyncEvent) string {
	if ev.QP >= 0 {
		return m.qps.names[ev.QP]
	}
	return m.cqName(ev.CQ)
}

func (o AckAsync) check(m *Machine) error {
	if o.Event < 0 || o.Event >= len(m.async) {
		return fmt.Errorf("event %d: %d async event(s) read so far", o.Event, len(m.async))
	}
	return nil
}

func (o AckAsync) apply(m *Machine) error {
	r := m.async[o.Event]
	err := r.ev.Ack()
	want := m.m.AckAsync(r.want)
	if err == nil && r.want.QP < 0 {
		m.h.AsyncAcked(r.want.CQ)
	}
	return m.same(o, "ibv_ack_async_event", err, want)
}

// referencer returns CQ name's Referencer capability.
func (m *Machine) referencer(name string) (int, conformance.Referencer, error) {
	i, err := m.cq(name)
	if err != nil {
		return -1, nil, err
	}
	rf, ok := m.cqs.items[i].(conformance.Referencer)
	if !ok {
		return -1, nil, errors.New("the CQ cannot be held (conformance.Referencer)")
	}
	return i, rf, nil
}

func (o Hold) check(m *Machine) error { _, _, err := m.referencer(o.CQ); return err }

func (o Hold) apply(m *Machine) error {
	i, rf, _ := m.referencer(o.CQ)
	return m.same(o, "ref", rf.Ref(), m.m.Ref(i))
}

func (o Release) check(m *Machine) error {
	i, _, err := m.referencer(o.CQ)
	if err == nil && m.m.CQ(i).Refs == 0 {
		err = errors.New("the CQ is not held")
	}
	return err
}

func (o Release) apply(m *Machine) error {
	i, rf, _ := m.referencer(o.CQ)
	rf.Unref()
	m.m.Unref(i)
	return nil
}
