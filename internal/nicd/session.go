//go:build linux

package nicd

import (
	"context"
	"sort"
	"sync"
	"syscall"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/verr"
)

// The order in which a context's leftovers are destroyed: QPs first, as
// the kernel tears down a closed verbs descriptor.
const (
	rankQP = iota
	rankSRQ
	rankMR // MRs, MWs and AHs
	rankDM // device memory, once its MRs are gone (DM-05)
	rankCQ
	rankChannel
	rankPD
	rankXRCD
	rankContext
)

// entry is one object of a session: the record behind a handle, the
// context it was made through and how to destroy it.
type entry struct {
	v       any
	ctx     *ctxObj
	rank    int
	destroy func(c context.Context) error
}

// session is one program: every object it made, which only its
// connections can name, and the memory its MRs cover.
type session struct {
	srv    *Server
	id     uint64
	token  uint64
	pid    int
	mem    *procMem
	ctx    context.Context // ends with the session
	cancel context.CancelFunc

	mu    sync.Mutex
	objs  map[uint64]entry
	next  uint64
	cptrs map[any]uint64 // the engine's CQs, QPs and SRQs to the program's structs, for events
	qps   map[qpKey]bool // its live QPs, for VERBSIM_DIE_AFTER
	// faults are the packet faults armed for the session, removed when
	// it ends.
	faults []*sim.Fault
	once   sync.Once
}

func newSession(s *Server, pid int, mem *procMem, token uint64) *session {
	se := &session{srv: s, pid: pid, mem: mem, token: token, objs: map[uint64]entry{}, cptrs: map[any]uint64{},
		qps: map[qpKey]bool{}}
	se.ctx, se.cancel = context.WithCancel(context.Background())
	// Handles start high and never repeat, so a handle of a destroyed
	// object (or garbage) names nothing: EINVAL, never another object.
	se.next = 0x5000_0000
	return se
}

// add records v, made through ctx, and returns its handle.
func (se *session) add(ctx *ctxObj, rank int, v any, destroy func(context.Context) error) uint64 {
	se.mu.Lock()
	defer se.mu.Unlock()
	se.next++
	se.objs[se.next] = entry{v: v, ctx: ctx, rank: rank, destroy: destroy}
	return se.next
}

// drop forgets handle h.
func (se *session) drop(h uint64) {
	se.mu.Lock()
	delete(se.objs, h)
	se.mu.Unlock()
}

// get returns the record of type T behind h, or nil: a handle that names
// nothing of this session, or something else, is EINVAL for the verb.
func get[T any](se *session, h uint64) *T {
	se.mu.Lock()
	defer se.mu.Unlock()
	v, _ := se.objs[h].v.(*T)
	return v
}

// einval is the error of a request that names no live object of its kind.
func einval(verb string) error {
	return verr.New(verb, syscall.EINVAL, "no such object (destroyed, or never made by this process)")
}

// setCptr records the program's struct for an engine object, for events
// (0 forgets it).
func (se *session) setCptr(obj any, p uint64) {
	se.mu.Lock()
	if p == 0 {
		delete(se.cptrs, obj)
	} else {
		se.cptrs[obj] = p
	}
	se.mu.Unlock()
}

func (se *session) cptrOf(obj any) uint64 {
	se.mu.Lock()
	defer se.mu.Unlock()
	return se.cptrs[obj]
}

// syncCQs tells the engine what the program polled from every CQ ring of
// the session.
func (se *session) syncCQs() {
	se.mu.Lock()
	var qs []*cqObj
	for _, e := range se.objs {
		if q, ok := e.v.(*cqObj); ok {
			qs = append(qs, q)
		}
	}
	se.mu.Unlock()
	for _, q := range qs {
		q.sync()
	}
}

// orphans destroys what is left of ctx's objects, in dependency order, as
// the kernel does when a program closes its device descriptor: libibverbs'
// ibv_close_device succeeds whatever is left (perftest's ib_send_bw client
// leaves its receive CQ), and a program that dies leaves everything.
func (se *session) orphans(ctx *ctxObj, c context.Context) {
	se.mu.Lock()
	var hs []uint64
	for h, e := range se.objs {
		if e.ctx == ctx && e.rank != rankContext {
			hs = append(hs, h)
		}
	}
	sort.Slice(hs, func(i, j int) bool {
		a, b := se.objs[hs[i]], se.objs[hs[j]]
		if a.rank != b.rank {
			return a.rank < b.rank
		}
		return hs[i] < hs[j]
	})
	es := make([]entry, len(hs))
	for i, h := range hs {
		es[i] = se.objs[h]
	}
	se.mu.Unlock()
	for i, e := range es {
		if err := e.destroy(c); err != nil {
			se.srv.logf("pid %d: tearing down a leftover object: %v", se.pid, err)
		}
		se.drop(hs[i])
	}
}

// end ends the session: its connections close, and every context it left
// open is torn down.
func (se *session) end() {
	se.once.Do(func() {
		se.cancel()
		se.mu.Lock()
		var hs []uint64
		for h, e := range se.objs {
			if e.rank == rankContext {
				hs = append(hs, h)
			}
		}
		se.mu.Unlock()
		sort.Slice(hs, func(i, j int) bool { return hs[i] < hs[j] })
		for _, h := range hs {
			se.mu.Lock()
			e, ok := se.objs[h]
			se.mu.Unlock()
			if ok {
				if err := e.destroy(context.Background()); err != nil {
					se.srv.logf("pid %d: closing a context it left: %v", se.pid, err)
				}
				se.drop(h)
			}
		}
		se.mu.Lock()
		faults := se.faults
		se.faults = nil
		se.mu.Unlock()
		for _, f := range faults {
			f.Remove()
		}
		if n := se.mem.faults.Load(); n > 0 {
			first := ""
			if p := se.mem.first.Load(); p != nil {
				first = "; the first: " + *p
			}
			se.srv.logf("pid %d: %d accesses to memory it had unmapped (read as zeros, writes lost)%s", se.pid, n, first)
		}
		se.srv.logf("pid %d left (session %d)", se.pid, se.id)
		se.srv.gone(se)
	})
}
