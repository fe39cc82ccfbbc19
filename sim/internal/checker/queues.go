package checker

import (
	"fmt"
	"strings"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/sim/check"
	"github.com/verbsim/verbsim/sim/internal/cq"
	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/verbs"
)

// modifiedLocked follows a QP's change of state: a QP that leaves RESET
// can complete into its CQs, whose size is then checked (CQ-25); a QP
// reset forgets the requests it dropped.
func (c *Checker) modifiedLocked(n *domain.Note) {
	r := c.recordLocked(n.Obj)
	if r == nil {
		return
	}
	if n.To == verbs.QPStateReset {
		r.sends, r.recvs, r.arrived, r.unsignaled = nil, nil, nil, 0
		return
	}
	if n.From != verbs.QPStateReset || !c.on.Has(check.CQSize) {
		return
	}
	q, _ := r.obj.(*qp.QP)
	v := q.ViewLocked()
	for _, x := range []qp.CQ{v.SendCQ, v.RecvCQ} {
		if e, _ := x.(*cq.CQ); e != nil {
			if cr := c.recordLocked(e); cr != nil {
				c.sizeCQLocked(cr, "ibv_modify_qp")
			}
		}
	}
}

// sizeCQLocked reports a CQ smaller than the work requests that can
// complete into it: the send and receive queues of its QPs past RESET, and
// their SRQs, each counted once (CQ-25). It reports each CQ once.
func (c *Checker) sizeCQLocked(r *record, verb string) {
	if r.sized || r.gone != nil {
		return
	}
	e, _ := r.obj.(*cq.CQ)
	cv := e.ViewLocked()
	if !cv.Live {
		return
	}
	var parts []string
	total := 0
	srqs := map[*qp.SRQ]bool{}
	for _, o := range c.order {
		if o.gone != nil {
			continue
		}
		switch o.kind {
		case "qp":
			q, _ := o.obj.(*qp.QP)
			v := q.ViewLocked()
			if !v.Live || v.State == verbs.QPStateReset {
				continue
			}
			var p []string
			if v.SendCQ == qp.CQ(e) && v.Cap.MaxSendWR > 0 {
				total += int(v.Cap.MaxSendWR)
				p = append(p, fmt.Sprintf("send %d", v.Cap.MaxSendWR))
			}
			if v.RecvCQ == qp.CQ(e) {
				switch {
				case v.SRQ != nil && !srqs[v.SRQ]:
					srqs[v.SRQ] = true
					w := v.SRQ.MaxWRLocked()
					total += w
					p = append(p, fmt.Sprintf("receive %d through %s", w, c.env.Name(v.SRQ)))
				case v.SRQ == nil && v.Cap.MaxRecvWR > 0:
					total += int(v.Cap.MaxRecvWR)
					p = append(p, fmt.Sprintf("receive %d", v.Cap.MaxRecvWR))
				}
			}
			if len(p) > 0 {
				parts = append(parts, c.env.Name(o.obj)+" "+strings.Join(p, " + "))
			}
		case "srq":
			s, _ := o.obj.(*qp.SRQ)
			if s.LiveLocked() && s.CQLocked() == qp.CQ(e) && !srqs[s] {
				srqs[s] = true
				total += s.MaxWRLocked()
				parts = append(parts, fmt.Sprintf("%s %d", c.env.Name(s), s.MaxWRLocked()))
			}
		}
	}
	if total <= cv.CQE {
		return
	}
	r.sized = true
	c.finding(check.Finding{Check: check.CQSize, Rule: "CQ-25", Verb: verb, Objects: []check.Object{c.object(r)},
		What: fmt.Sprintf("%d work requests can complete into %s (%s), which holds %d",
			total, c.env.Name(e), strings.Join(parts, "; "), cv.CQE),
		Then: "a flush of those queues (FLUSH-01, FLUSH-04: unsignaled ones too) or a burst overruns it: completions are lost and IBV_EVENT_CQ_ERR is raised (CQ-22)"},
		c.hereLocked())
}

// signalLocked counts the unsignaled send requests posted on the QP of r
// in a row, and reports a whole queue of them: no completion can then free
// their slots (QP-30).
func (c *Checker) signalLocked(r *record, wr *verbs.SendWR) {
	q, _ := r.obj.(*qp.QP)
	v := q.ViewLocked()
	if v.SigAll || v.Cap.MaxSendWR == 0 {
		return
	}
	if wr.Flags&verbs.SendSignaled != 0 {
		r.unsignaled = 0
		return
	}
	r.unsignaled++
	if r.unsignaled != int(v.Cap.MaxSendWR) || !c.on.Has(check.Signal) {
		return
	}
	c.finding(check.Finding{Check: check.Signal, Rule: "QP-30", Verb: "ibv_post_send", Objects: []check.Object{c.object(r)},
		What: fmt.Sprintf("%d unsignaled send requests in a row fill the send queue (max_send_wr %d, sq_sig_all 0)",
			r.unsignaled, v.Cap.MaxSendWR),
		Then: "their slots come back only with a signaled completion polled after them (QP-29 A): the next post fails with ENOMEM, except on providers that free slots as requests finish (rxe); signal at least one request in every max_send_wr"},
		c.hereLocked())
}
