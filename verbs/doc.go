// Package verbs is the vocabulary of the verbs API: the Go forms of the
// structs and enums of rdma-core 44's <infiniband/verbs.h> that an
// application passes to and gets back from the verbs (work requests, work
// completions, QP attributes, async event types), with the C numbers of
// every constant and pure helpers such as WROpcode.SendCompletion.
//
// It holds no engine code and imports only the standard library, so that
// every implementation of the verbs can share it: verbsim's simulator
// (package sim) and another implementation such as a cgo binding to a real
// libibverbs (package cverbs). Applications and the conformance suite
// import verbs, never a transport's packages.
//
// It also holds the interfaces an application programs against (Device,
// Context, PD, MR, MW, AH, CQ, CompChannel, QP, SRQ, AsyncEvent and the
// optional ExCQ, WRBuilder, MRReregisterer, XRCOpener, ...). verbsim
// implements them ((*sim.Device).Verbs); so can a binding to libibverbs. A
// program written against them runs on either: examples/echo is one, and
// its test runs it on verbsim.
//
// Constants keep their C values, checked against a golden table printed
// from the installed libibverbs (verbs/testdata/verbs44.golden). Rule IDs
// such as WC-04 refer to the rules catalogue (spec/catalogue.md).
//
// # C names
//
//	C                                  Go
//	enum ibv_qp_state   IBV_QPS_RTS     QPState     QPStateRTS
//	enum ibv_qp_type    IBV_QPT_RC      QPType      QPTypeRC
//	struct ibv_qp_attr                  QPAttr
//	enum ibv_qp_attr_mask IBV_QP_STATE  QPAttrMask  QPAttrState
//	struct ibv_qp_cap                   QPCap
//	struct ibv_ah_attr                  AHAttr
//	struct ibv_global_route             GlobalRoute
//	enum ibv_mtu        IBV_MTU_1024    MTU         MTU1024
//	enum ibv_mig_state  IBV_MIG_ARMED   MigState    MigArmed
//	enum ibv_access_flags IBV_ACCESS_REMOTE_WRITE  AccessFlags  AccessRemoteWrite
//	struct ibv_sge                      SGE
//	struct ibv_send_wr                  SendWR
//	struct ibv_recv_wr                  RecvWR
//	struct ibv_mw_bind_info             MWBindInfo
//	enum ibv_wr_opcode  IBV_WR_SEND     WROpcode    WRSend
//	enum ibv_send_flags IBV_SEND_SIGNALED  SendFlags  SendSignaled
//	enum ibv_qp_create_send_ops_flags IBV_QP_EX_WITH_SEND  QPSendOps  QPExWithSend
//	struct ibv_wc                       WC
//	enum ibv_wc_status  IBV_WC_SUCCESS  WCStatus    WCSuccess
//	enum ibv_wc_opcode  IBV_WC_RECV     WCOpcode    WCRecv
//	enum ibv_wc_flags   IBV_WC_WITH_IMM WCFlags     WCWithImm
//	enum ibv_wc_flags_ex IBV_WC_EX_WITH_QP_NUM  WCExFlags  WCExQPNum
//	enum ibv_cq_init_attr_mask          CQInitAttrMask
//	enum ibv_create_cq_attr_flags       CQCreateFlags
//	struct ibv_srq_attr                 SRQAttr
//	enum ibv_srq_attr_mask IBV_SRQ_LIMIT  SRQAttrMask  SRQLimit
//	enum ibv_event_type IBV_EVENT_CQ_ERR  EventType  EventCQErr
//	struct ibv_device_attr              DeviceAttr
//	struct ibv_device_attr_ex           DeviceAttrEx
//	struct ibv_port_attr                PortAttr
//	enum ibv_port_state IBV_PORT_ACTIVE PortState   PortActive
//	union ibv_gid                       GID
//	struct ibv_gid_entry                GIDEntry
//	enum ibv_mw_type    IBV_MW_TYPE_1   MWType      MWType1
//	enum ibv_rereg_mr_flags             ReregFlags
//	struct ibv_xrcd_init_attr           XRCDInitAttr
//	enum ibv_srq_type   IBV_SRQT_XRC    SRQType     SRQTXRC
//	struct ibv_device, ibv_context, ibv_pd, ibv_mr, ibv_mw, ibv_ah,
//	ibv_cq, ibv_comp_channel, ibv_qp, ibv_srq, ibv_xrcd
//	                                    Device, Context, PD, MR, MW, AH,
//	                                    CQ, CompChannel, QP, SRQ, XRCD
//
// # Names
//
// A completion's status and opcode, a work request's opcode and an async
// event's type print as their C enumerators, everywhere: String returns
// "IBV_WC_RETRY_EXC_ERR", "IBV_WC_SEND", "IBV_WR_RDMA_WRITE",
// "IBV_EVENT_CQ_ERR", and the trace, the timelines, the scenarios,
// WC.String and verbsim's messages print those, so what a test prints is
// what verbs.h and the man pages name. A value outside its enum prints
// with its number: "IBV_WC_STATUS(24)". The texts of libibverbs' own string
// functions are Str: WCStatus.Str is ibv_wc_status_str ("transport retry
// counter exceeded", "unknown" past the enum), EventType.Str is
// ibv_event_type_str. Name is the enumerator alone, "" outside the enum.
// QP states, port states, transports and MTUs print the short forms
// ibv_devinfo and the kernel print ("RTS", "PORT_ACTIVE", "RC", "1024"),
// with Name for the enumerator.
//
// # Two numbering traps
//
// WR and WC opcodes are unrelated enumerations (WC-07): a posted send is
// WRSend (2) but completes as WCSend (0), a posted RDMA write is
// WRRDMAWrite (0) but completes as WCRDMAWrite (1). A conversion such as
// WCOpcode(wrOp) compiles and is wrong; use WROpcode.SendCompletion and
// WROpcode.RecvCompletion.
//
// The receive bit is wider than it looks (WC-06): WCOpcode.IsRecv is the
// verbs.h bit test, which is also true for the tag-matching and driver
// opcodes; WCOpcode.IsClassicRecv asks whether a posted receive WR was
// consumed. On a WC whose status is not WCSuccess the opcode is undefined
// (WC-03): check Status first.
package verbs
