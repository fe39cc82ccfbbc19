package conformance_test

import (
	"context"
	"slices"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/verbs"
)

// The mutants of the transport cases (xfer_*.go), built on the recording
// hooks of mutants_xfer_test.go.

// xReadingMutants state a transport reading that the (default) device does
// not follow.
func xReadingMutants() []mutant {
	return []mutant{
		xReading("XFER-05 B", func(p *conformance.Profile) { p.RecvTooSmallRemInvReq = true }, "XFER-05"),
		xReading("XFER-16 B", func(p *conformance.Profile) { p.RecvProtQPOp = true }, "XFER-16", "MR-03"),
		xReading("XFER-10 B", func(p *conformance.Profile) { p.InfiniteRetry7 = true }, "XFER-10"),
		xReading("no QP events", func(p *conformance.Profile) { p.NoQPEvents = true }, "ASYNC-09", "ASYNC-10", "ASYNC-11", "ASYNC-12"),
		xReading("SQ_DRAINED always", func(p *conformance.Profile) { p.AlwaysSQDrained = true }, "ASYNC-13"),
		xReading("WITH_IMM on send completions", func(p *conformance.Profile) { p.SendWCImm = true }, "WC-13"),
		xReading("no SQE", func(p *conformance.Profile) { p.NoSQE = true }, "FLUSH-10"),
		xReading("send overruns ignored", func(p *conformance.Profile) { p.OverrunSendIgnored = true }, "CQ-24"),
		xReading("XFER-30 B", func(p *conformance.Profile) { p.WriteImmRKeyRemAccess = true }, "XFER-30"),
		xReading("XFER-31 B", func(p *conformance.Profile) { p.LateLocalCheck = true }, "XFER-31"),
		xReading("SRQ-12 B", func(p *conformance.Profile) { p.SRQRecvQPPD = true }, "SRQ-12"),
		xReading("XFER-29 B", func(p *conformance.Profile) { p.SendInvErrAcked = true }, "XFER-29", "MW-07"),
	}
}

// xStatusMutants report wrong statuses or lose error completions.
func xStatusMutants() []mutant {
	return []mutant{
		xStatusMutant(verbs.WCRemAccessErr, verbs.WCRemInvReqErr, "XFER-14", "WC-S10", "MR-07", "MR-08", "CQ-21", "XFER-33"),
		xStatusMutant(verbs.WCRemInvReqErr, verbs.WCRemAccessErr, "XFER-05", "WC-S09", "QP-40", "XFER-29", "XFER-33"),
		xStatusMutant(verbs.WCLocProtErr, verbs.WCLocLenErr, "XFER-16", "WC-S04", "MR-03"),
		xStatusMutant(verbs.WCLocLenErr, verbs.WCLocProtErr, "XFER-23", "WC-S01", "XFER-17", "XFER-33"),
		xStatusMutant(verbs.WCLocQPOpErr, verbs.WCLocProtErr, "PD-04", "WC-S02"),
		xStatusMutant(verbs.WCRemOpErr, verbs.WCRemAccessErr, "WC-S11", "XFER-16"),
		xStatusMutant(verbs.WCLocAccessErr, verbs.WCWRFlushErr, "XFER-30", "WC-S08"),
		xStatusMutant(verbs.WCRetryExcErr, verbs.WCRNRRetryExcErr, "XFER-10", "XFER-27", "XFER-28", "FLUSH-11", "WC-S12"),
		xStatusMutant(verbs.WCRNRRetryExcErr, verbs.WCRetryExcErr, "XFER-07", "XFER-08", "SRQ-09", "WC-S13", "XFER-12"),
		xEach("requests after a failed one repeat its status instead of flushing", []string{"FLUSH-03", "XFER-15"}, func(tr *xTr, q conformance.CQ, c *verbs.WC) {
			if tr.isRecv(q, *c) {
				return
			}
			switch st, ok := tr.lastErr[xKey{q, c.QPNum, 0}]; {
			case c.Status == verbs.WCWRFlushErr && ok:
				c.Status = st
			case c.Status != verbs.WCSuccess && c.Status != verbs.WCWRFlushErr:
				tr.lastErr[xKey{q, c.QPNum, 0}] = c.Status
			}
		}),
		xBatch("flushed receives vanish", []string{"FLUSH-12"}, func(tr *xTr, q conformance.CQ, got []verbs.WC, _ int) []verbs.WC {
			out := got[:0]
			for _, c := range got {
				if c.Status != verbs.WCWRFlushErr || !tr.isRecv(q, c) {
					out = append(out, c)
				}
			}
			return out
		}),
		xBatch("error completions of unsignaled requests vanish", []string{"CQ-21"}, func(tr *xTr, q conformance.CQ, got []verbs.WC, _ int) []verbs.WC {
			out := got[:0]
			for _, c := range got {
				r, ok := tr.sends[xKey{q, c.QPNum, c.WRID}]
				if c.Status == verbs.WCSuccess || c.Status == verbs.WCWRFlushErr || tr.isRecv(q, c) || !ok || r.Flags&verbs.SendSignaled != 0 {
					out = append(out, c)
				}
			}
			return out
		}),
		xEach("a zero-length RDMA request meets a remote access error", []string{"XFER-24"}, func(tr *xTr, q conformance.CQ, c *verbs.WC) {
			if r, ok := tr.sends[xKey{q, c.QPNum, c.WRID}]; ok && c.Status == verbs.WCSuccess && !tr.isRecv(q, *c) &&
				(r.Opcode == verbs.WRRDMARead || r.Opcode == verbs.WRRDMAWrite) && verbs.SGEListLength(r.SGList) == 0 {
				c.Status = verbs.WCRemAccessErr
			}
		}),
	}
}

