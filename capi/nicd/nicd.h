/*
 * nicd.h: the protocol between verbsim's C-only libibverbs.so.1 and the
 * per-host NIC daemon, `verbsim nicd` (internal/nicd; docs/daemon.md).
 *
 * A process talks to the daemon over AF_UNIX SOCK_SEQPACKET connections to
 * the fabric's socket: one message per request, one per reply, in host byte
 * order. A request is a struct nicd_req and its body; a reply a struct
 * nicd_rep and its body. Bodies are the structs of libibverbs' ABI
 * (struct ibv_qp_attr, ...) and the records below; the daemon reads them
 * through internal/cabi's mirrors, and TestProtoLayouts checks every one.
 * File descriptors travel as SCM_RIGHTS beside the requests that say so.
 */
#ifndef VERBSIM_NICD_H
#define VERBSIM_NICD_H

#include <stdint.h>
#include <infiniband/verbs.h>

#define NICD_VERSION 1
/* The longest message either way, header included. */
#define NICD_MAX_MSG (256 * 1024)

struct nicd_req {
	uint32_t op;  /* enum nicd_op */
	uint32_t len; /* bytes of body after the header */
	uint64_t obj; /* the object the request acts on: a handle, 0 for none */
	uint64_t a;   /* scalar arguments, as each op says */
	uint64_t b;
};

struct nicd_rep {
	int32_t err;  /* 0, or the errno the verb returns */
	uint32_t len; /* bytes of body after the header */
	uint64_t v;   /* scalar results, as each op says */
	uint64_t w;
};

/* The requests. "v =" and "w =" name the reply's scalars. */
enum nicd_op {
	NICD_HELLO = 1,           /* body struct nicd_hello; v = session, w = token; fd out: the daemon's struct nicd_status */
	NICD_JOIN = 2,            /* a = session, b = token: another connection of the session */
	NICD_DEVICES = 3,         /* v = count; body out struct nicd_devinfo[count] */
	NICD_OPEN = 4,            /* a = device index; fds: async reader, writer; v = handle, w = num_comp_vectors */
	NICD_CLOSE = 5,           /* obj context */
	NICD_QUERY_DEVICE = 6,    /* obj context; body out struct ibv_device_attr */
	NICD_QUERY_DEVICE_EX = 7, /* obj context; body out struct ibv_device_attr_ex */
	NICD_QUERY_PORT = 8,      /* obj context, a = port; body out struct ibv_port_attr */
	NICD_QUERY_GID = 9,       /* obj context, a = port (| 1 << 32: ibv_query_gid_ex), b = index; body out 16 bytes; v = gid type */
	NICD_QUERY_PKEY = 10,     /* obj context, a = port, b = index; v = P_Key */
	NICD_GET_ASYNC = 11,      /* obj context, a = sync; v = type | port << 32, w = cptr */
	NICD_ACK_ASYNC = 12,      /* obj context, a = type | port << 32, b = cptr */
	NICD_ACK_PORT_EVENT = 13, /* a = type, b = port */
	NICD_ALLOC_PD = 14,       /* obj context; v = handle, w = pd->handle */
	NICD_DEALLOC_PD = 15,     /* obj pd */
	NICD_REG_MR = 16,         /* obj pd; body struct nicd_mr; v = handle, w = lkey | rkey << 32 */
	NICD_ADVISE_MR = 17,      /* obj pd, a = advice, b = flags; body struct ibv_sge[] */
	NICD_DEREG_MR = 18,       /* obj mr */
	NICD_REREG_MR = 19,       /* obj mr; body struct nicd_rereg; v = lkey | rkey << 32; failing, w = the IBV_REREG_MR_ERR_* */
	NICD_ALLOC_MW = 20,       /* obj pd, a = type; v = handle, w = rkey */
	NICD_DEALLOC_MW = 21,     /* obj mw */
	NICD_BIND_MW = 22,        /* body struct nicd_bind; v = rkey */
	NICD_CREATE_AH = 23,      /* obj pd; body struct ibv_ah_attr; v = handle */
	NICD_DESTROY_AH = 24,     /* obj ah */
	NICD_CREATE_CHANNEL = 25, /* obj context; fds: reader, writer; v = handle */
	NICD_DESTROY_CHANNEL = 26,/* obj channel */
	NICD_CHAN_GET = 27,       /* obj channel, a = sync; v = cptr */
	NICD_CREATE_CQ = 28,      /* obj context; body struct nicd_cq; v = handle, w = real cqe */
	NICD_DESTROY_CQ = 29,     /* obj cq */
	NICD_POLL_CQ = 30,        /* obj cq, a = n; v = count; body out struct ibv_wc[count] */
	NICD_REQ_NOTIFY = 31,     /* obj cq, a = solicited */
	NICD_ACK_CQ = 32,         /* obj cq, a = n */
	NICD_RESIZE_CQ = 33,      /* obj cq, a = cqe; v = real cqe */
	NICD_CQ_POLL_EX = 34,     /* obj cq, a = 0 start, 1 next, 2 end; body out struct nicd_wcx */
	NICD_CREATE_QP = 35,      /* obj pd; body struct nicd_qp_init; v = handle, w = qp_num; body out struct ibv_qp_cap */
	NICD_DESTROY_QP = 36,     /* obj qp */
	NICD_MODIFY_QP = 37,      /* obj qp, a = mask; body struct ibv_qp_attr */
	NICD_QUERY_QP = 38,       /* obj qp, a = mask; body out struct nicd_qp_query */
	NICD_POST_SEND = 39,      /* obj qp, a = n; body n x (struct nicd_swr, struct ibv_sge[num_sge], inline_len bytes padded to 8); v = posted */
	NICD_POST_RECV = 40,      /* obj qp, a = n; body n x (struct nicd_rwr, struct ibv_sge[num_sge]); v = posted */
	NICD_WR_BATCH = 41,       /* obj qp, a = count; body count x (struct nicd_wr_op, len bytes padded to 8): one ibv_wr_start .. ibv_wr_complete */
	NICD_CREATE_SRQ = 42,     /* obj pd; body struct nicd_srq; v = handle; body out struct ibv_srq_attr */
	NICD_MODIFY_SRQ = 43,     /* obj srq, a = mask; body struct ibv_srq_attr */
	NICD_QUERY_SRQ = 44,      /* obj srq; body out struct ibv_srq_attr */
	NICD_DESTROY_SRQ = 45,    /* obj srq */
	NICD_POST_SRQ_RECV = 46,  /* obj srq, a = n; body as NICD_POST_RECV; v = posted */
	NICD_OPEN_XRCD = 47,      /* obj context; body struct nicd_xrcd; v = handle */
	NICD_CLOSE_XRCD = 48,     /* obj xrcd */
	NICD_CREATE_SRQ_EX = 49,  /* obj context; body struct nicd_srq; v = handle; body out struct ibv_srq_attr */
	NICD_GET_SRQ_NUM = 50,    /* obj srq; v = srq_num */
	NICD_CREATE_XRC_RECV_QP = 51, /* obj xrcd; body struct nicd_qp_init; v = handle, w = qp_num; body out struct ibv_qp_cap */
	NICD_ALLOC_DM = 52,       /* obj context, a = length, b = log_align | comp_mask << 32; v = handle */
	NICD_FREE_DM = 53,        /* obj dm */
	NICD_MEMCPY_DM = 54,      /* obj dm, a = offset, b = length | to_dm << 63; body the bytes (to) or body out (from) */
	NICD_REG_DM_MR = 55,      /* obj pd; body struct nicd_dm_mr; v = handle, w = lkey | rkey << 32 */
	NICD_DIE_AFTER = 56,      /* a = n: VERBSIM_DIE_AFTER, the daemon kills the process (SIGKILL) at the n-th packet to its QPs, dropping it and every later one */
	NICD_CQ_RING = 57,        /* obj cq; fds: a sealed memfd of a struct nicd_cq_ring with a = size entries: the CQ's completions from now on */
	NICD_MCAST = 58,          /* obj qp, a = lid, b = 1 attach, 0 detach; body the group's 16-byte GID */
};

