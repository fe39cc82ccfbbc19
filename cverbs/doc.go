// Package cverbs is a Go binding, through cgo, to whatever libibverbs the
// process loads: rdma-core's with a real adapter or Linux soft-RoCE (rxe),
// or verbsim's drop-in libibverbs.so.1 (capi/). Its objects implement the
// public verbs interfaces of package verbs, so a Go program written against
// them (examples/echo, the conformance suite) runs unchanged on the
// simulator in process, on real hardware, or on the simulator seen through
// the C ABI.
//
// Devices lists the adapters (ibv_get_device_list) and Open finds one by
// name; verbs.Device.Open then opens it (ibv_open_device). Every verb is one
// call of the C verb, with these translations:
//
//   - Errors are the errno the C verb returned or set, wrapped with the
//     verb's name: errors.Is(err, syscall.EINVAL).
//   - Memory: PD.RegMR registers the caller's Go slice in place, pinned with
//     runtime.Pinner until the MR is deregistered, so the adapter reads and
//     writes the slice itself as verbs requires (cgo allows C to keep a
//     pointer to pinned Go memory). The slice must not be resliced away
//     from: keep it until Dereg.
//   - Work requests and completions are copied to and from C memory owned
//     by each QP, SRQ and CQ; nothing C keeps points into Go memory except
//     the pinned MR buffers.
//   - Blocking verbs (ibv_get_cq_event, ibv_get_async_event) run on
//     descriptors set to O_NONBLOCK and wait in poll(2) together with an
//     eventfd that the context.Context's end signals, so they honour
//     cancellation; the error then matches both syscall.EINTR and ctx.Err().
//   - The checks libibverbs leaves to the caller are made in Go before C
//     sees anything: a destroyed object, a second destroy, an object of
//     another implementation, or an acknowledgement of more events than
//     were read is EINVAL, where C would touch freed memory or count wrong.
//     Destroys of CQs, QPs and SRQs wait, bounded by their context.Context,
//     for the acknowledgement of the events read for them, as libibverbs'
//     destroys do without a bound.
//
// The binding offers every optional verb of package verbs (extended CQs,
// the work request builder, XRC, ibv_rereg_mr, the extended queries,
// ibv_advise_mr, device memory). Of the simulator's test capabilities it
// offers only those that verbsim's test-mode drop-in library
// (capi/build.sh --test-hooks) backs with its test hooks, and only when the
// process loaded that library (SimHooks):
// then CQs also have Push, Ref and Unref, MRs Ref and Unref, and
// WithLimits makes devices with small limits; with the hooks of its second
// version node (SimControls) QPs also have InjectFatal, ForceStatus and
// Outstanding, SRQs Take, Len and InjectError, channels Len, CQs of
// ibv_create_cq the poll iterator, and SetPortState and SetFaults act on
// a device. With any other libibverbs
// the objects have none of these methods, so the conformance suite runs
// the cases a real device can run (see docs/c-programs.md, "The Go
// binding"). A Go program using it against verbsim's drop-in library holds
// two Go runtimes in one process, which Go does not support
// (golang/go#18976); docs/c-programs.md says what was measured.
//
// RDMACM is the binding to librdmacm: the connection manager as package
// rdmacm's interfaces, so that a program written against them
// (examples/cmecho) runs on an adapter's CM as on the simulator's. Its
// event channels wait in poll(2) like the completion channels; Destroy of
// an ID waits for the acknowledgement of the events read, bounded by its
// context.Context. The verbs objects librdmacm makes (its device contexts,
// the default PD, the CQs and channels of rdma_create_qp) are ordinary
// objects of the binding that librdmacm owns: closing or destroying one
// directly is EBUSY, and a QP of rdma_create_qp is destroyed with the ID's
// DestroyQP. Synchronous IDs wait inside C, where no context reaches. On a
// host without an RDMA CM device every call fails with ENODEV.
//
// Without cgo, or on a system without libibverbs, the package has no
// functions: the cgo files need the libibverbs and librdmacm headers and
// libraries (Debian: libibverbs-dev, librdmacm-dev).
package cverbs
