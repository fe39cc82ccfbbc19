package sim

import (
	"syscall"

	"github.com/verbsim/verbsim/sim/internal/cq"

	"github.com/verbsim/verbsim/sim/verr"
)

// Every object a verb takes as an argument is checked here, and only here,
// against the object the verb runs on: a QP's CQs and SRQ, a CQ's channel,
// the two QPs of Connect, the QP or SRQ of a fault injection, the AH of a UD
// send. Each object records at creation who made it (a CQ and a channel their
// device context, an SRQ, a QP, an AH and an MR their PD, which knows its
// context), and none of that ever changes, so the check reads no lock, not
// even the foreign object's: checking an object of another fabric takes
// nothing of that fabric.
//
// libibverbs passes objects to the kernel as handles of the caller's device
// context (ib_uverbs create_qp looks the CQ and SRQ handles up in the
// caller's file; create_cq looks the channel up the same way), so an object
// of another context is not found there: EINVAL. Objects of another PD of
// the same context are a different matter, decided per verb (see
// PD.CreateQP and docs/srq.md).

// reach says how far from the verb's own object an argument may belong.
type reach uint8

const (
	// sameFabric: the argument may be on any device of the fabric (the two
	// QPs of a connection, a QP given to a fabric's fault injection).
	sameFabric reach = iota
	// sameContext: the argument must have been made through the same
	// device context (a QP's CQs and SRQ, a CQ's channel).
	sameContext
)

// contextOf returns the device context obj was made through: a *Context
// itself, or a *PD, *CQ, *CompChannel, *SRQ, *QP, *AH, *MR, *MW or *XRCD of this
// package. It returns nil for a nil object and for one made outside this
// package (a CQ of cq.New, say). It reads only what is fixed at creation
// and allocates nothing, so the hot path may use it.
func contextOf(obj any) *Context {
	var pd *PD
	switch o := obj.(type) {
	case *Context:
		return o
	case *PD:
		pd = o
	case *CQ:
		return o.Context()
	case *cq.CQ:
		c, _ := o.Owner().(*Context)
		return c
	case *CompChannel:
		return o.Context()
	case *SRQ:
		pd = o.PD()
	case *QP:
		if x := o.XRCD(); x != nil {
			return x.ctx // an XRC_RECV QP has no PD
		}
		pd = o.PD()
	case *AH:
		pd = o.PD()
	case *MR:
		if o != nil {
			pd = o.pd
		}
	case *MW:
		if o != nil {
			pd = o.pd
		}
	case *XRCD:
		if o != nil {
			return o.ctx
		}
	}
	if pd == nil {
		return nil
	}
	return pd.ctx
}

// fabricOf returns the fabric of a *Fabric or of any object contextOf
// knows, or nil.
func fabricOf(obj any) *Fabric {
	if f, ok := obj.(*Fabric); ok {
		return f
	}
	if c := contextOf(obj); c != nil {
		return c.dev.fabric
	}
	return nil
}

// onFabric reports whether obj belongs to f. It allocates nothing.
func onFabric(obj any, f *Fabric) bool { return f != nil && fabricOf(obj) == f }

// checkOwner returns nil when obj, the argument named arg of verb, belongs
// within r of owner (a *Fabric, a *Context or any object contextOf knows),
// and otherwise EINVAL saying which boundary obj crosses: another fabric,
// another device, another context of the same device, or no owner at all
// (obj or owner made outside this package).
// It changes nothing and needs no lock.
func checkOwner(verb, arg string, owner, obj any, r reach) error {
	want, got := fabricOf(owner), fabricOf(obj)
	switch {
	case got == nil:
		return verr.Errorf(verb, syscall.EINVAL, "%s was not created through this package's verbs", arg)
	case want == nil:
		return verr.Errorf(verb, syscall.EINVAL, "what %s goes with was not created through this package's verbs", arg)
	case want != got:
		return verr.Errorf(verb, syscall.EINVAL, "%s belongs to another fabric", arg)
	case r == sameFabric:
		return nil
	}
	wc, gc := contextOf(owner), contextOf(obj)
	switch {
	case wc == nil:
		return verr.Errorf(verb, syscall.EINVAL, "%s cannot be checked against a fabric alone", arg)
	case wc.dev != gc.dev:
		return verr.Errorf(verb, syscall.EINVAL, "%s belongs to device %q, not %q", arg, gc.dev.name, wc.dev.name)
	case wc != gc:
		return verr.Errorf(verb, syscall.EINVAL, "%s belongs to another context of device %q", arg, wc.dev.name)
	}
	return nil
}