// xFieldMutants get a completion field wrong, or the order or number of
// completions.
func xFieldMutants() []mutant {
	recv := func(c *verbs.WC) bool { return c.Status == verbs.WCSuccess && c.Opcode.IsRecv() }
	send := func(c *verbs.WC) bool { return c.Status == verbs.WCSuccess && !c.Opcode.IsRecv() }
	return []mutant{
		xEach("wr_id keeps 48 bits", []string{"WC-01"}, func(tr *xTr, q conformance.CQ, c *verbs.WC) { c.WRID &= 1<<48 - 1 }),
		xEach("error completions carry qp_num 0", []string{"WC-02"}, func(tr *xTr, q conformance.CQ, c *verbs.WC) {
			if c.Status != verbs.WCSuccess {
				c.QPNum = 0
			}
		}),
		xEach("RDMA WRITEs complete as SEND", []string{"WC-04", "XFER-11"}, func(tr *xTr, q conformance.CQ, c *verbs.WC) {
			if send(c) && c.Opcode == verbs.WCRDMAWrite {
				c.Opcode = verbs.WCSend
			}
		}),
		xEach("receive completions have IBV_WC_RECV clear", []string{"WC-06", "WC-05"}, func(tr *xTr, q conformance.CQ, c *verbs.WC) {
			if recv(c) {
				c.Opcode &^= verbs.WCRecv
			}
		}),
		xEach("RECV_RDMA_WITH_IMM reads TM_RECV", []string{"WC-06", "WC-05"}, func(tr *xTr, q conformance.CQ, c *verbs.WC) {
			if recv(c) && c.Opcode == verbs.WCRecvRDMAWithImm {
				c.Opcode = verbs.WCTMRecv
			}
		}),
		xEach("send completions read DRIVER1", []string{"WC-06", "WC-04"}, func(tr *xTr, q conformance.CQ, c *verbs.WC) {
			if send(c) {
				c.Opcode = verbs.WCDriver1
			}
		}),
		xEach("WRITE_WITH_IMM completes as RECV at the responder", []string{"WC-05", "XFER-12"}, func(tr *xTr, q conformance.CQ, c *verbs.WC) {
			if recv(c) && c.Opcode == verbs.WCRecvRDMAWithImm {
				c.Opcode = verbs.WCRecv
			}
		}),
		xEach("receive completions lose WITH_IMM", []string{"WC-08", "WC-09", "XFER-04", "XFER-12"}, func(tr *xTr, q conformance.CQ, c *verbs.WC) {
			if recv(c) {
				c.WCFlags &^= verbs.WCWithImm
			}
		}),
		xEach("imm_data is byte-swapped", []string{"WC-09"}, func(tr *xTr, q conformance.CQ, c *verbs.WC) {
			if recv(c) && c.WCFlags&verbs.WCWithImm != 0 {
				v := c.ImmData
				c.ImmData = v>>24 | v>>8&0xff00 | v<<8&0xff0000 | v<<24
			}
		}),
		xEach("receive completions lose WITH_INV", []string{"WC-08", "XFER-29"}, func(tr *xTr, q conformance.CQ, c *verbs.WC) {
			if recv(c) {
				c.WCFlags &^= verbs.WCWithInv
			}
		}),
		xEach("UD receives always say GRH", []string{"WC-08"}, func(tr *xTr, q conformance.CQ, c *verbs.WC) {
			if recv(c) && tr.types[xKey{q, c.QPNum, 0}] == verbs.QPTypeUD {
				c.WCFlags |= verbs.WCGRH
			}
		}),
		xEach("UD receives name no source", []string{"WC-12"}, func(tr *xTr, q conformance.CQ, c *verbs.WC) {
			if recv(c) {
				c.SrcQP, c.SLID = 0, 0
			}
		}),
		xEach("READ and atomic completions report one byte more", []string{"WC-11", "XFER-13"}, func(tr *xTr, q conformance.CQ, c *verbs.WC) {
			if send(c) && (c.Opcode == verbs.WCRDMARead || c.Opcode == verbs.WCFetchAdd || c.Opcode == verbs.WCCompSwap) {
				c.ByteLen++
			}
		}),
		xEach("receive byte_len is one short", []string{"WC-10", "XFER-02", "XFER-03", "XFER-04", "XFER-06", "XFER-20", "XFER-21"}, func(tr *xTr, q conformance.CQ, c *verbs.WC) {
			if recv(c) && c.ByteLen > 0 {
				c.ByteLen--
			}
		}),
		xBatch("receive completions of one poll come in reverse order", []string{"XFER-01", "CQ-18"}, func(tr *xTr, q conformance.CQ, got []verbs.WC, _ int) []verbs.WC {
			var at []int
			for i := range got {
				if recv(&got[i]) {
					at = append(at, i)
				}
			}
			for i, j := 0, len(at)-1; i < j; i, j = i+1, j-1 {
				got[at[i]], got[at[j]] = got[at[j]], got[at[i]]
			}
			return got
		}),
		xBatch("two send completions of one QP trade places", []string{"CQ-18", "XFER-19"}, func(tr *xTr, q conformance.CQ, got []verbs.WC, _ int) []verbs.WC {
			for i := 0; i+1 < len(got); i++ {
				if send(&got[i]) && send(&got[i+1]) && got[i].QPNum == got[i+1].QPNum {
					got[i], got[i+1] = got[i+1], got[i]
					i++
				}
			}
			return got
		}),
		xBatch("the last receive completion of a poll comes twice", []string{"XFER-25"}, func(tr *xTr, q conformance.CQ, got []verbs.WC, room int) []verbs.WC {
			for i := len(got) - 1; i >= 0; i-- {
				if recv(&got[i]) && len(got) < room {
					return append(got, got[i])
				}
			}
			return got
		}),
	}
}

