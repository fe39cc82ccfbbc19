/* C helpers of package cverbs: the static inline verbs of verbs.h, and
 * flat descriptions of work requests that Go fills without touching the
 * unions of struct ibv_send_wr. */
#ifndef CVERBS_H
#define CVERBS_H

#include <stdint.h>
#include <stdlib.h>
#include <infiniband/verbs.h>

/* cv_send is one send work request as Go describes it; cv_post_send turns
 * an array of them into a chain of struct ibv_send_wr. */
typedef struct {
	uint64_t wr_id;
	uint32_t opcode, flags, imm;
	int num_sge, sge_off;
	uint64_t remote_addr;
	uint32_t rkey;
	uint64_t compare_add, swap;
	struct ibv_ah *ah;
	uint32_t remote_qpn, remote_qkey;
	struct ibv_mw *mw;
	struct ibv_mr *bind_mr;
	uint64_t bind_addr, bind_length;
	uint32_t bind_access;
	uint32_t remote_srqn;
} cv_send;

/* cv_recv is one receive work request. */
typedef struct {
	uint64_t wr_id;
	int num_sge, sge_off;
} cv_recv;

int cv_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *a);
int cv_post_send(struct ibv_qp *qp, cv_send *f, int n, struct ibv_sge *sges, struct ibv_send_wr *wrs, int *bad);
int cv_post_recv(struct ibv_qp *qp, cv_recv *f, int n, struct ibv_sge *sges, struct ibv_recv_wr *wrs, int *bad);
int cv_post_srq_recv(struct ibv_srq *srq, cv_recv *f, int n, struct ibv_sge *sges, struct ibv_recv_wr *wrs, int *bad);
int cv_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int cv_req_notify_cq(struct ibv_cq *cq, int solicited);
struct ibv_mw *cv_alloc_mw(struct ibv_pd *pd, int type);
int cv_dealloc_mw(struct ibv_mw *mw);
int cv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, uint64_t wr_id, uint32_t flags,
	struct ibv_mr *mr, uint64_t addr, uint64_t length, uint32_t access);
struct ibv_device *cv_device(struct ibv_device **l, int i);
void cv_set_ah_gid(struct ibv_ah_attr *a, const uint8_t *gid);
void cv_get_ah_gid(const struct ibv_ah_attr *a, uint8_t *gid);
void cv_gid_raw(const union ibv_gid *g, uint8_t *out);
void *cv_event_element(struct ibv_async_event *ev, int *port);



struct ibv_mr *cv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access);
int cv_advise_mr(struct ibv_pd *pd, uint32_t advice, uint32_t flags, struct ibv_sge *sgl, uint32_t n);
int cv_set_nonblock_fd(int fd);
int cv_wait(int fd, int wake);
int cv_wake(int fd);
struct ibv_cq_ex *cv_create_cq_ex(struct ibv_context *c, uint32_t cqe, struct ibv_comp_channel *ch,
	uint32_t vector, uint64_t wc_flags, uint32_t comp_mask, uint32_t flags);
int cv_start_poll(struct ibv_cq_ex *cq);
int cv_next_poll(struct ibv_cq_ex *cq);
void cv_end_poll(struct ibv_cq_ex *cq);
/* cv_read reads field f (enum cv_field) of the current completion. */
uint64_t cv_read(struct ibv_cq_ex *cq, int f);
enum cv_field {
	CV_OPCODE, CV_VENDOR_ERR, CV_WC_FLAGS, CV_BYTE_LEN, CV_IMM, CV_INV_RKEY, CV_QP_NUM,
	CV_SRC_QP, CV_SLID, CV_SL, CV_DLID_PATH_BITS, CV_TS, CV_WALLCLOCK,
};
int cv_query_device_ex(struct ibv_context *c, uint32_t comp_mask, struct ibv_device_attr_ex *a);
int cv_query_gid_ex(struct ibv_context *c, uint32_t port, uint32_t index, struct ibv_gid_entry *e, uint32_t flags);
long cv_query_gid_table(struct ibv_context *c, struct ibv_gid_entry *e, size_t max, uint32_t flags);
struct ibv_qp *cv_create_qp_ex(struct ibv_context *c, struct ibv_qp_init_attr *ia, uint32_t comp_mask,
	struct ibv_pd *pd, struct ibv_xrcd *xrcd, uint64_t send_ops, struct ibv_qp_cap *cap_out);
