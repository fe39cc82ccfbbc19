package sim

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/sim/internal/policy"

	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// Config configures a Fabric.
type Config struct {
	// Profile selects the readings of implementation-defined rules. The zero
	// value is DefaultProfile.
	Profile Profile
	// Devices lists the adapters on the fabric. Empty: one device named
	// "vsim0" with DefaultDeviceAttr.
	Devices []DeviceConfig
	// Mode says who drives the engine: Auto (the default), Manual or
	// Background. See docs/time.md.
	Mode Mode
	// TickDuration is the wall time of one tick in Background mode; zero
	// means one nanosecond, the tick's nominal length. Negative is EINVAL.
	TickDuration time.Duration
	// Seed seeds the one source of choice of the fabric: the Random
	// schedule and the faults. The same seed and the same calls give the
	// same trace.
	Seed uint64
	// Schedule picks among ready events: FIFO (the default) or Random.
	Schedule Schedule
	// Chooser, if set, picks instead of Schedule.
	Chooser Chooser
	// Faults are the packet faults to inject from the start.
	Faults Faults
	// Trace, if set, receives a record of every engine event and of the
	// verbs that change QPs. Read it through Fabric.TraceRecords while the
	// fabric is in use.
	Trace *trace.Log
	// Remote, if set, carries the packets addressed to no port of this
	// fabric to ports of other fabrics (see Remote and Fabric.Receive).
	// Unset, such packets are dropped.
	Remote Remote
	// WaitBound, if not zero, bounds in virtual time (ticks) every
	// blocking wait that the passing of time can satisfy
	// (CompChannel.GetEvent, Context.GetAsyncEvent): once the clock stands
	// more than WaitBound ticks past the tick the wait began at, it gives
	// up with an error that matches syscall.EINTR and ErrWaitBound. Zero
	// (the default) waits as long as the context allows, as hardware
	// does. In Auto mode such a wait moves the clock itself, so a peer
	// that retries for ever (rnr_retry = 7 against a receive queue that
	// stays empty) keeps it stepping through time until its context ends;
	// the bound ends it first. Waits that only the application can satisfy
	// (a destroy waiting for acks) have no bound. package simtest sets
	// it to Options.Bound. See docs/time.md.
	WaitBound uint64
}

// ErrWaitBound is what a blocking wait's error matches, besides
// syscall.EINTR, when it gave up because virtual time passed
// Config.WaitBound.
var ErrWaitBound = domain.ErrWaitBound

// DeviceConfig describes one simulated adapter.
type DeviceConfig struct {
	Name string           // as ibv_get_device_name reports it; must be unique
	Attr verbs.DeviceAttr // zero: DefaultDeviceAttr; see DeviceAttr for partial values
	// Ports configures the ports, port 1 first. Empty: Attr.PhysPortCnt
	// ports with DefaultPortAttr. When set, Attr.PhysPortCnt must be zero
	// (it becomes len(Ports)) or equal len(Ports).
	Ports []PortConfig
}

func (c *Config) validate() error {
	if c.Mode > Background || c.Schedule > Random {
		return fmt.Errorf("sim: unknown mode %d or schedule %d", c.Mode, c.Schedule)
	}
	if c.TickDuration < 0 {
		return fmt.Errorf("sim: tick duration %v is negative", c.TickDuration)
	}
	if err := c.Faults.validate(); err != nil {
		return err
	}
	if len(c.Devices) == 0 {
		c.Devices = []DeviceConfig{{Name: "vsim0"}}
	}
	// Copy what validation fills in, so the caller's slices stay untouched.
	c.Devices = append([]DeviceConfig(nil), c.Devices...)
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
		if d.Attr == (verbs.DeviceAttr{}) {
			d.Attr = DefaultDeviceAttr()
			d.Attr.PhysPortCnt = 0 // taken from Ports below
		}
		if d.Attr.PhysPortCnt == 0 {
			d.Attr.PhysPortCnt = uint8(min(max(len(d.Ports), 1), 255))
		}
		if len(d.Ports) > 0 && len(d.Ports) != int(d.Attr.PhysPortCnt) {
			return fmt.Errorf("sim: device %q: %d port configs for phys_port_cnt=%d", d.Name, len(d.Ports), d.Attr.PhysPortCnt)
		}
		fillDeviceAttr(&d.Attr)
		if d.Attr.NodeGUID == 0 {
			d.Attr.NodeGUID = defaultNodeGUID(i)
		}
		if d.Attr.SysImageGUID == 0 {
			d.Attr.SysImageGUID = d.Attr.NodeGUID
		}
		if err := validateDeviceAttr(d.Attr); err != nil {
			return fmt.Errorf("sim: device %q: %w", d.Name, err)
		}
		ports := make([]PortConfig, d.Attr.PhysPortCnt)
		copy(ports, d.Ports)
		for p := range ports {
			if err := ports[p].fill(); err != nil {
				return fmt.Errorf("sim: device %q port %d: %w", d.Name, p+1, err)
			}
		}
		d.Ports = ports
	}
	return nil
}

