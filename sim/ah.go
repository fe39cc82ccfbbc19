package sim

import (
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/verbs"

	"github.com/verbsim/verbsim/sim/verr"
)

// AH is an address handle (struct ibv_ah): a path for UD work requests,
// scoped to the PD it was created in (PD-03, PD-04).
// On a nil *AH every method returns EINVAL or zero values; see the
// package doc.
type AH struct {
	tname string // the trace name, given at creation
	pd    *PD
	attr  verbs.AHAttr
	dead  bool
}

// CreateAH creates an address handle in the PD (ibv_create_ah). As the
// kernel checks (rdma_check_ah_attr, rdma_get_gid_attr), it is EINVAL when
// PortNum is not a port of the device, when the port is Ethernet and the
// attributes carry no GRH, and when a GRH names a SGID index outside the
// port's GID table, and ENODATA when it names an unused entry (AV-01,
// AV-02). As an InfiniBand provider checks
// (rdmavt's rvt_check_ah, qib_check_ah), it is EINVAL too for an SL above 15,
// a StaticRate that is no enum ibv_rate value (0, or 2 to 24) and, on an
// InfiniBand port, a DLID of 0 (reserved) or a multicast DLID without a GRH;
// on a RoCE port the DLID is not used and not checked. EINVAL also for a nil
// or deallocated PD, and ENOMEM when the device already has max_ah AHs. The
// AH holds the PD until Destroy (PD-02).
func (pd *PD) CreateAH(attr verbs.AHAttr) (_ *AH, err error) {
	const verb = "ibv_create_ah"
	if pd == nil {
		return nil, verr.New(verb, syscall.EINVAL, "nil PD")
	}
	d := pd.ctx.dev
	d.fabric.d.Enter(domain.Op{})
	defer d.fabric.d.Leave(domain.Op{}, nil)
	if e := d.fabric.eng; e.tracing() {
		defer func() {
			if err != nil {
				e.callLocked(e.nameOf(pd), "create_ah", "", fmt.Sprintf("port %d dlid %#x", attr.PortNum, attr.DLID), err)
			}
		}()
	}
	if err := pd.checkLocked(verb); err != nil {
		return nil, err
	}
	p := d.portLocked(attr.PortNum)
	switch {
	case p == nil:
		return nil, verr.Errorf(verb, syscall.EINVAL, "port %d is outside [1, phys_port_cnt=%d]", attr.PortNum, len(d.ports))
	case p.attr.LinkLayer == verbs.LinkLayerEthernet && !attr.IsGlobal:
		return nil, verr.Errorf(verb, syscall.EINVAL, "port %d is Ethernet (RoCE), where every path needs a GRH (is_global)", p.num)
	case attr.IsGlobal && int(attr.GRH.SGIDIndex) >= len(p.gids):
		return nil, verr.Errorf(verb, syscall.EINVAL, "sgid_index %d is outside [0, gid_tbl_len=%d)", attr.GRH.SGIDIndex, len(p.gids))
	case attr.IsGlobal && p.unusedGID(int(attr.GRH.SGIDIndex)):
		return nil, verr.Errorf(verb, syscall.ENODATA, "GID entry %d of port %d is unused (AV-02)", attr.GRH.SGIDIndex, p.num)
	}
	if err := checkAHValues(verb, p, attr); err != nil {
		return nil, err
	}
	if d.ahs >= d.attr.MaxAH {
		return nil, verr.Errorf(verb, syscall.ENOMEM, "the device already has max_ah=%d AHs", d.attr.MaxAH)
	}
	d.ahs++
	pd.children[childAH]++
	ah := &AH{pd: pd, attr: attr}
	if e := d.fabric.eng; e.tracing() {
		e.callLocked(e.nameLocked(d, "ah", ah), "create_ah", e.nameOf(pd), fmt.Sprintf("port %d dlid %#x global %v", attr.PortNum, attr.DLID, attr.IsGlobal), nil)
	}
	return ah, nil
}

// The LID ranges of InfiniBand (IBA 4.1.3): 0 is reserved, 0xc000..0xfffe
// are multicast, 0xffff is the permissive LID.
const (
	lidMulticastBase = 0xc000
	lidPermissive    = 0xffff
)

// unusedGID reports whether entry i of the port's GID table holds no GID.
func (p *port) unusedGID(i int) bool { return p.gids[i].IsZero() }

// checkAHValues checks the fields of attr that are values, not table
// indexes, for an AH leaving port p: EINVAL for an SL wider than its 4 bits,
// a static rate outside enum ibv_rate (verbs.h: IBV_RATE_MAX 0, then 2 to
// 24, IBV_RATE_2_5_GBPS to IBV_RATE_1200_GBPS; 1 is unassigned) and, on an
// InfiniBand port, the reserved DLID 0 and a multicast DLID without a GRH.
// A RoCE port addresses by GID, so its DLID is ignored.
func checkAHValues(verb string, p *port, attr verbs.AHAttr) error {
	switch {
	case attr.SL > 15:
		return verr.Errorf(verb, syscall.EINVAL, "sl %d does not fit in 4 bits", attr.SL)
	case attr.StaticRate == 1 || attr.StaticRate > 24:
		return verr.Errorf(verb, syscall.EINVAL, "static_rate %d is not an enum ibv_rate value", attr.StaticRate)
	case p.attr.LinkLayer == verbs.LinkLayerEthernet:
		return nil
	case attr.DLID == 0:
		return verr.Errorf(verb, syscall.EINVAL, "dlid 0 is reserved on InfiniBand port %d", p.num)
	case attr.DLID >= lidMulticastBase && attr.DLID != lidPermissive && !attr.IsGlobal:
		return verr.Errorf(verb, syscall.EINVAL, "multicast dlid %#x needs a GRH (is_global)", attr.DLID)
	}
	return nil
}

// PD returns the protection domain of the AH (ibv_ah.pd).
func (ah *AH) PD() *PD {
	if ah == nil {
		return nil
	}
	return ah.pd
}

// Attr returns the attributes the AH was created with.
func (ah *AH) Attr() verbs.AHAttr {
	if ah == nil {
		return verbs.AHAttr{}
	}
	return ah.attr
}

// Destroy destroys the AH (ibv_destroy_ah), releasing its PD. A nil or
// destroyed AH is EINVAL.
func (ah *AH) Destroy() (err error) {
	const verb = "ibv_destroy_ah"
	if ah == nil {
		return verr.New(verb, syscall.EINVAL, "nil AH")
	}
	d := ah.pd.ctx.dev
	d.fabric.d.Enter(domain.Op{})
	defer d.fabric.d.Leave(domain.Op{}, nil)
	if e := d.fabric.eng; e.tracing() {
		defer func() { e.callLocked(e.nameOf(ah), "destroy_ah", "", "", err) }()
	}
	if ah.dead {
		return verr.New(verb, syscall.EINVAL, "the AH has been destroyed")
	}
	ah.dead = true
	d.ahs--
	ah.pd.releaseLocked(childAH)
	return nil
}
