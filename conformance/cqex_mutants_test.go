package conformance_test

import (
	"errors"
	"syscall"

	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// cqxHooks break extended CQs: create rewrites ibv_create_cq_ex, iter
// replaces a CQ's poll iterator.
type cqxHooks struct {
	create func(c verbs.Context, attr verbs.CQInitAttrEx) (verbs.ExCQ, error)
	iter   func(inner verbs.ExCQ) verbs.ExCQ
}

// CreateCQEx implements verbs.ExCQCreator.
func (c *mContext) CreateCQEx(attr verbs.CQInitAttrEx) (verbs.ExCQ, error) {
	if attr.Channel != nil {
		attr.Channel = attr.Channel.(*mChannel).inner
	}
	cr := c.inner.(verbs.ExCQCreator)
	var q verbs.ExCQ
	var err error
	if h := c.h.cqx; h != nil && h.create != nil {
		q, err = h.create(c.inner, attr)
	} else {
		q, err = cr.CreateCQEx(attr)
	}
	if err != nil {
		return nil, err
	}
	return c.wrapCQ(q).(*mCQ), nil
}

// iterator returns the poll iterator of q: the inner CQ's, or the mutant's.
func (q *mCQ) iterator() verbs.ExCQ {
	if q.ex == nil {
		q.ex = q.inner.(verbs.ExCQ)
		if h := q.h.cqx; h != nil && h.iter != nil {
			q.ex = h.iter(q.ex)
		}
	}
	return q.ex
}

func (q *mCQ) StartPoll() error { return q.iterator().StartPoll() }
func (q *mCQ) NextPoll() error  { return q.iterator().NextPoll() }
func (q *mCQ) EndPoll() error   { return q.iterator().EndPoll() }
func (q *mCQ) Current() (uint64, verbs.WCStatus, error) {
	return q.iterator().Current()
}
func (q *mCQ) ReadOpcode() (verbs.WCOpcode, error) { return q.iterator().ReadOpcode() }
func (q *mCQ) ReadVendorErr() (uint32, error)      { return q.iterator().ReadVendorErr() }
func (q *mCQ) ReadWCFlags() (verbs.WCFlags, error) { return q.iterator().ReadWCFlags() }
func (q *mCQ) ReadByteLen() (uint32, error)        { return q.iterator().ReadByteLen() }
func (q *mCQ) ReadImmData() (uint32, error)        { return q.iterator().ReadImmData() }
func (q *mCQ) ReadQPNum() (uint32, error)          { return q.iterator().ReadQPNum() }
func (q *mCQ) ReadSrcQP() (uint32, error)          { return q.iterator().ReadSrcQP() }
func (q *mCQ) ReadInvalidatedRkey() (uint32, error) {
	return q.iterator().ReadInvalidatedRkey()
}
func (q *mCQ) ReadSLID() (uint32, error)         { return q.iterator().ReadSLID() }
func (q *mCQ) ReadSL() (uint8, error)            { return q.iterator().ReadSL() }
func (q *mCQ) ReadDLIDPathBits() (uint8, error)  { return q.iterator().ReadDLIDPathBits() }
func (q *mCQ) ReadCompletionTS() (uint64, error) { return q.iterator().ReadCompletionTS() }
func (q *mCQ) ReadCompletionWallclockNS() (uint64, error) {
	return q.iterator().ReadCompletionWallclockNS()
}

// lax reads every field whatever wc_flags asked for, and outside batches
// returns zero with no error: the providers' undefined behaviour, unreported.
type lax struct{ verbs.ExCQ }

func laxU32(v uint32, err error) (uint32, error) {
	if errors.Is(err, syscall.EINVAL) {
		return 0, nil
	}
	return v, err
}

func (l lax) ReadByteLen() (uint32, error) { return laxU32(l.ExCQ.ReadByteLen()) }
func (l lax) ReadImmData() (uint32, error) { return laxU32(l.ExCQ.ReadImmData()) }
func (l lax) ReadSrcQP() (uint32, error)   { return laxU32(l.ExCQ.ReadSrcQP()) }
func (l lax) ReadOpcode() (verbs.WCOpcode, error) {
	v, err := l.ExCQ.ReadOpcode()
	if errors.Is(err, syscall.EINVAL) {
		return 0, nil
	}
	return v, err
}
func (l lax) Current() (uint64, verbs.WCStatus, error) {
	id, st, err := l.ExCQ.Current()
	if errors.Is(err, syscall.EINVAL) {
		return 0, 0, nil
	}
	return id, st, err
}

// pollIter is an iterator built on ibv_poll_cq: each step polls one
// completion out at once, so nothing waits for end_poll and poll_cq works
// inside a batch.
type pollIter struct {
	verbs.ExCQ
	cur  verbs.WC
	open bool
}

func (p *pollIter) step(verb string) error {
	buf := make([]verbs.WC, 1)
	n, err := p.ExCQ.Poll(buf)
	if err != nil {
		return err
	}
	if n == 0 {
		return verr.New(verb, syscall.ENOENT, "mutant: empty")
	}
	p.cur = buf[0]
	return nil
}

func (p *pollIter) StartPoll() error {
	if err := p.step("ibv_start_poll"); err != nil {
		return err
	}
	p.open = true
	return nil
}

func (p *pollIter) NextPoll() error {
	if !p.open {
		return verr.New("ibv_next_poll", syscall.EINVAL, "mutant: no batch")
	}
	return p.step("ibv_next_poll")
}

func (p *pollIter) EndPoll() error {
	if !p.open {
		return verr.New("ibv_end_poll", syscall.EINVAL, "mutant: no batch")
	}
	p.open = false
	return nil
}

func (p *pollIter) Current() (uint64, verbs.WCStatus, error) { return p.cur.WRID, p.cur.Status, nil }
func (p *pollIter) ReadOpcode() (verbs.WCOpcode, error)      { return p.cur.Opcode, nil }
func (p *pollIter) ReadByteLen() (uint32, error)             { return p.cur.ByteLen, nil }

// cqexMutants returns the mutants of the CQEX family.
func cqexMutants() []mutant {
	create := func(f func(*verbs.CQInitAttrEx)) *cqxHooks {
		return &cqxHooks{create: func(c verbs.Context, attr verbs.CQInitAttrEx) (verbs.ExCQ, error) {
			f(&attr)
			return c.(verbs.ExCQCreator).CreateCQEx(attr)
		}}
	}
	iter := func(f func(verbs.ExCQ) verbs.ExCQ) *cqxHooks { return &cqxHooks{iter: f} }
	return []mutant{
		{
			name:  "cq_ex: unsupported wc_flags accepted",
			rules: []string{"CQX-02"},
			h: hooks{cqx: create(func(a *verbs.CQInitAttrEx) {
				a.WCFlags &= verbs.WCStandardFlags | verbs.WCExCompletionTimestamp | verbs.WCExCompletionTimestampWallclock
			})},
		},
		{
			name:  "cq_ex: comp_mask and flags not checked",
			rules: []string{"CQX-01"},
			h: hooks{cqx: create(func(a *verbs.CQInitAttrEx) {
				a.CompMask &= verbs.CQInitAttrMaskFlags
				a.Flags &= verbs.CQCreateSingleThreaded | verbs.CQCreateIgnoreOverrun
			})},
		},
		{
			name:  "cq_ex: IGNORE_OVERRUN dropped",
			rules: []string{"CQX-01"},
			h:     hooks{cqx: create(func(a *verbs.CQInitAttrEx) { a.Flags &^= verbs.CQCreateIgnoreOverrun })},
		},
		{
			name:  "cq_ex: cq_context dropped",
			rules: []string{"CQX-10"},
			h:     hooks{cqx: create(func(a *verbs.CQInitAttrEx) { a.Context = nil })},
		},
		{
			name:  "cq_ex: fields readable whatever wc_flags and outside batches",
			rules: []string{"CQX-03", "CQX-07"},
			h:     hooks{cqx: iter(func(x verbs.ExCQ) verbs.ExCQ { return lax{x} })},
		},
		{
			name:  "cq_ex: iterator built on poll_cq",
			rules: []string{"CQX-06", "CQX-08"},
			h:     hooks{cqx: iter(func(x verbs.ExCQ) verbs.ExCQ { return &pollIter{ExCQ: x} })},
		},
		{
			name:  "cq_ex: start_poll on an empty CQ succeeds",
			rules: []string{"CQX-04"},
			h: hooks{cqx: iter(func(x verbs.ExCQ) verbs.ExCQ {
				return startOK{x}
			})},
		},
		{
			name:  "cq_ex: next_poll skips a completion",
			rules: []string{"CQX-05"},
			h: hooks{cqx: iter(func(x verbs.ExCQ) verbs.ExCQ {
				return skipNext{x}
			})},
		},
		{
			name:  "cq_ex: second start_poll accepted",
			rules: []string{"CQX-06"},
			h: hooks{cqx: iter(func(x verbs.ExCQ) verbs.ExCQ {
				return restart{x}
			})},
		},
		{
			name:  "cq_ex: wallclock in microseconds",
			rules: []string{"CQX-09"},
			h: hooks{cqx: iter(func(x verbs.ExCQ) verbs.ExCQ {
				return microWall{x}
			})},
		},
	}
}

// startOK hides start_poll's ENOENT.
type startOK struct{ verbs.ExCQ }

func (s startOK) StartPoll() error {
	if err := s.ExCQ.StartPoll(); !errors.Is(err, syscall.ENOENT) {
		return err
	}
	return nil
}

// skipNext moves two completions per next_poll.
type skipNext struct{ verbs.ExCQ }

func (s skipNext) NextPoll() error {
	if err := s.ExCQ.NextPoll(); err != nil {
		return err
	}
	return s.ExCQ.NextPoll()
}

// restart accepts start_poll inside a batch.
type restart struct{ verbs.ExCQ }

func (r restart) StartPoll() error {
	if err := r.ExCQ.StartPoll(); !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}

// microWall reports the wallclock timestamp in microseconds.
type microWall struct{ verbs.ExCQ }

func (m microWall) ReadCompletionWallclockNS() (uint64, error) {
	v, err := m.ExCQ.ReadCompletionWallclockNS()
	return v / 1000, err
}

// hideEIO reports the end of an overrun CQ as ENOENT.
type hideEIO struct{ verbs.ExCQ }

func (h hideEIO) StartPoll() error { return noEIO(h.ExCQ.StartPoll()) }
func (h hideEIO) NextPoll() error  { return noEIO(h.ExCQ.NextPoll()) }

func noEIO(err error) error {
	if errors.Is(err, syscall.EIO) {
		return verr.New("ibv_next_poll", syscall.ENOENT, "mutant: overrun hidden")
	}
	return err
}
