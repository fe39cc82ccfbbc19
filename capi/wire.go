package main

// wire.go is the carrier of the cross-process fabric (docs/c-programs.md):
// it moves the engine's frames between processes over unix datagram
// sockets in the abstract namespace. It knows nothing of package sim: the
// engine hands it a frame and a destination (a LID, or a GID), and it hands
// arriving frames to a function.
//
// Addressing. Every port of every process on a fabric is a station with a
// number n in [1, 0xbfff], unique on the fabric: its socket is bound to the
// abstract name "verbsim/<fabric>/<n>", so bind is the cross-process
// allocator (EADDRINUSE: the number is taken, try the next) and the name
// vanishes when the process dies. The port's LID is n, its port GUID
// stationGUID|n, and its GID 0 the link-local GID made from that GUID, so a
// packet's destination LID or GID names the station to send to. QP numbers
// need no allocation across processes: as on a real fabric, each port has
// its own QPN space, and a packet is addressed by (LID or GID, QPN).
//
// Flow control. Send never blocks the engine: it queues a copy of the frame
// for the destination (up to maxQueued bytes per port; beyond, the frame is
// lost). The engine sends a whole message at once, and a receiving socket
// holds only a few datagrams (net.unix.max_dgram_qlen, 10 by default), so a
// goroutine per destination with frames waiting sends them in order, waiting
// (up to sendWait per frame) while that receiver's queue is full: a burst is
// paced to what the receiver drains, instead of losing its tail (an RC
// responder acknowledges a message at its last packet, so a lost tail costs
// a whole retransmission). Destinations do not wait for each other: a peer
// that stops reading (a stopped or descheduled process) holds back only the
// frames addressed to it, as a congested link to one host would. A frame
// still refused after sendWait, or one for a station nobody holds
// (ECONNREFUSED: the process died), is lost. The engine sees a lost packet:
// RC retransmits and finally reports IBV_WC_RETRY_EXC_ERR, UC and UD lose
// the message.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/verbsim/verbsim/sim"
)

const (
	// stationGUID is the high part of the GUIDs of stations: a Mellanox
	// OUI; the low 16 bits are the station number.
	stationGUID  = 0x0002c90300000000
	maxStation   = 0xbfff // the last unicast LID
	maxFrame     = sim.MaxFrame
	maxQueued    = 64 << 20               // bytes of frames waiting at a port, every destination
	sendWait     = 250 * time.Millisecond // SO_SNDTIMEO: how long a full peer may hold a frame
	recvBufBytes = 4 << 20
)

// wire is this process's attachment to one fabric.
type wire struct {
	fabric   string
	stations map[string][]*station // by device name, port 1 first
	deliver  func([]byte)          // set before start
	dieAfter int64                 // VERBSIM_DIE_AFTER: frames to receive before SIGKILL (0: never)

	mu       sync.Mutex
	received int64
	forged   int64 // frames dropped by fromStation
}

// station is one port of this process on the fabric.
type station struct {
	w    *wire
	n    uint16
	fd   int
	pool sync.Pool

	mu     sync.Mutex
	out    map[uint16]*outq // frames waiting, by destination station
	queued int              // their bytes, every destination
}

// outq is a station's frames for one destination, oldest first. While it
// is not empty exactly one goroutine (drain) sends them; the frame being
// sent stays first in the queue until it has left, so that send sees a
// destination as busy until then and cannot overtake it.
type outq struct {
	to    *syscall.SockaddrUnix
	queue [][]byte
}

func stationName(fabric string, n uint16) string {
	return fmt.Sprintf("@verbsim/%s/%d", fabric, n) // '@': the abstract namespace
}

// newWire attaches to fabric with one block of ports consecutive stations
// for each device name; a device's stations are n, n+1, … for its ports.
func newWire(fabric string, devices []string, ports int) (*wire, error) {
	w := &wire{fabric: fabric, stations: map[string][]*station{}}
	next := 1
	for _, d := range devices {
		st, err := w.allocBlock(&next, ports)
		if err != nil {
			w.close()
			return nil, err
		}
		w.stations[d] = st
	}
	return w, nil
}

