package qp

import "github.com/verbsim/verbsim/verbs"

// Mem is registered memory that a key resolved to (Host.LocalLocked,
// Host.RemoteLocked): the bytes the adapter reads and writes when the work
// request executes (QP-36).
//
// In every fabric of a Go program the memory is a slice of this process,
// B, and X is nil: reads and writes are copies. An MR over the memory of
// another process (the per-host daemon, internal/nicd) resolves to X, the
// N bytes at address At of that process, which X reads and writes for the
// transport. The transport moves bytes only through ReadAt and WriteAt, so
// it never needs to know which it has.
type Mem struct {
	B  []byte
	X  Extern
	At uint64 // X's address of the first byte
	N  uint64 // the length, when X is set
}

// Extern is memory outside this process: the registered pages of a
// program the per-host daemon serves, read and written with
// process_vm_readv and process_vm_writev. Neither method fails: a page the
// program has unmapped since it registered it reads as zeros and takes no
// writes, as a pinned page the program no longer maps would (the adapter
// still reaches the page; the program no longer sees it).
//
// Both are called with the domain lock held.
type Extern interface {
	ReadLocked(dst []byte, addr uint64)
	WriteLocked(src []byte, addr uint64)
}

// Len is the number of bytes m covers.
func (m Mem) Len() uint64 {
	if m.X == nil {
		return uint64(len(m.B))
	}
	return m.N
}

// ReadAt copies the bytes of m from offset off into dst, as many as both
// hold, and returns how many.
func (m Mem) ReadAt(dst []byte, off uint64) int {
	if m.X == nil {
		return copy(dst, m.B[off:])
	}
	return m.readExt(dst, off)
}

// WriteAt copies src into m from offset off, as much as m holds from
// there, and returns how many bytes.
func (m Mem) WriteAt(src []byte, off uint64) int {
	if m.X == nil {
		return copy(m.B[off:], src)
	}
	return m.writeExt(src, off)
}

func (m Mem) readExt(dst []byte, off uint64) int {
	n := min(uint64(len(dst)), m.N-off)
	if n > 0 {
		m.X.ReadLocked(dst[:n], m.At+off)
	}
	return int(n)
}

func (m Mem) writeExt(src []byte, off uint64) int {
	n := min(uint64(len(src)), m.N-off)
	if n > 0 {
		m.X.WriteLocked(src[:n], m.At+off)
	}
	return int(n)
}

// atomicMem executes the atomic op on the 8 bytes of m, in host byte
// order, and returns the value found there (XFER-17): read, changed and
// written back in one step of the engine, under its lock, which no other
// work request of the fabric can interleave with.
func atomicMem(m Mem, op verbs.WROpcode, compareAdd, swap uint64) uint64 {
	if m.X == nil {
		return atomicApply(m.B, op, compareAdd, swap)
	}
	var b [8]byte
	m.readExt(b[:], 0)
	orig := atomicApply(b[:], op, compareAdd, swap)
	m.writeExt(b[:], 0)
	return orig
}

// readPayload returns dst (whose length is ignored) holding the bytes of m,
// as append(dst[:0], bytes...) would: no allocation while dst has room.
func readPayload(dst []byte, m Mem) []byte {
	n := m.Len()
	if m.X == nil {
		return append(dst[:0], m.B...)
	}
	if uint64(cap(dst)) < n {
		dst = make([]byte, n)
	}
	dst = dst[:n]
	m.readExt(dst, 0)
	return dst
}
