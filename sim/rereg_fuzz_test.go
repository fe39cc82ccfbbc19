package sim

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
	"unsafe"

	"github.com/verbsim/verbsim/verbs"
)

// FuzzRereg runs sequences of ibv_reg_mr, ibv_dereg_mr, ibv_rereg_mr (with
// any flags, PD, buffer and access; as Rereg and as ReregIOVA with the
// buffer's address, which then is the IOVA), ibv_alloc_pd and ibv_dealloc_pd on one
// device, under both profiles, and after every operation checks the MR
// invariants against a model: nothing panics; every failure carries an
// errno, and a failed Rereg its class; an input error changes nothing and a
// command error leaves the MR unusable (default) or as it was (rxe); a
// success changes what the flags name; all keys are distinct; the device's
// key table holds exactly the live MRs, each found by its keys with its
// own PD (or not at all once unusable); and every PD counts exactly its
// live MRs (MR-12 to MR-17, PD-02).
func FuzzRereg(f *testing.F) {
	f.Add([]byte{})
	// reg in pd 0, rereg CHANGE_ACCESS, rereg CHANGE_PD to pd 1, dealloc pd 0.
	f.Add([]byte{0, 0, 2, 0x03, 2, 0, 4, 0, 0, 0x05, 2, 0, 2, 1, 0, 0, 4, 0})
	// reg, rereg flags 0 (a command error), rereg again, dereg.
	f.Add([]byte{0, 1, 3, 0x01, 2, 0, 0, 0, 0, 0, 2, 0, 4, 0, 0, 0x01, 1, 0})
	// reg, rereg CHANGE_TRANSLATION|CHANGE_ACCESS with ZERO_BASED, rereg to another context's PD.
	f.Add([]byte{0, 0, 4, 0x07, 2, 0, 5, 0, 5, 0x21, 2, 0, 2, 2, 0, 0, 3, 1, 2, 0, 2, 9, 0, 0})
	// reg, rereg by hca_va CHANGE_TRANSLATION to another buffer, then
	// CHANGE_ACCESS to ZERO_BASED and back.
	f.Add([]byte{0, 0, 4, 0x03, 5, 0, 1, 0, 5, 0, 5, 0, 4, 0, 0x23, 5, 0, 4, 0, 0x03})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, p := range Profiles() {
			runReregFuzz(t, p, data)
		}
	})
}

// reregModel is what the fuzz expects of one live MR.
type reregModel struct {
	mr         *MR
	pd         *PD
	first      *byte
	length     uint64
	access     verbs.AccessFlags
	usable     bool
	lkey, rkey uint32
}

