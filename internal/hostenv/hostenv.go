// Package hostenv reads the VERBSIM_* environment variables that configure
// a fabric for C programs (docs/c-programs.md): the drop-in library in
// process (capi) and the per-host daemon (internal/nicd) read them alike.
package hostenv

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// Config is what the environment asks for.
type Config struct {
	Devices, Ports int
	Profile        sim.Profile
	Ethernet       bool
	Mode           sim.Mode
	Trace          string // VERBSIM_TRACE
	Report         string // VERBSIM_REPORT: where to append the readings the run consulted
	Faults         sim.Faults
	Seed           uint64
	Fabric         string        // VERBSIM_FABRIC; "" for none (this process only)
	DieAfter       int64         // VERBSIM_DIE_AFTER
	Tick           time.Duration // VERBSIM_TICK; 0 for the engine's default (1 ns)
	DMKiB          int           // VERBSIM_DM_KIB; 0 for the default max_dm_size (DM-01)
}

// MaxFabricName is the longest fabric name.
const MaxFabricName = 64

func envInt(getenv func(string) string, name string, def, lo, hi int) (int, error) {
	s := getenv(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s=%q: want an integer in [%d, %d]", name, s, lo, hi)
	}
	return n, nil
}

func envProb(getenv func(string) string, name string) (float64, error) {
	s := getenv(name)
	if s == "" {
		return 0, nil
	}
	p, err := strconv.ParseFloat(s, 64)
	if err != nil || p < 0 || p > 1 {
		return 0, fmt.Errorf("%s=%q: want a probability in [0, 1]", name, s)
	}
	return p, nil
}

// Read reads the configuration from the process's environment.
func Read() (Config, error) { return FromEnv(os.Getenv) }

// FromEnv reads the configuration through getenv. A bad value is an error
// naming the variable and what it wants.
func FromEnv(getenv func(string) string) (Config, error) {
	var c Config
	var err error
	if c.Devices, err = envInt(getenv, "VERBSIM_DEVICES", 1, 0, 64); err != nil {
		return c, err
	}
	if c.Ports, err = envInt(getenv, "VERBSIM_PORTS", 1, 1, 8); err != nil {
		return c, err
	}
	if c.DMKiB, err = envInt(getenv, "VERBSIM_DM_KIB", 0, 4, 1<<20); err != nil || c.DMKiB%4 != 0 {
		return c, fmt.Errorf("VERBSIM_DM_KIB=%q: want a multiple of 4 in [4, %d] (%v)", getenv("VERBSIM_DM_KIB"), 1<<20, err)
	}
	name := getenv("VERBSIM_PROFILE")
	if name == "" {
		name = "default"
	}
	if c.Profile, err = sim.ProfileByName(name); err != nil {
		return c, fmt.Errorf("VERBSIM_PROFILE=%q: %v", name, err)
	}
	// rxe runs on Ethernet: its Go profile leaves the link unset for the
	// programs written against it (sim.RXEProfile), C programs do not.
	c.Ethernet = c.Profile.Link == verbs.LinkLayerEthernet || name == "rxe"
	if err := c.Profile.Readings.Apply(getenv("VERBSIM_READINGS")); err != nil {
		return c, fmt.Errorf("VERBSIM_READINGS: %v", err)
	}
	switch l := getenv("VERBSIM_LINK"); l {
	case "":
	case "ib":
		c.Ethernet = false
	case "eth":
		c.Ethernet = true
	default:
		return c, fmt.Errorf("VERBSIM_LINK=%q: want ib or eth", l)
	}
	switch m := getenv("VERBSIM_MODE"); m {
	case "", "background":
		c.Mode = sim.Background
	case "auto":
		c.Mode = sim.Auto
	default:
		return c, fmt.Errorf("VERBSIM_MODE=%q: want background or auto", m)
	}
	if c.Faults.Drop, err = envProb(getenv, "VERBSIM_DROP"); err != nil {
		return c, err
	}
	if c.Faults.Duplicate, err = envProb(getenv, "VERBSIM_DUP"); err != nil {
		return c, err
	}
	if c.Faults.Delay, err = envProb(getenv, "VERBSIM_DELAY"); err != nil {
		return c, err
	}
	if s := getenv("VERBSIM_SEED"); s != "" {
		if c.Seed, err = strconv.ParseUint(s, 0, 64); err != nil {
			return c, fmt.Errorf("VERBSIM_SEED=%q: want an unsigned integer", s)
		}
	}
	c.Trace = getenv("VERBSIM_TRACE")
	c.Report = getenv("VERBSIM_REPORT")
	switch f := getenv("VERBSIM_FABRIC"); f {
	case "":
		c.Fabric = fmt.Sprintf("uid%d", os.Getuid())
	case "none":
	default:
		if err := CheckFabricName(f); err != nil {
			return c, err
		}
		c.Fabric = f
	}
	if s := getenv("VERBSIM_TICK"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < time.Nanosecond || d > time.Millisecond {
			return c, fmt.Errorf("VERBSIM_TICK=%q: want a duration from 1ns to 1ms", s)
		}
		c.Tick = d
	}
	if s := getenv("VERBSIM_DIE_AFTER"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			return c, fmt.Errorf("VERBSIM_DIE_AFTER=%q: want a positive number of frames", s)
		}
		c.DieAfter = n
	}
	return c, nil
}

// CheckFabricName says what is wrong with a fabric name, if anything: 1 to
// MaxFabricName printable characters other than '/' and space.
func CheckFabricName(s string) error {
	if len(s) == 0 || len(s) > MaxFabricName {
		return fmt.Errorf("VERBSIM_FABRIC=%q: want 1 to %d characters, or none", s, MaxFabricName)
	}
	for _, c := range []byte(s) {
		if c <= ' ' || c > '~' || c == '/' {
			return fmt.Errorf("VERBSIM_FABRIC=%q: want printable characters other than '/' and space", s)
		}
	}
	return nil
}

// DeviceConfigs are the devices the configuration asks for, sim0, sim1,
// ..., on one fabric (their LIDs left to it), with device memory of the
// size asked.
func (c Config) DeviceConfigs() []sim.DeviceConfig {
	var out []sim.DeviceConfig
	for i := 0; i < c.Devices; i++ {
		d := sim.DeviceConfig{Name: fmt.Sprintf("sim%d", i)}
		if c.DMKiB != 0 { // device memory of the size asked (DM-01)
			d.Attr = c.Profile.DeviceAttr()
			d.Attr.PhysPortCnt = 0
			d.Attr.MaxDMSize = uint64(c.DMKiB) << 10
		}
		for p := 1; p <= c.Ports; p++ {
			pa := verbs.PortAttr{LinkLayer: verbs.LinkLayerInfiniBand}
			if c.Ethernet {
				pa.LinkLayer = verbs.LinkLayerEthernet
			}
			d.Ports = append(d.Ports, sim.PortConfig{Attr: pa})
		}
		out = append(out, d)
	}
	return out
}
