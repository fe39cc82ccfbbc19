/*
 * dm.c: device memory from C (DM-01 to DM-07 of spec/catalogue.md). The
 * verbs are inline in verbs.h and reach the library through struct
 * verbs_context (alloc_dm, free_dm, reg_dm_mr) and through the two copy
 * functions every struct ibv_dm carries, as mlx5 fills them. The engine
 * (dm.go) owns the memory and applies the rules; ibv_dereg_mr of a DM MR
 * is glue.c's.
 *
 * In a child of fork() the simulator does not run (docs/c-programs.md), yet
 * programs (pyverbs' test_multi_process_alloc_dm) allocate device memory
 * there, after reading max_dm_size with ibv_query_device_ex. So in a child
 * ibv_query_device_ex answers with the attributes read when the context
 * was opened, and ibv_alloc_dm gives device memory of the child's own, held
 * in its heap: the allocation rules of DM-01, the child's own allocations
 * as the budget (DM-03), and the copy rules of DM-04. No MR can be
 * registered on it (reg_dm_mr fails with EOPNOTSUPP, like every other verb
 * in a child), and memory allocated before the fork cannot be used there.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capi.h"
#include "vs.h"

#define ERRP(e) do { errno = (e); return NULL; } while (0)

/* Device memory: struct ibv_dm and our handle, or, in a child of fork(),
 * the child's own bytes (local, with length and pages). */
struct capi_dm {
	struct ibv_dm dm;
	uintptr_t h;
	unsigned char *local;
	uint64_t length;
	uint64_t pages;
};

enum {
	DM_PAGE = 4096,
	DM_BLOCK = 64,       /* an allocation's granularity (DM-03) */
	DM_MAX_LOG_ALIGN = 12 /* the largest log_align_req (DM-01) */
};

/* Pages of device memory the children's own allocations hold in this
 * process (only a child of fork() has any). */
static uint64_t child_pages;

static struct capi_context *dctx(struct ibv_context *c)
{
	return c ? (struct capi_context *)((char *)c - offsetof(struct capi_context, vctx.context)) : NULL;
}

static int dm_memcpy_to(struct ibv_dm *ibdm, uint64_t off, const void *host, size_t len)
{
	struct capi_dm *d = (struct capi_dm *)ibdm;

	if (!d->local) {
		if (capi_forked())
			return EOPNOTSUPP;
		return vs_memcpy_dm(d->h, off, (void *)host, len, 1);
	}
	/* DM-04: the range first (EFAULT), then the 4-byte granularity. */
	if (off > d->length || len > d->length - off)
		return EFAULT;
	if ((off | len) & 3)
		return EINVAL;
	if (len)
		memcpy(d->local + off, host, len);
	return 0;
}

static int dm_memcpy_from(void *host, struct ibv_dm *ibdm, uint64_t off, size_t len)
{
	struct capi_dm *d = (struct capi_dm *)ibdm;

	if (!d->local) {
		if (capi_forked())
			return EOPNOTSUPP;
		return vs_memcpy_dm(d->h, off, host, len, 0);
	}
	if (off > d->length || len > d->length - off)
		return EFAULT;
	if ((off | len) & 3)
		return EINVAL;
	if (len)
		memcpy(host, d->local + off, len);
	return 0;
}

/* child_alloc_dm serves ibv_alloc_dm in a child of fork(). */
static struct ibv_dm *child_alloc_dm(struct capi_context *c, struct ibv_alloc_dm_attr *a, struct capi_dm *d)
{
	uint64_t max = c->child_attr.max_dm_size, pages;

