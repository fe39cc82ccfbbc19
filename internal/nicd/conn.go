//go:build linux

package nicd

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"

	"github.com/verbsim/verbsim/internal/cabi"
)

// conn is one connection of a program: its first (NICD_HELLO, which
// makes the session) or one more (NICD_JOIN), each serving one request at
// a time, so that a thread waiting in the daemon (a destroy waiting for
// acknowledgements) never holds up another.
type conn struct {
	c   *net.UnixConn
	s   *session
	ctx context.Context // ends with the connection and with the session
	in  []byte
	oob []byte
	out []byte
}

// reply is what a request returns besides its errno.
type reply struct {
	v, w uint64
	body []byte
}

// handler serves one request. fds are the descriptors that came with it;
// a handler that keeps one sets it to -1, and the rest are closed.
type handler func(c *conn, r *req, body []byte, fds []int) (reply, error)

// handlers are the requests of a session (all but NICD_HELLO and
// NICD_JOIN), filled in by the files that serve them.
var handlers [opCount]handler

// errno is the errno a verb returns for err: its syscall.Errno, EINVAL for
// an error without one.
func errno(err error) int32 {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) && e != 0 {
		return int32(e)
	}
	return int32(syscall.EINVAL)
}

// outBody returns n bytes of the reply buffer for a body.
func (c *conn) outBody(n int) []byte {
	h := cabi.Size[rep]()
	if cap(c.out) < h+n {
		c.out = make([]byte, h+n)
	}
	b := c.out[h : h+n]
	clear(b)
	return b
}

// read reads one request: its header, body and descriptors.
func (c *conn) read() (req, []byte, []int, error) {
	n, oobn, flags, _, err := c.c.ReadMsgUnix(c.in, c.oob)
	if err != nil {
		return req{}, nil, nil, err
	}
	var fds []int
	if oobn > 0 {
		msgs, err := syscall.ParseSocketControlMessage(c.oob[:oobn])
		if err == nil {
			for _, m := range msgs {
				if f, err := syscall.ParseUnixRights(&m); err == nil {
					fds = append(fds, f...)
				}
			}
		}
	}
	r, ok := cabi.Read[req](c.in[:n])
	switch {
	case n == 0:
		closeAll(fds)
		return req{}, nil, nil, net.ErrClosed // the peer shut down
	case flags&(syscall.MSG_TRUNC|syscall.MSG_CTRUNC) != 0 || !ok || int(r.Len) != n-cabi.Size[req]():
		closeAll(fds)
		return req{}, nil, nil, fmt.Errorf("a malformed request (%d bytes, flags %#x)", n, flags)
	}
	return r, c.in[cabi.Size[req]():n], fds, nil
}

// write sends the reply to a request.
func (c *conn) write(e int32, rp reply) error {
	h := cabi.Size[rep]()
	hdr := rep{Err: e, Len: uint32(len(rp.body)), V: rp.v, W: rp.w}
	var msg []byte
	if len(rp.body) > 0 && cap(c.out) >= h && len(c.out) >= h+len(rp.body) && &c.out[h] == &rp.body[0] {
		msg = c.out[:h+len(rp.body)]
	} else {
		msg = append(make([]byte, 0, h+len(rp.body)), make([]byte, h)...)
		msg = append(msg, rp.body...)
	}
	copy(msg, cabi.Bytes(&hdr))
	_, err := c.c.Write(msg)
	return err
}

// writeFD sends a successful reply with a descriptor.
func (c *conn) writeFD(rp reply, fd int) error {
	hdr := rep{V: rp.v, W: rp.w}
	_, _, err := c.c.WriteMsgUnix(cabi.Bytes(&hdr), syscall.UnixRights(fd), nil)
	return err
}

func closeAll(fds []int) {
	for _, f := range fds {
		if f >= 0 {
			syscall.Close(f)
		}
	}
}

