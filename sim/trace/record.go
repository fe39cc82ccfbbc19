package trace

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"github.com/verbsim/verbsim/verbs"
)

// Record is one thing that happened: a verb call, a packet, a completion,
// an event, a timer, a state change or a fault, with what a tool needs as
// typed fields. The text of a record (What, Cause, String) is a view of
// those fields for people; a tool reads the fields, never the text.
//
// Which fields are set depends on Kind and Name; a field that does not
// apply is its zero value, and the groups WC, Packet and Async are nil.
type Record struct {
	Tick uint64 // virtual time
	Seq  uint64 // order among all records of the fabric
	Kind Kind   // what sort of thing happened

	// Object is the name of what it happened to: "dev0/qp 0x11",
	// "dev0/cq#1"; a device ("dev0") for a packet that reached no QP,
	// "fabric" for a fabric-wide setting.
	Object string
	// Name says what happened, one fixed word or phrase per sort of
	// event: for a KindVerb record the verb without its ibv_ prefix
	// ("post_send", "modify_qp"); otherwise the event ("send", "receive",
	// "drop", "completion", "arm fired", "raise", "RNR wait", "ACK
	// timeout", "state ERR"). Records of one Kind and Name carry the same
	// fields; rewording Detail or Why changes no record's meaning.
	Name string
	// Peer names another object the record is about: the QP a packet is
	// sent to, the PD an MR is registered on, the context a PD is
	// allocated on, the element of an async event. "" when there is none.
	Peer string
	// Detail is the rest of what happened, for people: a verb's arguments
	// and outcome ("cqe=16", "2 of 2 WR(s) posted"). Tools do not parse
	// it: what they need is a field.
	Detail string

	// Errno is the errno of a failed verb (0: it succeeded).
	Errno syscall.Errno
	// Why is the cause, in words: a failed verb's error, what a fault did,
	// what the engine decided ("no receive WR").
	Why string
	// Rule is the catalogue rule (spec/catalogue.md) the record follows:
	// an ID ("XFER-07"), several separated by ", " ("XFER-06, XFER-26"),
	// or an ID with the reading of an implementation-defined rule ("CQ-26
	// B"). Rules splits it.
	Rule string

	WC     *WC       // a work completion written, lost or failed
	Packet *Packet   // a packet on the wire, or the NAK a responder answers with
	Async  *Async    // an async event raised, read or acknowledged
	Timer  TimerKind // the timer that fired, or that the record arms or waits for
	Fault  int       // the number of the targeted fault that acted (sim.Fault), or 0
}

// Kind is what sort of thing a record tells.
type Kind uint8

// The kinds of record, in the order Kinds lists them. KindOther, the zero
// value, is a record no other kind describes: a note.
const (
	KindOther      Kind = iota // anything else
	KindVerb                   // a verb the application called: create_qp, post_send, poll_cq, ...
	KindPacket                 // a packet sent, received, dropped, duplicated or delayed; a responder's NAK
	KindCompletion             // a work completion written into a CQ, lost to an overrun, or failed
	KindEvent                  // an arm firing, an async event raised, a catastrophic error
	KindTimer                  // a timer armed or fired: ACK timeout, RNR wait, retries exhausted
	KindState                  // the engine moved an object to another state (a QP to ERR)
	KindFault                  // a fault configured or armed, a link taken down or up
	numKinds
)

var kindNames = [numKinds]string{"other", "verb", "packet", "completion", "event", "timer", "state", "fault"}

// String names the kind: "verb", "packet", ...
func (k Kind) String() string { return enumName(k, kindNames[:], "Kind") }

// enumName is the name of v in names, or "Type(v)" for a value outside
// them.
func enumName[T ~uint8](v T, names []string, typ string) string {
	if int(v) < len(names) {
		return names[v]
	}
	return typ + "(" + strconv.Itoa(int(v)) + ")"
}

// ParseKind returns the kind named s (Kind.String).
func ParseKind(s string) (Kind, bool) {
	for k, n := range kindNames {
		if n == s {
			return Kind(k), true
		}
	}
	return 0, false
}

// Kinds returns every kind, in a fixed order: verb, packet, completion,
// event, timer, state, fault, other.
func Kinds() []Kind {
	return []Kind{KindVerb, KindPacket, KindCompletion, KindEvent, KindTimer, KindState, KindFault, KindOther}
}

