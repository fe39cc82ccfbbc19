#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>
#include "cverbs.h"

int cv_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *a)
{
	return ibv_query_port(c, port, a);
}

static void fill_send(struct ibv_send_wr *w, const cv_send *s, struct ibv_sge *sges, int ud)
{
	memset(w, 0, sizeof(*w));
	w->wr_id = s->wr_id;
	w->sg_list = s->num_sge ? sges + s->sge_off : NULL;
	w->num_sge = s->num_sge;
	w->opcode = s->opcode;
	w->send_flags = s->flags;
	w->imm_data = s->imm; /* also invalidate_rkey */
	if (s->opcode == IBV_WR_BIND_MW) {
		w->bind_mw.mw = s->mw;
		w->bind_mw.rkey = s->rkey;
		w->bind_mw.bind_info.mr = s->bind_mr;
		w->bind_mw.bind_info.addr = s->bind_addr;
		w->bind_mw.bind_info.length = s->bind_length;
		w->bind_mw.bind_info.mw_access_flags = s->bind_access;
	}
	if (ud) {
		w->wr.ud.ah = s->ah;
		w->wr.ud.remote_qpn = s->remote_qpn;
		w->wr.ud.remote_qkey = s->remote_qkey;
	} else if (s->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || s->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		w->wr.atomic.remote_addr = s->remote_addr;
		w->wr.atomic.rkey = s->rkey;
		w->wr.atomic.compare_add = s->compare_add;
		w->wr.atomic.swap = s->swap;
	} else {
		w->wr.rdma.remote_addr = s->remote_addr;
		w->wr.rdma.rkey = s->rkey;
	}
	w->qp_type.xrc.remote_srqn = s->remote_srqn;
}

/* The union wr of struct ibv_send_wr is read by the QP's type first (a UD
 * QP's requests carry wr.ud whatever their opcode, as UD programs fill
 * them), then by the opcode. */

int cv_post_send(struct ibv_qp *qp, cv_send *f, int n, struct ibv_sge *sges, struct ibv_send_wr *wrs, int *bad)
{
	struct ibv_send_wr *badwr = NULL;
	int i, rc;

	for (i = 0; i < n; i++) {
		fill_send(&wrs[i], &f[i], sges, qp->qp_type == IBV_QPT_UD);
		wrs[i].next = i + 1 < n ? &wrs[i + 1] : NULL;
	}
	rc = ibv_post_send(qp, n ? wrs : NULL, &badwr);
	*bad = badwr ? (int)(badwr - wrs) : n;
	return rc;
}

static void fill_recv(struct ibv_recv_wr *wrs, const cv_recv *f, int n, struct ibv_sge *sges)
{
	int i;

	for (i = 0; i < n; i++) {
		wrs[i].wr_id = f[i].wr_id;
		wrs[i].sg_list = f[i].num_sge ? sges + f[i].sge_off : NULL;
		wrs[i].num_sge = f[i].num_sge;
		wrs[i].next = i + 1 < n ? &wrs[i + 1] : NULL;
	}
}

int cv_post_recv(struct ibv_qp *qp, cv_recv *f, int n, struct ibv_sge *sges, struct ibv_recv_wr *wrs, int *bad)
{
	struct ibv_recv_wr *badwr = NULL;
	int rc;

	fill_recv(wrs, f, n, sges);
	rc = ibv_post_recv(qp, n ? wrs : NULL, &badwr);
	*bad = badwr ? (int)(badwr - wrs) : n;
	return rc;
}

int cv_post_srq_recv(struct ibv_srq *srq, cv_recv *f, int n, struct ibv_sge *sges, struct ibv_recv_wr *wrs, int *bad)
{
	struct ibv_recv_wr *badwr = NULL;
	int rc;

	fill_recv(wrs, f, n, sges);
	rc = ibv_post_srq_recv(srq, n ? wrs : NULL, &badwr);
	*bad = badwr ? (int)(badwr - wrs) : n;
	return rc;
}

int cv_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	return ibv_poll_cq(cq, n, wc);
}

int cv_req_notify_cq(struct ibv_cq *cq, int solicited)
{
	return ibv_req_notify_cq(cq, solicited);
}

struct ibv_mw *cv_alloc_mw(struct ibv_pd *pd, int type)
{
	return ibv_alloc_mw(pd, (enum ibv_mw_type)type);
}

int cv_dealloc_mw(struct ibv_mw *mw)
{
	return ibv_dealloc_mw(mw);
}

int cv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, uint64_t wr_id, uint32_t flags,
	struct ibv_mr *mr, uint64_t addr, uint64_t length, uint32_t access)
{
	struct ibv_mw_bind b;

	memset(&b, 0, sizeof(b));
	b.wr_id = wr_id;
	b.send_flags = flags;
	b.bind_info.mr = mr;
	b.bind_info.addr = addr;
	b.bind_info.length = length;
	b.bind_info.mw_access_flags = access;
	return ibv_bind_mw(qp, mw, &b);
}

