package conformance

import (
	"fmt"

	"github.com/verbsim/verbsim/verbs"
)

// The key a type 2 bind gives its window (MW-05): the providers take the
// low byte of the rkey the BIND_MW request names and keep the window's
// index in the upper 24 bits, whatever the rest of that rkey says
// (rxe_do_bind_mw; mlx5's set_umr_mkey_seg uses rkey & 0xFF). Programs bind
// with a counter as the rkey (17, 0xBA, 1024) and read the window's key back.

// mwKeyCases are the cases of mw_key.go.
var mwKeyCases = []Case{
	{"MW-05", "a type 2 bind takes the low byte of the new rkey and keeps the window's index", type2KeyByte},
}

// type2KeyByte binds fresh type 2 windows with rkeys whose upper bits
// are not the window's index: each bind succeeds, the window reports its
// index with the low byte asked for, and a READ through that key reads the
// window.
func type2KeyByte(t *tester, e *env) {
	m := mwSetup(t, e)
	if m == nil {
		return
	}
	copy(m.buf[mwOff:], "lowbyte!")
	for i, asked := range []uint32{17, 0xba, 1024, 0xffffff42} {
		mw := m.alloc(2)
		want := mw.RKey()&^0xff | asked&0xff
		what := fmt.Sprintf("type 2 BIND_MW with rkey %#x", asked)
		id := uint64(10 * (i + 1))
		if !m.wantBound(what, m.b, m.bind2(m.b, mw, id, asked, m.info(verbs.AccessRemoteRead)), id) {
			m.a, m.b = m.w.connect(verbs.QPTypeRC, m.w.opts()) // the failed bind ended the pair
			continue
		}
		if got := mw.RKey(); got != want {
			t.Errorf("%s: the window's rkey is %#x, want its index with the low byte asked for, %#x", what, got, want)
		}
		clear(m.w.a.buf[:8])
		if st := m.access(id+1, verbs.WRRDMARead, m.mr.Addr()+mwOff, want); st != verbs.WCSuccess {
			t.Errorf("%s: READ through %#x: %v, want SUCCESS", what, want, st)
		} else if string(m.w.a.buf[:8]) != "lowbyte!" {
			t.Errorf("%s: READ through %#x brought %q", what, want, m.w.a.buf[:8])
		}
	}
}