// allocBlock binds ports consecutive station numbers from *next on.
func (w *wire) allocBlock(next *int, ports int) ([]*station, error) {
	for base := *next; base+ports-1 <= maxStation; base++ {
		var got []*station
		for p := 0; p < ports; p++ {
			s, err := w.bind(uint16(base + p))
			if err != nil {
				for _, s := range got {
					syscall.Close(s.fd)
				}
				got = nil
				if errors.Is(err, syscall.EADDRINUSE) {
					break
				}
				return nil, fmt.Errorf("fabric %q: station %d: %w", w.fabric, base+p, err)
			}
			got = append(got, s)
		}
		if got != nil {
			*next = base + ports
			return got, nil
		}
	}
	return nil, fmt.Errorf("fabric %q: no %d free station numbers (LIDs) left", w.fabric, ports)
}

func (w *wire) bind(n uint16) (*station, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: stationName(w.fabric, n)}); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	tv := syscall.NsecToTimeval(sendWait.Nanoseconds())
	_ = syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv)
	_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF, recvBufBytes)
	s := &station{w: w, n: n, fd: fd, out: map[uint16]*outq{}}
	s.pool.New = func() any { b := make([]byte, 0, maxFrame); return &b }
	return s, nil
}

// close releases every station (before start only: the goroutines are not
// stopped, the process's exit ends them).
func (w *wire) close() {
	for _, st := range w.stations {
		for _, s := range st {
			syscall.Close(s.fd)
		}
	}
}

// start runs a receiver per station (senders start per destination, while
// frames wait for it).
func (w *wire) start() {
	for _, st := range w.stations {
		for _, s := range st {
			go s.receive()
		}
	}
}

// station returns the station of port (1-based) of device dev, or nil.
func (w *wire) station(dev string, port uint8) *station {
	st := w.stations[dev]
	if port < 1 || int(port) > len(st) {
		return nil
	}
	return st[port-1]
}

// lid is the LID of device dev's port (its station number).
func (w *wire) lid(dev string, port int) uint16 { return w.stations[dev][port-1].n }

// stationOf maps a destination address to a station number; 0 when the
// address is not a station's.
func stationOf(dlid uint16, dgid [16]byte, global bool) uint16 {
	if !global {
		if dlid == 0 || dlid > maxStation {
			return 0
		}
		return dlid
	}
	if binary.BigEndian.Uint64(dgid[:8]) != 0xfe80000000000000 {
		return 0
	}
	iid := binary.BigEndian.Uint64(dgid[8:])
	for _, g := range []uint64{iid, iid ^ 0x02<<56} { // InfiniBand, or an EUI-64 on Ethernet
		if g&^0xffff == stationGUID {
			if n := uint16(g); n != 0 && n <= maxStation {
				return n
			}
		}
	}
	return 0
}

var (
	errNoStation = errors.New("the destination address is on no station of the fabric")
	errNoPort    = errors.New("the sending port has no station")
	errQueueFull = errors.New("the port's send queue is full (the receiver is stuck?)")
)