// xMemoryMutants write where they should not.
func xMemoryMutants() []mutant {
	return []mutant{
		xEach("the first byte of every message received is flipped", []string{"XFER-02", "XFER-03", "XFER-09", "XFER-25", "XFER-26"}, func(tr *xTr, q conformance.CQ, c *verbs.WC) {
			if c.Status != verbs.WCSuccess || c.Opcode != verbs.WCRecv || c.ByteLen == 0 {
				return
			}
			sges, ok := tr.recvs[xKey{q, c.QPNum, c.WRID}]
			if !ok {
				sges = tr.srq[c.WRID]
			}
			off := uint64(0)
			if tr.types[xKey{q, c.QPNum, 0}] == verbs.QPTypeUD {
				off = 40
			}
			if a, ok := xAt(sges, off); ok && c.ByteLen > uint32(off) {
				tr.flip(a)
			}
		}),
		xEach("the first byte an RDMA WRITE placed is flipped when it completes", []string{"XFER-11"}, func(tr *xTr, q conformance.CQ, c *verbs.WC) {
			if r, ok := tr.sends[xKey{q, c.QPNum, c.WRID}]; ok && c.Status == verbs.WCSuccess && c.Opcode == verbs.WCRDMAWrite && verbs.SGEListLength(r.SGList) > 0 {
				tr.flip(r.RemoteAddr)
			}
		}),
		xEach("the first byte a READ fetched is flipped when it completes", []string{"XFER-13", "QP-40"}, func(tr *xTr, q conformance.CQ, c *verbs.WC) {
			if r, ok := tr.sends[xKey{q, c.QPNum, c.WRID}]; ok && c.Status == verbs.WCSuccess && c.Opcode == verbs.WCRDMARead {
				if a, ok := xAt(r.SGList, 0); ok {
					tr.flip(a)
				}
			}
		}),
		xEach("the word an ATOMIC_WRITE stored is flipped when it completes", []string{"XFER-33"}, func(tr *xTr, q conformance.CQ, c *verbs.WC) {
			if r, ok := tr.sends[xKey{q, c.QPNum, c.WRID}]; ok && c.Status == verbs.WCSuccess && c.Opcode == verbs.WCAtomicWrite {
				tr.flip(r.RemoteAddr)
			}
		}),
		xEach("ATOMIC_WRITE completes as RDMA_WRITE", []string{"XFER-33"}, func(tr *xTr, q conformance.CQ, c *verbs.WC) {
			if c.Status == verbs.WCSuccess && c.Opcode == verbs.WCAtomicWrite {
				c.Opcode = verbs.WCRDMAWrite
			}
		}),
		xEach("FETCH_AND_ADD results are corrupted", []string{"XFER-17"}, func(tr *xTr, q conformance.CQ, c *verbs.WC) {
			if r, ok := tr.sends[xKey{q, c.QPNum, c.WRID}]; ok && c.Status == verbs.WCSuccess && c.Opcode == verbs.WCFetchAdd && r.CompareAdd != 0 {
				if a, ok := xAt(r.SGList, 0); ok {
					tr.flip(a)
				}
			}
		}),
	}
}