// defaultNodeGUID is the node GUID of the i-th device when its attributes
// leave it zero: a Mellanox OUI (00:02:c9) and the device number, spaced so
// that the port GUIDs (node GUID + port - 1) of different devices never meet.
func defaultNodeGUID(i int) uint64 { return 0x0002c90300000000 | uint64(i+1)<<8 }

// Fabric is a simulated RDMA fabric: the adapters on it, the engine that
// moves packets between them, and its virtual clock. Verbs may be called
// from many goroutines: the fabric runs them one at a time, and a blocking
// call holds up no other while it waits.
//
// On a nil *Fabric every method returns EINVAL or zero values; see the
// package doc.
type Fabric struct {
	d       *domain.Domain // the domain of every object on the fabric: lock, trace, hooks
	profile Profile
	pol     policy.Engine // the engine's policies, from profile's readings
	devices []*Device
	eng     *engine
	// lids routes the LIDs below len(lids) by index (a map read of a
	// uint16 key takes Go's generic path: ~135 instructions a packet);
	// byLID holds the LIDs at or above maxDenseLID, which a configuration
	// may set, so that the slice stays small.
	lids  []*port
	byLID map[uint16]*port
	byGID map[verbs.GID]*port
	// topo counts the changes that can change where a packet goes: a
	// port's state set, a QP created or destroyed (the direct path's
	// DirectCache is checked against it).
	topo uint64
}

// maxDenseLID bounds Fabric.lids: LIDs from it up are routed through a map.
const maxDenseLID = 4096

// NewFabric returns a fabric with the devices cfg lists. It assigns the
// InfiniBand LIDs that the configuration leaves zero, in device and port
// order, so the same configuration always gives the same addresses. A
// configuration it cannot build fails with an error matching
// syscall.EINVAL that says what is wrong.
func NewFabric(cfg Config) (*Fabric, error) {
	f, err := newFabric(cfg)
	if err != nil {
		return nil, configErr("new_fabric", err)
	}
	return f, nil
}

// configErr gives an error of a configuration the errno of a bad argument,
// EINVAL, keeping its text; one that carries an errno already is returned
// as it is.
func configErr(verb string, err error) error {
	if err == nil || verr.Errno(err) != 0 {
		return err
	}
	return verr.Wrap(verb, syscall.EINVAL, "", err)
}

func newFabric(cfg Config) (*Fabric, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	f := &Fabric{profile: cfg.Profile, pol: cfg.Profile.engine(), d: domain.New()}
	if f.profile.Name == "" {
		f.profile.Name = "default"
	}
	guids := map[uint64]string{}
	for _, dc := range cfg.Devices {
		if other, dup := guids[dc.Attr.NodeGUID]; dup {
			return nil, fmt.Errorf("sim: devices %q and %q have node GUID %#x", other, dc.Name, dc.Attr.NodeGUID)
		}
		guids[dc.Attr.NodeGUID] = dc.Name
		d := newDevice(f, dc)
		f.devices = append(f.devices, d)
	}
	if err := f.addressPorts(); err != nil {
		return nil, err
	}
	f.indexPorts()
	f.eng = newEngine(f, cfg)
	f.eng.installLocked(cfg.WaitBound)
	if cfg.Mode == Background {
		f.startBackground(cfg.TickDuration)
	}
	return f, nil
}

// errNilFabric is the error of verb called on a nil *Fabric.
func errNilFabric(verb string) error {
	return verr.New(verb, syscall.EINVAL, "nil fabric")
}

