package trace

import (
	"bytes"
	"encoding/json"

	"github.com/verbsim/verbsim/sim/verr"
)

// jsonRecord is the JSON shape of a record: every enum by its name, every
// field that does not apply left out.
type jsonRecord struct {
	Tick   uint64      `json:"tick"`
	Seq    uint64      `json:"seq"`
	Kind   string      `json:"kind"`
	Object string      `json:"object"`
	Name   string      `json:"name"`
	Peer   string      `json:"peer,omitempty"`
	Packet *jsonPacket `json:"packet,omitempty"`
	WC     *jsonWC     `json:"wc,omitempty"`
	Async  *jsonAsync  `json:"async,omitempty"`
	Timer  string      `json:"timer,omitempty"`
	Fault  int         `json:"fault,omitempty"`
	Errno  string      `json:"errno,omitempty"`
	Detail string      `json:"detail,omitempty"`
	Why    string      `json:"why,omitempty"`
	Rule   string      `json:"rule,omitempty"`
	What   string      `json:"what"`
}

type jsonPacket struct {
	Transport string  `json:"transport,omitempty"`
	Kind      string  `json:"kind,omitempty"`
	PSN       *uint32 `json:"psn,omitempty"`
	Len       int     `json:"len,omitempty"`
	First     bool    `json:"first,omitempty"`
	Last      bool    `json:"last,omitempty"`
	NAK       string  `json:"nak,omitempty"`
}

type jsonWC struct {
	QPNum  uint32 `json:"qp_num"`
	WRID   uint64 `json:"wr_id"`
	Status string `json:"status"`
	Opcode string `json:"opcode,omitempty"`
}

type jsonAsync struct {
	Type string `json:"type"`
	Port uint8  `json:"port,omitempty"`
}

// MarshalJSON renders the record as one JSON object: tick, seq, kind,
// object and name always; peer, packet (transport, kind, psn, len, first,
// last, nak; only nak for a responder's decision to NAK), wc (qp_num,
// wr_id, status, opcode), async (type, port),
// timer, fault, errno, detail, why and rule when they apply; and what, the
// text of What, for display. Enums are written by name ("packet",
// "RNR_NAK", "IBV_WC_SUCCESS", "EINVAL"). An error completion has no
// opcode (FLUSH-06). It is the one JSON shape of a record: trace.Log's
// JSON lines, verbsim's -trace-format json and the scenario timelines' JSON
// all use it.
func (r Record) MarshalJSON() ([]byte, error) {
	j := jsonRecord{
		Tick: r.Tick, Seq: r.Seq, Kind: r.Kind.String(), Object: r.Object, Name: r.Name, Peer: r.Peer,
		Fault: r.Fault, Detail: r.Detail, Why: r.Why, Rule: r.Rule, What: r.What(),
	}
	if p := r.Packet; p != nil {
		jp := &jsonPacket{}
		if p.Transport != 0 {
			psn := p.PSN
			jp.Transport, jp.Kind, jp.PSN, jp.Len, jp.First, jp.Last = p.Transport.String(), p.Kind.String(), &psn, p.Len, p.First, p.Last
		}
		if p.NAK != NotNAK {
			jp.NAK = p.NAK.String()
		}
		j.Packet = jp
	}
	if w := r.WC; w != nil {
		j.WC = &jsonWC{QPNum: w.QPNum, WRID: w.WRID, Status: w.Status.Name()}
		if w.Status == 0 {
			j.WC.Opcode = w.Opcode.Name()
		}
	}
	if a := r.Async; a != nil {
		j.Async = &jsonAsync{Type: a.Type.Name(), Port: a.Port}
	}
	if r.Timer != TimerNone {
		j.Timer = r.Timer.String()
	}
	if r.Errno != 0 {
		j.Errno = verr.Name(r.Errno)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the text keeps its < and &: JSON lines are read by tools, not browsers
	if err := enc.Encode(j); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
