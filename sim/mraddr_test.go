package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/verbsim/verbsim/verbs"
)

// scanRead is the inline read as it was before the address index: any live
// MR of the device that covers the range. It is the oracle of
// TestReadAddrMatchesScan.
func scanRead(t *mrTable, addr uint64, n uint32) []*MR {
	var covering []*MR
	for _, mr := range t.byIndex {
		if addr >= mr.addr && addr-mr.addr < mr.length && uint64(n) <= mr.length-(addr-mr.addr) {
			covering = append(covering, mr)
		}
	}
	return covering
}

// TestReadAddrMatchesScan runs random registrations, deregistrations and
// re-registrations (including buffers registered again from the same first
// byte, longer or shorter, so that placements overlap) and checks, after
// each, that the inline read finds a range exactly when some live MR covers
// it, and then returns that MR's bytes.
func TestReadAddrMatchesScan(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 14))
		pd := testPD(t)
		tab := &pd.ctx.dev.mrs
		arenas := make([][]byte, 6)
		for i := range arenas {
			arenas[i] = make([]byte, 1+rng.IntN(3*pageSize))
		}
		buf := func() []byte {
			a := arenas[rng.IntN(len(arenas))]
			start := 0
			if rng.IntN(2) == 0 {
				start = rng.IntN(len(a))
			}
			return a[start : start+1+rng.IntN(len(a)-start)]
		}
		var live []*MR
		for step := range 300 {
			switch op := rng.IntN(10); {
			case op < 5 || len(live) == 0:
				mr, err := pd.RegMR(buf(), verbs.AccessLocalWrite)
				if err != nil {
					t.Fatal(err)
				}
				live = append(live, mr)
			case op < 8:
				i := rng.IntN(len(live))
				if err := live[i].Dereg(); err != nil {
					t.Fatal(err)
				}
				live = append(live[:i], live[i+1:]...)
			default:
				if err := live[rng.IntN(len(live))].Rereg(verbs.ReregChangeTranslation, nil, buf(), 0); err != nil {
					t.Fatal(err)
				}
			}
			for range 40 {
				var addr uint64
				if len(live) > 0 && rng.IntN(4) != 0 {
					mr := live[rng.IntN(len(live))]
					addr = mr.addr + uint64(rng.IntN(int(mr.length)+8)) - 4
				} else {
					addr = firstVA + uint64(rng.IntN(1<<16))
				}
				n := uint32(rng.IntN(96))
				got, ok := tab.readAddr(addr, n)
				covering := scanRead(tab, addr, n)
				if ok != (len(covering) > 0) {
					t.Fatalf("seed %d step %d: read(%#x, %d) found=%v, but %d live MRs cover it", seed, step, addr, n, ok, len(covering))
				}
				if !ok || n == 0 {
					continue
				}
				match := false
				for _, mr := range covering {
					if &mr.buf[addr-mr.addr] == &got[0] && len(got) == int(n) {
						match = true
					}
				}
				if !match {
					t.Fatalf("seed %d step %d: read(%#x, %d) returned bytes of no covering MR", seed, step, addr, n)
				}
			}
		}
		for _, mr := range live {
			mr.Dereg()
		}
		if len(tab.starts) != 0 || tab.gone > len(tab.byAddr) || tab.live != 0 {
			t.Fatalf("seed %d: after every Dereg: %d starts, %d placements (%d gone), %d live", seed, len(tab.starts), len(tab.byAddr), tab.gone, tab.live)
		}
		for _, e := range tab.byAddr {
			if p := e.p; !p.gone || len(p.mrs) != 0 || p.top != nil {
				t.Fatalf("seed %d: a placement outlives its MRs: %+v", seed, p)
			}
		}
	}
}

// TestReadAddrAllocs: the inline read allocates nothing.
func TestReadAddrAllocs(t *testing.T) {
	pd := testPD(t)
	var mrs []*MR
	for range 100 {
		mr, _ := pd.RegMR(make([]byte, 64), verbs.AccessLocalWrite)
		mrs = append(mrs, mr)
	}
	m := deviceMemory{pd.ctx.dev}
	if n := testing.AllocsPerRun(100, func() {
		if _, ok := m.ReadLocked(mrs[50].addr+8, 32); !ok {
			t.Fatal("not found")
		}
	}); n != 0 {
		t.Errorf("an inline read allocates %v times", n)
	}
}

// BenchmarkReadAddr10kMRs is the inline read's lookup with 10,000 MRs on
// the device.
func BenchmarkReadAddr10kMRs(b *testing.B) {
	pd := testPD(b)
	var mrs []*MR
	for range 10_000 {
		mr, _ := pd.RegMR(make([]byte, 64), verbs.AccessLocalWrite)
		mrs = append(mrs, mr)
	}
	m := deviceMemory{pd.ctx.dev}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		m.ReadLocked(mrs[i%len(mrs)].addr, 64)
		i += 7919
	}
}
