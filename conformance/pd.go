package conformance

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"syscall"

	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// Cases of the PD family: protection domains and what belongs to them. Only
// the rules that need no traffic are here; PD-04 (a UD work request whose AH
// is of another PD) waits for the transport.

// pdAHAttr is a path every port accepts: global, so that it also suits an
// Ethernet (RoCE) port, from GID index 0, which is always populated.
var pdAHAttr = verbs.AHAttr{PortNum: 1, DLID: 1, IsGlobal: true, GRH: verbs.GlobalRoute{DGID: [16]byte{0: 0xfe, 1: 0x80, 15: 1}, HopLimit: 64}}

// pdAlloc allocates a PD on e's context or fails the case; the PD is
// deallocated when the case ends, after the objects created in it.
func (e *env) pdAlloc() verbs.PD {
	e.T.Helper()
	pd, err := e.Ctx.AllocPD()
	if err != nil {
		e.T.Fatalf("ibv_alloc_pd: %v", err)
	}
	if pd == nil {
		e.T.Fatalf("ibv_alloc_pd returned neither a PD nor an error")
	}
	e.T.Cleanup(func() { _ = pd.Dealloc() })
	return pd
}

// mrReg registers buf in pd or fails the case; the MR is deregistered when
// the case ends.
func (e *env) mrReg(pd verbs.PD, buf []byte, access uint32) verbs.MR {
	e.T.Helper()
	mr, err := pd.RegMR(buf, verbs.AccessFlags(access))
	if err != nil {
		e.T.Fatalf("ibv_reg_mr(len=%d, access=%#x): %v", len(buf), access, err)
	}
	if mr == nil {
		e.T.Fatalf("ibv_reg_mr returned neither an MR nor an error")
	}
	e.T.Cleanup(func() { _ = mr.Dereg() })
	return mr
}

// ahCreate creates an AH with pdAHAttr in pd or fails the case; the AH is
// destroyed when the case ends.
func (e *env) ahCreate(pd verbs.PD) verbs.AH {
	e.T.Helper()
	ah, err := pd.CreateAH(pdAHAttr)
	if err != nil {
		e.T.Fatalf("ibv_create_ah: %v", err)
	}
	if ah == nil {
		e.T.Fatalf("ibv_create_ah returned neither an AH nor an error")
	}
	e.T.Cleanup(func() { _ = ah.Destroy() })
	return ah
}

// pdCases are the cases of the PD family in pd.go.
var pdCases = []Case{
	{"PD-01", "alloc returns a PD, or no PD and an errno", allocPD},
	{"PD-02", "dealloc is EBUSY while an MR or AH belongs to the PD", deallocPDWhileUsed},
	{"PD-03", "an MR or AH pins its own PD and no other", pinsOwnPD},
	{"PD-05", "teardown in random orders: only order violations fail, with EBUSY", teardownOrders},
}

func allocPD(t *tester, e *env) {
	var pds []verbs.PD
	for i := range 4 {
		pd, err := e.Ctx.AllocPD()
		if err != nil || pd == nil {
			t.Fatalf("ibv_alloc_pd #%d: pd=%v err=%v, want a PD", i, pd, err)
		}
		for j, o := range pds {
			if o == pd {
				t.Errorf("ibv_alloc_pd #%d returned the PD of call #%d", i, j)
			}
		}
		pds = append(pds, pd)
	}
	for i, pd := range pds {
		e.WantOK(fmt.Sprintf("ibv_dealloc_pd #%d", i), pd.Dealloc())
	}
	for i, pd := range pds {
		e.WantErrno(fmt.Sprintf("ibv_dealloc_pd #%d again", i), pd.Dealloc(), syscall.EINVAL)
	}

	// Failure: max_pd is device-wide and returns no PD with ENOMEM.
	small := cqLimitedEnv(t, e, Limits{MaxPD: 2})
	if small == nil {
		t.Logf("no LimitedDevice: the failure path of ibv_alloc_pd is not checked")
		return
	}
	if got := small.Limits().MaxPD; got != 2 {
		t.Fatalf("a device made WithLimits(MaxPD: 2) reports max_pd=%d", got)
	}
	a := small.pdAlloc()
	other, err := small.Dev.Open()
	if err != nil {
		t.Fatalf("opening a second context: %v", err)
	}
	defer other.Close()
	b, err := other.AllocPD()
	if err != nil || b == nil {
		t.Fatalf("second PD (max_pd=2), on another context: pd=%v err=%v", b, err)
	}
	for _, c := range []verbs.Context{small.Ctx, other} {
		pd, err := c.AllocPD()
		if pd != nil {
			_ = pd.Dealloc()
			t.Errorf("ibv_alloc_pd beyond max_pd=2 returned a PD (err=%v); the limit is for the whole device", err)
		}
		e.WantErrno("ibv_alloc_pd beyond max_pd", err, syscall.ENOMEM)
	}
	e.WantOK("ibv_dealloc_pd", a.Dealloc())
	c, err := small.Ctx.AllocPD()
	if err != nil || c == nil {
		t.Fatalf("ibv_alloc_pd after a dealloc freed a slot: pd=%v err=%v", c, err)
	}
	e.WantOK("ibv_dealloc_pd", c.Dealloc())
	e.WantOK("ibv_dealloc_pd", b.Dealloc())
}

