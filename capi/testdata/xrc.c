/*
 * xrc.c: XRC through verbsim's drop-in library, as an ordinary libibverbs
 * program uses it (docs/xrc.md). One process, one device: an XRC domain
 * (by fd -1 and by file, with the kernel's answers for O_CREAT and
 * O_EXCL), two XRC SRQs with their own CQs and numbers, an XRC_RECV QP in
 * the domain and an XRC_SEND QP of a PD, connected; one SEND through
 * ibv_post_send (wr.qp_type.xrc.remote_srqn) and one through the ibv_wr_*
 * API (ibv_wr_set_xrc_srqn), each landing in the SRQ it names; the teardown
 * order the domain imposes. Under a profile without XRC (rxe) the verbs
 * fail with EOPNOTSUPP. Prints "xrc: OK".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "check.h"
#include "rc.h"

enum { SIZE = 4096 };

static struct ibv_xrcd *open_xrcd(struct ibv_context *ctx, uint32_t mask, int fd, int oflags)
{
	struct ibv_xrcd_init_attr a;

	memset(&a, 0, sizeof(a));
	a.comp_mask = mask;
	a.fd = fd;
	a.oflags = oflags;
	errno = 0;
	return ibv_open_xrcd(ctx, &a);
}

static void modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, const char *what)
{
	int rc = ibv_modify_qp(qp, a, mask);

	CHECK(!rc, "%s: %d", what, rc);
}

/* The attributes ibv_xsrq_pingpong gives an XRC pair, loopback on port 1. */
static void connect_pair(struct ibv_qp *snd, struct ibv_qp *rcv, uint16_t lid)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	modify(rcv, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, "recv INIT");
	a.qp_access_flags = 0;
	modify(snd, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, "send INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.dest_qp_num = snd->qp_num;
	a.path_mtu = IBV_MTU_1024;
	a.rq_psn = 7;
	a.min_rnr_timer = 12;
	a.ah_attr.dlid = lid;
	a.ah_attr.port_num = 1;
	modify(rcv, &a,
	       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
	       "recv RTR");
	a.dest_qp_num = rcv->qp_num;
	modify(snd, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN, "send RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.sq_psn = 9;
	modify(rcv, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN, "recv RTS");
	a.sq_psn = 7;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	modify(snd, &a,
	       IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		       IBV_QP_MAX_QP_RD_ATOMIC,
	       "send RTS");
}

static struct ibv_srq *xrc_srq(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_xrcd *x, struct ibv_cq *cq)
{
	struct ibv_srq_init_attr_ex a;

	memset(&a, 0, sizeof(a));
	a.attr.max_wr = 4;
	a.attr.max_sge = 1;
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD;
	a.srq_type = IBV_SRQT_XRC;
	a.pd = pd;
	a.xrcd = x;
	a.cq = cq;
	errno = 0;
	return ibv_create_srq_ex(ctx, &a);
}

static void post_srq(struct ibv_srq *srq, struct ibv_mr *mr, char *buf, uint64_t id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 1024, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	CHECK(!ibv_post_srq_recv(srq, &wr, &bad), "post_srq_recv");
}

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx;
	struct ibv_port_attr pa;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *scq, *cq1, *cq2;
	struct ibv_xrcd *x, *fx, *fx2;
	struct ibv_srq *s1, *s2, *basic;
	struct ibv_qp *snd, *rcv;
	struct ibv_qp_ex *sx;
	struct ibv_qp_init_attr_ex qa;
	struct ibv_srq_init_attr sa;
	struct ibv_wc wc;
	uint32_t n1 = 0, n2 = 0, n;
	char path[] = "/tmp/verbsim-xrc-XXXXXX";
	char *buf;
	int fd;

	CHECK(list && list[0], "no device");
	ctx = ibv_open_device(list[0]);
	CHECK(ctx, "open");
	CHECK(!ibv_query_port(ctx, 1, &pa), "query_port");
	pd = ibv_alloc_pd(ctx);
	buf = calloc(1, SIZE);
	mr = ibv_reg_mr(pd, buf, SIZE, IBV_ACCESS_LOCAL_WRITE);
	CHECK(pd && mr, "pd, mr");

	x = open_xrcd(ctx, IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS, -1, O_CREAT);
	if (!x && errno == EOPNOTSUPP) { /* a profile without XRC (XRC-03) */
		memset(&qa, 0, sizeof(qa));
		qa.qp_type = IBV_QPT_XRC_SEND;
		qa.comp_mask = IBV_QP_INIT_ATTR_PD;
		qa.pd = pd;
		qa.send_cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
		qa.cap.max_send_wr = qa.cap.max_send_sge = 1;
		errno = 0;
		CHECK(!ibv_create_qp_ex(ctx, &qa) && errno == EOPNOTSUPP, "XRC_SEND QP without XRC");
		CHECK(!ibv_destroy_cq(qa.send_cq), "destroy cq");
		CHECK(!ibv_dereg_mr(mr) && !ibv_dealloc_pd(pd) && !ibv_close_device(ctx), "teardown");
		ibv_free_device_list(list);
		free(buf);
		printf("xrc: OK (no XRC on this profile)\n");
		return 0;
	}
	CHECK(x && x->context == ctx, "open_xrcd fd -1");

	/* The domain's comp_mask and file: libibverbs' and the kernel's answers. */
	CHECK(!open_xrcd(ctx, IBV_XRCD_INIT_ATTR_FD, -1, 0) && errno == EINVAL, "open_xrcd without OFLAGS");
	CHECK(!open_xrcd(ctx, IBV_XRCD_INIT_ATTR_RESERVED | 3, -1, 0) && errno == EOPNOTSUPP, "reserved bit");
	CHECK(!open_xrcd(ctx, IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS, 12345, O_CREAT) && errno == EBADF,
	      "a closed fd");
	fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp");
	unlink(path);
	CHECK(!open_xrcd(ctx, IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS, fd, 0) && errno == EAGAIN,
	      "a file with no domain, no O_CREAT");
	fx = open_xrcd(ctx, IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS, fd, O_CREAT);
	CHECK(fx, "O_CREAT");
	CHECK(!open_xrcd(ctx, IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS, fd, O_CREAT | O_EXCL) &&
		      errno == EINVAL,
	      "O_EXCL on a file with a domain");
	fx2 = open_xrcd(ctx, IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS, fd, 0);
	CHECK(fx2 && fx2 != fx, "a second open of the file");

	scq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	cq1 = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	cq2 = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	CHECK(scq && cq1 && cq2, "cqs");

	/* Two XRC SRQs, s2 in the shared domain through its first open. */
	s1 = xrc_srq(ctx, pd, x, cq1);
	CHECK(s1, "XRC SRQ 1");
	s2 = xrc_srq(ctx, pd, fx, cq2);
	CHECK(s2, "XRC SRQ 2");
	CHECK(!ibv_get_srq_num(s1, &n1) && !ibv_get_srq_num(s2, &n2) && n1 && n2 && n1 != n2, "srq nums %u %u", n1,
	      n2);
	CHECK(!ibv_get_srq_num(s1, &n) && n == n1, "srq num stable");
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 2;
	sa.attr.max_sge = 1;
	basic = ibv_create_srq(pd, &sa);
	CHECK(basic && ibv_get_srq_num(basic, &n) == EOPNOTSUPP, "get_srq_num of a basic SRQ");
	CHECK(!ibv_destroy_srq(basic), "destroy basic");
	errno = 0;
	CHECK(!xrc_srq(ctx, pd, x, NULL) && errno == EINVAL, "XRC SRQ without a CQ");
	CHECK(ibv_close_xrcd(x) == EBUSY, "close a domain with an SRQ");

	/* The target QP lives in the domain (no PD, no CQ); the initiator in
	 * the PD, with a send CQ only and the ibv_wr_* API. */
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_XRC_RECV;
	qa.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	qa.xrcd = fx2; /* the shared domain: SRQ 2 is in it, SRQ 1 is not */
	rcv = ibv_create_qp_ex(ctx, &qa);
	CHECK(rcv && rcv->qp_type == IBV_QPT_XRC_RECV && !rcv->pd && !ibv_qp_to_qp_ex(rcv), "XRC_RECV QP");
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_XRC_SEND;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qa.pd = pd;
	qa.send_cq = scq;
	qa.cap.max_send_wr = 4;
	qa.cap.max_send_sge = 1;
	qa.send_ops_flags = IBV_QP_EX_WITH_SEND;
	snd = ibv_create_qp_ex(ctx, &qa);
	CHECK(snd && qa.cap.max_recv_wr == 0, "XRC_SEND QP");
	sx = ibv_qp_to_qp_ex(snd);
	CHECK(sx, "qp_ex");
	connect_pair(snd, rcv, pa.lid);
	{
		struct ibv_recv_wr rw = { .wr_id = 1 }, *bad;

		CHECK(ibv_post_recv(snd, &rw, &bad) == EINVAL, "post_recv on an XRC_SEND QP");
	}

	/* A SEND through ibv_post_send, for SRQ 2 (in the target's domain). */
	post_srq(s1, mr, buf + 1024, 11);
	post_srq(s2, mr, buf + 2048, 22);
	strcpy(buf, "to srq 2");
	{
		struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 16, .lkey = mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 5, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;

		wr.qp_type.xrc.remote_srqn = n2;
		CHECK(!ibv_post_send(snd, &wr, &bad), "post_send");
	}
	wc = wait1(scq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 5 && wc.opcode == IBV_WC_SEND, "send WC %s",
	      ibv_wc_status_str(wc.status));
	wc = wait1(cq2);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 22 && wc.opcode == IBV_WC_RECV && wc.byte_len == 16 &&
		      wc.qp_num == rcv->qp_num && wc.src_qp == snd->qp_num,
	      "recv WC %s wr_id %llu qp %#x src %#x", ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id,
	      wc.qp_num, wc.src_qp);
	CHECK(!strcmp(buf + 2048, "to srq 2"), "payload in SRQ 2's buffer");

	/* The same through ibv_wr_send + ibv_wr_set_xrc_srqn. */
	post_srq(s2, mr, buf + 3072, 23);
	strcpy(buf, "builder");
	ibv_wr_start(sx);
	sx->wr_id = 6;
	sx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(sx);
	ibv_wr_set_xrc_srqn(sx, n2);
	ibv_wr_set_sge(sx, mr->lkey, (uintptr_t)buf, 8);
	CHECK(!ibv_wr_complete(sx), "wr_complete");
	wc = wait1(scq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 6, "builder send WC %s", ibv_wc_status_str(wc.status));
	wc = wait1(cq2);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 23 && wc.byte_len == 8, "builder recv WC");
	CHECK(!memcmp(buf + 3072, "builder", 8), "builder payload");

	/* SRQ 1 is in another domain: a remote access error, nothing taken. */
	{
		struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 4, .lkey = mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;

		wr.qp_type.xrc.remote_srqn = n1;
		CHECK(!ibv_post_send(snd, &wr, &bad), "post_send to srq 1");
	}
	wc = wait1(scq);
	CHECK(wc.status == IBV_WC_REM_ACCESS_ERR && wc.wr_id == 7, "send to another domain's SRQ: %s",
	      ibv_wc_status_str(wc.status));
	CHECK(ibv_poll_cq(cq1, 1, &wc) == 0, "SRQ 1 took a message");

	/* Teardown: the QPs and SRQs, then the domains. */
	CHECK(!ibv_destroy_qp(snd) && !ibv_destroy_qp(rcv), "destroy qps");
	CHECK(!ibv_destroy_srq(s1) && !ibv_destroy_srq(s2), "destroy srqs");
	CHECK(!ibv_close_xrcd(x), "close x");
	CHECK(!ibv_close_xrcd(fx) && !ibv_close_xrcd(fx2), "close the shared domain twice");
	close(fd);
	CHECK(!ibv_destroy_cq(scq) && !ibv_destroy_cq(cq1) && !ibv_destroy_cq(cq2), "destroy cqs");
	CHECK(!ibv_dereg_mr(mr) && !ibv_dealloc_pd(pd), "dereg, dealloc");
	CHECK(!ibv_close_device(ctx), "close");
	ibv_free_device_list(list);
	free(buf);
	printf("xrc: OK\n");
	return 0;
}
