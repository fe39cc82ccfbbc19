package ops

import (
	"bytes"
	"errors"
	"syscall"

	"github.com/verbsim/verbsim/conformance/model"
	"github.com/verbsim/verbsim/verbs"
	"pgregory.net/rapid"
)

// The posts of TrafficStateMachine: receive requests with random
// scatter lists, and SENDs, WRITEs, READs and atomics with random gather
// lists, against the room the queues have (QP-27, QP-29, QP-31).

// layout cuts n bytes at offset base of QP q's buffer into a scatter or
// gather list of 0..3 elements (0 only for n = 0), laid out in memory in
// the reverse of their list order.
func (r *trafficRun) layout(t *rapid.T, q *trafficQP, base, n int) ([]verbs.SGE, bufRef) {
	k := 0
	if n > 0 || rapid.Bool().Draw(t, "one empty sge") {
		k = rapid.IntRange(1, max(1, min(3, n))).Draw(t, "sges")
	}
	lens := make([]int, k)
	rest := n
	for i := range k - 1 {
		lens[i] = rapid.IntRange(1, rest-(k-1-i)).Draw(t, "sge length")
		rest -= lens[i]
	}
	if k > 0 {
		lens[k-1] = rest
	}
	b := bufRef{offs: make([]int, k), lens: lens}
	var sges []verbs.SGE
	off := base
	for i := k - 1; i >= 0; i-- {
		b.offs[i] = off
		off += lens[i]
	}
	for i := range k {
		sges = append(sges, verbs.SGE{Addr: q.mr.Addr() + uint64(b.offs[i]), Length: uint32(lens[i]), LKey: q.mr.LKey()})
	}
	return sges, b
}

// write copies data into the pieces of b.
func (r *trafficRun) write(b bufRef, data []byte) {
	buf := r.qps[b.qp].buf
	for i, off := range b.offs {
		copy(buf[off:off+b.lens[i]], data[:b.lens[i]])
		data = data[b.lens[i]:]
	}
}

func (r *trafficRun) postRecv(t *rapid.T) {
	i, ok := r.pick(t, func(i int) bool { return r.m.State(i) != verbs.QPStateReset })
	if !ok {
		return
	}
	q := r.qps[i]
	_, room := r.m.Room(i)
	count := drawCount(t, room, len(q.recvFree), "receives")
	if count == 0 {
		return
	}
	maxCap := maxMsgLen + 64
	if q.typ == verbs.QPTypeUD {
		maxCap = r.prof.MTU + 2*model.GRHLen
	}
	capacity := []*rapid.Generator[int]{rapid.IntRange(0, 16), rapid.IntRange(0, maxCap)}
	if len(q.incoming) > 0 {
		// Exactly the size of a message sent to the QP, or a byte short
		// (XFER-05, XFER-06, XFER-21).
		grh := 0
		if q.typ == verbs.QPTypeUD {
			grh = model.GRHLen
		}
		near := rapid.Custom(func(t *rapid.T) int {
			return max(0, rapid.SampledFrom(q.incoming).Draw(t, "message length")+grh-rapid.IntRange(0, 1).Draw(t, "short"))
		})
		capacity = append(capacity, near)
	}
	var wrs []verbs.RecvWR
	var rs []model.Recv
	for range count {
		id := r.nextWRID()
		c := rapid.OneOf(capacity...).Draw(t, "capacity")
		region := q.recvFree[0]
		q.recvFree = q.recvFree[1:]
		sges, b := r.layout(t, q, (sendRegions+region)*regionLen, c)
		b.qp, b.region = i, region
		fill := id ^ 0xf111
		r.write(b, model.Pattern(fill, c))
		r.recvAt[id] = b
		wrs = append(wrs, verbs.RecvWR{WRID: id, SGList: sges})
		rs = append(rs, model.Recv{WRID: id, Cap: c, Fill: fill})
	}
	if r.m.SettleBeforeRecv(i) {
		r.settle()
	}
	k := r.postable(t, i, true, len(wrs))
	r.unpostRecvs(wrs[k:])
	wrs, rs = wrs[:k], rs[:k]
	if k == 0 {
		return
	}
	n, err := q.q.PostRecv(wrs)
	r.checkPost(i, true, len(wrs), n, err)
	r.unpostRecvs(wrs[n:])
	r.step("qp %d: post %d receives %v: %d accepted", i, len(rs), rs, n)
	r.fatal(r.m.PostRecv(i, rs[:n]))
	r.settleIfNeeded()
}

