package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/verbs"
)

// The case of ATOMIC_WRITE (XFER-33): both ways of posting it, its
// completion, and the checks the responder makes.

// awWant checks that A's next send completion is ATOMIC_WRITE request id,
// successful and 8 bytes long, and that the 8 bytes at off of B's buffer
// are want.
func awWant(w *wire, a *end, b *side, what string, id uint64, off int, want []byte) {
	w.t.Helper()
	c := w.await(a.scq, 1, what)[0]
	if !a.want(what, c, id, verbs.WCSuccess) {
		return
	}
	if c.Opcode != verbs.WCAtomicWrite || c.ByteLen != 8 {
		w.t.Errorf("%s: completion opcode %v, byte_len %d, want IBV_WC_ATOMIC_WRITE, 8 (XFER-33)", what, c.Opcode, c.ByteLen)
	}
	if got := b.buf[off : off+8]; !bytes.Equal(got, want) {
		w.t.Errorf("%s: the remote word holds % x, want % x (XFER-33)", what, got, want)
	}
}

// xferAtomicwriteCases are the cases of the XFER family in xfer_atomicwrite.go.
var xferAtomicwriteCases = []Case{
	{"XFER-33", "[IMPL] ATOMIC_WRITE stores 8 bytes: posted and built, RC and XRC_SEND only, REMOTE_WRITE, aligned, completes as ATOMIC_WRITE", atomicWrite},
}

func atomicWrite(t *tester, e *env) {
	w := newWire(t, e)
	v1 := []byte("ATOMIC-1")
	v2 := []byte("inline-2")

	// ibv_post_send, the bytes the SGE names, read as it executes.
	a, b := w.connect(verbs.QPTypeRC, w.opts())
	copy(a.s.buf[128:], v1)
	a.post("an ATOMIC_WRITE", rdmaWR(1, verbs.WRAtomicWrite, b.s, 64, a.s.sge(128, 8)))
	awWant(w, a, b.s, "ATOMIC_WRITE from an SGE", 1, 64, v1)
	w.quiet(b.rcq, "the responder of an ATOMIC_WRITE (WC-05)")

	// IBV_SEND_INLINE: the bytes are taken at the post.
	copy(a.s.buf[256:], v2)
	r := rdmaWR(2, verbs.WRAtomicWrite, b.s, 64, a.s.sge(256, 8))
	r.Flags |= verbs.SendInline
	a.post("an inline ATOMIC_WRITE", r)
	copy(a.s.buf[256:], "changed!")
	awWant(w, a, b.s, "inline ATOMIC_WRITE", 2, 64, v2)

	// The builder: the 8 bytes come with the call; no data setter.
	if x := qpxSetup(t, e, qpxRC); x != nil {
		x.wb.SetWRFlags(verbs.SendSignaled)
		x.wb.WRStart()
		x.wb.SetWRID(3)
		x.wb.WRAtomicWrite(x.b.s.mr.RKey(), x.b.s.addr(32), [8]byte{'b', 'u', 'i', 'l', 't', '-', '-', '3'})
		if err := x.wb.WRComplete(); err != nil {
			t.Errorf("ibv_wr_atomic_write, ibv_wr_complete: %v (XFER-33)", err)
		} else {
			awWant(x.w, x.a, x.b.s, "ibv_wr_atomic_write", 3, 32, []byte("built--3"))
		}
	}

	// XRC_SEND has RC's operations (XRC-09): to the target's domain.
	if p := xrcXferSetup(t, e); p != nil {
		ini, tgt := p.connect(p.opts(), p.opts())
		r := p.srq(p.d, tgt)
		copy(ini.s.buf[1024:], v1)
		ini.post("an XRC ATOMIC_WRITE", xrcTo(rdmaWR(6, verbs.WRAtomicWrite, p.b, 4096, ini.s.sge(1024, 8)), r.n))
		awWant(p.wire, ini, p.b, "an XRC ATOMIC_WRITE", 6, 4096, v1)
		p.quiet(r.cq, "the SRQ's CQ after an XRC ATOMIC_WRITE (WC-05)")
	}

	// Not on UC: refused at the post, or under QP-33 reading B posted to
	// fail as it executes.
	{
		a, b := w.connect(verbs.QPTypeUC, w.opts())
		n, err := a.q.PostSend([]verbs.SendWR{rdmaWR(4, verbs.WRAtomicWrite, b.s, 64, a.s.sge(128, 8))})
		switch {
		case lateOpcode(e.Profile, verbs.QPTypeUC, verbs.WRAtomicWrite):
			if n != 1 || err != nil {
				t.Errorf("ATOMIC_WRITE on a UC QP: %d posted, %v, want it posted (QP-33 B, XFER-33)", n, err)
			} else {
				a.want("ATOMIC_WRITE on a UC QP (QP-33 B)", w.await(a.scq, 1, "ATOMIC_WRITE on UC")[0], 4, verbs.WCLocQPOpErr)
			}
		case n != 0 || !errors.Is(err, syscall.EINVAL):
			t.Errorf("ATOMIC_WRITE on a UC QP: %d posted, %v, want EINVAL (QP-33, XFER-33)", n, err)
		}
	}

	// The checks: each on a fresh pair, since a failure ends the QP.
	for _, c := range []struct {
		name   string
		deny   verbs.AccessFlags // removed from the responder QP
		mrDeny uint32            // removed from the target MR
		off    int
		sge    int // bytes of the local buffer
		want   verbs.WCStatus
	}{
		{name: "the responder QP without REMOTE_ATOMIC", deny: verbs.AccessRemoteAtomic, sge: 8, want: verbs.WCSuccess},
		{name: "the responder QP without REMOTE_WRITE", deny: verbs.AccessRemoteWrite, sge: 8, want: verbs.WCRemInvReqErr},
		{name: "the MR without REMOTE_WRITE", mrDeny: accessRemoteWrite, sge: 8, want: verbs.WCRemAccessErr},
		{name: "a misaligned remote address", off: 4, sge: 8, want: verbs.WCRemInvReqErr},
		{name: "a 4-byte local buffer", sge: 4, want: verbs.WCLocLenErr},
		{name: "a 16-byte local buffer", sge: 16, want: verbs.WCLocLenErr},
	} {
		o := w.opts()
		o.deny = c.deny
		a, b := w.connect(verbs.QPTypeRC, o)
		addr, rkey := w.target(b, remoteCase{mrDeny: c.mrDeny, off: 64 + c.off})
		copy(a.s.buf, v1)
		r := a.remoteReq(5, verbs.WRAtomicWrite, addr, rkey)
		r.SGList[0].Length = uint32(c.sge)
		what := fmt.Sprintf("ATOMIC_WRITE with %s", c.name)
		n, err := a.q.PostSend([]verbs.SendWR{r})
		if c.want == verbs.WCLocLenErr && n == 0 && errors.Is(err, syscall.EINVAL) {
			continue // refused at the post, as rxe refuses short atomics
		}
		if n != 1 || err != nil {
			t.Errorf("%s: ibv_post_send: %d, %v", what, n, err)
			continue
		}
		s := w.await(a.scq, 1, what)[0]
		if a.want(what, s, 5, c.want) && c.want == verbs.WCSuccess && s.Opcode != verbs.WCAtomicWrite {
			t.Errorf("%s: completion opcode %v, want IBV_WC_ATOMIC_WRITE (XFER-33)", what, s.Opcode)
		}
	}
}
