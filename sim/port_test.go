package sim_test

import (
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// TestDefaultPort: one active InfiniBand port with a LID, the SM's LID, the
// link-local GID of its GUID and the default P_Key.
func TestDefaultPort(t *testing.T) {
	ctx := open(t, sim.Config{})
	a, err := ctx.QueryPort(1)
	if err != nil {
		t.Fatal(err)
	}
	want := sim.DefaultPortAttr()
	want.LID, want.SMLID = 1, 1
	if a != want {
		t.Errorf("QueryPort(1) = %+v, want %+v", a, want)
	}
	if a.ActiveMTU.Bytes() != 4096 || a.State.String() != "PORT_ACTIVE" || a.LinkLayer.String() != "InfiniBand" {
		t.Errorf("mtu %d, state %v, link layer %v", a.ActiveMTU.Bytes(), a.State, a.LinkLayer)
	}
	g, err := ctx.QueryGID(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	var raw [16]byte = g // a GID is a [16]byte
	guid := ctx.Device().GUID()
	if raw[0] != 0xfe || raw[1] != 0x80 || g.String() != "fe80::2:c903:0:100" || guid != 0x0002c90300000100 {
		t.Errorf("GID[0] = %v for node GUID %#x", g, guid)
	}
	if g, err := ctx.QueryGID(1, 127); err != nil || !g.IsZero() {
		t.Errorf("unused GID entry: %v, %v; want the zero GID", g, err)
	}
	if k, err := ctx.QueryPKey(1, 0); err != nil || k != 0xffff {
		t.Errorf("QueryPKey(1, 0) = %#x, %v; want 0xffff", k, err)
	}
	if k, err := ctx.QueryPKey(1, 127); err != nil || k != 0 {
		t.Errorf("unused P_Key entry: %#x, %v", k, err)
	}
}

// TestPortQueryErrors: port 0, a port past phys_port_cnt, table indexes out
// of range, and a closed or nil context are EINVAL.
func TestPortQueryErrors(t *testing.T) {
	ctx := open(t, sim.Config{})
	for _, c := range []struct {
		what string
		err  error
	}{
		{"QueryPort(0)", second(ctx.QueryPort(0))},
		{"QueryPort(2)", second(ctx.QueryPort(2))},
		{"QueryGID(0, 0)", second(ctx.QueryGID(0, 0))},
		{"QueryGID(1, -1)", second(ctx.QueryGID(1, -1))},
		{"QueryGID(1, 128)", second(ctx.QueryGID(1, 128))},
		{"QueryPKey(2, 0)", second(ctx.QueryPKey(2, 0))},
		{"QueryPKey(1, 128)", second(ctx.QueryPKey(1, 128))},
		{"QueryPKey(1, -1)", second(ctx.QueryPKey(1, -1))},
	} {
		if !errors.Is(c.err, syscall.EINVAL) {
			t.Errorf("%s: %v, want EINVAL", c.what, c.err)
		}
	}
	var nilCtx *sim.Context
	if _, err := nilCtx.QueryPort(1); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("QueryPort on nil: %v", err)
	}
	if _, err := nilCtx.QueryGID(1, 0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("QueryGID on nil: %v", err)
	}
	if _, err := nilCtx.QueryPKey(1, 0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("QueryPKey on nil: %v", err)
	}
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ctx.QueryPort(1); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("QueryPort on a closed context: %v", err)
	}
}

func second[T any](_ T, err error) error { return err }

