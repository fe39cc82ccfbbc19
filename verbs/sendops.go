package verbs

// QPSendOps is send_ops_flags of struct ibv_qp_init_attr_ex (enum
// ibv_qp_create_send_ops_flags): the operations the builder of a QP may
// start.
type QPSendOps uint64

// The send_ops_flags bits, with verbs.h values.
const (
	QPExWithRDMAWrite      QPSendOps = 1 << 0  // IBV_QP_EX_WITH_RDMA_WRITE
	QPExWithRDMAWriteImm   QPSendOps = 1 << 1  // IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM
	QPExWithSend           QPSendOps = 1 << 2  // IBV_QP_EX_WITH_SEND
	QPExWithSendImm        QPSendOps = 1 << 3  // IBV_QP_EX_WITH_SEND_WITH_IMM
	QPExWithRDMARead       QPSendOps = 1 << 4  // IBV_QP_EX_WITH_RDMA_READ
	QPExWithAtomicCmpSwp   QPSendOps = 1 << 5  // IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP
	QPExWithAtomicFetchAdd QPSendOps = 1 << 6  // IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD
	QPExWithLocalInv       QPSendOps = 1 << 7  // IBV_QP_EX_WITH_LOCAL_INV
	QPExWithBindMW         QPSendOps = 1 << 8  // IBV_QP_EX_WITH_BIND_MW
	QPExWithSendInv        QPSendOps = 1 << 9  // IBV_QP_EX_WITH_SEND_WITH_INV
	QPExWithTSO            QPSendOps = 1 << 10 // IBV_QP_EX_WITH_TSO (not simulated)
	QPExWithAtomicWrite    QPSendOps = 1 << 12 // IBV_QP_EX_WITH_ATOMIC_WRITE (RC, XRC_SEND; XFER-33)
)

// String renders the bits as "SEND|RDMA_READ", or "0".
func (o QPSendOps) String() string {
	if o == 0 {
		return "0"
	}
	names := [...]string{"RDMA_WRITE", "RDMA_WRITE_WITH_IMM", "SEND", "SEND_WITH_IMM", "RDMA_READ",
		"ATOMIC_CMP_AND_SWP", "ATOMIC_FETCH_AND_ADD", "LOCAL_INV", "BIND_MW", "SEND_WITH_INV", "TSO", "", "ATOMIC_WRITE"}
	s := ""
	for i, n := range names {
		if n == "" || o&(1<<i) == 0 {
			continue
		}
		if s != "" {
			s += "|"
		}
		s += n
		o &^= 1 << i
	}
	if o != 0 {
		if s != "" {
			s += "|"
		}
		s += "0x" + hex(uint64(o))
	}
	return s
}

// The send_ops_flags each transport may have.
const (
	sendOpsAll = QPExWithRDMAWrite | QPExWithRDMAWriteImm | QPExWithSend | QPExWithSendImm | QPExWithRDMARead | QPExWithAtomicCmpSwp | QPExWithAtomicFetchAdd | QPExWithLocalInv | QPExWithBindMW | QPExWithSendInv | QPExWithAtomicWrite
	sendOpsUC  = QPExWithRDMAWrite | QPExWithRDMAWriteImm | QPExWithSend | QPExWithSendImm | QPExWithLocalInv | QPExWithBindMW | QPExWithSendInv
	sendOpsUD  = QPExWithSend | QPExWithSendImm
)

// SupportedSendOps returns the send_ops_flags a QP of type t may be
// created with under readings r (QPX-01): the operations of the transport
// matrix of QP-33 that verbsim executes. RC and XRC_SEND have all eleven
// (ATOMIC_WRITE among them, XFER-33); UC the writes, sends, LOCAL_INV,
// BIND_MW and SEND_WITH_INV; UD SEND and SEND_WITH_IMM. Under
// r.SendOpsRXE the UC set lacks LOCAL_INV, as rxe's does; r.NoImmData
// takes away the *_WITH_IMM operations (QP-43), r.NoAtomics the atomics
// (QP-42), r.NoMW BIND_MW and LOCAL_INV (MW-08). TSO is never supported.
func SupportedSendOps(t QPType, r Readings) QPSendOps {
	var ops QPSendOps
	switch t {
	case QPTypeRC, QPTypeXRCSend:
		ops = sendOpsAll
	case QPTypeUC:
		ops = sendOpsUC
		if r.SendOpsRXE {
			ops &^= QPExWithLocalInv
		}
	case QPTypeUD:
		ops = sendOpsUD
	}
	if r.NoImmData {
		ops &^= QPExWithRDMAWriteImm | QPExWithSendImm
	}
	if r.NoAtomics {
		ops &^= QPExWithAtomicCmpSwp | QPExWithAtomicFetchAdd | QPExWithAtomicWrite
	}
	if r.NoMW {
		ops &^= QPExWithLocalInv | QPExWithBindMW
	}
	return ops
}
