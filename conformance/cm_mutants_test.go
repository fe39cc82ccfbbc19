package conformance_test

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/verbs"
)

// cmMutant is a mutant of the connection manager.
func cmMutant(name string, rules []string, h cmHooks) mutant {
	return mutant{name: name, rules: rules, h: hooks{cm: &h}}
}

// cmMutants are the mutants of the CM and MCAST families.
func cmMutants() []mutant {
	return []mutant{
		cmMutant("rdma_create_id makes every ID RC", []string{"CM-01"}, cmHooks{
			createID: func(cm rdmacm.CM, ch rdmacm.EventChannel, ctx any, ps rdmacm.PortSpace) (rdmacm.ID, error) {
				return cm.CreateID(ch, ctx, rdmacm.PSTCP)
			}}),
		cmMutant("a non-blocking read of an idle channel blocks", []string{"CM-02"}, cmHooks{
			tryGet: func(ch rdmacm.EventChannel) (rdmacm.Event, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
				defer cancel()
				ev, err := ch.GetEvent(ctx)
				if err != nil {
					return nil, syscall.EINTR
				}
				return ev, nil
			}}),
		cmMutant("rdma_destroy_id does not wait for acks", []string{"CM-03"}, cmHooks{
			destroy: func(id rdmacm.ID, ctx context.Context) error {
				err := id.Destroy(ctx)
				if err != nil && errors.Is(err, syscall.EINTR) {
					return nil
				}
				return err
			}}),
		cmMutant("a synchronous connect hides a rejection", []string{"CM-04"}, cmHooks{
			call: swallow("rdma_connect", syscall.ECONNREFUSED)}),
		cmMutant("the route names no source GID", []string{"CM-05"}, cmHooks{
			route: func(id rdmacm.ID) rdmacm.Route {
				r := id.Route()
				r.SGID = verbs.GID{}
				return r
			}}),
		cmMutant("rdma_bind_addr lets two IDs share an address", []string{"CM-06"}, cmHooks{
			call: swallow("rdma_bind_addr", syscall.EADDRINUSE)}),
		cmMutant("a second rdma_listen succeeds", []string{"CM-07"}, cmHooks{
			call: swallow("rdma_listen", syscall.EINVAL)}),
		cmMutant("the backlog is ignored", []string{"CM-08"}, cmHooks{
			listen: func(id rdmacm.ID, backlog int) error { return id.Listen(0) }}),
		cmMutant("an address nobody has resolves", []string{"CM-09"}, cmHooks{
			event: func(e *mEvent) bool {
				if e.typ == rdmacm.EventAddrError {
					e.typ, e.status = rdmacm.EventAddrResolved, 0
				}
				return false
			}}),
		cmMutant("rdma_resolve_route before rdma_resolve_addr succeeds", []string{"CM-10"}, cmHooks{
			call: swallow("rdma_resolve_route", syscall.EINVAL)}),
		cmMutant("rdma_getaddrinfo ignores RAI_PASSIVE", []string{"CM-11"}, cmHooks{
			getAddr: func(cm rdmacm.CM, node, service string, hints *rdmacm.AddrInfo) ([]rdmacm.AddrInfo, error) {
				if hints != nil {
					h := *hints
					h.Flags &^= rdmacm.AIPassive
					hints = &h
				}
				return cm.GetAddrInfo(node, service, hints)
			}}),
		cmMutant("rdma_create_qp leaves the QP in RESET", []string{"CM-12"}, cmHooks{
			createQP: func(id rdmacm.ID, pd verbs.PD, attr *verbs.QPInitAttr) error {
				if err := id.CreateQP(pd, attr); err != nil {
					return err
				}
				return id.QP().Modify(&verbs.QPAttr{QPState: verbs.QPStateReset}, verbs.QPAttrState)
			}}),
		cmMutant("rdma_connect cuts private data to 56 bytes", []string{"CM-13"}, cmHooks{
			connect: func(id rdmacm.ID, p *rdmacm.ConnParam) error {
				if p != nil && len(p.PrivateData) > 56 {
					q := *p
					q.PrivateData = q.PrivateData[:56]
					p = &q
				}
				return id.Connect(p)
			}}),
		cmMutant("CONNECT_REQUEST reports the requester's depths unturned", []string{"CM-14"}, cmHooks{
			event: func(e *mEvent) bool {
				if e.typ == rdmacm.EventConnectRequest {
					e.conn.ResponderResources, e.conn.InitiatorDepth = e.conn.InitiatorDepth, e.conn.ResponderResources
				}
				return false
			}}),
		cmMutant("a REQ nobody listens for is rejected as consumer-defined", []string{"CM-15"}, cmHooks{
			event: func(e *mEvent) bool {
				if e.typ == rdmacm.EventRejected {
					e.status = int(rdmacm.RejConsumerDefined)
				}
				return false
			}}),
		cmMutant("rdma_accept cuts private data to 196 bytes", []string{"CM-16"}, cmHooks{
			accept: func(id rdmacm.ID, p *rdmacm.ConnParam) error {
				if p != nil && len(p.PrivateData) > 196 {
					q := *p
					q.PrivateData = q.PrivateData[:196]
					p = &q
				}
				return id.Accept(p)
			}}),
		cmMutant("rdma_establish is refused", []string{"CM-17"}, cmHooks{
			call: func(verb string, id rdmacm.ID, err error) error {
				if verb == "rdma_establish" && err == nil {
					return syscall.EINVAL
				}
				return err
			}}),
		cmMutant("rdma_notify on an established ID succeeds", []string{"CM-18"}, cmHooks{
			call: swallow("rdma_notify", syscall.EISCONN)}),
		cmMutant("rdma_reject drops its private data", []string{"CM-19"}, cmHooks{
			reject: func(id rdmacm.ID, data []byte) error {
				if len(data) > 148 {
					return id.Reject(data)
				}
				return id.Reject(nil)
			}}),
		cmMutant("an unanswered REQ reports status 0", []string{"CM-20"}, cmHooks{
			event: func(e *mEvent) bool {
				if e.typ == rdmacm.EventUnreachable {
					e.status = 0
				}
				return false
			}}),
		cmMutant("TIMEWAIT_EXIT is never reported", []string{"CM-21"}, cmHooks{
			event: func(e *mEvent) bool { return e.typ == rdmacm.EventTimewaitExit }}),
		cmMutant("rdma_destroy_id destroys the QP itself", []string{"CM-22"}, cmHooks{
			destroy: func(id rdmacm.ID, ctx context.Context) error {
				if id.QP() != nil {
					_ = id.DestroyQP()
				}
				return id.Destroy(ctx)
			}}),
		cmMutant("a DREQ nobody answers reports status 0", []string{"CM-23"}, cmHooks{
			event: func(e *mEvent) bool {
				if e.typ == rdmacm.EventDisconnected {
					e.status = 0
				}
				return false
			}}),
		cmMutant("DEVICE_REMOVAL is never reported", []string{"CM-24"}, cmHooks{
			event: func(e *mEvent) bool { return e.typ == rdmacm.EventDeviceRemoval }}),
		cmMutant("a UD answer reports the wrong Q_Key", []string{"CM-25"}, cmHooks{
			event: func(e *mEvent) bool {
				if e.typ == rdmacm.EventEstablished && e.ud.QPNum != 0 {
					e.ud.QKey++
				}
				return false
			}}),
		cmMutant("MULTICAST_JOIN loses the join's context", []string{"CM-26"}, cmHooks{
			event: func(e *mEvent) bool {
				if e.typ == rdmacm.EventMulticastJoin {
					e.mcCtx = nil
				}
				return false
			}}),
		cmMutant("rdma_migrate_id moves nothing", []string{"CM-27"}, cmHooks{
			migrate: func(id rdmacm.ID, ch rdmacm.EventChannel) error { return nil }}),
		cmMutant("rdma_set_option ignores the option's size", []string{"CM-28"}, cmHooks{
			setOption: func(id rdmacm.ID, level rdmacm.OptionLevel, name rdmacm.OptionName, v []byte) error {
				if len(v) == 1 && name == rdmacm.OptionReuseAddr {
					return nil
				}
				return id.SetOption(level, name, v)
			}}),
		cmMutant("rdma_init_qp_attr names no attribute", []string{"CM-29"}, cmHooks{
			initQPAttr: func(id rdmacm.ID, st verbs.QPState) (verbs.QPAttr, verbs.QPAttrMask, error) {
				a, _, err := id.InitQPAttr(st)
				return a, verbs.QPAttrState, err
			}}),
		cmMutant("a passive rdma_create_ep forgets the QP attributes", []string{"CM-30"}, cmHooks{
			createEP: func(cm rdmacm.CM, res *rdmacm.AddrInfo, pd verbs.PD, attr *verbs.QPInitAttr) (rdmacm.ID, error) {
				if res != nil && res.Flags&rdmacm.AIPassive != 0 {
					attr = nil
				}
				return cm.CreateEP(res, pd, attr)
			}}),
		cmMutant("DISCONNECTED is reported as REJECTED", []string{"CM-32"}, cmHooks{
			event: func(e *mEvent) bool {
				if e.typ == rdmacm.EventDisconnected && e.status == 0 {
					e.typ = rdmacm.EventRejected
				}
				return false
			}}),
		cmMutant("events report only the sender's private data", []string{"CM-33"}, cmHooks{
			event: func(e *mEvent) bool {
				e.conn.PrivateData = trimZeros(e.conn.PrivateData)
				e.ud.PrivateData = trimZeros(e.ud.PrivateData)
				return false
			}}),
		cmMutant("rdma_accept ignores the RNR retry count", []string{"CM-34"}, cmHooks{
			accept: func(id rdmacm.ID, p *rdmacm.ConnParam) error {
				if p != nil {
					q := *p
					q.RNRRetryCount = 7
					p = &q
				}
				return id.Accept(p)
			}}),
		cmMutant("ibv_attach_mcast takes any GID", []string{"MCAST-01"}, cmHooks{
			attach: func(a verbs.MulticastAttacher, gid verbs.GID, lid uint16, on bool) error {
				gid[0] = 0xff
				if on {
					return a.AttachMcast(gid, 0xc001)
				}
				return a.DetachMcast(gid, 0xc001)
			}}),
		cmMutant("ibv_detach_mcast of a QP not attached succeeds", []string{"MCAST-02"}, cmHooks{
			attach: func(a verbs.MulticastAttacher, gid verbs.GID, lid uint16, on bool) error {
				if on {
					return a.AttachMcast(gid, lid)
				}
				_ = a.DetachMcast(gid, lid)
				return nil
			}}),
		cmMutant("ibv_detach_mcast detaches nothing", []string{"MCAST-03"}, cmHooks{
			attach: func(a verbs.MulticastAttacher, gid verbs.GID, lid uint16, on bool) error {
				if on {
					return a.AttachMcast(gid, lid)
				}
				return nil
			}}),
	}
}

func trimZeros(b []byte) []byte {
	n := len(b)
	for n > 0 && b[n-1] == 0 {
		n--
	}
	return b[:n]
}
