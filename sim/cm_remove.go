package sim

import (
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// Remove removes the device from the fabric as a hot unplug would (CM-24):
// its ports go down (what is in flight to or from them is lost), every
// context of the device gets IBV_EVENT_DEVICE_FATAL, and every CM ID bound
// to it reports RDMA_CM_EVENT_DEVICE_REMOVAL (an ID whose connection
// request is still unread is destroyed instead). Its objects stay in
// memory for the application to destroy; the connection manager no longer
// finds its addresses, and calls on its IDs fail with EIO. Removing a
// device twice is EINVAL. A control with no verbs counterpart.
func (d *Device) Remove() (err error) {
	const verb = "remove_device"
	if d == nil {
		return verr.New(verb, syscall.EINVAL, "nil device")
	}
	f := d.fabric
	op := domain.Op{Verb: verb}
	f.d.Enter(op)
	defer func() { f.d.Leave(op, err) }()
	if d.removed {
		return verr.Errorf(verb, syscall.EINVAL, "device %q has been removed already", d.name)
	}
	d.removed = true
	for _, p := range d.ports {
		if p.attr.State != verbs.PortDown {
			p.attr.State = verbs.PortDown
			f.topo++
		}
	}
	for _, c := range d.contexts {
		_ = c.async.RaiseLocked(verbs.EventDeviceFatal, nil, nil, 1)
	}
	f.cm.removeDeviceLocked(d)
	return nil
}

// removeDeviceLocked is the CM's part of a removal (K:cma.c
// cma_process_remove, K:ucma.c ucma_removal_event_handler).
func (a *cmAgent) removeDeviceLocked(d *Device) {
	for _, id := range a.liveIDs() {
		if id.dev != d || id.state == cmDestroying {
			continue
		}
		if id.listen != nil && !id.reqRead {
			// The request was never read: the ID goes with it.
			id.listen.ch.q.RemoveIfLocked(func(ev *CMEvent) bool {
				if ev.id == id && ev.typ == rdmacm.EventConnectRequest {
					id.listen.backlog++
					return true
				}
				return false
			})
			a.destroyIDLocked(id, true)
			if id.ch != nil {
				id.ch.ids--
				id.ch = nil
			}
			continue
		}
		if c := id.conn; c != nil {
			c.id = nil
			id.conn = nil
			a.removeConnLocked(c)
		}
		a.stopLocked(&id.timer)
		id.state = cmDeviceRemoval
		a.raiseLocked(&CMEvent{typ: rdmacm.EventDeviceRemoval, id: id})
	}
}
