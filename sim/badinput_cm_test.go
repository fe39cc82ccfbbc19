package sim_test

import (
	"context"
	"net/netip"
	"syscall"
	"time"

	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// The connection manager's part of the bad-input test: its objects in the
// world, and the entries of its methods in badTable.

// buildCM adds the connection manager's objects to the world.
func (w *badWorld) buildCM() {
	w.cm = w.f.RDMACM()
	w.cmCh = badMust(w.cm.CreateEventChannel()).(*sim.CMChannel)
	addr := w.dev.PortAddrs(1)[0]
	w.cmID = badMust(w.cm.CreateID(w.cmCh, nil, rdmacm.PSTCP)).(*sim.CMID)
	badNoErr(w.cmID.BindAddr(netip.AddrPortFrom(addr, 7000)))
	badNoErr(w.cmID.Listen(4))
	w.cmRes = badMust(w.cm.CreateID(w.cmCh, nil, rdmacm.PSTCP)).(*sim.CMID)
	badNoErr(w.cmRes.ResolveAddr(netip.AddrPort{}, netip.AddrPortFrom(addr, 7000), time.Second))
	w.cmEv = badMust(w.cmCh.TryGetEvent()).(*sim.CMEvent)
	w.cmIdle = badMust(w.cm.CreateID(w.cmCh, nil, rdmacm.PSTCP)).(*sim.CMID)
	w.cmUD = badMust(w.cm.CreateID(w.cmCh, nil, rdmacm.PSUDP)).(*sim.CMID)
	badNoErr(w.cmUD.BindAddr(netip.AddrPortFrom(addr, 7001)))
	w.ocmCh = badMust(w.of.RDMACM().CreateEventChannel()).(*sim.CMChannel)
	w.deadCMCh = badMust(w.cm.CreateEventChannel()).(*sim.CMChannel)
	badNoErr(w.deadCMCh.Destroy())
	w.deadCMID = badMust(w.cm.CreateID(w.cmCh, nil, rdmacm.PSTCP)).(*sim.CMID)
	badNoErr(w.deadCMID.ResolveAddr(netip.AddrPort{}, netip.AddrPortFrom(addr, 7000), time.Second))
	w.deadCMEv = badMust(w.cmCh.TryGetEvent()).(*sim.CMEvent)
	badNoErr(w.deadCMEv.Ack())
	badNoErr(w.deadCMID.Destroy(context.Background()))
}

const cmCovered = "its refusals of state and arguments are the conformance cases of the CM rules; the nil, zero and dead sweeps cover the rest"

func cmCase(in string, want syscall.Errno, call func(w *badWorld) error) badCase {
	return badCase{in: in, want: want, call: call}
}

func init() {
	for k, v := range map[string]badEntry{
		"CM.CreateEventChannel": {reason: noArgs},
		"CM.Devices":            {reason: noArgs + " (it opens the CM's contexts, which Context.Close then refuses)"},
		"CM.CreateID": {cases: []badCase{
			cmCase("a channel of another fabric", einval, func(w *badWorld) error { _, err := w.cm.CreateID(w.ocmCh, nil, rdmacm.PSTCP); return err }),
			cmCase("a destroyed channel", syscall.EBADF, func(w *badWorld) error { _, err := w.cm.CreateID(w.deadCMCh, nil, rdmacm.PSTCP); return err }),
			cmCase("port space 0xffff", einval, func(w *badWorld) error { _, err := w.cm.CreateID(w.cmCh, nil, 0xffff); return err }),
		}},
		"CM.CreateEP": {cases: []badCase{
			{in: "an address nobody has, passive", want: syscall.EADDRNOTAVAIL, moves: true, call: func(w *badWorld) error {
				// rdma_create_ep makes its ID before it binds, and destroys
				// it again when the bind fails, as librdmacm does: the
				// trace shows both.
				_, err := w.cm.CreateEP(&rdmacm.AddrInfo{Flags: rdmacm.AIPassive, PortSpace: rdmacm.PSTCP, Src: netip.MustParseAddrPort("10.254.0.1:1")}, nil, nil)
				return err
			}},
		}},
		"CM.GetAddrInfo": {cases: []badCase{
			cmCase("nothing at all", einval, func(w *badWorld) error { _, err := w.cm.GetAddrInfo("", "", nil); return err }),
		}},
		"CMChannel.GetEvent": {cases: []badCase{
			cmCase("an ended context on an idle channel", syscall.EINTR, func(w *badWorld) error {
				_, err := w.ocmCh.GetEvent(cancelled())
				return err
			}),
		}},
		"CMChannel.TryGetEvent": {reason: noArgs},
		"CMChannel.Len":         {reason: getter},
		"CMChannel.Pending":     {reason: getter},
		"CMChannel.Destroyed":   {reason: getter},
		"CMID.EventCounts":      {reason: getter},
		"CMID.Destroyed":        {reason: getter},
		"CMChannel.TraceName":   {reason: getter},
		"CMChannel.Destroy": {cases: []badCase{
			cmCase("IDs still on it", ebusy, func(w *badWorld) error { return w.cmCh.Destroy() }),
		}},
		"CMEvent.Ack": {cases: []badCase{
			cmCase("an acked event", einval, func(w *badWorld) error { return w.deadCMEv.Ack() }),
		}},
		"CMID.BindAddr": {cases: []badCase{
			cmCase("a bound ID", einval, func(w *badWorld) error { return w.cmRes.BindAddr(netip.MustParseAddrPort("10.0.1.1:9")) }),
			cmCase("an address in use", syscall.EADDRINUSE, func(w *badWorld) error { return w.cmIdle.BindAddr(w.cmID.LocalAddr()) }),
			cmCase("the wildcard on a port in use", syscall.EADDRNOTAVAIL, func(w *badWorld) error {
				return w.cmIdle.BindAddr(netip.AddrPortFrom(netip.IPv4Unspecified(), 7000))
			}),
			cmCase("an address no port has", syscall.EADDRNOTAVAIL, func(w *badWorld) error { return w.cmIdle.BindAddr(netip.MustParseAddrPort("10.254.0.1:1")) }),
		}},
		"CMID.ResolveAddr": {cases: []badCase{
			cmCase("a listener", einval, func(w *badWorld) error {
				return w.cmID.ResolveAddr(netip.AddrPort{}, w.cmID.LocalAddr(), time.Second)
			}),
		}},
		"CMID.ResolveRoute": {cases: []badCase{
			cmCase("a listener", einval, func(w *badWorld) error { return w.cmID.ResolveRoute(time.Second) }),
		}},
		"CMID.Listen": {cases: []badCase{
			cmCase("a second listen", einval, func(w *badWorld) error { return w.cmID.Listen(1) }),
		}},
		"CMID.GetRequest": {cases: []badCase{
			cmCase("a listener with a channel", einval, func(w *badWorld) error { _, err := w.cmID.GetRequest(context.Background()); return err }),
		}},
		"CMID.Connect": {cases: []badCase{
			cmCase("57 bytes of private data", einval, func(w *badWorld) error {
				return w.cmRes.Connect(&rdmacm.ConnParam{QPNum: 1, PrivateData: make([]byte, 57)})
			}),
		}},
		"CMID.Accept": {cases: []badCase{
			cmCase("a listener", einval, func(w *badWorld) error { return w.cmID.Accept(nil) }),
		}},
		"CMID.Reject": {cases: []badCase{
			cmCase("an ID with no request", einval, func(w *badWorld) error { return w.cmRes.Reject(nil) }),
		}},
		"CMID.Establish":  {cases: []badCase{cmCase("an ID with no response", einval, func(w *badWorld) error { return w.cmRes.Establish() })}},
		"CMID.Disconnect": {cases: []badCase{cmCase("an ID with no connection", einval, func(w *badWorld) error { return w.cmRes.Disconnect() })}},
		"CMID.Notify": {cases: []badCase{
			cmCase("an ID with no connection", einval, func(w *badWorld) error { return w.cmRes.Notify(verbs.EventCommEst) }),
		}},
		"CMID.Migrate": {cases: []badCase{
			cmCase("a channel of another fabric", einval, func(w *badWorld) error { return w.cmRes.Migrate(w.ocmCh) }),
			cmCase("a destroyed channel", syscall.EBADF, func(w *badWorld) error { return w.cmRes.Migrate(w.deadCMCh) }),
		}},
		"CMID.SetOption": {cases: []badCase{
			cmCase("REUSEADDR of 1 byte", einval, func(w *badWorld) error {
				return w.cmRes.SetOption(rdmacm.OptionLevelID, rdmacm.OptionReuseAddr, []byte{1})
			}),
			cmCase("an IB path", syscall.ENOSYS, func(w *badWorld) error {
				return w.cmRes.SetOption(rdmacm.OptionLevelIB, rdmacm.OptionIBPath, make([]byte, 8))
			}),
		}},
		"CMID.InitQPAttr": {reason: cmCovered},
		"CMID.CreateQP": {cases: []badCase{
			cmCase("a PD of another fabric", einval, func(w *badWorld) error {
				attr := verbs.QPInitAttr{Type: verbs.QPTypeRC, Cap: rcCaps}
				return w.cmRes.CreateQP(sim.VerbsPD(w.opd), &attr)
			}),
			cmCase("a PD of another context", einval, func(w *badWorld) error {
				attr := verbs.QPInitAttr{Type: verbs.QPTypeRC, Cap: rcCaps}
				return w.cmRes.CreateQP(sim.VerbsPD(w.pd), &attr)
			}),
		}},
		"CMID.DestroyQP":  {cases: []badCase{cmCase("an ID with no QP", einval, func(w *badWorld) error { return w.cmRes.DestroyQP() })}},
		"CMID.CreateSRQ":  {reason: cmCovered},
		"CMID.DestroySRQ": {cases: []badCase{cmCase("an ID with no SRQ", einval, func(w *badWorld) error { return w.cmRes.DestroySRQ() })}},
		"CMID.JoinMulticast": {cases: []badCase{
			cmCase("an RC ID", einval, func(w *badWorld) error { return w.cmRes.JoinMulticast(netip.MustParseAddr("239.0.0.1"), nil) }),
		}},
		"CMID.JoinMulticastEx": {cases: []badCase{
			cmCase("join flag 2", einval, func(w *badWorld) error {
				return w.cmUD.JoinMulticastEx(netip.MustParseAddr("239.0.0.1"), 2, nil)
			}),
		}},
		"CMID.LeaveMulticast": {cases: []badCase{
			cmCase("a group not joined", syscall.EADDRNOTAVAIL, func(w *badWorld) error { return w.cmUD.LeaveMulticast(netip.MustParseAddr("239.0.0.1")) }),
		}},
		"CMID.Destroy": {cases: []badCase{
			cmCase("a destroyed ID", syscall.ENOENT, func(w *badWorld) error { return w.deadCMID.Destroy(context.Background()) }),
			{in: "an event read and not acked, and an ended context", want: syscall.EINTR, moves: true, call: func(w *badWorld) error {
				// As in librdmacm, the kernel's part of the destroy comes
				// first and the wait for the acks after it: the ID is
				// destroyed and still waits (CM-03), as its doc says.
				return w.cmRes.Destroy(cancelled())
			}},
		}},
		"QP.AttachMcast": {cases: []badCase{
			cmCase("an RC QP", einval, func(w *badWorld) error { return w.qp.AttachMcast(verbs.GID{0: 0xff, 15: 1}, 0xc001) }),
			cmCase("a unicast GID", einval, func(w *badWorld) error { return w.ud.AttachMcast(verbs.GID{0: 0xfe, 1: 0x80}, 0xc001) }),
			cmCase("a unicast LID on InfiniBand", einval, func(w *badWorld) error { return w.ud.AttachMcast(verbs.GID{0: 0xff, 15: 1}, 1) }),
			cmCase("a destroyed QP", einval, func(w *badWorld) error { return w.deadQP.AttachMcast(verbs.GID{0: 0xff, 15: 1}, 0xc001) }),
		}},
		"QP.DetachMcast": {cases: []badCase{
			cmCase("a group the QP is not attached to", einval, func(w *badWorld) error { return w.ud.DetachMcast(verbs.GID{0: 0xff, 15: 1}, 0xc001) }),
		}},
		"Fabric.RDMACM": {reason: getter},
		"Device.PortAddrs": {cases: []badCase{{in: "port 0 and port 9", call: func(w *badWorld) error {
			if w.dev.PortAddrs(0) != nil || w.dev.PortAddrs(9) != nil {
				w.failf("PortAddrs of a port that does not exist returned addresses")
			}
			return nil
		}}}},
		"Device.Remove":  {reason: noArgs + "; removing twice is EINVAL, which the dead sweep cannot reach (a device is never destroyed): TestDeviceRemoveTwice_CM24"},
		"CMID.DestroyEP": {reason: "DestroyQP, DestroySRQ and Destroy, whose entries hold its cases; the sweeps cover the rest"},
	} {
		badTable[k] = v
	}
	for _, name := range []string{"Context", "Channel", "PortSpace", "QPType", "Verbs", "PortNum", "PD", "QP", "SRQ",
		"SendCQ", "RecvCQ", "SendCQChannel", "RecvCQChannel", "LocalAddr", "PeerAddr", "Route", "Event", "State", "TraceName"} {
		badTable["CMID."+name] = badEntry{reason: getter}
	}
	for _, name := range []string{"Type", "ID", "ListenID", "Status", "Conn", "UD", "MulticastContext"} {
		badTable["CMEvent."+name] = badEntry{reason: getter}
	}
}
