package cabi

import (
	"os"
	"os/exec"
	"testing"

	"github.com/verbsim/verbsim/verbs"
)

// cc returns the C compiler, or skips the test (CI installs it) when the
// compiler or the libibverbs headers are missing.
func cc(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (cc); CI installs one")
	}
	if _, err := os.Stat("/usr/include/infiniband/verbs.h"); err != nil {
		t.Skip("no libibverbs headers (Debian: libibverbs-dev); CI installs them")
	}
	return p
}

// TestLayouts: every mirrored struct has C's size and every member C's
// offset and size, read off the system's verbs.h (rdma-core 44).
func TestLayouts(t *testing.T) {
	if err := CheckLayouts(cc(t), nil, Mirrors); err != nil {
		t.Fatal(err)
	}
}

// TestLayoutsCatchDrift: the check fails for a mirror whose member moved,
// so TestLayouts can fail.
func TestLayoutsCatchDrift(t *testing.T) {
	type badCap struct {
		MaxRecvWR uint32 `c:"max_recv_wr"` // max_send_wr comes first in C
		MaxSendWR uint32 `c:"max_send_wr"`
	}
	if err := CheckLayouts(cc(t), nil, []Mirror{{"struct ibv_qp_cap", badCap{}}}); err == nil {
		t.Fatal("a mirror with two members swapped and three missing passed")
	}
}

// TestRoundTrips: every conversion to C's layout and back keeps every
// field of the verbs type.
func TestRoundTrips(t *testing.T) {
	qa := verbs.QPAttr{QPState: 3, CurQPState: 2, PathMTU: 5, PathMigState: 1, QKey: 0x11111111, RQPSN: 7,
		SQPSN: 9, DestQPNum: 0x123, QPAccessFlags: 7, Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 2, MaxSendSGE: 3, MaxRecvSGE: 4, MaxInlineData: 5},
		AHAttr: verbs.AHAttr{GRH: verbs.GlobalRoute{DGID: [16]byte{1, 2, 3}, FlowLabel: 0xabcde, SGIDIndex: 2,
			HopLimit: 64, TrafficClass: 3}, DLID: 0x21, SL: 1, SrcPathBits: 2, StaticRate: 3, IsGlobal: true, PortNum: 1},
		AltAHAttr: verbs.AHAttr{DLID: 9, PortNum: 2}, PKeyIndex: 1, AltPKeyIndex: 2, EnSQDAsyncNotify: true,
		SQDraining: true, MaxRDAtomic: 4, MaxDestRDAtomic: 5, MinRNRTimer: 12, PortNum: 1, Timeout: 14,
		RetryCnt: 7, RNRRetry: 6, AltPortNum: 2, AltTimeout: 13, RateLimit: 100}
	var c QPAttr
	c.Set(&qa)
	if got := c.Verbs(); got != qa {
		t.Errorf("QPAttr: %+v\nwant %+v", got, qa)
	}
	pa := verbs.PortAttr{State: 4, MaxMTU: 5, ActiveMTU: 4, GIDTblLen: 16, PortCapFlags: 1 << 16, MaxMsgSz: 1 << 31,
		BadPKeyCntr: 1, QKeyViolCntr: 2, PKeyTblLen: 128, LID: 3, SMLID: 1, LMC: 1, MaxVLNum: 4, SMSL: 1,
		SubnetTimeout: 18, InitTypeReply: 1, ActiveWidth: 2, ActiveSpeed: 32, PhysState: 5, LinkLayer: 1,
		Flags: 1, PortCapFlags2: 2}
	var p PortAttr
	p.Set(&pa)
	if got := p.Verbs(); got != pa {
		t.Errorf("PortAttr: %+v\nwant %+v", got, pa)
	}
	w := verbs.WC{WRID: 1 << 40, Status: 12, Opcode: 128, VendorErr: 3, ByteLen: 4096, ImmData: 0xdeadbeef,
		QPNum: 5, SrcQP: 6, WCFlags: 3, PKeyIndex: 1, SLID: 7, SL: 2, DLIDPathBits: 1}
	var cw WC
	cw.Set(&w)
	if got := cw.Verbs(); got != w {
		t.Errorf("WC: %+v\nwant %+v", got, w)
	}
	da := verbs.DeviceAttrEx{Orig: verbs.DeviceAttr{FWVer: "1.2.3", NodeGUID: 0x0002c90300001234,
		SysImageGUID: 0x0002c90300001235, MaxMRSize: 1 << 40, VendorID: 0xffffff, VendorPartID: 4123, MaxQP: 100,
		MaxQPWR: 200, DeviceCapFlags: 0x1000, MaxSGE: 30, MaxSGERD: 29, MaxCQ: 50, MaxCQE: 4096, MaxMR: 70,
		MaxMW: 71, MaxPD: 72, MaxQPRDAtom: 16, MaxQPInitRDAtom: 16, AtomicCap: 1, MaxAH: 73, MaxSRQ: 74,
		MaxSRQWR: 75, MaxSRQSGE: 76, PhysPortCnt: 2, NumCompVectors: 4},
		CompMask: 1, ODPCaps: verbs.ODPCaps{GeneralCaps: 1, RCODPCaps: 2, UCODPCaps: 3, UDODPCaps: 4},
		CompletionTimestampMask: 1<<48 - 1, HCACoreClock: 1000000, DeviceCapFlagsEx: 1 << 40,
		TSOCaps: verbs.TSOCaps{MaxTSO: 1, SupportedQPTs: 2}, RSSCaps: verbs.RSSCaps{SupportedQPTs: 1, MaxRWQIndirectionTables: 2,
			MaxRWQIndirectionTableSize: 3, RXHashFieldsMask: 4, RXHashFunction: 5}, MaxWQTypeRQ: 6,
		PacketPacingCaps: verbs.PacketPacingCaps{QPRateLimitMin: 1, QPRateLimitMax: 2, SupportedQPTs: 3}, RawPacketCaps: 7, TMCaps: verbs.TMCaps{MaxRndvHdrSize: 1, MaxNumTags: 2, Flags: 3, MaxOps: 4, MaxSGE: 5},
		CQModCaps: verbs.CQModCaps{MaxCQCount: 1, MaxCQPeriod: 2}, MaxDMSize: 128 << 10, PCIAtomicCaps: verbs.PCIAtomicCaps{FetchAdd: 1, Swap: 2, CompareSwap: 3},
		XRCODPCaps: 8, PhysPortCntEx: 2}
	var cd DeviceAttrEx
	cd.Set(&da)
	got := cd.Verbs(4)
	got.Orig.MaxDMSize = da.Orig.MaxDMSize // not in ibv_device_attr
	if got != da {
		t.Errorf("DeviceAttrEx: %+v\nwant %+v", got, da)
	}
	if b := Bytes(&cd.Orig); b[64] != 0x00 || b[65] != 0x02 || b[66] != 0xc9 {
		t.Errorf("node_guid is not big-endian in C's memory: % x", b[64:72])
	}
	s, ok := Read[SGE](Bytes(&SGE{Addr: 1, Length: 2, LKey: 3}))
	if !ok || s.Verbs() != (verbs.SGE{Addr: 1, Length: 2, LKey: 3}) {
		t.Errorf("Read[SGE]: %+v %v", s, ok)
	}
	if _, ok := Read[SGE](make([]byte, 15)); ok {
		t.Error("Read of 15 bytes as a 16-byte SGE succeeded")
	}
}