// xVerbMutants change what a verb asks for.
func xVerbMutants() []mutant {
	inlinable := func(op verbs.WROpcode) bool {
		return op == verbs.WRSend || op == verbs.WRSendWithImm || op == verbs.WRRDMAWrite || op == verbs.WRRDMAWriteWithImm
	}
	sigAll := func(v bool) func(tr *xTr, h *hooks) {
		return func(tr *xTr, h *hooks) {
			create := h.createQP
			h.createQP = func(pd conformance.PD, a conformance.QPInitAttr) (conformance.QP, error) {
				a.SQSigAll = v
				return create(pd, a)
			}
		}
	}
	return []mutant{
		xMutant("sq_sig_all is always 0", []string{"QP-05", "CQ-19"}, sigAll(false)),
		xMutant("sq_sig_all is always 1", []string{"CQ-19", "CQ-20", "WC-S00", "QP-30"}, sigAll(true)),
		xPostEdit("FENCE is dropped", []string{"QP-38"}, func(tr *xTr, q conformance.QP, r *verbs.SendWR) {
			r.Flags &^= verbs.SendFence
		}),
		{name: "the profile states NOTIFY-05 B, the device follows A", rules: []string{"NOTIFY-05"},
			h: hooks{profile: func(p conformance.Profile) conformance.Profile { p.SolicitedBitOnly = true; return p }}},
		xPostEdit("SOLICITED is dropped", []string{"NOTIFY-06", "NOTIFY-04"}, func(tr *xTr, q conformance.QP, r *verbs.SendWR) {
			r.Flags &^= verbs.SendSolicited
		}),
		xPostEdit("SOLICITED is set on every request", []string{"NOTIFY-06", "NOTIFY-04"}, func(tr *xTr, q conformance.QP, r *verbs.SendWR) {
			r.Flags |= verbs.SendSolicited
		}),
		xPostEdit("short payloads are copied at post time", []string{"QP-36"}, func(tr *xTr, q conformance.QP, r *verbs.SendWR) {
			if inlinable(r.Opcode) && verbs.SGEListLength(r.SGList) <= 32 {
				r.Flags |= verbs.SendInline
			}
		}),
		xPostEdit("a UD message above 4096 bytes is cut to 4096 and sent", []string{"XFER-20"}, func(tr *xTr, q conformance.QP, r *verbs.SendWR) {
			if n := verbs.SGEListLength(r.SGList); tr.qps[q].typ == verbs.QPTypeUD && n > 4096 && len(r.SGList) > 0 {
				r.SGList[len(r.SGList)-1].Length -= uint32(n - 4096)
			}
		}),
		xPostEdit("UD sends carry the Q_Key the suite's QPs have, whatever the request says", []string{"XFER-22"}, func(tr *xTr, q conformance.QP, r *verbs.SendWR) {
			if tr.qps[q].typ == verbs.QPTypeUD {
				r.RemoteQKey = 0x11110000
			}
		}),
		xMutant("a WRITE posted alone runs only once its QP's send CQ is polled", []string{"XFER-18"}, func(tr *xTr, h *hooks) {
			post := h.postSend
			h.postSend = func(q conformance.QP, wrs []verbs.SendWR) (int, error) {
				if len(wrs) == 1 && wrs[0].Opcode == verbs.WRRDMAWrite && len(wrs[0].SGList) > 0 {
					tr.mu.Lock()
					tr.held[q] = append(tr.held[q], wrs[0])
					tr.mu.Unlock()
					return 1, nil
				}
				return post(q, wrs)
			}
			h.poll = func(c conformance.CQ, wcs []verbs.WC) (int, error) {
				n, err := c.Poll(wcs)
				tr.mu.Lock()
				var run []conformance.QP
				for q := range tr.held {
					if tr.qps[q].scq == c {
						run = append(run, q)
					}
				}
				held := map[conformance.QP][]verbs.SendWR{}
				for _, q := range run {
					held[q] = tr.held[q]
					delete(tr.held, q)
				}
				tr.mu.Unlock()
				for q, wrs := range held {
					_, _ = post(q, wrs)
				}
				return n, err
			}
		}),
		xMutant("RTS→SQD does nothing", []string{"QP-39", "QP-36", "MR-07"}, func(tr *xTr, h *hooks) {
			h.modifyQP = func(q conformance.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
				if m&verbs.QPAttrState != 0 && a.QPState == verbs.QPStateSQD {
					if cur, err := qAttr(q); err == nil && cur.QPState == verbs.QPStateRTS {
						return nil
					}
				}
				return q.Modify(a, m)
			}
		}),
		xMutant("max_dest_rd_atomic 0 reads 1", []string{"QP-40"}, func(tr *xTr, h *hooks) {
			h.modifyQP = func(q conformance.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
				if m&verbs.QPAttrMaxDestRDAtomic != 0 && a.MaxDestRDAtomic == 0 {
					b := *a
					b.MaxDestRDAtomic = 1
					a = &b
				}
				return q.Modify(a, m)
			}
		}),
		xMutant("an RC QP in ERR says SQE", []string{"FLUSH-09", "XFER-15"}, func(tr *xTr, h *hooks) {
			h.queryQP = func(q conformance.QP, mask verbs.QPAttrMask) (verbs.QPAttr, verbs.QPInitAttr, error) {
				a, ia, err := q.Query(mask)
				tr.mu.Lock()
				defer tr.mu.Unlock()
				if a.QPState == verbs.QPStateErr && tr.qps[q].typ == verbs.QPTypeRC {
					a.QPState = verbs.QPStateSQE
				}
				return a, ia, err
			}
		}),
		{name: "the clock runs twice as fast", rules: []string{"XFER-08", "XFER-10"},
			h: hooks{tick: func(c conformance.Clock, n uint64) { c.Tick(2 * n) }}},
		{name: "a fatal error changes nothing", rules: []string{"ASYNC-08"},
			h: hooks{injectFatal: func(conformance.QP) error { return nil }}},
		{name: "QP_FATAL is never delivered", rules: []string{"ASYNC-08"},
			h: hooks{tryAsync: func(c conformance.Context) (conformance.AsyncEvent, error) {
				ev, err := c.TryGetAsyncEvent()
				if err == nil && ev.EventType() == verbs.EventQPFatal {
					ev.Ack()
					return c.TryGetAsyncEvent()
				}
				return ev, err
			}}},
		{name: "port events lose their port number", rules: []string{"ASYNC-16"},
			h: hooks{tryAsync: func(c conformance.Context) (conformance.AsyncEvent, error) {
				ev, err := c.TryGetAsyncEvent()
				if err == nil && evObject(ev) == nil {
					return xPortless{ev}, nil
				}
				return ev, err
			}}},
	}
}

