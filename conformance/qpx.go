package conformance

import (
	"bytes"
	"errors"
	"syscall"

	"github.com/verbsim/verbsim/verbs"
)

// The extended post API: ibv_create_qp_ex with send_ops_flags and the
// ibv_wr_* builder (QPX-01..QPX-05). A device without verbs.QPExCreator is not
// checked.

// The send_ops_flags the cases ask for.
const (
	qpxRC = verbs.QPExWithRDMAWrite | verbs.QPExWithRDMAWriteImm | verbs.QPExWithSend | verbs.QPExWithSendImm | verbs.QPExWithRDMARead |
		verbs.QPExWithAtomicCmpSwp | verbs.QPExWithAtomicFetchAdd | verbs.QPExWithLocalInv | verbs.QPExWithBindMW | verbs.QPExWithSendInv |
		verbs.QPExWithAtomicWrite
	qpxUC = verbs.QPExWithRDMAWrite | verbs.QPExWithRDMAWriteImm | verbs.QPExWithSend | verbs.QPExWithSendImm | verbs.QPExWithBindMW | verbs.QPExWithSendInv
	qpxUD = verbs.QPExWithSend | verbs.QPExWithSendImm
)

// qpxWorld is an RC pair whose A QP has the builder for ops.
type qpxWorld struct {
	w    *wire
	a, b *end
	wb   verbs.WRBuilder
}

// qpxSetup returns the world, or nil after logging that the device has no
// extended post API.
func qpxSetup(t *tester, e *env, ops verbs.QPSendOps) *qpxWorld {
	t.Helper()
	w := newWire(t, e)
	if _, ok := w.a.pd.(verbs.QPExCreator); !ok {
		t.Logf("not checked: the device has no ibv_create_qp_ex (conformance.QPExCreator)")
		return nil
	}
	oa := w.opts()
	oa.sendOps = ops
	a, b := w.connect2(verbs.QPTypeRC, oa, w.opts())
	wb, ok := a.q.(verbs.WRBuilder)
	if !ok {
		t.Fatalf("a QP created with send_ops_flags has no builder (conformance.WRBuilder)")
	}
	return &qpxWorld{w: w, a: a, b: b, wb: wb}
}

// nothingPosted checks that no send completion comes on A and no receive
// on B: the batch was not posted.
func (x *qpxWorld) nothingPosted(what string) {
	x.w.t.Helper()
	x.w.settle()
	if got, _ := x.w.pollNow(x.a.scq); len(got) != 0 {
		x.w.t.Errorf("%s: %d send completions (%v): the failed batch was posted, in part or whole (QPX-04)", what, len(got), got)
	}
	if got, _ := x.w.pollNow(x.b.rcq); len(got) != 0 {
		x.w.t.Errorf("%s: the peer received %d messages from a failed batch (QPX-04)", what, len(got))
	}
}

// wantErr checks WRComplete's error against the errnos allowed.
func (x *qpxWorld) wantErr(what string, err error, rule string, want ...syscall.Errno) {
	x.w.t.Helper()
	for _, e := range want {
		if errors.Is(err, e) {
			return
		}
	}
	x.w.t.Errorf("%s: ibv_wr_complete returned %v (%s), want one of %v (%s)", what, err, errnoOf(err), want, rule)
}

// qpxCases are the cases of the QPX family in qpx.go.
var qpxCases = []Case{
	{"QPX-01", "ibv_create_qp_ex accepts the send_ops_flags of each QP type and refuses others with EOPNOTSUPP", qpxSendOpsFlags},
	{"QPX-02", "a builder for an operation outside send_ops_flags fails the batch with EOPNOTSUPP", qpxBuilderOutsideSendOps},
	{"QPX-03", "a batch of the builder lands as ibv_post_send would post it", qpxBatchLands},
	{"QPX-04", "a batch with a bad request is refused whole by ibv_wr_complete; ibv_wr_abort discards", qpxBatchAllOrNothing},
	{"QPX-05", "misuse of the builder's critical region fails with EINVAL and posts nothing", qpxCriticalRegionMisuse},
}