// TestPortAddressing: LIDs are unique across the fabric and assigned in
// device and port order around configured ones, LMC blocks stay aligned,
// Ethernet ports have no LID and RoCE-style GIDs, and every port reports
// the first InfiniBand port's LID as SM LID.
func TestPortAddressing(t *testing.T) {
	attr := sim.DefaultDeviceAttr()
	attr.PhysPortCnt = 0
	f := fabric(t, sim.Config{Devices: []sim.DeviceConfig{
		{Name: "a", Attr: attr, Ports: []sim.PortConfig{{}, {Attr: verbs.PortAttr{LID: 2}}, {Attr: verbs.PortAttr{LMC: 2}}}},
		{Name: "b", Attr: attr, Ports: []sim.PortConfig{
			{Attr: verbs.PortAttr{LinkLayer: verbs.LinkLayerEthernet}},
			{GIDs: []verbs.GID{{}, {0: 0x20, 15: 9}}, PKeys: []uint16{0x8001, 0x7fff}},
		}},
	}})
	type want struct {
		lid, sm uint16
		ll      verbs.LinkLayer
	}
	wants := [][]want{
		{{1, 1, verbs.LinkLayerInfiniBand}, {2, 1, verbs.LinkLayerInfiniBand}, {4, 1, verbs.LinkLayerInfiniBand}},
		{{0, 0, verbs.LinkLayerEthernet}, {3, 1, verbs.LinkLayerInfiniBand}},
	}
	for di, d := range f.Devices() {
		ctx, err := d.Open()
		if err != nil {
			t.Fatal(err)
		}
		if got := int(d.Attr().PhysPortCnt); got != len(wants[di]) {
			t.Fatalf("%s: phys_port_cnt %d", d.Name(), got)
		}
		for pi, w := range wants[di] {
			a, err := ctx.QueryPort(uint8(pi + 1))
			if err != nil {
				t.Fatal(err)
			}
			if a.LID != w.lid || a.SMLID != w.sm || a.LinkLayer != w.ll {
				t.Errorf("%s port %d: lid %d sm_lid %d link %v; want %d %d %v", d.Name(), pi+1, a.LID, a.SMLID, a.LinkLayer, w.lid, w.sm, w.ll)
			}
		}
	}
	ctx, _ := f.Devices()[1].Open()
	eth, _ := ctx.QueryPort(1)
	if eth.GIDTblLen != 256 || eth.PKeyTblLen != 1 || eth.PortCapFlags&verbs.PortCapIPBasedGIDs == 0 {
		t.Errorf("Ethernet port defaults: %+v", eth)
	}
	// Port GUID = node GUID + port - 1; on Ethernet the U/L bit is flipped.
	if g, _ := ctx.QueryGID(1, 0); g.String() != "fe80::202:c903:0:200" {
		t.Errorf("Ethernet GID[0] = %v", g)
	}
	if g, _ := ctx.QueryGID(2, 0); g.String() != "fe80::2:c903:0:201" {
		t.Errorf("IB port 2 GID[0] = %v", g)
	}
	if g, _ := ctx.QueryGID(2, 1); g.String() != "2000::9" {
		t.Errorf("configured GID[1] = %v", g)
	}
	if k, _ := ctx.QueryPKey(2, 1); k != 0x7fff {
		t.Errorf("configured P_Key[1] = %#x", k)
	}

	// Deterministic: the same configuration, the same LIDs.
	again := fabric(t, sim.Config{Devices: []sim.DeviceConfig{{Name: "a", Attr: attr, Ports: make([]sim.PortConfig, 3)}}})
	c2, _ := again.Devices()[0].Open()
	for p := uint8(1); p <= 3; p++ {
		if a, _ := c2.QueryPort(p); a.LID != uint16(p) {
			t.Errorf("port %d of a fresh fabric has LID %d", p, a.LID)
		}
	}
}

