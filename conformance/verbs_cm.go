package conformance

import (
	"net/netip"

	"github.com/verbsim/verbsim/rdmacm"
)

// CMDevice is an optional capability of a Device: the RDMA connection
// manager of the host the device is on (package rdmacm), and an IPv4
// address of the device's port 1, by which the connection manager finds
// the port. With it the suite checks the CM rules; without it those cases
// log that they checked nothing. The cases connect the host to itself:
// they listen on CMAddr and connect to it.
type CMDevice interface {
	CM() rdmacm.CM
	CMAddr() netip.Addr
}

// Nower is an optional capability of a Device with a Clock: the virtual
// time in ticks (nanoseconds), so that the CM cases measure the timeouts
// of the protocol (CM-20).
type Nower interface {
	Now() uint64
}

// DeviceRemover is an optional capability of a Device: removing it, as a
// hot unplug would (CM-24).
type DeviceRemover interface {
	RemoveDevice() error
}
