//go:build linux

package nicd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/verbsim/verbsim/internal/cabi"
	"github.com/verbsim/verbsim/internal/hostenv"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/trace"
)

// Options configure a daemon.
type Options struct {
	// Fabric is the fabric's name (VERBSIM_FABRIC); the socket is
	// Dir/Fabric.sock.
	Fabric string
	// Dir is the directory of the socket, created with mode 0700 when
	// missing; it must belong to the user and be closed to others
	// (SocketDir gives the default).
	Dir string
	// Linger is how long the daemon waits, once no program is connected,
	// before it exits; a negative Linger waits for ever (until ctx ends).
	Linger time.Duration
	// Env is the fabric's configuration (the starting program's
	// environment).
	Env hostenv.Config
	// Log receives the daemon's messages; nil discards them.
	Log io.Writer
	// Ready, when set, is called once the socket accepts connections.
	Ready func()
}

// startGrace is how long a new daemon waits for its first program.
const startGrace = 10 * time.Second

// SocketDir is the default directory of a user's daemon sockets:
// $VERBSIM_NICD_DIR, else $XDG_RUNTIME_DIR/verbsim, else
// /tmp/verbsim-<uid>.
func SocketDir() string {
	if d := os.Getenv("VERBSIM_NICD_DIR"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "verbsim")
	}
	return fmt.Sprintf("/tmp/verbsim-%d", os.Getuid())
}

// Server is a running daemon.
type Server struct {
	opts   Options
	fab    *sim.Fabric
	tlog   *trace.Log
	ln     *net.UnixListener
	path   string
	uid    int
	logMu  sync.Mutex
	mu     sync.Mutex
	sess   map[uint64]*session
	nextID uint64
	idle   chan struct{} // receives when the last session ends
	debug  bool          // VERBSIM_DEBUG: log every failed request
	wg     sync.WaitGroup

	xrcdMu sync.Mutex
	xrcds  map[xrcdKey]*xrcdShare // XRC domains opened by file, by inode

	// stat is struct nicd_status, in the memfd statFD every program maps.
	stat   *status
	statFD int
	statMm []byte
}

// newStatus makes the status memfd the programs map (NICD_HELLO).
func (s *Server) newStatus() error {
	name := []byte("verbsim-nicd\x00")
	fd, _, e := syscall.Syscall(sysMemfdCreate, uintptr(unsafe.Pointer(&name[0])), 1 /* MFD_CLOEXEC */, 0)
	if e != 0 {
		return e
	}
	n := cabi.Size[status]()
	if err := syscall.Ftruncate(int(fd), int64(n)); err != nil {
		syscall.Close(int(fd))
		return err
	}
	mm, err := syscall.Mmap(int(fd), 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		syscall.Close(int(fd))
		return err
	}
	s.statFD, s.statMm, s.stat = int(fd), mm, (*status)(unsafe.Pointer(&mm[0]))
	return nil
}

// checkDir makes dir if missing (mode 0700) and refuses one that belongs
// to another user or that others may write to: another user's process
// could otherwise put its own socket where the programs look.
func checkDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	case !ok || int(st.Uid) != os.Getuid():
		return fmt.Errorf("%s does not belong to uid %d", dir, os.Getuid())
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s is writable by others (mode %v); want 0700", dir, fi.Mode().Perm())
	}
	return nil
}