struct ibv_device *cv_device(struct ibv_device **l, int i)
{
	return l[i];
}

void cv_set_ah_gid(struct ibv_ah_attr *a, const uint8_t *gid)
{
	memcpy(a->grh.dgid.raw, gid, 16);
}

void cv_get_ah_gid(const struct ibv_ah_attr *a, uint8_t *gid)
{
	memcpy(gid, a->grh.dgid.raw, 16);
}

void cv_gid_raw(const union ibv_gid *g, uint8_t *out)
{
	memcpy(out, g->raw, 16);
}

void cv_raw_gid(const uint8_t *in, union ibv_gid *g)
{
	memcpy(g->raw, in, 16);
}

/* cv_event_element returns the object an async event names, or NULL with
 * *port set for port and device events. */
void *cv_event_element(struct ibv_async_event *ev, int *port)
{
	*port = 0;
	switch (ev->event_type) {
	case IBV_EVENT_CQ_ERR:
		return ev->element.cq;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return ev->element.srq;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return ev->element.qp;
	case IBV_EVENT_WQ_FATAL:
		return ev->element.wq;
	default:
		*port = ev->element.port_num;
		return NULL;
	}
}

struct ibv_mr *cv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr(pd, addr, length, access);
}

/* ibv_advise_mr is inline in verbs.h; it returns an errno. */
int cv_advise_mr(struct ibv_pd *pd, uint32_t advice, uint32_t flags, struct ibv_sge *sgl, uint32_t n)
{
	return ibv_advise_mr(pd, (enum ibv_advise_mr_advice)advice, flags, sgl, n);
}

int cv_set_nonblock_fd(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return errno;
	if (fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return errno;
	return 0;
}

/* cv_wait waits until fd or wake is readable; it returns 1 when wake is. */
int cv_wait(int fd, int wake)
{
	struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = wake, .events = POLLIN}};
	for (;;) {
		int n = poll(p, wake >= 0 ? 2 : 1, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		return wake >= 0 && (p[1].revents & POLLIN) ? 1 : 0;
	}
}

int cv_wake(int fd)
{
	uint64_t one = 1;
	return write(fd, &one, sizeof(one)) == sizeof(one) ? 0 : errno;
}

struct ibv_cq_ex *cv_create_cq_ex(struct ibv_context *c, uint32_t cqe, struct ibv_comp_channel *ch,
	uint32_t vector, uint64_t wc_flags, uint32_t comp_mask, uint32_t flags)
{
	struct ibv_cq_init_attr_ex a;

	memset(&a, 0, sizeof(a));
	a.cqe = cqe;
	a.channel = ch;
	a.comp_vector = vector;
	a.wc_flags = wc_flags;
	a.comp_mask = comp_mask;
	a.flags = flags;
	return ibv_create_cq_ex(c, &a);
}

int cv_start_poll(struct ibv_cq_ex *cq)
{
	struct ibv_poll_cq_attr a = {0};

	return ibv_start_poll(cq, &a);
}

int cv_next_poll(struct ibv_cq_ex *cq)
{
	return ibv_next_poll(cq);
}

void cv_end_poll(struct ibv_cq_ex *cq)
{
	ibv_end_poll(cq);
}

uint64_t cv_read(struct ibv_cq_ex *cq, int f)
{
	switch (f) {
	case CV_OPCODE: return ibv_wc_read_opcode(cq);
	case CV_VENDOR_ERR: return ibv_wc_read_vendor_err(cq);
	case CV_WC_FLAGS: return ibv_wc_read_wc_flags(cq);
	case CV_BYTE_LEN: return ibv_wc_read_byte_len(cq);
	case CV_IMM: return (uint32_t)ibv_wc_read_imm_data(cq);
	case CV_INV_RKEY: return ibv_wc_read_invalidated_rkey(cq);
	case CV_QP_NUM: return ibv_wc_read_qp_num(cq);
	case CV_SRC_QP: return ibv_wc_read_src_qp(cq);
	case CV_SLID: return ibv_wc_read_slid(cq);
	case CV_SL: return ibv_wc_read_sl(cq);
	case CV_DLID_PATH_BITS: return ibv_wc_read_dlid_path_bits(cq);
	case CV_TS: return ibv_wc_read_completion_ts(cq);
	case CV_WALLCLOCK: return ibv_wc_read_completion_wallclock_ns(cq);
	}
	return 0;
}

int cv_query_device_ex(struct ibv_context *c, uint32_t comp_mask, struct ibv_device_attr_ex *a)
{
	struct ibv_query_device_ex_input in;

	memset(&in, 0, sizeof(in));
	in.comp_mask = comp_mask;
	return ibv_query_device_ex(c, comp_mask ? &in : NULL, a);
}

int cv_query_gid_ex(struct ibv_context *c, uint32_t port, uint32_t index, struct ibv_gid_entry *e, uint32_t flags)
{
	return ibv_query_gid_ex(c, port, index, e, flags);
}

