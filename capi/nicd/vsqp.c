/*
 * vsqp.c: the vs_* calls of QPs, SRQs, XRC and device memory for the
 * C-only library (see vs.c): creation, modification, queries, and the
 * posts, whose requests carry the SGEs and any inline payload, copied
 * from the program's memory now as libibverbs providers copy them into a
 * WQE, and the work request builder, whose calls are recorded here and
 * sent at ibv_wr_complete.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../vs.h"
#include "client.h"

/* buf is a growing request body. */
struct buf {
	char *p;
	size_t len, cap;
	int err;
};

static void *grow(struct buf *b, size_t n)
{
	size_t at = b->len, want = b->len + ((n + 7) & ~(size_t)7);

	if (b->err)
		return NULL;
	if (want > NICD_MAX_MSG - sizeof(struct nicd_req)) {
		b->err = EINVAL;
		return NULL;
	}
	if (want > b->cap) {
		size_t c = b->cap ? b->cap : 512;
		char *np;

		while (c < want)
			c *= 2;
		np = realloc(b->p, c);
		if (!np) {
			b->err = ENOMEM;
			return NULL;
		}
		b->p = np;
		b->cap = c;
	}
	b->len = want;
	memset(b->p + at, 0, want - at);
	return b->p + at;
}

static void put(struct buf *b, const void *src, size_t n)
{
	void *d = grow(b, n);

	if (d && n)
		memcpy(d, src, n);
}

/* ---- QPs -------------------------------------------------------------- */

static struct nicd_qp_init qp_init(const struct capi_qp_init *in, uintptr_t cptr)
{
	struct nicd_qp_init q = { .send_cq = nicd_untag(in->send_cq), .recv_cq = nicd_untag(in->recv_cq),
				  .srq = nicd_untag(in->srq), .cap = in->cap, .qp_type = in->qp_type,
				  .sq_sig_all = in->sq_sig_all, .comp_mask = in->comp_mask,
				  .send_ops_flags = in->send_ops_flags, .cptr = cptr };
	return q;
}

int vs_create_qp(uintptr_t h, struct capi_qp_init *in, uintptr_t cptr, uintptr_t *out, uint32_t *qpn,
		 struct ibv_qp_cap *capOut)
{
	struct nicd_qp_init q;
	struct nicd_rep p;
	int rc;

	if (!in)
		return EINVAL;
	q = qp_init(in, cptr);
	rc = nicd_call(NICD_CREATE_QP, nicd_untag(h), 0, 0, &q, sizeof(q), &p, capOut, sizeof(*capOut));
	if (rc)
		return rc;
	*out = nicd_tag(p.v);
	*qpn = (uint32_t)p.w;
	return 0;
}

int vs_destroy_qp(uintptr_t h)
{
	struct nicd_rep p;

	return nicd_call(NICD_DESTROY_QP, nicd_untag(h), 0, 0, NULL, 0, &p, NULL, 0);
}

int vs_modify_qp(uintptr_t h, struct ibv_qp_attr *a, int mask)
{
	struct nicd_rep p;

	return nicd_call(NICD_MODIFY_QP, nicd_untag(h), (uint64_t)(uint32_t)mask, 0, a, sizeof(*a), &p, NULL, 0);
}

int vs_query_qp(uintptr_t h, int mask, struct ibv_qp_attr *a, struct ibv_qp_init_attr *ia)
{
	struct nicd_qp_query x;
	struct nicd_rep p;
	int rc = nicd_call(NICD_QUERY_QP, nicd_untag(h), (uint64_t)(uint32_t)mask, 0, NULL, 0, &p, &x, sizeof(x));

	if (rc)
		return rc;
	*a = x.attr;
	ia->cap = x.cap;
	ia->qp_type = x.qp_type;
	ia->sq_sig_all = x.sq_sig_all;
	return 0;
}

/* vs_post_send carries up to n requests; *posted is how many the daemon
 * posted before the one that failed. An inline payload is copied from the
 * program's memory now: it may come from unregistered memory, and the
 * program may reuse it as soon as ibv_post_send returns. */
