/*
 * dm.c: device memory (ibv_alloc_dm and the verbs on it) through verbsim's
 * drop-in library. max_dm_size from ibv_query_device_ex; the allocation
 * rules (EINVAL, ENOMEM once the pages are gone); the copies and their
 * EFAULT and EINVAL; an MR on device memory (zero-based, addr NULL) as the
 * target of an RDMA WRITE and READ and the local SGE of a SEND; ibv_free_dm
 * EBUSY while the MR exists; and a child of fork() allocating and copying
 * device memory of its own. With the argument "none" it checks a device
 * without device memory instead (max_dm_size 0, EOPNOTSUPP). Prints
 * "dm: OK".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "check.h"
#include "rc.h"

enum { SIZE = 4096 };

/* daemon is set when the library is the C-only one of the per-host daemon
 * (argument "daemon"), whose children of fork() use verbs of their own. */
static int daemon_lib;

/* child allocates and copies device memory in a child of fork(): through
 * the parent's context with the in-process library, which answers a child
 * from its own memory; with the daemon's, through a context of its own,
 * the parent's objects being EINVAL there (ibv_fork_init(3)). */
static void child(struct ibv_context *ctx, struct ibv_pd *pd, uint64_t max)
{
	struct ibv_device_attr_ex ax;
	struct ibv_alloc_dm_attr at = { .length = max / 4 };
	struct ibv_dm *dm;
	struct ibv_mr *mr;
	char in[8] = "forked!", out[8] = { 0 };

	if (daemon_lib) {
		struct ibv_device **l = ibv_get_device_list(NULL);

		CHECK(ibv_query_device_ex(ctx, NULL, &ax) == EINVAL, "the parent's context in the child");
		CHECK(!ibv_alloc_dm(ctx, &at) && errno == EINVAL, "alloc_dm on the parent's context in the child");
		CHECK(l && l[0], "device list in the child");
		ctx = ibv_open_device(l[0]);
		CHECK(ctx, "open_device in the child");
		pd = ibv_alloc_pd(ctx);
		CHECK(pd, "alloc_pd in the child");
	}
	CHECK(!ibv_query_device_ex(ctx, NULL, &ax) && ax.max_dm_size == max, "query_device_ex in the child");
	dm = ibv_alloc_dm(ctx, &at);
	CHECK(dm, "alloc_dm in the child");
	CHECK(!ibv_memcpy_to_dm(dm, 8, in, 8) && !ibv_memcpy_from_dm(out, dm, 8, 8) && !strcmp(out, "forked!"),
	      "copies in the child");
	CHECK(ibv_memcpy_to_dm(dm, 2, in, 8) == EINVAL, "unaligned copy in the child");
	mr = ibv_reg_dm_mr(pd, dm, 0, 8, IBV_ACCESS_ZERO_BASED);
	if (daemon_lib)
		CHECK(mr && !ibv_dereg_mr(mr), "reg_dm_mr in the child");
	else
		CHECK(!mr && errno == EOPNOTSUPP, "reg_dm_mr in the child");
	CHECK(!ibv_free_dm(dm), "free_dm in the child");
	exit(0);
}

static int none(struct ibv_context *ctx)
{
	struct ibv_device_attr_ex ax;
	struct ibv_alloc_dm_attr at = { .length = 64 };

	CHECK(!ibv_query_device_ex(ctx, NULL, &ax) && ax.max_dm_size == 0, "max_dm_size %lu", (unsigned long)ax.max_dm_size);
	errno = 0;
	CHECK(!ibv_alloc_dm(ctx, &at) && errno == EOPNOTSUPP, "alloc_dm without device memory");
	return 0;
}

