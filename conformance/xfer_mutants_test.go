package conformance_test

import (
	"context"
	"slices"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/verbs"
)

// The mutants of the transport cases (xfer_*.go), built on the recording
// hooks of xfer_mutant_hooks_test.go.

// readingMutants state a transport reading that the (default) device does
// not follow.
func readingMutants() []mutant {
	return []mutant{
		readingMutant("XFER-05 B", func(p *verbs.Readings) { p.RecvTooSmallRemInvReq = true }, "XFER-05"),
		readingMutant("XFER-16 B", func(p *verbs.Readings) { p.RecvProtQPOp = true }, "XFER-16", "MR-03"),
		readingMutant("XFER-10 B", func(p *verbs.Readings) { p.InfiniteRetry7 = true }, "XFER-10"),
		readingMutant("no QP events", func(p *verbs.Readings) { p.NoQPEvents = true }, "ASYNC-09", "ASYNC-10", "ASYNC-11", "ASYNC-12"),
		readingMutant("SQ_DRAINED always", func(p *verbs.Readings) { p.AlwaysSQDrained = true }, "ASYNC-13"),
		readingMutant("WITH_IMM on send completions", func(p *verbs.Readings) { p.SendWCImm = true }, "WC-13"),
		readingMutant("no SQE", func(p *verbs.Readings) { p.NoSQE = true }, "FLUSH-10"),
		readingMutant("send overruns ignored", func(p *verbs.Readings) { p.OverrunSendIgnored = true }, "CQ-24"),
		readingMutant("XFER-30 B", func(p *verbs.Readings) { p.WriteImmRKeyRemAccess = true }, "XFER-30"),
		readingMutant("XFER-31 B", func(p *verbs.Readings) { p.LateLocalCheck = true }, "XFER-31"),
		readingMutant("SRQ-12 B", func(p *verbs.Readings) { p.SRQRecvQPPD = true }, "SRQ-12"),
		readingMutant("XFER-29 B", func(p *verbs.Readings) { p.SendInvErrAcked = true }, "XFER-29", "MW-07"),
	}
}

// statusMutants report wrong statuses or lose error completions.
func statusMutants() []mutant {
	return []mutant{
		statusMutant(verbs.WCRemAccessErr, verbs.WCRemInvReqErr, "XFER-14", "WC-S10", "MR-07", "MR-08", "CQ-21", "XFER-33"),
		statusMutant(verbs.WCRemInvReqErr, verbs.WCRemAccessErr, "XFER-05", "WC-S09", "QP-40", "XFER-29", "XFER-33"),
		statusMutant(verbs.WCLocProtErr, verbs.WCLocLenErr, "XFER-16", "WC-S04", "MR-03"),
		statusMutant(verbs.WCLocLenErr, verbs.WCLocProtErr, "XFER-23", "WC-S01", "XFER-17", "XFER-33"),
		statusMutant(verbs.WCLocQPOpErr, verbs.WCLocProtErr, "PD-04", "WC-S02"),
		statusMutant(verbs.WCRemOpErr, verbs.WCRemAccessErr, "WC-S11", "XFER-16"),
		statusMutant(verbs.WCLocAccessErr, verbs.WCWRFlushErr, "XFER-30", "WC-S08"),
		statusMutant(verbs.WCRetryExcErr, verbs.WCRNRRetryExcErr, "XFER-10", "XFER-27", "XFER-28", "FLUSH-11", "WC-S12"),
		statusMutant(verbs.WCRNRRetryExcErr, verbs.WCRetryExcErr, "XFER-07", "XFER-08", "SRQ-09", "WC-S13", "XFER-12"),
		eachWC("requests after a failed one repeat its status instead of flushing", []string{"FLUSH-03", "XFER-15"}, func(tr *wireTracker, q verbs.CQ, c *verbs.WC) {
			if tr.isRecv(q, *c) {
				return
			}
			switch st, ok := tr.lastErr[wrKey{q, c.QPNum, 0}]; {
			case c.Status == verbs.WCWRFlushErr && ok:
				c.Status = st
			case c.Status != verbs.WCSuccess && c.Status != verbs.WCWRFlushErr:
				tr.lastErr[wrKey{q, c.QPNum, 0}] = c.Status
			}
		}),
		pollBatch("flushed receives vanish", []string{"FLUSH-12"}, func(tr *wireTracker, q verbs.CQ, got []verbs.WC, _ int) []verbs.WC {
			out := got[:0]
			for _, c := range got {
				if c.Status != verbs.WCWRFlushErr || !tr.isRecv(q, c) {
					out = append(out, c)
				}
			}
			return out
		}),
		pollBatch("error completions of unsignaled requests vanish", []string{"CQ-21"}, func(tr *wireTracker, q verbs.CQ, got []verbs.WC, _ int) []verbs.WC {
			out := got[:0]
			for _, c := range got {
				r, ok := tr.sends[wrKey{q, c.QPNum, c.WRID}]
				if c.Status == verbs.WCSuccess || c.Status == verbs.WCWRFlushErr || tr.isRecv(q, c) || !ok || r.Flags&verbs.SendSignaled != 0 {
					out = append(out, c)
				}
			}
			return out
		}),
		eachWC("a zero-length RDMA request meets a remote access error", []string{"XFER-24"}, func(tr *wireTracker, q verbs.CQ, c *verbs.WC) {
			if r, ok := tr.sends[wrKey{q, c.QPNum, c.WRID}]; ok && c.Status == verbs.WCSuccess && !tr.isRecv(q, *c) &&
				(r.Opcode == verbs.WRRDMARead || r.Opcode == verbs.WRRDMAWrite) && verbs.SGEListLength(r.SGList) == 0 {
				c.Status = verbs.WCRemAccessErr
			}
		}),
	}
}