func deallocPDWhileUsed(t *tester, e *env) {
	pd := e.pdAlloc()
	buf := make([]byte, 256)
	mr := e.mrReg(pd, buf, accessLocalWrite)
	lkey, rkey := mr.LKey(), mr.RKey()
	e.WantErrno("ibv_dealloc_pd with a live MR", pd.Dealloc(), syscall.EBUSY)
	// Nothing changed: the MR keeps its keys, the PD still takes objects.
	if mr.LKey() != lkey || mr.RKey() != rkey {
		t.Errorf("a refused ibv_dealloc_pd changed the MR's keys")
	}
	mr2 := e.mrReg(pd, make([]byte, 64), 0)
	ah := e.ahCreate(pd)
	e.WantOK("ibv_dereg_mr", mr.Dereg())
	e.WantErrno("ibv_dealloc_pd with a live MR and AH", pd.Dealloc(), syscall.EBUSY)
	e.WantOK("ibv_dereg_mr", mr2.Dereg())
	e.WantErrno("ibv_dealloc_pd with a live AH", pd.Dealloc(), syscall.EBUSY)
	e.WantOK("ibv_destroy_ah", ah.Destroy())
	e.WantOK("ibv_dealloc_pd once its MRs and AH are gone", pd.Dealloc())
	e.WantErrno("ibv_dereg_mr twice", mr.Dereg(), syscall.EINVAL)
	e.WantErrno("ibv_destroy_ah twice", ah.Destroy(), syscall.EINVAL)
}

func pinsOwnPD(t *tester, e *env) {
	a, b, c := e.pdAlloc(), e.pdAlloc(), e.pdAlloc()
	mr := e.mrReg(a, make([]byte, 128), accessLocalWrite|accessRemoteRead)
	ah := e.ahCreate(b)
	e.WantOK("ibv_dealloc_pd of a PD with no objects, while other PDs have some", c.Dealloc())
	e.WantErrno("ibv_dealloc_pd of the MR's PD", a.Dealloc(), syscall.EBUSY)
	e.WantErrno("ibv_dealloc_pd of the AH's PD", b.Dealloc(), syscall.EBUSY)
	e.WantOK("ibv_destroy_ah", ah.Destroy())
	e.WantOK("ibv_dealloc_pd of the AH's PD once the AH is gone", b.Dealloc())
	e.WantErrno("ibv_dealloc_pd of the MR's PD after another PD's AH went", a.Dealloc(), syscall.EBUSY)
	e.WantOK("ibv_dereg_mr", mr.Dereg())
	e.WantOK("ibv_dealloc_pd of the MR's PD once the MR is gone", a.Dealloc())
}

func teardownOrders(t *tester, e *env) {
	rng := rand.New(rand.NewPCG(5, 0x9d05))
	for round := range 40 {
		pdTeardown(t, e, rng, round)
		if t.Failed() {
			return
		}
	}
}

