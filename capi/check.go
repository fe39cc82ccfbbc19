package main

// check.go is the drop-in library's side of the sanitizer (package
// sim/check, docs/check.md): VERBSIM_CHECK turns it on in the process's
// fabric; the pumps that read the engine's channels and async queues for
// the C program tell it what the program reads and waits for (the
// engine's reads are the pumps'); its findings name the C backtrace of
// the calling thread, which every verb records as it enters (check.c).
//
// The checks run wherever the engine runs: here, inside the program's
// process; with the NIC daemon, inside the daemon, the C library passing
// VERBSIM_CHECK on and sending each verb's backtrace with the call.

/*
#include <stdint.h>
#include "capi.h"
*/
import "C"

import (
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"os"
	"sort"
	"sync"
	"syscall"

	"github.com/verbsim/verbsim/internal/simhook"
	"github.com/verbsim/verbsim/sim/check"
)

// checkFromEnv reads VERBSIM_CHECK, VERBSIM_CHECK_LOG and
// VERBSIM_CHECK_SUPPRESS: nil when the sanitizer is off.
func checkFromEnv() (*check.Config, error) {
	checks, halt, on, err := check.Parse(os.Getenv("VERBSIM_CHECK"))
	if err != nil || !on {
		return nil, err
	}
	sup, err := check.ParseSuppressions(os.Getenv("VERBSIM_CHECK_SUPPRESS"))
	if err != nil {
		return nil, fmt.Errorf("VERBSIM_CHECK_SUPPRESS: %v", err)
	}
	cfg := &check.Config{Checks: checks, HaltOnError: halt, Output: os.Stderr, Suppress: sup,
		Callers: cCallers, Symbolize: cFrames, Thread: func() uint64 { return uint64(syscall.Gettid()) }}
	if path := os.Getenv("VERBSIM_CHECK_LOG"); path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("VERBSIM_CHECK_LOG: %v", err)
		}
		cfg.Log = f
	}
	C.capi_check_on()
	return cfg, nil
}

// front tells the sanitizer what the program behind the pumps did; it
// does nothing with the sanitizer off. The caller holds no lock of the
// fabric's.
func front(ev simhook.FrontEvent) {
	if fab != nil && C.capi_checking != 0 {
		simhook.CheckFront(fab, ev)
	}
}

// vs_check_wait is told that the program starts (start 1) or ended a
// blocking read of a completion channel (kind 1) or of a context's async
// events (kind 2). At the start it first moves what the engine has queued,
// as a non-blocking read does, and returns 0 when an event is there, so
// that the sanitizer sees the wait only when nothing can end it yet.
//
//export vs_check_wait
func vs_check_wait(h C.uintptr_t, kind, start C.int) C.int {
	var mu *sync.Mutex
	var queued func() bool
	var obj any
	verb := "ibv_get_cq_event"
	switch kind {
	case 1:
		r := rec[chRec](h)
		if r == nil {
			return 1
		}
		mu, obj = &r.mu, r.ch
		queued = func() bool {
			if start != 0 && len(r.queue) == 0 {
				r.feed.SyncLocked()
			}
			return len(r.queue) > 0
		}
	case 2:
		r := rec[ctxRec](h)
		if r == nil {
			return 1
		}
		mu, obj, verb = &r.mu, r.c, "ibv_get_async_event"
		queued = func() bool {
			if start != 0 && len(r.queue) == 0 {
				r.feed.SyncLocked()
			}
			return len(r.queue) > 0
		}
	default:
		return 1
	}
	mu.Lock()
	defer mu.Unlock()
	if start == 0 {
		front(simhook.FrontEvent{Kind: simhook.FrontWaitEnd, Obj: obj})
		return 1
	}
	if queued() {
		return 0
	}
	front(simhook.FrontEvent{Kind: simhook.FrontWait, Obj: obj, Verb: verb})
	return 1
}

// cCallers returns the backtrace the calling thread's verb recorded.
func cCallers() []uintptr {
	var pcs [32]C.uintptr_t
	n := int(C.capi_bt_get(&pcs[0], C.int(len(pcs))))
	out := make([]uintptr, n)
	for i := range out {
		out[i] = uintptr(pcs[i])
	}
	return out
}