// fieldMutants get a completion field wrong, or the order or number of
// completions.
func fieldMutants() []mutant {
	recv := func(c *verbs.WC) bool { return c.Status == verbs.WCSuccess && c.Opcode.IsRecv() }
	send := func(c *verbs.WC) bool { return c.Status == verbs.WCSuccess && !c.Opcode.IsRecv() }
	return []mutant{
		eachWC("wr_id keeps 48 bits", []string{"WC-01"}, func(tr *wireTracker, q verbs.CQ, c *verbs.WC) { c.WRID &= 1<<48 - 1 }),
		eachWC("error completions carry qp_num 0", []string{"WC-02"}, func(tr *wireTracker, q verbs.CQ, c *verbs.WC) {
			if c.Status != verbs.WCSuccess {
				c.QPNum = 0
			}
		}),
		eachWC("RDMA WRITEs complete as SEND", []string{"WC-04", "XFER-11"}, func(tr *wireTracker, q verbs.CQ, c *verbs.WC) {
			if send(c) && c.Opcode == verbs.WCRDMAWrite {
				c.Opcode = verbs.WCSend
			}
		}),
		eachWC("receive completions have IBV_WC_RECV clear", []string{"WC-06", "WC-05"}, func(tr *wireTracker, q verbs.CQ, c *verbs.WC) {
			if recv(c) {
				c.Opcode &^= verbs.WCRecv
			}
		}),
		eachWC("RECV_RDMA_WITH_IMM reads TM_RECV", []string{"WC-06", "WC-05"}, func(tr *wireTracker, q verbs.CQ, c *verbs.WC) {
			if recv(c) && c.Opcode == verbs.WCRecvRDMAWithImm {
				c.Opcode = verbs.WCTMRecv
			}
		}),
		eachWC("send completions read DRIVER1", []string{"WC-06", "WC-04"}, func(tr *wireTracker, q verbs.CQ, c *verbs.WC) {
			if send(c) {
				c.Opcode = verbs.WCDriver1
			}
		}),
		eachWC("WRITE_WITH_IMM completes as RECV at the responder", []string{"WC-05", "XFER-12"}, func(tr *wireTracker, q verbs.CQ, c *verbs.WC) {
			if recv(c) && c.Opcode == verbs.WCRecvRDMAWithImm {
				c.Opcode = verbs.WCRecv
			}
		}),
		eachWC("receive completions lose WITH_IMM", []string{"WC-08", "WC-09", "XFER-04", "XFER-12"}, func(tr *wireTracker, q verbs.CQ, c *verbs.WC) {
			if recv(c) {
				c.WCFlags &^= verbs.WCWithImm
			}
		}),
		eachWC("imm_data is byte-swapped", []string{"WC-09"}, func(tr *wireTracker, q verbs.CQ, c *verbs.WC) {
			if recv(c) && c.WCFlags&verbs.WCWithImm != 0 {
				v := c.ImmData
				c.ImmData = v>>24 | v>>8&0xff00 | v<<8&0xff0000 | v<<24
			}
		}),
		eachWC("receive completions lose WITH_INV", []string{"WC-08", "XFER-29"}, func(tr *wireTracker, q verbs.CQ, c *verbs.WC) {
			if recv(c) {
				c.WCFlags &^= verbs.WCWithInv
			}
		}),
		eachWC("UD receives always say GRH", []string{"WC-08"}, func(tr *wireTracker, q verbs.CQ, c *verbs.WC) {
			if recv(c) && tr.types[wrKey{q, c.QPNum, 0}] == verbs.QPTypeUD {
				c.WCFlags |= verbs.WCGRH
			}
		}),
		eachWC("UD receives name no source", []string{"WC-12"}, func(tr *wireTracker, q verbs.CQ, c *verbs.WC) {
			if recv(c) {
				c.SrcQP, c.SLID = 0, 0
			}
		}),
		eachWC("READ and atomic completions report one byte more", []string{"WC-11", "XFER-13"}, func(tr *wireTracker, q verbs.CQ, c *verbs.WC) {
			if send(c) && (c.Opcode == verbs.WCRDMARead || c.Opcode == verbs.WCFetchAdd || c.Opcode == verbs.WCCompSwap) {
				c.ByteLen++
			}
		}),
		eachWC("receive byte_len is one short", []string{"WC-10", "XFER-02", "XFER-03", "XFER-04", "XFER-06", "XFER-20", "XFER-21"}, func(tr *wireTracker, q verbs.CQ, c *verbs.WC) {
			if recv(c) && c.ByteLen > 0 {
				c.ByteLen--
			}
		}),
		pollBatch("receive completions of one poll come in reverse order", []string{"XFER-01", "CQ-18"}, func(tr *wireTracker, q verbs.CQ, got []verbs.WC, _ int) []verbs.WC {
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
		pollBatch("two send completions of one QP trade places", []string{"CQ-18", "XFER-19"}, func(tr *wireTracker, q verbs.CQ, got []verbs.WC, _ int) []verbs.WC {
			for i := 0; i+1 < len(got); i++ {
				if send(&got[i]) && send(&got[i+1]) && got[i].QPNum == got[i+1].QPNum {
					got[i], got[i+1] = got[i+1], got[i]
					i++
				}
			}
			return got
		}),
		pollBatch("the last receive completion of a poll comes twice", []string{"XFER-25"}, func(tr *wireTracker, q verbs.CQ, got []verbs.WC, room int) []verbs.WC {
			for i := len(got) - 1; i >= 0; i-- {
				if recv(&got[i]) && len(got) < room {
					return append(got, got[i])
				}
			}
			return got
		}),
	}
}

// memoryMutants write where they should not.
func memoryMutants() []mutant {
	return []mutant{
		eachWC("the first byte of every message received is flipped", []string{"XFER-02", "XFER-03", "XFER-09", "XFER-25", "XFER-26"}, func(tr *wireTracker, q verbs.CQ, c *verbs.WC) {
			if c.Status != verbs.WCSuccess || c.Opcode != verbs.WCRecv || c.ByteLen == 0 {
				return
			}
			sges, ok := tr.recvs[wrKey{q, c.QPNum, c.WRID}]
			if !ok {
				sges = tr.srq[c.WRID]
			}
			off := uint64(0)
			if tr.types[wrKey{q, c.QPNum, 0}] == verbs.QPTypeUD {
				off = 40
			}
			if a, ok := sgeAt(sges, off); ok && c.ByteLen > uint32(off) {
				tr.flip(a)
			}
		}),
		eachWC("the first byte an RDMA WRITE placed is flipped when it completes", []string{"XFER-11"}, func(tr *wireTracker, q verbs.CQ, c *verbs.WC) {
			if r, ok := tr.sends[wrKey{q, c.QPNum, c.WRID}]; ok && c.Status == verbs.WCSuccess && c.Opcode == verbs.WCRDMAWrite && verbs.SGEListLength(r.SGList) > 0 {
				tr.flip(r.RemoteAddr)
			}
		}),
		eachWC("the first byte a READ fetched is flipped when it completes", []string{"XFER-13", "QP-40"}, func(tr *wireTracker, q verbs.CQ, c *verbs.WC) {
			if r, ok := tr.sends[wrKey{q, c.QPNum, c.WRID}]; ok && c.Status == verbs.WCSuccess && c.Opcode == verbs.WCRDMARead {
				if a, ok := sgeAt(r.SGList, 0); ok {
					tr.flip(a)
				}
			}
		}),
		eachWC("the word an ATOMIC_WRITE stored is flipped when it completes", []string{"XFER-33"}, func(tr *wireTracker, q verbs.CQ, c *verbs.WC) {
			if r, ok := tr.sends[wrKey{q, c.QPNum, c.WRID}]; ok && c.Status == verbs.WCSuccess && c.Opcode == verbs.WCAtomicWrite {
				tr.flip(r.RemoteAddr)
			}
		}),
		eachWC("ATOMIC_WRITE completes as RDMA_WRITE", []string{"XFER-33"}, func(tr *wireTracker, q verbs.CQ, c *verbs.WC) {
			if c.Status == verbs.WCSuccess && c.Opcode == verbs.WCAtomicWrite {
				c.Opcode = verbs.WCRDMAWrite
			}
		}),
		eachWC("FETCH_AND_ADD results are corrupted", []string{"XFER-17"}, func(tr *wireTracker, q verbs.CQ, c *verbs.WC) {
			if r, ok := tr.sends[wrKey{q, c.QPNum, c.WRID}]; ok && c.Status == verbs.WCSuccess && c.Opcode == verbs.WCFetchAdd && r.CompareAdd != 0 {
				if a, ok := sgeAt(r.SGList, 0); ok {
					tr.flip(a)
				}
			}
		}),
	}
}

// verbMutants change what a verb asks for.
func verbMutants() []mutant {
	inlinable := func(op verbs.WROpcode) bool {
		return op == verbs.WRSend || op == verbs.WRSendWithImm || op == verbs.WRRDMAWrite || op == verbs.WRRDMAWriteWithImm
	}
	sigAll := func(v bool) func(tr *wireTracker, h *hooks) {
		return func(tr *wireTracker, h *hooks) {
			create := h.createQP
			h.createQP = func(pd verbs.PD, a verbs.QPInitAttr) (verbs.QP, error) {
				a.SQSigAll = v
				return create(pd, a)
			}
		}
	}
	return []mutant{
		wireMutant("sq_sig_all is always 0", []string{"QP-05", "CQ-19"}, sigAll(false)),
		wireMutant("sq_sig_all is always 1", []string{"CQ-19", "CQ-20", "WC-S00", "QP-30"}, sigAll(true)),
		postEdit("FENCE is dropped", []string{"QP-38"}, func(tr *wireTracker, q verbs.QP, r *verbs.SendWR) {
			r.Flags &^= verbs.SendFence
		}),
		{name: "the profile states NOTIFY-05 B, the device follows A", rules: []string{"NOTIFY-05"},
			h: hooks{profile: func(p verbs.Readings) verbs.Readings { p.SolicitedBitOnly = true; return p }}},
		postEdit("SOLICITED is dropped", []string{"NOTIFY-06", "NOTIFY-04"}, func(tr *wireTracker, q verbs.QP, r *verbs.SendWR) {
			r.Flags &^= verbs.SendSolicited
		}),
		postEdit("SOLICITED is set on every request", []string{"NOTIFY-06", "NOTIFY-04"}, func(tr *wireTracker, q verbs.QP, r *verbs.SendWR) {
			r.Flags |= verbs.SendSolicited
		}),
		postEdit("short payloads are copied at post time", []string{"QP-36"}, func(tr *wireTracker, q verbs.QP, r *verbs.SendWR) {
			if inlinable(r.Opcode) && verbs.SGEListLength(r.SGList) <= 32 {
				r.Flags |= verbs.SendInline
			}
		}),
		postEdit("a UD message above 4096 bytes is cut to 4096 and sent", []string{"XFER-20"}, func(tr *wireTracker, q verbs.QP, r *verbs.SendWR) {
			if n := verbs.SGEListLength(r.SGList); tr.qps[q].typ == verbs.QPTypeUD && n > 4096 && len(r.SGList) > 0 {
				r.SGList[len(r.SGList)-1].Length -= uint32(n - 4096)
			}
		}),
		postEdit("UD sends carry the Q_Key the suite's QPs have, whatever the request says", []string{"XFER-22"}, func(tr *wireTracker, q verbs.QP, r *verbs.SendWR) {
			if tr.qps[q].typ == verbs.QPTypeUD {
				r.RemoteQKey = 0x11110000
			}
		}),
		wireMutant("a WRITE posted alone runs only once its QP's send CQ is polled", []string{"XFER-18"}, func(tr *wireTracker, h *hooks) {
			post := h.postSend
			h.postSend = func(q verbs.QP, wrs []verbs.SendWR) (int, error) {
				if len(wrs) == 1 && wrs[0].Opcode == verbs.WRRDMAWrite && len(wrs[0].SGList) > 0 {
					tr.mu.Lock()
					tr.held[q] = append(tr.held[q], wrs[0])
					tr.mu.Unlock()
					return 1, nil
				}
				return post(q, wrs)
			}
			h.poll = func(c verbs.CQ, wcs []verbs.WC) (int, error) {
				n, err := c.Poll(wcs)
				tr.mu.Lock()
				var run []verbs.QP
				for q := range tr.held {
					if tr.qps[q].scq == c {
						run = append(run, q)
					}
				}
				held := map[verbs.QP][]verbs.SendWR{}
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
		wireMutant("RTS→SQD does nothing", []string{"QP-39", "QP-36", "MR-07"}, func(tr *wireTracker, h *hooks) {
			h.modifyQP = func(q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
				if m&verbs.QPAttrState != 0 && a.QPState == verbs.QPStateSQD {
					if cur, err := qAttr(q); err == nil && cur.QPState == verbs.QPStateRTS {
						return nil
					}
				}
				return q.Modify(a, m)
			}
		}),
		wireMutant("max_dest_rd_atomic 0 reads 1", []string{"QP-40"}, func(tr *wireTracker, h *hooks) {
			h.modifyQP = func(q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
				if m&verbs.QPAttrMaxDestRDAtomic != 0 && a.MaxDestRDAtomic == 0 {
					b := *a
					b.MaxDestRDAtomic = 1
					a = &b
				}
				return q.Modify(a, m)
			}
		}),
		wireMutant("an RC QP in ERR says SQE", []string{"FLUSH-09", "XFER-15"}, func(tr *wireTracker, h *hooks) {
			h.queryQP = func(q verbs.QP, mask verbs.QPAttrMask) (verbs.QPAttr, verbs.QPInitAttr, error) {
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
			h: hooks{injectFatal: func(verbs.QP) error { return nil }}},
		{name: "QP_FATAL is never delivered", rules: []string{"ASYNC-08"},
			h: hooks{tryAsync: func(c verbs.Context) (verbs.AsyncEvent, error) {
				ev, err := c.TryGetAsyncEvent()
				if err == nil && ev.EventType() == verbs.EventQPFatal {
					ev.Ack()
					return c.TryGetAsyncEvent()
				}
				return ev, err
			}}},
		{name: "port events lose their port number", rules: []string{"ASYNC-16"},
			h: hooks{tryAsync: func(c verbs.Context) (verbs.AsyncEvent, error) {
				ev, err := c.TryGetAsyncEvent()
				if err == nil && evObject(ev) == nil {
					return portless{ev}, nil
				}
				return ev, err
			}}},
	}
}

// forcedIDs are the status rows checked by forcing (xfer_forced.go), in
// the order of their statuses.
var forcedIDs = []string{"WC-S03", "WC-S06", "WC-S07", "WC-S08", "WC-S14", "WC-S15", "WC-S16", "WC-S17", "WC-S18", "WC-S19", "WC-S20", "WC-S21"}

// forcedStatusList are the statuses of forcedIDs.
var forcedStatusList = []verbs.WCStatus{verbs.WCLocEECOpErr, verbs.WCMWBindErr, verbs.WCBadRespErr, verbs.WCLocAccessErr, verbs.WCLocRDDViolErr,
	verbs.WCRemInvRDReqErr, verbs.WCRemAbortErr, verbs.WCInvEECNErr, verbs.WCInvEECStateErr, verbs.WCFatalErr, verbs.WCRespTimeoutErr, verbs.WCGeneralErr}

// forcedMutants break the forced-status fault or what follows it.
func forcedMutants() []mutant {
	forced := func(st verbs.WCStatus) int { return slices.Index(forcedStatusList, st) }
	return []mutant{
		{name: "a forced status is ignored", rules: forcedIDs,
			h: hooks{forceStatus: func(verbs.QP, uint64, bool, verbs.WCStatus) error { return nil }}},
		{name: "a forced receive status strikes the send request of that wr_id", rules: forcedIDs,
			h: hooks{forceStatus: func(q verbs.QP, id uint64, _ bool, st verbs.WCStatus) error {
				return q.(conformance.StatusForcer).ForceStatus(id, false, st)
			}}},
		eachWC("a forced status reads as the next row's", forcedIDs, func(tr *wireTracker, q verbs.CQ, c *verbs.WC) {
			if i := forced(c.Status); i >= 0 {
				c.Status = forcedStatusList[(i+1)%len(forcedStatusList)]
			}
		}),
		eachWC("requests after a forced failure repeat its status instead of flushing", forcedIDs, func(tr *wireTracker, q verbs.CQ, c *verbs.WC) {
			k := wrKey{q, c.QPNum, 0}
			switch st, ok := tr.lastErr[k]; {
			case c.Status == verbs.WCWRFlushErr && ok:
				c.Status = st
			case forced(c.Status) >= 0:
				tr.lastErr[k] = c.Status
			}
		}),
		wireMutant("a QP that completed a forced status reads RTS", forcedIDs, func(tr *wireTracker, h *hooks) {
			failed := map[wrKey]bool{} // by CQ and qp_num
			h.poll = func(q verbs.CQ, wcs []verbs.WC) (int, error) {
				n, err := q.Poll(wcs)
				tr.mu.Lock()
				defer tr.mu.Unlock()
				for _, c := range wcs[:n] {
					if forced(c.Status) >= 0 {
						failed[wrKey{q, c.QPNum, 0}] = true
					}
				}
				return n, err
			}
			h.queryQP = func(q verbs.QP, mask verbs.QPAttrMask) (verbs.QPAttr, verbs.QPInitAttr, error) {
				a, ia, err := q.Query(mask)
				tr.mu.Lock()
				defer tr.mu.Unlock()
				x := tr.qps[q]
				if a.QPState == verbs.QPStateErr && (failed[wrKey{x.scq, q.Num(), 0}] || failed[wrKey{x.rcq, q.Num(), 0}]) {
					a.QPState = verbs.QPStateRTS
				}
				return a, ia, err
			}
		}),
		wireMutant("a forced failure strikes the peer with a fatal error", forcedIDs, func(tr *wireTracker, h *hooks) {
			dest := map[verbs.QP]uint32{} // the remote QP number of each connected QP
			modify := h.modifyQP
			h.modifyQP = func(q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
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
			h.poll = func(q verbs.CQ, wcs []verbs.WC) (int, error) {
				n, err := q.Poll(wcs)
				var peers []verbs.QP
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

// portShifted is a port event that names the next port.
type portShifted struct{ verbs.AsyncEvent }

func (e portShifted) Port() uint8 { return e.AsyncEvent.Port() + 1 }

// eventEdit is a mutant whose async events (blocking or not) pass through
// f, under the tracker's lock.
func eventEdit(name string, rules []string, edit func(tr *wireTracker, h *hooks), f func(tr *wireTracker, ev verbs.AsyncEvent) verbs.AsyncEvent) mutant {
	return wireMutant(name, rules, func(tr *wireTracker, h *hooks) {
		edit(tr, h)
		wrap := func(ev verbs.AsyncEvent, err error) (verbs.AsyncEvent, error) {
			if err != nil || ev == nil {
				return ev, err
			}
			tr.mu.Lock()
			defer tr.mu.Unlock()
			return f(tr, ev), nil
		}
		h.tryAsync = func(c verbs.Context) (verbs.AsyncEvent, error) { return wrap(c.TryGetAsyncEvent()) }
		h.getAsync = func(c verbs.Context, ctx context.Context) (verbs.AsyncEvent, error) {
			return wrap(c.GetAsyncEvent(ctx))
		}
	})
}

// elementMutants name the wrong object or port in async events (ASYNC-03).
func elementMutants() []mutant {
	var srqs []verbs.SRQ // every SRQ made, newest last
	return []mutant{
		eventEdit("QP events name another QP of the device", []string{"ASYNC-03", "ASYNC-08", "ASYNC-12", "ASYNC-14"},
			func(*wireTracker, *hooks) {},
			func(tr *wireTracker, ev verbs.AsyncEvent) verbs.AsyncEvent {
				q := ev.QP()
				if q == nil {
					return ev
				}
				// The QP of the lowest other number.
				var other verbs.QP
				for o := range tr.qps {
					if o.Num() != q.Num() && (other == nil || o.Num() < other.Num()) {
						other = o
					}
				}
				if other == nil {
					return ev
				}
				return renamed{ev, other}
			}),
		eventEdit("SRQ_LIMIT_REACHED names the SRQ made before", []string{"ASYNC-03", "ASYNC-15"},
			func(tr *wireTracker, h *hooks) {
				destroy := h.destroySRQ
				h.destroySRQ = func(s verbs.SRQ, ctx context.Context) error {
					tr.mu.Lock()
					srqs = slices.DeleteFunc(srqs, func(o verbs.SRQ) bool { return o == s })
					tr.mu.Unlock()
					return destroy(s, ctx)
				}
				h.createSRQ = func(pd verbs.PD, a verbs.SRQInitAttr) (verbs.SRQ, error) {
					s, err := pd.CreateSRQ(a)
					if err == nil {
						tr.mu.Lock()
						srqs = append(srqs, s)
						tr.mu.Unlock()
					}
					return s, err
				}
			},
			func(tr *wireTracker, ev verbs.AsyncEvent) verbs.AsyncEvent {
				s := ev.SRQ()
				i := slices.Index(srqs, s)
				if s == nil || ev.EventType() != verbs.EventSRQLimitReached || i < 1 {
					return ev
				}
				return renamed{ev, srqs[i-1]}
			}),
		eventEdit("port events name the next port", []string{"ASYNC-03", "ASYNC-16"},
			func(*wireTracker, *hooks) {},
			func(tr *wireTracker, ev verbs.AsyncEvent) verbs.AsyncEvent {
				if evObject(ev) != nil {
					return ev
				}
				return portShifted{ev}
			}),
	}
}