/* cv_wr is one ibv_wr_* call: op (enum cv_wr_op) with its arguments. */
enum cv_wr_op {
	CV_WR_START, CV_WR_COMPLETE, CV_WR_ABORT, CV_WR_SEND, CV_WR_SEND_IMM, CV_WR_SEND_INV,
	CV_WR_WRITE, CV_WR_WRITE_IMM, CV_WR_READ, CV_WR_CMP_SWP, CV_WR_FETCH_ADD, CV_WR_LOCAL_INV,
	CV_WR_BIND_MW, CV_WR_UD_ADDR, CV_WR_SGE, CV_WR_SGE_LIST, CV_WR_INLINE, CV_WR_INLINE_LIST,
	CV_WR_XRC_SRQN, CV_WR_ATOMIC_WRITE,
};
int cv_wr(struct ibv_qp_ex *q, int op, uint32_t a32, uint64_t a64, uint64_t b64, uint64_t c64, void *p, void *p2, uint32_t b32);
void cv_wr_set(struct ibv_qp_ex *q, uint64_t wr_id, unsigned int flags);
struct ibv_xrcd *cv_open_xrcd(struct ibv_context *c, uint32_t comp_mask, int fd, int oflags);
int cv_close_xrcd(struct ibv_xrcd *x);
struct ibv_srq *cv_create_srq_ex(struct ibv_context *c, struct ibv_srq_attr *attr, uint32_t comp_mask,
	uint32_t type, struct ibv_pd *pd, struct ibv_xrcd *xrcd, struct ibv_cq *cq);
int cv_get_srq_num(struct ibv_srq *s, uint32_t *num);
/* The test hooks of verbsim's test-mode library (capi/verbsim_test.h,
 * version node VERBSIM_TEST_1), found with dlvsym by cv_sim_hooks (1 when
 * all are there); cv_sim_limits has the layout of struct
 * verbsim_test_limits. */
typedef struct {
	int max_cq, max_cqe, num_comp_vectors, max_pd;
	int max_qp_wr, max_sge, max_inline;
	int max_qp_rd_atom, max_qp_init_rd_atom;
	int max_srq_wr, max_srq_sge;
	int port_max_mtu;
} cv_sim_limits;
int cv_sim_hooks(void);
int cv_sim_cq_push(struct ibv_cq *cq, const struct ibv_wc *wc, int solicited, int *overrun);
int cv_sim_cq_ref(struct ibv_cq *cq, int take);
int cv_sim_mr_ref(struct ibv_mr *mr, int take);
int cv_sim_device(struct ibv_device *like, const cv_sim_limits *l, struct ibv_device **out);
/* The hooks of version node VERBSIM_TEST_2, found by cv_sim_hooks2 (1 when
 * all are there); each is EOPNOTSUPP when missing. */
int cv_sim_hooks2(void);
int cv_sim_qp_fatal(struct ibv_qp *qp);
int cv_sim_qp_force_status(struct ibv_qp *qp, uint64_t wr_id, int recv, int status);
int cv_sim_qp_outstanding(struct ibv_qp *qp, int *send, int *recv);
int cv_sim_srq_take(struct ibv_srq *srq, uint64_t *wr_id, struct ibv_sge *sg_list, int max_sge, int *num_sge);
int cv_sim_srq_len(struct ibv_srq *srq, int *len);
int cv_sim_srq_error(struct ibv_srq *srq);
int cv_sim_channel_len(struct ibv_comp_channel *ch, int *len);
int cv_sim_port_state(struct ibv_device *dev, uint8_t port, int up);
int cv_sim_faults(struct ibv_device *dev, double drop, double duplicate, double delay);
/* The hook of VERBSIM_TEST_3, found by cv_sim_hooks3 (1 when there). */
int cv_sim_hooks3(void);
int cv_sim_receive(struct ibv_device *dev, const void *frame, size_t len);
#endif
