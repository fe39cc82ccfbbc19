//go:build linux

package nicd

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// procMem is the memory of the program a session serves, which the
// engine reads and writes for the MRs registered over it
// (simhook.Extern): with process_vm_readv and process_vm_writev, as an
// adapter reaches pinned pages. Neither access fails: bytes the program
// no longer maps read as zeros and writes to them are lost, which is what
// a pinned page the program unmapped gives it (the adapter still reaches
// the page; the program no longer sees it). faults counts such accesses.
type procMem struct {
	pid    int
	faults atomic.Uint64
	first  atomic.Pointer[string] // the first failed access, for the log
}

// fault counts a failed access, describing the first.
func (m *procMem) fault(what string, addr uint64, n int, done int, err error) {
	if m.faults.Add(1) == 1 {
		s := fmt.Sprintf("%s of %d bytes at %#x failed after %d: %v", what, n, addr, done, err)
		m.first.Store(&s)
	}
}

// localIov and remoteIov are struct iovec: one in the daemon's memory (a
// real pointer, so the collector keeps it), one at an address of the
// program's.
type localIov struct {
	base *byte
	len  uint64
}

type remoteIov struct {
	base uintptr
	len  uint64
}

// xfer moves len(b) bytes between b and the program's address addr with
// the given syscall, to the end or to the first failure, and returns how
// many it moved.
func (m *procMem) xfer(trap uintptr, b []byte, addr uint64) (int, error) {
	done := 0
	for done < len(b) {
		l := localIov{&b[done], uint64(len(b) - done)}
		r := remoteIov{uintptr(addr) + uintptr(done), uint64(len(b) - done)}
		n, _, e := syscall.Syscall6(trap, uintptr(m.pid), uintptr(unsafe.Pointer(&l)), 1,
			uintptr(unsafe.Pointer(&r)), 1, 0)
		runtime.KeepAlive(b)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return done, e
		}
		if n == 0 {
			return done, syscall.EFAULT
		}
		done += int(n)
	}
	return done, nil
}

// read fills b from the program's address addr; false when it could not
// read it all.
func (m *procMem) read(b []byte, addr uint64) error {
	if len(b) == 0 {
		return nil
	}
	_, err := m.xfer(sysProcessVMReadv, b, addr)
	return err
}

// ReadLocked implements simhook.Extern.
func (m *procMem) ReadLocked(dst []byte, addr uint64) {
	if len(dst) == 0 {
		return
	}
	n, err := m.xfer(sysProcessVMReadv, dst, addr)
	if err != nil {
		clear(dst[n:])
		m.fault("read", addr, len(dst), n, err)
	}
}

// WriteLocked implements simhook.Extern.
func (m *procMem) WriteLocked(src []byte, addr uint64) {
	if len(src) == 0 {
		return
	}
	if n, err := m.xfer(sysProcessVMWritev, src, addr); err != nil {
		m.fault("write", addr, len(src), n, err)
	}
}

// mapped reports whether the program maps [addr, addr+n) readable, and
// writable too when write is set, as the kernel's pinning of an MR's
// pages requires (EFAULT otherwise): read off /proc/<pid>/maps.
func mapped(pid int, addr, n uint64, write bool) (bool, error) {
	if n == 0 {
		return true, nil
	}
	end := addr + n
	if end < addr {
		return false, nil
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return false, err
	}
	defer f.Close()
	at := addr
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rng, rest, ok := strings.Cut(line, " ")
		if !ok || len(rest) < 4 {
			continue
		}
		lo, hi, ok := strings.Cut(rng, "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		stop, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || stop <= at {
			continue
		}
		if start > at {
			return false, nil // a hole
		}
		if rest[0] != 'r' || (write && rest[1] != 'w') {
			return false, nil
		}
		at = stop
		if at >= end {
			return true, nil
		}
	}
	return false, sc.Err()
}