int vs_post_send(uintptr_t h, struct capi_swr *in, int n, int *posted)
{
	struct buf b = { 0 };
	struct nicd_rep p;
	int rc;

	*posted = 0;
	if (n <= 0)
		return n < 0 ? EINVAL : 0;
	for (int i = 0; i < n; i++) {
		const struct capi_swr *w = &in[i];
		struct nicd_swr s = { .wr_id = w->wr_id, .opcode = w->opcode, .flags = w->flags, .imm = w->imm,
				      .remote_addr = w->remote_addr, .rkey = w->rkey, .remote_qpn = w->remote_qpn,
				      .remote_qkey = w->remote_qkey, .xrc_srqn = w->xrc_srqn,
				      .compare_add = w->compare_add, .swap = w->swap, .ah = nicd_untag(w->ah),
				      .mw = nicd_untag(w->mw), .mr = nicd_untag(w->mr), .mw_access = w->mw_access };
		struct nicd_swr *d;
		size_t total = 0;

		if (w->flags & IBV_SEND_INLINE) {
			for (uint32_t k = 0; k < w->num_sge; k++)
				total += w->sg_list[k].length;
			s.inline_len = (uint32_t)total;
		} else {
			s.num_sge = w->num_sge;
		}
		d = grow(&b, sizeof(s));
		if (d)
			*d = s;
		if (!(w->flags & IBV_SEND_INLINE)) {
			put(&b, w->sg_list, (size_t)w->num_sge * sizeof(struct ibv_sge));
			continue;
		}
		char *data = grow(&b, total);
		for (uint32_t k = 0; data && k < w->num_sge; k++) {
			const struct ibv_sge *g = &w->sg_list[k];

			if (g->length && !g->addr) {
				b.err = EFAULT;
				break;
			}
			memcpy(data, (const void *)(uintptr_t)g->addr, g->length);
			data += g->length;
		}
	}
	if (b.err) {
		free(b.p);
		return b.err;
	}
	rc = nicd_call(NICD_POST_SEND, nicd_untag(h), (uint64_t)n, 0, b.p, b.len, &p, NULL, 0);
	free(b.p);
	*posted = (int)p.v;
	return rc;
}

static int post_recvs(uint32_t op, uintptr_t h, struct capi_rwr *in, int n, int *posted)
{
	struct buf b = { 0 };
	struct nicd_rep p;
	int rc;

	*posted = 0;
	if (n <= 0)
		return n < 0 ? EINVAL : 0;
	for (int i = 0; i < n; i++) {
		struct nicd_rwr r = { .wr_id = in[i].wr_id, .num_sge = (uint32_t)in[i].num_sge };

		if (in[i].num_sge < 0)
			return EINVAL;
		put(&b, &r, sizeof(r));
		put(&b, in[i].sg_list, (size_t)in[i].num_sge * sizeof(struct ibv_sge));
	}
	if (b.err) {
		free(b.p);
		return b.err;
	}
	rc = nicd_call(op, nicd_untag(h), (uint64_t)n, 0, b.p, b.len, &p, NULL, 0);
	free(b.p);
	*posted = (int)p.v;
	return rc;
}

int vs_post_recv(uintptr_t h, struct capi_rwr *in, int n, int *posted)
{
	return post_recvs(NICD_POST_RECV, h, in, n, posted);
}

int vs_post_srq_recv(uintptr_t h, struct capi_rwr *in, int n, int *posted)
{
	return post_recvs(NICD_POST_SRQ_RECV, h, in, n, posted);
}

/* ---- the work request builder ----------------------------------------- */

/* The batch each QP records between ibv_wr_start and ibv_wr_complete (the
 * program serializes its calls on one QP, as the man page requires). */
struct batch {
	uintptr_t qp;
	struct buf b;
	uint32_t count;
	struct batch *next;
};

static pthread_mutex_t batch_mu = PTHREAD_MUTEX_INITIALIZER;
static struct batch *batches;

static struct batch *batch_of(uintptr_t qp, int make)
{
	struct batch *x;

	pthread_mutex_lock(&batch_mu);
	for (x = batches; x && x->qp != qp; x = x->next)
		;
	if (!x && make) {
		x = calloc(1, sizeof(*x));
		if (x) {
			x->qp = qp;
			x->next = batches;
			batches = x;
		}
	}
	pthread_mutex_unlock(&batch_mu);
	return x;
}

static void record(struct batch *x, struct nicd_wr_op *o, const void *data, size_t len)
{
	struct nicd_wr_op *d = grow(&x->b, sizeof(*o));

	o->len = (uint32_t)len;
	if (d)
		*d = *o;
	put(&x->b, data, len);
	x->count++;
}