/* NICD_HELLO: the daemon reads magic at address probe of the process
 * (process_vm_readv) to prove it can reach the program's memory. */
struct nicd_hello {
	uint32_t version; /* NICD_VERSION */
	uint32_t pid;
	uint64_t probe;
	uint8_t magic[16];
	char fabric[72]; /* the fabric name the process asks for */
};

/* The daemon's status, in a memfd it shares with every program (NICD_HELLO
 * passes it): busy counts the requests sent and not yet answered (the
 * library adds one as it sends, the daemon takes it off as it replies), for
 * which a program spinning on an empty CQ lets the daemon run
 * (sched_yield) rather than compete with it for a CPU; with none it makes
 * no system call. */
struct nicd_status {
	uint32_t busy;
	uint32_t pad;
	uint64_t served; /* requests served so far */
};

struct nicd_devinfo {
	char name[64];
	uint64_t guid; /* node GUID, host order */
};

struct nicd_mr {
	uint64_t addr;
	uint64_t length;
	uint64_t iova;
	uint32_t access;
	uint32_t pad;
};

struct nicd_rereg {
	uint64_t pd; /* 0 without IBV_REREG_MR_CHANGE_PD */
	uint64_t addr;
	uint64_t length;
	int32_t flags;
	int32_t access;
};

struct nicd_bind {
	uint64_t qp;
	uint64_t mw;
	uint64_t wr_id;
	uint64_t mr; /* 0: unbind */
	uint64_t addr;
	uint64_t length;
	uint32_t flags;
	uint32_t access;
};

struct nicd_cq {
	int32_t cqe;
	int32_t vector;
	uint64_t channel; /* 0 for none */
	uint64_t wc_flags;
	uint32_t comp_mask;
	uint32_t flags;
	uint64_t cptr; /* the program's struct ibv_cq, named in events */
	uint32_t ex;   /* 1: ibv_create_cq_ex, which a provider may lack (CQX-11); 0: ibv_create_cq */
	uint32_t pad;
};

