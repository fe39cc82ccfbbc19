package verbs

// SendFlags are the send_flags of a send work request (enum ibv_send_flags).
type SendFlags uint32

// The send flags, with verbs.h values.
const (
	SendFence     SendFlags = 1 << 0 // IBV_SEND_FENCE: wait for earlier READs and atomics (RC only)
	SendSignaled  SendFlags = 1 << 1 // IBV_SEND_SIGNALED: produce a completion when sq_sig_all is 0
	SendSolicited SendFlags = 1 << 2 // IBV_SEND_SOLICITED: set the solicited-event bit
	SendInline    SendFlags = 1 << 3 // IBV_SEND_INLINE: copy the payload at post time
	SendIPCSum    SendFlags = 1 << 4 // IBV_SEND_IP_CSUM: checksum offload (UD/raw, not simulated by verbsim)
)

// String renders the flags as "SIGNALED|INLINE", or "0".
func (f SendFlags) String() string {
	if f == 0 {
		return "0"
	}
	names := []struct {
		f SendFlags
		s string
	}{{SendFence, "FENCE"}, {SendSignaled, "SIGNALED"}, {SendSolicited, "SOLICITED"}, {SendInline, "INLINE"}, {SendIPCSum, "IP_CSUM"}}
	s := ""
	for _, n := range names {
		if f&n.f != 0 {
			if s != "" {
				s += "|"
			}
			s += n.s
			f &^= n.f
		}
	}
	if f != 0 {
		if s != "" {
			s += "|"
		}
		s += "0x" + hex(uint64(f))
	}
	return s
}

func hex(v uint64) string {
	const digits = "0123456789abcdef"
	if v == 0 {
		return "0"
	}
	var b [16]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = digits[v&15]
		v >>= 4
	}
	return string(b[i:])
}

// SGE is one scatter/gather element (struct ibv_sge): Length bytes at the
// simulated virtual address Addr, inside the memory region whose local key is
// LKey.
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// SendWR is a send work request (struct ibv_send_wr). The fields after Flags
// are read according to Opcode, as the unions of the C struct are:
//
//   - RemoteAddr and RKey: RDMA READ/WRITE and atomics (wr.rdma, wr.atomic).
//   - CompareAdd and Swap: atomics.
//   - Imm: the immediate data of *_WITH_IMM opcodes (opaque, network byte
//     order), or the rkey to invalidate for SEND_WITH_INV.
//   - AH, RemoteQPN, RemoteQKey: UD destinations (wr.ud). AH is an
//     address handle of the QP's PD and implementation (PD.CreateAH).
//   - MW, RKey and Bind: BIND_MW (wr.bind_mw): the memory window
//     (PD.AllocMW), the key it is to have once bound (only the low byte
//     counts: the upper 24 bits stay the window's index, MW-05), and
//     where it is bound.
//   - Imm: for LOCAL_INV, the rkey to invalidate (invalidate_rkey).
//   - RemoteSRQN: on an XRC_SEND QP, every request's XRC SRQ number at the
//     target (qp_type.xrc.remote_srqn, the number ibv_get_srq_num gave).
//
// PostSend copies the request and its scatter/gather list, so the caller may
// reuse both as soon as PostSend returns. The memory the elements point at is
// another matter: it is read when the request executes (QP-36), except for
// SendInline requests, whose payload is copied during PostSend (QP-35).
type SendWR struct {
	WRID   uint64
	SGList []SGE
	Opcode WROpcode
	Flags  SendFlags

	Imm        uint32
	RemoteAddr uint64
	RKey       uint32
	CompareAdd uint64
	Swap       uint64
	AH         AH
	RemoteQPN  uint32
	RemoteQKey uint32
	MW         MW
	Bind       MWBindInfo
	RemoteSRQN uint32
}

// MWBindInfo is struct ibv_mw_bind_info: the MR (PD.RegMR) a memory
// window is bound to, the window's first address and length in the MR's
// address space, and the remote rights the window grants (REMOTE_READ,
// REMOTE_WRITE, REMOTE_ATOMIC, and ZERO_BASED to address the window from
// 0). A zero Length unbinds a type 1 window.
type MWBindInfo struct {
	MR     MR
	Addr   uint64
	Length uint64
	Access AccessFlags
}

// RecvWR is a receive work request (struct ibv_recv_wr).
type RecvWR struct {
	WRID   uint64
	SGList []SGE
}

// SGEListLength returns the total length of an SGE list.
func SGEListLength(sges []SGE) uint64 {
	var n uint64
	for _, s := range sges {
		n += uint64(s.Length)
	}
	return n
}
