package sim

import (
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// On-demand paging. verbsim pins nothing: every MR reads and writes the
// registered buffer when a work request executes, so an on-demand MR is an
// MR like any other (ODP-03), and the device can claim ODP for every
// operation its transports have. Implicit ODP (one MR over the whole
// address space) is not offered: a Go MR aliases one buffer, and the
// drop-in library could not turn an access to unmapped memory into an
// error completion instead of a crash (docs/pd-mr.md).

// The ODP capabilities a device reports unless its profile has NoODP
// (ODP-01): every operation of each transport, less what the transport
// cannot do at all (UC has no READ, atomics or SRQ, QP-04; UD only sends
// and receives; an XRC target receives only through its SRQ). No implicit
// ODP.
const (
	odpRC  = verbs.ODPSupportSend | verbs.ODPSupportRecv | verbs.ODPSupportWrite | verbs.ODPSupportRead | verbs.ODPSupportAtomic | verbs.ODPSupportSRQRecv
	odpUC  = verbs.ODPSupportSend | verbs.ODPSupportRecv | verbs.ODPSupportWrite
	odpUD  = verbs.ODPSupportSend | verbs.ODPSupportRecv | verbs.ODPSupportSRQRecv
	odpXRC = verbs.ODPSupportSend | verbs.ODPSupportWrite | verbs.ODPSupportRead | verbs.ODPSupportAtomic | verbs.ODPSupportSRQRecv
)

// odpCaps returns the odp_caps and xrc_odp_caps of a device under p
// (ODP-01): zero under NoODP; the XRC ones zero without XRC verbs too.
func odpCaps(p Profile) (verbs.ODPCaps, uint32) {
	if p.NoODP {
		return verbs.ODPCaps{}, 0
	}
	c := verbs.ODPCaps{GeneralCaps: verbs.ODPSupport, RCODPCaps: odpRC, UCODPCaps: odpUC, UDODPCaps: odpUD}
	if p.NoXRC {
		return c, 0
	}
	return c, odpXRC
}

// accessWritable is what makes an MR's memory writable for
// PREFETCH_WRITE: the kernel counts MW_BIND too, since a window bound to
// the MR may grant writes (ODP-05).
const accessWritable = verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteAtomic | verbs.AccessMWBind

// AdviseMR is ibv_advise_mr: advice about the ranges of sgl, each within
// the on-demand MR of pd whose lkey it carries. Nothing is paged in
// verbsim, so a successful call changes nothing; it checks what the
// kernel and mlx5 check, in their order, and stops at the first failure:
//
//   - EOPNOTSUPP under a profile with NoODP (no advise_mr operation,
//     ODP-04);
//   - EINVAL for a nil or deallocated PD, an empty sgl or a flag other
//     than AdviseMRFlagFlush; EOPNOTSUPP for an unknown advice (ODP-04);
//   - for each SGE in turn (ODP-05): ENOENT when its lkey names no live
//     on-demand MR (an MR registered without AccessOnDemand included),
//     EINVAL when it names a memory window, EPERM when the MR belongs to
//     another PD or the advice is PREFETCH_WRITE and the MR has none of
//     LOCAL_WRITE, REMOTE_WRITE, REMOTE_ATOMIC and MW_BIND;
//   - with AdviseMRFlagFlush only, the synchronous form, EFAULT for an SGE
//     that starts below the MR's IOVA or runs past the end of the last
//     page the MR touches (ODP-06). Without the flag the kernel queues the
//     work after checking the keys and drops its errors, so the ranges are
//     not checked.
func (pd *PD) AdviseMR(advice verbs.AdviseMRAdvice, flags verbs.AdviseMRFlags, sgl []verbs.SGE) (err error) {
	const verb = "ibv_advise_mr"
	if pd == nil {
		return verr.New(verb, syscall.EINVAL, "nil PD")
	}
	d := pd.ctx.dev
	d.fabric.d.Enter(domain.Op{})
	defer d.fabric.d.Leave(domain.Op{}, nil)
	e := d.fabric.eng
	if e.tracing() {
		defer func() {
			e.callLocked(e.nameOf(pd), "advise_mr", "", fmt.Sprintf("%v flags %#x num_sge %d", advice, uint32(flags), len(sgl)), err)
		}()
	}
	if err := pd.checkLocked(verb); err != nil {
		return err
	}
	switch {
	case d.fabric.profile.NoODP:
		return verr.New(verb, syscall.EOPNOTSUPP, "the device has no on-demand paging (ODP-04)")
	case len(sgl) == 0:
		return verr.New(verb, syscall.EINVAL, "the scatter/gather list is empty (ODP-04)")
	case flags&^verbs.AdviseMRFlagFlush != 0:
		return verr.Errorf(verb, syscall.EINVAL, "unknown flag bits %#x (ODP-04)", uint32(flags&^verbs.AdviseMRFlagFlush))
	case advice > verbs.AdvisePrefetchNoFault:
		return verr.Errorf(verb, syscall.EOPNOTSUPP, "unknown advice %d (ODP-04)", uint32(advice))
	}
	for i, s := range sgl {
		mr, err := d.mrs.prefetchable(verb, pd, advice, i, s.LKey)
		if err != nil {
			return err
		}
		if flags&verbs.AdviseMRFlagFlush != 0 {
			if err := mr.checkPrefetchRange(verb, i, s); err != nil {
				return err
			}
		}
	}
	return nil
}

// prefetchable resolves the lkey of SGE i for ibv_advise_mr (ODP-05).
//
// Precondition: the domain lock is held.
func (t *mrTable) prefetchable(verb string, pd *PD, advice verbs.AdviseMRAdvice, i int, lkey uint32) (*MR, error) {
	mr := t.mrLocked(lkey >> 8)
	if mr == nil || mr.lkey != lkey || mr.invalid || mr.broken {
		if mw := t.mws[lkey>>8]; mw != nil && !mw.dead && (mw.rkey == lkey || mw.key == lkey) {
			return nil, verr.Errorf(verb, syscall.EINVAL, "sg_list[%d]: lkey %#x names a memory window, not an MR (ODP-05)", i, lkey)
		}
		return nil, verr.Errorf(verb, syscall.ENOENT, "sg_list[%d]: lkey %#x names no live MR (ODP-05)", i, lkey)
	}
	switch {
	case mr.access&verbs.AccessOnDemand == 0:
		return nil, verr.Errorf(verb, syscall.ENOENT, "sg_list[%d]: the MR of lkey %#x was registered without ON_DEMAND (ODP-05)", i, lkey)
	case mr.pd != pd:
		return nil, verr.Errorf(verb, syscall.EPERM, "sg_list[%d]: the MR of lkey %#x belongs to another PD (ODP-05)", i, lkey)
	case advice == verbs.AdvisePrefetchWrite && mr.access&accessWritable == 0:
		return nil, verr.Errorf(verb, syscall.EPERM, "sg_list[%d]: PREFETCH_WRITE on an MR without write access (access %v, ODP-05)", i, mr.access)
	}
	return mr, nil
}

// checkPrefetchRange applies the range check of a synchronous
// ibv_advise_mr to SGE i (ODP-06): the range must start at or above the
// MR's IOVA and end within the pages the MR's buffer touches, the kernel's
// unit of ODP mapping.
func (mr *MR) checkPrefetchRange(verb string, i int, s verbs.SGE) error {
	if s.Addr < mr.iova {
		return verr.Errorf(verb, syscall.EFAULT, "sg_list[%d]: address %#x is below the MR's IOVA %#x (ODP-06)", i, s.Addr, mr.iova)
	}
	// limit: the MR's length plus the rest of its last page.
	end := mr.addr + mr.length
	limit := mr.length + (-end)%pageSize
	if off := s.Addr - mr.iova; off >= limit || uint64(s.Length) > limit-off {
		return verr.Errorf(verb, syscall.EFAULT, "sg_list[%d]: [%#x, +%d) runs past the MR's last page (ODP-06)", i, s.Addr, s.Length)
	}
	return nil
}