/* NICD_CQ_POLL_EX: the completion the iterator stands on. */
struct nicd_wcx {
	struct ibv_wc wc;
	uint64_t ts;
	uint64_t wallclock;
};

struct nicd_qp_init {
	uint64_t send_cq;
	uint64_t recv_cq;
	uint64_t srq;
	struct ibv_qp_cap cap;
	uint32_t qp_type;
	int32_t sq_sig_all;
	uint32_t comp_mask;
	uint64_t send_ops_flags;
	uint64_t cptr; /* the program's struct ibv_qp */
};

struct nicd_qp_query {
	struct ibv_qp_attr attr;
	struct ibv_qp_cap cap;
	uint32_t qp_type;
	int32_t sq_sig_all;
};

/* One send work request of NICD_POST_SEND. */
struct nicd_swr {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t opcode;
	uint32_t flags;
	uint32_t imm; /* imm_data, or invalidate_rkey */
	uint64_t remote_addr;
	uint32_t rkey;
	uint32_t remote_qpn;
	uint32_t remote_qkey;
	uint32_t xrc_srqn;
	uint64_t compare_add;
	uint64_t swap;
	uint64_t ah; /* UD: the AH's handle */
	uint64_t mw; /* BIND_MW: the window's and the MR's handles */
	uint64_t mr;
	uint32_t mw_access;
	uint32_t inline_len; /* IBV_SEND_INLINE: the payload's bytes, after the SGEs */
};

/* One receive work request of NICD_POST_RECV and NICD_POST_SRQ_RECV. */
struct nicd_rwr {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t pad;
};

/* One call of the work request builder (ibv_wr_*): op is a CAPI_WR_* of
 * capi.h; len bytes follow (a struct ibv_sge list for CAPI_WR_SET_SGE
 * with num = count, the data of CAPI_WR_SET_INLINE, or of each buffer
 * of an inline list, one after the other, with num = count of buffers and
 * their lengths as uint64_t first). */
struct nicd_wr_op {
	int32_t op;
	uint32_t flags;
	uint64_t wr_id;
	uint32_t a32;
	uint32_t b32;
	uint64_t a64;
	uint64_t b64;
	uint64_t c64;
	uint64_t obj;
	uint32_t num;
	uint32_t len;
};

struct nicd_srq {
	struct ibv_srq_attr attr;
	uint32_t comp_mask;
	uint32_t type;
	uint64_t pd;
	uint64_t xrcd;
	uint64_t cq;
	uint64_t cptr; /* the program's struct ibv_srq */
};

struct nicd_xrcd {
	uint32_t comp_mask;
	int32_t by_file;
	uint64_t dev;
	uint64_t ino;
	int32_t oflags;
	uint32_t pad;
};

struct nicd_dm_mr {
	uint64_t dm;
	uint64_t offset;
	uint64_t length;
	uint32_t access;
	uint32_t pad;
};

/*
 * The fast path of a CQ (docs/daemon.md): its completions, mirrored by the
 * daemon into memory the program shares with it (a memfd the library
 * makes, sealed against shrinking, and passes with NICD_CQ_RING), which
 * ibv_poll_cq and the poll iterator read without a system call, as a
 * provider reads an adapter's CQ buffer. The daemon writes e[i % size] and
 * then head (release); the program reads up to head (acquire) and writes
 * tail, seen and batch, which the engine reads back whenever what is left
 * in the CQ matters (a push's room, a post's free slots, a resize, ...):
 * the engine stays the CQ. A completion the engine purged after the daemon
 * wrote it (a QP reset under ResetPurgesCQ) is marked dead and skipped.
 * A poll that finds nothing while the daemon is serving requests
 * (struct nicd_status) sleeps on wseq for at most a millisecond instead of
 * spinning, so that it does not take the CPU the daemon needs; with the
 * daemon idle it returns at once, without a system call.
 */
struct nicd_cqe {
	struct ibv_wc wc; /* the fields the CQ's wc_flags do not ask for are 0 */
	uint64_t ts;	  /* completion timestamp, HCA clock cycles */
	uint64_t wallclock; /* the same, in nanoseconds */
	uint32_t dead;	  /* purged after it was written: skipped */
	uint32_t pad;
};

struct nicd_cq_ring {
	uint64_t head;  /* completions written (daemon) */
	uint32_t size;  /* entries, a power of two (daemon) */
	uint32_t error; /* the CQ overran (CQ-23 A): a poll finding nothing is EIO (daemon) */
	uint32_t wseq;  /* bumped with every write, a futex word (daemon) */
	uint8_t pad0[44];
	uint64_t tail;  /* completions polled (program) */
	uint64_t seen;  /* completions the poll iterator reached, tail <= seen <= head (program) */
	uint32_t batch; /* an ibv_start_poll batch is open (program) */
	uint32_t waiters; /* a poll sleeps on wseq: the daemon wakes it as it writes (program) */
	uint8_t pad2[40];
	struct nicd_cqe e[]; /* at 128 */
};

#endif
