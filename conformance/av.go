package conformance

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/google/go-cmp/cmp"
	"github.com/verbsim/verbsim/verbs"
)

// Cases of the AV family: the address vectors of ibv_create_ah and of
// ibv_modify_qp's primary and alternate paths (AV-01..AV-03). Each vector
// is tried in the three places on port 1, whatever its link layer.

// avPlace is one of the verbs that take an address vector.
type avPlace int

const (
	avAH      avPlace = iota // ibv_create_ah
	avPrimary                // ah_attr, INIT→RTR
	avAlt                    // alt_ah_attr with IBV_QP_ALT_PATH, INIT→RTR
)

func (p avPlace) String() string {
	return [...]string{"ibv_create_ah", "ibv_modify_qp ah_attr", "ibv_modify_qp alt_ah_attr"}[p]
}

// avBase is a vector port 1 takes: global where the port needs it.
func avBase(l Limits) verbs.AHAttr {
	if l.Port.Ethernet {
		return qpAV
	}
	return verbs.AHAttr{PortNum: 1, DLID: 1}
}

// avTry offers av at place p on w's device and checks the outcome: want 0
// accepted, else that errno with nothing changed (no AH; the QP as it was,
// QP-13).
func avTry(w *qpWorld, p avPlace, what string, av verbs.AHAttr, want syscall.Errno) {
	w.t.Helper()
	what = fmt.Sprintf("%v, %s (port 1 Ethernet: %v)", p, what, w.lim.Port.Ethernet)
	if p == avAH {
		ah, err := w.pd.CreateAH(av)
		switch {
		case want == 0 && (err != nil || ah == nil):
			w.t.Errorf("%s: ah=%v err=%v, want an AH", what, ah, err)
		case want != 0 && (ah != nil || !errors.Is(err, want)):
			w.t.Errorf("%s: ah=%v err=%v, want NULL and %v", what, ah, err, want)
		}
		if ah != nil {
			if err := ah.Destroy(); err != nil {
				w.t.Errorf("%s: ibv_destroy_ah: %v", what, err)
			}
		}
		return
	}
	q := w.at(verbs.QPTypeRC, verbs.QPStateInit)
	a := qpAttr(w.lim, verbs.QPStateInit, verbs.QPStateRTR)
	mask := w.minimal(q, verbs.QPStateInit, verbs.QPStateRTR)
	if p == avPrimary {
		a.AHAttr = av
	} else {
		a.AHAttr, a.AltAHAttr, a.AltPortNum = avBase(w.lim), av, av.PortNum
		mask |= verbs.QPAttrAltPath
	}
	if want == 0 {
		w.accepted(what, q, a, mask, verbs.QPStateRTR)
		return
	}
	before := w.query(q)
	err := q.Modify(&a, mask)
	if !errors.Is(err, want) {
		w.t.Errorf("%s: modify(%v) = %v, want %v", what, mask, err, want)
	}
	if after := w.query(q); after != before {
		w.t.Errorf("%s: a modify that should fail changed the QP (-before +after):\n%s", what, cmp.Diff(before, after))
	}
}

// avPlaces are the places port 1 offers: alternate paths exist on
// InfiniBand ports only (QP-22).
func avPlaces(l Limits) []avPlace {
	if l.Port.Ethernet {
		return []avPlace{avAH, avPrimary}
	}
	return []avPlace{avAH, avPrimary, avAlt}
}

// avCases are the cases of the AV family in av.go.
var avCases = []Case{
	{"AV-01", "address vectors: port_num names a port, and a RoCE port needs a GRH", avPortAndGRH},
	{"AV-02", "address vectors: a GRH's sgid_index lies in the GID table (EINVAL) and names a GID (ENODATA)", avSGIDIndex},
	{"AV-03", "address vectors: sl, static_rate and an InfiniBand dlid are checked", avSLRateDLID},
}

