package sim

import (
	"context"
	"syscall"

	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// The queues as verbs objects: CQ, completion channel, QP, SRQ, and the
// async events that name them. See verbs_objects.go.

// CQOf returns the *CQ behind a verbs.CQ of this package.
func CQOf(q verbs.CQ) (*CQ, bool) {
	v, ok := q.(vCQ)
	return v.CQ, ok && v.CQ != nil
}

// ChannelOf returns the *CompChannel behind a verbs.CompChannel of this
// package.
func ChannelOf(ch verbs.CompChannel) (*CompChannel, bool) {
	v, ok := ch.(vChannel)
	return v.ch, ok && v.ch != nil
}

// QPOf returns the *QP behind a verbs.QP of this package: the handle the
// fabric's controls take (Connect, InjectPacketFault, ForceStatus, ...).
func QPOf(q verbs.QP) (*QP, bool) {
	v, ok := q.(vQP)
	return v.QP, ok && v.QP != nil
}

// SRQOf returns the *SRQ behind a verbs.SRQ of this package.
func SRQOf(s verbs.SRQ) (*SRQ, bool) {
	v, ok := s.(vSRQ)
	return v.SRQ, ok && v.SRQ != nil
}

func wrapCQ(q *CQ) verbs.CQ {
	if q == nil {
		return nil
	}
	return vCQ{q}
}

func wrapChannel(ch *CompChannel) verbs.CompChannel {
	if ch == nil {
		return nil
	}
	return vChannel{ch}
}

func wrapSRQ(s *SRQ) verbs.SRQ {
	if s == nil {
		return nil
	}
	return vSRQ{s}
}

// vCQ is a CQ as a verbs.ExCQ. Every CQ has the poll iterator, whether
// ibv_create_cq or ibv_create_cq_ex made it (CQX-10).
type vCQ struct{ *CQ }

func (v vCQ) Context() verbs.Context           { return wrapContext(contextOf(v.CQ)) }
func (v vCQ) CQContext() any                   { return v.CQ.CQContext() }
func (v vCQ) Channel() verbs.CompChannel       { return wrapChannel(v.CQ.Channel()) }
func (v vCQ) Poll(wcs []verbs.WC) (int, error) { return v.CQ.Poll(wcs) }

type vChannel struct{ ch *CompChannel }

func (v vChannel) Context() verbs.Context { return wrapContext(contextOf(v.ch)) }
func (v vChannel) Destroy() error         { return v.ch.Destroy() }

// Len is the number of queued events (conformance.Depth).
func (v vChannel) Len() int { return v.ch.Len() }

func (v vChannel) GetEvent(ctx context.Context) (verbs.CQ, any, error) {
	q, cqContext, err := v.ch.GetEvent(ctx)
	return wrapCQ(q), cqContext, err
}

func (v vChannel) TryGetEvent() (verbs.CQ, any, error) {
	q, cqContext, err := v.ch.TryGetEvent()
	return wrapCQ(q), cqContext, err
}

// vQP is a QP as a verbs.QP; with the work request builder it is a
// verbs.WRBuilder too.
type vQP struct{ *QP }

func (v vQP) Context() verbs.Context { return wrapContext(v.QP.Context()) }
func (v vQP) QPContext() any         { return v.QP.QPContext() }
func (v vQP) PD() verbs.PD           { return wrapPD(v.QP.PD()) }
func (v vQP) SendCQ() verbs.CQ       { return wrapCQ(v.QP.SendCQ()) }
func (v vQP) RecvCQ() verbs.CQ       { return wrapCQ(v.QP.RecvCQ()) }
func (v vQP) SRQ() verbs.SRQ         { return wrapSRQ(v.QP.SRQ()) }

// verbsInit returns init attributes in verbs' terms.
func verbsInit(ia QPInitAttr) verbs.QPInitAttr {
	return verbs.QPInitAttr{Context: ia.Context, Cap: ia.Cap, Type: ia.Type, SQSigAll: ia.SQSigAll,
		SRQ: wrapSRQ(ia.SRQ), SendCQ: wrapCQ(ia.SendCQ), RecvCQ: wrapCQ(ia.RecvCQ)}
}

// InjectFatal makes the QP hit a catastrophic error (Fabric.InjectFatal):
// the conformance suite's FatalInjector.
func (v vQP) InjectFatal() error {
	f := v.QP.Context().Device().Fabric()
	if f == nil {
		return verr.New("inject_fatal", syscall.EINVAL, "the QP belongs to no fabric")
	}
	return f.InjectFatal(v.QP)
}

// ForceStatus makes the next completion of a request of the QP fail with st
// (Fabric.ForceStatus): the conformance suite's StatusForcer.
func (v vQP) ForceStatus(wrID uint64, recv bool, st verbs.WCStatus) error {
	f := v.QP.Context().Device().Fabric()
	if f == nil {
		return verr.New("force_status", syscall.EINVAL, "the QP belongs to no fabric")
	}
	return f.ForceStatus(v.QP, wrID, recv, st)
}

// BindMW is ibv_bind_mw; an MW of another implementation is EINVAL.
func (v vQP) BindMW(mw verbs.MW, wrID uint64, flags verbs.SendFlags, info verbs.MWBindInfo) error {
	m, ok := mw.(*MW)
	if !ok && mw != nil {
		return verr.New("ibv_bind_mw", syscall.EINVAL, "the MW was not created through sim's verbs")
	}
	return v.QP.BindMW(m, wrID, flags, info)
}

// WRBindMW is ibv_wr_bind_mw; an MW of another implementation fails the
// batch at ibv_wr_complete, as a nil one does.
func (v vQP) WRBindMW(mw verbs.MW, rkey uint32, info verbs.MWBindInfo) {
	m, _ := mw.(*MW)
	v.QP.WRBindMW(m, rkey, info)
}

// WRSetUDAddr is ibv_wr_set_ud_addr; an AH of another implementation fails
// the batch at ibv_wr_complete, as a nil one does.
func (v vQP) WRSetUDAddr(ah verbs.AH, remoteQPN, remoteQKey uint32) {
	a, _ := ah.(*AH)
	v.QP.WRSetUDAddr(a, remoteQPN, remoteQKey)
}

// Query is ibv_query_qp: sim's QP.Query with the init attributes in
// verbs' terms.
func (v vQP) Query(mask verbs.QPAttrMask) (verbs.QPAttr, verbs.QPInitAttr, error) {
	attr, ia, err := v.QP.Query(mask)
	if err != nil {
		return verbs.QPAttr{}, verbs.QPInitAttr{}, err
	}
	return attr, verbsInit(ia), nil
}

// PostSend is ibv_post_send. The objects a request names must be sim's: an
// AH or MW of another implementation is EINVAL, with nothing posted from
// that request on.
func (v vQP) PostSend(wrs []verbs.SendWR) (int, error) {
	for i := range wrs {
		if err := checkWRObjects(&wrs[i]); err != nil {
			if n, err2 := v.QP.PostSend(wrs[:i]); err2 != nil {
				return n, err2
			}
			return i, err
		}
	}
	return v.QP.PostSend(wrs)
}

// checkWRObjects refuses an AH, MW or MR of another implementation. It
// allocates nothing.
func checkWRObjects(w *verbs.SendWR) error {
	const verb = "ibv_post_send"
	if w.AH != nil {
		if _, ok := w.AH.(*AH); !ok {
			return verr.New(verb, syscall.EINVAL, "the AH was not created through sim's verbs")
		}
	}
	if w.MW != nil {
		if _, ok := w.MW.(*MW); !ok {
			return verr.New(verb, syscall.EINVAL, "the MW was not created through sim's verbs")
		}
	}
	if w.Bind.MR != nil && mrOf(w.Bind.MR) == nil {
		return verr.New(verb, syscall.EINVAL, "the MR of the bind was not created through sim's verbs")
	}
	return nil
}

type vSRQ struct{ *SRQ }

func (v vSRQ) Context() verbs.Context { return wrapContext(v.SRQ.Context()) }
func (v vSRQ) SRQContext() any        { return v.SRQ.SRQContext() }

// vAsyncEvent is an async event as a verbs.AsyncEvent.
type vAsyncEvent struct{ ev AsyncEvent }

func (v vAsyncEvent) EventType() verbs.EventType { return v.ev.Type() }
func (v vAsyncEvent) Port() uint8                { return v.ev.Port() }
func (v vAsyncEvent) Ack() error                 { return v.ev.Ack() }

func (v vAsyncEvent) CQ() verbs.CQ   { return wrapCQ(v.ev.CQ()) }
func (v vAsyncEvent) SRQ() verbs.SRQ { return wrapSRQ(v.ev.SRQ()) }

func (v vAsyncEvent) QP() verbs.QP {
	if q := v.ev.QP(); q != nil {
		return vQP{q}
	}
	return nil
}

// String describes the event as AsyncEvent.String does.
func (v vAsyncEvent) String() string { return v.ev.String() }

var (
	_ verbs.ExCQ         = vCQ{}
	_ verbs.CompChannel  = vChannel{}
	_ verbs.QP           = vQP{}
	_ verbs.WRBuilder    = vQP{}
	_ verbs.SRQ          = vSRQ{}
	_ verbs.SRQNumGetter = vSRQ{}
	_ verbs.AsyncEvent   = vAsyncEvent{}
)

// VerbsCQ returns q as a verbs.ExCQ (nil for nil): the view of a CQ made
// through sim's own API that code written against package verbs takes.
func VerbsCQ(q *CQ) verbs.ExCQ {
	if q == nil {
		return nil
	}
	return vCQ{q}
}

// VerbsChannel returns ch as a verbs.CompChannel (nil for nil).
func VerbsChannel(ch *CompChannel) verbs.CompChannel { return wrapChannel(ch) }

// VerbsQP returns q as a verbs.QP (nil for nil).
func VerbsQP(q *QP) verbs.QP {
	if q == nil {
		return nil
	}
	return vQP{q}
}

// VerbsSRQ returns s as a verbs.SRQ (nil for nil).
func VerbsSRQ(s *SRQ) verbs.SRQ { return wrapSRQ(s) }
