package sim_test

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

func wantErrno(t *testing.T, what string, err error, errno syscall.Errno) {
	t.Helper()
	if !errors.Is(err, errno) {
		t.Errorf("%s: %v, want %v", what, err, errno)
	}
}

// TestAllocPD (PD-01): PDs are distinct, numbered per context, limited by
// max_pd across contexts with ENOMEM, and a closed context gets none.
func TestAllocPD(t *testing.T) {
	attr := sim.DefaultDeviceAttr()
	attr.MaxPD = 2
	f := fabric(t, sim.Config{Devices: []sim.DeviceConfig{{Name: "d", Attr: attr}}})
	c1, _ := f.Devices()[0].Open()
	c2, _ := f.Devices()[0].Open()
	a, err := c1.AllocPD()
	if err != nil || a.Context() != c1 || a.Handle() != 1 {
		t.Fatalf("AllocPD: %v, %v", a, err)
	}
	b, err := c2.AllocPD()
	if err != nil || b == a || b.Handle() != 1 {
		t.Fatalf("AllocPD on the second context: %v, %v", b, err)
	}
	for _, c := range []*sim.Context{c1, c2} {
		pd, err := c.AllocPD()
		if pd != nil {
			t.Errorf("AllocPD over max_pd returned a PD")
		}
		wantErrno(t, "AllocPD over max_pd", err, syscall.ENOMEM)
	}
	if err := a.Dealloc(); err != nil {
		t.Fatal(err)
	}
	if pd, err := c1.AllocPD(); err != nil || pd.Handle() != 2 {
		t.Fatalf("AllocPD after a Dealloc: %v, %v", pd, err)
	}
	if err := c2.Close(); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("Close with a live PD: %v, want EBUSY", err)
	}
	if err := b.Dealloc(); err != nil {
		t.Fatal(err)
	}
	if err := c2.Close(); err != nil {
		t.Fatalf("Close once the PD is gone: %v", err)
	}
	pd, err := c2.AllocPD()
	if pd != nil {
		t.Error("AllocPD on a closed context returned a PD")
	}
	wantErrno(t, "AllocPD on a closed context", err, syscall.EINVAL)
	var nilCtx *sim.Context
	_, err = nilCtx.AllocPD()
	wantErrno(t, "AllocPD on nil", err, syscall.EINVAL)
}

// TestDeallocPD (PD-02): EBUSY with any MR or AH, EINVAL twice or on nil.
func TestDeallocPD(t *testing.T) {
	ctx := open(t, sim.Config{})
	pd, _ := ctx.AllocPD()
	mr, err := pd.RegMR(make([]byte, 8), 0)
	if err != nil {
		t.Fatal(err)
	}
	ah, err := pd.CreateAH(verbs.AHAttr{PortNum: 1, DLID: 1})
	if err != nil {
		t.Fatal(err)
	}
	wantErrno(t, "Dealloc with an MR and an AH", pd.Dealloc(), syscall.EBUSY)
	if err := mr.Dereg(); err != nil {
		t.Fatal(err)
	}
	wantErrno(t, "Dealloc with an AH", pd.Dealloc(), syscall.EBUSY)
	if err := ah.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := pd.Dealloc(); err != nil {
		t.Fatalf("Dealloc of an empty PD: %v", err)
	}
	wantErrno(t, "Dealloc twice", pd.Dealloc(), syscall.EINVAL)
	var nilPD *sim.PD
	wantErrno(t, "Dealloc(nil)", nilPD.Dealloc(), syscall.EINVAL)
	if nilPD.Context() != nil || nilPD.Handle() != 0 {
		t.Error("a nil PD reports a context or handle")
	}
	// A deallocated PD takes no new objects.
	_, err = pd.RegMR(make([]byte, 8), 0)
	wantErrno(t, "RegMR on a deallocated PD", err, syscall.EINVAL)
	_, err = pd.CreateAH(verbs.AHAttr{PortNum: 1})
	wantErrno(t, "CreateAH on a deallocated PD", err, syscall.EINVAL)
	if err := ctx.Close(); err != nil {
		t.Fatalf("Close after the PD is gone: %v", err)
	}
}

// Allocate a PD, register a buffer for receives and RDMA WRITEs from peers,
// and tear both down in the order that always succeeds (PD-05).
func ExamplePD_RegMR() {
	fabric, _ := sim.NewFabric(sim.Config{})
	vctx, _ := fabric.Devices()[0].Open()
	defer vctx.Close()

	pd, _ := vctx.AllocPD()
	buf := make([]byte, 4096) // yours: the MR aliases it, nothing is copied
	mr, err := pd.RegMR(buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	fmt.Println(err)
	fmt.Printf("addr=%#x length=%d lkey=%#x rkey=%#x\n", mr.Addr(), mr.Length(), mr.LKey(), mr.RKey())

	_, err = pd.RegMR(buf, verbs.AccessRemoteWrite) // no LOCAL_WRITE (MR-01)
	fmt.Println(err)
	fmt.Println(pd.Dealloc()) // the MR still belongs to it (PD-02)

	fmt.Println(mr.Dereg(), pd.Dealloc())
	// Output:
	// <nil>
	// addr=0x10000000 length=4096 lkey=0x102 rkey=0x182
	// ibv_reg_mr: EINVAL (invalid argument): access REMOTE_WRITE asks for remote write or atomic access without LOCAL_WRITE (MR-01)
	// ibv_dealloc_pd: EBUSY (device or resource busy): 1 MR(s) still belong to the PD (PD-02)
	// <nil> <nil>
}
