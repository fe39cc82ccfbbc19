package simtest_test

import (
	"testing"

	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/simtest"
	"github.com/verbsim/verbsim/verbs"
)

// TestRCOverCM: a pair made through the connection manager passes SENDs,
// RDMA WRITEs and READs both ways, and its IDs disconnect.
func TestRCOverCM(t *testing.T) {
	a, b := simtest.RCOverCM(t, simtest.PairOptions{Recvs: 2})
	if a.ID == nil || b.ID == nil || a.ID.QP() == nil {
		t.Fatal("the ends carry no ID")
	}
	a.Send(1, []byte("hello"))
	a.Await(1)
	if w := b.Await(1)[0]; string(b.Received(w)) != "hello" {
		t.Errorf("b received %q", b.Received(w))
	}
	b.Send(2, []byte("back"))
	b.Await(1)
	if w := a.Await(1)[0]; string(a.Received(w)) != "back" {
		t.Errorf("a received %q", a.Received(w))
	}
	copy(a.Buf, "written")
	a.Write(3, a.Buf[:7], 100)
	if w := a.Await(1)[0]; w.Status != verbs.WCSuccess || string(b.Buf[100:107]) != "written" {
		t.Errorf("WRITE: %v, b holds %q", w.Status, b.Buf[100:107])
	}
	a.Read(4, 7, 100)
	if w := a.Await(1)[0]; w.Status != verbs.WCSuccess {
		t.Errorf("READ: %v", w.Status)
	}
	if err := a.ID.Disconnect(); err != nil {
		t.Fatal(err)
	}
	ev, err := b.CMChan.TryGetEvent()
	if err != nil || ev.Type() != rdmacm.EventDisconnected {
		t.Fatalf("b's event after a's disconnect: %v, %v", ev, err)
	}
	ev.Ack()
}
