/*
 * mwrereg.c: memory windows and ibv_rereg_mr through verbsim's drop-in
 * library, as an ordinary libibverbs program uses them. Two connected RC QPs
 * of one process: a type 1 window bound with ibv_bind_mw grants an RDMA
 * WRITE into its range and refuses one outside it (REM_ACCESS_ERR); an MR
 * re-registered to another PD with new rights receives a WRITE under its
 * new keys; bad arguments fail cleanly. A type 2 window is bound by a
 * BIND_MW work request (ibv_post_send, then ibv_wr_bind_mw) to the key
 * ibv_inc_rkey gives, admits an RDMA WRITE through that key (a second
 * window, bound with a counter as its rkey, answers to its own index with
 * that counter's low byte), is invalidated by IBV_WR_LOCAL_INV and by a peer's IBV_WR_SEND_WITH_INV,
 * after which a WRITE through its key fails. Prints "mwrereg: OK".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "check.h"
#include "rc.h"

enum { SIZE = 8192 };

static void write_to(struct ibv_qp *qp, struct ibv_mr *mr, char *src, uint32_t len, uint64_t raddr, uint32_t rkey,
		     uint64_t id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)src, .length = len, .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	CHECK(!ibv_post_send(qp, &wr, &bad), "post write");
}

static void post1(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	int rc = ibv_post_send(qp, wr, &bad);

	CHECK(!rc, "post_send opcode %d: %d", wr->opcode, rc);
}

/* Type 2 windows: bound, used, invalidated, through work requests. */
static void type2(struct ibv_context *ctx, struct ibv_pd *pd, uint16_t lid)
{
	struct ibv_cq *cqa = ibv_create_cq(ctx, 16, NULL, NULL, 0), *cqb = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	char *a = calloc(1, SIZE), *b = calloc(1, SIZE);
	struct ibv_mr *mra = ibv_reg_mr(pd, a, SIZE, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *mrb = ibv_reg_mr(pd, b, SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
	struct ibv_qp_init_attr_ex ia;
	struct ibv_qp *qa, *qb;
	struct ibv_qp_ex *qbx;
	struct ibv_mw *mw;
	struct ibv_wc wc;
	uint32_t key0, key1, key2;

	CHECK(cqa && cqb && mra && mrb, "type 2 resources");
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 8;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD;
	ia.pd = pd;
	ia.send_cq = ia.recv_cq = cqa;
	qa = ibv_create_qp_ex(ctx, &ia);
	ia.send_cq = ia.recv_cq = cqb;
	ia.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ia.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV;
	qb = ibv_create_qp_ex(ctx, &ia);
	CHECK(qa && qb, "type 2 qps");
	qbx = ibv_qp_to_qp_ex(qb);
	CHECK(qbx, "qp_ex");
	rc_to_rts(qa, qb->qp_num, lid, 0);
	rc_to_rts(qb, qa->qp_num, lid, IBV_ACCESS_REMOTE_WRITE);

	mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	CHECK(mw && mw->type == IBV_MW_TYPE_2, "alloc type 2");
	key0 = mw->rkey;
	errno = 0;
	{
		struct ibv_mw_bind mb = { .wr_id = 1, .send_flags = IBV_SEND_SIGNALED };

		mb.bind_info.mr = mrb;
		mb.bind_info.addr = (uintptr_t)b;
		mb.bind_info.length = 64;
		mb.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
		CHECK(ibv_bind_mw(qb, mw, &mb) == EINVAL, "ibv_bind_mw of a type 2 window");
	}

	/* Bind by ibv_post_send to ibv_inc_rkey of the key: mw->rkey stays. */
	key1 = ibv_inc_rkey(key0);
	CHECK(key1 != key0 && (key1 & 0xffffff00) == (key0 & 0xffffff00), "inc_rkey %#x -> %#x", key0, key1);
	{
		struct ibv_send_wr wr = { .wr_id = 40, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED };

		wr.bind_mw.mw = mw;
		wr.bind_mw.rkey = key1;
		wr.bind_mw.bind_info.mr = mrb;
		wr.bind_mw.bind_info.addr = (uintptr_t)b + 4096;
		wr.bind_mw.bind_info.length = 1024;
		wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
		post1(qb, &wr);
	}
	wc = wait1(cqb);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW && wc.wr_id == 40, "type 2 bind WC %s %d",
	      ibv_wc_status_str(wc.status), wc.opcode);
	CHECK(mw->rkey == key0, "posting the bind changed mw->rkey");
	memset(a, 'x', 128);
	write_to(qa, mra, a, 128, (uintptr_t)b + 4096, key1, 41);
	wc = wait1(cqa);
	CHECK(wc.status == IBV_WC_SUCCESS, "write through the type 2 window: %s", ibv_wc_status_str(wc.status));
	CHECK(b[4096] == 'x' && b[4096 + 127] == 'x' && b[4096 + 128] == 0, "type 2 window bytes");

	/* LOCAL_INV on the window's QP, then a new bind by ibv_wr_bind_mw,
	 * which a still bound type 2 window would refuse (MW-05). */
	{
		struct ibv_send_wr wr = { .wr_id = 42, .opcode = IBV_WR_LOCAL_INV, .send_flags = IBV_SEND_SIGNALED };

		wr.invalidate_rkey = key1;
		post1(qb, &wr);
	}
	wc = wait1(cqb);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_LOCAL_INV && wc.wr_id == 42, "LOCAL_INV WC %s %d",
	      ibv_wc_status_str(wc.status), wc.opcode);
	key2 = ibv_inc_rkey(key1);
	{
		struct ibv_mw_bind_info bi = { .mr = mrb, .addr = (uintptr_t)b + 4096, .length = 1024,
					       .mw_access_flags = IBV_ACCESS_REMOTE_WRITE };

		ibv_wr_start(qbx);
		qbx->wr_id = 43;
		qbx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_bind_mw(qbx, mw, key2, &bi);
		CHECK(!ibv_wr_complete(qbx), "wr_bind_mw");
	}
	wc = wait1(cqb);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW && wc.wr_id == 43, "wr_bind_mw WC %s",
	      ibv_wc_status_str(wc.status));
	memset(a, 'y', 64);
	write_to(qa, mra, a, 64, (uintptr_t)b + 4096 + 512, key2, 44);
	wc = wait1(cqa);
	CHECK(wc.status == IBV_WC_SUCCESS && b[4096 + 512] == 'y', "write after the second bind: %s",
	      ibv_wc_status_str(wc.status));

	/* A second window bound with a counter as its rkey (1024): only the
	 * low byte is the key, the window keeps its index (MW-05), as with
	 * rxe's and mlx5's providers. */
	{
		struct ibv_mw *mw2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
		struct ibv_send_wr wr = { .wr_id = 50, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED };
		uint32_t k;

		CHECK(mw2, "alloc a second type 2 window");
		k = (mw2->rkey & 0xffffff00) | (1024 & 0xff);
		wr.bind_mw.mw = mw2;
		wr.bind_mw.rkey = 1024;
		wr.bind_mw.bind_info.mr = mrb;
		wr.bind_mw.bind_info.addr = (uintptr_t)b + 6144;
		wr.bind_mw.bind_info.length = 64;
		wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
		post1(qb, &wr);
		wc = wait1(cqb);
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 50, "bind with rkey 1024: %s",
		      ibv_wc_status_str(wc.status));
		memset(a, 'k', 64);
		write_to(qa, mra, a, 64, (uintptr_t)b + 6144, k, 51);
		wc = wait1(cqa);
		CHECK(wc.status == IBV_WC_SUCCESS && b[6144] == 'k' && b[6144 + 63] == 'k',
		      "write through %#x (index of %#x, key byte of 1024): %s", k, mw2->rkey,
		      ibv_wc_status_str(wc.status));
		CHECK(!ibv_dealloc_mw(mw2), "dealloc the second type 2 window");
	}

	/* The peer invalidates the key with its SEND; the receive says so. */
	{
		struct ibv_sge sge = { .addr = (uintptr_t)b, .length = 64, .lkey = mrb->lkey };
		struct ibv_recv_wr rw = { .wr_id = 45, .sg_list = &sge, .num_sge = 1 }, *bad;
		struct ibv_sge ssge = { .addr = (uintptr_t)a, .length = 8, .lkey = mra->lkey };
		struct ibv_send_wr wr = { .wr_id = 46, .sg_list = &ssge, .num_sge = 1, .opcode = IBV_WR_SEND_WITH_INV,
					  .send_flags = IBV_SEND_SIGNALED };

		CHECK(!ibv_post_recv(qb, &rw, &bad), "post_recv");
		wr.invalidate_rkey = key2;
		post1(qa, &wr);
	}
	wc = wait1(cqa);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND && wc.wr_id == 46, "SEND_WITH_INV WC %s",
	      ibv_wc_status_str(wc.status));
	wc = wait1(cqb);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && (wc.wc_flags & IBV_WC_WITH_INV) &&
		      wc.invalidated_rkey == key2,
	      "recv of SEND_WITH_INV: %s flags %#x rkey %#x", ibv_wc_status_str(wc.status), wc.wc_flags,
	      wc.invalidated_rkey);

	/* The window no longer grants anything. */
	write_to(qa, mra, a, 64, (uintptr_t)b + 4096, key2, 47);
	wc = wait1(cqa);
	CHECK(wc.status == IBV_WC_REM_ACCESS_ERR, "write through an invalidated window: %s",
	      ibv_wc_status_str(wc.status));

	CHECK(!ibv_destroy_qp(qa) && !ibv_destroy_qp(qb), "type 2 destroy qps");
	CHECK(!ibv_dealloc_mw(mw), "dealloc type 2");
	CHECK(!ibv_dereg_mr(mra) && !ibv_dereg_mr(mrb), "type 2 dereg");
	CHECK(!ibv_destroy_cq(cqa) && !ibv_destroy_cq(cqb), "type 2 destroy cqs");
	free(a), free(b);
}

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cqa, *cqb;
	struct ibv_qp *qa, *qb;
	struct ibv_mr *mra, *mrb;
	struct ibv_mw *mw;
	struct ibv_port_attr pa;
	struct ibv_qp_init_attr ia;
	struct ibv_mw_bind bind;
	struct ibv_wc wc;
	char *a, *b, *b2, *cur;
	uint32_t oldkey;
	const char *prof = getenv("VERBSIM_PROFILE");
	int rxe = prof && !strcmp(prof, "rxe");
	int rc;

	CHECK(list && list[0], "no device");
	ctx = ibv_open_device(list[0]);
	CHECK(ctx, "open");
	CHECK(!ibv_query_port(ctx, 1, &pa), "query_port");
	pd = ibv_alloc_pd(ctx);
	a = calloc(1, SIZE);
	b = calloc(1, SIZE);
	b2 = calloc(1, SIZE);
	cur = b;
	mra = ibv_reg_mr(pd, a, SIZE, IBV_ACCESS_LOCAL_WRITE);
	mrb = ibv_reg_mr(pd, b, SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
	CHECK(pd && mra && mrb, "pd, mr");
	cqa = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	cqb = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 8;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.send_cq = ia.recv_cq = cqa;
	qa = ibv_create_qp(pd, &ia);
	ia.send_cq = ia.recv_cq = cqb;
	qb = ibv_create_qp(pd, &ia);
	CHECK(cqa && cqb && qa && qb, "cq, qp");
	rc_to_rts(qa, qb->qp_num, pa.lid, 0);
	rc_to_rts(qb, qa->qp_num, pa.lid, IBV_ACCESS_REMOTE_WRITE);

	/* A type 1 window over b[1024, 2048), bound by ibv_bind_mw on b's QP. */
	mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	CHECK(mw && mw->type == IBV_MW_TYPE_1 && mw->pd == pd, "alloc_mw");
	oldkey = mw->rkey;
	memset(&bind, 0, sizeof(bind));
	bind.wr_id = 77;
	bind.send_flags = IBV_SEND_SIGNALED;
	bind.bind_info.mr = mrb;
	bind.bind_info.addr = (uintptr_t)b + 1024;
	bind.bind_info.length = 1024;
	bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	CHECK(!(rc = ibv_bind_mw(qb, mw, &bind)), "bind_mw: %d", rc);
	CHECK(mw->rkey != oldkey, "the bound window keeps its old rkey %#x", oldkey);
	wc = wait1(cqb);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW && wc.wr_id == 77, "bind WC %s %d",
	      ibv_wc_status_str(wc.status), wc.opcode);

	/* A WRITE through the window lands in its range. */
	memset(a, 'w', 64);
	write_to(qa, mra, a, 64, (uintptr_t)b + 1024, mw->rkey, 1);
	wc = wait1(cqa);
	CHECK(wc.status == IBV_WC_SUCCESS, "write through the window: %s", ibv_wc_status_str(wc.status));
	CHECK(b[1024] == 'w' && b[1087] == 'w' && b[1088] == 0, "window bytes");

	/* Outside it: a remote access error, and the QP goes to ERROR. */
	write_to(qa, mra, a, 64, (uintptr_t)b + 2048, mw->rkey, 2);
	wc = wait1(cqa);
	CHECK(wc.status == IBV_WC_REM_ACCESS_ERR, "write outside the window: %s", ibv_wc_status_str(wc.status));
	CHECK(b[2048] == 0, "nothing written outside the window");

	/* Bad arguments. */
	CHECK(ibv_dealloc_mw(mw) == 0, "dealloc_mw");
	errno = 0;
	CHECK(!ibv_alloc_mw(pd, (enum ibv_mw_type)9) && errno == EINVAL, "alloc_mw of type 9");
	errno = 0;
	CHECK(ibv_rereg_mr(NULL, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, 0) == IBV_REREG_MR_ERR_INPUT &&
		      errno == EINVAL, "rereg NULL");
	errno = 0;
	CHECK(ibv_rereg_mr(mrb, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, NULL, 0, 0) == IBV_REREG_MR_ERR_INPUT &&
		      errno == EINVAL, "rereg translation without a buffer");

	/* ibv_rereg_mr: a new buffer, which a WRITE then reaches at its own
	 * address (refused under rxe, MR-16, the MR kept as it was); new
	 * access rights and a new PD take effect, under the MR's new keys. */
	CHECK(!ibv_destroy_qp(qa) && !ibv_destroy_qp(qb), "destroy qps");
	ia.send_cq = ia.recv_cq = cqa;
	qa = ibv_create_qp(pd, &ia);
	CHECK(qa, "qp again");
	errno = 0;
	rc = ibv_rereg_mr(mrb, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, b2, SIZE, 0);
	if (rxe) {
		CHECK(rc == IBV_REREG_MR_ERR_CMD && errno == EOPNOTSUPP, "rereg translation under rxe: %d", rc);
	} else {
		CHECK(rc == 0 && mrb->addr == b2 && mrb->length == SIZE, "rereg translation: %d", rc);
		cur = b2;
	}
	{
		struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
		struct ibv_qp *q2;

		CHECK(pd2, "pd2");
		CHECK(!(rc = ibv_rereg_mr(mrb, IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS, pd2, NULL, 0,
					   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)), "rereg pd+access: %d", rc);
		CHECK(mrb->pd == pd2 && mrb->addr == cur, "rereg: pd and addr");
		CHECK(ibv_dealloc_pd(pd2) == EBUSY, "a PD holding a re-registered MR deallocated");
		ia.send_cq = ia.recv_cq = cqb;
		q2 = ibv_create_qp(pd2, &ia);
		CHECK(q2, "qp on pd2");
		rc_to_rts(qa, q2->qp_num, pa.lid, 0);
		rc_to_rts(q2, qa->qp_num, pa.lid, IBV_ACCESS_REMOTE_WRITE);
		memset(a, 'r', 32);
		write_to(qa, mra, a, 32, (uintptr_t)cur + 100, mrb->rkey, 3);
		wc = wait1(cqa);
		CHECK(wc.status == IBV_WC_SUCCESS, "write after rereg: %s", ibv_wc_status_str(wc.status));
		CHECK(cur[100] == 'r' && cur[131] == 'r' && (cur == b || b[100] == 0), "bytes after rereg");
		CHECK(!ibv_destroy_qp(q2) && !ibv_destroy_qp(qa), "destroy");
		CHECK(!ibv_dereg_mr(mrb) && !ibv_dealloc_pd(pd2), "dereg mrb, dealloc pd2");
	}
	type2(ctx, pd, pa.lid);
	CHECK(!ibv_dereg_mr(mra), "dereg");
	CHECK(!ibv_destroy_cq(cqa) && !ibv_destroy_cq(cqb), "destroy cq");
	CHECK(!ibv_dealloc_pd(pd), "dealloc pd");
	CHECK(!ibv_close_device(ctx), "close");
	ibv_free_device_list(list);
	free(a), free(b), free(b2);
	printf("mwrereg: OK\n");
	return 0;
}