// xForcedIDs are the status rows checked by forcing (xfer_forced.go), in
// the order of their statuses.
var xForcedIDs = []string{"WC-S03", "WC-S06", "WC-S07", "WC-S08", "WC-S14", "WC-S15", "WC-S16", "WC-S17", "WC-S18", "WC-S19", "WC-S20", "WC-S21"}

// xForcedStatuses are the statuses of xForcedIDs.
var xForcedStatuses = []verbs.WCStatus{verbs.WCLocEECOpErr, verbs.WCMWBindErr, verbs.WCBadRespErr, verbs.WCLocAccessErr, verbs.WCLocRDDViolErr,
	verbs.WCRemInvRDReqErr, verbs.WCRemAbortErr, verbs.WCInvEECNErr, verbs.WCInvEECStateErr, verbs.WCFatalErr, verbs.WCRespTimeoutErr, verbs.WCGeneralErr}

// xForcedMutants break the forced-status fault or what follows it.
func xForcedMutants() []mutant {
	forced := func(st verbs.WCStatus) int { return slices.Index(xForcedStatuses, st) }
	return []mutant{
		{name: "a forced status is ignored", rules: xForcedIDs,
			h: hooks{forceStatus: func(conformance.QP, uint64, bool, verbs.WCStatus) error { return nil }}},
		{name: "a forced receive status strikes the send request of that wr_id", rules: xForcedIDs,
			h: hooks{forceStatus: func(q conformance.QP, id uint64, _ bool, st verbs.WCStatus) error {
				return q.(conformance.StatusForcer).ForceStatus(id, false, st)
			}}},
		xEach("a forced status reads as the next row's", xForcedIDs, func(tr *xTr, q conformance.CQ, c *verbs.WC) {
			if i := forced(c.Status); i >= 0 {
				c.Status = xForcedStatuses[(i+1)%len(xForcedStatuses)]
			}
		}),
		xEach("requests after a forced failure repeat its status instead of flushing", xForcedIDs, func(tr *xTr, q conformance.CQ, c *verbs.WC) {
			k := xKey{q, c.QPNum, 0}
			switch st, ok := tr.lastErr[k]; {
			case c.Status == verbs.WCWRFlushErr && ok:
				c.Status = st
			case forced(c.Status) >= 0:
				tr.lastErr[k] = c.Status
			}
		}),
		xMutant("a QP that completed a forced status reads RTS", xForcedIDs, func(tr *xTr, h *hooks) {
			failed := map[xKey]bool{} // by CQ and qp_num
			h.poll = func(q conformance.CQ, wcs []verbs.WC) (int, error) {
				n, err := q.Poll(wcs)
				tr.mu.Lock()
				defer tr.mu.Unlock()
				for _, c := range wcs[:n] {
					if forced(c.Status) >= 0 {
						failed[xKey{q, c.QPNum, 0}] = true
					}
				}
				return n, err
			}
			h.queryQP = func(q conformance.QP, mask verbs.QPAttrMask) (verbs.QPAttr, verbs.QPInitAttr, error) {
				a, ia, err := q.Query(mask)
				tr.mu.Lock()
				defer tr.mu.Unlock()
				x := tr.qps[q]
				if a.QPState == verbs.QPStateErr && (failed[xKey{x.scq, q.Num(), 0}] || failed[xKey{x.rcq, q.Num(), 0}]) {
					a.QPState = verbs.QPStateRTS
				}
				return a, ia, err
			}
		}),
		xMutant("a forced failure strikes the peer with a fatal error", xForcedIDs, func(tr *xTr, h *hooks) {
			dest := map[conformance.QP]uint32{} // the remote QP number of each connected QP
			modify := h.modifyQP
			h.modifyQP = func(q conformance.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
				if m&verbs.QPAttrDestQPN != 0 {
					tr.mu.Lock()
					dest[q] = a.DestQPNum
					tr.mu.Unlock()
				}
				if modify != nil {
					return modify(q, a, m)
				}
				return q.Modify(a, m)
			}
			h.poll = func(q conformance.CQ, wcs []verbs.WC) (int, error) {
				n, err := q.Poll(wcs)
				var peers []conformance.QP
				tr.mu.Lock()
				for _, c := range wcs[:n] {
					if forced(c.Status) < 0 {
						continue
					}
					for own, x := range tr.qps {
						if own.Num() != c.QPNum || (x.scq != q && x.rcq != q) {
							continue
						}
						for p := range tr.qps {
							if p.Num() == dest[own] && dest[p] == own.Num() {
								peers = append(peers, p)
							}
						}
					}
				}
				tr.mu.Unlock()
				for _, p := range peers {
					_ = p.(conformance.FatalInjector).InjectFatal()
				}
				return n, err
			}
		}),
	}
}

