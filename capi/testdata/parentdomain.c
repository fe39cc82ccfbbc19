/*
 * parentdomain.c: parent domains (ibv_alloc_parent_domain) through
 * verbsim's drop-in library. A parent domain stands for the protection
 * domain it wraps: an MR, a CQ (IBV_CQ_INIT_ATTR_MASK_PD) and an RC QP
 * made with it carry an RDMA WRITE and a SEND between two QPs; the wrapped
 * PD cannot be deallocated while a parent domain uses it (EBUSY); bad
 * arguments are EINVAL; thread domains are EOPNOTSUPP. Prints
 * "parentdomain: OK".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "check.h"
#include "rc.h"

enum { SIZE = 4096 };

static int allocs;

static void *alloc_buf(struct ibv_pd *pd, void *ctx, size_t size, size_t align, uint64_t type)
{
	(void)pd; (void)ctx; (void)size; (void)align; (void)type;
	allocs++;
	return IBV_ALLOCATOR_USE_DEFAULT;
}

static void free_buf(struct ibv_pd *pd, void *ctx, void *ptr, uint64_t type)
{
	(void)pd; (void)ctx; (void)ptr; (void)type;
}

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx;
	struct ibv_port_attr pa;
	struct ibv_pd *pd, *par, *par2;
	struct ibv_parent_domain_init_attr pa_attr;
	struct ibv_cq_init_attr_ex cqa;
	struct ibv_td_init_attr tda = { 0 };
	struct ibv_cq_ex *cqx;
	struct ibv_cq *cq;
	struct ibv_qp_init_attr qia;
	struct ibv_qp *qa, *qb;
	struct ibv_mr *mra, *mrb;
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_wc wc;
	static char a[SIZE], b[SIZE];

	CHECK(list && list[0], "no device");
	ctx = ibv_open_device(list[0]);
	CHECK(ctx, "open");
	CHECK(!ibv_query_port(ctx, 1, &pa), "query_port");
	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "alloc_pd");

	errno = 0;
	CHECK(!ibv_alloc_td(ctx, &tda) && errno == EOPNOTSUPP, "alloc_td");
	memset(&pa_attr, 0, sizeof(pa_attr));
	CHECK(!ibv_alloc_parent_domain(ctx, &pa_attr) && errno == EINVAL, "parent domain without a PD");
	pa_attr.pd = pd;
	pa_attr.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;
	CHECK(!ibv_alloc_parent_domain(ctx, &pa_attr) && errno == EINVAL, "allocators missing");
	pa_attr.comp_mask = 1u << 7;
	CHECK(!ibv_alloc_parent_domain(ctx, &pa_attr) && errno == EINVAL, "unknown comp_mask");
	pa_attr.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	pa_attr.alloc = alloc_buf;
	pa_attr.free = free_buf;
	pa_attr.pd_context = &allocs;
	par = ibv_alloc_parent_domain(ctx, &pa_attr);
	CHECK(par && par->context == ctx, "alloc_parent_domain");
	pa_attr.pd = par;
	CHECK(!ibv_alloc_parent_domain(ctx, &pa_attr) && errno == EINVAL, "a parent of a parent domain");
	CHECK(ibv_dealloc_pd(pd) == EBUSY, "dealloc of a PD with a parent domain");

	/* A CQ of the parent domain; a plain PD there is EINVAL. */
	memset(&cqa, 0, sizeof(cqa));
	cqa.cqe = 16;
	cqa.wc_flags = IBV_WC_STANDARD_FLAGS;
	cqa.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	cqa.parent_domain = pd;
	CHECK(!ibv_create_cq_ex(ctx, &cqa) && errno == EINVAL, "CQ with a plain PD as parent_domain");
	cqa.parent_domain = par;
	cqx = ibv_create_cq_ex(ctx, &cqa);
	CHECK(cqx, "create_cq_ex with a parent domain");
	cq = ibv_cq_ex_to_cq(cqx);

	mra = ibv_reg_mr(par, a, SIZE, IBV_ACCESS_LOCAL_WRITE);
	mrb = ibv_reg_mr(pd, b, SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	CHECK(mra && mra->pd == par && mrb, "reg_mr");
	memset(&qia, 0, sizeof(qia));
	qia.send_cq = cq;
	qia.recv_cq = cq;
	qia.qp_type = IBV_QPT_RC;
	qia.cap.max_send_wr = qia.cap.max_recv_wr = 4;
	qia.cap.max_send_sge = qia.cap.max_recv_sge = 1;
	qa = ibv_create_qp(par, &qia);
	qb = ibv_create_qp(pd, &qia);
	CHECK(qa && qa->pd == par && qb, "create_qp");
	rc_to_rts(qa, qb->qp_num, pa.lid, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	rc_to_rts(qb, qa->qp_num, pa.lid, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);

	/* An RDMA WRITE from the parent domain's QP and MR to the plain PD's. */
	strcpy(a, "through a parent domain");
	sge.addr = (uintptr_t)a;
	sge.length = 32;
	sge.lkey = mra->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)b;
	wr.wr.rdma.rkey = mrb->rkey;
	CHECK(!ibv_post_send(qa, &wr, &bad), "post write");
	wc = wait1(cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 1, "write: %s", ibv_wc_status_str(wc.status));
	CHECK(!strcmp(b, "through a parent domain"), "bytes %s", b);

	/* A SEND the other way, received into the parent domain's MR. */
	memset(a, 0, SIZE);
	sge.addr = (uintptr_t)a;
	sge.lkey = mra->lkey;
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 2;
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	CHECK(!ibv_post_recv(qa, &rwr, &rbad), "post recv");
	struct ibv_sge sb = { .addr = (uintptr_t)b, .length = 32, .lkey = mrb->lkey };
	wr.wr_id = 3;
	wr.sg_list = &sb;
	wr.opcode = IBV_WR_SEND;
	CHECK(!ibv_post_send(qb, &wr, &bad), "post send");
	for (int got = 0; got < 2; got++) {
		wc = wait1(cq);
		CHECK(wc.status == IBV_WC_SUCCESS, "send: %s", ibv_wc_status_str(wc.status));
	}
	CHECK(!strcmp(a, "through a parent domain"), "received %s", a);

	CHECK(!ibv_destroy_qp(qa) && !ibv_destroy_qp(qb), "destroy qps");
	CHECK(!ibv_dereg_mr(mra) && !ibv_dereg_mr(mrb), "dereg");
	CHECK(!ibv_destroy_cq(cq), "destroy cq");
	par2 = ibv_alloc_parent_domain(ctx, &(struct ibv_parent_domain_init_attr){ .pd = pd });
	CHECK(par2, "a second parent domain");
	CHECK(!ibv_dealloc_pd(par) && ibv_dealloc_pd(pd) == EBUSY && !ibv_dealloc_pd(par2), "dealloc parents");
	CHECK(!ibv_dealloc_pd(pd), "dealloc the PD after its parent domains");
	CHECK(!ibv_close_device(ctx), "close");
	ibv_free_device_list(list);
	printf("parentdomain: OK (allocators called %d times)\n", allocs);
	return 0;
}
