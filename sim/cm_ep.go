package sim

import (
	"context"
	"syscall"
	"time"

	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// The synchronous helpers of librdmacm: rdma_create_ep, rdma_get_request
// and rdma_destroy_ep (CM-30).

// CreateEP implements rdmacm.CM: rdma_create_ep (CM-30). The ID is
// synchronous; an active one is resolved to res.Dst (2000 ms each for the
// address and the route) and, with attr, given a QP from pd (nil: the
// default PD); a passive one (AIPassive) is bound to res.Src and keeps pd
// and attr for the IDs GetRequest returns.
func (m *CM) CreateEP(res *rdmacm.AddrInfo, pd verbs.PD, attr *verbs.QPInitAttr) (rdmacm.ID, error) {
	const verb = "rdma_create_ep"
	if res == nil {
		return nil, verr.New(verb, syscall.EINVAL, "nil rdma_addrinfo")
	}
	typ := res.QPType
	if typ == 0 {
		typ = res.PortSpace.QPType()
	}
	id, err := m.createID(verb, nil, nil, res.PortSpace, typ)
	if err != nil {
		return nil, err
	}
	if err := id.setupEP(res, pd, attr); err != nil {
		_ = id.DestroyEP(context.Background())
		return nil, err
	}
	return id, nil
}

func (id *CMID) setupEP(res *rdmacm.AddrInfo, pd verbs.PD, attr *verbs.QPInitAttr) error {
	const verb = "rdma_create_ep"
	if res.Flags&rdmacm.AIPassive != 0 {
		if err := id.BindAddr(res.Src); err != nil {
			return err
		}
		done, err := id.call(verb)
		if err != nil {
			return err
		}
		if pd != nil {
			p, ok := PDOf(pd)
			if !ok {
				return done(foreign(verb, "PD"))
			}
			id.pd = p
		}
		if attr != nil {
			saved := *attr
			saved.Type = id.qpType
			id.epQPInit = &saved
		}
		return done(nil)
	}
	if err := id.ResolveAddr(res.Src, res.Dst, cmEPTimeout*time.Millisecond); err != nil {
		return err
	}
	if err := id.ResolveRoute(cmEPTimeout * time.Millisecond); err != nil {
		return err
	}
	if attr != nil {
		attr.Type = id.qpType
		return id.CreateQP(pd, attr)
	}
	return nil
}

// GetRequest implements rdmacm.ID: rdma_get_request on a synchronous
// listener (CM-04, CM-30): the next connection request's ID, with a QP
// when CreateEP kept QP attributes. It waits, at most until ctx ends.
func (id *CMID) GetRequest(ctx context.Context) (rdmacm.ID, error) {
	const verb = "rdma_get_request"
	if ctx == nil {
		return nil, verr.New(verb, syscall.EINVAL, "nil context.Context")
	}
	done, err := id.call(verb)
	if err != nil {
		return nil, err
	}
	a := id.a
	if !id.sync {
		return nil, done(verr.New(verb, syscall.EINVAL, "the listener has an event channel: read its events with rdma_get_cm_event (CM-04)"))
	}
	if id.event != nil {
		_ = a.ackLocked(id.event)
		id.event = nil
	}
	ev, err := id.ch.q.GetLocked(ctx, a.tookLocked)
	if err != nil {
		return nil, done(verr.Wrap(verb, syscall.EINTR, "waiting for a connection request", err))
	}
	if ev.typ != rdmacm.EventConnectRequest || ev.status != 0 {
		id.event = ev
		if err := syncErr(verb, ev); err != nil {
			return nil, done(err)
		}
		return nil, done(verr.Errorf(verb, syscall.EINVAL, "the listener's event is %v, not a connection request", ev.typ))
	}
	conn := ev.id
	conn.event = ev
	saved, pd := id.epQPInit, id.pd
	done(nil)
	if saved != nil {
		attr := *saved
		var vpd verbs.PD
		if pd != nil {
			vpd = VerbsPD(pd)
		}
		if err := conn.CreateQP(vpd, &attr); err != nil {
			return conn, err
		}
	}
	return conn, nil
}

// DestroyEP implements rdmacm.ID: rdma_destroy_ep: the QP, the SRQ, then
// the ID.
func (id *CMID) DestroyEP(ctx context.Context) error {
	if id == nil || id.a == nil {
		return errNilID("rdma_destroy_ep")
	}
	var hasQP, hasSRQ bool
	id.view(func() { hasQP, hasSRQ = id.qp != nil, id.srq != nil })
	if hasQP {
		if err := id.DestroyQP(); err != nil {
			return err
		}
	}
	if hasSRQ {
		if err := id.DestroySRQ(); err != nil {
			return err
		}
	}
	return id.Destroy(ctx)
}
