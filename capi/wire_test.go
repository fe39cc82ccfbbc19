package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/verbs"
)

// TestWireStalledPeerHoldsOnlyItsFrames: a peer that stops reading (a
// stopped process) fills its socket's queue; frames for it then wait at
// the sending port, and frames from that port to another peer must not
// wait behind them. The stalled peer then reads again and gets its frames
// in the order they were sent.
func TestWireStalledPeerHoldsOnlyItsFrames(t *testing.T) {
	fabric := fmt.Sprintf("wiretest-%d", os.Getpid())
	w, err := newWire(fabric, []string{"a"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	const stalled, live = 50, 51
	peer := func(n uint16) int {
		fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: stationName(fabric, n)}); err != nil {
			t.Fatal(err)
		}
		// A guard against a hang, not a measure: the frames are expected at once.
		tv := syscall.NsecToTimeval(int64(2 * time.Minute))
		_ = syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
		return fd
	}
	sfd, lfd := peer(stalled), peer(live)
	defer syscall.Close(lfd)

	// Far more frames than the stalled peer's socket holds: the rest wait
	// at the port, each up to sendWait, minutes of them in all.
	const frames = 600
	frame := make([]byte, 1024)
	for i := range frames {
		binary.BigEndian.PutUint32(frame, uint32(i))
		if err := w.send("a", 1, stalled, [16]byte{}, false, frame); err != nil {
			t.Fatalf("frame %d to the stalled peer: %v", i, err)
		}
	}
	s := w.station("a", 1)
	waiting := func(n uint16) int {
		s.mu.Lock()
		defer s.mu.Unlock()
		if q := s.out[n]; q != nil {
			return len(q.queue)
		}
		return 0
	}
	if waiting(stalled) == 0 {
		t.Fatal("no frame waits for the stalled peer: the test does not stall it")
	}
	copy(frame, "live")
	if err := w.send("a", 1, live, [16]byte{}, false, frame); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2048)
	n, _, err := syscall.Recvfrom(lfd, buf, 0)
	if err != nil || string(buf[:4]) != "live" || n != len(frame) {
		t.Fatalf("the live peer got %d bytes %q, %v; want its frame", n, buf[:min(n, 4)], err)
	}
	if k := waiting(stalled); k == 0 {
		t.Fatal("the stalled peer's frames were all gone when the live peer got its frame: it waited behind them")
	}

	// The stalled peer reads again: in order, and (but for frames that
	// timed out on a very slow machine) all of them.
	last, got := -1, 0
	for got < frames {
		tv := syscall.NsecToTimeval(int64(5 * time.Second))
		if got > 0 {
			_ = syscall.SetsockoptTimeval(sfd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
		}
		n, _, err := syscall.Recvfrom(sfd, buf, 0)
		if err != nil {
			break // nothing more comes: the rest timed out while stalled
		}
		i := int(binary.BigEndian.Uint32(buf[:n]))
		if i <= last {
			t.Fatalf("the stalled peer got frame %d after frame %d", i, last)
		}
		last = i
		got++
	}
	syscall.Close(sfd)
	if got == 0 || last != frames-1 {
		t.Fatalf("the stalled peer got %d frames, the last %d; want up to frame %d", got, last, frames-1)
	}
	w.flush(time.Minute)
	if k := waiting(stalled); k != 0 {
		t.Fatalf("%d frames still wait", k)
	}
}

// TestWireDropsFramesOfAnotherStation: the kernel names the station a
// datagram comes from, and a frame claiming another station's LID, or on
// Ethernet its GID, is a forgery (XFER-27): fromStation refuses it.
func TestWireDropsFramesOfAnotherStation(t *testing.T) {
	fabric := fmt.Sprintf("wireforge-%d", os.Getpid())
	w, err := newWire(fabric, []string{"a"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	const sender = 50
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: stationName(fabric, sender)}); err != nil {
		t.Fatal(err)
	}
	s := w.station("a", 1)
	tv := syscall.NsecToTimeval(int64(2 * time.Minute)) // a guard against a hang
	_ = syscall.SetsockoptTimeval(s.fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
	ethGID := func(n uint16) verbs.GID {
		g := verbs.GID{0: 0xfe, 1: 0x80}
		binary.BigEndian.PutUint64(g[8:], (stationGUID|uint64(n))^0x02<<56)
		return g
	}
	for _, c := range []struct {
		name string
		p    sim.WirePacket
		want bool
	}{
		{"the sender's LID", sim.WirePacket{Kind: trace.PacketAck, Transport: verbs.QPTypeRC, SLID: sender, DLID: s.n}, true},
		{"another station's LID", sim.WirePacket{Kind: trace.PacketAck, Transport: verbs.QPTypeRC, SLID: 7, DLID: s.n}, false},
		{"the sender's GID", sim.WirePacket{Kind: trace.PacketAck, Transport: verbs.QPTypeRC, Global: true, SGID: ethGID(sender), DGID: ethGID(s.n)}, true},
		{"another station's GID", sim.WirePacket{Kind: trace.PacketAck, Transport: verbs.QPTypeRC, Global: true, SGID: ethGID(7), DGID: ethGID(s.n)}, false},
		{"no address", sim.WirePacket{Kind: trace.PacketAck, Transport: verbs.QPTypeRC, DGID: ethGID(s.n)}, false},
	} {
		frame := sim.AppendFrame(nil, &c.p)
		if err := syscall.Sendto(fd, frame, 0, &syscall.SockaddrUnix{Name: stationName(fabric, s.n)}); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, maxFrame)
		n, from, err := syscall.Recvfrom(s.fd, buf, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := w.fromStation(buf[:n], from); got != c.want {
			t.Errorf("a frame from station %d claiming %s: taken %v, want %v", sender, c.name, got, c.want)
		}
	}
}
