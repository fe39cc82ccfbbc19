// Package sim is the simulated RDMA fabric: adapters (Device), their
// contexts, protection domains, memory regions, address handles, and the
// transport engine that moves data between queue pairs. CQ, CompChannel,
// QP, SRQ and AsyncEvent are handles on the engine's objects (which live in
// sim/internal and are not a public API): each method is a verb or a view
// and takes the fabric's lock itself. docs/design.md explains how it is
// built.
//
// # Nil handles and bad input
//
// A method called on a nil handle never panics. This holds for every
// exported method of Fabric, Device, Context, PD, MR, MW, AH, XRCD, CQ,
// CompChannel, QP, SRQ and Fault (AsyncEvent is a value: its zero value
// names nothing and Ack returns EINVAL), of the engine objects behind the
// handles, and of the other pointer types of sim's packages (qp.Attr,
// wc.WC, trace.Log, verr.Error):
//
//   - a method that returns an error returns one that matches
//     syscall.EINVAL (errors.Is, or errors.As into a syscall.Errno), with
//     its other results zero. libibverbs mostly dereferences a NULL handle;
//     verbsim reports it as the EINVAL the kernel gives for a handle it
//     cannot find;
//   - a method that returns no error (an accessor such as Device.Name,
//     QP.Num, QP.PD or CQ.Destroyed, or a control call such as
//     Fabric.Tick) does nothing and returns the zero value of each result.
//     In particular Destroyed reports false and State reports RESET (0) for
//     a nil handle: there is no object to describe, so test for nil first.
//     The one exception is printing: String and Error render a nil
//     receiver as "<nil>", as fmt does.
//
// The same holds for bad arguments: a nil argument where an object, a
// context.Context, a lock or a writer is needed, values out of range, an
// object that has been destroyed, and an object of another fabric or of
// another device context are reported as an error carrying the errno
// libibverbs would set (EINVAL mostly), and a refused call changes
// nothing. (An SRQ of another PD of the same context is accepted, as the
// kernel accepts it; see docs/srq.md.) TestBadInput in this
// package checks every exported method against these inputs.
package sim
