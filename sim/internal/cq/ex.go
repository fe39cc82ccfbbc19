package cq

import (
	"fmt"
	"math/bits"
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// This file is the extended CQ of ibv_create_cq_ex: its creation attributes
// and the poll iterator (ibv_start_poll, ibv_next_poll, ibv_end_poll and the
// ibv_wc_read_* accessors). An extended CQ is the same *CQ as any other, so
// every CQ, NOTIFY and CHAN rule holds for it; docs/cq.md has a walkthrough
// and spec/catalogue.md §17 the CQX rules.

// SupportedWCFlags returns the wc_flags a CQ made from cfg may ask for:
// WCStandardFlags, and the two timestamps when cfg has a Clock and a
// ClockKHz (CQX-02). CVLAN, flow tags and tag matching are never supported.
func (cfg Config) SupportedWCFlags() verbs.WCExFlags {
	f := verbs.WCStandardFlags
	if cfg.Clock != nil && cfg.ClockKHz > 0 {
		f |= verbs.WCExCompletionTimestamp | verbs.WCExCompletionTimestampWallclock
	}
	return f
}

// WCFlags returns the wc_flags the CQ was created with.
func (c *CQ) WCFlags() verbs.WCExFlags {
	if c == nil {
		return 0
	}
	c.enter(verbRead)
	defer c.leave()
	return c.cfg.WCFlags
}

// Errors of the poll iterator, made once so that the poll path allocates
// nothing.
var (
	errStartEmpty = verr.New(verbStartPoll, syscall.ENOENT, "the CQ is empty (CQX-04)")
	errNextEmpty  = verr.New(verbNextPoll, syscall.ENOENT, "no more completions in this batch (CQX-05)")
	errStartTwice = verr.New(verbStartPoll, syscall.EINVAL, "a batch is already open: call ibv_end_poll first (CQX-06)")
	errNextNoOpen = verr.New(verbNextPoll, syscall.EINVAL, "no batch is open: call ibv_start_poll first (CQX-06)")
	errEndNoOpen  = verr.New(verbEndPoll, syscall.EINVAL, "no batch is open: ibv_start_poll failed or was not called (CQX-06)")
	errNoCurrent  = verr.New("ibv_wc_read", syscall.EINVAL, "no current completion: no batch is open, or next_poll reached the end (CQX-07)")
	errNotAsked   = verr.New("ibv_wc_read", syscall.EINVAL, "the field was not requested in wc_flags at creation (CQX-03)")
	errBatchOpenP = verr.New(verbPoll, syscall.EBUSY, "an ibv_start_poll batch is open on the CQ (CQX-06)")
	errBatchOpenR = verr.New(verbResize, syscall.EBUSY, "an ibv_start_poll batch is open on the CQ (CQX-06)")
	errStartEIO   = verr.New(verbStartPoll, syscall.EIO, "the CQ overran and is in its error state (CQ-23)")
	errNextEIO    = verr.New(verbNextPoll, syscall.EIO, "the CQ overran and is in its error state (CQ-23)")
)

// StartPoll opens a batch of completions (ibv_start_poll) and points the
// iterator at the oldest one, whose wr_id and status it stores in c.WRID
// and c.Status; the Read methods return its other fields. On an empty CQ it
// returns ENOENT and opens nothing (CQX-04): do not call EndPoll then.
//
// While the batch is open the completions it has passed stay in the CQ and
// count against its capacity; EndPoll consumes them all at once (CQX-08).
// The work-queue slots of a completion are freed as soon as the iterator
// reaches it, as mlx5 frees them.
// Completions added during the batch are seen by NextPoll. Calling StartPoll
// again before EndPoll is EINVAL and changes nothing (CQX-06); so is any
// iterator call on a destroyed CQ.
//
// On a CQ in its error state after an overrun (CQ-23 A) the stored
// completions are still returned; where ENOENT would say the CQ is empty,
// EIO says it overran.
//
// StartPoll allocates nothing.
func (c *CQ) StartPoll() error {
	if c == nil {
		return errNil(verbStartPoll)
	}
	c.enter(verbStartPoll)
	defer c.leave()
	if c.state != live {
		err := errDestroyed(verbStartPoll)
		c.traceVerbLocked("start_poll", "", err)
		return err
	}
	if c.batch {
		c.traceVerbLocked("start_poll", "", errStartTwice)
		return errStartTwice
	}
	c.syncLocked()
	if c.n == 0 {
		err := errStartEmpty
		if c.overrun {
			err = errStartEIO
		}
		if c.d.Tracing() && (!c.quiet || c.overrun) {
			c.traceVerbLocked("start_poll", "empty", err)
			c.quiet = true
		}
		return err
	}
	c.batch, c.cur, c.end = true, 0, false
	c.setCurrentLocked()
	if c.d.Tracing() {
		c.traceVerbLocked("start_poll", fmt.Sprintf("wr_id %d %s, %d in the CQ", c.WRID, c.Status.Name(), c.n), nil)
	}
	return nil
}

// NextPoll moves the iterator to the next completion (ibv_next_poll) and
// stores its wr_id and status in c.WRID and c.Status. When there is none it
// returns ENOENT (EIO on a CQ in its overrun error state) and the batch
// stays open: call EndPoll still (CQX-05). Without an open batch it is
// EINVAL (CQX-06). NextPoll allocates nothing.
func (c *CQ) NextPoll() error {
	if c == nil {
		return errNil(verbNextPoll)
	}
	c.enter(verbNextPoll)
	defer c.leave()
	if c.state != live {
		err := errDestroyed(verbNextPoll)
		c.traceVerbLocked("next_poll", "", err)
		return err
	}
	if !c.batch {
		c.traceVerbLocked("next_poll", "", errNextNoOpen)
		return errNextNoOpen
	}
	if !c.end {
		c.cur++
	}
	if c.cur >= c.n {
		// Past the last completion; one added later is the next.
		c.cur, c.end = c.n, true
		c.readable.Store(false)
		if c.overrun {
			return errNextEIO
		}
		return errNextEmpty
	}
	c.end = false
	c.setCurrentLocked()
	return nil
}

// EndPoll closes the batch (ibv_end_poll): every completion the iterator
// has pointed at is consumed, as Poll would have consumed it, and the CQ may
// be polled again either way (CQX-08). Without an open batch (StartPoll
// failed or was not called) it is EINVAL (CQX-06); libibverbs' ibv_end_poll
// returns nothing, and providers would unlock a lock they do not hold.
// EndPoll allocates nothing.
func (c *CQ) EndPoll() error {
	if c == nil {
		return errNil(verbEndPoll)
	}
	c.enter(verbEndPoll)
	defer c.leave()
	if c.state != live {
		err := errDestroyed(verbEndPoll)
		c.traceVerbLocked("end_poll", "", err)
		return err
	}
	if !c.batch {
		c.traceVerbLocked("end_poll", "", errEndNoOpen)
		return errEndNoOpen
	}
	n := c.cur
	if !c.end {
		n++
	}
	for range n {
		c.popLocked()
	}
	c.batch, c.cur, c.end = false, 0, false
	c.readable.Store(false)
	c.WRID, c.Status = 0, 0
	if c.d.Tracing() {
		c.traceVerbLocked("end_poll", fmt.Sprintf("%d completion(s) consumed, %d left", n, c.n), nil)
	}
	return nil
}

// Current returns the wr_id and status of the completion the iterator
// points at, as c.WRID and c.Status do, but under the lock and with EINVAL
// when there is none (CQX-07). It allocates nothing.
func (c *CQ) Current() (wrID uint64, status verbs.WCStatus, err error) {
	if c == nil {
		return 0, 0, errNoCurrent
	}
	c.enter(verbRead)
	defer c.leave()
	if c.state != live || !c.batch || c.end {
		return 0, 0, errNoCurrent
	}
	return c.curWC.WRID, c.curWC.Status, nil
}

// setCurrentLocked publishes the current completion's wr_id and status, and
// frees the work-queue slots it covers (QP-29 reading A): mlx5 moves its
// queue's tail as it parses the CQE in start_poll and next_poll, so a
// program may post from inside a batch (ibv_rc_pingpong -t does), while the
// CQ slot stays taken until end_poll (CQX-08).
func (c *CQ) setCurrentLocked() {
	e := &c.ring[c.slot(c.cur)]
	if e.r != nil {
		e.r.RetireLocked(e.seq)
		e.r = nil
	}
	c.WRID, c.Status = e.w.WRID, e.w.Status
	c.curWC, c.curNS = e.w, e.ns
	c.readable.Store(true)
}

// current returns the completion the iterator points at, or an error if
// there is none or need is not in wc_flags. It takes no lock: it reads the
// copy the iterator made (a read, like ibv_wc_read_*, belongs to the
// goroutine running the batch); with a scheduler attached it is still a
// scheduling point.
func (c *CQ) current(need verbs.WCExFlags) (*verbs.WC, error) {
	c.d.Yield(domain.Op{Verb: verbRead, Obj: c})
	if !c.readable.Load() {
		return nil, errNoCurrent
	}
	if c.cfg.WCFlags&need != need {
		return nil, errNotAsked
	}
	return &c.curWC, nil
}

// slot returns the ring index of the i-th unpolled completion.
func (c *CQ) slot(i int) int {
	s := c.head + i
	if s >= len(c.ring) {
		s -= len(c.ring)
	}
	return s
}

// popLocked removes the oldest completion, telling its retirer.
func (c *CQ) popLocked() {
	e := &c.ring[c.head]
	if e.r != nil {
		e.r.RetireLocked(e.seq)
	}
	e.r = nil // the stale rest of the entry holds no pointer
	c.head++
	if c.head == len(c.ring) {
		c.head = 0
	}
	c.n--
	c.stats.Polled++
}

// The Read methods return a field of the current completion
// (ibv_wc_read_*). Outside a batch, after NextPoll reached the end, or on a
// destroyed CQ they return the zero value and EINVAL (CQX-07); a field whose
// bit was not in wc_flags at creation returns the zero value and EINVAL too,
// where libibverbs calls through a NULL pointer (CQX-03). As with ibv_wc, a
// field means something only for the statuses and opcodes WC-03 and its
// siblings name. None of them allocates.

// ReadOpcode is ibv_wc_read_opcode; always available.
func (c *CQ) ReadOpcode() (verbs.WCOpcode, error) {
	if c == nil {
		return 0, errNoCurrent
	}
	w, err := c.current(0)
	if err != nil {
		return 0, err
	}
	return w.Opcode, nil
}

// ReadVendorErr is ibv_wc_read_vendor_err; always available.
func (c *CQ) ReadVendorErr() (uint32, error) {
	if c == nil {
		return 0, errNoCurrent
	}
	w, err := c.current(0)
	if err != nil {
		return 0, err
	}
	return w.VendorErr, nil
}

// ReadWCFlags is ibv_wc_read_wc_flags; always available.
func (c *CQ) ReadWCFlags() (verbs.WCFlags, error) {
	if c == nil {
		return 0, errNoCurrent
	}
	w, err := c.current(0)
	if err != nil {
		return 0, err
	}
	return w.WCFlags, nil
}

// ReadByteLen is ibv_wc_read_byte_len; needs WCExByteLen.
func (c *CQ) ReadByteLen() (uint32, error) { return c.read32(verbs.WCExByteLen) }

// ReadImmData is ibv_wc_read_imm_data; needs WCExImm. The value is opaque
// (a __be32 in C), as verbs.WC.ImmData.
func (c *CQ) ReadImmData() (uint32, error) { return c.read32(verbs.WCExImm) }

// ReadInvalidatedRkey is ibv_wc_read_invalidated_rkey; needs WCExImm, since
// invalidated_rkey shares its storage with imm_data (as in mlx5).
func (c *CQ) ReadInvalidatedRkey() (uint32, error) { return c.read32(verbs.WCExImm) }

// ReadQPNum is ibv_wc_read_qp_num; needs WCExQPNum.
func (c *CQ) ReadQPNum() (uint32, error) { return c.read32(verbs.WCExQPNum) }

// ReadSrcQP is ibv_wc_read_src_qp; needs WCExSrcQP.
func (c *CQ) ReadSrcQP() (uint32, error) { return c.read32(verbs.WCExSrcQP) }

// ReadSLID is ibv_wc_read_slid; needs WCExSLID.
func (c *CQ) ReadSLID() (uint32, error) { return c.read32(verbs.WCExSLID) }

// ReadSL is ibv_wc_read_sl; needs WCExSL.
func (c *CQ) ReadSL() (uint8, error) {
	v, err := c.read32(verbs.WCExSL)
	return uint8(v), err
}

// ReadDLIDPathBits is ibv_wc_read_dlid_path_bits; needs WCExDLIDPathBits.
func (c *CQ) ReadDLIDPathBits() (uint8, error) {
	v, err := c.read32(verbs.WCExDLIDPathBits)
	return uint8(v), err
}

// read32 returns the field of the current completion that flag f guards.
func (c *CQ) read32(f verbs.WCExFlags) (uint32, error) {
	if c == nil {
		return 0, errNoCurrent
	}
	w, err := c.current(f)
	if err != nil {
		return 0, err
	}
	switch f {
	case verbs.WCExByteLen:
		return w.ByteLen, nil
	case verbs.WCExImm:
		return w.ImmData, nil
	case verbs.WCExQPNum:
		return w.QPNum, nil
	case verbs.WCExSrcQP:
		return w.SrcQP, nil
	case verbs.WCExSLID:
		return uint32(w.SLID), nil
	case verbs.WCExSL:
		return uint32(w.SL), nil
	default: // WCExDLIDPathBits
		return uint32(w.DLIDPathBits), nil
	}
}

// ReadCompletionTS is ibv_wc_read_completion_ts; needs
// WCExCompletionTimestamp. It is the virtual time at which the completion
// was stored in the CQ, in HCA clock cycles: nanoseconds times
// Config.ClockKHz / 10^6 (CQX-09). With package sim's default clock of
// 1 GHz it is the tick itself.
func (c *CQ) ReadCompletionTS() (uint64, error) {
	if c == nil {
		return 0, errNoCurrent
	}
	if _, err := c.current(verbs.WCExCompletionTimestamp); err != nil {
		return 0, err
	}
	return cycles(c.curNS, c.cfg.ClockKHz), nil
}

// ReadCompletionWallclockNS is ibv_wc_read_completion_wallclock_ns; needs
// WCExCompletionTimestampWallclock. It is the virtual time at which the
// completion was stored, in nanoseconds (CQX-09).
func (c *CQ) ReadCompletionWallclockNS() (uint64, error) {
	if c == nil {
		return 0, errNoCurrent
	}
	if _, err := c.current(verbs.WCExCompletionTimestampWallclock); err != nil {
		return 0, err
	}
	return c.curNS, nil
}

// cycles converts ns nanoseconds into cycles of a khz clock, saturating.
func cycles(ns, khz uint64) uint64 {
	hi, lo := bits.Mul64(ns, khz)
	if hi >= 1e6 {
		return ^uint64(0)
	}
	q, _ := bits.Div64(hi, lo, 1e6)
	return q
}
