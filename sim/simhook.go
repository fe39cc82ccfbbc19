package sim

import (
	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/internal/simhook"
	"github.com/verbsim/verbsim/sim/internal/cq"
	"github.com/verbsim/verbsim/sim/internal/qp"
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
	simhook.SetAnyOrder = func(f any, on bool) {
		if fab, ok := f.(*Fabric); ok && fab != nil {
			fab.d.Lock()
			fab.eng.anyOrder = on
			fab.d.Unlock()
		}
	}
}