// Listen makes the fabric and binds its socket. A socket file left by a
// daemon that died is replaced; one that a live daemon answers on is
// EADDRINUSE.
func Listen(opts Options) (*Server, error) {
	if err := hostenv.CheckFabricName(opts.Fabric); err != nil {
		return nil, err
	}
	if err := checkDir(opts.Dir); err != nil {
		return nil, fmt.Errorf("verbsim nicd: socket directory: %w", err)
	}
	s := &Server{opts: opts, sess: map[uint64]*session{}, uid: os.Getuid(), idle: make(chan struct{}, 1),
		debug: os.Getenv("VERBSIM_DEBUG") != ""}
	s.path = filepath.Join(opts.Dir, opts.Fabric+".sock")
	if c, err := net.Dial("unixpacket", s.path); err == nil {
		c.Close()
		return nil, fmt.Errorf("verbsim nicd: a daemon already serves %s: %w", s.path, syscall.EADDRINUSE)
	}
	os.Remove(s.path) // a dead daemon's
	cfg := sim.Config{Profile: opts.Env.Profile, Mode: opts.Env.Mode, Faults: opts.Env.Faults,
		Seed: opts.Env.Seed, TickDuration: opts.Env.Tick, Devices: opts.Env.DeviceConfigs()}
	if opts.Env.Trace != "" {
		s.tlog = &trace.Log{}
		cfg.Trace = s.tlog
	}
	fab, err := sim.NewFabric(cfg)
	if err != nil {
		return nil, fmt.Errorf("verbsim nicd: %w", err)
	}
	s.fab = fab
	if err := s.newStatus(); err != nil {
		fab.Close()
		return nil, fmt.Errorf("verbsim nicd: the status page: %w", err)
	}
	old := syscall.Umask(0o177)
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: s.path, Net: "unixpacket"})
	syscall.Umask(old)
	if err != nil {
		fab.Close()
		return nil, fmt.Errorf("verbsim nicd: %w", err)
	}
	ln.SetUnlinkOnClose(true)
	if err := os.Chmod(s.path, 0o600); err != nil {
		ln.Close()
		fab.Close()
		return nil, err
	}
	s.ln = ln
	return s, nil
}

// Path is the socket's path.
func (s *Server) Path() string { return s.path }

// Fabric is the daemon's fabric.
func (s *Server) Fabric() *sim.Fabric { return s.fab }

func (s *Server) logf(format string, args ...any) {
	if s.opts.Log == nil {
		return
	}
	s.logMu.Lock()
	fmt.Fprintf(s.opts.Log, "verbsim nicd %s: "+format+"\n", append([]any{s.opts.Fabric}, args...)...)
	s.logMu.Unlock()
}

// Serve accepts programs until ctx ends or, with a Linger, no program has
// been connected for that long; then it destroys what is left, writes the
// trace (VERBSIM_TRACE) and closes the fabric.
func (s *Server) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	accepted := make(chan error, 1)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		accepted <- s.accept(ctx)
	}()
	if s.opts.Ready != nil {
		s.opts.Ready()
	}
	var linger <-chan time.Time
	var timer *time.Timer
	arm := func(d time.Duration) {
		if s.opts.Linger >= 0 {
			if timer != nil {
				timer.Stop()
			}
			timer = time.NewTimer(d)
			linger = timer.C
		}
	}
	// A daemon nobody joins goes too, after a grace for the program that
	// started it to connect.
	arm(max(s.opts.Linger, startGrace))
	var err error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err = <-accepted:
			break loop
		case <-s.idle:
			if s.sessions() == 0 {
				arm(s.opts.Linger)
			}
		case <-linger:
			linger = nil
			if s.sessions() == 0 {
				s.logf("no program for %v: exiting", s.opts.Linger)
				break loop
			}
		}
	}
	if timer != nil {
		timer.Stop()
	}
	s.ln.Close()
	cancel()
	s.mu.Lock()
	all := make([]*session, 0, len(s.sess))
	for _, se := range s.sess {
		all = append(all, se)
	}
	s.mu.Unlock()
	for _, se := range all {
		se.end()
	}
	s.wg.Wait()
	s.writeTrace()
	s.fab.Close()
	syscall.Munmap(s.statMm)
	syscall.Close(s.statFD)
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (s *Server) sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sess)
}

// accept serves each connection in a goroutine of its own.
func (s *Server) accept(ctx context.Context) error {
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveConn(ctx, c)
		}()
	}
}

// writeTrace writes the fabric's trace to VERBSIM_TRACE.
func (s *Server) writeTrace() {
	if s.tlog == nil {
		return
	}
	f, err := os.Create(s.opts.Env.Trace)
	if err != nil {
		s.logf("trace: %v", err)
		return
	}
	if err := s.fab.WriteTrace(f); err != nil {
		s.logf("trace: %v", err)
	}
	f.Close()
}

// peer returns the credentials of the process at the other end of c.
func peer(c *net.UnixConn) (*syscall.Ucred, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	return cred, cerr
}
