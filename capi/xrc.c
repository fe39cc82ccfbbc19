/*
 * xrc.c: XRC from C (docs/xrc.md, docs/c-programs.md). The verbs are
 * inline in verbs.h and reach the library through struct verbs_context:
 * ibv_open_xrcd, ibv_close_xrcd, ibv_create_srq_ex and ibv_get_srq_num;
 * ibv_create_qp_ex comes here for an XRC_RECV QP (it names a domain, no
 * PD). XRC_SEND QPs are ordinary QPs of a PD (glue.c's create_qp), and the
 * SRQ number of a send request travels in struct capi_swr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "capi.h"
#include "vs.h"

#define ERRP(e) do { errno = (e); return NULL; } while (0)

/* An XRC domain: struct ibv_xrcd and our handle. */
struct capi_xrcd {
	struct ibv_xrcd xrcd;
	uintptr_t h;
};

static struct capi_context *xctx(struct ibv_context *c)
{
	return c ? (struct capi_context *)((char *)c - offsetof(struct capi_context, vctx.context)) : NULL;
}

/*
 * ibv_open_xrcd. With fd -1 the domain is the caller's alone. Any other fd
 * names a file whose inode the domain is found by, as the kernel does:
 * EBADF for a descriptor that is not open, EAGAIN when no domain has the
 * inode and O_CREAT is not given, EINVAL when one has it and O_EXCL is
 * given; otherwise the opens of one inode through one context share the
 * domain (each open is closed on its own; the domain goes with the last).
 */
static struct ibv_xrcd *op_open_xrcd(struct ibv_context *ic, struct ibv_xrcd_init_attr *attr)
{
	struct capi_context *c = xctx(ic);
	struct capi_xrcd *x;
	struct stat st;
	int by_file = 0, rc;

	if (capi_forked())
		return NULL;
	if (!c || !attr)
		ERRP(EINVAL);
	memset(&st, 0, sizeof(st));
	if ((attr->comp_mask & IBV_XRCD_INIT_ATTR_FD) && attr->fd != -1) {
		/* the comp_mask checks come first, in Go; fstat only here */
		if (!(attr->comp_mask & ~(uint32_t)(IBV_XRCD_INIT_ATTR_RESERVED - 1)) &&
		    (attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS) && fstat(attr->fd, &st) != 0)
			ERRP(EBADF);
		by_file = 1;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		ERRP(ENOMEM);
	rc = vs_open_xrcd(c->h, attr->comp_mask, by_file, (uint64_t)st.st_dev, (uint64_t)st.st_ino,
			  (attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS) ? attr->oflags : 0, (uintptr_t *)&x->h);
	if (rc) {
		free(x);
		ERRP(rc);
	}
	x->xrcd.context = ic;
	return &x->xrcd;
}

static int op_close_xrcd(struct ibv_xrcd *xrcd)
{
	struct capi_xrcd *x = (struct capi_xrcd *)xrcd;
	int rc;

	if (capi_forked())
		return EOPNOTSUPP;
	if (!x)
		return EINVAL;
	rc = vs_close_xrcd(x->h);
	if (rc)
		return rc;
	free(x);
	return 0;
}

/* ibv_create_srq_ex, for what ibv_create_srq cannot do (verbs.h sends a
 * BASIC SRQ of a PD to ibv_create_srq itself). */
static struct ibv_srq *op_create_srq_ex(struct ibv_context *ic, struct ibv_srq_init_attr_ex *a)
{
	struct capi_context *c = xctx(ic);
	struct capi_srq *s;
	uint32_t m;
	int rc;

	if (capi_forked())
		return NULL;
	if (!c || !a)
		ERRP(EINVAL);
	m = a->comp_mask;
	/* Objects of another context are the engine's EINVAL: pass 0. */
	uintptr_t pd = (m & IBV_SRQ_INIT_ATTR_PD) && a->pd && a->pd->context == ic ? ((struct capi_pd *)a->pd)->h : 0;
	uintptr_t xd = (m & IBV_SRQ_INIT_ATTR_XRCD) && a->xrcd && a->xrcd->context == ic
			       ? ((struct capi_xrcd *)a->xrcd)->h
			       : 0;
	uintptr_t cq = (m & IBV_SRQ_INIT_ATTR_CQ) && a->cq && a->cq->context == ic ? ((struct capi_cq *)a->cq)->h : 0;
	s = calloc(1, sizeof(*s));
	if (!s)
		ERRP(ENOMEM);
	rc = vs_create_srq_ex(c->h, &a->attr, m, (m & IBV_SRQ_INIT_ATTR_TYPE) ? a->srq_type : IBV_SRQT_BASIC, pd, xd,
			      cq, (uintptr_t)s, (uintptr_t *)&s->h);
	if (rc) {
		free(s);
		ERRP(rc);
	}
	s->srq.context = ic;
	s->srq.srq_context = a->srq_context;
	s->srq.pd = (m & IBV_SRQ_INIT_ATTR_PD) ? a->pd : NULL;
	pthread_mutex_init(&s->srq.mutex, NULL);
	pthread_cond_init(&s->srq.cond, NULL);
	return &s->srq;
}

static int op_get_srq_num(struct ibv_srq *srq, uint32_t *num)
{
	if (capi_forked())
		return EOPNOTSUPP;
	if (!srq || !num)
		return EINVAL;
	return vs_get_srq_num(((struct capi_srq *)srq)->h, num);
}

/* An XRC_RECV QP: ibv_create_qp_ex with IBV_QP_INIT_ATTR_XRCD. It has no
 * PD, no CQ and no queue, so it is never an extended QP for the wr_*
 * builders (the engine refuses send_ops_flags on it). */
struct ibv_qp *capi_create_xrc_recv_qp(struct ibv_context *ic, struct ibv_qp_init_attr_ex *a)
{
	struct capi_qp *q;
	struct capi_qp_init in;
	uint32_t qpn = 0;
	int rc;

	if (!a->xrcd || a->xrcd->context != ic)
		ERRP(EINVAL);
	memset(&in, 0, sizeof(in));
	in.qp_type = a->qp_type;
	in.comp_mask = a->comp_mask;
	in.send_ops_flags = a->send_ops_flags;
	q = calloc(1, sizeof(*q));
	if (!q)
		ERRP(ENOMEM);
	rc = vs_create_xrc_recv_qp(((struct capi_xrcd *)a->xrcd)->h, &in, (uintptr_t)q, (uintptr_t *)&q->h, &qpn);
	if (rc) {
		free(q);
		ERRP(rc);
	}
	memset(&a->cap, 0, sizeof(a->cap));
	return capi_qp_base_init(&q->qpx.qp_base, ic, a, qpn);
}

/* capi_xrc_ops fills the XRC slots of a new context's verbs_context. */
void capi_xrc_ops(struct verbs_context *v)
{
	v->open_xrcd = op_open_xrcd;
	v->close_xrcd = op_close_xrcd;
	v->create_srq_ex = op_create_srq_ex;
	v->get_srq_num = op_get_srq_num;
}
