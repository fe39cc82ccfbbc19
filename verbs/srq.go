package verbs

// SRQAttr holds the attributes of a shared receive queue (struct
// ibv_srq_attr).
type SRQAttr struct {
	MaxWR    uint32 // max_wr: the capacity
	MaxSGE   uint32 // max_sge: SGEs per receive WR
	SRQLimit uint32 // srq_limit: the armed limit, 0 when not armed
}

// SRQAttrMask selects the attributes ibv_modify_srq changes (enum
// ibv_srq_attr_mask).
type SRQAttrMask uint32

// The SRQ attribute mask bits, with verbs.h values.
const (
	SRQMaxWR SRQAttrMask = 1 << 0 // IBV_SRQ_MAX_WR: resize (SRQ-07)
	SRQLimit SRQAttrMask = 1 << 1 // IBV_SRQ_LIMIT: arm the limit event (SRQ-04)
)
