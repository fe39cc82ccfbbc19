package sim_test

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

func fabric(t testing.TB, cfg sim.Config) *sim.Fabric {
	t.Helper()
	f, err := sim.NewFabric(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestDefaultDeviceAttr: the defaults are valid, complete, and what a zero
// DeviceAttr becomes, apart from the GUIDs the fabric assigns.
func TestDefaultDeviceAttr(t *testing.T) {
	def := sim.DefaultDeviceAttr()
	f := fabric(t, sim.Config{Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "b", Attr: def}}})
	for i, d := range f.Devices() {
		got := d.Attr()
		if got.NodeGUID == 0 || got.SysImageGUID != got.NodeGUID || d.GUID() != got.NodeGUID {
			t.Errorf("device %d: node GUID %#x, sys image GUID %#x, GUID() %#x", i, got.NodeGUID, got.SysImageGUID, d.GUID())
		}
		got.NodeGUID, got.SysImageGUID = 0, 0
		if diff := cmp.Diff(def, got); diff != "" {
			t.Errorf("device %d attributes differ from DefaultDeviceAttr (-want +got):\n%s", i, diff)
		}
	}
	if def.DeviceCapFlags&verbs.DeviceSRQResize == 0 || def.AtomicCap != verbs.AtomicHCA || def.PhysPortCnt != 1 {
		t.Errorf("default cap flags %#x, atomic cap %d, ports %d", def.DeviceCapFlags, def.AtomicCap, def.PhysPortCnt)
	}
	if def.MaxCQ != 1<<16 || def.MaxCQE != 1<<22-1 || def.NumCompVectors != 4 {
		t.Errorf("the completion core's defaults changed: %+v", def)
	}
}

// TestPartialDeviceAttr: a non-zero DeviceAttr keeps what it sets, takes
// the defaults for the other limits, and keeps a zero AtomicCap and
// DeviceCapFlags.
func TestPartialDeviceAttr(t *testing.T) {
	f := fabric(t, sim.Config{Devices: []sim.DeviceConfig{{Name: "small",
		Attr: verbs.DeviceAttr{MaxCQ: 2, MaxCQE: 16, NumCompVectors: 1, MaxPD: 3, FWVer: "1.2.3"}}}})
	a := f.Devices()[0].Attr()
	def := sim.DefaultDeviceAttr()
	if a.MaxCQ != 2 || a.MaxCQE != 16 || a.NumCompVectors != 1 || a.MaxPD != 3 || a.FWVer != "1.2.3" {
		t.Errorf("the set fields changed: %+v", a)
	}
	if a.MaxQP != def.MaxQP || a.MaxMR != def.MaxMR || a.MaxAH != def.MaxAH || a.MaxInline != def.MaxInline ||
		a.MaxMRSize != def.MaxMRSize || a.VendorID != def.VendorID || a.PhysPortCnt != 1 {
		t.Errorf("the unset limits did not take the defaults: %+v", a)
	}
	if a.AtomicCap != verbs.AtomicNone || a.DeviceCapFlags != 0 {
		t.Errorf("atomic cap %d and cap flags %#x: zero is a setting and must stay", a.AtomicCap, a.DeviceCapFlags)
	}
}