// TestEnumStrings covers the String methods and MTU.Bytes.
func TestEnumStrings(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{verbs.PortDown.String(), "PORT_DOWN"},
		{verbs.PortActiveDefer.String(), "PORT_ACTIVE_DEFER"},
		{verbs.PortState(9).String(), "PortState(9)"},
		{verbs.MTU256.String(), "256"},
		{verbs.MTU(0).String(), "MTU(0)"},
		{verbs.LinkLayerEthernet.String(), "Ethernet"},
		{verbs.LinkLayerUnspecified.String(), "Unspecified"},
		{verbs.LinkLayer(7).String(), "LinkLayer(7)"},
		{(verbs.AccessLocalWrite | verbs.AccessRemoteRead).String(), "LOCAL_WRITE|REMOTE_READ"},
		{verbs.AccessFlags(0).String(), "0"},
		{(verbs.AccessRelaxedOrdering | 1<<12).String(), "RELAXED_ORDERING|0x1000"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	for m, b := range map[verbs.MTU]int{0: 0, verbs.MTU256: 256, verbs.MTU512: 512, verbs.MTU1024: 1024, verbs.MTU2048: 2048, verbs.MTU4096: 4096, 6: 0} {
		if m.Bytes() != b {
			t.Errorf("MTU(%d).Bytes() = %d, want %d", m, m.Bytes(), b)
		}
	}
}

// TestEnumsMatchVerbsH checks the port, MTU, link-layer, atomic and device
// capability constants against the installed <infiniband/verbs.h>
// (rdma-core 44); skipped where the header is not installed.
func TestEnumsMatchVerbsH(t *testing.T) {
	src, err := os.ReadFile("/usr/include/infiniband/verbs.h")
	if err != nil {
		t.Skip("no <infiniband/verbs.h>:", err)
	}
	enums := parseEnums(string(src))
	for name, v := range map[string]uint64{
		"IBV_PORT_NOP": uint64(verbs.PortNOP), "IBV_PORT_DOWN": uint64(verbs.PortDown), "IBV_PORT_INIT": uint64(verbs.PortInit),
		"IBV_PORT_ARMED": uint64(verbs.PortArmed), "IBV_PORT_ACTIVE": uint64(verbs.PortActive), "IBV_PORT_ACTIVE_DEFER": uint64(verbs.PortActiveDefer),
		"IBV_MTU_256": uint64(verbs.MTU256), "IBV_MTU_512": uint64(verbs.MTU512), "IBV_MTU_1024": uint64(verbs.MTU1024),
		"IBV_MTU_2048": uint64(verbs.MTU2048), "IBV_MTU_4096": uint64(verbs.MTU4096),
		"IBV_LINK_LAYER_UNSPECIFIED": uint64(verbs.LinkLayerUnspecified), "IBV_LINK_LAYER_INFINIBAND": uint64(verbs.LinkLayerInfiniBand),
		"IBV_LINK_LAYER_ETHERNET": uint64(verbs.LinkLayerEthernet),
		"IBV_ATOMIC_NONE":         uint64(verbs.AtomicNone), "IBV_ATOMIC_HCA": uint64(verbs.AtomicHCA), "IBV_ATOMIC_GLOB": uint64(verbs.AtomicGlob),
		"IBV_DEVICE_BAD_PKEY_CNTR": uint64(verbs.DeviceBadPKeyCntr), "IBV_DEVICE_BAD_QKEY_CNTR": uint64(verbs.DeviceBadQKeyCntr),
		"IBV_DEVICE_CHANGE_PHY_PORT": uint64(verbs.DeviceChangePhyPort), "IBV_DEVICE_CURR_QP_STATE_MOD": uint64(verbs.DeviceCurrQPStateMod),
		"IBV_DEVICE_PORT_ACTIVE_EVENT": uint64(verbs.DevicePortActiveEvt), "IBV_DEVICE_SYS_IMAGE_GUID": uint64(verbs.DeviceSysImageGUID),
		"IBV_DEVICE_RC_RNR_NAK_GEN": uint64(verbs.DeviceRCRNRNakGen), "IBV_DEVICE_SRQ_RESIZE": uint64(verbs.DeviceSRQResize),
		"IBV_DEVICE_MEM_WINDOW":       uint64(verbs.DeviceMemWindow),
		"IBV_PORT_SYS_IMAGE_GUID_SUP": uint64(verbs.PortCapSysImageGUIDSup), "IBV_PORT_CM_SUP": uint64(verbs.PortCapCMSup),
		"IBV_PORT_CLIENT_REG_SUP": uint64(verbs.PortCapClientRegSup), "IBV_PORT_IP_BASED_GIDS": uint64(verbs.PortCapIPBasedGIDs),
	} {
		got, ok := enums[name]
		if !ok {
			t.Errorf("%s is not in verbs.h", name)
		} else if got != v {
			t.Errorf("%s = %d in verbs.h, %d in sim", name, got, v)
		}
	}
}

// parseEnums reads the enumerators of every enum in a C header: explicit
// values (decimal, hex, 1 << n) and implicit ones counted from the previous.
func parseEnums(src string) map[string]uint64 {
	out := map[string]uint64{}
	enumRE := regexp.MustCompile(`(?s)enum\s*\w*\s*\{(.*?)\}`)
	itemRE := regexp.MustCompile(`^\s*(IBV_\w+)\s*(?:=\s*(.+?))?\s*$`)
	shiftRE := regexp.MustCompile(`^\(?\s*(\d+)\s*<<\s*(\d+)\s*\)?$`)
	for _, m := range enumRE.FindAllStringSubmatch(src, -1) {
		next := uint64(0)
		for _, item := range strings.Split(m[1], ",") {
			item = regexp.MustCompile(`(?s)/\*.*?\*/`).ReplaceAllString(item, "")
			f := itemRE.FindStringSubmatch(item)
			if f == nil {
				continue
			}
			v := next
			if f[2] != "" {
				if s := shiftRE.FindStringSubmatch(f[2]); s != nil {
					a, _ := strconv.ParseUint(s[1], 10, 64)
					b, _ := strconv.ParseUint(s[2], 10, 64)
					v = a << b
				} else if n, err := strconv.ParseUint(f[2], 0, 64); err == nil {
					v = n
				} else {
					continue // an expression this parser does not evaluate
				}
			}
			out[f[1]] = v
			next = v + 1
		}
	}
	return out
}