// xRenamed is an async event that names another object than it should.
type xRenamed = objEvent

// xPortShifted is a port event that names the next port.
type xPortShifted struct{ conformance.AsyncEvent }

func (e xPortShifted) Port() uint8 { return e.AsyncEvent.Port() + 1 }

// xEventEdit is a mutant whose async events (blocking or not) pass through
// f, under the tracker's lock.
func xEventEdit(name string, rules []string, edit func(tr *xTr, h *hooks), f func(tr *xTr, ev conformance.AsyncEvent) conformance.AsyncEvent) mutant {
	return xMutant(name, rules, func(tr *xTr, h *hooks) {
		edit(tr, h)
		wrap := func(ev conformance.AsyncEvent, err error) (conformance.AsyncEvent, error) {
			if err != nil || ev == nil {
				return ev, err
			}
			tr.mu.Lock()
			defer tr.mu.Unlock()
			return f(tr, ev), nil
		}
		h.tryAsync = func(c conformance.Context) (conformance.AsyncEvent, error) { return wrap(c.TryGetAsyncEvent()) }
		h.getAsync = func(c conformance.Context, ctx context.Context) (conformance.AsyncEvent, error) {
			return wrap(c.GetAsyncEvent(ctx))
		}
	})
}

// xElementMutants name the wrong object or port in async events (ASYNC-03).
func xElementMutants() []mutant {
	var srqs []conformance.SRQ // every SRQ made, newest last
	return []mutant{
		xEventEdit("QP events name another QP of the device", []string{"ASYNC-03", "ASYNC-08", "ASYNC-12", "ASYNC-14"},
			func(*xTr, *hooks) {},
			func(tr *xTr, ev conformance.AsyncEvent) conformance.AsyncEvent {
				q := ev.QP()
				if q == nil {
					return ev
				}
				// The QP of the lowest other number.
				var other conformance.QP
				for o := range tr.qps {
					if o.Num() != q.Num() && (other == nil || o.Num() < other.Num()) {
						other = o
					}
				}
				if other == nil {
					return ev
				}
				return xRenamed{ev, other}
			}),
		xEventEdit("SRQ_LIMIT_REACHED names the SRQ made before", []string{"ASYNC-03", "ASYNC-15"},
			func(tr *xTr, h *hooks) {
				destroy := h.destroySRQ
				h.destroySRQ = func(s conformance.SRQ, ctx context.Context) error {
					tr.mu.Lock()
					srqs = slices.DeleteFunc(srqs, func(o conformance.SRQ) bool { return o == s })
					tr.mu.Unlock()
					return destroy(s, ctx)
				}
				h.createSRQ = func(pd conformance.PD, a conformance.SRQInitAttr) (conformance.SRQ, error) {
					s, err := pd.CreateSRQ(a)
					if err == nil {
						tr.mu.Lock()
						srqs = append(srqs, s)
						tr.mu.Unlock()
					}
					return s, err
				}
			},
			func(tr *xTr, ev conformance.AsyncEvent) conformance.AsyncEvent {
				s := ev.SRQ()
				i := slices.Index(srqs, s)
				if s == nil || ev.EventType() != verbs.EventSRQLimitReached || i < 1 {
					return ev
				}
				return xRenamed{ev, srqs[i-1]}
			}),
		xEventEdit("port events name the next port", []string{"ASYNC-03", "ASYNC-16"},
			func(*xTr, *hooks) {},
			func(tr *xTr, ev conformance.AsyncEvent) conformance.AsyncEvent {
				if evObject(ev) != nil {
					return ev
				}
				return xPortShifted{ev}
			}),
	}
}
