package sim_test

import (
	"encoding/binary"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/verbs"
)

// TestAtomicWriteDuplicateNotStoredAgain: the response to an ATOMIC_WRITE
// is lost, and the responder's application changes the word before the
// request comes again. The duplicate is answered from the saved result,
// never stored again (XFER-25, XFER-33), and the requester completes
// with IBV_WC_ATOMIC_WRITE.
func TestAtomicWriteDuplicateNotStoredAgain(t *testing.T) {
	for _, p := range sim.Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			f, a, b := rcPair(t, sim.Config{Mode: sim.Manual, Profile: p}, sim.ConnectOptions{Timeout: 5, RetryCnt: 7})
			x, err := f.InjectPacketFault(sim.PacketFault{Match: sim.OfKind(trace.PacketAtomicAck), Action: sim.FaultDrop, Count: 1})
			if err != nil {
				t.Fatal(err)
			}
			binary.NativeEndian.PutUint64(a.buf[0:], 0x1122334455667788)
			if _, err := a.q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRAtomicWrite, Flags: verbs.SendSignaled,
				SGList: []verbs.SGE{a.sge(0, 8)}, RemoteAddr: b.mr.Addr() + 64, RKey: b.mr.RKey()}}); err != nil {
				t.Fatal(err)
			}
			for f.Step() {
			}
			if got := binary.NativeEndian.Uint64(b.buf[64:]); got != 0x1122334455667788 {
				t.Fatalf("after the first delivery the word is %#x", got)
			}
			if x.Hits() != 1 {
				t.Fatalf("%d responses lost, want 1", x.Hits())
			}
			binary.NativeEndian.PutUint64(b.buf[64:], 7) // the application's own store
			f.RunUntilIdle(1 << 30)
			w := a.poll(t, 1)[0]
			if w.Status != verbs.WCSuccess || w.Opcode != verbs.WCAtomicWrite || w.ByteLen != 8 {
				t.Errorf("requester WC %v, want ATOMIC_WRITE, SUCCESS, byte_len 8", &w)
			}
			if got := binary.NativeEndian.Uint64(b.buf[64:]); got != 7 {
				t.Errorf("the word is %#x, want 7: the duplicate ATOMIC_WRITE was stored again", got)
			}
			b.poll(t, 0)
		})
	}
}