long cv_query_gid_table(struct ibv_context *c, struct ibv_gid_entry *e, size_t max, uint32_t flags)
{
	return ibv_query_gid_table(c, e, max, flags);
}

struct ibv_qp *cv_create_qp_ex(struct ibv_context *c, struct ibv_qp_init_attr *ia, uint32_t comp_mask,
	struct ibv_pd *pd, struct ibv_xrcd *xrcd, uint64_t send_ops, struct ibv_qp_cap *cap_out)
{
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *qp;

	memset(&a, 0, sizeof(a));
	a.qp_context = ia->qp_context;
	a.send_cq = ia->send_cq;
	a.recv_cq = ia->recv_cq;
	a.srq = ia->srq;
	a.cap = ia->cap;
	a.qp_type = ia->qp_type;
	a.sq_sig_all = ia->sq_sig_all;
	a.comp_mask = comp_mask;
	a.pd = pd;
	a.xrcd = xrcd;
	a.send_ops_flags = send_ops;
	qp = ibv_create_qp_ex(c, &a);
	if (qp)
		*cap_out = a.cap;
	return qp;
}

void cv_wr_set(struct ibv_qp_ex *q, uint64_t wr_id, unsigned int flags)
{
	q->wr_id = wr_id;
	q->wr_flags = flags;
}

int cv_wr(struct ibv_qp_ex *q, int op, uint32_t a32, uint64_t a64, uint64_t b64, uint64_t c64, void *p, void *p2, uint32_t b32)
{
	struct ibv_mw_bind_info bi;

	switch (op) {
	case CV_WR_START: ibv_wr_start(q); break;
	case CV_WR_COMPLETE: return ibv_wr_complete(q);
	case CV_WR_ABORT: ibv_wr_abort(q); break;
	case CV_WR_SEND: ibv_wr_send(q); break;
	case CV_WR_SEND_IMM: ibv_wr_send_imm(q, a32); break;
	case CV_WR_SEND_INV: ibv_wr_send_inv(q, a32); break;
	case CV_WR_WRITE: ibv_wr_rdma_write(q, a32, a64); break;
	case CV_WR_WRITE_IMM: ibv_wr_rdma_write_imm(q, a32, a64, b32); break;
	case CV_WR_READ: ibv_wr_rdma_read(q, a32, a64); break;
	case CV_WR_CMP_SWP: ibv_wr_atomic_cmp_swp(q, a32, a64, b64, c64); break;
	case CV_WR_FETCH_ADD: ibv_wr_atomic_fetch_add(q, a32, a64, b64); break;
	case CV_WR_ATOMIC_WRITE: ibv_wr_atomic_write(q, a32, a64, &b64); break;
	case CV_WR_LOCAL_INV: ibv_wr_local_inv(q, a32); break;
	case CV_WR_BIND_MW:
		memset(&bi, 0, sizeof(bi));
		bi.mr = p2;
		bi.addr = a64;
		bi.length = b64;
		bi.mw_access_flags = (unsigned int)c64;
		ibv_wr_bind_mw(q, p, a32, &bi);
		break;
	case CV_WR_UD_ADDR: ibv_wr_set_ud_addr(q, p, a32, b32); break;
	case CV_WR_SGE: ibv_wr_set_sge(q, a32, a64, b32); break;
	case CV_WR_SGE_LIST: ibv_wr_set_sge_list(q, a64, p); break;
	case CV_WR_INLINE: ibv_wr_set_inline_data(q, p, a64); break;
	case CV_WR_INLINE_LIST: ibv_wr_set_inline_data_list(q, a64, p); break;
	case CV_WR_XRC_SRQN: ibv_wr_set_xrc_srqn(q, a32); break;
	}
	return 0;
}

struct ibv_xrcd *cv_open_xrcd(struct ibv_context *c, uint32_t comp_mask, int fd, int oflags)
{
	struct ibv_xrcd_init_attr a;

	memset(&a, 0, sizeof(a));
	a.comp_mask = comp_mask;
	a.fd = fd;
	a.oflags = oflags;
	return ibv_open_xrcd(c, &a);
}

int cv_close_xrcd(struct ibv_xrcd *x)
{
	return ibv_close_xrcd(x);
}

struct ibv_srq *cv_create_srq_ex(struct ibv_context *c, struct ibv_srq_attr *attr, uint32_t comp_mask,
	uint32_t type, struct ibv_pd *pd, struct ibv_xrcd *xrcd, struct ibv_cq *cq)
{
	struct ibv_srq_init_attr_ex a;

	memset(&a, 0, sizeof(a));
	a.attr = *attr;
	a.comp_mask = comp_mask;
	a.srq_type = type;
	a.pd = pd;
	a.xrcd = xrcd;
	a.cq = cq;
	return ibv_create_srq_ex(c, &a);
}

int cv_get_srq_num(struct ibv_srq *s, uint32_t *num)
{
	return ibv_get_srq_num(s, num);
}
