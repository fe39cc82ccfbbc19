// Package cmecho is an RDMA echo service that connects by IP address
// through the RDMA connection manager, written only against packages
// rdmacm and verbs: a server listens on an address and answers every
// message with the same bytes; a client dials the address, sends messages
// and waits for their answers.
//
// It imports no simulator: its test runs it on verbsim ((*sim.Fabric).RDMACM
// gives the rdmacm.CM), and the same code runs on a real adapter through
// package cverbs's binding of librdmacm. Compare examples/echo, which
// connects its QPs out of band.
package cmecho

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/verbs"
)

// MsgSize is the largest message.
const MsgSize = 256

// slots is how many receives each side keeps posted.
const slots = 4

// conn is one side's QP, its CQs and channels (made by rdma_create_qp)
// and one registered buffer: receive slots first, then a send slot.
type conn struct {
	id  rdmacm.ID
	buf []byte
	mr  verbs.MR
}

// setup gives id a QP whose CQs the CM makes, a buffer, and posted
// receives; the receive CQ is armed.
func setup(id rdmacm.ID) (*conn, error) {
	attr := verbs.QPInitAttr{Type: verbs.QPTypeRC, Cap: verbs.QPCap{MaxSendWR: slots, MaxRecvWR: slots, MaxSendSGE: 1, MaxRecvSGE: 1}}
	if err := id.CreateQP(nil, &attr); err != nil {
		return nil, err
	}
	c := &conn{id: id, buf: make([]byte, (slots+1)*MsgSize)}
	var err error
	if c.mr, err = id.PD().RegMR(c.buf, verbs.AccessLocalWrite); err != nil {
		return nil, err
	}
	for i := range slots {
		if err := c.postRecv(uint64(i)); err != nil {
			return nil, err
		}
	}
	return c, id.RecvCQ().ReqNotify(false)
}

func (c *conn) postRecv(slot uint64) error {
	_, err := c.id.QP().PostRecv([]verbs.RecvWR{{WRID: slot, SGList: []verbs.SGE{{
		Addr: c.mr.Addr() + slot*MsgSize, Length: MsgSize, LKey: c.mr.LKey()}}}})
	return err
}

// send sends msg from the send slot and waits for its completion.
func (c *conn) send(msg []byte) error {
	off := slots * MsgSize
	copy(c.buf[off:], msg)
	_, err := c.id.QP().PostSend([]verbs.SendWR{{WRID: slots, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{{Addr: c.mr.Addr() + uint64(off), Length: uint32(len(msg)), LKey: c.mr.LKey()}}}})
	if err != nil {
		return err
	}
	wcs := make([]verbs.WC, 1)
	for {
		n, err := c.id.SendCQ().Poll(wcs)
		if err != nil {
			return err
		}
		if n == 1 {
			if wcs[0].Status != verbs.WCSuccess {
				return fmt.Errorf("cmecho: send completed with %v", wcs[0].Status)
			}
			return nil
		}
	}
}

// recv waits on the receive CQ's channel for the next message, returns a
// copy of it and posts its slot again.
func (c *conn) recv(ctx context.Context) ([]byte, error) {
	wcs := make([]verbs.WC, 1)
	for {
		n, err := c.id.RecvCQ().Poll(wcs)
		if err != nil {
			return nil, err
		}
		if n == 1 {
			w := wcs[0]
			if w.Status != verbs.WCSuccess {
				return nil, fmt.Errorf("cmecho: receive completed with %v", w.Status)
			}
			off := int(w.WRID) * MsgSize
			msg := append([]byte(nil), c.buf[off:off+int(w.ByteLen)]...)
			return msg, c.postRecv(w.WRID)
		}
		q, _, err := c.id.RecvCQChannel().GetEvent(ctx)
		if err != nil {
			return nil, err
		}
		if err := q.AckEvents(1); err != nil {
			return nil, err
		}
		if err := q.ReqNotify(false); err != nil {
			return nil, err
		}
	}
}

// close deregisters the buffer and destroys the QP and the ID.
func (c *conn) close(ctx context.Context) error {
	return errors.Join(c.mr.Dereg(), c.id.DestroyQP(), c.id.Destroy(ctx))
}

// Server answers the connections to one address.
type Server struct {
	ch       rdmacm.EventChannel
	listener rdmacm.ID
	wg       sync.WaitGroup
}