// serveConn serves one connection until it closes, its session ends or
// the daemon stops.
func (s *Server) serveConn(ctx context.Context, nc *net.UnixConn) {
	defer nc.Close()
	cred, err := peer(nc)
	if err != nil || int(cred.Uid) != s.uid {
		if err == nil {
			s.logf("refused a connection of uid %d (pid %d): this daemon serves uid %d", cred.Uid, cred.Pid, s.uid)
		}
		return
	}
	c := &conn{c: nc, in: make([]byte, maxMsg), oob: make([]byte, syscall.CmsgSpace(4*16))}
	r, body, fds, err := c.read()
	if err != nil {
		return
	}
	closeAll(fds)
	var se *session
	switch op(r.Op) {
	case opHello:
		var e int32
		se, e = s.hello(nc, cred, body)
		if e != 0 {
			c.write(e, reply{})
			return
		}
		if err := c.writeFD(reply{v: se.id, w: se.token}, s.statFD); err != nil {
			se.end()
			return
		}
		defer se.end() // the first connection is the session's life
	case opJoin:
		se = s.join(r.A, r.B, cred)
		if se == nil {
			c.write(int32(syscall.EPERM), reply{})
			return
		}
		if err := c.write(0, reply{}); err != nil {
			return
		}
	default:
		c.write(int32(syscall.EPROTO), reply{})
		return
	}
	c.s = se
	var cancel context.CancelFunc
	c.ctx, cancel = context.WithCancel(se.ctx)
	defer cancel()
	stop := context.AfterFunc(c.ctx, func() { nc.Close() })
	defer stop()
	for {
		r, body, fds, err := c.read()
		if err != nil {
			return
		}
		var h handler
		if o := op(r.Op); o > opJoin && o < opCount {
			h = handlers[o]
		}
		var rp reply
		var e int32
		if h == nil {
			e = int32(syscall.EOPNOTSUPP)
		} else {
			var err error
			rp, err = h(c, &r, body, fds)
			e = errno(err)
			if err != nil && s.debug && e != int32(syscall.EAGAIN) {
				s.logf("pid %d: %v: %v", se.pid, op(r.Op), err)
			}
		}
		closeAll(fds)
		// The library counted the request in busy as it sent it.
		if atomic.LoadUint32(&s.stat.Busy) > 0 {
			atomic.AddUint32(&s.stat.Busy, ^uint32(0))
		}
		atomic.AddUint64(&s.stat.Served, 1)
		err = c.write(e, rp)
		if err != nil {
			return
		}
	}
}

// hello makes the session of a program that says hello: the version and
// fabric must be the daemon's, the pid its own, and the daemon must reach
// its memory (the magic at the probe's address, through
// process_vm_readv: EPERM under a Yama ptrace_scope or seccomp policy
// that forbids it, docs/daemon.md).
func (s *Server) hello(nc *net.UnixConn, cred *syscall.Ucred, body []byte) (*session, int32) {
	h, ok := cabi.Read[hello](body)
	if !ok || h.Version != version {
		s.logf("pid %d: protocol version %d, this daemon speaks %d", cred.Pid, h.Version, version)
		return nil, int32(syscall.EPROTO)
	}
	name := string(bytes.TrimRight(h.Fabric[:], "\x00"))
	if name != s.opts.Fabric || int32(h.PID) != cred.Pid {
		return nil, int32(syscall.EINVAL)
	}
	mem := &procMem{pid: int(cred.Pid)}
	var got [16]byte
	if err := mem.read(got[:], h.Probe); err != nil || got != h.Magic {
		s.logf("pid %d: cannot read its memory (%v): see docs/daemon.md, \"Who may join\"", cred.Pid, err)
		return nil, int32(syscall.EPERM)
	}
	var tok [8]byte
	rand.Read(tok[:])
	se := newSession(s, int(cred.Pid), mem, binary.NativeEndian.Uint64(tok[:]))
	s.mu.Lock()
	s.nextID++
	se.id = s.nextID
	s.sess[se.id] = se
	s.mu.Unlock()
	s.logf("pid %d joined (session %d)", cred.Pid, se.id)
	return se, 0
}

// join finds the session a further connection names, if the token is its
// and the peer is its process.
func (s *Server) join(id, token uint64, cred *syscall.Ucred) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	se := s.sess[id]
	if se == nil || se.token != token || se.pid != int(cred.Pid) || se.ctx.Err() != nil {
		return nil
	}
	return se
}

// gone forgets an ended session.
func (s *Server) gone(se *session) {
	s.mu.Lock()
	delete(s.sess, se.id)
	s.mu.Unlock()
	select {
	case s.idle <- struct{}{}:
	default:
	}
}
