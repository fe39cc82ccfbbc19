//go:build cgo && linux

package cverbs_test

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/verbsim/verbsim/cverbs"
	"github.com/verbsim/verbsim/examples/cmecho"
	"github.com/verbsim/verbsim/rdmacm"
)

// cmDevice reports whether the host has an RDMA CM device, through which
// librdmacm works.
func cmDevice() bool {
	_, err := os.Stat("/dev/infiniband/rdma_cm")
	return err == nil
}

// TestRDMACMWithoutDevice: on a host without an RDMA CM device every entry
// point of the binding fails with librdmacm's errno (ENODEV), as a
// *cverbs.Error naming the call; none panics or hangs.
func TestRDMACMWithoutDevice(t *testing.T) {
	if cmDevice() {
		t.Skip("the host has /dev/infiniband/rdma_cm: TestRDMACMEcho runs instead")
	}
	cm := cverbs.RDMACM()
	check := func(what string, err error) {
		t.Helper()
		var e *cverbs.Error
		if !errors.As(err, &e) || !errors.Is(err, syscall.ENODEV) {
			t.Errorf("%s without a CM device: %v, want a *cverbs.Error with ENODEV", what, err)
		}
	}
	_, err := cm.CreateEventChannel()
	check("rdma_create_event_channel", err)
	_, err = cm.CreateID(nil, nil, rdmacm.PSTCP)
	check("rdma_create_id (synchronous)", err)
	_, err = cm.Devices()
	check("rdma_get_devices", err)
	_, err = cm.CreateEP(&rdmacm.AddrInfo{Flags: rdmacm.AIPassive, PortSpace: rdmacm.PSTCP,
		Src: netip.MustParseAddrPort("10.0.0.1:7471")}, nil, nil)
	check("rdma_create_ep", err)
}

// TestRDMACMEcho runs examples/cmecho over the binding, on the host's RDMA
// CM device (an adapter, soft-RoCE, or verbsim's drop-in librdmacm once
// it exists): the same program TestEcho runs on the simulator in process.
// VERBSIM_CM_ADDR names the local IP address to listen on.
func TestRDMACMEcho(t *testing.T) {
	addr := os.Getenv("VERBSIM_CM_ADDR")
	if !cmDevice() || addr == "" {
		t.Skip("needs an RDMA CM device (/dev/infiniband/rdma_cm) and VERBSIM_CM_ADDR, a local IP address on it")
	}
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		t.Fatalf("VERBSIM_CM_ADDR: %v", err)
	}
	ctx, stop := context.WithTimeout(t.Context(), time.Minute) // a hang guard only
	defer stop()
	cm := cverbs.RDMACM()
	srv, err := cmecho.Listen(cm, netip.AddrPortFrom(ip, 0))
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	sctx, sstop := context.WithCancel(ctx)
	go func() { served <- srv.Serve(sctx) }()
	cl, err := cmecho.Dial(ctx, cm, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := cl.Call(ctx, []byte("hello")); err != nil || string(got) != "hello" {
		t.Fatalf("Call = %q, %v", got, err)
	}
	if err := cl.Close(ctx); err != nil {
		t.Fatal(err)
	}
	sstop()
	<-served
}
