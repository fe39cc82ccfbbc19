// Package cq implements the completion queue of a simulated HCA: a ring of
// work completions with the verbs ibv_create_cq, ibv_poll_cq,
// ibv_req_notify_cq, ibv_ack_cq_events, ibv_resize_cq and ibv_destroy_cq, and
// the producer side the transport engine feeds. The same CQ is the extended
// CQ of ibv_create_cq_ex (Config.WCFlags, CompMask, Flags) with its poll
// iterator: StartPoll, NextPoll, EndPoll and the Read methods (ex.go,
// rules CQX-01..10 in spec/catalogue.md §17).
//
// This package is the engine behind sim.CQ, not a public API: it sits under
// sim/internal, so only package sim and its tests import it, and users
// reach a CQ through the handle sim.CQ, whose methods forward here. Its
// exported names (the ...Locked hooks, Handle, Owner, Domain) are for
// package sim; the verbs documentation of each call lives on the handle.
//
// A CQ holds at most CQE completions and hands them out in the order they
// were added (CQ-17). Adding a completion to a full CQ overruns it (CQ-22):
// the completion is lost and IBV_EVENT_CQ_ERR is raised on the async queue;
// what the CQ does afterwards is a policy (CQ-23). Arming, one-shot events and
// the solicited rules come from package notify; this package decides when a
// completion reaches the arm (only when stored, NOTIFY-02) and queues the event
// after the completion is pollable (NOTIFY-12).
//
// Destroying a CQ follows libibverbs: EBUSY while a QP uses it (CQ-11), and a
// wait for the acknowledgement of events already read (CQ-13), which
// DestroyContext bounds by a context so a forgotten ack fails a test instead
// of hanging it.
//
// Every method is safe for concurrent use. A CQ shares one lock, the domain
// lock, with its channel and async queue. A nil *CQ is a handle to nothing:
// verbs on it return EINVAL and accessors the zero value, as package sim's
// doc states for the whole API.
package cq
