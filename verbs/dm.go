package verbs

// AllocDMAttr holds the arguments of ibv_alloc_dm (struct
// ibv_alloc_dm_attr).
type AllocDMAttr struct {
	Length      uint64 // length: bytes of device memory wanted (DM-01)
	LogAlignReq uint32 // log_align_req: the start's alignment, as a power of 2 (DM-01)
	CompMask    uint32 // comp_mask: no bit is defined; any is refused (DM-01)
}

// DM is a block of device memory (struct ibv_dm): memory on the adapter
// that the host reaches only by copying (DM-04) and work requests reach
// through an MR that PD's DMMRRegisterer makes on it (DM-06).
type DM interface {
	// MemcpyTo is ibv_memcpy_to_dm: copies src into the device memory at
	// offset. It returns an errno (DM-04).
	MemcpyTo(offset uint64, src []byte) error
	// MemcpyFrom is ibv_memcpy_from_dm: fills dst from the device memory
	// at offset. It returns an errno (DM-04).
	MemcpyFrom(dst []byte, offset uint64) error
	// Free is ibv_free_dm: EBUSY while an MR is registered on the memory
	// (DM-05).
	Free() error
}

// DMAllocator is an optional capability of a Context: ibv_alloc_dm. A
// device without device memory reports max_dm_size 0 and its AllocDM fails
// with EOPNOTSUPP (DM-02).
type DMAllocator interface {
	AllocDM(attr AllocDMAttr) (DM, error)
}

// DMMRRegisterer is an optional capability of a PD: ibv_reg_dm_mr, an MR
// over length bytes of dm from offset. access must hold AccessZeroBased:
// work requests address the MR from 0 (DM-06).
type DMMRRegisterer interface {
	RegDMMR(dm DM, offset, length uint64, access AccessFlags) (MR, error)
}
