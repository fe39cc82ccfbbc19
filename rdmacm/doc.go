// Package rdmacm is the vocabulary of the RDMA connection manager
// (librdmacm, <rdma/rdma_cma.h>): the Go forms of its enums and structs and
// the interfaces an application programs against to make connections by
// IP address the way most RDMA software does (rping, perftest -R,
// libfabric's verbs provider, UCX, SPDK).
//
// It holds no engine code. verbsim's simulator implements the interfaces
// ((*sim.Fabric).RDMACM); package cverbs implements them over the real
// librdmacm, so one application runs on either. Package verbs holds the
// verbs vocabulary the connection manager hands out (contexts, PDs, QPs).
// Constants keep their C values, checked against a golden table printed
// from the installed librdmacm (rdmacm/testdata/rdmacm44.golden). Rule IDs
// such as CM-13 refer to the rules catalogue (spec/catalogue.md, section
// CM); docs/rdma_cm.md is the user's guide.
//
// # C names
//
//	C                                     Go
//	rdma_create_event_channel             CM.CreateEventChannel
//	rdma_destroy_event_channel            EventChannel.Destroy
//	rdma_get_cm_event                     EventChannel.GetEvent, EventChannel.TryGetEvent
//	rdma_ack_cm_event                     Event.Ack
//	rdma_event_str                        EventType.Str
//	rdma_create_id                        CM.CreateID
//	rdma_create_ep                        CM.CreateEP
//	rdma_getaddrinfo                      CM.GetAddrInfo
//	rdma_get_devices                      CM.Devices
//	rdma_destroy_id, rdma_destroy_ep      ID.Destroy, ID.DestroyEP
//	rdma_bind_addr                        ID.BindAddr
//	rdma_resolve_addr                     ID.ResolveAddr
//	rdma_resolve_route                    ID.ResolveRoute
//	rdma_listen                           ID.Listen
//	rdma_get_request                      ID.GetRequest
//	rdma_connect                          ID.Connect
//	rdma_accept                           ID.Accept
//	rdma_reject                           ID.Reject
//	rdma_establish                        ID.Establish
//	rdma_disconnect                       ID.Disconnect
//	rdma_notify                           ID.Notify
//	rdma_migrate_id                       ID.Migrate
//	rdma_set_option                       ID.SetOption
//	rdma_init_qp_attr                     ID.InitQPAttr
//	rdma_create_qp, rdma_destroy_qp       ID.CreateQP, ID.DestroyQP
//	rdma_create_srq, rdma_destroy_srq     ID.CreateSRQ, ID.DestroySRQ
//	rdma_join_multicast(_ex)              ID.JoinMulticast, ID.JoinMulticastEx
//	rdma_leave_multicast                  ID.LeaveMulticast
//	rdma_get_local_addr, rdma_get_src_port  ID.LocalAddr
//	rdma_get_peer_addr, rdma_get_dst_port   ID.PeerAddr
//	struct rdma_cm_id                     ID (its members are accessor methods)
//	struct rdma_cm_event                  Event
//	struct rdma_conn_param                ConnParam
//	struct rdma_ud_param                  UDParam
//	struct rdma_addrinfo                  AddrInfo
//	enum rdma_cm_event_type               EventType
//	enum rdma_port_space                  PortSpace
//	enum rdma_cm_mc_join_flags            JoinFlags
//
// Addresses are netip.AddrPort values (struct sockaddr_in and
// sockaddr_in6); AF_IB addresses (struct sockaddr_ib) are not offered.
// Errors carry the errno librdmacm sets (errors.Is(err, syscall.EINVAL));
// an asynchronous failure is an event whose Status is a negative errno or
// an InfiniBand CM reason (RejectReason, SIDRStatus), as in C.
package rdmacm
