package conformance_test

import (
	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/verbs"
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
// (XFER-27, XFER-34, XFER-35): devices that take what a hostile peer sends.
func hostileMutants() []mutant {
	retryReadsSuccess := statusMutant(verbs.WCRetryExcErr, verbs.WCSuccess, "XFER-27", "XFER-35")
	retryReadsSuccess.name = "a request never acknowledged completes successfully"
	return []mutant{
		{name: "a single-packet WRITE's DMA length is taken from its payload", rules: []string{"XFER-34"}, h: hooks{
			forge: func(f conformance.Forger, p conformance.ForgedPacket) error {
				if p.Kind == conformance.ForgedWrite && p.First && p.Last {
					p.DMALen = uint32(len(p.Payload))
				}
				return f.Forge(p)
			}}},
		{name: "an ACK from another address is taken as the peer's", rules: []string{"XFER-27"}, h: hooks{
			// The case moves the source away from the peer's address by
			// flipping bits (elsewhere); the device puts it back.
			forge: func(f conformance.Forger, p conformance.ForgedPacket) error {
				if p.Kind == conformance.ForgedACK {
					if p.SLID != 0 {
						p.SLID ^= 0x40
					}
					p.SGID[15] ^= 0x5a
				}
				return f.Forge(p)
			}}},
		retryReadsSuccess,
	}
}
