package ops

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/verbsim/verbsim/internal/pattern"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// This file keeps the log of TrafficStateMachine: every call the machine
// makes on the fabric, as a TrafficOp, with its outcome.

// TrafficFailureMark ends the line that introduces the log in a failing
// traffic run's message.
const TrafficFailureMark = "the last operation is the one whose outcome differed from the model:"

// rec logs op with the outcome of its call: the errno's name, or "".
func (r *trafficRun) rec(op TrafficOp, err error) {
	r.log = append(r.log, op)
	out := ""
	var n syscall.Errno
	if errors.As(err, &n) {
		out = verr.Name(n)
	} else if err != nil {
		out = "error"
	}
	r.outcomes = append(r.outcomes, out)
}

// TrafficLog renders ops as a scenario, one line per operation. With
// outcomes (one per operation), each operation whose call failed or
// polled completions says so in a narration line above it, "# in the
// run: EAGAIN" or "# in the run: wr_id 7 IBV_WC_SUCCESS; ...": verbsim run
// shows it beside what the replay does (RunOutcome reads it back).
func TrafficLog(ops []TrafficOp, outcomes []string) string {
	var b strings.Builder
	b.WriteString("# The calls of a conformance/ops TrafficStateMachine run, as a scenario: verbsim run FILE\n")
	b.WriteString("# replays them on verbsim, and ops.ParseTraffic reads them back.\n")
	for i, op := range ops {
		if i > 0 {
			b.WriteString("\n")
		}
		if i < len(outcomes) && outcomes[i] != "" {
			b.WriteString("# " + runMark + outcomes[i] + "\n")
		}
		b.WriteString(op.String() + "\n")
	}
	return b.String()
}

// runMark starts the narration line that says what a call did in the run.
const runMark = "in the run: "

// RunOutcome returns the outcome a traffic log's narration gives for its
// step (the lines above the command, without "# "), or "" when it names
// none: success, or a poll that found nothing.
func RunOutcome(narration []string) string {
	for _, l := range narration {
		if o, ok := strings.CutPrefix(l, runMark); ok {
			return o
		}
	}
	return ""
}

// fatalf ends the run with its log, whose last operation is the one that
// differed.
func (r *trafficRun) fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("%s\n\nThe run as a scenario (save it and replay it with verbsim run FILE); %s\n\n%s",
		fmt.Sprintf(format, args...), TrafficFailureMark, TrafficLog(r.log, r.outcomes))
}

// wcWords renders completions as the log's outcome of a poll: "wr_id N
// STATUS" each, joined by "; ".
func wcWords(wcs []verbs.WC) string {
	s := make([]string, len(wcs))
	for i, w := range wcs {
		s[i] = fmt.Sprintf("wr_id %d %v", w.WRID, w.Status)
	}
	return strings.Join(s, "; ")
}

// fill writes into the pieces of b the bytes kind and seed make (TFill),
// and logs it.
func (r *trafficRun) fill(b bufRef, kind string, seed uint64) {
	n := 0
	var at []Piece
	for i, off := range b.offs {
		at = append(at, Piece{uint64(off), uint64(b.lens[i])})
		n += b.lens[i]
	}
	var data []byte
	switch kind {
	case "pattern":
		data = pattern.Fill(seed, n)
	case "payload":
		data = pattern.Payload(seed, n)
	default:
		data = []byte(strings.Repeat(string([]byte{byte(seed)}), n))
	}
	r.write(b, data)
	r.rec(TFill{MR: mrName(b.qp), At: at, Kind: kind, Seed: seed}, nil)
}

func qpName(i int) string { return fmt.Sprintf("qp%d", i) }
func pdName(i int) string { return fmt.Sprintf("pd%d", i) }
func mrName(i int) string { return fmt.Sprintf("mr%d", i) }
func mwName(i int) string { return fmt.Sprintf("mw%d", i) }

// pieceList turns a gather or scatter list of QP i's MR into pieces.
func (r *trafficRun) pieceList(i int, sges []verbs.SGE) []Piece {
	if len(sges) == 0 {
		return nil
	}
	base := r.qps[i].mr.Addr()
	out := make([]Piece, len(sges))
	for k, s := range sges {
		out[k] = Piece{s.Addr - base, uint64(s.Length)}
	}
	return out
}

// mrAt names the MR whose buffer holds addr (its end included), preferring
// QP prefer's, with the offset; "" and addr when none does.
func (r *trafficRun) mrAt(prefer int, addr uint64) (string, uint64) {
	in := func(j int) bool {
		m := r.qps[j].mr
		return m != nil && addr >= m.Addr() && addr <= m.Addr()+uint64(len(r.qps[j].buf))
	}
	if prefer >= 0 && prefer < len(r.qps) && in(prefer) {
		return mrName(prefer), addr - r.qps[prefer].mr.Addr()
	}
	for j := range r.qps {
		if in(j) {
			return mrName(j), addr - r.qps[j].mr.Addr()
		}
	}
	return "", addr
}

// tsend logs send request wr of QP i: peer is the QP its RDMA requests aim
// at (-1: none), dest the model's UD destination (-1: by number).
func (r *trafficRun) tsend(i int, wr verbs.SendWR, peer, dest int) TSend {
	s := TSend{WRID: wr.WRID, Op: wr.Opcode, SGL: r.pieceList(i, wr.SGList), Signaled: wr.Flags&verbs.SendSignaled != 0,
		Inline: wr.Flags&verbs.SendInline != 0, Imm: wr.Imm, RKey: wr.RKey, Compare: wr.CompareAdd, Swap: wr.Swap}
	if wr.RemoteAddr != 0 {
		s.RAddrMR, s.RAddr = r.mrAt(peer, wr.RemoteAddr)
	}
	if wr.AH != nil {
		for d, ah := range r.qps[i].ahs {
			if ah == wr.AH {
				s.AH = fmt.Sprintf("ah%d_%d", i, d)
			}
		}
		s.QKey = wr.RemoteQKey
		if dest >= 0 {
			s.Dest = qpName(dest)
		} else {
			s.DestQPN = wr.RemoteQPN
		}
	}
	return s
}
