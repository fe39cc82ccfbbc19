// Command capi is verbsim's drop-in libibverbs.so.1: built with
// -buildmode=c-shared by build.sh, it lets unmodified C programs linked
// against rdma-core's libibverbs run on the simulator
// (LD_LIBRARY_PATH=<dir> program). glue.c owns the C ABI, misc.c the
// exports that need no simulator, and engine.go drives package sim.
// docs/c-programs.md tells how to build and use it.
package main

func main() {}
