package sim_test

import (
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// both is the comp_mask every good ibv_open_xrcd carries.
const both = verbs.XRCDInitFD | verbs.XRCDInitOFlags

func TestOpenXRCD_XRC01_XRC02(t *testing.T) {
	ctx := open(t, sim.Config{Devices: []sim.DeviceConfig{{Name: "a"}}})
	for _, c := range []struct {
		attr verbs.XRCDInitAttr
		want syscall.Errno
	}{
		{verbs.XRCDInitAttr{CompMask: 0, FD: -1}, syscall.EINVAL},
		{verbs.XRCDInitAttr{CompMask: verbs.XRCDInitFD, FD: -1}, syscall.EINVAL},
		{verbs.XRCDInitAttr{CompMask: verbs.XRCDInitOFlags, FD: -1}, syscall.EINVAL},
		{verbs.XRCDInitAttr{CompMask: both | 1<<2, FD: -1}, syscall.EOPNOTSUPP},
		{verbs.XRCDInitAttr{CompMask: 1 << 31, FD: -1}, syscall.EOPNOTSUPP},
		{verbs.XRCDInitAttr{CompMask: both, FD: 3, OFlags: syscall.O_CREAT}, syscall.EBADF},
		{verbs.XRCDInitAttr{CompMask: both, FD: -2}, syscall.EBADF},
	} {
		x, err := ctx.OpenXRCD(c.attr)
		wantErrno(t, "OpenXRCD", err, c.want)
		if x != nil {
			t.Errorf("OpenXRCD(%+v) returned a domain with %v", c.attr, err)
		}
	}
	// fd -1: a new domain whatever oflags says.
	x1, err := ctx.OpenXRCD(verbs.XRCDInitAttr{CompMask: both, FD: -1, OFlags: syscall.O_CREAT})
	if err != nil {
		t.Fatal(err)
	}
	x2, err := ctx.OpenXRCD(verbs.XRCDInitAttr{CompMask: both, FD: -1, OFlags: syscall.O_CREAT | syscall.O_EXCL})
	if err != nil || x1 == x2 || x1.Context() != ctx {
		t.Fatalf("second domain: %v", err)
	}
	wantErrno(t, "close_device with domains open", ctx.Close(), syscall.EBUSY)
	for _, x := range []*sim.XRCD{x1, x2} {
		if err := x.Close(); err != nil || !x.Closed() {
			t.Fatal(err)
		}
		wantErrno(t, "second close", x.Close(), syscall.EINVAL)
	}
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = ctx.OpenXRCD(verbs.XRCDInitAttr{CompMask: both, FD: -1})
	wantErrno(t, "OpenXRCD on a closed context", err, syscall.EINVAL)
}

func TestCreateSRQEx_XRC04_XRC05(t *testing.T) {
	ctx := open(t, sim.Config{Devices: []sim.DeviceConfig{{Name: "a"}}})
	pd, _ := ctx.AllocPD()
	cq, _ := ctx.CreateCQ(16, nil, nil, 0)
	x, err := ctx.OpenXRCD(verbs.XRCDInitAttr{CompMask: both, FD: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx2, _ := ctx.Device().Open()
	pd2, _ := ctx2.AllocPD()
	a := verbs.SRQAttr{MaxWR: 4, MaxSGE: 1}
	xrc := sim.SRQInitAttrEx{Attr: a, CompMask: verbs.SRQInitType | verbs.SRQInitPD | verbs.SRQInitXRCD | verbs.SRQInitCQ, Type: verbs.SRQTXRC, PD: pd, XRCD: x, CQ: cq}
	for name, c := range map[string]struct {
		edit func(*sim.SRQInitAttrEx)
		want syscall.Errno
	}{
		"reserved bit":    {func(a *sim.SRQInitAttrEx) { a.CompMask |= 1 << 5 }, syscall.EOPNOTSUPP},
		"TM bit":          {func(a *sim.SRQInitAttrEx) { a.CompMask |= verbs.SRQInitTM }, syscall.EOPNOTSUPP},
		"TM type":         {func(a *sim.SRQInitAttrEx) { a.Type = verbs.SRQTTM }, syscall.EOPNOTSUPP},
		"type 3":          {func(a *sim.SRQInitAttrEx) { a.Type = 3 }, syscall.EINVAL},
		"no PD bit":       {func(a *sim.SRQInitAttrEx) { a.CompMask &^= verbs.SRQInitPD }, syscall.EINVAL},
		"nil PD":          {func(a *sim.SRQInitAttrEx) { a.PD = nil }, syscall.EINVAL},
		"no XRCD bit":     {func(a *sim.SRQInitAttrEx) { a.CompMask &^= verbs.SRQInitXRCD }, syscall.EINVAL},
		"no CQ bit":       {func(a *sim.SRQInitAttrEx) { a.CompMask &^= verbs.SRQInitCQ }, syscall.EINVAL},
		"nil XRCD":        {func(a *sim.SRQInitAttrEx) { a.XRCD = nil }, syscall.EINVAL},
		"nil CQ":          {func(a *sim.SRQInitAttrEx) { a.CQ = nil }, syscall.EINVAL},
		"other ctx PD":    {func(a *sim.SRQInitAttrEx) { a.PD = pd2 }, syscall.EINVAL},
		"max_wr 0":        {func(a *sim.SRQInitAttrEx) { a.Attr.MaxWR = 0 }, syscall.EINVAL},
		"basic, other PD": {func(a *sim.SRQInitAttrEx) { a.CompMask = verbs.SRQInitPD; a.PD = pd2 }, syscall.EINVAL},
	} {
		attr := xrc
		c.edit(&attr)
		s, err := ctx.CreateSRQEx(attr)
		wantErrno(t, name, err, c.want)
		if s != nil {
			t.Errorf("%s: got an SRQ", name)
		}
	}
	s1, err := ctx.CreateSRQEx(xrc)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := ctx.CreateSRQEx(xrc)
	if err != nil {
		t.Fatal(err)
	}
	n1, err1 := s1.GetSRQNum()
	n2, err2 := s2.GetSRQNum()
	if err1 != nil || err2 != nil || n1 == 0 || n1 == n2 || !s1.XRC() || s1.PD() != pd {
		t.Errorf("srq nums %#x %v, %#x %v", n1, err1, n2, err2)
	}
	basic, err := ctx.CreateSRQEx(sim.SRQInitAttrEx{Attr: a, CompMask: verbs.SRQInitPD | verbs.SRQInitType | verbs.SRQInitCQ, Type: verbs.SRQTBasic, PD: pd})
	if err != nil {
		t.Fatal(err)
	}
	_, err = basic.GetSRQNum()
	wantErrno(t, "get_srq_num on a basic SRQ", err, syscall.EOPNOTSUPP)
	if basic.XRC() {
		t.Error("basic SRQ says XRC")
	}
	if n, err := s1.PostRecv([]verbs.RecvWR{{WRID: 7}}); n != 1 || err != nil {
		t.Errorf("post to an XRC SRQ: %d %v", n, err)
	}
	_, err = pd.CreateQP(sim.QPInitAttr{SendCQ: cq, RecvCQ: cq, SRQ: s1, Type: verbs.QPTypeRC, Cap: verbs.QPCap{MaxSendWR: 1, MaxSendSGE: 1}})
	wantErrno(t, "RC QP on an XRC SRQ", err, syscall.EINVAL)
	wantErrno(t, "close XRCD with SRQs", x.Close(), syscall.EBUSY)
	wantErrno(t, "destroy the SRQ's CQ", cq.Destroy(), syscall.EBUSY)
	wantErrno(t, "dealloc the SRQ's PD", pd.Dealloc(), syscall.EBUSY)
	for _, s := range []*sim.SRQ{s1, s2, basic} {
		if err := s.Destroy(); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = ctx.CreateSRQEx(xrc)
	wantErrno(t, "XRC SRQ in a closed domain", err, syscall.EINVAL)
	if err := cq.Destroy(); err != nil {
		t.Fatal(err)
	}
}

func TestXRCUnderRXE_XRC03(t *testing.T) {
	ctx := open(t, sim.Config{Profile: sim.RXEProfile(), Devices: []sim.DeviceConfig{{Name: "a"}}})
	_, err := ctx.OpenXRCD(verbs.XRCDInitAttr{CompMask: both, FD: -1})
	wantErrno(t, "open_xrcd under rxe", err, syscall.EOPNOTSUPP)
	pd, _ := ctx.AllocPD()
	cq, _ := ctx.CreateCQ(4, nil, nil, 0)
	_, err = ctx.CreateSRQEx(sim.SRQInitAttrEx{Attr: verbs.SRQAttr{MaxWR: 1}, CompMask: verbs.SRQInitPD | verbs.SRQInitType | verbs.SRQInitCQ | verbs.SRQInitXRCD, Type: verbs.SRQTXRC, PD: pd, CQ: cq})
	wantErrno(t, "XRC SRQ under rxe", err, syscall.EOPNOTSUPP)
	s, err := ctx.CreateSRQEx(sim.SRQInitAttrEx{Attr: verbs.SRQAttr{MaxWR: 1}, CompMask: verbs.SRQInitPD | verbs.SRQInitType, PD: pd})
	if err != nil {
		t.Fatalf("basic SRQ through create_srq_ex under rxe: %v", err)
	}
	_ = s.Destroy()
}
