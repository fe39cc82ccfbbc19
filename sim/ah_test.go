package sim_test

import (
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// TestCreateAH: the checks of ibv_create_ah, max_ah, and the PD the AH
// holds (PD-02, PD-03).
func TestCreateAH(t *testing.T) {
	attr := sim.DefaultDeviceAttr()
	attr.MaxAH = 2
	attr.PhysPortCnt = 0
	f := fabric(t, sim.Config{Devices: []sim.DeviceConfig{{Name: "d", Attr: attr, Ports: []sim.PortConfig{
		{}, {Attr: verbs.PortAttr{LinkLayer: verbs.LinkLayerEthernet, GIDTblLen: 4}},
	}}}})
	ctx, _ := f.Devices()[0].Open()
	pd, _ := ctx.AllocPD()
	other, _ := ctx.AllocPD()
	grh := verbs.GlobalRoute{DGID: verbs.GID{0: 0xfe, 1: 0x80, 15: 7}, HopLimit: 64}
	for name, c := range map[string]verbs.AHAttr{
		"port 0":            {PortNum: 0, DLID: 1},
		"port 3":            {PortNum: 3, DLID: 1},
		"RoCE without GRH":  {PortNum: 2},
		"sgid index 4":      {PortNum: 2, IsGlobal: true, GRH: verbs.GlobalRoute{SGIDIndex: 4}},
		"IB sgid index 128": {PortNum: 1, DLID: 1, IsGlobal: true, GRH: verbs.GlobalRoute{SGIDIndex: 128}},
	} {
		ah, err := pd.CreateAH(c)
		if ah != nil {
			t.Errorf("%s: got an AH", name)
		}
		wantErrno(t, name, err, syscall.EINVAL)
	}
	// An unused GID entry is ENODATA, as rdma_get_gid_attr says (AV-02).
	// Entries 1 and 2 of the RoCE port hold the GIDs of its IP addresses
	// (CM-05).
	for name, c := range map[string]verbs.AHAttr{
		"unused sgid entry":  {PortNum: 2, IsGlobal: true, GRH: verbs.GlobalRoute{SGIDIndex: 3}},
		"IB unused sgid ent": {PortNum: 1, DLID: 1, IsGlobal: true, GRH: verbs.GlobalRoute{SGIDIndex: 3}},
	} {
		ah, err := pd.CreateAH(c)
		if ah != nil {
			t.Errorf("%s: got an AH", name)
		}
		wantErrno(t, name, err, syscall.ENODATA)
	}
	ib, err := pd.CreateAH(verbs.AHAttr{PortNum: 1, DLID: 5, SL: 3})
	if err != nil {
		t.Fatal(err)
	}
	roce, err := other.CreateAH(verbs.AHAttr{PortNum: 2, IsGlobal: true, GRH: grh})
	if err != nil {
		t.Fatal(err)
	}
	if ib.PD() != pd || roce.PD() != other || ib.Attr().DLID != 5 || roce.Attr().GRH != grh {
		t.Errorf("AH fields: %+v %+v", ib.Attr(), roce.Attr())
	}
	_, err = pd.CreateAH(verbs.AHAttr{PortNum: 1, DLID: 6})
	wantErrno(t, "CreateAH over max_ah", err, syscall.ENOMEM)
	_, err = pd.CreateAH(verbs.AHAttr{PortNum: 9})
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
	if _, err := pd.CreateAH(verbs.AHAttr{PortNum: 1, DLID: 6}); err != nil {
		t.Fatalf("CreateAH after a Destroy freed a slot: %v", err)
	}
	var nilAH *sim.AH
	wantErrno(t, "Destroy(nil)", nilAH.Destroy(), syscall.EINVAL)
	if nilAH.PD() != nil || nilAH.Attr() != (verbs.AHAttr{}) {
		t.Error("a nil AH reports fields")
	}
	var nilPD *sim.PD
	_, err = nilPD.CreateAH(verbs.AHAttr{PortNum: 1})
	wantErrno(t, "CreateAH on nil", err, syscall.EINVAL)
}

// TestCreateAHValues: the value checks of an InfiniBand provider's
// create_ah (rdmavt's rvt_check_ah and qib_check_ah): SL is 4 bits, the
// static rate an enum ibv_rate value (0, 2..24), DLID 0 is reserved and a
// multicast DLID needs a GRH. On a RoCE port the DLID is not used and not
// checked. Each used to be accepted.
func TestCreateAHValues(t *testing.T) {
	attr := sim.DefaultDeviceAttr()
	attr.PhysPortCnt = 0
	f := fabric(t, sim.Config{Devices: []sim.DeviceConfig{{Name: "d", Attr: attr, Ports: []sim.PortConfig{
		{}, {Attr: verbs.PortAttr{LinkLayer: verbs.LinkLayerEthernet, GIDTblLen: 4}},
	}}}})
	ctx, _ := f.Devices()[0].Open()
	pd, _ := ctx.AllocPD()
	grh := verbs.GlobalRoute{DGID: verbs.GID{0: 0xfe, 1: 0x80, 15: 7}, HopLimit: 64}
	for name, c := range map[string]verbs.AHAttr{
		"SL 16":                    {PortNum: 1, DLID: 1, SL: 16},
		"SL 200":                   {PortNum: 1, DLID: 1, SL: 200},
		"RoCE SL 16":               {PortNum: 2, SL: 16, IsGlobal: true, GRH: grh},
		"static rate 1":            {PortNum: 1, DLID: 1, StaticRate: 1},
		"static rate 25":           {PortNum: 1, DLID: 1, StaticRate: 25},
		"static rate 200":          {PortNum: 1, DLID: 1, StaticRate: 200},
		"IB DLID 0":                {PortNum: 1},
		"IB DLID 0 with GRH":       {PortNum: 1, IsGlobal: true, GRH: grh},
		"IB multicast without GRH": {PortNum: 1, DLID: 0xc001},
	} {
		ah, err := pd.CreateAH(c)
		if ah != nil {
			t.Errorf("%s: got an AH", name)
			ah.Destroy()
		}
		wantErrno(t, name, err, syscall.EINVAL)
	}
	for name, c := range map[string]verbs.AHAttr{
		"SL 15":                 {PortNum: 1, DLID: 1, SL: 15},
		"port rate":             {PortNum: 1, DLID: 1, StaticRate: 0},
		"2.5 Gb/s":              {PortNum: 1, DLID: 1, StaticRate: 2},
		"1200 Gb/s":             {PortNum: 1, DLID: 1, StaticRate: 24},
		"permissive DLID":       {PortNum: 1, DLID: 0xffff},
		"IB multicast with GRH": {PortNum: 1, DLID: 0xc001, IsGlobal: true, GRH: grh},
		"RoCE DLID 0":           {PortNum: 2, IsGlobal: true, GRH: grh},
		"RoCE DLID 7":           {PortNum: 2, DLID: 7, IsGlobal: true, GRH: grh},
	} {
		ah, err := pd.CreateAH(c)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		ah.Destroy()
	}
}
