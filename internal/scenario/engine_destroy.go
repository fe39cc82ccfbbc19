package scenario

import (
	"context"
	"errors"
	"syscall"
	"time"
)

// engine_destroy.go holds the commands that destroy objects: destroy_cq,
// destroy_qp, destroy_srq, destroy_ah, destroy_comp_channel, dereg_mr and dealloc_pd.

// doDestroyCQ runs destroy_cq (ibv_destroy_cq).
func (in *interp) doDestroyCQ(_ *Step, a *args) error {
	c := a.ref("cq", "cq")
	if a.err != nil {
		return a.err
	}
	wait, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	err := in.obj.cq[c].DestroyContext(wait)
	cancel()
	in.verbResult("ibv_destroy_cq("+c+")", err)
	if errors.Is(err, syscall.EINTR) {
		in.say("(libibverbs would wait for ever here; verbsim gave up after 10 ms of wall time)")
	}
	return nil
}

// doDestroyQP runs destroy_qp (ibv_destroy_qp).
func (in *interp) doDestroyQP(_ *Step, a *args) error {
	q := a.ref("qp", "qp")
	if a.err != nil {
		return a.err
	}
	in.verbResult("ibv_destroy_qp("+q+")", in.obj.qp[q].q.Destroy())
	return nil
}

// doDestroySRQ runs destroy_srq (ibv_destroy_srq).
func (in *interp) doDestroySRQ(_ *Step, a *args) error {
	s := a.ref("srq", "srq")
	if a.err != nil {
		return a.err
	}
	in.verbResult("ibv_destroy_srq("+s+")", in.obj.srq[s].Destroy())
	return nil
}

// doDestroyAH runs destroy_ah (ibv_destroy_ah).
func (in *interp) doDestroyAH(_ *Step, a *args) error {
	n := a.ref("ah", "ah")
	if a.err != nil {
		return a.err
	}
	in.verbResult("ibv_destroy_ah("+n+")", in.obj.ah[n].Destroy())
	return nil
}

// doDestroyCompChannel runs destroy_comp_channel (ibv_destroy_comp_channel).
func (in *interp) doDestroyCompChannel(_ *Step, a *args) error {
	n := a.ref("channel", "channel")
	if a.err != nil {
		return a.err
	}
	in.verbResult("ibv_destroy_comp_channel("+n+")", in.obj.ch[n].Destroy())
	return nil
}

// doDeregMR runs dereg_mr (ibv_dereg_mr).
func (in *interp) doDeregMR(_ *Step, a *args) error {
	n := a.ref("mr", "mr")
	if a.err != nil {
		return a.err
	}
	in.verbResult("ibv_dereg_mr("+n+")", in.obj.mr[n].mr.Dereg())
	return nil
}

// doDeallocPD runs dealloc_pd (ibv_dealloc_pd).
func (in *interp) doDeallocPD(_ *Step, a *args) error {
	n := a.ref("pd", "pd")
	if a.err != nil {
		return a.err
	}
	in.verbResult("ibv_dealloc_pd("+n+")", in.obj.pd[n].Dealloc())
	return nil
}