// pdObject is one object of the PD-05 world: how to destroy it and which
// objects must be gone first.
type pdObject struct {
	name    string
	destroy func() error
	deps    []int
	gone    bool
}

// pdTeardown builds a world of channels, CQs, PDs, MRs and AHs and destroys
// it in an order drawn from rng, retrying what was refused, until nothing is
// left. A destroy must succeed exactly when everything that depends on the
// object is gone, and must otherwise fail with EBUSY and leave the object in
// place (it is destroyed later).
func pdTeardown(t *tester, e *env, rng *rand.Rand, round int) {
	t.Helper()
	var objs []*pdObject
	add := func(name string, destroy func() error) int {
		objs = append(objs, &pdObject{name: name, destroy: destroy})
		return len(objs) - 1
	}
	t.Cleanup(func() { // after a failure, in the one safe order
		for i := len(objs) - 1; i >= 0; i-- {
			if !objs[i].gone {
				_ = objs[i].destroy()
			}
		}
	})
	ch, err := e.Ctx.CreateCompChannel()
	if err != nil {
		t.Fatalf("ibv_create_comp_channel: %v", err)
	}
	chIdx := add("channel", ch.Destroy)
	for i := range 2 + rng.IntN(2) {
		var qch verbs.CompChannel
		if i > 0 {
			qch = ch
		}
		q, err := e.Ctx.CreateCQ(4, nil, qch, 0)
		if err != nil {
			t.Fatalf("ibv_create_cq: %v", err)
		}
		qi := add(fmt.Sprintf("CQ %d", i), func() error {
			ctx, cancel := patient()
			defer cancel()
			return q.DestroyContext(ctx)
		})
		if qch != nil {
			objs[chIdx].deps = append(objs[chIdx].deps, qi)
		}
	}
	for p := range 2 {
		pd, err := e.Ctx.AllocPD()
		if err != nil {
			t.Fatalf("ibv_alloc_pd: %v", err)
		}
		pdIdx := add(fmt.Sprintf("PD %d", p), pd.Dealloc)
		for m := range rng.IntN(3) {
			mr, err := pd.RegMR(make([]byte, 64+rng.IntN(4096)), verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
			if err != nil {
				t.Fatalf("ibv_reg_mr: %v", err)
			}
			objs[pdIdx].deps = append(objs[pdIdx].deps, add(fmt.Sprintf("MR %d.%d", p, m), mr.Dereg))
		}
		for a := range rng.IntN(3) {
			ah, err := pd.CreateAH(pdAHAttr)
			if err != nil {
				t.Fatalf("ibv_create_ah: %v", err)
			}
			objs[pdIdx].deps = append(objs[pdIdx].deps, add(fmt.Sprintf("AH %d.%d", p, a), ah.Destroy))
		}
	}
	order := rng.Perm(len(objs))
	var trace []string
	for left := len(objs); left > 0; {
		for _, i := range order {
			o := objs[i]
			if o.gone {
				continue
			}
			var blocker string
			for _, d := range o.deps {
				if !objs[d].gone {
					blocker = objs[d].name
					break
				}
			}
			err := o.destroy()
			trace = append(trace, fmt.Sprintf("%s:%v", o.name, errnoOf(err)))
			switch {
			case blocker == "" && err != nil:
				o.gone = true // do not try again
				left--
				t.Errorf("round %d: destroying %s, whose dependents are all gone, failed: %v (steps %v)", round, o.name, err, trace)
			case blocker == "":
				o.gone = true
				left--
			case err == nil:
				o.gone = true
				left--
				t.Errorf("round %d: destroying %s succeeded while %s still uses it (steps %v)", round, o.name, blocker, trace)
			case !errors.Is(err, syscall.EBUSY):
				t.Errorf("round %d: destroying %s while %s uses it: %v, want EBUSY (steps %v)", round, o.name, blocker, err, trace)
			}
		}
	}
}

// errnoOf names the errno err carries: "ok" for nil.
func errnoOf(err error) string {
	if err == nil {
		return "ok"
	}
	var n syscall.Errno
	if errors.As(err, &n) {
		return verr.Name(n)
	}
	return err.Error()
}
