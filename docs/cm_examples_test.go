package docs_test

// ---- rdma_cm.md ----

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/verbsim/verbsim/examples/cmecho"
	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/simtest"
	"github.com/verbsim/verbsim/verbs"
)

// TestRCOverCMSnippet is the quick start's one-call pair.
func TestRCOverCMSnippet(t *testing.T) {
	a, b := simtest.RCOverCM(t, simtest.PairOptions{})
	// a.ID, b.ID are the rdma_cm IDs; a.QP and b.QP are in RTS, connected.
	for _, e := range []*simtest.End{a, b} {
		attr, _, err := e.QP.Query(verbs.QPAttrState | verbs.QPAttrDestQPN)
		if err != nil || e.ID == nil || attr.QPState != verbs.QPStateRTS || attr.DestQPNum != e.Peer.QP.Num() {
			t.Fatalf("%s: ID %v, QP %+v, %v", e.Name, e.ID, attr, err)
		}
	}
}

// TestCMEchoSnippet is the quick start's echo over the CM.
func TestCMEchoSnippet(t *testing.T) {
	simtest.InBubble(t, simtest.Options{}, func(t *testing.T, f *simtest.Fabric) {
		ctx, stop := context.WithCancel(t.Context())
		cm := f.RDMACM()
		srv, _ := cmecho.Listen(cm, netip.AddrPortFrom(f.Devices()[1].PortAddrs(1)[0], 0))
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ctx) }()
		cl, _ := cmecho.Dial(ctx, cm, srv.Addr())
		reply, _ := cl.Call(ctx, []byte("hello"))
		if string(reply) != "hello" {
			t.Fatalf("the echo answered %q", reply)
		}
		if err := cl.Close(ctx); err != nil {
			t.Fatal(err)
		}
		stop()
		<-served
	})
}

// Example_resolveFromAPort: one fabric is one host, so an address of the
// fabric resolves through the port that owns it unless the ID is given a
// source address (rdma_cm.md, Addresses).
func Example_resolveFromAPort() {
	f, _ := sim.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "b"}}})
	defer f.Close()
	cm := f.RDMACM()
	aAddr, bAddr := f.Devices()[0].PortAddrs(1)[0], f.Devices()[1].PortAddrs(1)[0]
	ch, _ := cm.CreateEventChannel()
	for _, from := range []string{"no source", "a's address"} {
		id, _ := cm.CreateID(ch, nil, rdmacm.PSTCP)
		if from == "no source" {
			id.ResolveAddr(netip.AddrPort{}, netip.AddrPortFrom(bAddr, 7471), time.Second)
		} else {
			id.ResolveAddr(netip.AddrPortFrom(aAddr, 0), netip.AddrPortFrom(bAddr, 7471), time.Second)
		}
		ev, _ := ch.TryGetEvent()
		dev, _ := sim.ContextOf(id.Verbs())
		fmt.Printf("%s: %v, leaves %v from device %s\n", from, ev.Type(), id.LocalAddr().Addr(), dev.Device().Name())
		ev.Ack()
		id.Destroy(context.Background())
	}
	// Output:
	// no source: RDMA_CM_EVENT_ADDR_RESOLVED, leaves 10.0.2.1 from device b
	// a's address: RDMA_CM_EVENT_ADDR_RESOLVED, leaves 10.0.1.1 from device a
}
