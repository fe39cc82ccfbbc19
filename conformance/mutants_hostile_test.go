package conformance_test

import (
	"github.com/verbsim/verbsim/conformance"
)

// Forge implements conformance.Forger through the hook forge.
func (d *mDevice) Forge(p conformance.ForgedPacket) error {
	f := d.inner.(conformance.Forger)
	if d.h.forge != nil {
		return d.h.forge(f, p)
	}
	return f.Forge(p)
}

var _ conformance.Forger = (*mDevice)(nil)

// hostileMutants returns the mutants of the cases that forge packets
// (XFER-34): devices that take what a hostile peer sends.
func hostileMutants() []mutant {
	return []mutant{
		{name: "a single-packet WRITE's DMA length is taken from its payload", rules: []string{"XFER-34"}, h: hooks{
			forge: func(f conformance.Forger, p conformance.ForgedPacket) error {
				if p.Kind == conformance.ForgedWrite && p.First && p.Last {
					p.DMALen = uint32(len(p.Payload))
				}
				return f.Forge(p)
			}}},
	}
}
