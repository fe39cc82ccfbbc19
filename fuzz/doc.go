// Package fuzz holds verbsim's native Go fuzz targets. Each one drives the
// simulator through the conformance adapter (conformance/simdev) and compares
// it, operation by operation, with the reference model of conformance/model.
//
// # Targets
//
//   - FuzzCQOps decodes the input bytes into operations on CQs and completion
//     channels (see Decode for the byte code) and runs them under every
//     profile. It fails on a panic, on an error that is not a *verr.Error
//     carrying a syscall.Errno, on any outcome that differs from the model,
//     and on a broken invariant (FIFO, one-shot arm, no event without a
//     completion after an arm, no more acks than reads).
//     Bit 3 of a poll's argument reads through the ibv_start_poll iterator
//     instead of ibv_poll_cq, so a run mixes the two APIs (CQX-10).
//   - FuzzCQEx creates an extended CQ from fuzzed ibv_cq_init_attr_ex fields
//     (wc_flags, comp_mask, flags, cqe) under every profile, then mixes
//     pushes, ibv_poll_cq, the poll iterator and field reads, checked against
//     a shadow queue (CQX-01..08).
//   - FuzzQPOps is FuzzCQOps for QPs: DecodeQP's byte code creates QPs on
//     CQs, walks them through their states, posts sends and receives, moves
//     them to ERR (flushing into the CQs), resets and destroys them, among
//     the CQ operations those need. The machine keeps every request from
//     executing (see ops.Machine in conformance/ops), so the runs stay valid once there
//     is traffic.
//   - FuzzStateMachine feeds the input to the rapid state machine of package
//     conformance/ops (ops.StateMachine) through rapid.MakeFuzz: the bytes
//     are rapid's random choices, so any input is a valid run.
//   - FuzzTrafficStateMachine does the same for the traffic state machine
//     (ops.TrafficStateMachine): the profile, whether the fabric
//     drops, duplicates and delays packets, and every step of RC, UC and UD
//     traffic between QPs come from the input.
//   - FuzzBindMW binds a memory window with fuzzed inputs (type, range,
//     rights, new key, the MR's access, profile) on a connected RC pair and
//     sends one remote request through its rkey, checking both statuses
//     against a small oracle of MW-01 and MW-04..MW-06.
//   - FuzzXRC opens and closes XRC domains and creates, numbers and
//     destroys SRQs through ibv_create_srq_ex in an order and with
//     comp_masks, fds and srq_types taken from the input, under both
//     profiles (XRC-01..05).
//   - FuzzDM allocates, copies, registers on, deregisters and frees
//     device memory with lengths, alignments, comp_masks, offsets and
//     access flags from the input, under both profiles, against a shadow
//     of the device's page map and of every allocation's bytes
//     (DM-01..06).
//
// # Running
//
// Plain go test runs the seed corpus (the f.Add inputs and whatever is under
// testdata/fuzz/) and is fast:
//
//	go test ./fuzz/
//
// To search for new failures, fuzz one target at a time:
//
//	go test -run='^$' -fuzz=FuzzCQOps -fuzztime=60s ./fuzz/
//	go test -run='^$' -fuzz=FuzzCQEx -fuzztime=60s ./fuzz/
//	go test -run='^$' -fuzz=FuzzQPOps -fuzztime=60s ./fuzz/
//	go test -run='^$' -fuzz=FuzzStateMachine -fuzztime=60s ./fuzz/
//	go test -run='^$' -fuzz=FuzzTrafficStateMachine -fuzztime=60s ./fuzz/
//	go test -run='^$' -fuzz=FuzzXRC -fuzztime=60s ./fuzz/
//	go test -run='^$' -fuzz=FuzzDM -fuzztime=60s ./fuzz/
//
// The progress line may show 0 execs/sec for a while: the fuzzer is then
// minimizing a newly interesting input, for up to -fuzzminimizetime (60s by
// default) each. The two state machine targets find almost every input
// interesting, so add -fuzzminimizetime=5s to spend the time fuzzing rather
// than minimizing (FuzzTrafficStateMachine otherwise runs about 60 inputs
// in three minutes).
//
// # Replaying a failure
//
// When fuzzing finds a failing input, go test writes it to
// testdata/fuzz/<Target>/<hash> and prints the name. From then on plain go
// test runs it as part of the seed corpus, and one input can be run alone:
//
//	go test -run='FuzzCQOps/<hash>' -v ./fuzz/
//
// FuzzCQOps, FuzzQPOps and FuzzStateMachine print the run that failed as a
// scenario (ops.Machine.Log), its last operation the one whose outcome
// differed from the model: saved to a file, verbsim run FILE replays it on
// verbsim step by step, and ops.Parse and ops.Replay read it back and apply
// it to any device. Once the bug is fixed, keep the file under
// testdata/fuzz as a regression test.
package fuzz
