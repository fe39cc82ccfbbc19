// Package echo is a small RDMA application written only against package
// verbs: an RC echo service. A server answers every message with the same
// bytes; a client sends a message and waits for its answer. Both run an
// event-driven completion loop: wait for a completion event, acknowledge
// it, re-arm the CQ, then poll until the CQ is empty.
//
// It imports no simulator: the same code runs on verbsim in tests
// ((*sim.Device).Verbs, see echo_test.go, which uses simtest inside
// testing/synctest and a targeted packet fault) and on a real adapter
// through a binding of package verbs to libibverbs. Connection set-up
// exchanges an Address out of band, as RDMA programs do (over TCP, say).
package echo

import (
	"context"
	"errors"
	"fmt"

	"github.com/verbsim/verbsim/verbs"
)

// Config sizes an Endpoint.
type Config struct {
	Slots   int // messages in flight: receive buffers posted (default 8)
	MsgSize int // the largest message (default 256)
	// RetryCnt is the QP's retry_cnt: how often a send is retransmitted
	// after an ACK timeout before it fails with IBV_WC_RETRY_EXC_ERR
	// (default 3).
	RetryCnt uint8
	// Timeout is the QP's local ACK timeout code, 4.096 µs × 2^Timeout
	// (default 14, about 67 ms).
	Timeout uint8
}

func (c *Config) fill() {
	if c.Slots == 0 {
		c.Slots = 8
	}
	if c.MsgSize == 0 {
		c.MsgSize = 256
	}
	if c.RetryCnt == 0 {
		c.RetryCnt = 3
	}
	if c.Timeout == 0 {
		c.Timeout = 14
	}
}

// Endpoint is one side of an echo connection: a device context, a PD, a
// completion channel, one CQ for both queues, a registered buffer of
// 2×Slots message slots (receives in the first half, sends in the second)
// and an RC QP.
type Endpoint struct {
	Ctx  verbs.Context
	PD   verbs.PD
	Chan verbs.CompChannel
	CQ   verbs.CQ
	MR   verbs.MR
	QP   verbs.QP
	Buf  []byte

	cfg  Config
	wcs  []verbs.WC
	next int // the next send slot
}

