/*
 * loopback.c: an ordinary libibverbs program, compiled by capi's tests
 * against /usr/include/infiniband/verbs.h and run on verbsim's drop-in
 * library. Two RC QPs of one process exchange SENDs in -e style (the CQs
 * armed, completion events read from a channel whose descriptor is polled),
 * an RDMA WRITE, an inline SEND from unregistered memory, and SENDs built
 * with the extended QP and polled with the extended CQ; bad arguments fail
 * with EINVAL instead of crashing. Prints "loopback: OK" and exits 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <infiniband/verbs.h>

#include "check.h"
#include "rc.h"

enum { SIZE = 4096, ITERS = 500 };

struct end {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char *buf;
};

/* to_rts connects qp to dqpn at dlid (rc.h), with remote WRITE and READ. */
static void to_rts(struct ibv_qp *qp, uint32_t dqpn, uint16_t dlid)
{
	rc_to_rts(qp, dqpn, dlid, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	CHECK(qp->state == IBV_QPS_RTS, "qp->state %d", qp->state);
}

static void post_recv(struct end *e, uint64_t id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf, .length = SIZE, .lkey = e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	CHECK(!ibv_post_recv(e->qp, &wr, &bad), "post_recv");
}

/* wait_event reads one completion event, blocking in poll() on the
 * channel's descriptor, as an event loop does. */
static struct ibv_cq *wait_event(struct ibv_comp_channel *ch)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *ctx;

	CHECK(poll(&p, 1, 10000) == 1, "no completion event within 10 s");
	CHECK(!ibv_get_cq_event(ch, &cq, &ctx), "get_cq_event");
	CHECK(ctx == cq->cq_context, "cq_context");
	ibv_ack_cq_events(cq, 1);
	CHECK(!ibv_req_notify_cq(cq, 0), "req_notify_cq");
	return cq;
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_port_attr port;
	struct end a, b;
	struct ibv_wc wc[4];
	int n, flags;

	/* Bad arguments fail with EINVAL. */
	errno = 0;
	CHECK(!ibv_alloc_pd(NULL) && errno == EINVAL, "alloc_pd(NULL)");
	CHECK(ibv_dereg_mr(NULL) == EINVAL, "dereg_mr(NULL)");
	CHECK(ibv_destroy_cq(NULL) == EINVAL, "destroy_cq(NULL)");
	CHECK(!ibv_open_device(NULL) && errno == EINVAL, "open_device(NULL)");

	list = ibv_get_device_list(&n);
	CHECK(list && n >= 1, "device list");
	CHECK(!strcmp(ibv_get_device_name(list[0]), "sim0"), "name %s", ibv_get_device_name(list[0]));
	ctx = ibv_open_device(list[0]);
	CHECK(ctx, "open_device");
	ibv_free_device_list(list);
	CHECK(ibv_query_device(ctx, NULL) == EINVAL, "query_device(ctx, NULL)");
	CHECK(!ibv_query_port(ctx, 1, &port), "query_port");
	CHECK(port.state == IBV_PORT_ACTIVE && port.lid, "port state %d lid %d", port.state, port.lid);

	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "alloc_pd");
	CHECK(!ibv_reg_mr(pd, NULL, 64, IBV_ACCESS_LOCAL_WRITE) && errno == EINVAL, "reg_mr(NULL buffer)");
	ch = ibv_create_comp_channel(ctx);
	CHECK(ch, "create_comp_channel");

	struct end *ends[2] = { &a, &b };
	for (int i = 0; i < 2; i++) {
		struct end *e = ends[i];
		struct ibv_qp_init_attr ia;

		e->buf = calloc(1, SIZE);
		e->mr = ibv_reg_mr(pd, e->buf, SIZE,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
		CHECK(e->mr && e->mr->addr == e->buf && e->mr->length == SIZE, "reg_mr");
		e->cq = ibv_create_cq(ctx, 16, e, ch, 0);
		CHECK(e->cq && e->cq->cqe >= 16 && e->cq->channel == ch, "create_cq");
		memset(&ia, 0, sizeof(ia));
		ia.send_cq = e->cq;
		ia.recv_cq = e->cq;
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_wr = 8;
		ia.cap.max_recv_wr = 8;
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = 1;
		ia.cap.max_inline_data = 64;
		e->qp = ibv_create_qp(pd, &ia);
		CHECK(e->qp && e->qp->qp_num && e->qp->state == IBV_QPS_RESET, "create_qp");
		CHECK(ia.cap.max_send_wr >= 8 && ia.cap.max_inline_data >= 64, "caps written back");
		CHECK(!ibv_req_notify_cq(e->cq, 0), "req_notify_cq");
	}
	to_rts(a.qp, b.qp->qp_num, port.lid);
	to_rts(b.qp, a.qp->qp_num, port.lid);

	/* The channel's descriptor is not readable while no event is queued,
	 * and in non-blocking mode ibv_get_cq_event says EAGAIN. */
	{
		struct pollfd p = { .fd = ch->fd, .events = POLLIN };
		struct ibv_cq *cq;
		void *cqctx;

		CHECK(poll(&p, 1, 0) == 0, "channel readable with no event");
		flags = fcntl(ch->fd, F_GETFL);
		CHECK(!fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK), "O_NONBLOCK");
		CHECK(ibv_get_cq_event(ch, &cq, &cqctx) == -1 && errno == EAGAIN, "EAGAIN");
		CHECK(!fcntl(ch->fd, F_SETFL, flags), "blocking again");
	}

	/* -e style ping: a SEND from a to b, waited for through events. */
	for (int i = 0; i < ITERS; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)a.buf, .length = 64, .lkey = a.mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 1000 + i, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED },
				   *bad;
		int got_send = 0, got_recv = 0;

		post_recv(&b, 2000 + i);
		snprintf(a.buf, 64, "ping %d", i);
		CHECK(!ibv_post_send(a.qp, &wr, &bad), "post_send");
		while (!got_send || !got_recv) {
			struct ibv_cq *cq = wait_event(ch);

			while ((n = ibv_poll_cq(cq, 4, wc)) > 0) {
				for (int k = 0; k < n; k++) {
					CHECK(wc[k].status == IBV_WC_SUCCESS, "wc status %s",
					      ibv_wc_status_str(wc[k].status));
					if (wc[k].opcode == IBV_WC_SEND) {
						CHECK(wc[k].wr_id == 1000u + i && wc[k].qp_num == a.qp->qp_num, "send wc");
						got_send++;
					} else {
						CHECK(wc[k].opcode == IBV_WC_RECV && wc[k].wr_id == 2000u + i &&
							      wc[k].byte_len == 64 && wc[k].qp_num == b.qp->qp_num,
						      "recv wc opcode %d", wc[k].opcode);
						got_recv++;
					}
				}
			}
			CHECK(n == 0, "poll_cq %d", n);
		}
		CHECK(got_send == 1 && got_recv == 1, "completions %d %d", got_send, got_recv);
		char want[64];
		snprintf(want, sizeof(want), "ping %d", i);
		CHECK(!strcmp(b.buf, want), "payload %s", b.buf);
	}

	/* An RDMA WRITE into b's buffer, and an inline SEND from the stack. */
	{
		struct ibv_sge sge = { .addr = (uintptr_t)a.buf, .length = 32, .lkey = a.mr->lkey };
		struct ibv_send_wr w = { .wr_id = 7, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
					 .send_flags = IBV_SEND_SIGNALED },
				   *bad;
		char msg[] = "inline from the stack";
		struct ibv_sge isge = { .addr = (uintptr_t)msg, .length = sizeof(msg), .lkey = 0 };
		struct ibv_send_wr iw = { .wr_id = 8, .sg_list = &isge, .num_sge = 1, .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE },
				   *ibad;
		int seen = 0;

		strcpy(a.buf, "written remotely");
		w.wr.rdma.remote_addr = (uintptr_t)b.buf + 1024;
		w.wr.rdma.rkey = b.mr->rkey;
		int wrc = ibv_post_send(a.qp, &w, &bad);
		CHECK(!wrc, "post RDMA WRITE: %s", strerror(wrc));
		post_recv(&b, 9);
		int rc = ibv_post_send(a.qp, &iw, &ibad);
		CHECK(!rc, "post inline SEND: %s", strerror(rc));
		memset(msg, 'x', sizeof(msg) - 1); /* the payload was copied at post */
		for (int tries = 0; seen < 3 && tries < 1000; tries++) {
			for (int i = 0; i < 2; i++) {
				n = ibv_poll_cq(ends[i]->cq, 4, wc);
				CHECK(n >= 0, "poll");
				for (int k = 0; k < n; k++) {
					CHECK(wc[k].status == IBV_WC_SUCCESS, "status %s", ibv_wc_status_str(wc[k].status));
					seen++;
				}
			}
			if (seen < 3)
				usleep(1000);
		}
		CHECK(seen == 3, "%d completions", seen);
		CHECK(!strcmp(b.buf + 1024, "written remotely"), "RDMA WRITE payload");
		CHECK(!strcmp(b.buf, "inline from the stack"), "inline payload %s", b.buf);
		/* Drain the events those completions raised. */
		for (int i = 0; i < 2; i++) {
			struct ibv_cq *cq;
			void *cqctx;

			flags = fcntl(ch->fd, F_GETFL);
			fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK);
			while (!ibv_get_cq_event(ch, &cq, &cqctx))
				ibv_ack_cq_events(cq, 1);
			fcntl(ch->fd, F_SETFL, flags);
		}
	}

	/* The extended QP and CQ: ibv_wr_* builders, ibv_start_poll. */
	{
		struct ibv_cq_init_attr_ex cqa = { .cqe = 16, .wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM };
		struct ibv_cq_ex *xcq = ibv_create_cq_ex(ctx, &cqa);
		CHECK(xcq, "create_cq_ex");
		struct ibv_qp_init_attr_ex qa;
		memset(&qa, 0, sizeof(qa));
		qa.send_cq = ibv_cq_ex_to_cq(xcq);
		qa.recv_cq = ibv_cq_ex_to_cq(xcq);
		qa.qp_type = IBV_QPT_RC;
		qa.cap.max_send_wr = 8;
		qa.cap.max_recv_wr = 8;
		qa.cap.max_send_sge = 2;
		qa.cap.max_recv_sge = 1;
		qa.cap.max_inline_data = 16;
		qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		qa.pd = pd;
		qa.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE;
		struct ibv_qp *x = ibv_create_qp_ex(ctx, &qa);
		CHECK(x, "create_qp_ex");
		struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(x);
		CHECK(qx && qx->wr_send && qx->wr_set_sge && qx->wr_complete && qx->wr_bind_mw &&
			      qx->wr_atomic_write && qx->wr_send_tso && qx->wr_set_xrc_srqn,
		      "every wr_* slot set");
		CHECK(!ibv_qp_to_qp_ex(a.qp), "a legacy QP has no qp_ex");

		/* Loop back to itself: x sends to x. */
		struct end xe = { .cq = ibv_cq_ex_to_cq(xcq), .qp = x, .mr = b.mr, .buf = b.buf };
		to_rts(x, x->qp_num, port.lid);
		post_recv(&xe, 50);
		post_recv(&xe, 51);
		strcpy(a.buf, "built");
		ibv_wr_start(qx);
		qx->wr_id = 60;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(qx);
		ibv_wr_set_sge(qx, a.mr->lkey, (uintptr_t)a.buf, 6);
		qx->wr_id = 61;
		ibv_wr_send(qx);
		char inl[] = "inl";
		ibv_wr_set_inline_data(qx, inl, sizeof(inl));
		CHECK(!ibv_wr_complete(qx), "wr_complete");

		/* An unsupported builder fails the batch with EOPNOTSUPP. */
		ibv_wr_start(qx);
		ibv_wr_send_tso(qx, NULL, 0, 0);
		CHECK(ibv_wr_complete(qx) == EOPNOTSUPP, "TSO batch");

		struct ibv_poll_cq_attr pa = { 0 };
		int seen = 0, sends = 0;
		for (int tries = 0; seen < 4 && tries < 1000; tries++) {
			int rc = ibv_start_poll(xcq, &pa);
			if (rc == ENOENT) {
				usleep(1000);
				continue;
			}
			CHECK(!rc, "start_poll %d", rc);
			do {
				CHECK(xcq->status == IBV_WC_SUCCESS, "ex status %d", xcq->status);
				CHECK(ibv_wc_read_qp_num(xcq) == x->qp_num, "read_qp_num");
				if (ibv_wc_read_opcode(xcq) == IBV_WC_SEND)
					sends++;
				else
					CHECK(xcq->wr_id == 50 || xcq->wr_id == 51, "recv wr_id %lu", xcq->wr_id);
				seen++;
			} while (ibv_next_poll(xcq) == 0);
			ibv_end_poll(xcq);
		}
		CHECK(seen == 4 && sends == 2, "ex completions %d sends %d", seen, sends);
		CHECK(!strcmp(b.buf, "inl"), "last payload %s", b.buf);
		CHECK(!ibv_destroy_qp(x), "destroy qp_ex");
		CHECK(!ibv_destroy_cq(ibv_cq_ex_to_cq(xcq)), "destroy cq_ex");
	}

	/* The async descriptor has nothing to say. */
	{
		struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
		CHECK(poll(&p, 1, 0) == 0, "async fd readable");
	}

	/* A CQ in use is EBUSY, and the refusal loses none of its events. */
	{
		struct ibv_sge sge = { .addr = (uintptr_t)a.buf, .length = 8, .lkey = a.mr->lkey };
		struct ibv_send_wr w = { .wr_id = 99, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
					 .send_flags = IBV_SEND_SIGNALED },
				   *bad;
		struct pollfd p = { .fd = ch->fd, .events = POLLIN };

		w.wr.rdma.remote_addr = (uintptr_t)b.buf;
		w.wr.rdma.rkey = b.mr->rkey;
		CHECK(!ibv_req_notify_cq(a.cq, 0), "arm");
		CHECK(!ibv_post_send(a.qp, &w, &bad), "post");
		CHECK(poll(&p, 1, 10000) == 1, "event");
		CHECK(ibv_destroy_cq(a.cq) == EBUSY, "a CQ in use is EBUSY");
		/* b's CQ is armed too (wait_event re-arms), and in Background
		 * mode an event of b's may be queued first: read until a's. */
		int found = 0;
		for (int i = 0; i < 4 && !found; i++)
			found = wait_event(ch) == a.cq;
		CHECK(found, "the event survived the refused destroy");
		CHECK(ibv_poll_cq(a.cq, 4, wc) == 1 && wc[0].wr_id == 99, "completion");
	}
	for (int i = 0; i < 2; i++) {
		struct end *e = ends[i];
		CHECK(!ibv_destroy_qp(e->qp), "destroy_qp");
		CHECK(!ibv_destroy_cq(e->cq), "destroy_cq");
		CHECK(!ibv_dereg_mr(e->mr), "dereg_mr");
		free(e->buf);
	}
	CHECK(!ibv_destroy_comp_channel(ch), "destroy_comp_channel");
	CHECK(!ibv_dealloc_pd(pd), "dealloc_pd");
	CHECK(!ibv_close_device(ctx), "close_device");

	/* A child of fork() gets a clean failure, not a hang, from the
	 * in-process library, whose Go runtime does not survive fork; with
	 * the per-host daemon's C-only library (argument "daemon") it lists
	 * and opens the devices itself. exit() runs the library's destructor
	 * there too. */
	{
		int daemon_lib = argc > 1 && !strcmp(argv[1], "daemon");
		pid_t pid = fork();
		int st;

		CHECK(pid >= 0, "fork");
		if (pid == 0) {
			errno = 0;
			struct ibv_device **l = ibv_get_device_list(NULL);
			if (daemon_lib) {
				struct ibv_context *c = l && l[0] ? ibv_open_device(l[0]) : NULL;
				exit(c && !ibv_close_device(c) ? 0 : 4);
			}
			exit(!l && errno == EOPNOTSUPP ? 0 : 3);
		}
		CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %x", st);
	}
	printf("loopback: OK\n");
	return 0;
}
