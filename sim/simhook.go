package sim

import (
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/internal/simhook"
	"github.com/verbsim/verbsim/sim/internal/cq"
	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// The bridge to package explore (internal/simhook): the domain of a fabric
// and the handles of the engine objects a domain names.
func init() {
	simhook.DomainOf = func(f any) *domain.Domain {
		if fab, ok := f.(*Fabric); ok && fab != nil {
			return fab.d
		}
		return nil
	}
	simhook.CheckFront = checkFront
	simhook.HandleOf = func(obj any) any {
		switch o := obj.(type) {
		case *cq.CQ:
			if h := cqHandle(o); h != nil {
				return h
			}
		case *cq.Channel:
			if h := chanHandle(o); h != nil {
				return h
			}
		case *qp.QP:
			if h := qpHandle(o); h != nil {
				return h
			}
		case *qp.SRQ:
			if h := srqHandle(o); h != nil {
				return h
			}
		}
		return obj
	}
	simhook.SetFaultChooser = func(f any, choose func(*simhook.FaultDraw) int) {
		if fab, ok := f.(*Fabric); ok && fab != nil {
			fab.d.Lock()
			fab.eng.choose = choose
			fab.d.Unlock()
		}
	}
	simhook.RegExternalMR = func(pd any, mem simhook.Extern, addr, n, iova uint64, access verbs.AccessFlags) (any, error) {
		p, _ := pd.(*PD)
		if mem == nil {
			return nil, verr.New("ibv_reg_mr", syscall.EINVAL, "no memory")
		}
		mr, err := p.regMR("ibv_reg_mr_iova", extent{ext: mem, at: addr, n: n}, iova, true, access)
		if err != nil {
			return nil, err
		}
		return mr, nil
	}
	simhook.ReregExternalMR = func(m any, flags verbs.ReregFlags, pd any, mem simhook.Extern, addr, n, hcaVA uint64, access verbs.AccessFlags) error {
		mr, _ := m.(*MR)
		p, _ := pd.(*PD)
		x := extent{ext: mem, at: addr, n: n}
		if mem == nil {
			x = extent{}
		}
		return mr.reregIOVA(flags, p, x, hcaVA, access)
	}
	simhook.SetCQShadow = func(c any, s simhook.CQShadow) error {
		q, _ := c.(*CQ)
		e := q.eng()
		if e == nil || e.Destroyed() {
			return verr.New("ibv_create_cq", syscall.EINVAL, "no live CQ")
		}
		d := e.Domain()
		d.Enter(domain.Op{})
		defer d.Leave(domain.Op{}, nil)
		if s == nil {
			e.SetShadowLocked(nil)
		} else {
			e.SetShadowLocked(s)
		}
		return nil
	}
	simhook.SyncCQ = func(c any) {
		q, _ := c.(*CQ)
		if e := q.eng(); e != nil {
			d := e.Domain()
			d.Enter(domain.Op{})
			e.SyncLocked()
			d.Leave(domain.Op{}, nil)
		}
	}
	simhook.SetAnyOrder = func(f any, on bool) {
		if fab, ok := f.(*Fabric); ok && fab != nil {
			fab.d.Lock()
			fab.eng.anyOrder = on
			fab.d.Unlock()
		}
	}
}
