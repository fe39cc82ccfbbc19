package fuzz

import (
	"errors"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// FuzzBindMW binds a memory window with inputs from the fuzzer (type, range,
// rights, the new key, the MR's access, the profile) on a connected RC pair
// and then sends one remote request through its rkey. It checks the bind's
// status and the request's against a small oracle of MW-01, MW-04..MW-06,
// and that a failed verb returns a syscall.Errno. Fuzz it with
//
//	go test -run='^$' -fuzz=FuzzBindMW -fuzztime=60s ./fuzz/
func FuzzBindMW(f *testing.F) {
	rw := uint32(verbs.AccessRemoteWrite | verbs.AccessRemoteRead)
	f.Add(uint8(1), uint16(100), uint16(64), rw, uint8(0), uint8(3), uint16(110), uint8(8), uint8(0), false)
	f.Add(uint8(2), uint16(0), uint16(4096), rw|uint32(verbs.AccessZeroBased), uint8(0), uint8(3), uint16(8), uint8(8), uint8(1), true)
	f.Add(uint8(2), uint16(4000), uint16(200), rw, uint8(1), uint8(2), uint16(0), uint8(8), uint8(2), false)
	f.Add(uint8(1), uint16(0), uint16(0), uint32(0), uint8(0), uint8(3), uint16(0), uint8(8), uint8(0), true)
	f.Add(uint8(3), uint16(0), uint16(8), uint32(0), uint8(0), uint8(3), uint16(0), uint8(8), uint8(0), false)
	f.Fuzz(func(t *testing.T, typ uint8, off, length uint16, access uint32, keyBad, mrBits uint8, woff uint16, wlen, op uint8, rxe bool) {
		const mrLen = 4096
		p := sim.DefaultProfile()
		if rxe {
			p = sim.RXEProfile()
		}
		f, err := sim.NewFabric(sim.Config{Profile: p, Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "b"}}})
		if err != nil {
			t.Fatal(err)
		}
		type end struct {
			pd *sim.PD
			cq *sim.CQ
			q  *sim.QP
		}
		mk := func(name string) end {
			d, _ := f.Device(name)
			c, _ := d.Open()
			pd, _ := c.AllocPD()
			cq, _ := c.CreateCQ(8, nil, nil, 0)
			q, _ := pd.CreateQP(sim.QPInitAttr{SendCQ: cq, RecvCQ: cq, Type: verbs.QPTypeRC,
				Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
			return end{pd, cq, q}
		}
		a, b := mk("a"), mk("b")
		if err := sim.Connect(a.q, b.q, sim.ConnectOptions{}); err != nil {
			t.Fatal(err)
		}
		mrAccess := verbs.AccessFlags(0)
		if mrBits&1 != 0 {
			mrAccess |= verbs.AccessLocalWrite
		}
		if mrBits&2 != 0 {
			mrAccess |= verbs.AccessMWBind
		}
		mem := make([]byte, mrLen)
		mr, err := b.pd.RegMR(mem, mrAccess)
		if err != nil {
			t.Fatal(err)
		}
		mw, err := b.pd.AllocMW(verbs.MWType(typ))
		if typ != 1 && typ != 2 {
			if !errors.Is(err, syscall.EINVAL) || mw != nil {
				t.Fatalf("AllocMW(%d) = %v, %v; want EINVAL (MW-01)", typ, mw, err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		acc := verbs.AccessFlags(access)
		info := verbs.MWBindInfo{MR: mr, Addr: mr.Addr() + uint64(off), Length: uint64(length), Access: acc}
		before := mw.RKey()
		key := before&^0xff | (before+1)&0xff
		if keyBad != 0 {
			key ^= uint32(keyBad) << 8
		}
		// The oracle of the bind (MW-05).
		allowed := verbs.AccessLocalWrite | verbs.AccessRemoteRead | verbs.AccessRemoteWrite | verbs.AccessRemoteAtomic | verbs.AccessZeroBased
		ok := acc&^allowed == 0
		if length > 0 || typ == 2 {
			ok = ok && length > 0 && mrAccess&verbs.AccessMWBind != 0 && int(off)+int(length) <= mrLen &&
				(acc&(verbs.AccessRemoteWrite|verbs.AccessRemoteAtomic) == 0 || mrAccess&verbs.AccessLocalWrite != 0)
		}
		// A type 2 bind takes only the new key's low byte and keeps the
		// window's index, whatever the upper bits say (MW-05): keyBad
		// changes nothing.
		if typ == 1 && length > 0 && acc&verbs.AccessZeroBased != 0 && rxe {
			ok = false
		}
		if typ == 1 {
			err = b.q.BindMW(mw, 1, verbs.SendSignaled, info)
		} else {
			_, err = b.q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRBindMW, Flags: verbs.SendSignaled, MW: mw, RKey: key, Bind: info}})
		}
		if err != nil {
			var ve *verr.Error
			if !errors.As(err, &ve) {
				t.Fatalf("bind error %v carries no errno", err)
			}
			t.Fatalf("bind post: %v", err)
		}
		wcs := make([]verbs.WC, 2)
		if n, _ := b.cq.Poll(wcs); n != 1 {
			t.Fatalf("%d bind completions", n)
		}
		want := verbs.WCSuccess
		if !ok {
			want = verbs.WCMWBindErr
		}
		if wcs[0].Status != want {
			t.Fatalf("bind of type %d [%d,+%d) access %v on MR %v key-bad %d: %v, want %v", typ, off, length, acc, mrAccess, keyBad, wcs[0].Status, want)
		}
		if ok && typ == 2 && mw.RKey() != key&0xff|before&^0xff {
			t.Fatalf("type 2 bind with key %#x of a window with rkey %#x: rkey %#x, want the index kept and the low byte taken (MW-05)", key, before, mw.RKey())
		}
		if !ok || length == 0 {
			return
		}
		// One remote request through the window (MW-06).
		src := make([]byte, 256)
		smr, _ := a.pd.RegMR(src, verbs.AccessLocalWrite)
		n := uint32(wlen)
		ops := []struct {
			op   verbs.WROpcode
			need verbs.AccessFlags
		}{{verbs.WRRDMAWrite, verbs.AccessRemoteWrite}, {verbs.WRRDMARead, verbs.AccessRemoteRead}, {verbs.WRAtomicFetchAndAdd, verbs.AccessRemoteAtomic}}
		o := ops[int(op)%len(ops)]
		if o.op == verbs.WRAtomicFetchAndAdd {
			n, woff = 8, woff&^7
		}
		base := mr.Addr() + uint64(off)
		if acc&verbs.AccessZeroBased != 0 {
			base = 0
		}
		at := base + uint64(woff)
		if n == 0 {
			return // a zero-length request needs no key (XFER-24)
		}
		good := acc&o.need != 0 && uint64(woff)+uint64(n) <= uint64(length)
		if o.op == verbs.WRAtomicFetchAndAdd && at%8 != 0 {
			return // misaligned atomics are another rule (XFER-17)
		}
		if _, err := a.q.PostSend([]verbs.SendWR{{WRID: 2, Opcode: o.op, Flags: verbs.SendSignaled,
			SGList: []verbs.SGE{{Addr: smr.Addr(), Length: n, LKey: smr.LKey()}}, RemoteAddr: at, RKey: mw.RKey(), CompareAdd: 1}}); err != nil {
			t.Fatalf("post %v: %v", o.op, err)
		}
		if c, _ := a.cq.Poll(wcs); c != 1 {
			t.Fatalf("%d completions of the %v", c, o.op)
		}
		want = verbs.WCRemAccessErr
		if good {
			want = verbs.WCSuccess
		}
		if wcs[0].Status != want {
			t.Fatalf("%v of %d bytes at window offset %d (window %d bytes, rights %v): %v, want %v", o.op, n, woff, length, acc, wcs[0].Status, want)
		}
	})
}
