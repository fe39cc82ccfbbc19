package cm

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The MAD header and the constants of CM MADs.
const (
	MADSize      = 256 // a MAD is 256 bytes: header and data
	HeaderSize   = 24  // the common MAD header
	DataSize     = MADSize - HeaderSize
	BaseVersion  = 1    // IB_MGMT_BASE_VERSION
	ClassCM      = 0x07 // IB_MGMT_CLASS_CM
	ClassVersion = 2    // IB_CM_CLASS_VERSION
	MethodSend   = 0x03 // IB_MGMT_METHOD_SEND: every CM message
	// GSIQPN is the QP number of the general services interface, where CM
	// messages are sent and received; GSIQKey its well-known Q_Key.
	GSIQPN  = 1
	GSIQKey = 0x80010000
)

// Attr is the attribute ID of a CM MAD: which message it is.
type Attr uint16

// The CM messages verbsim sends and accepts.
const (
	AttrREQ     Attr = 0x0010
	AttrMRA     Attr = 0x0011
	AttrREJ     Attr = 0x0012
	AttrREP     Attr = 0x0013
	AttrRTU     Attr = 0x0014
	AttrDREQ    Attr = 0x0015
	AttrDREP    Attr = 0x0016
	AttrSIDRREQ Attr = 0x0017
	AttrSIDRREP Attr = 0x0018
)

var attrNames = map[Attr]string{
	AttrREQ: "REQ", AttrMRA: "MRA", AttrREJ: "REJ", AttrREP: "REP", AttrRTU: "RTU",
	AttrDREQ: "DREQ", AttrDREP: "DREP", AttrSIDRREQ: "SIDR_REQ", AttrSIDRREP: "SIDR_REP",
}

// String names the message ("REQ"), or "Attr(0x...)".
func (a Attr) String() string {
	if s, ok := attrNames[a]; ok {
		return s
	}
	return fmt.Sprintf("Attr(%#04x)", uint16(a))
}

// PrivateSize returns the size of the private data field of message a
// (IB_CM_*_PRIVATE_DATA_SIZE), 0 for an unknown message.
func (a Attr) PrivateSize() int {
	switch a {
	case AttrREQ:
		return 92
	case AttrMRA:
		return 222
	case AttrREJ:
		return 148
	case AttrREP:
		return 196
	case AttrRTU, AttrDREP:
		return 224
	case AttrDREQ:
		return 220
	case AttrSIDRREQ:
		return 216
	case AttrSIDRREP:
		return 136
	}
	return 0
}

// privateOffset is where the private data of a starts in the data.
func (a Attr) privateOffset() int { return DataSize - a.PrivateSize() }

// Msg is one CM message. Which fields mean something depends on Attr; the
// others are zero after Decode and ignored by Append. The field names are
// those of the IBTA tables.
type Msg struct {
	Attr Attr
	TID  uint64 // transaction ID of the MAD header

	LocalCommID, RemoteCommID uint32 // SIDR: RequestID is LocalCommID
	ServiceID                 uint64 // REQ, SIDR_REQ, SIDR_REP
	LocalCAGUID               uint64 // REQ, REP
	LocalQKey                 uint32 // REQ, REP
	LocalQPN                  uint32 // REQ, REP, DREQ (remote QPN), SIDR_REP: 24 bits

	ResponderResources, InitiatorDepth uint8 // REQ, REP
	// REQ: the timeouts (4.096 µs × 2^n), the transport (TransportRC,
	// TransportUC) and the retry counts.
	RemoteCMResponseTimeout, LocalCMResponseTimeout uint8
	Transport                                       uint8
	FlowControl                                     bool // REQ, REP
	StartingPSN                                     uint32
	RetryCount, RNRRetryCount                       uint8 // RNR: REQ, REP
	PKey                                            uint16
	PathMTU                                         uint8 // enum ibv_mtu
	MaxCMRetries                                    uint8
	SRQ                                             bool // REQ, REP

	// REQ: the primary path.
	PrimaryLocalLID, PrimaryRemoteLID uint16
	PrimaryLocalGID, PrimaryRemoteGID [16]byte
	FlowLabel                         uint32
	PacketRate                        uint8
	TrafficClass, HopLimit, SL        uint8
	SubnetLocal                       bool
	LocalAckTimeout                   uint8

	// MRA and REJ: which message is meant (MsgREQ, MsgREP, MsgOther).
	MsgTarget      uint8
	ServiceTimeout uint8  // MRA
	Reason         uint16 // REJ
	TargetAckDelay uint8  // REP
	Status         uint8  // SIDR_REP

	// Private is the private data: at most Attr.PrivateSize() bytes; on
	// Decode always exactly that many.
	Private []byte
}