// What renders what happened, without time, object or cause:
//
//	send RC SEND psn=0 len=64 first last to dev1/qp 0x11
//	completion qp 0x11 wr_id 7 IBV_WC_SUCCESS IBV_WC_RECV
//	raise IBV_EVENT_CQ_ERR on dev0/cq#2
//	reg_mr on dev0/pd#1: length 4096 lkey 0x102 rkey 0x182
//
// that is the name; the packet (unless the record names only a NAK), the
// completion or the async event; "to"
// the peer (a packet) or "on" the peer (anything else); and the detail
// after a colon.
func (r *Record) What() string {
	var b strings.Builder
	b.WriteString(r.Name)
	if p := r.Packet; p != nil && p.Transport != 0 {
		b.WriteByte(' ')
		b.WriteString(p.String())
	}
	if w := r.WC; w != nil {
		b.WriteByte(' ')
		b.WriteString(w.String())
	}
	if a := r.Async; a != nil {
		b.WriteByte(' ')
		b.WriteString(a.String())
	}
	if r.Peer != "" {
		if r.Kind == KindPacket {
			b.WriteString(" to ")
		} else {
			b.WriteString(" on ")
		}
		b.WriteString(r.Peer)
	}
	if r.Detail != "" {
		b.WriteString(": ")
		b.WriteString(r.Detail)
	}
	return b.String()
}

// Cause renders why it happened: Why, then the rule in parentheses; ""
// when the record has neither.
func (r *Record) Cause() string {
	switch {
	case r.Rule == "":
		return r.Why
	case r.Why == "":
		return r.Rule
	}
	return r.Why + " (" + r.Rule + ")"
}

// Line renders the record without its time and sequence number, as
// "object: what (cause)".
func (r *Record) Line() string {
	s := r.Object + ": " + r.What()
	if c := r.Cause(); c != "" {
		s += " (" + c + ")"
	}
	return s
}

// String renders the record on one line:
//
//	t=4096 #12 dev0/qp 0x11: ACK timeout (retransmit (XFER-10))
func (r Record) String() string {
	return "t=" + strconv.FormatUint(r.Tick, 10) + " #" + strconv.FormatUint(r.Seq, 10) + " " + r.Line()
}

// Rules returns the IDs of the rules the record follows (Rule split at
// ", ", each without a reading's letter), or nil.
func (r *Record) Rules() []string {
	if r.Rule == "" {
		return nil
	}
	var ids []string
	for _, s := range strings.Split(r.Rule, ", ") {
		id, _, _ := strings.Cut(s, " ")
		ids = append(ids, id)
	}
	return ids
}

// NAK returns the NAK kind of the record's packet: the NAK sent or
// received, or the one a responder decided to answer with; NotNAK when the
// record carries no NAK.
func (r *Record) NAK() NAKKind {
	if r.Packet == nil {
		return NotNAK
	}
	return r.Packet.NAK
}

// WC is the work completion a record is about: its QP, wr_id, status and
// opcode (verbs.WC). The opcode of an error completion is not valid
// (FLUSH-06) and its view leaves it out.
type WC struct {
	QPNum  uint32
	WRID   uint64
	Status verbs.WCStatus
	Opcode verbs.WCOpcode
}

// String renders the completion as "qp 0x11 wr_id 7 IBV_WC_SUCCESS
// IBV_WC_RECV", or for an error "qp 0x11 wr_id 8 IBV_WC_WR_FLUSH_ERR".
func (w *WC) String() string {
	s := fmt.Sprintf("qp %#x wr_id %d %s", w.QPNum, w.WRID, w.Status.Name())
	if w.Status == verbs.WCSuccess {
		s += " " + w.Opcode.Name()
	}
	return s
}

// Async is the async event a record is about. The object the event names,
// if any, is the record's Peer; a port event names its port.
type Async struct {
	Type verbs.EventType
	Port uint8 // the port of a port event (from 1), or 0
}

// String renders the event as "IBV_EVENT_CQ_ERR", or for a port event
// "IBV_EVENT_PORT_ERR port 1".
func (a *Async) String() string {
	if a.Port != 0 {
		return a.Type.Name() + " port " + strconv.Itoa(int(a.Port))
	}
	return a.Type.Name()
}