// send queues frame (copied) from port of dev to the station the address
// names. It never blocks.
func (w *wire) send(dev string, port uint8, dlid uint16, dgid [16]byte, global bool, frame []byte) error {
	s := w.station(dev, port)
	if s == nil {
		return errNoPort
	}
	n := stationOf(dlid, dgid, global)
	if n == 0 {
		return errNoStation
	}
	if len(frame) > maxFrame {
		return fmt.Errorf("frame of %d bytes is above %d", len(frame), maxFrame)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.out[n]
	if q == nil {
		// Each queue has its own address: Sendto writes into it.
		q = &outq{to: &syscall.SockaddrUnix{Name: stationName(w.fabric, n)}}
		s.out[n] = q
	}
	// Straight out when nothing waits before it for this destination: an
	// acknowledgement then leaves before the completion it follows is
	// visible to the program, as an adapter's does, so a program that
	// exits right after its last completion does not take its last ACK
	// with it.
	if len(q.queue) == 0 {
		err := syscall.Sendto(s.fd, frame, syscall.MSG_DONTWAIT, q.to)
		for err == syscall.EINTR {
			err = syscall.Sendto(s.fd, frame, syscall.MSG_DONTWAIT, q.to)
		}
		if err != syscall.EAGAIN {
			return err // nil, or the peer is gone (ECONNREFUSED): lost
		}
	}
	if s.queued+len(frame) > maxQueued {
		return errQueueFull
	}
	bp := s.pool.Get().(*[]byte)
	b := append((*bp)[:0], frame...)
	q.queue = append(q.queue, b)
	s.queued += len(b)
	if len(q.queue) == 1 {
		go s.drain(q)
	}
	return nil
}

// fromStation reports whether frame, which arrived from the socket address
// from, claims the source address of the station bound there: its LID, or
// on an Ethernet port (LID 0) its GID. The kernel names the sender of a
// unix datagram by the address it bound, and a station's address is its
// number, so a frame forged with another station's LID or GID, which the
// engine would take as coming from that station's QPs (XFER-27), never
// reaches the fabric. A frame that does not decode is let through: the
// fabric refuses it.
func (w *wire) fromStation(frame []byte, from syscall.Sockaddr) bool {
	slid, sgid, global, ok := sim.FrameSource(frame)
	if !ok {
		return true
	}
	u, _ := from.(*syscall.SockaddrUnix)
	if u == nil {
		return false
	}
	num, found := strings.CutPrefix(u.Name, "@verbsim/"+w.fabric+"/") // stationName
	n, err := strconv.ParseUint(num, 10, 16)
	if !found || err != nil || n == 0 {
		return false
	}
	if slid != 0 {
		return uint64(slid) == n
	}
	return global && uint64(stationOf(0, sgid, true)) == n
}

// flush waits, at most d, until no frame waits at any station: at exit,
// so that the last packets of a program (an ACK, a final SEND) leave.
func (w *wire) flush(d time.Duration) {
	deadline := time.Now().Add(d)
	for _, st := range w.stations {
		for _, s := range st {
			for time.Now().Before(deadline) {
				s.mu.Lock()
				n := s.queued
				s.mu.Unlock()
				if n == 0 {
					break
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
}

// drain sends q's frames in order until the queue is empty, then ends. A
// frame the peer refuses for sendWait is dropped; see the file comment.
func (s *station) drain(q *outq) {
	for {
		s.mu.Lock()
		b := q.queue[0]
		s.mu.Unlock()
		for {
			if err := syscall.Sendto(s.fd, b, 0, q.to); err != syscall.EINTR {
				break
			}
		}
		s.mu.Lock()
		q.queue[0] = nil
		q.queue = q.queue[1:]
		s.queued -= len(b)
		done := len(q.queue) == 0
		s.mu.Unlock()
		s.pool.Put(&b)
		if done {
			return
		}
	}
}

// receive feeds every frame that arrives at the station to the fabric,
// except one whose source address is not the station it came from
// (fromStation): a process can send only as the stations it holds.
func (s *station) receive() {
	buf := make([]byte, maxFrame+1)
	for {
		n, from, err := syscall.Recvfrom(s.fd, buf, 0)
		if err != nil {
			if err == syscall.EINTR || err == syscall.EAGAIN {
				continue
			}
			fmt.Fprintf(os.Stderr, "verbsim: fabric %q station %d: %v\n", s.w.fabric, s.n, err)
			return
		}
		if !s.w.fromStation(buf[:n], from) {
			s.w.mu.Lock()
			s.w.forged++
			s.w.mu.Unlock()
			continue
		}
		if d := s.w.dieAfter; d > 0 {
			s.w.mu.Lock()
			s.w.received++
			die := s.w.received >= d
			s.w.mu.Unlock()
			if die {
				fmt.Fprintf(os.Stderr, "verbsim: VERBSIM_DIE_AFTER=%d: killing this process\n", d)
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
		}
		s.w.deliver(buf[:n])
	}
}
