package sim

import (
	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/internal/simhook"
	"github.com/verbsim/verbsim/sim/check"
	"github.com/verbsim/verbsim/sim/internal/checker"
	"github.com/verbsim/verbsim/sim/internal/cq"
	"github.com/verbsim/verbsim/sim/internal/notify"
	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/verbs"
)

// The sanitizer (Config.Check, package sim/check): the checker engine
// follows the fabric through its domain; checkEnv is what it asks of the
// fabric.

// installCheckLocked attaches the sanitizer cfg asks for.
func (f *Fabric) installCheckLocked(cfg *check.Config) {
	if cfg == nil {
		return
	}
	f.check = checker.New(*cfg, f.d, checkEnv{f})
	f.d.SetCheckerLocked(f.check)
}

// noteGoneLocked tells the sanitizer that obj, one of sim's own objects,
// was destroyed.
func (f *Fabric) noteGoneLocked(obj any) {
	if f.d.Checking() {
		f.d.Note(&domain.Note{Kind: domain.NoteDestroyed, Obj: obj})
	}
}

// checkFront is simhook.CheckFront: a front end's report to the
// sanitizer, a context standing for its async queue.
func checkFront(fabric any, ev simhook.FrontEvent) {
	f, _ := fabric.(*Fabric)
	if f == nil || f.check == nil {
		return
	}
	if c, ok := ev.Obj.(*Context); ok && c != nil {
		ev.Obj = c.async
	}
	f.d.Lock()
	f.check.Front(ev)
	f.d.Unlock()
}

// checkEnv implements checker.Env over a fabric.
type checkEnv struct{ f *Fabric }

var _ checker.Env = checkEnv{}

func (e checkEnv) Engine(obj any) any {
	switch o := obj.(type) {
	case *QP:
		return o.eng()
	case *SRQ:
		return o.eng()
	case *CQ:
		return o.eng()
	case *CompChannel:
		return o.eng()
	case *Context:
		if o != nil {
			return o
		}
	}
	return obj
}

func (e checkEnv) Kind(obj any) string {
	switch obj.(type) {
	case *cq.CQ:
		return "cq"
	case *cq.Channel:
		return "chan"
	case *qp.QP:
		return "qp"
	case *qp.SRQ:
		return "srq"
	case *MR:
		return "mr"
	case *MW:
		return "mw"
	case *PD:
		return "pd"
	case *AH:
		return "ah"
	case *Context:
		return "ctx"
	case *XRCD:
		return "xrcd"
	case *DM:
		return "dm"
	case *notify.AsyncQueue:
		return "async"
	}
	return ""
}

func (e checkEnv) Name(obj any) string {
	if obj == nil {
		return "nothing"
	}
	return e.f.eng.nameOf(obj)
}

func (e checkEnv) Cookie(obj any) any {
	switch o := obj.(type) {
	case *cq.CQ:
		return o.Context()
	case *qp.QP:
		return o.Context()
	case *qp.SRQ:
		return o.Context()
	}
	return nil
}

func (e checkEnv) Context(obj any) any {
	switch o := obj.(type) {
	case *cq.CQ:
		c, _ := o.Owner().(*Context)
		return c
	case *cq.Channel:
		c, _ := o.Owner().(*Context)
		return c
	case *notify.AsyncQueue:
		c, _ := o.Owner().(*Context)
		return c
	case *qp.QP:
		if pd, _ := o.PD().(*PD); pd != nil {
			return pd.ctx
		}
		if x, _ := o.XRCD().(*XRCD); x != nil {
			return x.ctx
		}
	case *qp.SRQ:
		if pd, _ := o.PD().(*PD); pd != nil {
			return pd.ctx
		}
	case *MR:
		return o.pd.ctx
	case *MW:
		return o.pd.ctx
	case *PD:
		return o.ctx
	case *AH:
		return o.pd.ctx
	case *XRCD:
		return o.ctx
	case *DM:
		return o.ctx
	case *Context:
		return o
	}
	return nil
}

func (e checkEnv) Device(obj any) any {
	if c, _ := e.Context(obj).(*Context); c != nil {
		return c.dev
	}
	return nil
}

func (e checkEnv) Memory(obj any) func(addr uint64, n uint32) ([]byte, bool) {
	d, _ := e.Device(obj).(*Device)
	if d == nil {
		return nil
	}
	return deviceMemory{d}.ReadLocked
}

func (e checkEnv) Peer(q *qp.QP) any {
	v := q.ViewLocked()
	if v.Type != verbs.QPTypeRC && v.Type != verbs.QPTypeUC && v.Type != verbs.QPTypeXRCSend {
		return nil
	}
	if v.State == verbs.QPStateReset || v.State == verbs.QPStateInit {
		return nil
	}
	p := e.f.routeTo(v.Dest.IsGlobal, v.Dest.DLID, v.Dest.GRH.DGID)
	if p == nil {
		return nil
	}
	return p.dev
}

func (e checkEnv) Now() uint64 { return e.f.eng.clock() }

// Check returns the sanitizer's summary so far (Config.Check): the checks
// it runs and how many findings it has reported, by rule. A fabric
// without Config.Check returns the zero Summary.
func (f *Fabric) Check() check.Summary {
	if f == nil || f.check == nil {
		return check.Summary{}
	}
	return f.check.Summary()
}