func qpxSendOpsFlags(t *tester, e *env) {
	w := newWire(t, e)
	c, ok := w.a.pd.(verbs.QPExCreator)
	if !ok {
		t.Logf("not checked: the device has no ibv_create_qp_ex (conformance.QPExCreator)")
		return
	}
	cq := w.a.cq(16, nil)
	o := w.opts()
	create := func(typ verbs.QPType, mask verbs.QPInitAttrMask, ops verbs.QPSendOps) (verbs.QP, error) {
		q, err := c.CreateQPEx(verbs.QPInitAttrEx{QPInitAttr: verbs.QPInitAttr{SendCQ: cq, RecvCQ: cq, Type: typ, Cap: o.cap},
			CompMask: mask, SendOpsFlags: ops})
		if err == nil {
			t.Cleanup(func() { c, cancel := graceful(); defer cancel(); _ = q.DestroyContext(c) })
		}
		return q, err
	}
	for _, k := range []struct {
		typ verbs.QPType
		ops verbs.QPSendOps
		bad []verbs.QPSendOps
	}{
		{verbs.QPTypeRC, qpxRC, []verbs.QPSendOps{verbs.QPExWithTSO, 1 << 11, 1 << 20}},
		{verbs.QPTypeUC, qpxUC, []verbs.QPSendOps{verbs.QPExWithRDMARead, verbs.QPExWithAtomicCmpSwp, verbs.QPExWithAtomicFetchAdd, verbs.QPExWithTSO, verbs.QPExWithAtomicWrite}},
		{verbs.QPTypeUD, qpxUD, []verbs.QPSendOps{verbs.QPExWithRDMAWrite, verbs.QPExWithRDMARead, verbs.QPExWithSendInv, verbs.QPExWithBindMW, verbs.QPExWithAtomicFetchAdd, verbs.QPExWithAtomicWrite}},
	} {
		q, err := create(k.typ, verbs.QPInitAttrPD|verbs.QPInitAttrSendOpsFlags, k.ops)
		if err != nil {
			t.Errorf("ibv_create_qp_ex(%v, send_ops_flags %v): %v", k.typ, k.ops, err)
		} else if _, ok := q.(verbs.WRBuilder); !ok {
			t.Errorf("%v QP created with send_ops_flags has no builder", k.typ)
		}
		for _, b := range k.bad {
			if _, err := create(k.typ, verbs.QPInitAttrPD|verbs.QPInitAttrSendOpsFlags, verbs.QPExWithSend|b); !errors.Is(err, syscall.EOPNOTSUPP) {
				t.Errorf("ibv_create_qp_ex(%v, send_ops_flags SEND|%v): %v, want EOPNOTSUPP (QPX-01)", k.typ, b, err)
			}
		}
	}
	// LOCAL_INV on UC: allowed by the man page, not by rxe.
	_, err := create(verbs.QPTypeUC, verbs.QPInitAttrPD|verbs.QPInitAttrSendOpsFlags, verbs.QPExWithLocalInv)
	switch {
	case e.Profile.SendOpsRXE && !errors.Is(err, syscall.EOPNOTSUPP):
		t.Errorf("ibv_create_qp_ex(UC, LOCAL_INV): %v, want EOPNOTSUPP (QPX-01, the rxe reading)", err)
	case !e.Profile.SendOpsRXE && err != nil:
		t.Errorf("ibv_create_qp_ex(UC, LOCAL_INV): %v, want success (QPX-01, the default reading)", err)
	}
	if _, err := create(verbs.QPTypeRC, verbs.QPInitAttrPD|verbs.QPInitAttrXRCD|verbs.QPInitAttrSendOpsFlags, verbs.QPExWithSend); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("ibv_create_qp_ex with comp_mask XRCD: %v, want EOPNOTSUPP (QPX-01)", err)
	}
}

