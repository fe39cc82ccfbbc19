package conformance_test

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/verbs"
)

// scramble overwrites every field of an error completion that only a
// successful one defines with values drawn from rng, and gives vendor_err,
// the device's opaque code, a random non-zero value.
func scramble(rng *rand.Rand, c *verbs.WC) {
	if c.Status == verbs.WCSuccess {
		return
	}
	c.Opcode = verbs.WCOpcode(rng.Uint32N(256))
	c.ByteLen = rng.Uint32()
	c.WCFlags = verbs.WCFlags(rng.Uint32())
	c.ImmData = rng.Uint32()
	c.SrcQP = rng.Uint32()
	c.SLID = uint16(rng.Uint32())
	c.SL = uint8(rng.Uint32())
	c.PKeyIndex = uint16(rng.Uint32())
	c.DLIDPathBits = uint8(rng.Uint32())
	c.VendorErr = 1 + rng.Uint32N(1<<32-1)
}

// TestSuiteReadsFourFieldsOfErrors_WC03_WC14 runs the whole suite on a
// device whose polls scramble, in every error completion, the fields only
// a successful completion defines (opcode, byte_len, wc_flags, imm_data,
// src_qp, slid, sl, pkey_index, dlid_path_bits; WC-03) and put a random
// non-zero code in vendor_err (WC-14). No case may fail: of an error
// completion a case reads only wr_id, status and qp_num, and vendor_err
// not at all. One profile is enough; the cases read the same fields under
// every one.
func TestSuiteReadsFourFieldsOfErrors_WC03_WC14(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex // some cases poll from several goroutines
	rng := rand.New(rand.NewPCG(3, 14))
	m := mutant{name: "scrambling polls", h: hooks{poll: func(q verbs.CQ, wcs []verbs.WC) (int, error) {
		n, err := q.Poll(wcs)
		mu.Lock()
		defer mu.Unlock()
		for i := range wcs[:n] {
			scramble(rng, &wcs[i])
		}
		return n, err
	}}}
	if err := conformance.Check(m.factory()); err != nil {
		t.Error(err)
	}
}