int main(int argc, char **argv)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx;
	struct ibv_device_attr_ex ax;
	struct ibv_port_attr pa;
	struct ibv_alloc_dm_attr at;
	struct ibv_dm *dm, *big[64];
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp_init_attr qia;
	struct ibv_qp *qa, *qb;
	struct ibv_mr *mra, *dmr;
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_wc wc;
	static char a[SIZE];
	char buf[64];
	uint64_t max;
	int n, status;
	pid_t pid;

	daemon_lib = argc > 1 && !strcmp(argv[argc - 1], "daemon");
	CHECK(list && list[0], "no device");
	ctx = ibv_open_device(list[0]);
	CHECK(ctx, "open");
	if (argc > 1 && !strcmp(argv[1], "none")) {
		none(ctx);
		CHECK(!ibv_close_device(ctx), "close");
		ibv_free_device_list(list);
		printf("dm: OK\n");
		return 0;
	}
	CHECK(!ibv_query_device_ex(ctx, NULL, &ax), "query_device_ex");
	max = ax.max_dm_size;
	CHECK(max >= 2 * SIZE && max % SIZE == 0, "max_dm_size %lu", (unsigned long)max);

	/* DM-01 */
	memset(&at, 0, sizeof(at));
	CHECK(!ibv_alloc_dm(ctx, &at) && errno == EINVAL, "length 0");
	at.length = max + 1;
	CHECK(!ibv_alloc_dm(ctx, &at) && errno == EINVAL, "length above max");
	at.length = 64;
	at.comp_mask = 1;
	CHECK(!ibv_alloc_dm(ctx, &at) && errno == EINVAL, "comp_mask");
	at.comp_mask = 0;
	at.log_align_req = 13;
	CHECK(!ibv_alloc_dm(ctx, &at) && errno == EINVAL, "log_align_req");

	/* DM-03: page by page until none is left. */
	at.log_align_req = 6;
	for (n = 0; n < 64; n++) {
		big[n] = ibv_alloc_dm(ctx, &at);
		if (!big[n])
			break;
	}
	CHECK(n == (int)(max / SIZE) && errno == ENOMEM, "%d allocations of a page each", n);
	while (n > 0)
		CHECK(!ibv_free_dm(big[--n]), "free");

	/* DM-04 */
	at.length = 100;
	dm = ibv_alloc_dm(ctx, &at);
	CHECK(dm && dm->context == ctx && dm->memcpy_to_dm && dm->memcpy_from_dm, "alloc_dm");
	CHECK(!ibv_memcpy_to_dm(dm, 8, "device memory!!!", 16), "memcpy_to_dm");
	memset(buf, 0, sizeof(buf));
	CHECK(!ibv_memcpy_from_dm(buf, dm, 8, 16) && !memcmp(buf, "device memory!!!", 16), "memcpy_from_dm %s", buf);
	CHECK(ibv_memcpy_to_dm(dm, 3, buf, 4) == EINVAL && ibv_memcpy_from_dm(buf, dm, 4, 3) == EINVAL, "unaligned");
	CHECK(ibv_memcpy_to_dm(dm, 100, buf, 4) == EFAULT && ibv_memcpy_from_dm(buf, dm, 0, 104) == EFAULT, "out of range");

	/* DM-06, DM-07: an MR on it, written, read and sent from. */
	CHECK(!ibv_query_port(ctx, 1, &pa), "query_port");
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	CHECK(pd && cq, "pd, cq");
	CHECK(!ibv_reg_dm_mr(pd, dm, 0, 64, IBV_ACCESS_LOCAL_WRITE) && errno == EINVAL, "reg_dm_mr without ZERO_BASED");
	CHECK(!ibv_reg_dm_mr(pd, dm, 40, 64, IBV_ACCESS_ZERO_BASED) && errno == EINVAL, "reg_dm_mr past the end");
	dmr = ibv_reg_dm_mr(pd, dm, 32, 64, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						 IBV_ACCESS_REMOTE_READ);
	CHECK(dmr && dmr->addr == NULL && dmr->length == 64 && dmr->pd == pd, "reg_dm_mr");
	CHECK(ibv_free_dm(dm) == EBUSY, "free_dm with an MR");
	mra = ibv_reg_mr(pd, a, SIZE, IBV_ACCESS_LOCAL_WRITE);
	memset(&qia, 0, sizeof(qia));
	qia.send_cq = qia.recv_cq = cq;
	qia.qp_type = IBV_QPT_RC;
	qia.cap.max_send_wr = qia.cap.max_recv_wr = 4;
	qia.cap.max_send_sge = qia.cap.max_recv_sge = 1;
	qa = ibv_create_qp(pd, &qia);
	qb = ibv_create_qp(pd, &qia);
	CHECK(mra && qa && qb, "mr, qps");
	rc_to_rts(qa, qb->qp_num, pa.lid, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	rc_to_rts(qb, qa->qp_num, pa.lid, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);

	strcpy(a, "written on chip");
	sge = (struct ibv_sge){ .addr = (uintptr_t)a, .length = 16, .lkey = mra->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = 8; /* zero-based: byte 8 of the MR, 40 of the DM */
	wr.wr.rdma.rkey = dmr->rkey;
	CHECK(!ibv_post_send(qa, &wr, &bad), "post write");
	wc = wait1(cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 1, "write: %s", ibv_wc_status_str(wc.status));
	CHECK(!ibv_memcpy_from_dm(buf, dm, 40, 16) && !memcmp(buf, "written on chip", 16), "DM after the write: %s", buf);

	sge.addr = (uintptr_t)a + 100;
	wr.wr_id = 2;
	wr.opcode = IBV_WR_RDMA_READ;
	CHECK(!ibv_post_send(qa, &wr, &bad), "post read");
	wc = wait1(cq);
	CHECK(wc.status == IBV_WC_SUCCESS && !memcmp(a + 100, "written on chip", 16), "read: %s", ibv_wc_status_str(wc.status));

	memset(a + 200, 0, 16);
	sge.addr = (uintptr_t)a + 200;
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 3;
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	CHECK(!ibv_post_recv(qa, &rwr, &rbad), "post recv");
	struct ibv_sge dsge = { .addr = 8, .length = 16, .lkey = dmr->lkey };
	wr.wr_id = 4;
	wr.sg_list = &dsge;
	wr.opcode = IBV_WR_SEND;
	CHECK(!ibv_post_send(qb, &wr, &bad), "post send from the DM MR");
	for (n = 0; n < 2; n++) {
		wc = wait1(cq);
		CHECK(wc.status == IBV_WC_SUCCESS, "send: %s", ibv_wc_status_str(wc.status));
	}
	CHECK(!memcmp(a + 200, "written on chip", 16), "received %s", a + 200);

	/* A child of fork() has device memory of its own. */
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0)
		child(ctx, pd, max);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);

	CHECK(!ibv_destroy_qp(qa) && !ibv_destroy_qp(qb), "destroy qps");
	CHECK(!ibv_dereg_mr(dmr) && !ibv_dereg_mr(mra), "dereg");
	CHECK(!ibv_free_dm(dm), "free_dm after the MR's dereg");
	CHECK(!ibv_destroy_cq(cq) && !ibv_dealloc_pd(pd), "destroy cq, pd");
	CHECK(!ibv_close_device(ctx), "close");
	ibv_free_device_list(list);
	printf("dm: OK\n");
	return 0;
}