func runReregFuzz(t *testing.T, p Profile, data []byte) {
	f, err := NewFabric(Config{Profile: p})
	if err != nil {
		t.Fatal(err)
	}
	d := f.Devices()[0]
	var ctxs [2]*Context
	for i := range ctxs {
		if ctxs[i], err = d.Open(); err != nil {
			t.Fatal(err)
		}
	}
	var pds []*PD // every PD allocated, live or not
	for _, c := range []*Context{ctxs[0], ctxs[0], ctxs[1]} {
		pd, err := c.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		pds = append(pds, pd)
	}
	pool := [][]byte{make([]byte, 1), make([]byte, 64), make([]byte, 4096), make([]byte, 100)}
	var mrs []*reregModel
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	pickPD := func(x byte) *PD {
		if int(x)%(len(pds)+1) == len(pds) {
			return nil
		}
		return pds[int(x)%(len(pds)+1)]
	}
	pickBuf := func(x byte) []byte {
		switch x % 8 {
		case 0:
			return nil
		case 1:
			return []byte{}
		case 2, 3, 4, 5:
			return pool[x%8-2]
		default:
			return pool[x%8-4][x>>6:] // another first byte when x>>6 > 0 and the buffer is long enough
		}
	}
	pickAccess := func(x byte) verbs.AccessFlags {
		a := verbs.AccessFlags(x & 0x3f)
		if x&0x40 != 0 {
			a |= 1 << 12 // unknown
		}
		if x&0x80 != 0 {
			a |= verbs.AccessRelaxedOrdering
		}
		return a
	}
	errnoOK := func(what string, err error) {
		var n syscall.Errno
		if !errors.As(err, &n) || n == 0 {
			t.Fatalf("%s %s: error %v carries no errno", p.Name, what, err)
		}
	}
	for steps := 0; len(data) > 0 && steps < 128; steps++ {
		op := next() % 6
		switch op {
		case 0: // reg
			pd, buf, access := pickPD(next()), pickBuf(next()), pickAccess(next())
			mr, err := pd.RegMR(buf, access)
			if err != nil {
				errnoOK("reg_mr", err)
				continue
			}
			mrs = append(mrs, &reregModel{mr: mr, pd: pd, first: &buf[0], length: uint64(len(buf)),
				access: mr.Access(), usable: true, lkey: mr.LKey(), rkey: mr.RKey()})
		case 1: // dereg
			if len(mrs) == 0 {
				continue
			}
			i := int(next()) % len(mrs)
			if err := mrs[i].mr.Dereg(); err != nil {
				t.Fatalf("%s dereg_mr of a live MR: %v", p.Name, err)
			}
			if err := mrs[i].mr.Dereg(); !errors.Is(err, syscall.EINVAL) {
				t.Fatalf("%s a second dereg_mr: %v", p.Name, err)
			}
			mrs = append(mrs[:i], mrs[i+1:]...)
		case 2, 5: // rereg; 5: by hca_va, the buffer's address, as from C
			if len(mrs) == 0 {
				continue
			}
			m := mrs[int(next())%len(mrs)]
			flags := verbs.ReregFlags(next())
			pd, buf, access := pickPD(next()), pickBuf(next()), pickAccess(next())
			wasUsable := m.usable
			var err error
			var hca uint64
			if op == 5 {
				if len(buf) > 0 {
					hca = uint64(uintptr(unsafe.Pointer(&buf[0])))
				}
				err = m.mr.ReregIOVA(flags, pd, buf, hca, access)
			} else {
				err = m.mr.Rereg(flags, pd, buf, access)
			}
			what := fmt.Sprintf("rereg_mr(flags %#x, access %#x)", uint32(flags), uint32(access))
			if err != nil {
				errnoOK(what, err)
				class := ReregFailureOf(err)
				if !wasUsable && class != verbs.ReregErrInput {
					t.Fatalf("%s %s on an unusable MR: class %v, want %v", p.Name, what, class, verbs.ReregErrInput)
				}
				switch class {
				case verbs.ReregErrInput:
				case verbs.ReregErrCmd:
					if !p.ReregFailKeepsMR {
						m.usable = false
					}
				default:
					t.Fatalf("%s %s: class %v: %v", p.Name, what, class, err)
				}
				break
			}
			if !m.usable {
				t.Fatalf("%s %s succeeded on an unusable MR", p.Name, what)
			}
			if flags&verbs.ReregChangePD != 0 {
				m.pd = pd
			}
			if flags&verbs.ReregChangeTranslation != 0 {
				m.first, m.length = &buf[0], uint64(len(buf))
				if op == 5 && m.mr.Access()&verbs.AccessZeroBased == 0 && m.mr.IOVA() != hca {
					t.Fatalf("%s %s by hca_va %#x: iova %#x", p.Name, what, hca, m.mr.IOVA())
				}
			}
			if flags&verbs.ReregChangeAccess != 0 {
				m.access = access &^ (accessOptional &^ verbs.AccessRelaxedOrdering)
			}
			if p.ReregKeepsKeys != (m.mr.LKey() == m.lkey && m.mr.RKey() == m.rkey) {
				t.Fatalf("%s %s: keys %#x/%#x → %#x/%#x, keep=%v", p.Name, what, m.lkey, m.rkey, m.mr.LKey(), m.mr.RKey(), p.ReregKeepsKeys)
			}
			m.lkey, m.rkey = m.mr.LKey(), m.mr.RKey()
		case 3: // alloc pd
			pd, err := ctxs[next()%2].AllocPD()
			if err != nil {
				errnoOK("alloc_pd", err)
				continue
			}
			pds = append(pds, pd)
		case 4: // dealloc pd
			pd := pickPD(next())
			err := pd.Dealloc()
			busy := false
			for _, m := range mrs {
				busy = busy || m.pd == pd
			}
			if busy && !errors.Is(err, syscall.EBUSY) {
				t.Fatalf("%s dealloc_pd of a PD with MRs: %v", p.Name, err)
			}
			if err != nil {
				errnoOK("dealloc_pd", err)
			}
		}
		checkReregModel(t, p, d, pds, mrs)
	}
}

