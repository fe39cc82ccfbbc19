/*
 * mw.c: type 2 memory windows from C. A type 2 window is bound by a
 * BIND_MW work request (ibv_post_send with wr.bind_mw, or ibv_wr_bind_mw)
 * to the key the program chose, normally ibv_inc_rkey of the window's
 * current one; as with rdma-core's providers, posting it leaves mw->rkey
 * alone (only ibv_bind_mw, for type 1, updates it). IBV_WR_LOCAL_INV and
 * IBV_WR_SEND_WITH_INV carry the key to invalidate in invalidate_rkey,
 * the union with imm_data glue.c already passes.
 */
#include <errno.h>

#include "capi.h"

/* capi_bind_wr copies wr.bind_mw of a BIND_MW request into s: EINVAL for a
 * request naming no window. */
int capi_bind_wr(struct capi_swr *s, const struct ibv_send_wr *wr)
{
	const struct ibv_mw_bind_info *bi = &wr->bind_mw.bind_info;

	if (!wr->bind_mw.mw)
		return EINVAL;
	s->mw = ((struct capi_mw *)wr->bind_mw.mw)->h;
	s->mr = bi->mr ? ((struct capi_mr *)bi->mr)->h : 0;
	s->rkey = wr->bind_mw.rkey;
	s->remote_addr = bi->addr;
	s->compare_add = bi->length;
	s->mw_access = bi->mw_access_flags;
	return 0;
}