// Listen makes a server that listens on addr (port 0: one the CM picks).
func Listen(cm rdmacm.CM, addr netip.AddrPort) (*Server, error) {
	ch, err := cm.CreateEventChannel()
	if err != nil {
		return nil, err
	}
	l, err := cm.CreateID(ch, nil, rdmacm.PSTCP)
	if err != nil {
		return nil, errors.Join(err, ch.Destroy())
	}
	if err := l.BindAddr(addr); err != nil {
		return nil, errors.Join(err, l.Destroy(context.Background()), ch.Destroy())
	}
	if err := l.Listen(0); err != nil {
		return nil, errors.Join(err, l.Destroy(context.Background()), ch.Destroy())
	}
	return &Server{ch: ch, listener: l}, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() netip.AddrPort { return s.listener.LocalAddr() }

// Serve handles the connection manager's events until ctx ends: it
// accepts each request and echoes the connection's messages in a
// goroutine of its own until the client disconnects. It returns ctx's
// error, after the connections' goroutines have ended and the server's IDs
// and channel have been destroyed.
func (s *Server) Serve(ctx context.Context) error {
	conns := map[rdmacm.ID]context.CancelFunc{}
	defer func() {
		for _, stop := range conns {
			stop()
		}
		s.wg.Wait()
		_ = s.listener.Destroy(context.Background())
		_ = s.ch.Destroy()
	}()
	for {
		ev, err := s.ch.GetEvent(ctx)
		if err != nil {
			return ctx.Err()
		}
		id := ev.ID()
		switch ev.Type() {
		case rdmacm.EventConnectRequest:
			c, err := setup(id)
			if err == nil {
				err = id.Accept(nil)
			}
			if err != nil {
				_ = id.Reject(nil)
				if c != nil {
					_ = c.close(context.Background())
				} else {
					_ = id.Destroy(context.Background())
				}
				break
			}
			cctx, stop := context.WithCancel(ctx)
			conns[id] = stop
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				c.echo(cctx)
			}()
		case rdmacm.EventDisconnected:
			_ = id.Disconnect()
		case rdmacm.EventTimewaitExit, rdmacm.EventRejected, rdmacm.EventUnreachable:
			if stop, ok := conns[id]; ok {
				stop()
			}
		}
		if err := ev.Ack(); err != nil {
			return err
		}
	}
}

// echo answers c's messages until ctx ends, then closes c.
func (c *conn) echo(ctx context.Context) {
	defer func() { _ = c.close(context.Background()) }()
	for {
		msg, err := c.recv(ctx)
		if err != nil {
			return
		}
		if c.send(msg) != nil {
			return
		}
	}
}

// Client is a connection to a server.
type Client struct {
	c  *conn
	ch rdmacm.EventChannel
}

// Dial connects to the server at addr: it resolves the address and the
// route, creates the QP and connects, waiting for each step's event until
// ctx ends. A refusal is an error naming the event.
func Dial(ctx context.Context, cm rdmacm.CM, addr netip.AddrPort) (*Client, error) {
	ch, err := cm.CreateEventChannel()
	if err != nil {
		return nil, err
	}
	id, err := cm.CreateID(ch, nil, rdmacm.PSTCP)
	if err != nil {
		return nil, errors.Join(err, ch.Destroy())
	}
	cl := &Client{ch: ch}
	fail := func(err error) (*Client, error) {
		if cl.c != nil {
			return nil, errors.Join(err, cl.c.close(ctx), ch.Destroy())
		}
		return nil, errors.Join(err, id.Destroy(ctx), ch.Destroy())
	}
	if err := id.ResolveAddr(netip.AddrPort{}, addr, 2*time.Second); err != nil {
		return fail(err)
	}
	if err := cl.await(ctx, rdmacm.EventAddrResolved); err != nil {
		return fail(err)
	}
	if err := id.ResolveRoute(2 * time.Second); err != nil {
		return fail(err)
	}
	if err := cl.await(ctx, rdmacm.EventRouteResolved); err != nil {
		return fail(err)
	}
	if cl.c, err = setup(id); err != nil {
		return fail(err)
	}
	if err := id.Connect(&rdmacm.ConnParam{RetryCount: 7, RNRRetryCount: 7}); err != nil {
		return fail(err)
	}
	if err := cl.await(ctx, rdmacm.EventEstablished); err != nil {
		return fail(err)
	}
	return cl, nil
}

// EventError is the failure of a step of Dial or Close: the event the
// connection manager reported instead of the one awaited.
type EventError struct {
	Want, Got rdmacm.EventType
	Status    int
}

func (e *EventError) Error() string {
	return fmt.Sprintf("cmecho: waiting for %v, got %v (status %d)", e.Want, e.Got, e.Status)
}

// await reads the next event of the client's channel and acknowledges it.
func (cl *Client) await(ctx context.Context, want rdmacm.EventType) error {
	ev, err := cl.ch.GetEvent(ctx)
	if err != nil {
		return err
	}
	got, status := ev.Type(), ev.Status()
	if err := ev.Ack(); err != nil {
		return err
	}
	if got != want {
		return &EventError{Want: want, Got: got, Status: status}
	}
	return nil
}

// Call sends msg (at most MsgSize bytes) and returns the server's answer.
func (cl *Client) Call(ctx context.Context, msg []byte) ([]byte, error) {
	if len(msg) > MsgSize {
		return nil, fmt.Errorf("cmecho: a message of %d bytes is above %d", len(msg), MsgSize)
	}
	if err := cl.c.send(msg); err != nil {
		return nil, err
	}
	return cl.c.recv(ctx)
}

// Close disconnects, waits for the server's answer and destroys the
// client's resources.
func (cl *Client) Close(ctx context.Context) error {
	if err := cl.c.id.Disconnect(); err != nil {
		return errors.Join(err, cl.c.close(ctx), cl.ch.Destroy())
	}
	err := cl.await(ctx, rdmacm.EventDisconnected)
	return errors.Join(err, cl.c.close(ctx), cl.ch.Destroy())
}
