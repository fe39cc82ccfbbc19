// Package wc keeps the former names of the work-completion vocabulary (WC,
// Status, Opcode, Flags, WROpcode and their constants) as aliases of the
// verbs package, where the types, their methods and their tests now live
// (verbs.WC, verbs.WCStatus, verbs.WCOpcode, verbs.WCFlags,
// verbs.WROpcode). Engine code keeps compiling unchanged; new code should
// import verbs.
//
// # Golden data
//
// testdata/verbs44.golden is printed by internal/abigen/abigen.c from the
// installed libibverbs and holds the values of every enum of the verbs
// package (ibv_wc_status, ibv_wc_opcode, ibv_wr_opcode, ibv_event_type,
// ibv_qp_state, ibv_qp_type, ibv_access_flags, ...); the tests of verbs,
// sim, conformance and internal/abigolden check against it.
package wc