// TestDeviceConfigRejected: nonsense attributes and port configurations
// make NewFabric fail, naming what is wrong.
func TestDeviceConfigRejected(t *testing.T) {
	dev := func(mod func(*sim.DeviceConfig)) sim.Config {
		dc := sim.DeviceConfig{Name: "x", Attr: sim.DefaultDeviceAttr()}
		mod(&dc)
		return sim.Config{Devices: []sim.DeviceConfig{dc}}
	}
	port := func(mod func(*sim.PortConfig)) sim.Config {
		return dev(func(d *sim.DeviceConfig) {
			d.Ports = []sim.PortConfig{{}}
			mod(&d.Ports[0])
		})
	}
	for name, c := range map[string]struct {
		cfg  sim.Config
		want string
	}{
		"no max_cqe":        {dev(func(d *sim.DeviceConfig) { d.Attr.MaxCQE = 0 }), "max_cqe"},
		"negative max_qp":   {dev(func(d *sim.DeviceConfig) { d.Attr.MaxQP = -1 }), "max_qp"},
		"negative max_mr":   {dev(func(d *sim.DeviceConfig) { d.Attr.MaxMR = -5 }), "max_mr"},
		"max_mr too big":    {dev(func(d *sim.DeviceConfig) { d.Attr.MaxMR = 1<<24 + 1 }), "max_mr"},
		"bad atomic cap":    {dev(func(d *sim.DeviceConfig) { d.Attr.AtomicCap = 3 }), "atomic_cap"},
		"long fw_ver":       {dev(func(d *sim.DeviceConfig) { d.Attr.FWVer = strings.Repeat("9", 64) }), "fw_ver"},
		"port count":        {dev(func(d *sim.DeviceConfig) { d.Attr.PhysPortCnt = 2; d.Ports = []sim.PortConfig{{}} }), "phys_port_cnt"},
		"bad state":         {port(func(p *sim.PortConfig) { p.Attr.State = 6 }), "state"},
		"bad mtu":           {port(func(p *sim.PortConfig) { p.Attr.MaxMTU = 6 }), "mtu"},
		"active above max":  {port(func(p *sim.PortConfig) { p.Attr.MaxMTU, p.Attr.ActiveMTU = verbs.MTU1024, verbs.MTU2048 }), "active_mtu"},
		"bad link layer":    {port(func(p *sim.PortConfig) { p.Attr.LinkLayer = 3 }), "link_layer"},
		"too many GIDs":     {port(func(p *sim.PortConfig) { p.Attr.GIDTblLen = 1; p.GIDs = make([]verbs.GID, 2) }), "GIDs"},
		"huge GID table":    {port(func(p *sim.PortConfig) { p.Attr.GIDTblLen = 1 << 20 }), "gid_tbl_len"},
		"too many P_Keys":   {port(func(p *sim.PortConfig) { p.Attr.PKeyTblLen = 1; p.PKeys = []uint16{1, 2} }), "P_Keys"},
		"lmc 8":             {port(func(p *sim.PortConfig) { p.Attr.LMC = 8 }), "lmc"},
		"multicast lid":     {port(func(p *sim.PortConfig) { p.Attr.LID = 0xc000 }), "lid"},
		"unaligned lid":     {port(func(p *sim.PortConfig) { p.Attr.LID, p.Attr.LMC = 5, 2 }), "lid"},
		"ethernet with lid": {port(func(p *sim.PortConfig) { p.Attr.LinkLayer, p.Attr.LID = verbs.LinkLayerEthernet, 7 }), "Ethernet"},
		"two ports one lid": {dev(func(d *sim.DeviceConfig) {
			d.Attr.PhysPortCnt = 2
			d.Ports = []sim.PortConfig{{Attr: verbs.PortAttr{LID: 9}}, {Attr: verbs.PortAttr{LID: 9}}}
		}), "taken"},
		"one GID two ports": {dev(func(d *sim.DeviceConfig) {
			g := verbs.GID{0: 0xfe, 1: 0x80, 15: 1}
			d.Ports = []sim.PortConfig{{GIDs: []verbs.GID{g}}, {GIDs: []verbs.GID{g}}}
			d.Attr.PhysPortCnt = 0
		}), "GID"},
	} {
		_, err := sim.NewFabric(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%s: NewFabric: %v, want EINVAL about %q", name, err, c.want)
		}
	}
	if _, err := sim.NewFabric(sim.Config{Devices: []sim.DeviceConfig{
		{Name: "a", Attr: verbs.DeviceAttr{MaxCQ: 1, MaxCQE: 1, NumCompVectors: 1, NodeGUID: 7}},
		{Name: "b", Attr: verbs.DeviceAttr{MaxCQ: 1, MaxCQE: 1, NumCompVectors: 1, NodeGUID: 7}},
	}}); err == nil || !strings.Contains(err.Error(), "GUID") || !errors.Is(err, syscall.EINVAL) {
		t.Errorf("two devices with one node GUID: %v, want EINVAL", err)
	}
}

// TestConfigNotModified: NewFabric fills in defaults on its own copy.
func TestConfigNotModified(t *testing.T) {
	devs := []sim.DeviceConfig{{Name: "a", Attr: verbs.DeviceAttr{MaxCQ: 1, MaxCQE: 1, NumCompVectors: 1}}}
	fabric(t, sim.Config{Devices: devs})
	if devs[0].Attr.MaxQP != 0 || devs[0].Ports != nil {
		t.Errorf("NewFabric changed the caller's config: %+v", devs[0])
	}
}