func qpxBuilderOutsideSendOps(t *tester, e *env) {
	x := qpxSetup(t, e, verbs.QPExWithSend)
	if x == nil {
		return
	}
	x.b.recvAt("receive", 1, 0, 64)
	x.wb.SetWRFlags(verbs.SendSignaled)
	x.wb.WRStart()
	x.wb.WRSend()
	x.wb.WRSetSGE(x.a.s.mr.LKey(), x.a.s.addr(0), 8)
	x.wb.WRRDMAWrite(x.b.s.mr.RKey(), x.b.s.addr(0))
	x.wb.WRSetSGE(x.a.s.mr.LKey(), x.a.s.addr(0), 8)
	x.wantErr("WRITE on a QP with SEND only", x.wb.WRComplete(), "QPX-02", syscall.EOPNOTSUPP)
	x.nothingPosted("WRITE on a QP with SEND only")
	x.wb.WRStart()
	x.wb.SetWRID(7)
	x.wb.WRSend()
	x.wb.WRSetSGE(x.a.s.mr.LKey(), x.a.s.addr(0), 8)
	if err := x.wb.WRComplete(); err != nil {
		t.Fatalf("a SEND on a QP with SEND: %v", err)
	}
	x.a.want("the SEND", x.w.await(x.a.scq, 1, "the SEND")[0], 7, verbs.WCSuccess)
}

func qpxBatchLands(t *tester, e *env) {
	x := qpxSetup(t, e, qpxRC)
	if x == nil {
		return
	}
	a, b := x.a.s, x.b.s
	copy(a.buf, "0123456789abcdef")
	copy(b.buf[512:], "remote bytes")
	x.b.recvAt("receive 1", 100, 0, 64)
	x.b.recvAt("receive 2", 101, 64, 64)
	wb := x.wb
	wb.SetWRFlags(verbs.SendSignaled)
	wb.WRStart()
	wb.SetWRID(1)
	wb.WRRDMAWrite(b.mr.RKey(), b.addr(256))
	wb.WRSetSGEList([]verbs.SGE{a.sge(0, 4), a.sge(10, 6)})
	wb.SetWRID(2)
	wb.WRSendImm(0x1234)
	wb.WRSetInlineData([]byte("inline"))
	wb.SetWRID(3)
	wb.WRRDMARead(b.mr.RKey(), b.addr(512))
	wb.WRSetSGE(a.mr.LKey(), a.addr(128), 12)
	wb.SetWRID(4)
	wb.WRSend()
	wb.WRSetSGE(a.mr.LKey(), a.addr(0), 16)
	if err := wb.WRComplete(); err != nil {
		t.Fatalf("ibv_wr_complete: %v", err)
	}
	ws := x.w.await(x.a.scq, 4, "the batch")
	ops := []verbs.WCOpcode{verbs.WCRDMAWrite, verbs.WCSend, verbs.WCRDMARead, verbs.WCSend}
	for i, c := range ws {
		if x.a.want("batch request", c, uint64(i+1), verbs.WCSuccess) && c.Opcode != ops[i] {
			t.Errorf("request %d completed as %v, want %v (QPX-03)", i+1, c.Opcode, ops[i])
		}
	}
	rs := x.w.await(x.b.rcq, 2, "the receives")
	if len(rs) == 2 {
		if rs[0].ByteLen != 6 || rs[0].WCFlags&verbs.WCWithImm == 0 || rs[0].ImmData != 0x1234 {
			t.Errorf("the SEND_WITH_IMM arrived as %v (QPX-03)", &rs[0])
		}
		if rs[1].ByteLen != 16 {
			t.Errorf("the SEND arrived with %d bytes, want 16 (QPX-03)", rs[1].ByteLen)
		}
	}
	if got := b.buf[256:266]; !bytes.Equal(got, []byte("0123abcdef")) {
		t.Errorf("the WRITE wrote %q (QPX-03)", got)
	}
	if got := b.buf[:6]; !bytes.Equal(got, []byte("inline")) {
		t.Errorf("the inline SEND carried %q (QPX-03)", got)
	}
	if got := a.buf[128:140]; !bytes.Equal(got, []byte("remote bytes")) {
		t.Errorf("the READ fetched %q (QPX-03)", got)
	}
}

