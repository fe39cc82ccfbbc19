package scenario

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// key describes the values one key=value argument takes.
type key struct {
	num   bool     // an unsigned number (decimal or 0x...)
	int   bool     // a number that may be negative, as the C int it stands for
	prob  bool     // a probability in [0, 1]
	list  bool     // may be a list (a,b,c)
	oneOf []string // one of these words (each, for a list)
	orNum bool     // or, instead of one of oneOf, a number
	ref   string   // names an object of this kind (checked at run time)
}

// command is one entry of the command table.
type command struct {
	name     bool           // takes the new object's name as a bare word
	block    bool           // takes a block's name as a bare word (thread, daemon): it names no object
	keys     map[string]key // the key=value arguments it accepts
	flags    []string       // the bare words it accepts
	oneFlag  []string       // exactly one of these flags must be given
	required []string       // keys that must be given
	help     string         // one line, for verbsim run -help
	verb     string         // the libibverbs call, for the help
}

func (c command) usage(verb string) string {
	var parts []string
	if c.name || c.block {
		parts = append(parts, "NAME")
	}
	keys := make([]string, 0, len(c.keys))
	for k := range c.keys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := "N"
		switch spec := c.keys[k]; {
		case spec.ref != "":
			v = spec.ref
		case spec.oneOf != nil:
			v = strings.Join(spec.oneOf, "|")
		case spec.prob:
			v = "P"
		case spec.int:
			v = "INT"
		}
		if c.keys[k].list {
			v = "(" + v + ",...)"
		}
		if slices.Contains(c.required, k) {
			parts = append(parts, k+"="+v)
		} else {
			parts = append(parts, "["+k+"="+v+"]")
		}
	}
	for _, f := range c.flags {
		parts = append(parts, "["+f+"]")
	}
	return "usage: " + verb + " " + strings.Join(parts, " ")
}

var (
	numKey     = key{num: true}
	intKey     = key{int: true}
	numListKey = key{num: true, list: true}
	states     = []string{"reset", "init", "rtr", "rts", "sqd", "sqe", "err", "unknown"}
	statuses   = []string{"loc_len_err", "loc_qp_op_err", "loc_prot_err", "wr_flush_err", "mw_bind_err",
		"bad_resp_err", "loc_access_err", "rem_inv_req_err", "rem_access_err", "rem_op_err",
		"retry_exc_err", "rnr_retry_exc_err", "rem_abort_err", "fatal_err", "resp_timeout_err", "general_err"}
	maskBits = []string{"state", "cur_state", "en_sqd_async_notify", "access_flags", "pkey_index", "port", "qkey",
		"av", "path_mtu", "timeout", "retry_cnt", "rnr_retry", "rq_psn", "max_qp_rd_atomic", "alt_path",
		"min_rnr_timer", "sq_psn", "max_dest_rd_atomic", "path_mig_state", "cap", "dest_qpn"}
	pktKinds  = []string{"send", "write", "read_req", "atomic", "read_resp", "atomic_ack", "ack"}
	sendOps   = []string{"send", "send_imm", "write", "write_imm", "read", "cas", "faa"}
	accesses  = []string{"local_write", "remote_write", "remote_read", "remote_atomic"}
	qpTypes   = []string{"rc", "uc", "ud"}
	wcOpcodes = []string{"send", "recv", "write", "read", "recv_imm"}
)