// Open opens dev and builds an Endpoint on its port 1. The QP is in RESET
// until Connect.
func Open(dev verbs.Device, cfg Config) (_ *Endpoint, err error) {
	cfg.fill()
	e := &Endpoint{cfg: cfg, Buf: make([]byte, 2*cfg.Slots*cfg.MsgSize), wcs: make([]verbs.WC, 16)}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	if e.Ctx, err = dev.Open(); err != nil {
		return nil, err
	}
	if e.PD, err = e.Ctx.AllocPD(); err != nil {
		return nil, err
	}
	if e.Chan, err = e.Ctx.CreateCompChannel(); err != nil {
		return nil, err
	}
	if e.CQ, err = e.Ctx.CreateCQ(4*cfg.Slots, e, e.Chan, 0); err != nil {
		return nil, err
	}
	if e.MR, err = e.PD.RegMR(e.Buf, verbs.AccessLocalWrite); err != nil {
		return nil, err
	}
	n := uint32(cfg.Slots)
	e.QP, err = e.PD.CreateQP(verbs.QPInitAttr{SendCQ: e.CQ, RecvCQ: e.CQ, Type: verbs.QPTypeRC,
		Cap: verbs.QPCap{MaxSendWR: n, MaxRecvWR: n, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Close destroys what Open made, in reverse order.
func (e *Endpoint) Close() error {
	ctx := context.Background()
	var errs []error
	if e.QP != nil {
		errs = append(errs, e.QP.DestroyContext(ctx))
	}
	if e.MR != nil {
		errs = append(errs, e.MR.Dereg())
	}
	if e.CQ != nil {
		errs = append(errs, e.CQ.DestroyContext(ctx))
	}
	if e.Chan != nil {
		errs = append(errs, e.Chan.Destroy())
	}
	if e.PD != nil {
		errs = append(errs, e.PD.Dealloc())
	}
	if e.Ctx != nil {
		errs = append(errs, e.Ctx.Close())
	}
	return errors.Join(errs...)
}

// Address is what a peer needs to connect to an Endpoint.
type Address struct {
	LID    uint16
	GID    verbs.GID
	Global bool // the port is Ethernet (RoCE): paths carry a GRH
	QPN    uint32
	PSN    uint32
}

// Address returns e's address (port 1, GID index 0).
func (e *Endpoint) Address() (Address, error) {
	pa, err := e.Ctx.QueryPort(1)
	if err != nil {
		return Address{}, err
	}
	gid, err := e.Ctx.QueryGID(1, 0)
	if err != nil {
		return Address{}, err
	}
	return Address{LID: pa.LID, GID: gid, Global: pa.LinkLayer == verbs.LinkLayerEthernet,
		QPN: e.QP.Num(), PSN: e.QP.Num() & verbs.PSNMask}, nil
}

// Connect takes e's QP through INIT and RTR to RTS, connected to remote,
// and posts a receive in every receive slot.
func (e *Endpoint) Connect(remote Address) error {
	pa, err := e.Ctx.QueryPort(1)
	if err != nil {
		return err
	}
	init := verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1}
	if err := e.QP.Modify(&init, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags); err != nil {
		return fmt.Errorf("echo: to INIT: %w", err)
	}
	av := verbs.AHAttr{DLID: remote.LID, PortNum: 1}
	if remote.Global {
		av.IsGlobal, av.GRH = true, verbs.GlobalRoute{DGID: remote.GID, HopLimit: 64}
	}
	rtr := verbs.QPAttr{QPState: verbs.QPStateRTR, PathMTU: pa.ActiveMTU, DestQPNum: remote.QPN,
		RQPSN: remote.PSN, MaxDestRDAtomic: 1, MinRNRTimer: 12, AHAttr: av}
	if err := e.QP.Modify(&rtr, verbs.QPAttrState|verbs.QPAttrAV|verbs.QPAttrPathMTU|verbs.QPAttrDestQPN|
		verbs.QPAttrRQPSN|verbs.QPAttrMaxDestRDAtomic|verbs.QPAttrMinRNRTimer); err != nil {
		return fmt.Errorf("echo: to RTR: %w", err)
	}
	local, err := e.Address()
	if err != nil {
		return err
	}
	rts := verbs.QPAttr{QPState: verbs.QPStateRTS, SQPSN: local.PSN, Timeout: e.cfg.Timeout,
		RetryCnt: e.cfg.RetryCnt, RNRRetry: 7, MaxRDAtomic: 1}
	if err := e.QP.Modify(&rts, verbs.QPAttrState|verbs.QPAttrSQPSN|verbs.QPAttrTimeout|
		verbs.QPAttrRetryCnt|verbs.QPAttrRNRRetry|verbs.QPAttrMaxQPRDAtomic); err != nil {
		return fmt.Errorf("echo: to RTS: %w", err)
	}
	for i := range e.cfg.Slots {
		if err := e.postRecv(i); err != nil {
			return err
		}
	}
	return e.CQ.ReqNotify(false)
}

// slot returns the SGE of message slot i (receives 0..Slots-1, sends
// Slots..2×Slots-1), n bytes long.
func (e *Endpoint) slot(i, n int) verbs.SGE {
	return verbs.SGE{Addr: e.MR.Addr() + uint64(i*e.cfg.MsgSize), Length: uint32(n), LKey: e.MR.LKey()}
}

func (e *Endpoint) postRecv(i int) error {
	_, err := e.QP.PostRecv([]verbs.RecvWR{{WRID: uint64(i), SGList: []verbs.SGE{e.slot(i, e.cfg.MsgSize)}}})
	return err
}

// send copies msg into the next send slot and posts it as a signaled SEND.
func (e *Endpoint) send(msg []byte) error {
	if len(msg) > e.cfg.MsgSize {
		return fmt.Errorf("echo: a message of %d bytes is above MsgSize %d", len(msg), e.cfg.MsgSize)
	}
	i := e.cfg.Slots + e.next
	e.next = (e.next + 1) % e.cfg.Slots
	copy(e.Buf[i*e.cfg.MsgSize:], msg)
	_, err := e.QP.PostSend([]verbs.SendWR{{WRID: uint64(i), Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{e.slot(i, len(msg))}}})
	return err
}

// CompletionError is a work completion that failed: the application's
// view of an error status (WC-03: only WRID, Status, VendorErr and QPNum
// are defined then).
type CompletionError struct {
	WC verbs.WC
}

func (e *CompletionError) Error() string {
	return fmt.Sprintf("echo: work request %d failed: %v", e.WC.WRID, e.WC.Status)
}

// events runs the completion loop until handle says it is done: wait for
// an event, acknowledge it, re-arm, and poll until the CQ is empty (a
// completion that arrives between the last poll and the re-arm raises a
// new event, so none is missed). handle is called for each completion.
func (e *Endpoint) events(ctx context.Context, handle func(w *verbs.WC) (done bool, err error)) error {
	for {
		for {
			n, err := e.CQ.Poll(e.wcs)
			if err != nil {
				return err
			}
			if n == 0 {
				break
			}
			for i := range e.wcs[:n] {
				if done, err := handle(&e.wcs[i]); done || err != nil {
					return err
				}
			}
		}
		cq, _, err := e.Chan.GetEvent(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err() // the caller ended the loop
			}
			return err
		}
		if err := cq.AckEvents(1); err != nil {
			return err
		}
		if err := cq.ReqNotify(false); err != nil {
			return err
		}
	}
}

// Serve answers every message with the same bytes until ctx ends (it
// then returns ctx's error) or a completion fails (a *CompletionError).
func (e *Endpoint) Serve(ctx context.Context) error {
	return e.events(ctx, func(w *verbs.WC) (bool, error) {
		if w.Status != verbs.WCSuccess {
			return true, &CompletionError{WC: *w}
		}
		if w.Opcode != verbs.WCRecv {
			return false, nil // an answer went out
		}
		i := int(w.WRID)
		msg := e.Buf[i*e.cfg.MsgSize : i*e.cfg.MsgSize+int(w.ByteLen)]
		if err := e.send(msg); err != nil {
			return true, err
		}
		return false, e.postRecv(i)
	})
}

// Call sends msg and returns the answer, waiting until ctx ends at most.
// A send or receive that fails (the peer is unreachable: retries exhausted)
// is a *CompletionError.
func (e *Endpoint) Call(ctx context.Context, msg []byte) ([]byte, error) {
	if err := e.send(msg); err != nil {
		return nil, err
	}
	var answer []byte
	sent := false
	err := e.events(ctx, func(w *verbs.WC) (bool, error) {
		if w.Status != verbs.WCSuccess {
			return true, &CompletionError{WC: *w}
		}
		switch w.Opcode {
		case verbs.WCSend:
			sent = true
		case verbs.WCRecv:
			i := int(w.WRID)
			answer = append([]byte(nil), e.Buf[i*e.cfg.MsgSize:i*e.cfg.MsgSize+int(w.ByteLen)]...)
			if err := e.postRecv(i); err != nil {
				return true, err
			}
		}
		return sent && answer != nil, nil
	})
	return answer, err
}

// Pair opens an Endpoint on each device and connects them, exchanging
// their addresses in memory (two processes would send them over a socket).
func Pair(server, client verbs.Device, cfg Config) (srv, cli *Endpoint, err error) {
	if srv, err = Open(server, cfg); err != nil {
		return nil, nil, err
	}
	if cli, err = Open(client, cfg); err != nil {
		srv.Close()
		return nil, nil, err
	}
	sa, err := srv.Address()
	if err == nil {
		var ca Address
		if ca, err = cli.Address(); err == nil {
			if err = srv.Connect(ca); err == nil {
				err = cli.Connect(sa)
			}
		}
	}
	if err != nil {
		cli.Close()
		srv.Close()
		return nil, nil, err
	}
	return srv, cli, nil
}
