package fuzz

import "testing"

// Seeds for FuzzQPOps, in DecodeQP's byte code.
var qpSeeds = []struct {
	name string
	data []byte
}{
	{"flush-into-an-armed-cq", []byte{
		0x0B,       // create-channel
		0x18, 0x08, // create-cq cqe=8 on channel 0
		0x00, 0x00, 0x24, // create-qp RC on cq 0, max_send_wr 4, max_recv_wr 4
		0x01, 0x01, 0x01, // up: INIT, RTR, RTS
		0x0A,       // arm cq 0
		0x06, 0x03, // post-recv 3
		0x05, 0x2B, // post-send 3, the first and third signaled
		0x04,       // ERR: six flush completions (FLUSH-01, FLUSH-04)
		0x0C,       // get-event: one (NOTIFY-18)
		0x0F, 0x02, // ack 1
		0x09, 0x10, // poll 16: sends then receives, each in posting order (FLUSH-02)
	}},
	{"overrun-by-flush", []byte{
		0x08, 0x01, // create-cq cqe=1
		0x00, 0x00, 0x20, // create-qp RC, max_send_wr 0, max_recv_wr 4
		0x01,       // INIT
		0x06, 0x04, // post-recv 4
		0x04,       // ERR: the CQ overruns (CQ-22, CQ-25)
		0x0D, 0x0D, // get-async: CQ_ERR (and another under the sticky reading)
		0x09, 0x10, // poll
		0x06, 0x01, // post-recv in ERR: ENOMEM, the lost completions keep their slots (QP-31)
		0x84,       // RESET frees them (FLUSH-08)
		0x01,       // INIT
		0x06, 0x04, // post-recv 4
	}},
	{"capacity-in-err", []byte{
		0x08, 0x10, // create-cq cqe=16
		0x00, 0x00, 0x12, // create-qp RC, max_send_wr 2, max_recv_wr 2
		0x01, 0x01, 0x01, // RTS
		0x05, 0x03, // post-send 3: 2 posted, ENOMEM (QP-29)
		0x04,       // ERR
		0x05, 0x01, // post-send in ERR: ENOMEM until a flush is polled
		0x09, 0x01, // poll 1
		0x05, 0x02, // post-send 2: 1 posted and flushed at once (FLUSH-05), then ENOMEM
		0x09, 0x10, // poll
	}},
	{"completions-outlive-their-qp", []byte{
		0x08, 0x10, // create-cq cqe=16
		0x00, 0x00, 0x24, // create-qp RC
		0x00, 0x04, 0x24, // create-qp UC on the same CQ (CQ-07)
		0x01, 0x11, // INIT both
		0x06, 0x02, 0x16, 0x02, // post-recv 2 on each
		0x04, 0x14, // ERR both
		0x84,       // RESET the first: its completions stay (CQ-26)
		0x17,       // destroy the second: so do its (CQ-26, QP-37)
		0x0E,       // destroy-cq: EBUSY, the first QP holds it (CQ-11)
		0x09, 0x10, // poll all four
		0x07, 0x0E, // destroy the first QP, then the CQ
	}},
	{"illegal-modifies", []byte{
		0x08, 0x04, // create-cq cqe=4
		0x00, 0x08, 0x11, // create-qp UD, max_send_wr 1, max_recv_wr 2
		0x03, 0x03, // RESET→RTS: EINVAL (QP-07)
		0x03, 0x06, // RESET→ERR: EINVAL, or ERR under the IBTA reading (QP-08), and up goes to RESET
		0x01,       // INIT
		0x03, 0x09, // INIT→INIT with CAP: EINVAL (QP-21)
		0x03, 0x0A, // INIT→RTR, nothing required for UD: CAP added, EINVAL
		0x03, 0x07, // to UNKNOWN: EINVAL (QP-06)
		0x01, 0x01, // RTR, RTS
		0x05, 0x01, // post-send on UD in RTS: skipped by the machine
		0x03, 0x04, // RTS→SQD
		0x00, 0x0C, 0x07, // create-qp of no transport, and max_qp_wr+1: EINVAL
	}},
}

// FuzzQPOps runs DecodeQP's operation sequences on QPs and their CQs against
// verbsim and the reference model under every profile, like FuzzCQOps.
func FuzzQPOps(f *testing.F) {
	for _, s := range qpSeeds {
		f.Add(s.data)
	}
	f.Fuzz(func(t *testing.T, data []byte) { runOps(t, data, DecodeQP) })
}