func qpxBatchAllOrNothing(t *tester, e *env) {
	x := qpxSetup(t, e, qpxRC)
	if x == nil {
		return
	}
	a := x.a.s
	x.b.recvAt("receive", 1, 0, 64)
	x.wb.SetWRFlags(verbs.SendSignaled)
	good := func() {
		x.wb.WRSend()
		x.wb.WRSetSGE(a.mr.LKey(), a.addr(0), 8)
	}
	// The errno of a batch too big for the queue or its limits.
	tooBig := func(dflt syscall.Errno) []syscall.Errno {
		if e.Profile.SendOpsRXE {
			return []syscall.Errno{syscall.ENOSPC}
		}
		return []syscall.Errno{dflt}
	}
	over := make([]verbs.SGE, x.a.o.cap.MaxSendSGE+1)
	for i := range over {
		over[i] = a.sge(i, 1)
	}
	cases := []struct {
		what  string
		bad   func()
		errno []syscall.Errno
	}{
		{"too many SGEs", func() { x.wb.WRSend(); x.wb.WRSetSGEList(over) }, tooBig(syscall.EINVAL)},
		{"inline above max_inline_data", func() {
			x.wb.WRSend()
			x.wb.WRSetInlineData(make([]byte, x.a.o.cap.MaxInlineData+1))
		}, tooBig(syscall.EINVAL)},
		{"more requests than the queue holds", func() {
			for range x.a.o.cap.MaxSendWR {
				good()
			}
		}, tooBig(syscall.ENOMEM)},
		{"unknown wr_flags", func() { x.wb.SetWRFlags(1 << 9); good(); x.wb.SetWRFlags(verbs.SendSignaled) }, []syscall.Errno{syscall.EINVAL}},
	}
	for _, c := range cases {
		x.wb.WRStart()
		good()
		c.bad()
		x.wantErr(c.what, x.wb.WRComplete(), "QPX-04", c.errno...)
		x.nothingPosted(c.what)
	}
	x.wb.WRStart()
	good()
	x.wb.WRAbort()
	x.nothingPosted("an aborted batch")
	x.wb.WRStart()
	x.wb.SetWRID(5)
	good()
	if err := x.wb.WRComplete(); err != nil {
		t.Fatalf("a good batch after the failed ones: %v", err)
	}
	x.a.want("the good batch", x.w.await(x.a.scq, 1, "the good batch")[0], 5, verbs.WCSuccess)
}

func qpxCriticalRegionMisuse(t *tester, e *env) {
	x := qpxSetup(t, e, qpxRC)
	if x == nil {
		return
	}
	a := x.a.s
	x.b.recvAt("receive", 1, 0, 64)
	x.wb.SetWRFlags(verbs.SendSignaled)
	x.wantErr("ibv_wr_complete without ibv_wr_start", x.wb.WRComplete(), "QPX-05", syscall.EINVAL)
	x.wb.WRStart()
	x.wb.WRSetSGE(a.mr.LKey(), a.addr(0), 8)
	x.wb.WRSend()
	x.wantErr("a setter before any builder", x.wb.WRComplete(), "QPX-05", syscall.EINVAL)
	x.nothingPosted("a setter before any builder")
	x.wb.WRStart()
	x.wb.WRSend()
	x.wb.WRSetSGE(a.mr.LKey(), a.addr(0), 8)
	x.wb.WRStart()
	x.wantErr("ibv_wr_start twice", x.wb.WRComplete(), "QPX-05", syscall.EINVAL)
	x.nothingPosted("ibv_wr_start twice")
	x.wb.WRSend() // outside a batch: nothing
	x.wb.WRSetSGE(a.mr.LKey(), a.addr(0), 8)
	x.wantErr("ibv_wr_complete after builders outside a batch", x.wb.WRComplete(), "QPX-05", syscall.EINVAL)
	x.nothingPosted("builders outside a batch")
}
