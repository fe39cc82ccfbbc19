// Package sim is the simulated RDMA fabric: adapters (Device), their
// contexts, protection domains, memory regions, address handles, and the
// transport engine that moves data between queue pairs. CQ, CompChannel,
// QP, SRQ and AsyncEvent are handles on the engine's objects (which live in
// sim/internal and are not a public API): each method is a verb or a view,
// and every one is safe to call from any goroutine. docs/design.md explains
// how it is built.
//
// A verbs programmer starts from the table below: it names the Go method of
// every ibv_* call the simulator implements. The Fabric's controls (time,
// scheduling, faults, the trace) come after it; then the interfaces of
// package verbs, which code that must also run on hardware programs
// against; then package simtest, the rig for unit tests.
//
// # From verbs to Go
//
// Each verb is a method of the Go type that stands for its first argument
// (ibv_post_send(qp, ...) is QP.PostSend). A C out-parameter becomes a
// result, a C errno an error that matches it (errors.Is(err,
// syscall.EINVAL)), a list a slice, and a blocking call takes a
// context.Context. The members of the C objects are accessor methods
// named after them: ibv_qp.qp_num is QP.Num, ibv_cq.cq_context
// CQ.CQContext, ibv_mr.lkey MR.LKey. Attributes, work requests, work
// completions and enums are the types of package verbs, which sim
// re-exports under its own names where a signature of sim needs them
// (sim.AHAttr is verbs.AHAttr, sim.QPInitAttr is sim's own). A verb
// without a row is not simulated.
//
//	C verb                                Go
//	ibv_get_device_list                   Fabric.Devices, Fabric.Device
//	ibv_get_device_name                   Device.Name
//	ibv_get_device_guid                   Device.GUID
//	ibv_open_device                       Device.Open
//	ibv_close_device                      Context.Close
//	ibv_query_device                      Context.QueryDevice, Device.Attr
//	ibv_query_device_ex                   Context.QueryDeviceEx
//	ibv_query_port                        Context.QueryPort
//	ibv_query_gid                         Context.QueryGID
//	ibv_query_gid_ex                      Context.QueryGIDEx
//	ibv_query_gid_table                   Context.QueryGIDTable
//	ibv_query_pkey                        Context.QueryPKey
//	ibv_get_async_event                   Context.GetAsyncEvent, Context.TryGetAsyncEvent
//	ibv_ack_async_event                   AsyncEvent.Ack
//	ibv_alloc_pd                          Context.AllocPD
//	ibv_dealloc_pd                        PD.Dealloc
//	ibv_reg_mr                            PD.RegMR
//	ibv_reg_mr_iova                       PD.RegMRIOVA
//	ibv_rereg_mr                          MR.Rereg, MR.ReregIOVA
//	ibv_dereg_mr                          MR.Dereg
//	ibv_advise_mr                         PD.AdviseMR
//	ibv_alloc_mw                          PD.AllocMW
//	ibv_dealloc_mw                        MW.Dealloc
//	ibv_bind_mw                           QP.BindMW
//	ibv_create_ah                         PD.CreateAH
//	ibv_destroy_ah                        AH.Destroy
//	ibv_open_xrcd                         Context.OpenXRCD
//	ibv_close_xrcd                        XRCD.Close
//	ibv_alloc_dm                          Context.AllocDM
//	ibv_free_dm                           DM.Free
//	ibv_memcpy_to_dm                      DM.MemcpyTo
//	ibv_memcpy_from_dm                    DM.MemcpyFrom
//	ibv_reg_dm_mr                         PD.RegDMMR
//	ibv_create_comp_channel               Context.CreateCompChannel
//	ibv_destroy_comp_channel              CompChannel.Destroy
//	ibv_create_cq                         Context.CreateCQ
//	ibv_create_cq_ex                      Context.CreateCQEx
//	ibv_resize_cq                         CQ.Resize
//	ibv_destroy_cq                        CQ.Destroy, CQ.DestroyContext
//	ibv_poll_cq                           CQ.Poll
//	ibv_req_notify_cq                     CQ.ReqNotify
//	ibv_get_cq_event                      CompChannel.GetEvent, CompChannel.TryGetEvent
//	ibv_ack_cq_events                     CQ.AckEvents
//	ibv_start_poll                        CQ.StartPoll
//	ibv_next_poll                         CQ.NextPoll
//	ibv_end_poll                          CQ.EndPoll
//	ibv_cq_ex.wr_id, .status              CQ.WRID, CQ.Status
//	ibv_wc_read_opcode                    CQ.ReadOpcode
//	ibv_wc_read_vendor_err                CQ.ReadVendorErr
//	ibv_wc_read_wc_flags                  CQ.ReadWCFlags
//	ibv_wc_read_byte_len                  CQ.ReadByteLen
//	ibv_wc_read_imm_data                  CQ.ReadImmData
//	ibv_wc_read_invalidated_rkey          CQ.ReadInvalidatedRkey
//	ibv_wc_read_qp_num                    CQ.ReadQPNum
//	ibv_wc_read_src_qp                    CQ.ReadSrcQP
//	ibv_wc_read_slid                      CQ.ReadSLID
//	ibv_wc_read_sl                        CQ.ReadSL
//	ibv_wc_read_dlid_path_bits            CQ.ReadDLIDPathBits
//	ibv_wc_read_completion_ts             CQ.ReadCompletionTS
//	ibv_wc_read_completion_wallclock_ns   CQ.ReadCompletionWallclockNS
//	ibv_create_qp                         PD.CreateQP
//	ibv_create_qp_ex                      PD.CreateQP, QPInitAttr.CompMask, QPInitAttr.SendOpsFlags, XRCD.CreateQP
//	ibv_qp_to_qp_ex                       QP.SendOpsFlags
//	ibv_modify_qp                         QP.Modify
//	ibv_query_qp                          QP.Query
//	ibv_destroy_qp                        QP.Destroy, QP.DestroyContext
//	ibv_post_send                         QP.PostSend
//	ibv_post_recv                         QP.PostRecv
//	ibv_wr_start                          QP.WRStart
//	ibv_wr_complete                       QP.WRComplete
//	ibv_wr_abort                          QP.WRAbort
//	ibv_qp_ex.wr_id, .wr_flags            QP.SetWRID, QP.SetWRFlags
//	ibv_wr_send                           QP.WRSend
//	ibv_wr_send_imm                       QP.WRSendImm
//	ibv_wr_send_inv                       QP.WRSendInv
//	ibv_wr_rdma_write                     QP.WRRDMAWrite
//	ibv_wr_rdma_write_imm                 QP.WRRDMAWriteImm
//	ibv_wr_rdma_read                      QP.WRRDMARead
//	ibv_wr_atomic_cmp_swp                 QP.WRAtomicCmpSwp
//	ibv_wr_atomic_fetch_add               QP.WRAtomicFetchAdd
//	ibv_wr_atomic_write                   QP.WRAtomicWrite
//	ibv_wr_bind_mw                        QP.WRBindMW
//	ibv_wr_local_inv                      QP.WRLocalInv
//	ibv_wr_set_sge                        QP.WRSetSGE
//	ibv_wr_set_sge_list                   QP.WRSetSGEList
//	ibv_wr_set_inline_data                QP.WRSetInlineData
//	ibv_wr_set_inline_data_list           QP.WRSetInlineDataList
//	ibv_wr_set_ud_addr                    QP.WRSetUDAddr
//	ibv_wr_set_xrc_srqn                   QP.WRSetXRCSRQN
//	ibv_create_srq                        PD.CreateSRQ
//	ibv_create_srq_ex                     Context.CreateSRQEx
//	ibv_modify_srq                        SRQ.Modify
//	ibv_query_srq                         SRQ.Query
//	ibv_get_srq_num                       SRQ.GetSRQNum
//	ibv_post_srq_recv                     SRQ.PostRecv
//	ibv_destroy_srq                       SRQ.Destroy, SRQ.DestroyContext
//
// Destroy waits without a deadline for what the C verb waits for (the
// acknowledgement of events, say); DestroyContext bounds the wait with a
// context.Context. Connecting a pair, which a C program does with several
// ibv_modify_qp calls and an out-of-band exchange, is Connect (ReadyUD for
// UD).
//
// # The simulator's controls
//
// Nothing of the following exists in libibverbs: it is how a test drives
// the simulated fabric. docs/time.md explains modes and virtual time,
// docs/transport.md (its section Faults) the faults.
//
//	Control                               Go
//	who drives the engine                 Config.Mode, Auto, Manual, Background, Fabric.Mode
//	end the fabric and its clock          Fabric.Close
//	run what is ready (Manual)            Fabric.Step, Fabric.Stabilize
//	move virtual time                     Fabric.Tick, Fabric.AdvanceToNext, Fabric.RunUntilIdle, Fabric.Now
//	bound the blocking verbs              Config.WaitBound, ErrWaitBound
//	see what is pending                   Fabric.Pending, Fabric.Ready, Fabric.Future
//	pick the next event                   Config.Schedule, Config.Seed, Config.Chooser, Chooser
//	fabric-wide packet faults             Config.Faults, Fabric.SetFaults, Faults
//	targeted packet faults                Fabric.InjectPacketFault, PacketFault, Fault.Hits, Fault.Remove
//	which packets a fault aims at         FromQP, ToQP, OfKind, All
//	force a completion's status           Fabric.ForceStatus
//	fatal QP (IBV_EVENT_QP_FATAL)         Fabric.InjectFatal
//	SRQ error (IBV_EVENT_SRQ_ERR)         Fabric.InjectSRQError, SRQ.InjectError
//	port down and up                      Device.SetPortState
//	feed a CQ without a QP                CQ.Push
//	take an SRQ's WR without traffic      SRQ.Take
//	hold an object as a QP or MW would    CQ.Ref, CQ.Unref, MR.Ref, MR.Unref
//	the trace                             Config.Trace, Fabric.TraceRecords, Fabric.WriteTrace
//	counters                              Fabric.Stats, QP.Stats, Context.AsyncEventCounts, Context.AsyncEventsRaised
//	snapshots                             QP.Outstanding, CQ.Snapshot, CQ.Armed, CompChannel.Pending, Context.PendingAsyncEvents
//	readings of unsettled rules           Config.Profile, Fabric.Profile, DefaultProfile, RXEProfile, Profiles
//
// In the default Auto mode the engine runs whatever is ready after each
// verb, and the clock moves through Tick, AdvanceToNext and RunUntilIdle,
// and inside a blocking verb (CompChannel.GetEvent, Context.GetAsyncEvent)
// that nothing ready can satisfy: it advances to the next timer or delayed
// packet until its event comes or nothing is pending, so a retransmission
// after an ACK timeout happens inside it. Posting and polling never move
// the clock. A blocking verb against a peer that retries for ever
// (rnr_retry = 7, no receive ever posted) steps through time until its
// context ends; Config.WaitBound bounds it in virtual time. Background
// mode moves the clock with the wall clock (or with the fake clock of a
// testing/synctest bubble).
// Manual mode runs nothing until Step or Stabilize, and a Chooser then
// decides the order of ready events, which is how a schedule explorer
// drives the engine; no schedule delivers a packet before an earlier one
// of its path (XFER-32). The examples of Fabric.SetFaults, Fabric.ForceStatus,
// Fabric.InjectFatal, Fabric.InjectPacketFault and Chooser show each.
//
// # The verbs interfaces
//
// Package verbs declares the interfaces an application programs against
// (verbs.Device, verbs.Context, verbs.PD, verbs.QP, verbs.CQ, ...), so
// that the same code runs on this simulator in tests and on a binding to
// a real libibverbs in production. Device.Verbs is the entry point: it
// returns the adapter as a verbs.Device, and everything opened from it is
// a verbs object backed by sim's handles (Context.Verbs, VerbsQP, VerbsCQ
// and the other Verbs* functions convert a handle you already hold). A
// test that built its objects through the interfaces gets sim's handle
// back with QPOf, CQOf, PDOf, MROf, SRQOf, ChannelOf, ContextOf or
// DeviceOf, and hands it to the controls above (InjectPacketFault,
// ForceStatus, Connect). The example of Device.Verbs shows the round
// trip; examples/echo is an application written that way.
//
// # Tests: package simtest
//
// Package simtest builds on sim for unit tests: a fabric bound to a
// *testing.T (closed at cleanup, with a goroutine-leak check and the last
// trace records logged on failure), connected RC, UC and UD pairs with
// CQs, a channel, MRs and posted receives in one call, and waits bounded
// in virtual time that move the clock when nothing else can happen.
// simtest.InBubble runs a test in Background mode inside a testing/synctest
// bubble, where timers fire on their own at exact virtual instants and no
// wall time passes.
//
// # Nil handles and bad input
//
// A method called on a nil handle never panics. This holds for every
// exported method of Fabric, Device, Context, PD, MR, MW, AH, XRCD, CQ,
// CompChannel, QP, SRQ and Fault (AsyncEvent is a value: its zero value
// names nothing and Ack returns EINVAL), of the engine objects behind the
// handles, and of the other pointer types of sim's packages and of
// package verbs (verbs.QPAttr, verbs.WC, trace.Log, verr.Error):
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
