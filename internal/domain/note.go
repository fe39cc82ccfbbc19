package domain

import "github.com/verbsim/verbsim/verbs"

// NoteKind says what a Note reports.
type NoteKind uint8

// The notes the engine makes for a checker. Each says which fields it
// sets; the others are zero.
const (
	// NoteCreated: Obj was just created and named (Created makes it).
	NoteCreated NoteKind = iota + 1
	// NoteDestroying: Obj's destroy verb is about to wait for the
	// acknowledgement of the events already read about it (CQ-13,
	// ASYNC-05); NoteDestroyed follows once they have come.
	NoteDestroying
	// NoteDestroyed: Obj's destroy verb has taken it away.
	NoteDestroyed
	// NoteEventRead: Obj, a completion channel or an async event queue,
	// handed an event about With to its reader (a CQ; a CQ, QP or SRQ for
	// an async event, nil for a port event).
	NoteEventRead
	// NoteAcked: the program acknowledged N events of Obj (a CQ's
	// completion events; with Async, an async event about Obj); Err is
	// the verb's error when it refused.
	NoteAcked
	// NotePolled: Obj, a CQ, has been polled (ibv_poll_cq) and returned
	// WCs to the program, perhaps none.
	NotePolled
	// NotePosted: Obj, a QP or SRQ, took the work request WR (a send) or
	// the receive RecvSGEs with WRID, at Seq in its queue; Recv says which.
	NotePosted
	// NoteSent: the send work request at Seq of Obj, a QP, is about to
	// have its first bytes read from memory to go on the wire.
	NoteSent
	// NoteDone: the send work request at Seq of Obj, a QP, has completed
	// (whether or not it makes a WC), with Status.
	NoteDone
	// NotePlacing: the first bytes of a message are about to be written
	// to the receive work request WRID (at Seq) of Obj, a QP or SRQ.
	NotePlacing
	// NoteReceived: the receive work request WRID of Obj, a QP or SRQ,
	// holds its message and completes with Status; With is the QP it
	// arrived on.
	NoteReceived
	// NoteModified: Obj, a QP, moved from state From to To.
	NoteModified
	// NoteResized: Obj, a CQ, has a new capacity.
	NoteResized
	// NoteDeregistering: Obj, a memory region or window, is about to stop
	// working: LKey and RKey are its keys (RKey alone for a window).
	NoteDeregistering
	// NoteRereg: Obj, a memory region, was re-registered: LKey and RKey
	// were its keys before, NewLKey and NewRKey are its keys now.
	NoteRereg
)

// Note is one thing the engine tells a checker (Checker.Note). The engine
// builds one only while Checking reports true.
type Note struct {
	Kind NoteKind
	Obj  any // the object the note is about
	With any // another object it names; see the kinds
	// Async says, for NoteAcked, that the event acknowledged was an async
	// event.
	Async bool
	// Recv says, for NotePosted, that the work request is a receive.
	Recv bool
	N    int
	Seq  uint64
	WRID uint64
	// WR is the send work request of NotePosted.
	WR *verbs.SendWR
	// SGEs are the scatter/gather elements of a receive (NotePosted,
	// NotePlacing, NoteReceived) or of a send (NoteSent, NoteDone).
	SGEs []verbs.SGE
	// WCs are the completions of NotePolled.
	WCs      []verbs.WC
	Status   verbs.WCStatus
	From, To verbs.QPState
	// The keys of NoteDeregistering and NoteRereg.
	LKey, RKey, NewLKey, NewRKey uint32
	Err                          error
}
