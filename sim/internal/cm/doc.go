// Package cm holds the wire format of the InfiniBand communication manager
// that verbsim's connection manager speaks: the management datagrams (MADs)
// of the IBTA CM chapter (REQ, MRA, REJ, REP, RTU, DREQ, DREP, SIDR_REQ,
// SIDR_REP) in their 256-byte layout, and the RDMA CM header that
// rdma_connect puts at the front of the private data of a REQ or SIDR_REQ
// (the IP addresses and port of the connection).
//
// This package is the engine's, not a public API: package sim sends and
// receives these messages on QP 1 of each port (the general services
// interface) and runs the protocol; the application sees package rdmacm.
// Decode accepts only well-formed messages of the attributes above and
// never panics (CM-32); fuzz_test.go holds it to that.
//
// The field offsets are those of the IBTA tables (106 to 120), as Linux's
// include/rdma/ibta_vol1_c12.h states them: an offset counts bytes from the
// start of the message data, after the 24-byte MAD header, and a field of
// fewer than eight bits starts at the most significant free bit.
package cm