// Transports of a REQ (Transport Service Type).
const (
	TransportRC = 0
	TransportUC = 1
)

// MRA and REJ targets (Message MRAed, Message Rejected).
const (
	MsgREQ   = 0
	MsgREP   = 1
	MsgOther = 2
)

// put writes v into the width bits of data that start bit bit of byte at
// (MSB first), big-endian.
func put(d []byte, at, bit, width int, v uint64) {
	pos := at*8 + bit
	for i := width - 1; i >= 0; i-- {
		b := (v >> uint(i)) & 1
		byteI, bitI := pos/8, 7-pos%8
		if b != 0 {
			d[byteI] |= 1 << uint(bitI)
		} else {
			d[byteI] &^= 1 << uint(bitI)
		}
		pos++
	}
}

// get reads the field put writes.
func get(d []byte, at, bit, width int) uint64 {
	pos := at*8 + bit
	var v uint64
	for range width {
		v = v<<1 | uint64(d[pos/8]>>uint(7-pos%8)&1)
		pos++
	}
	return v
}

func flag(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// ErrTooLong is the error of Append for private data longer than the
// message's field.
var ErrTooLong = errors.New("cm: private data longer than the message's field")

// Append appends the 256-byte MAD of m to b. It fails only when m.Private
// does not fit (ErrTooLong) or m.Attr is not a CM message.
func (m *Msg) Append(b []byte) ([]byte, error) {
	n := m.Attr.PrivateSize()
	if n == 0 {
		return b, fmt.Errorf("cm: %v is not a CM message", m.Attr)
	}
	if len(m.Private) > n {
		return b, ErrTooLong
	}
	start := len(b)
	b = append(b, make([]byte, MADSize)...)
	mad := b[start:]
	mad[0], mad[1], mad[2], mad[3] = BaseVersion, ClassCM, ClassVersion, MethodSend
	be := binary.BigEndian
	be.PutUint64(mad[8:], m.TID)
	be.PutUint16(mad[16:], uint16(m.Attr))
	d := mad[HeaderSize:]
	m.putFields(d)
	copy(d[m.Attr.privateOffset():], m.Private)
	return b, nil
}

// putFields writes the fields of m's message into data d.
func (m *Msg) putFields(d []byte) {
	be := binary.BigEndian
	switch m.Attr {
	case AttrREQ:
		be.PutUint32(d[0:], m.LocalCommID)
		be.PutUint64(d[8:], m.ServiceID)
		be.PutUint64(d[16:], m.LocalCAGUID)
		be.PutUint32(d[28:], m.LocalQKey)
		put(d, 32, 0, 24, uint64(m.LocalQPN))
		d[35] = m.ResponderResources
		d[39] = m.InitiatorDepth
		put(d, 43, 0, 5, uint64(m.RemoteCMResponseTimeout))
		put(d, 43, 5, 2, uint64(m.Transport))
		put(d, 43, 7, 1, flag(m.FlowControl))
		put(d, 44, 0, 24, uint64(m.StartingPSN))
		put(d, 47, 0, 5, uint64(m.LocalCMResponseTimeout))
		put(d, 47, 5, 3, uint64(m.RetryCount))
		be.PutUint16(d[48:], m.PKey)
		put(d, 50, 0, 4, uint64(m.PathMTU))
		put(d, 50, 5, 3, uint64(m.RNRRetryCount))
		put(d, 51, 0, 4, uint64(m.MaxCMRetries))
		put(d, 51, 4, 1, flag(m.SRQ))
		be.PutUint16(d[52:], m.PrimaryLocalLID)
		be.PutUint16(d[54:], m.PrimaryRemoteLID)
		copy(d[56:72], m.PrimaryLocalGID[:])
		copy(d[72:88], m.PrimaryRemoteGID[:])
		put(d, 88, 0, 20, uint64(m.FlowLabel))
		put(d, 91, 2, 6, uint64(m.PacketRate))
		d[92], d[93] = m.TrafficClass, m.HopLimit
		put(d, 94, 0, 4, uint64(m.SL))
		put(d, 94, 4, 1, flag(m.SubnetLocal))
		put(d, 95, 0, 5, uint64(m.LocalAckTimeout))
	case AttrMRA:
		be.PutUint32(d[0:], m.LocalCommID)
		be.PutUint32(d[4:], m.RemoteCommID)
		put(d, 8, 0, 2, uint64(m.MsgTarget))
		put(d, 9, 0, 5, uint64(m.ServiceTimeout))
	case AttrREJ:
		be.PutUint32(d[0:], m.LocalCommID)
		be.PutUint32(d[4:], m.RemoteCommID)
		put(d, 8, 0, 2, uint64(m.MsgTarget))
		be.PutUint16(d[10:], m.Reason)
	case AttrREP:
		be.PutUint32(d[0:], m.LocalCommID)
		be.PutUint32(d[4:], m.RemoteCommID)
		be.PutUint32(d[8:], m.LocalQKey)
		put(d, 12, 0, 24, uint64(m.LocalQPN))
		put(d, 20, 0, 24, uint64(m.StartingPSN))
		d[24], d[25] = m.ResponderResources, m.InitiatorDepth
		put(d, 26, 0, 5, uint64(m.TargetAckDelay))
		put(d, 26, 7, 1, flag(m.FlowControl))
		put(d, 27, 0, 3, uint64(m.RNRRetryCount))
		put(d, 27, 3, 1, flag(m.SRQ))
		be.PutUint64(d[28:], m.LocalCAGUID)
	case AttrRTU, AttrDREP:
		be.PutUint32(d[0:], m.LocalCommID)
		be.PutUint32(d[4:], m.RemoteCommID)
	case AttrDREQ:
		be.PutUint32(d[0:], m.LocalCommID)
		be.PutUint32(d[4:], m.RemoteCommID)
		put(d, 8, 0, 24, uint64(m.LocalQPN))
	case AttrSIDRREQ:
		be.PutUint32(d[0:], m.LocalCommID)
		be.PutUint16(d[4:], m.PKey)
		be.PutUint64(d[8:], m.ServiceID)
	case AttrSIDRREP:
		be.PutUint32(d[0:], m.LocalCommID)
		d[4] = m.Status
		put(d, 8, 0, 24, uint64(m.LocalQPN))
		be.PutUint64(d[12:], m.ServiceID)
		be.PutUint32(d[20:], m.LocalQKey)
	}
}

// Decode parses a MAD. It returns an error, and never panics, for anything
// that is not a 256-byte CM MAD (base version 1, class 0x07, class version
// 2, method Send) of one of the attributes above, and for a field a
// receiver cannot act on: a transport other than RC or UC, a path MTU or
// an MRA or REJ target outside its enum (CM-32).
func Decode(mad []byte) (Msg, error) {
	var m Msg
	switch {
	case len(mad) != MADSize:
		return m, fmt.Errorf("cm: a MAD of %d bytes, want %d", len(mad), MADSize)
	case mad[0] != BaseVersion || mad[1] != ClassCM || mad[2] != ClassVersion:
		return m, fmt.Errorf("cm: base version %d, class %#x, class version %d is not a CM MAD", mad[0], mad[1], mad[2])
	case mad[3] != MethodSend:
		return m, fmt.Errorf("cm: method %#x, want Send", mad[3])
	}
	be := binary.BigEndian
	m.Attr = Attr(be.Uint16(mad[16:]))
	if m.Attr.PrivateSize() == 0 {
		return Msg{}, fmt.Errorf("cm: unknown attribute %v", m.Attr)
	}
	m.TID = be.Uint64(mad[8:])
	d := mad[HeaderSize:]
	m.getFields(d)
	if err := m.check(); err != nil {
		return Msg{}, err
	}
	m.Private = append([]byte(nil), d[m.Attr.privateOffset():]...)
	return m, nil
}

// getFields reads the fields putFields writes.
func (m *Msg) getFields(d []byte) {
	be := binary.BigEndian
	m.LocalCommID = be.Uint32(d[0:])
	switch m.Attr {
	case AttrREQ:
		m.ServiceID = be.Uint64(d[8:])
		m.LocalCAGUID = be.Uint64(d[16:])
		m.LocalQKey = be.Uint32(d[28:])
		m.LocalQPN = uint32(get(d, 32, 0, 24))
		m.ResponderResources, m.InitiatorDepth = d[35], d[39]
		m.RemoteCMResponseTimeout = uint8(get(d, 43, 0, 5))
		m.Transport = uint8(get(d, 43, 5, 2))
		m.FlowControl = get(d, 43, 7, 1) == 1
		m.StartingPSN = uint32(get(d, 44, 0, 24))
		m.LocalCMResponseTimeout = uint8(get(d, 47, 0, 5))
		m.RetryCount = uint8(get(d, 47, 5, 3))
		m.PKey = be.Uint16(d[48:])
		m.PathMTU = uint8(get(d, 50, 0, 4))
		m.RNRRetryCount = uint8(get(d, 50, 5, 3))
		m.MaxCMRetries = uint8(get(d, 51, 0, 4))
		m.SRQ = get(d, 51, 4, 1) == 1
		m.PrimaryLocalLID, m.PrimaryRemoteLID = be.Uint16(d[52:]), be.Uint16(d[54:])
		copy(m.PrimaryLocalGID[:], d[56:72])
		copy(m.PrimaryRemoteGID[:], d[72:88])
		m.FlowLabel = uint32(get(d, 88, 0, 20))
		m.PacketRate = uint8(get(d, 91, 2, 6))
		m.TrafficClass, m.HopLimit = d[92], d[93]
		m.SL = uint8(get(d, 94, 0, 4))
		m.SubnetLocal = get(d, 94, 4, 1) == 1
		m.LocalAckTimeout = uint8(get(d, 95, 0, 5))
	case AttrMRA:
		m.RemoteCommID = be.Uint32(d[4:])
		m.MsgTarget = uint8(get(d, 8, 0, 2))
		m.ServiceTimeout = uint8(get(d, 9, 0, 5))
	case AttrREJ:
		m.RemoteCommID = be.Uint32(d[4:])
		m.MsgTarget = uint8(get(d, 8, 0, 2))
		m.Reason = be.Uint16(d[10:])
	case AttrREP:
		m.RemoteCommID = be.Uint32(d[4:])
		m.LocalQKey = be.Uint32(d[8:])
		m.LocalQPN = uint32(get(d, 12, 0, 24))
		m.StartingPSN = uint32(get(d, 20, 0, 24))
		m.ResponderResources, m.InitiatorDepth = d[24], d[25]
		m.TargetAckDelay = uint8(get(d, 26, 0, 5))
		m.FlowControl = get(d, 26, 7, 1) == 1
		m.RNRRetryCount = uint8(get(d, 27, 0, 3))
		m.SRQ = get(d, 27, 3, 1) == 1
		m.LocalCAGUID = be.Uint64(d[28:])
	case AttrRTU, AttrDREP:
		m.RemoteCommID = be.Uint32(d[4:])
	case AttrDREQ:
		m.RemoteCommID = be.Uint32(d[4:])
		m.LocalQPN = uint32(get(d, 8, 0, 24))
	case AttrSIDRREQ:
		m.PKey = be.Uint16(d[4:])
		m.ServiceID = be.Uint64(d[8:])
	case AttrSIDRREP:
		m.Status = d[4]
		m.LocalQPN = uint32(get(d, 8, 0, 24))
		m.ServiceID = be.Uint64(d[12:])
		m.LocalQKey = be.Uint32(d[20:])
	}
}

// check refuses the values of a decoded message a receiver cannot act on.
func (m *Msg) check() error {
	switch m.Attr {
	case AttrREQ:
		if m.Transport != TransportRC && m.Transport != TransportUC {
			return fmt.Errorf("cm: REQ transport %d is neither RC nor UC", m.Transport)
		}
		if m.PathMTU < 1 || m.PathMTU > 5 {
			return fmt.Errorf("cm: REQ path MTU code %d is not an enum ibv_mtu value", m.PathMTU)
		}
	case AttrMRA, AttrREJ:
		if m.MsgTarget > MsgOther {
			return fmt.Errorf("cm: %v names message %d", m.Attr, m.MsgTarget)
		}
	}
	return nil
}