func avPortAndGRH(t *tester, e *env) {
	w := qpSetup(t, e)
	for _, p := range avPlaces(w.lim) {
		for _, port := range []uint8{0, uint8(min(w.lim.NumPorts+1, 255))} {
			av := avBase(w.lim)
			av.PortNum = port
			avTry(w, p, fmt.Sprintf("port_num %d", port), av, syscall.EINVAL)
		}
		if w.lim.Port.Ethernet {
			av := avBase(w.lim)
			av.IsGlobal = false
			avTry(w, p, "no GRH on a RoCE port", av, syscall.EINVAL)
		}
		avTry(w, p, "the base vector", avBase(w.lim), 0)
	}
}

func avSGIDIndex(t *tester, e *env) {
	w := qpSetup(t, e)
	unused := -1
	for i := range w.lim.Port.GIDTableLen {
		if g, err := e.Ctx.QueryGID(1, i); err == nil && g == (verbs.GID{}) {
			unused = i
			break
		}
	}
	for _, p := range avPlaces(w.lim) {
		av := qpAV
		av.GRH.SGIDIndex = uint8(min(w.lim.Port.GIDTableLen, 255))
		if w.lim.Port.GIDTableLen <= 255 {
			avTry(w, p, fmt.Sprintf("sgid_index %d = gid_tbl_len", av.GRH.SGIDIndex), av, syscall.EINVAL)
		}
		if unused < 0 {
			t.Logf("every entry of port 1's GID table holds a GID: ENODATA not checked")
			continue
		}
		av.GRH.SGIDIndex = uint8(unused)
		avTry(w, p, fmt.Sprintf("sgid_index %d, an unused entry", unused), av, syscall.ENODATA)
	}
}

func avSLRateDLID(t *tester, e *env) {
	w := qpSetup(t, e)
	type row struct {
		name string
		set  func(*verbs.AHAttr)
		want syscall.Errno
	}
	rows := []row{
		{"sl 15", func(a *verbs.AHAttr) { a.SL = 15 }, 0},
		{"sl 16", func(a *verbs.AHAttr) { a.SL = 16 }, syscall.EINVAL},
		{"static_rate 0 (port rate)", func(a *verbs.AHAttr) { a.StaticRate = 0 }, 0},
		{"static_rate 24 (1200 Gb/s)", func(a *verbs.AHAttr) { a.StaticRate = 24 }, 0},
		{"static_rate 1 (unassigned)", func(a *verbs.AHAttr) { a.StaticRate = 1 }, syscall.EINVAL},
		{"static_rate 25", func(a *verbs.AHAttr) { a.StaticRate = 25 }, syscall.EINVAL},
	}
	if w.lim.Port.Ethernet {
		rows = append(rows, row{"dlid 0 on RoCE (not used)", func(a *verbs.AHAttr) { a.DLID = 0 }, 0})
	} else {
		rows = append(rows, row{"dlid 0 on InfiniBand", func(a *verbs.AHAttr) { a.DLID = 0 }, syscall.EINVAL})
	}
	for _, p := range avPlaces(w.lim) {
		for _, r := range rows {
			av := avBase(w.lim)
			r.set(&av)
			avTry(w, p, r.name, av, r.want)
		}
		if w.lim.Port.Ethernet {
			continue
		}
		// Multicast: an AH needs a GRH for it; a QP's path may not
		// name it at all, nor the permissive LID.
		mc := avBase(w.lim)
		mc.DLID = 0xc001
		want := syscall.EINVAL
		avTry(w, p, "multicast dlid 0xc001 without a GRH", mc, want)
		mc.IsGlobal, mc.GRH = true, qpAV.GRH
		if p == avAH {
			want = 0
		}
		avTry(w, p, "multicast dlid 0xc001 with a GRH", mc, want)
		if p != avAH {
			perm := avBase(w.lim)
			perm.DLID = 0xffff
			avTry(w, p, "permissive dlid 0xffff", perm, syscall.EINVAL)
		}
	}
}
