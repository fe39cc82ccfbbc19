package sim

import (
	"fmt"
	"strings"
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"

	"github.com/verbsim/verbsim/sim/verr"
)

// PD is a protection domain (struct ibv_pd): the scope of memory regions,
// address handles, QPs, SRQs and memory windows. Every such object belongs
// to exactly one PD, and objects of different PDs cannot be combined
// (PD-03): an lkey or rkey only works for a QP of the MR's PD (MR-08). One
// combination is allowed, as real providers allow it: a QP may take its
// receives from an SRQ of another PD of the same context (see
// PD.CreateQP and docs/srq.md).
// On a nil *PD every method returns EINVAL or zero values; see the
// package doc.
type PD struct {
	tname    string // the trace name, given at creation
	ctx      *Context
	handle   uint32
	dead     bool
	children [numChildKinds]int // live objects of each kind (PD-02)
}

// childKind names a kind of object that belongs to a PD.
type childKind uint8

const (
	childMR childKind = iota
	childAH
	childQP
	childSRQ
	childMW
	numChildKinds
)

var childNames = [numChildKinds]string{"MR", "AH", "QP", "SRQ", "MW"}

// String returns "MR", "AH", "QP", "SRQ" or "MW".
func (k childKind) String() string {
	if k < numChildKinds {
		return childNames[k]
	}
	return fmt.Sprintf("childKind(%d)", uint8(k))
}

// AllocPD allocates a protection domain (ibv_alloc_pd). It fails with
// ENOMEM when the device already has max_pd PDs, across all its contexts,
// and with EINVAL on a closed context (PD-01).
func (c *Context) AllocPD() (_ *PD, err error) {
	const verb = "ibv_alloc_pd"
	if c == nil {
		return nil, verr.New(verb, syscall.EINVAL, "nil device context")
	}
	d := c.dev
	e := d.fabric.eng
	d.fabric.d.Enter(domain.Op{})
	defer d.fabric.d.Leave(domain.Op{}, nil)
	if err := c.checkLocked(verb); err != nil {
		e.callLocked(e.nameOf(c), "alloc_pd", "", "", err)
		return nil, err
	}
	if d.pds >= d.attr.MaxPD {
		err := verr.Errorf(verb, syscall.ENOMEM, "the device already has max_pd=%d PDs", d.attr.MaxPD)
		e.callLocked(e.nameOf(c), "alloc_pd", "", "", err)
		return nil, err
	}
	c.pdSeq++
	d.pds++
	c.pds++
	pd := &PD{ctx: c, handle: c.pdSeq}
	if name := e.nameLocked(d, "pd", pd); name != "" {
		e.callLocked(name, "alloc_pd", e.nameOf(c), fmt.Sprintf("handle %d", pd.handle), nil)
	}
	return pd, nil
}

// Context returns the device context the PD was allocated on (ibv_pd.context).
func (pd *PD) Context() *Context {
	if pd == nil {
		return nil
	}
	return pd.ctx
}

// Handle returns ibv_pd.handle: a number that names the PD within its
// context, counted from 1 in allocation order.
func (pd *PD) Handle() uint32 {
	if pd == nil {
		return 0
	}
	return pd.handle
}

// Dealloc deallocates the PD (ibv_dealloc_pd). It fails with EBUSY, changing
// nothing, while any MR, AH, QP, SRQ or MW still belongs to the PD (PD-02);
// deallocating a nil or already deallocated PD is EINVAL.
func (pd *PD) Dealloc() (err error) {
	const verb = "ibv_dealloc_pd"
	if pd == nil {
		return verr.New(verb, syscall.EINVAL, "nil PD")
	}
	d := pd.ctx.dev
	d.fabric.d.Enter(domain.Op{})
	defer d.fabric.d.Leave(domain.Op{}, nil)
	if d.fabric.eng.tracing() {
		defer func() { d.fabric.eng.callLocked(d.fabric.eng.nameOf(pd), "dealloc_pd", "", "", err) }()
	}
	if err := pd.checkLocked(verb); err != nil {
		return err
	}
	if users := pd.usersLocked(); users != "" {
		return verr.Errorf(verb, syscall.EBUSY, "%s still belong to the PD (PD-02)", users)
	}
	pd.dead = true
	d.pds--
	pd.ctx.pds--
	return nil
}

// checkLocked returns EINVAL for verb if the PD is nil or deallocated.
//
// Precondition: the domain lock is held (when pd is not nil).
func (pd *PD) checkLocked(verb string) error {
	if pd == nil {
		return verr.New(verb, syscall.EINVAL, "nil PD")
	}
	if pd.dead {
		return verr.New(verb, syscall.EINVAL, "the PD has been deallocated")
	}
	return nil
}

// usersLocked describes the live children, e.g. "1 MR(s), 2 AH(s)", or
// returns "" when there are none.
func (pd *PD) usersLocked() string {
	var parts []string
	for k, n := range pd.children {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s(s)", n, childKind(k)))
		}
	}
	return strings.Join(parts, ", ")
}

// holdLocked records a new object of kind k in the PD, which then cannot be
// deallocated until releaseLocked(k) (PD-02). It fails with EINVAL for verb
// when the PD is nil or deallocated. The QP, SRQ and MW layers call it when
// they create an object and releaseLocked when they destroy it.
//
// Precondition: the domain lock is held.
func (pd *PD) holdLocked(verb string, k childKind) error {
	if err := pd.checkLocked(verb); err != nil {
		return err
	}
	pd.children[k]++
	return nil
}

// releaseLocked forgets one object of kind k recorded by holdLocked.
//
// Precondition: the domain lock is held.
func (pd *PD) releaseLocked(k childKind) {
	if pd != nil && pd.children[k] > 0 {
		pd.children[k]--
	}
}

// childrenLocked returns the number of live objects of kind k in the PD.
//
// Precondition: the domain lock is held.
func (pd *PD) childrenLocked(k childKind) int { return pd.children[k] }

// context returns the device context pd was allocated through; nil for a
// nil PD.
func (pd *PD) context() *Context {
	if pd == nil {
		return nil
	}
	return pd.ctx
}
