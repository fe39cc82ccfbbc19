// Package conformance is verbsim's rule suite: executable checks of the
// verbs behaviour catalogued in spec/catalogue.md, written against
// interfaces of the verbs surface (Device, Context, CQ, CompChannel,
// AsyncEvent) rather than against any implementation's internals.
//
// Run(t, newDevice) runs every case as a subtest named after its rule ID,
// each on a fresh device; Check(newDevice) returns all failures joined. A
// failure names the rule and the line of the case, for example
//
//	CQ-08 (resize below unpolled): got nil, want EINVAL (conformance/cq.go:88)
//
// Behaviour that differs between providers is read from the device's
// Profile, so one suite checks each reading. Capabilities that only a
// simulator has (injecting completions, holding a CQ the way a QP does) are
// optional interfaces found by type assertion.
//
// Package simdev adapts verbsim's own sim package; conformance/sim_test.go
// runs the suite against it under every built-in profile, and against
// deliberately broken devices to show that the suite catches them.
package conformance