// commandTable is every command of the language. The engine-facing half of
// each lives in engine.go.
var commandTable = map[string]command{
	// The fabric and time.
	"fabric": {keys: map[string]key{"devices": {list: true}, "mode": {oneOf: []string{"auto", "manual"}}, "seed": numKey,
		"max_cqe": numKey, "comp_vectors": numKey, "max_qp_wr": numKey, "readings": {list: true}},
		help: "create the fabric: its devices (a,b by default) and who moves time (auto: every verb runs the engine to rest; manual: only step, stabilize, tick and run do); " +
			"max_cqe, comp_vectors and max_qp_wr set every device's limits, and readings=(R,...) the exact readings the devices follow (verbs.Readings field names), whatever -profile says"},
	"step":      {help: "run one ready engine event (manual mode)"},
	"stabilize": {help: "run every engine event ready now, without moving the clock"},
	"tick":      {keys: map[string]key{"ns": numKey, "us": numKey, "ms": numKey}, help: "move the virtual clock forward, running what falls due"},
	"run":       {keys: map[string]key{"ms": numKey}, help: "run until nothing is left to do (at most ms of virtual time, 10 s by default)"},
	"advance":   {help: "move the clock to the next timer or delayed packet and run it"},
	// Faults and forced outcomes.
	"faults": {keys: map[string]key{"drop": {prob: true}, "duplicate": {prob: true}, "delay": {prob: true}},
		help: "set fabric-wide random packet faults (probabilities)"},
	"fault": {keys: map[string]key{"action": {oneOf: []string{"drop", "delay", "duplicate"}}, "from": {ref: "qp"}, "to": {ref: "qp"},
		"kind": {list: true, oneOf: pktKinds}, "skip": numKey, "count": numKey, "delay_ns": numKey},
		required: []string{"action"}, help: "aim a fault at chosen packets (sim.Fabric.InjectPacketFault)"},
	"force_status": {keys: map[string]key{"qp": {ref: "qp"}, "wr_id": numKey, "status": {oneOf: statuses}}, flags: []string{"recv"},
		required: []string{"qp", "wr_id", "status"}, help: "make the next completion of a WR carry this error status"},
	"fatal":     {keys: map[string]key{"qp": {ref: "qp"}}, required: []string{"qp"}, help: "the QP hits a catastrophic error (IBV_EVENT_QP_FATAL)"},
	"srq_error": {keys: map[string]key{"srq": {ref: "srq"}}, required: []string{"srq"}, help: "the SRQ hits a catastrophic error (IBV_EVENT_SRQ_ERR)"},
	"link": {keys: map[string]key{"dev": {}, "port": numKey}, flags: []string{"up", "down"}, oneFlag: []string{"up", "down"},
		required: []string{"dev"}, help: "take a port down or up, as a cable pull would"},
	"complete": {keys: map[string]key{"cq": {ref: "cq"}, "wr_id": numKey, "opcode": {oneOf: wcOpcodes}, "status": {oneOf: append([]string{"success"}, statuses...)},
		"byte_len": numKey, "qp_num": numKey, "vendor_err": numKey, "imm": numKey},
		flags: []string{"solicited"}, required: []string{"cq", "wr_id"},
		help: "the adapter writes a completion into the CQ directly, with no QP traffic (for CQ-only lessons); byte_len is 64 for a successful receive unless given; imm= sets IBV_WC_WITH_IMM"},
	// Objects.
	"open_device":         {name: true, keys: map[string]key{"dev": {}}, verb: "ibv_open_device", help: "open a context on a device (a by default)"},
	"alloc_pd":            {name: true, keys: map[string]key{"ctx": {ref: "ctx"}}, required: []string{"ctx"}, verb: "ibv_alloc_pd", help: "allocate a protection domain"},
	"create_comp_channel": {name: true, keys: map[string]key{"ctx": {ref: "ctx"}}, required: []string{"ctx"}, verb: "ibv_create_comp_channel", help: "create a completion channel"},
	"create_cq": {name: true, keys: map[string]key{"ctx": {ref: "ctx"}, "cqe": intKey, "channel": {ref: "channel"}, "vector": intKey},
		required: []string{"ctx", "cqe"}, verb: "ibv_create_cq", help: "create a completion queue of at least cqe entries, on comp_vector vector (0 by default)"},
	"resize_cq": {keys: map[string]key{"cq": {ref: "cq"}, "cqe": intKey}, required: []string{"cq", "cqe"}, verb: "ibv_resize_cq",
		help: "resize a completion queue to at least cqe entries"},
	"hold": {keys: map[string]key{"cq": {ref: "cq"}}, required: []string{"cq"},
		help: "take a reference on the CQ as a QP does: destroying it is EBUSY until release (CQ-11)"},
	"release": {keys: map[string]key{"cq": {ref: "cq"}}, required: []string{"cq"}, help: "drop a reference hold took"},
	"reg_mr": {name: true, keys: map[string]key{"pd": {ref: "pd"}, "size": numKey, "access": {list: true, oneOf: accesses}},
		required: []string{"pd"}, verb: "ibv_reg_mr", help: "register a buffer (4096 bytes by default, LOCAL_WRITE)"},
	"create_srq": {name: true, keys: map[string]key{"pd": {ref: "pd"}, "max_wr": numKey, "limit": numKey},
		required: []string{"pd"}, verb: "ibv_create_srq", help: "create a shared receive queue"},
	"create_ah": {name: true, keys: map[string]key{"pd": {ref: "pd"}, "dest": {ref: "qp"}}, required: []string{"pd"}, verb: "ibv_create_ah",
		help: "create an address handle for UD sends: the path to the port of dest's device (without dest, to port 1 of the PD's own)"},
	"modify_srq": {keys: map[string]key{"srq": {ref: "srq"}, "limit": numKey}, required: []string{"srq", "limit"}, verb: "ibv_modify_srq",
		help: "arm the SRQ's limit event: when taking a WR leaves fewer than limit queued, IBV_EVENT_SRQ_LIMIT_REACHED (IBV_SRQ_LIMIT)"},
	"query_srq": {keys: map[string]key{"srq": {ref: "srq"}}, required: []string{"srq"}, verb: "ibv_query_srq", help: "read the SRQ's max_wr, max_sge and srq_limit"},
	"create_qp": {name: true, keys: map[string]key{"pd": {ref: "pd"}, "type": {oneOf: qpTypes, orNum: true}, "cq": {ref: "cq"}, "send_cq": {ref: "cq"},
		"recv_cq": {ref: "cq"}, "srq": {ref: "srq"}, "send_wr": numKey, "recv_wr": numKey}, flags: []string{"sq_sig_all"},
		required: []string{"pd"}, verb: "ibv_create_qp", help: "create a queue pair (RC, 4 send and 4 receive WRs by default); cq= sets both CQs"},
	"modify_qp": {keys: map[string]key{"qp": {ref: "qp"}, "state": {oneOf: states}, "peer": {ref: "qp"}, "mask": {list: true, oneOf: maskBits},
		"timeout": numKey, "retry_cnt": numKey, "rnr_retry": numKey, "min_rnr_timer": numKey, "dest_qpn": numKey},
		required: []string{"qp"}, verb: "ibv_modify_qp",
		help: "move a QP to a state with the minimal attribute mask of the transition (mask= overrides it); peer= names the remote QP, dest_qpn= a QP number instead"},
	"connect": {keys: map[string]key{"a": {ref: "qp"}, "b": {ref: "qp"}, "timeout": numKey, "retry_cnt": numKey, "rnr_retry": numKey, "min_rnr_timer": numKey},
		required: []string{"a", "b"}, help: "take two RC or UC QPs to RTS, each connected to the other (the three ibv_modify_qp calls each, as rdma_cm would)"},
	// Work requests and completions.
	"post_send": {keys: map[string]key{"qp": {ref: "qp"}, "wr_id": numListKey, "opcode": {oneOf: sendOps}, "len": numKey, "mr": {ref: "mr"},
		"remote": {ref: "mr"}, "rkey": numKey, "ah": {ref: "ah"}, "dest": {ref: "qp"}, "dest_qpn": numKey, "qkey": numKey, "signaled": numListKey},
		flags: []string{"signaled", "solicited", "inline"}, required: []string{"qp", "wr_id"}, verb: "ibv_post_send",
		help: "post send WRs (a list of wr_ids posts a chain); len bytes (64 by default, 0: no SGE) from mr (the PD's first MR); remote= targets an RDMA WR at that MR (rkey= overrides its rkey); " +
			"UD: ah= and dest= (the remote QP; qkey 0x11111111 by default) or dest_qpn=; signaled= lists the wr_ids to signal, the flag signals all"},
	"post_recv": {keys: map[string]key{"qp": {ref: "qp"}, "wr_id": numListKey, "len": numKey, "mr": {ref: "mr"}},
		required: []string{"qp", "wr_id"}, verb: "ibv_post_recv", help: "post receive WRs"},
	"post_srq_recv": {keys: map[string]key{"srq": {ref: "srq"}, "wr_id": numListKey, "len": numKey, "mr": {ref: "mr"}},
		required: []string{"srq", "wr_id"}, verb: "ibv_post_srq_recv", help: "post receive WRs to an SRQ"},
	"poll_cq": {keys: map[string]key{"cq": {ref: "cq"}, "n": numKey}, flags: []string{"ex"}, required: []string{"cq"}, verb: "ibv_poll_cq",
		help: "poll up to n completions (16 by default); ex reads them with the poll iterator (ibv_start_poll, ibv_next_poll, ibv_end_poll)"},
	"req_notify_cq": {keys: map[string]key{"cq": {ref: "cq"}}, flags: []string{"next", "solicited"}, oneFlag: []string{"next", "solicited"}, required: []string{"cq"}, verb: "ibv_req_notify_cq", help: "arm the CQ: next (solicited_only=0) or solicited (solicited_only=1)"},
	"get_cq_event": {keys: map[string]key{"channel": {ref: "channel"}}, flags: []string{"wait"}, required: []string{"channel"}, verb: "ibv_get_cq_event",
		help: "read a completion event without blocking (EAGAIN when none is queued); in a thread, wait blocks until one comes"},
	"ack_cq_events": {keys: map[string]key{"cq": {ref: "cq"}, "n": intKey}, required: []string{"cq"}, verb: "ibv_ack_cq_events", help: "acknowledge n events of the CQ (1 by default)"},
	"get_async_event": {keys: map[string]key{"ctx": {ref: "ctx"}}, required: []string{"ctx"}, verb: "ibv_get_async_event",
		help: "read an async event without blocking (EAGAIN when none is queued)"},
	"ack_async_event": {keys: map[string]key{"ctx": {ref: "ctx"}, "event": numKey}, required: []string{"ctx"}, verb: "ibv_ack_async_event",
		help: "acknowledge the oldest async event read and not yet acknowledged, or the event-th read (from 0)"},
	// Destruction.
	"destroy_cq":  {keys: map[string]key{"cq": {ref: "cq"}}, required: []string{"cq"}, verb: "ibv_destroy_cq", help: "destroy a CQ (waits at most 10 ms of wall time for acks)"},
	"destroy_qp":  {keys: map[string]key{"qp": {ref: "qp"}}, required: []string{"qp"}, verb: "ibv_destroy_qp", help: "destroy a QP"},
	"destroy_ah":  {keys: map[string]key{"ah": {ref: "ah"}}, required: []string{"ah"}, verb: "ibv_destroy_ah", help: "destroy an address handle"},
	"dereg_mr":    {keys: map[string]key{"mr": {ref: "mr"}}, required: []string{"mr"}, verb: "ibv_dereg_mr", help: "deregister a memory region: its lkey and rkey stop working"},
	"dealloc_pd":  {keys: map[string]key{"pd": {ref: "pd"}}, required: []string{"pd"}, verb: "ibv_dealloc_pd", help: "free a protection domain (EBUSY while anything still uses it)"},
	"destroy_srq": {keys: map[string]key{"srq": {ref: "srq"}}, required: []string{"srq"}, verb: "ibv_destroy_srq", help: "destroy an SRQ"},
	// Threads, run by the schedule explorer (threads.go, docs/explore.md).
	"thread": {block: true, help: "start a block of commands, up to end, that runs as a goroutine of the world the explore step (or verbsim explore FILE) explores; it must finish"},
	"daemon": {block: true, help: "a thread that may still wait when everything else has finished (a server's loop)"},
	"loop":   {help: "in a thread: repeat the commands up to the matching end, until an exit_if ends the thread"},
	"end":    {help: "end a thread, daemon or loop block"},
	"exit_if": {keys: map[string]key{"polled": numKey}, required: []string{"polled"},
		help: "in a thread: end the thread once it has polled at least polled completions"},
	"drain_cq": {keys: map[string]key{"cq": {ref: "cq"}}, required: []string{"cq"}, verb: "ibv_poll_cq",
		help: "in a thread: poll the CQ until it is empty, one ibv_poll_cq at a time"},
	"explore": {keys: map[string]key{"strategy": {oneOf: []string{"auto", "random", "pct", "exhaustive"}}, "seed": numKey, "schedules": numKey, "preemptions": numKey},
		help: "explore the schedules of the threads above: each schedule runs the commands above that are not threads on a fresh fabric, then the threads, one move at a time; prints what it found, with the failing schedule's timeline and replay token"},
	"destroy_comp_channel": {keys: map[string]key{"channel": {ref: "channel"}}, required: []string{"channel"}, verb: "ibv_destroy_comp_channel", help: "destroy a completion channel"},
}

// inThreads are the commands a thread block takes; topLevel those of them
// a script may also run outside one.
var (
	inThreads = map[string]bool{"complete": true, "poll_cq": true, "drain_cq": true, "req_notify_cq": true, "get_cq_event": true,
		"ack_cq_events": true, "destroy_cq": true, "loop": true, "end": true, "exit_if": true}
	topLevel = map[string]bool{"complete": true, "poll_cq": true, "req_notify_cq": true, "get_cq_event": true,
		"ack_cq_events": true, "destroy_cq": true}
)

func threadCommands() string {
	var names []string
	for n := range inThreads {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// WriteHelp lists the commands of the language, one per line.
func WriteHelp(w io.Writer) {
	names := make([]string, 0, len(commandTable))
	for n := range commandTable {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		c := commandTable[n]
		fmt.Fprintf(w, "  %s\n      %s", strings.TrimPrefix(c.usage(n), "usage: "), c.help)
		if c.verb != "" {
			fmt.Fprintf(w, " (%s)", c.verb)
		}
		fmt.Fprintln(w)
	}
}
