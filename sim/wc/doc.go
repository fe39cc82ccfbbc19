// Package wc defines the work-completion vocabulary of the simulator: the
// WC record that polling a CQ returns and the typed enums it is built from,
// with the numbers and strings of rdma-core 44's libibverbs.
//
// It is the leaf of the package graph: it imports only the standard
// library, and every other simulator package may import it.
//
// # Index
//
//   - WC mirrors struct ibv_wc field for field. Its doc comments say which
//     fields are valid for which status and opcode; WC.InvalidatedRkey reads
//     the imm_data/invalidated_rkey union; WC.String is a one-line rendering
//     for test failures and walkthroughs.
//   - Status is enum ibv_wc_status (Success .. TMRndvIncomplete, 0..23).
//     Status.String is byte-for-byte ibv_wc_status_str, "unknown" included;
//     Status.Name is the C enumerator name.
//   - Opcode is enum ibv_wc_opcode (Send .. Driver3). Opcode.IsRecv is the
//     bit test from verbs.h, Opcode.IsClassicRecv the precise one.
//   - Flags is enum ibv_wc_flags (GRH, WithImm, IPCSumOK, WithInv and the
//     tag-matching bits).
//   - WROpcode is enum ibv_wr_opcode (WRRDMAWrite .. WRAtomicWrite).
//     WROpcode.SendCompletion and WROpcode.RecvCompletion translate a WR
//     opcode into the WC opcode seen by the requester and by the responder;
//     WROpcode.HasImm and WROpcode.IsSend classify it.
//
// Rule IDs such as WC-04 refer to the verbs rules catalogue
// (spec/catalogue.md).
//
// # Two numbering traps
//
// WR and WC opcodes are unrelated enumerations (WC-07). The verbs ABI
// numbers posted operations in one order and completed operations in
// another: a posted send is 2 but its completion is 0, a posted RDMA write
// is 0 but its completion is 1, and several WR opcodes share one WC opcode
// (all three send kinds complete as Send). A plain conversion such as
// Opcode(wrOp) therefore compiles and gives a plausible-looking but wrong
// answer. This package keeps the two as distinct Go types and offers only
// the explicit mapping methods on WROpcode.
//
// The receive bit is wider than it looks (WC-06). Receive completions were
// numbered from 128 so that a consumer could test one bit instead of listing
// values, and Opcode.IsRecv keeps that test exactly. Later additions were
// numbered after the receive opcodes, so the tag-matching opcodes and the
// three driver opcodes carry the same bit although several of them are not
// receives at all (Driver1 reports a send-side WR). Code that means "did
// this completion consume a posted receive WR" should call
// Opcode.IsClassicRecv. The simulator only ever emits the classic opcodes,
// so for its own WCs the two agree; the difference matters to consumer code
// written against real devices.
//
// A related trap: on a WC whose status is not Success the opcode is
// undefined (WC-03). rxe leaves it 0, which is Send, so dispatching on the
// opcode of a flushed receive silently treats it as a send completion.
// Check Status first.
//
// # Golden data
//
// testdata/verbs44.golden is printed by internal/abigen/abigen.c from the
// installed libibverbs and holds, besides this package's enums, the
// ibv_event_type, ibv_qp_state, ibv_qp_type and ibv_access_flags values
// that other packages check against through internal/abigolden.
package wc