	if (!max)
		return NULL; /* errno EOPNOTSUPP (DM-02) */
	if (a->comp_mask || a->length > max || !a->length || a->log_align_req > DM_MAX_LOG_ALIGN) {
		errno = EINVAL;
		return NULL;
	}
	pages = ((a->length + DM_BLOCK - 1) / DM_BLOCK * DM_BLOCK + DM_PAGE - 1) / DM_PAGE;
	if (pages > max / DM_PAGE - child_pages) {
		errno = ENOMEM;
		return NULL;
	}
	d->local = calloc(1, a->length);
	if (!d->local) {
		errno = ENOMEM;
		return NULL;
	}
	child_pages += pages;
	d->length = a->length;
	d->pages = pages;
	return &d->dm;
}

static struct ibv_dm *op_alloc_dm(struct ibv_context *ic, struct ibv_alloc_dm_attr *attr)
{
	struct capi_context *c = dctx(ic);
	struct capi_dm *d;
	int rc;

	if (!c || !attr)
		ERRP(EINVAL);
	d = calloc(1, sizeof(*d));
	if (!d)
		ERRP(ENOMEM);
	d->dm.context = ic;
	d->dm.memcpy_to_dm = dm_memcpy_to;
	d->dm.memcpy_from_dm = dm_memcpy_from;
	if (capi_in_child()) {
		errno = EOPNOTSUPP;
		if (!child_alloc_dm(c, attr, d)) {
			rc = errno;
			free(d);
			ERRP(rc);
		}
		return &d->dm;
	}
	rc = vs_alloc_dm(c->h, attr->length, attr->log_align_req, attr->comp_mask, (uintptr_t *)&d->h);
	if (rc) {
		free(d);
		ERRP(rc);
	}
	d->dm.handle = (uint32_t)d->h;
	return &d->dm;
}

static int op_free_dm(struct ibv_dm *ibdm)
{
	struct capi_dm *d = (struct capi_dm *)ibdm;
	int rc;

	if (!d)
		return EINVAL;
	if (d->local) {
		child_pages -= d->pages;
		free(d->local);
		free(d);
		return 0;
	}
	if (capi_forked())
		return EOPNOTSUPP;
	rc = vs_free_dm(d->h);
	if (rc)
		return rc;
	free(d);
	return 0;
}

static struct ibv_mr *op_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *ibdm, uint64_t off, size_t length,
				   unsigned int access)
{
	struct capi_dm *d = (struct capi_dm *)ibdm;
	struct capi_mr *m;
	uint32_t lkey = 0, rkey = 0;
	int rc;

	if (capi_forked())
		return NULL;
	if (!pd || !d || d->local)
		ERRP(EINVAL);
	m = calloc(1, sizeof(*m));
	if (!m)
		ERRP(ENOMEM);
	rc = vs_reg_dm_mr(((struct capi_pd *)pd)->h, d->h, off, length, access, (uintptr_t *)&m->h, &lkey, &rkey);
	if (rc) {
		free(m);
		ERRP(rc);
	}
	/* Zero-based, with no host address: addr is NULL (DM-06). */
	return capi_mr_fill(m, pd, NULL, length, lkey, rkey);
}

/* capi_dm_ops fills the device memory slots of a new context's
 * verbs_context and keeps max_dm_size for a child of fork(). */
void capi_dm_ops(struct capi_context *c)
{
	c->vctx.alloc_dm = op_alloc_dm;
	c->vctx.free_dm = op_free_dm;
	c->vctx.reg_dm_mr = op_reg_dm_mr;
	if (vs_query_device_ex(c->h, &c->child_attr))
		memset(&c->child_attr, 0, sizeof(c->child_attr));
}

/* capi_child_query_device_ex is ibv_query_device_ex in a child of fork():
 * the attributes read when the context was opened (they do not change),
 * with the parent's argument checks. */
int capi_child_query_device_ex(struct capi_context *c, const struct ibv_query_device_ex_input *in,
			       struct ibv_device_attr_ex *attr, size_t len)
{
	if (!attr || len < sizeof(attr->orig_attr) || (in && in->comp_mask))
		return EINVAL;
	memcpy(attr, &c->child_attr, len < sizeof(c->child_attr) ? len : sizeof(c->child_attr));
	return 0;
}