// drawCount draws how many requests to post on a queue with room room, at
// most limit (what the state machine's buffers allow) and 3: within the
// room, and now and then past it, where the post must stop with ENOMEM
// (QP-27, QP-29, QP-31). Past Min it may be more than the model knows the
// queue takes; postable sorts that out before the post.
func drawCount(t *rapid.T, room model.Span, limit int, label string) int {
	limit = min(3, limit)
	if rapid.IntRange(0, 7).Draw(t, "past the room") > 0 {
		limit = min(limit, room.Max)
	}
	if limit <= 0 {
		return 0
	}
	return rapid.IntRange(1, limit).Draw(t, label)
}

// postable returns how many of the n requests about to be posted on QP i's
// send or receive queue to post, all of them if the model knows how many
// the queue takes. Under QP-29 B it may not: a request may have retired or
// not (model.Traffic.Room). Then it runs the fabric until idle, and for a
// receive queue that still does not say, also polls every CQ empty (a
// lossy UC or UD receive request is seen to retire only in its
// completion); or it posts only what the queue certainly takes.
func (r *trafficRun) postable(t *rapid.T, i int, recv bool, n int) int {
	room := func() model.Span {
		send, rcv := r.m.Room(i)
		if recv {
			return rcv
		}
		return send
	}
	x := room()
	if x.Exact() || n <= x.Min {
		return n
	}
	if rapid.Bool().Draw(t, "settle to know the room") {
		r.settle()
		if x = room(); !x.Exact() && n > x.Min {
			r.drain()
			x = room()
		}
		if x.Exact() || n <= x.Min {
			return n
		}
		r.t.Fatalf("qp %d: the model does not know the room of a queue on a quiet fabric: %+v", i, x)
	}
	return max(0, min(n, x.Min))
}

// checkPost checks what a post of asked requests on QP i returned: as many
// as the queue had room for (model.Traffic.CheckPost), and ENOMEM exactly
// when it stopped short (QP-27).
func (r *trafficRun) checkPost(i int, recv bool, asked, n int, err error) {
	r.t.Helper()
	verb, rule := "ibv_post_send", "QP-29"
	if recv {
		verb, rule = "ibv_post_recv", "QP-31"
	}
	if e := r.m.CheckPost(i, recv, asked, n); e != nil {
		r.t.Fatalf("%v (the call returned %v)", e, err)
	}
	switch {
	case n == asked && err != nil:
		r.t.Fatalf("qp %d: %s posted all %d requests, and returned %v (QP-27)", i, verb, asked, err)
	case n < asked && !errors.Is(err, syscall.ENOMEM):
		r.t.Fatalf("qp %d: %s posted %d of %d requests on a full queue, and returned %v, want ENOMEM (QP-27, %s)", i, verb, n, asked, err, rule)
	}
}

// unpostRecvs gives back the buffers of receive requests that were not
// posted.
func (r *trafficRun) unpostRecvs(wrs []verbs.RecvWR) {
	for _, w := range wrs {
		b := r.recvAt[w.WRID]
		r.qps[b.qp].recvFree = append(r.qps[b.qp].recvFree, b.region)
		delete(r.recvAt, w.WRID)
	}
}

// unpostSends gives back the buffers of send requests of QP i that were not
// posted, the last ones of a list: their send regions and WRITE targets.
func (r *trafficRun) unpostSends(i int, wrs []verbs.SendWR) {
	r.qps[i].sends -= uint64(len(wrs))
	for _, w := range wrs {
		if b, ok := r.targetAt[w.WRID]; ok {
			r.qps[b.qp].targetFree = append(r.qps[b.qp].targetFree, b.region)
			delete(r.targetAt, w.WRID)
		}
	}
}

