package scenario

// engine_srq.go holds the SRQ commands: create_srq, modify_srq and query_srq
// (post_srq_recv is with the other posts in engine_post.go).

import (
	"fmt"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// doCreateSRQ runs create_srq (ibv_create_srq).
func (in *interp) doCreateSRQ(_ *Step, a *args) error {
	name := a.name()
	p := a.ref("pd", "pd")
	if a.err != nil {
		return a.err
	}
	s, err := in.obj.pd[p].CreateSRQ(sim.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: uint32(min(a.num("max_wr", 8), 1<<20)), MaxSGE: 1,
		SRQLimit: uint32(min(a.num("limit", 0), 1<<20))}})
	in.verbResult("ibv_create_srq", err)
	if err == nil {
		in.obj.srq[name] = s
		in.aliasNewest("create_srq", "srq "+name)
	}
	return nil
}

// doModifySRQ runs modify_srq (ibv_modify_srq).
func (in *interp) doModifySRQ(_ *Step, a *args) error {
	n := a.ref("srq", "srq")
	if a.err != nil {
		return a.err
	}
	lim := uint32(min(a.num("limit", 0), 1<<31))
	err := in.obj.srq[n].Modify(&verbs.SRQAttr{SRQLimit: lim}, verbs.SRQLimit)
	in.verbResult(fmt.Sprintf("ibv_modify_srq(%s, srq_limit=%d, IBV_SRQ_LIMIT)", n, lim), err)
	if err == nil {
		in.say("armed: the event comes when taking a WR leaves fewer than %d queued", lim)
	}
	in.note("SRQ-04", "SRQ-06")
	return nil
}

// doQuerySRQ runs query_srq (ibv_query_srq).
func (in *interp) doQuerySRQ(_ *Step, a *args) error {
	n := a.ref("srq", "srq")
	if a.err != nil {
		return a.err
	}
	attr, err := in.obj.srq[n].Query()
	if err != nil {
		in.verbResult("ibv_query_srq("+n+")", err)
		return nil
	}
	in.say("ibv_query_srq(%s) = ok: max_wr %d, max_sge %d, srq_limit %d", n, attr.MaxWR, attr.MaxSGE, attr.SRQLimit)
	if attr.SRQLimit == 0 {
		in.say("srq_limit 0: the limit is not armed (never armed, or it has fired)")
		in.note("SRQ-05")
	}
	return nil
}
