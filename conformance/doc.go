// Package conformance is verbsim's rule suite: executable checks of the
// verbs behaviour catalogued in spec/catalogue.md, written against the
// interfaces of package verbs rather than against any implementation's
// internals.
//
// Run(t, newDevice) runs every case as a subtest named after its rule ID,
// each on a fresh device; Check(newDevice) returns all failures joined. A
// failure names the rule and the line of the case, for example
//
//	CQ-08 (resize below unpolled): got nil, want EINVAL (conformance/cq.go:88)
//
// Behaviour that differs between providers is read from the device's
// Profile, so one suite checks each reading.
//
// # What an implementation provides
//
// Everything the suite drives is an object of package verbs (verbs.Context,
// verbs.CQ, verbs.QP...). To run the suite, an implementation (verbsim's
// simulator, or a binding to a real libibverbs) provides:
//
//   - Required: a Device, which is a verbs.Device plus Profile: the
//     verbs.Readings of the implementation-defined rules it follows. The zero
//     Readings are the man pages'. Limits are read with ibv_query_device and
//     ibv_query_port (LimitsOf); port 1 is the port the QPs use.
//   - Optional verbs, found by type assertion; a case that needs a missing
//     one logs that it checked nothing: verbs.ExCQCreator (CQX),
//     verbs.QPExCreator and verbs.WRBuilder (QPX), verbs.XRCOpener and
//     verbs.SRQNumGetter (XRC, QUERY-07), verbs.ExQuerier (QUERY-03,
//     -05, -06), verbs.MRReregisterer (MR-12..17), verbs.DMAllocator and
//     verbs.DMMRRegisterer (DM; under readings with NoDM, DM-02 checks
//     that ibv_alloc_dm refuses with EOPNOTSUPP). A device without memory
//     windows fails PD.AllocMW with EOPNOTSUPP and the MW cases end there.
//   - Optional capabilities of the Device, which only a simulator or a
//     test fabric has: LimitedDevice (a fresh device with small limits),
//     PeerDevice (a second adapter on the same fabric; without it the
//     transport cases run in loopback), Clock (virtual time; without it
//     waits are in wall time, bounded by Patience), Faults, LinkControl
//     and Forger (packets of a hostile peer, for XFER-27, XFER-34 and
//     XFER-35; without it those cases log and end).
//   - Optional capabilities of the objects, for the cases that need a
//     completion, event or error no verb can produce on demand: Injector
//     and Referencer on CQs, Referencer on MRs, Depth on channels and
//     SRQs, Consumer and SRQErrorInjector on SRQs, Outstander,
//     FatalInjector and StatusForcer on QPs. A real device has none of
//     them; the cases that need Injector fail saying so, the others log
//     and end.
//
// Objects must compare equal with == to themselves as every accessor
// returns them (the CQ GetEvent returns is the CQ CreateCQ returned; an
// async event's QP is the QP PD.CreateQP returned), as verbs requires.
//
// # Where things are
//
// A case is a named function listed in its file's table with its rule ID
// and a few words (cqCases in cq.go, xferQpCases in xfer_qp.go, ...); run.go
// lists the tables. To add a case, write its function beside the rules it
// checks and add a row to that file's table. Each family's mutants (broken
// devices its cases must catch) are in <family>_mutants_test.go, beside the family.
//
// Package conformance/ops holds the typed operations, the Machine that
// applies them to a device and to the reference model of conformance/model
// at once, and the rapid state machines built on them; a failing run prints
// a scenario that `verbsim run` replays. Package simdev gives the suite
// verbsim's own sim package, whose verbs objects offer every optional
// capability; conformance/sim_test.go runs the suite against it under every
// built-in profile, and against deliberately broken devices (mutants
// wrapping the verbs interfaces) to show that the suite catches them. A
// traffic fabric (TrafficFabric, simdev.TrafficFabric) is what the traffic
// state machine runs on.
package conformance
