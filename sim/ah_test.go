package sim_test

import (
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim"
)

// TestCreateAH: the checks of ibv_create_ah, max_ah, and the PD the AH
// holds (PD-02, PD-03).
func TestCreateAH(t *testing.T) {
	attr := sim.DefaultDeviceAttr()
	attr.MaxAH = 2
	attr.PhysPortCnt = 0
	f := fabric(t, sim.Config{Devices: []sim.DeviceConfig{{Name: "d", Attr: attr, Ports: []sim.PortConfig{
		{}, {Attr: sim.PortAttr{LinkLayer: sim.LinkLayerEthernet, GIDTblLen: 4}},
	}}}})
	ctx, _ := f.Devices()[0].Open()
	pd, _ := ctx.AllocPD()
	other, _ := ctx.AllocPD()
	grh := sim.GlobalRoute{DGID: sim.GID{0: 0xfe, 1: 0x80, 15: 7}, HopLimit: 64}
	for name, c := range map[string]sim.AHAttr{
		"port 0":             {PortNum: 0, DLID: 1},
		"port 3":             {PortNum: 3, DLID: 1},
		"RoCE without GRH":   {PortNum: 2},
		"sgid index 4":       {PortNum: 2, IsGlobal: true, GRH: sim.GlobalRoute{SGIDIndex: 4}},
		"unused sgid entry":  {PortNum: 2, IsGlobal: true, GRH: sim.GlobalRoute{SGIDIndex: 1}},
		"IB sgid index 128":  {PortNum: 1, DLID: 1, IsGlobal: true, GRH: sim.GlobalRoute{SGIDIndex: 128}},
		"IB unused sgid ent": {PortNum: 1, DLID: 1, IsGlobal: true, GRH: sim.GlobalRoute{SGIDIndex: 3}},
	} {
		ah, err := pd.CreateAH(c)
		if ah != nil {
			t.Errorf("%s: got an AH", name)
		}
		wantErrno(t, name, err, syscall.EINVAL)
	}
	ib, err := pd.CreateAH(sim.AHAttr{PortNum: 1, DLID: 5, SL: 3})
	if err != nil {
		t.Fatal(err)
	}
	roce, err := other.CreateAH(sim.AHAttr{PortNum: 2, IsGlobal: true, GRH: grh})
	if err != nil {
		t.Fatal(err)
	}
	if ib.PD() != pd || roce.PD() != other || ib.Attr().DLID != 5 || roce.Attr().GRH != grh {
		t.Errorf("AH fields: %+v %+v", ib.Attr(), roce.Attr())
	}
	_, err = pd.CreateAH(sim.AHAttr{PortNum: 1, DLID: 6})
	wantErrno(t, "CreateAH over max_ah", err, syscall.ENOMEM)
	_, err = pd.CreateAH(sim.AHAttr{PortNum: 9})
	wantErrno(t, "a bad AH on a full device is still EINVAL", err, syscall.EINVAL)

	// PD-03: each AH holds its own PD only.
	wantErrno(t, "Dealloc of the IB AH's PD", pd.Dealloc(), syscall.EBUSY)
	if err := roce.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := other.Dealloc(); err != nil {
		t.Fatalf("Dealloc once its AH is gone: %v", err)
	}
	wantErrno(t, "Destroy twice", roce.Destroy(), syscall.EINVAL)
	if _, err := pd.CreateAH(sim.AHAttr{PortNum: 1, DLID: 6}); err != nil {
		t.Fatalf("CreateAH after a Destroy freed a slot: %v", err)
	}
	var nilAH *sim.AH
	wantErrno(t, "Destroy(nil)", nilAH.Destroy(), syscall.EINVAL)
	if nilAH.PD() != nil || nilAH.Attr() != (sim.AHAttr{}) {
		t.Error("a nil AH reports fields")
	}
	var nilPD *sim.PD
	_, err = nilPD.CreateAH(sim.AHAttr{PortNum: 1})
	wantErrno(t, "CreateAH on nil", err, syscall.EINVAL)
}