// checkReregModel compares the device with the model.
func checkReregModel(t *testing.T, p Profile, d *Device, pds []*PD, mrs []*reregModel) {
	t.Helper()
	d.fabric.d.Lock()
	defer d.fabric.d.Unlock()
	if d.mrs.live != len(mrs) || len(d.mrs.byIndex) != len(mrs) {
		t.Fatalf("%s: the device has %d (%d indexed) MRs, the model %d", p.Name, d.mrs.live, len(d.mrs.byIndex), len(mrs))
	}
	refs := 0
	for _, pl := range d.mrs.starts {
		refs += pl.refs
	}
	if refs != len(mrs) {
		t.Fatalf("%s: placements hold %d references for %d MRs", p.Name, refs, len(mrs))
	}
	keys := map[uint32]bool{}
	count := map[*PD]int{}
	for _, m := range mrs {
		mr := m.mr
		count[m.pd]++
		if d.mrs.byIndex[mr.lkey>>8] != mr || mr.dead {
			t.Fatalf("%s: a live MR is not in the key table under its index", p.Name)
		}
		if mr.pd != m.pd || mr.length != m.length || &mr.buf[0] != m.first || mr.access != m.access || mr.broken == m.usable {
			t.Fatalf("%s: MR fields pd %v length %d access %v broken %v; model pd %v length %d access %v usable %v",
				p.Name, mr.pd == m.pd, mr.length, mr.access, mr.broken, true, m.length, m.access, m.usable)
		}
		if mr.lkey>>8 != mr.rkey>>8 || mr.lkey == mr.rkey || keys[mr.lkey] || keys[mr.rkey] {
			t.Fatalf("%s: keys %#x/%#x are not distinct", p.Name, mr.lkey, mr.rkey)
		}
		keys[mr.lkey], keys[mr.rkey] = true, true
		if mr.access&verbs.AccessZeroBased != 0 && mr.iova != 0 {
			t.Fatalf("%s: a ZERO_BASED MR has iova %#x", p.Name, mr.iova)
		}
		want := faultNone
		if !m.usable {
			want = faultKey
		}
		if _, f := d.mrs.lookup(m.pd, mr.lkey, false, mr.iova+mr.length-1, 1, 0); f != want {
			t.Fatalf("%s: the MR's last byte by lkey: %v, want %v", p.Name, f, want)
		}
		if _, f := d.mrs.lookup(m.pd, mr.rkey, true, mr.iova, 1, 0); f != want {
			t.Fatalf("%s: the MR's first byte by rkey: %v, want %v", p.Name, f, want)
		}
		if _, f := d.mrs.lookup(m.pd, mr.lkey, false, mr.iova+mr.length, 1, 0); m.usable && f != faultRange {
			t.Fatalf("%s: one byte past the MR: %v", p.Name, f)
		}
		for _, o := range pds {
			if o != m.pd && m.usable {
				if _, f := d.mrs.lookup(o, mr.lkey, false, mr.iova, 1, 0); f != faultPD {
					t.Fatalf("%s: the lkey with another PD: %v", p.Name, f)
				}
			}
		}
	}
	for _, pd := range pds {
		if pd.children[childMR] != count[pd] {
			t.Fatalf("%s: a PD counts %d MRs, the model %d", p.Name, pd.children[childMR], count[pd])
		}
	}
}