// indexPorts builds the routing tables: every LID of an InfiniBand port
// and every GID of every port.
func (f *Fabric) indexPorts() {
	f.lids, f.byLID, f.byGID = nil, map[uint16]*port{}, map[verbs.GID]*port{}
	for _, d := range f.devices {
		for _, p := range d.ports {
			if p.attr.LinkLayer == verbs.LinkLayerInfiniBand && p.attr.LID != 0 {
				for l := range uint16(1) << p.attr.LMC {
					lid := p.attr.LID + l
					if lid >= maxDenseLID {
						f.byLID[lid] = p
						continue
					}
					if int(lid) >= len(f.lids) {
						f.lids = append(f.lids, make([]*port, int(lid)+1-len(f.lids))...)
					}
					f.lids[lid] = p
				}
			}
			for _, g := range p.gids {
				if !g.IsZero() {
					f.byGID[g] = p
				}
			}
		}
	}
}

// Profile returns the fabric's profile.
func (f *Fabric) Profile() Profile {
	if f == nil {
		return Profile{}
	}
	return f.profile
}

// Devices returns the adapters on the fabric (ibv_get_device_list).
func (f *Fabric) Devices() []*Device {
	if f == nil {
		return nil
	}
	return append([]*Device(nil), f.devices...)
}

// Device returns the adapter named name, or ENODEV.
func (f *Fabric) Device(name string) (*Device, error) {
	if f == nil {
		return nil, errNilFabric("ibv_open_device")
	}
	for _, d := range f.devices {
		if d.name == name {
			return d, nil
		}
	}
	return nil, verr.Errorf("ibv_open_device", syscall.ENODEV, "no device named %q", name)
}

// DefaultDeviceAttr returns the attributes of a default device, in the range
// of a current ConnectX-class adapter: the sizes are those a ConnectX-6
// (vendor part 4123) reports through ibv_devinfo -v, except MaxCQ, kept at
// 65536 as the completion core chose it, and MaxInline, a verbsim choice
// (256 bytes; rxe allows 400). The capability flags are the ones verbsim
// honours, SRQ resizing included (rxe also reports it; mlx5 does not).
// The vendor is not Mellanox: test suites pick vendor-specific paths
// (mlx5 create flags, mlx5-only tests) from vendor_id, so the device
// reports 0xffffff, the "no IEEE OUI" value software devices such as rxe
// report. The part stays 4123: perftest chooses its defaults (inline
// sizes, the ibv_wr_* API) from vendor_part_id alone, and those of a
// ConnectX-6 suit the limits above.
func DefaultDeviceAttr() verbs.DeviceAttr {
	return verbs.DeviceAttr{
		FWVer:           "20.37.1700",
		MaxMRSize:       ^uint64(0),
		MaxDMSize:       128 << 10,
		VendorID:        0xffffff,
		VendorPartID:    4123,
		MaxQP:           131072,
		MaxQPWR:         32768,
		DeviceCapFlags:  verbs.DeviceBadPKeyCntr | verbs.DeviceBadQKeyCntr | verbs.DeviceCurrQPStateMod | verbs.DevicePortActiveEvt | verbs.DeviceSysImageGUID | verbs.DeviceRCRNRNakGen | verbs.DeviceSRQResize | verbs.DeviceMemWindow | verbs.DeviceXRC | verbs.DeviceMemWindow2B,
		MaxSGE:          30,
		MaxSGERD:        30,
		MaxCQ:           1 << 16,
		MaxCQE:          1<<22 - 1,
		MaxMR:           1 << 24,
		MaxMW:           1 << 16,
		MaxPD:           1 << 23,
		MaxQPRDAtom:     16,
		MaxQPInitRDAtom: 16,
		AtomicCap:       verbs.AtomicHCA,
		MaxAH:           1<<31 - 1,
		MaxSRQ:          1 << 23,
		MaxSRQWR:        1<<15 - 1,
		MaxSRQSGE:       31,
		PhysPortCnt:     1,
		MaxInline:       256,
		NumCompVectors:  4,

		HCACoreClock:            1e6,
		CompletionTimestampMask: ^uint64(0),
	}
}