func (r *trafficRun) postSend(t *rapid.T) {
	i, ok := r.pick(t, func(i int) bool {
		st := r.m.State(i)
		return (st == verbs.QPStateRTS || st == verbs.QPStateErr) && (r.qps[i].typ == verbs.QPTypeUD || r.m.Peer(i) >= 0)
	})
	if !ok {
		return
	}
	q := r.qps[i]
	room, _ := r.m.Room(i)
	held, _ := r.m.Held(i)
	count := drawCount(t, room, sendRegions-held, "sends")
	if count == 0 {
		return
	}
	var uds []int
	for j, o := range r.qps {
		if j != i && o.typ == verbs.QPTypeUD && r.m.State(j) != verbs.QPStateReset {
			uds = append(uds, j)
		}
	}
	if q.typ == verbs.QPTypeUD && len(uds) == 0 {
		return
	}
	peer := r.m.Peer(i)
	credit := 0
	if q.typ == verbs.QPTypeRC && r.faults {
		credit = r.m.Credit(i)
	}
	var wrs []verbs.SendWR
	var ss []model.Send
	var inline []bufRef
	for range count {
		id := r.nextWRID()
		s := model.Send{WRID: id, Seed: id ^ 0x5eed, Dest: -1,
			Signaled: rapid.IntRange(0, 3).Draw(t, "signaled") > 0,
			Imm:      rapid.Uint32().Draw(t, "imm")}
		ops := []verbs.WROpcode{verbs.WRSend, verbs.WRSendWithImm, verbs.WRRDMAWrite, verbs.WRRDMAWriteWithImm}
		if q.typ == verbs.QPTypeUD {
			ops = ops[:2]
		}
		s.Op = rapid.SampledFrom(ops).Draw(t, "opcode")
		var win *windowAccess
		if q.typ == verbs.QPTypeRC {
			win = r.drawWinAccess(t, peer, &s)
		}
		if win == nil && s.Op == verbs.WRRDMAWrite && rapid.IntRange(0, 11).Draw(t, "bad rkey") == 0 {
			s.BadRKey = true
		}
		writes := (s.Op == verbs.WRRDMAWrite || s.Op == verbs.WRRDMAWriteWithImm) && win == nil
		if writes && !s.BadRKey && len(r.qps[peer].targetFree) == 0 {
			s.Op, writes = verbs.WRSend, false
		}
		if q.typ == verbs.QPTypeRC && r.faults && (s.Op == verbs.WRSend || s.Op == verbs.WRSendWithImm || s.Op == verbs.WRRDMAWriteWithImm || s.Op == verbs.WRSendWithInv) {
			if credit == 0 {
				break // under faults the model does not predict RNR
			}
			credit--
		}
		mtu := r.prof.MTU
		if win != nil && win.n >= 0 {
			s.Len = win.n
		} else if q.typ == verbs.QPTypeUD {
			// Up to the MTU and a little past it (XFER-20).
			s.Len = rapid.OneOf(rapid.IntRange(0, mtu+model.GRHLen), rapid.SampledFrom([]int{mtu - 1, mtu, mtu + 1})).Draw(t, "length")
		} else {
			// Any, small ones and packet boundaries likelier.
			s.Len = rapid.OneOf(rapid.IntRange(0, 16), rapid.IntRange(0, maxMsgLen),
				rapid.SampledFrom([]int{mtu - 1, mtu, mtu + 1, 2 * mtu, 2*mtu + 1})).Draw(t, "length")
		}
		if win != nil {
			win.place(t, &s)
			r.compareNow(t, peer, &s, win.w)
		}
		wr := verbs.SendWR{WRID: id, Opcode: s.Op, Imm: s.Imm}
		if s.Op == verbs.WRSendWithInv {
			wr.Imm = s.RKey
		}
		if s.Signaled {
			wr.Flags = verbs.SendSignaled
		}
		base := int(q.sends%sendRegions) * regionLen
		q.sends++
		sges, b := r.layout(t, q, base, s.Len)
		if s.Op == verbs.WRAtomicCmpAndSwp || s.Op == verbs.WRAtomicFetchAndAdd {
			// One 8-byte SGE (XFER-17).
			b = bufRef{offs: []int{base}, lens: []int{8}}
			sges = []verbs.SGE{{Addr: q.mr.Addr() + uint64(base), Length: 8, LKey: q.mr.LKey()}}
		}
		b.qp = i
		r.write(b, model.Payload(s.Seed, s.Len))
		wr.SGList = sges
		fetches := s.Op == verbs.WRRDMARead || s.Op == verbs.WRAtomicCmpAndSwp || s.Op == verbs.WRAtomicFetchAndAdd
		if fetches {
			r.localAt[id] = b
		}
		if s.Window {
			wr.RKey, wr.RemoteAddr = s.RKey, s.RAddr
			wr.CompareAdd, wr.Swap = s.SwapAdd, 0
			if s.Op == verbs.WRAtomicCmpAndSwp {
				wr.CompareAdd, wr.Swap = s.Compare, s.SwapAdd
			}
		}
		if !fetches && s.Len <= inlineLen && rapid.IntRange(0, 3).Draw(t, "inline") == 0 {
			// QP-35: the payload is copied during the post and the lkeys
			// are not checked; the buffer is scribbled over once the post
			// returns.
			wr.Flags |= verbs.SendInline
			for k := range wr.SGList {
				wr.SGList[k].LKey = 0
			}
			inline = append(inline, b)
		}
		if writes {
			p := r.qps[peer]
			wr.RKey = p.mr.RKey()
			if s.BadRKey {
				wr.RKey ^= 0x80
				wr.RemoteAddr = p.mr.Addr()
			} else {
				region := p.targetFree[0]
				p.targetFree = p.targetFree[1:]
				off := (sendRegions + recvRegions + region) * regionLen
				tb := bufRef{qp: peer, offs: []int{off}, lens: []int{s.Len}, region: region}
				s.Fill = id ^ 0x7a26
				r.write(tb, model.Pattern(s.Fill, s.Len))
				r.targetAt[id] = tb
				wr.RemoteAddr = p.mr.Addr() + uint64(off)
			}
		}
		if q.typ == verbs.QPTypeUD {
			s.Dest = rapid.SampledFrom(uds).Draw(t, "destination")
			dq := r.qps[s.Dest]
			wr.RemoteQPN, s.QKey = dq.q.Num(), dq.qkey
			if rapid.IntRange(0, 7).Draw(t, "wrong qkey") == 0 {
				s.QKey ^= 0x3000
			}
			if rapid.IntRange(0, 15).Draw(t, "no such qp") == 0 {
				s.Dest, wr.RemoteQPN = -1, 0xabcde // XFER-22: no QP has this number
			}
			wr.RemoteQKey = s.QKey
			ah, err := r.ah(i, dq.dev)
			r.fatal(err)
			wr.AH = ah
			x := r.f.Address(dq.dev)
			s.Global, s.SL = x.IsGlobal, x.SL
		}
		to := peer
		if q.typ == verbs.QPTypeUD {
			to = s.Dest
		}
		if to >= 0 {
			in := &r.qps[to].incoming
			*in = append(*in, s.Len)
			if len(*in) > 4 {
				*in = (*in)[1:]
			}
		}
		wrs = append(wrs, wr)
		ss = append(ss, s)
		if s.Op == verbs.WRRDMARead && r.faults {
			// A READ retried under faults reads again, perhaps after
			// later WRITEs of the same stream: post it last, and settle
			// once it is posted, so that it reads what it read the first
			// time.
			break
		}
	}
	if len(wrs) == 0 {
		return
	}
	if r.m.PredictFatal(i, ss) {
		// Let nothing else be in flight when a QP fails (see Unsettled).
		r.settle()
	}
	k := r.postable(t, i, false, len(wrs))
	r.unpostSends(i, wrs[k:])
	wrs, ss = wrs[:k], ss[:k]
	if k == 0 {
		return
	}
	n, err := q.q.PostSend(wrs)
	r.checkPost(i, false, len(wrs), n, err)
	r.unpostSends(i, wrs[n:])
	for _, b := range inline {
		r.write(b, bytes.Repeat([]byte{0xee}, regionLen))
	}
	r.step("qp %d: post %d sends %+v: %d accepted", i, len(ss), ss, n)
	r.fatal(r.m.PostSend(i, ss[:n]))
	if r.faults && n > 0 && ss[n-1].Op == verbs.WRRDMARead {
		r.settle()
	}
	r.settleIfNeeded()
}

// ah returns an AH of QP i's PD to device dev.
func (r *trafficRun) ah(i, dev int) (verbs.AH, error) {
	q := r.qps[i]
	if ah, ok := q.ahs[dev]; ok {
		return ah, nil
	}
	ah, err := q.pd.CreateAH(r.f.Address(dev))
	if err == nil {
		q.ahs[dev] = ah
	}
	return ah, err
}
