/*
 * odp.c: on-demand paging through verbsim's drop-in library (ODP-01 to
 * ODP-06). With ODP (the default profile): odp_caps and xrc_odp_caps as
 * verbs.h spells them, no implicit ODP, an ON_DEMAND MR that carries an RDMA
 * WRITE between two connected RC QPs, ibv_advise_mr's successes and
 * errnos, implicit registration refused with EINVAL and ibv_rereg_mr to
 * ON_DEMAND. Without (the rxe profile): zero caps and EOPNOTSUPP
 * everywhere. Prints "odp: OK".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "check.h"
#include "rc.h"

enum { SIZE = 8192 };

/* write_through sends an RDMA WRITE from src to dst over two connected QPs. */
static void write_through(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_mr *src, struct ibv_mr *dst)
{
	struct ibv_port_attr port;
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_qp_init_attr ia;
	struct ibv_qp *a, *b;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	int n;

	CHECK(cq, "create_cq");
	CHECK(!ibv_query_port(ctx, 1, &port), "query_port");
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 2;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	a = ibv_create_qp(pd, &ia);
	b = ibv_create_qp(pd, &ia);
	CHECK(a && b, "create_qp");
	rc_to_rts(a, b->qp_num, port.lid, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ON_DEMAND);
	rc_to_rts(b, a->qp_num, port.lid, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ON_DEMAND);
	memset(src->addr, 0x5a, SIZE);
	memset(dst->addr, 0, SIZE);
	sge.addr = (uintptr_t)src->addr;
	sge.length = SIZE;
	sge.lkey = src->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)dst->addr;
	wr.wr.rdma.rkey = dst->rkey;
	CHECK(!ibv_post_send(a, &wr, &bad), "post_send");
	do {
		n = ibv_poll_cq(cq, 1, &wc);
		CHECK(n >= 0, "poll");
	} while (n == 0);
	CHECK(wc.status == IBV_WC_SUCCESS, "WRITE status %s", ibv_wc_status_str(wc.status));
	CHECK(!memcmp(src->addr, dst->addr, SIZE), "the WRITE's bytes did not land in the on-demand MR");
	CHECK(!ibv_destroy_qp(a) && !ibv_destroy_qp(b) && !ibv_destroy_cq(cq), "destroy");
}

