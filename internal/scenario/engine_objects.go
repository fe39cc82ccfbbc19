package scenario

// engine_objects.go holds the commands that create the objects below a QP:
// open_device, alloc_pd, create_comp_channel, create_cq, reg_mr and create_ah.

import (
	"fmt"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

func kindOf(verb string) string {
	switch verb {
	case "open_device":
		return "ctx"
	case "alloc_pd":
		return "pd"
	case "create_comp_channel":
		return "channel"
	case "create_cq":
		return "cq"
	case "reg_mr":
		return "mr"
	case "create_srq":
		return "srq"
	case "create_qp":
		return "qp"
	case "create_ah":
		return "ah"
	case "alloc_mw":
		return "mw"
	case "rdma_create_event_channel":
		return "cm_channel"
	case "rdma_create_id":
		return "id"
	case "rdma_create_qp":
		return "qp"
	}
	return verb
}

// doOpenDevice runs open_device (ibv_open_device).
func (in *interp) doOpenDevice(_ *Step, a *args) error {
	name := a.name()
	d, err := in.f.Device(a.str("dev", in.f.Devices()[0].Name()))
	if err != nil {
		in.verbResult("ibv_open_device", err)
		return nil
	}
	c, err := d.Open()
	in.verbResult("ibv_open_device("+d.Name()+")", err)
	if err == nil {
		in.obj.ctx[name] = c
		in.aliasNewest("open_device", "ctx "+name)
	}
	return nil
}

// doAllocPD runs alloc_pd (ibv_alloc_pd).
func (in *interp) doAllocPD(_ *Step, a *args) error {
	name := a.name()
	c := a.ref("ctx", "ctx")
	if a.err != nil {
		return a.err
	}
	pd, err := in.obj.ctx[c].AllocPD()
	in.verbResult("ibv_alloc_pd", err)
	if err == nil {
		in.obj.pd[name] = pd
		in.aliasNewest("alloc_pd", "pd "+name)
	}
	return nil
}

// doCreateCompChannel runs create_comp_channel (ibv_create_comp_channel).
func (in *interp) doCreateCompChannel(_ *Step, a *args) error {
	name := a.name()
	c := a.ref("ctx", "ctx")
	if a.err != nil {
		return a.err
	}
	ch, err := in.obj.ctx[c].CreateCompChannel()
	in.verbResult("ibv_create_comp_channel", err)
	if err == nil {
		in.obj.ch[name] = ch
		in.aliasNewest("create_comp_channel", "channel "+name)
	}
	return nil
}

// doCreateCQ runs create_cq (ibv_create_cq).
func (in *interp) doCreateCQ(_ *Step, a *args) error {
	name := a.name()
	c, chName := a.ref("ctx", "ctx"), a.ref("channel", "channel")
	if a.err != nil {
		return a.err
	}
	var ch *sim.CompChannel
	if chName != "" {
		ch = in.obj.ch[chName]
	}
	want := max(min(a.int("cqe", 0), 1<<31), -1<<31)
	vec := int(max(min(a.int("vector", 0), 1<<31), -1<<31))
	q, err := in.obj.ctx[c].CreateCQ(int(want), name, ch, vec)
	in.verbResult(fmt.Sprintf("ibv_create_cq(cqe=%d%s)", want, vectorArg(vec)), err)
	if err == nil {
		in.obj.cq[name] = q
		in.obj.cqDev[name] = in.obj.ctx[c].Device().Name()
		in.obj.cqChan[name] = chName
		in.aliasNewest("create_cq", "cq "+name)
		if int64(q.CQE()) != want {
			in.say("cq->cqe = %d: the capacity may be more than asked for", q.CQE())
			in.note("CQ-02")
		}
	}
	return nil
}

// doRegMR runs reg_mr (ibv_reg_mr).
func (in *interp) doRegMR(_ *Step, a *args) error {
	name := a.name()
	p := a.ref("pd", "pd")
	if a.err != nil {
		return a.err
	}
	acc := verbs.AccessLocalWrite
	if xs := a.list("access"); len(xs) > 0 {
		acc = accessOf(xs)
	}
	buf := make([]byte, min(a.num("size", 4096), 1<<24))
	mr, err := in.obj.pd[p].RegMR(buf, acc)
	in.verbResult(fmt.Sprintf("ibv_reg_mr(%d bytes, %v)", len(buf), acc), err)
	if err == nil {
		in.obj.mr[name] = &mrObj{mr: mr, pd: p, buf: buf}
		in.aliasNewest("reg_mr", "mr "+name)
	}
	return nil
}

// doCreateAH runs create_ah (ibv_create_ah).
func (in *interp) doCreateAH(_ *Step, a *args) error {
	name := a.name()
	p, d := a.ref("pd", "pd"), a.ref("dest", "qp")
	if a.err != nil {
		return a.err
	}
	dev := in.obj.pd[p].Context().Device().Name()
	if d != "" {
		dev = in.obj.qp[d].dev
	}
	attr, call := verbs.AHAttr{DLID: in.lidOf(dev), PortNum: 1}, fmt.Sprintf("ibv_create_ah(dlid %d: port 1 of %s)", in.lidOf(dev), dev)
	if v := a.str("av", ""); v != "" {
		av, err := in.avOf(v)
		if err != nil {
			in.verbResult("ibv_create_ah", err)
			return nil
		}
		attr, call = av, "ibv_create_ah(port 1 of "+v+")"
	}
	ah, err := in.obj.pd[p].CreateAH(attr)
	in.verbResult(call, err)
	if err == nil {
		in.obj.ah[name] = ah
		in.aliasNewest("create_ah", "ah "+name)
		in.note("PD-03")
	}
	return nil
}
