// Package nicd is the per-host NIC daemon (`verbsim nicd`): one simulated
// fabric, with one engine and one virtual clock, that every C program of a
// user on the host reaches through verbsim's C-only libibverbs.so.1, the
// way a provider library reaches its adapter (docs/daemon.md).
//
// A program's library connects to the fabric's socket (Dir) with
// AF_UNIX SOCK_SEQPACKET, says hello, and then sends the verbs as
// requests (capi/nicd/nicd.h, proto.go): the structs of libibverbs' ABI,
// read through internal/cabi. Every object it creates is held by its
// session, which only it can name; when the program's first connection
// closes (it exits, is killed or crashes), the daemon destroys what it
// left as the kernel does when a process's verbs descriptor closes: its QPs
// go away, so peers' requests meet nobody and retry until
// RETRY_EXC_ERR.
//
// The program's registered memory stays where it is: the daemon reads
// and writes it with process_vm_readv and process_vm_writev (mem.go),
// so a bad address is EFAULT at registration and never a crash, whatever
// the program does to its memory afterwards.
//
// Completion channels and async events are socket pairs whose one end is
// the program's descriptor: it polls readable exactly while events wait,
// and polls hung up when the daemon is gone, so no wait outlives it.
package nicd