// fillDeviceAttr gives the zero fields that have a default their default value; see
// DeviceAttr. MaxCQ, MaxCQE and NumCompVectors stay as they are.
func fillDeviceAttr(a *verbs.DeviceAttr) {
	def := DefaultDeviceAttr()
	orDefault(&a.FWVer, def.FWVer)
	orDefault(&a.MaxMRSize, def.MaxMRSize)
	orDefault(&a.MaxDMSize, def.MaxDMSize)
	orDefault(&a.VendorID, def.VendorID)
	orDefault(&a.VendorPartID, def.VendorPartID)
	orDefault(&a.PhysPortCnt, def.PhysPortCnt)
	orDefault(&a.MaxQP, def.MaxQP)
	orDefault(&a.MaxQPWR, def.MaxQPWR)
	orDefault(&a.MaxSGE, def.MaxSGE)
	orDefault(&a.MaxSGERD, def.MaxSGERD)
	orDefault(&a.MaxMR, def.MaxMR)
	orDefault(&a.MaxMW, def.MaxMW)
	orDefault(&a.MaxPD, def.MaxPD)
	orDefault(&a.MaxQPRDAtom, def.MaxQPRDAtom)
	orDefault(&a.MaxQPInitRDAtom, def.MaxQPInitRDAtom)
	orDefault(&a.MaxAH, def.MaxAH)
	orDefault(&a.MaxSRQ, def.MaxSRQ)
	orDefault(&a.MaxSRQWR, def.MaxSRQWR)
	orDefault(&a.MaxSRQSGE, def.MaxSRQSGE)
	orDefault(&a.MaxInline, def.MaxInline)
	orDefault(&a.HCACoreClock, def.HCACoreClock)
	orDefault(&a.CompletionTimestampMask, def.CompletionTimestampMask)
}

func validateDeviceAttr(a verbs.DeviceAttr) error {
	if a.MaxCQ < 1 || a.MaxCQE < 1 || a.NumCompVectors < 1 {
		return errors.New("max_cq, max_cqe and num_comp_vectors must be at least 1")
	}
	for _, l := range []struct {
		name string
		v    int
	}{
		{"max_qp", a.MaxQP}, {"max_qp_wr", a.MaxQPWR}, {"max_sge", a.MaxSGE}, {"max_sge_rd", a.MaxSGERD},
		{"max_mr", a.MaxMR}, {"max_mw", a.MaxMW}, {"max_pd", a.MaxPD}, {"max_qp_rd_atom", a.MaxQPRDAtom},
		{"max_qp_init_rd_atom", a.MaxQPInitRDAtom}, {"max_ah", a.MaxAH}, {"max_srq", a.MaxSRQ},
		{"max_srq_wr", a.MaxSRQWR}, {"max_srq_sge", a.MaxSRQSGE}, {"max_inline_data", a.MaxInline},
	} {
		if l.v < 1 {
			return fmt.Errorf("%s is %d; limits are at least 1", l.name, l.v)
		}
	}
	switch {
	case a.MaxMR > maxMRIndex+1:
		return fmt.Errorf("max_mr %d is above %d, the number of distinct MR keys", a.MaxMR, maxMRIndex+1)
	case a.MaxMW > maxMRIndex+1:
		return fmt.Errorf("max_mw %d is above %d, the number of distinct MW keys", a.MaxMW, maxMRIndex+1)
	case a.AtomicCap > verbs.AtomicGlob:
		return fmt.Errorf("atomic_cap %d is not an enum ibv_atomic_cap value", a.AtomicCap)
	case len(a.FWVer) > 63:
		return fmt.Errorf("fw_ver %q does not fit in 64 bytes with its NUL", a.FWVer)
	case a.MaxDMSize%pageSize != 0 || a.MaxDMSize > maxDMSize:
		return fmt.Errorf("max_dm_size %d is not a multiple of %d up to %d (DM-01)", a.MaxDMSize, pageSize, uint64(maxDMSize))
	case a.MaxMRSize == 0 || a.PhysPortCnt == 0:
		return errors.New("max_mr_size and phys_port_cnt must be at least 1")
	}
	return nil
}

// orDefault sets *p to def when *p is the zero value: a configuration field
// left unset takes the default.
func orDefault[T comparable](p *T, def T) {
	var zero T
	if *p == zero {
		*p = def
	}
}