// cFrames symbolizes a C backtrace: the frames inside this library left
// out, each other frame named from its object file's symbol table and,
// when the file has debugging information, its source line.
func cFrames(pcs []uintptr) []check.Frame {
	var self C.uintptr_t = C.capi_bt_self()
	var selfFile *C.char
	var selfBase, sa C.uintptr_t
	var ss *C.char
	C.capi_bt_where(self, &selfFile, &selfBase, &ss, &sa)
	var out []check.Frame
	for _, pc := range pcs {
		var file, sym *C.char
		var base, saddr C.uintptr_t
		if C.capi_bt_where(C.uintptr_t(pc-1), &file, &base, &sym, &saddr) == 0 {
			out = append(out, check.Frame{PC: uint64(pc)})
			continue
		}
		if base == selfBase {
			continue // the library's own frames
		}
		path := C.GoString(file)
		fr := symbolize(path, uint64(pc)-1, uint64(base))
		if fr.Func == "" && sym != nil {
			fr.Func = fmt.Sprintf("%s+%#x", C.GoString(sym), uint64(pc)-uint64(saddr))
		}
		out = append(out, fr)
		if len(out) == 16 || fr.Func == "main" {
			break
		}
	}
	return out
}

// elfFiles caches what symbolize read of each object file.
var (
	elfMu    sync.Mutex
	elfFiles = map[string]*elfSyms{}
)

// elfSyms is an object file's functions, sorted by address, and its
// DWARF line tables (nil without debugging information).
type elfSyms struct {
	dyn   bool // a position-independent file: addresses are offsets from its base
	funcs []elf.Symbol
	dw    *dwarf.Data
}

// symbolize names the frame at pc in the object file path loaded at base.
func symbolize(path string, pc, base uint64) check.Frame {
	elfMu.Lock()
	defer elfMu.Unlock()
	s, ok := elfFiles[path]
	if !ok {
		s = readSyms(path)
		elfFiles[path] = s
	}
	fr := check.Frame{File: path, PC: pc - base}
	if s == nil {
		return fr
	}
	addr := pc
	if s.dyn {
		addr = pc - base
	}
	i := sort.Search(len(s.funcs), func(i int) bool { return s.funcs[i].Value > addr }) - 1
	if i >= 0 && addr < s.funcs[i].Value+max(s.funcs[i].Size, 1) {
		fr.Func = s.funcs[i].Name
	}
	if s.dw != nil {
		if file, line := lineOf(s.dw, addr); line > 0 {
			fr.File, fr.Line = file, line
		}
	}
	return fr
}

// readSyms reads the function symbols and line tables of an object file;
// nil when it cannot be read.
func readSyms(path string) *elfSyms {
	f, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	s := &elfSyms{dyn: f.Type == elf.ET_DYN}
	syms, err := f.Symbols()
	if err != nil || len(syms) == 0 {
		syms, _ = f.DynamicSymbols()
	}
	for _, sym := range syms {
		if elf.ST_TYPE(sym.Info) == elf.STT_FUNC && sym.Value != 0 {
			s.funcs = append(s.funcs, sym)
		}
	}
	sort.Slice(s.funcs, func(i, j int) bool { return s.funcs[i].Value < s.funcs[j].Value })
	s.dw, _ = f.DWARF()
	return s
}

// lineOf finds the source line of addr in d's line tables.
func lineOf(d *dwarf.Data, addr uint64) (string, int) {
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			return "", 0
		}
		if e.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
			continue
		}
		ranges, err := d.Ranges(e)
		if err != nil {
			continue
		}
		in := false
		for _, rg := range ranges {
			in = in || (addr >= rg[0] && addr < rg[1])
		}
		if !in {
			r.SkipChildren()
			continue
		}
		lr, err := d.LineReader(e)
		if err != nil || lr == nil {
			return "", 0
		}
		var le dwarf.LineEntry
		if lr.SeekPC(addr, &le) != nil {
			return "", 0
		}
		return le.File.Name, le.Line
	}
}

// checkDiscard tells the sanitizer that n events of obj, which the program
// never read, were acknowledged for it as obj was destroyed.
func checkDiscard(from, obj any, n int) {
	if n > 0 {
		front(simhook.FrontEvent{Kind: simhook.FrontDiscard, Obj: from, About: obj, N: n})
	}
}

// CheckCookie renders the program's cq_context of the CQ for the
// sanitizer's findings: the C pointer, not the record behind it.
func (r *cqRec) CheckCookie() string {
	if v := C.capi_cq_cookie(C.uintptr_t(r.cptr)); v != 0 {
		return fmt.Sprintf("%#x", uint64(v))
	}
	return "NULL"
}