int vs_wr(uintptr_t h, int op, uint64_t wrID, uint32_t flags, uint32_t a32, uint32_t b32, uint64_t a64, uint64_t b64,
	  uint64_t c64, uintptr_t obj)
{
	struct nicd_wr_op o = { .op = op, .flags = flags, .wr_id = wrID, .a32 = a32, .b32 = b32, .a64 = a64,
				.b64 = b64, .c64 = c64, .obj = nicd_untag(obj) };
	struct batch *x = batch_of(h, op == CAPI_WR_START);
	struct nicd_rep p;
	int rc;

	if (op == CAPI_WR_START) {
		if (!x)
			return ENOMEM;
		x->b.len = 0;
		x->b.err = 0;
		x->count = 0;
		record(x, &o, NULL, 0);
		return 0;
	}
	if (!x || !x->count)
		return op == CAPI_WR_ABORT ? 0 : EINVAL; /* no wr_start */
	switch (op) {
	case CAPI_WR_ABORT:
		x->count = 0;
		return 0;
	case CAPI_WR_BIND_MW:
		o.c64 = nicd_untag((uintptr_t)c64);
		break;
	case CAPI_WR_SET_INLINE:
		/* The builder copies the buffer now. */
		record(x, &o, (const void *)(uintptr_t)a64, (size_t)b64);
		return x->b.err;
	case CAPI_WR_COMPLETE:
		record(x, &o, NULL, 0);
		rc = x->b.err;
		if (!rc)
			rc = nicd_call(NICD_WR_BATCH, nicd_untag(h), x->count, 0, x->b.p, x->b.len, &p, NULL, 0);
		x->count = 0;
		x->b.len = 0;
		x->b.err = 0;
		return rc;
	}
	record(x, &o, NULL, 0);
	return x->b.err;
}

/* The list builders travel as ops of their own (post.go): 100 an SGE
 * list, 101 an inline list (the lengths, then the bytes). */
enum { NICD_WR_SET_SGE_LIST = 100, NICD_WR_SET_INLINE_LIST = 101 };

int vs_wr_sge_list(uintptr_t h, struct ibv_sge *l, size_t n)
{
	struct nicd_wr_op o = { .op = NICD_WR_SET_SGE_LIST, .num = (uint32_t)n };
	struct batch *x = batch_of(h, 0);

	if (!x || !x->count || (n && !l))
		return EINVAL;
	record(x, &o, l, n * sizeof(*l));
	return x->b.err;
}

int vs_wr_inline_list(uintptr_t h, struct ibv_data_buf *l, size_t n)
{
	struct nicd_wr_op o = { .op = NICD_WR_SET_INLINE_LIST, .num = (uint32_t)n };
	struct batch *x = batch_of(h, 0);
	size_t total = 0;
	char *d;

	if (!x || !x->count || (n && !l))
		return EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!l[i].addr && l[i].length)
			return EFAULT;
		total += l[i].length;
	}
	o.len = (uint32_t)(8 * n + total);
	d = grow(&x->b, sizeof(o) + 8 * n + total);
	if (!d)
		return x->b.err;
	memcpy(d, &o, sizeof(o));
	d += sizeof(o);
	for (size_t i = 0; i < n; i++, d += 8) {
		uint64_t len = l[i].length;
		memcpy(d, &len, 8);
	}
	for (size_t i = 0; i < n; i++) {
		memcpy(d, l[i].addr, l[i].length);
		d += l[i].length;
	}
	x->count++;
	return 0;
}

/* ---- SRQs and XRC ------------------------------------------------------ */

/* create_srq sends op (NICD_CREATE_SRQ or NICD_CREATE_SRQ_EX) for s and
 * writes the SRQ's real limits back to attr. */
static int create_srq(uint32_t op, uintptr_t h, const struct nicd_srq *s, struct ibv_srq_attr *attr, uintptr_t *out)
{
	struct ibv_srq_attr got;
	struct nicd_rep p;
	int rc = nicd_call(op, nicd_untag(h), 0, 0, s, sizeof(*s), &p, &got, sizeof(got));

	if (rc)
		return rc;
	attr->max_wr = got.max_wr;
	attr->max_sge = got.max_sge;
	*out = nicd_tag(p.v);
	return 0;
}

int vs_create_srq(uintptr_t h, struct ibv_srq_attr *attr, uintptr_t cptr, uintptr_t *out)
{
	struct nicd_srq s = { .attr = *attr, .cptr = cptr };

	return create_srq(NICD_CREATE_SRQ, h, &s, attr, out);
}

int vs_modify_srq(uintptr_t h, struct ibv_srq_attr *attr, int mask)
{
	struct nicd_rep p;

	return nicd_call(NICD_MODIFY_SRQ, nicd_untag(h), (uint64_t)(uint32_t)mask, 0, attr, sizeof(*attr), &p, NULL, 0);
}

int vs_query_srq(uintptr_t h, struct ibv_srq_attr *attr)
{
	struct nicd_rep p;

	return nicd_call(NICD_QUERY_SRQ, nicd_untag(h), 0, 0, NULL, 0, &p, attr, sizeof(*attr));
}

int vs_destroy_srq(uintptr_t h)
{
	struct nicd_rep p;

	return nicd_call(NICD_DESTROY_SRQ, nicd_untag(h), 0, 0, NULL, 0, &p, NULL, 0);
}

int vs_open_xrcd(uintptr_t h, uint32_t compMask, int byFile, uint64_t dev, uint64_t ino, int oflags, uintptr_t *out)
{
	struct nicd_xrcd x = { .comp_mask = compMask, .by_file = byFile, .dev = dev, .ino = ino, .oflags = oflags };
	struct nicd_rep p;
	int rc = nicd_call(NICD_OPEN_XRCD, nicd_untag(h), 0, 0, &x, sizeof(x), &p, NULL, 0);

	if (!rc)
		*out = nicd_tag(p.v);
	return rc;
}

