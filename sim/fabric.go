package sim

import (
	"errors"
	"fmt"
	"sync"
	"syscall"

	"github.com/verbsim/verbsim/sim/verr"
)

// Config configures a Fabric.
type Config struct {
	// Profile selects the readings of implementation-defined rules. The zero
	// value is DefaultProfile.
	Profile Profile
	// Devices lists the adapters on the fabric. Empty: one device named
	// "vsim0" with DefaultDeviceAttr.
	Devices []DeviceConfig
}

// DeviceConfig describes one simulated adapter.
type DeviceConfig struct {
	Name string     // as ibv_get_device_name reports it; must be unique
	Attr DeviceAttr // zero: DefaultDeviceAttr
}

func (c *Config) validate() error {
	if err := c.Profile.validate(); err != nil {
		return err
	}
	if len(c.Devices) == 0 {
		c.Devices = []DeviceConfig{{Name: "vsim0"}}
	}
	seen := map[string]bool{}
	for i := range c.Devices {
		d := &c.Devices[i]
		if d.Name == "" {
			return fmt.Errorf("sim: device %d has no name", i)
		}
		if seen[d.Name] {
			return fmt.Errorf("sim: two devices are named %q", d.Name)
		}
		seen[d.Name] = true
		if d.Attr == (DeviceAttr{}) {
			d.Attr = DefaultDeviceAttr()
		}
		if err := d.Attr.validate(); err != nil {
			return fmt.Errorf("sim: device %q: %w", d.Name, err)
		}
	}
	return nil
}

// Fabric is a simulated RDMA fabric: the adapters on it and the lock that
// serializes every verb on their objects. Verbs may be called from many
// goroutines; blocking calls wait outside the lock.
type Fabric struct {
	mu      sync.Mutex // the domain lock of every object on the fabric
	profile Profile
	devices []*Device
}

// NewFabric returns a fabric with the devices cfg lists.
func NewFabric(cfg Config) (*Fabric, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	f := &Fabric{profile: cfg.Profile}
	if f.profile.Name == "" {
		f.profile.Name = "default"
	}
	for i, dc := range cfg.Devices {
		f.devices = append(f.devices, &Device{
			fabric: f,
			name:   dc.Name,
			attr:   dc.Attr,
			guid:   0x0002c90300000000 | uint64(i+1),
		})
	}
	return f, nil
}

// Profile returns the fabric's profile.
func (f *Fabric) Profile() Profile { return f.profile }

// Devices returns the adapters on the fabric (ibv_get_device_list).
func (f *Fabric) Devices() []*Device { return append([]*Device(nil), f.devices...) }

// Device returns the adapter named name, or ENODEV.
func (f *Fabric) Device(name string) (*Device, error) {
	for _, d := range f.devices {
		if d.name == name {
			return d, nil
		}
	}
	return nil, verr.Errorf("ibv_open_device", syscall.ENODEV, "no device named %q", name)
}

// DeviceAttr holds the device attributes the simulation enforces, modelled on
// struct ibv_device_attr.
type DeviceAttr struct {
	MaxCQ          int // max_cq: CQs that may exist at once on the device (CQ-06)
	MaxCQE         int // max_cqe: the largest CQ (CQ-01)
	NumCompVectors int // ibv_context.num_comp_vectors (CQ-03)
}

// DefaultDeviceAttr returns the attributes of a default device, in the range
// of a current ConnectX-class adapter.
func DefaultDeviceAttr() DeviceAttr {
	return DeviceAttr{MaxCQ: 1 << 16, MaxCQE: 1<<22 - 1, NumCompVectors: 4}
}

func (a DeviceAttr) validate() error {
	if a.MaxCQ < 1 || a.MaxCQE < 1 || a.NumCompVectors < 1 {
		return errors.New("max_cq, max_cqe and num_comp_vectors must be at least 1")
	}
	return nil
}
