/*
 * capi.h: the objects of verbsim's drop-in libibverbs.so.1, shared by the
 * C glue (glue.c, which owns the libibverbs ABI) and the Go engine
 * (engine.go, which drives package sim). Every struct that a program sees
 * starts with the libibverbs struct it is handed as; the field after it is
 * the handle of the Go record (a runtime/cgo.Handle), so no Go pointer is
 * ever kept in C memory.
 */
#ifndef VERBSIM_CAPI_H
#define VERBSIM_CAPI_H

#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

/* A device of the list ibv_get_device_list returns. */
struct capi_device {
	struct ibv_device dev;
	int index;     /* position on the fabric */
	uint64_t guid; /* node GUID, host order */
};

/* An open device context: struct verbs_context (whose struct ibv_context
 * is its last field, with sz just before it) followed by our handle. */
struct capi_context {
	struct verbs_context vctx;
	uintptr_t h;
	/* The device's attributes as read at open, which a child of fork()
	 * is answered from (dm.c). */
	struct ibv_device_attr_ex child_attr;
};

struct capi_pd {
	struct ibv_pd pd;
	uintptr_t h;
	/* A parent domain (ibv_alloc_parent_domain) is a PD of its own for
	 * the program and the engine's PD of the protection domain it wraps
	 * (h is that PD's handle): base is the wrapped PD, NULL for a plain
	 * PD; parents counts a plain PD's parent domains. */
	struct capi_pd *base;
	int parents;
	void *pd_context;
};

struct capi_mr {
	struct ibv_mr mr;
	uintptr_t h;
};

struct capi_mw {
	struct ibv_mw mw;
	uintptr_t h;
};

struct capi_ah {
	struct ibv_ah ah;
	uintptr_t h;
};

struct capi_channel {
	struct ibv_comp_channel ch;
	uintptr_t h;
};

/* One work completion with the union of struct ibv_wc flattened, so Go can
 * write it. glue.c checks that its layout is struct ibv_wc's. */
struct capi_wc {
	uint64_t wr_id;
	uint32_t status;
	uint32_t opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm_data;
	uint32_t qp_num;
	uint32_t src_qp;
	uint32_t wc_flags;
	uint16_t pkey_index;
	uint16_t slid;
	uint8_t sl;
	uint8_t dlid_path_bits;
};

/* Every CQ is an extended CQ; cur caches the completion the poll iterator
 * stands on, so the read_* functions need no call into Go. */
struct capi_cq {
	struct ibv_cq_ex cq;
	uintptr_t h;
	struct capi_wc cur;
	uint64_t ts;
	uint64_t wallclock;
	int polling; /* between a successful start_poll and end_poll */
	/* The C-only library's fast path: the ring the CQ's completions are
	 * polled from (nicd/ring.c); NULL in the in-process library. */
	struct nicd_cq_fast *fast;
};

/* Every QP is an extended QP with every wr_* slot set. wr_err is an error
 * a builder the simulator lacks left for wr_complete. */
struct capi_qp {
	struct ibv_qp_ex qpx;
	uintptr_t h;
	int ex;     /* created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS */
	int wr_err; /* errno wr_complete reports, 0 if none */
};

struct capi_srq {
	struct ibv_srq srq;
	uintptr_t h;
};

/* A send work request with the unions of struct ibv_send_wr resolved. */
struct capi_swr {
	uint64_t wr_id;
	struct ibv_sge *sg_list;
	uint32_t num_sge;
	uint32_t opcode;
	uint32_t flags;
	uint32_t imm; /* imm_data, or invalidate_rkey */
	uint64_t remote_addr;
	uint32_t rkey;
	uint32_t remote_qpn;
	uint32_t remote_qkey;
	uint32_t xrc_srqn; /* qp_type.xrc.remote_srqn, XRC_SEND only */
	uint64_t compare_add;
	uint64_t swap;
	uintptr_t ah; /* handle of the AH, UD only */
	/* BIND_MW (wr.bind_mw): the window and the MR (handles, 0 for none),
	 * the rights; rkey is the window's new rkey, remote_addr and
	 * compare_add the address and length of the range bound. */
	uintptr_t mw;
	uintptr_t mr;
	uint32_t mw_access;
};

/* A receive work request. */
struct capi_rwr {
	uint64_t wr_id;
	struct ibv_sge *sg_list;
	int32_t num_sge;
};

/* The arguments of create_qp that Go reads. */
struct capi_qp_init {
	uintptr_t send_cq;
	uintptr_t recv_cq;
	uintptr_t srq;
	struct ibv_qp_cap cap;
	uint32_t qp_type;
	int32_t sq_sig_all;
	uint32_t comp_mask;
	uint64_t send_ops_flags;
};

/* Builder operations passed to vs_wr. */
enum {
	CAPI_WR_START = 1,
	CAPI_WR_COMPLETE,
	CAPI_WR_ABORT,
	CAPI_WR_SEND,
	CAPI_WR_SEND_IMM,
	CAPI_WR_SEND_INV,
	CAPI_WR_RDMA_WRITE,
	CAPI_WR_RDMA_WRITE_IMM,
	CAPI_WR_RDMA_READ,
	CAPI_WR_ATOMIC_CMP_SWP,
	CAPI_WR_ATOMIC_FETCH_ADD,
	CAPI_WR_LOCAL_INV,
	CAPI_WR_SET_SGE,
	CAPI_WR_SET_UD_ADDR,
	CAPI_WR_SET_INLINE,
	CAPI_WR_SET_XRC_SRQN,
	CAPI_WR_BIND_MW,
	CAPI_WR_ATOMIC_WRITE,
};

/* glue.c: whether this is a child of fork() (then errno is EOPNOTSUPP). */
int capi_forked(void);
int capi_in_child(void);
/* glue.c: sets the fields every new QP's ibv_qp starts with (context,
 * qp_context, handle and number, RESET, type, mutex and cond) and returns it. */
struct ibv_qp *capi_qp_base_init(struct ibv_qp *b, struct ibv_context *ic, const struct ibv_qp_init_attr_ex *a,
				 uint32_t qpn);
/* glue.c: fills the ibv_mr of a registration the engine made and returns it. */
struct ibv_mr *capi_mr_fill(struct capi_mr *m, struct ibv_pd *pd, void *addr, size_t length, uint32_t lkey,
			    uint32_t rkey);

/* check.c: the sanitizer's backtraces (VERBSIM_CHECK). */
extern int capi_checking;
void capi_bt_capture(void);
int capi_bt_get(uintptr_t *out, int max);
void capi_check_on(void);
int capi_bt_where(uintptr_t pc, const char **file, uintptr_t *base, const char **sym, uintptr_t *saddr);
uintptr_t capi_bt_self(void);
uintptr_t capi_cq_cookie(uintptr_t cq);

/* mw.c */
int capi_bind_wr(struct capi_swr *s, const struct ibv_send_wr *wr);

/* dm.c */
void capi_dm_ops(struct capi_context *c);
int capi_child_query_device_ex(struct capi_context *c, const struct ibv_query_device_ex_input *in,
			       struct ibv_device_attr_ex *attr, size_t len);

/* xrc.c */
void capi_xrc_ops(struct verbs_context *v);
struct ibv_qp *capi_create_xrc_recv_qp(struct ibv_context *ic, struct ibv_qp_init_attr_ex *a);

#endif