int vs_close_xrcd(uintptr_t h)
{
	struct nicd_rep p;

	return nicd_call(NICD_CLOSE_XRCD, nicd_untag(h), 0, 0, NULL, 0, &p, NULL, 0);
}

int vs_create_srq_ex(uintptr_t h, struct ibv_srq_attr *a, uint32_t compMask, uint32_t srqType, uintptr_t pdh,
		     uintptr_t xrcdh, uintptr_t cqh, uintptr_t cptr, uintptr_t *out)
{
	struct nicd_srq s = { .attr = *a, .comp_mask = compMask, .type = srqType, .pd = nicd_untag(pdh),
			      .xrcd = nicd_untag(xrcdh), .cq = nicd_untag(cqh), .cptr = cptr };

	return create_srq(NICD_CREATE_SRQ_EX, h, &s, a, out);
}

int vs_get_srq_num(uintptr_t h, uint32_t *num)
{
	struct nicd_rep p;
	int rc = nicd_call(NICD_GET_SRQ_NUM, nicd_untag(h), 0, 0, NULL, 0, &p, NULL, 0);

	if (!rc)
		*num = (uint32_t)p.v;
	return rc;
}

int vs_create_xrc_recv_qp(uintptr_t xrcdh, struct capi_qp_init *in, uintptr_t cptr, uintptr_t *out, uint32_t *qpn)
{
	struct nicd_qp_init q;
	struct nicd_rep p;
	int rc;

	if (!in)
		return EINVAL;
	struct ibv_qp_cap cap;

	q = qp_init(in, cptr);
	rc = nicd_call(NICD_CREATE_XRC_RECV_QP, nicd_untag(xrcdh), 0, 0, &q, sizeof(q), &p, &cap, sizeof(cap));
	if (rc)
		return rc;
	*out = nicd_tag(p.v);
	*qpn = (uint32_t)p.w;
	return 0;
}

/* ---- device memory ---------------------------------------------------- */

int vs_alloc_dm(uintptr_t h, size_t length, uint32_t logAlign, uint32_t compMask, uintptr_t *out)
{
	struct nicd_rep p;
	int rc = nicd_call(NICD_ALLOC_DM, nicd_untag(h), length, logAlign | (uint64_t)compMask << 32, NULL, 0, &p,
			   NULL, 0);

	if (!rc)
		*out = nicd_tag(p.v);
	return rc;
}

int vs_free_dm(uintptr_t h)
{
	struct nicd_rep p;

	return nicd_call(NICD_FREE_DM, nicd_untag(h), 0, 0, NULL, 0, &p, NULL, 0);
}

/* vs_memcpy_dm copies in pieces that fit a message. */
int vs_memcpy_dm(uintptr_t h, uint64_t offset, void *host, size_t length, int toDM)
{
	const size_t chunk = NICD_MAX_MSG / 4;
	struct nicd_rep p;

	if (!host && length)
		return EFAULT;
	if (!length) {
		if (toDM)
			return nicd_call(NICD_MEMCPY_DM, nicd_untag(h), offset, 1ull << 63, NULL, 0, &p, NULL, 0);
		return nicd_call(NICD_MEMCPY_DM, nicd_untag(h), offset, 0, NULL, 0, &p, NULL, 0);
	}
	for (size_t done = 0; done < length;) {
		size_t n = length - done < chunk ? length - done : chunk;
		char *at = (char *)host + done;
		int rc;

		if (toDM)
			rc = nicd_call(NICD_MEMCPY_DM, nicd_untag(h), offset + done, n | 1ull << 63, at, n, &p, NULL, 0);
		else
			rc = nicd_call(NICD_MEMCPY_DM, nicd_untag(h), offset + done, n, NULL, 0, &p, at, n);
		if (rc)
			return rc;
		done += n;
	}
	return 0;
}

int vs_reg_dm_mr(uintptr_t pdh, uintptr_t dmh, uint64_t offset, size_t length, uint32_t access, uintptr_t *out,
		 uint32_t *lkey, uint32_t *rkey)
{
	struct nicd_dm_mr m = { .dm = nicd_untag(dmh), .offset = offset, .length = length, .access = access };
	struct nicd_rep p;
	int rc = nicd_call(NICD_REG_DM_MR, nicd_untag(pdh), 0, 0, &m, sizeof(m), &p, NULL, 0);

	if (rc)
		return rc;
	*out = nicd_tag(p.v);
	*lkey = (uint32_t)p.w;
	*rkey = (uint32_t)(p.w >> 32);
	return 0;
}