int main(void)
{
	struct ibv_device **devs = ibv_get_device_list(NULL);
	struct ibv_context *ctx;
	struct ibv_device_attr_ex ax;
	struct ibv_pd *pd, *pd2;
	struct ibv_mr *mr, *mr2, *plain, *other;
	struct ibv_sge sge;
	char *buf = malloc(SIZE), *buf2 = malloc(SIZE), *buf3 = malloc(SIZE);
	int odp;

	CHECK(devs && devs[0] && buf && buf2 && buf3, "devices");
	ctx = ibv_open_device(devs[0]);
	CHECK(ctx, "open");
	pd = ibv_alloc_pd(ctx);
	pd2 = ibv_alloc_pd(ctx);
	CHECK(pd && pd2, "alloc_pd");
	CHECK(!ibv_query_device_ex(ctx, NULL, &ax), "query_device_ex");
	odp = ax.odp_caps.general_caps & IBV_ODP_SUPPORT;
	plain = ibv_reg_mr(pd, buf3, SIZE, IBV_ACCESS_LOCAL_WRITE);
	CHECK(plain, "reg_mr");

	if (!odp) {
		CHECK(!ax.odp_caps.general_caps && !ax.odp_caps.per_transport_caps.rc_odp_caps &&
			      !ax.odp_caps.per_transport_caps.uc_odp_caps && !ax.odp_caps.per_transport_caps.ud_odp_caps &&
			      !ax.xrc_odp_caps,
		      "caps without ODP");
		errno = 0;
		CHECK(!ibv_reg_mr(pd, buf, SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND) && errno == EOPNOTSUPP,
		      "ON_DEMAND without ODP");
		errno = 0;
		CHECK(!ibv_reg_mr_iova(pd, buf, SIZE, 0x10000, IBV_ACCESS_ON_DEMAND) && errno == EOPNOTSUPP,
		      "ON_DEMAND iova without ODP");
		errno = 0;
		CHECK(!ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND) && errno == EOPNOTSUPP, "implicit without ODP");
		sge.addr = (uintptr_t)buf3;
		sge.length = 8;
		sge.lkey = plain->lkey;
		CHECK(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1) == EOPNOTSUPP, "advise without ODP");
		CHECK(ibv_rereg_mr(plain, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND) == IBV_REREG_MR_ERR_CMD &&
			      errno == EOPNOTSUPP,
		      "rereg to ON_DEMAND without ODP");
		goto out;
	}

	CHECK(ax.odp_caps.general_caps == IBV_ODP_SUPPORT, "general_caps %#llx: no implicit ODP",
	      (unsigned long long)ax.odp_caps.general_caps);
	CHECK(ax.odp_caps.per_transport_caps.rc_odp_caps ==
		      (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
		       IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV),
	      "rc_odp_caps %#x", ax.odp_caps.per_transport_caps.rc_odp_caps);
	CHECK(ax.odp_caps.per_transport_caps.uc_odp_caps ==
		      (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE),
	      "uc_odp_caps %#x", ax.odp_caps.per_transport_caps.uc_odp_caps);
	CHECK(ax.odp_caps.per_transport_caps.ud_odp_caps ==
		      (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_SRQ_RECV),
	      "ud_odp_caps %#x", ax.odp_caps.per_transport_caps.ud_odp_caps);
	CHECK(ax.xrc_odp_caps == (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
				  IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV),
	      "xrc_odp_caps %#x", ax.xrc_odp_caps);

	mr = ibv_reg_mr(pd, buf, SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	mr2 = ibv_reg_mr(pd, buf2, SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ON_DEMAND);
	other = ibv_reg_mr(pd2, buf2, SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	CHECK(mr && mr2 && other, "reg_mr ON_DEMAND");
	write_through(ctx, pd, mr, mr2);

	sge.addr = (uintptr_t)buf;
	sge.length = SIZE;
	sge.lkey = mr->lkey;
	CHECK(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1) == 0, "advise");
	CHECK(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1) == 0, "advise async");
	CHECK(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1) == 0,
	      "advise no fault");
	CHECK(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 0) == EINVAL, "advise: empty list");
	CHECK(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 2, &sge, 1) == EINVAL, "advise: unknown flag");
	CHECK(ibv_advise_mr(pd, (enum ibv_advise_mr_advice)7, 0, &sge, 1) == EOPNOTSUPP, "advise: unknown advice");
	CHECK(ibv_advise_mr(pd2, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1) == EPERM, "advise: another PD's MR");
	sge.addr += SIZE + 4096;
	CHECK(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1) == EFAULT,
	      "advise: a range past the MR");
	CHECK(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1) == 0, "advise: ranges unchecked without FLUSH");
	sge.addr = (uintptr_t)buf3;
	sge.length = 8;
	sge.lkey = plain->lkey;
	CHECK(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1) == ENOENT, "advise: an MR without ON_DEMAND");

	errno = 0;
	CHECK(!ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND) && errno == EINVAL,
	      "implicit ODP is not offered");
	CHECK(!ibv_rereg_mr(plain, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND),
	      "rereg to ON_DEMAND");
	CHECK(!ibv_dereg_mr(mr) && !ibv_dereg_mr(mr2) && !ibv_dereg_mr(other), "dereg");
out:
	CHECK(!ibv_dereg_mr(plain), "dereg");
	CHECK(!ibv_dealloc_pd(pd) && !ibv_dealloc_pd(pd2), "dealloc_pd");
	CHECK(!ibv_close_device(ctx), "close");
	ibv_free_device_list(devs);
	free(buf);
	free(buf2);
	free(buf3);
	printf("odp: OK\n");
	return 0;
}
