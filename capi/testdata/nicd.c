/*
 * nicd.c: what a program can do to the C-only library of the per-host
 * daemon (docs/daemon.md) that used to end it, each a subcommand run by
 * capi's TestDaemonRepro and TestDaemonCrash:
 *
 *   unmapped  ibv_reg_mr over unmapped memory is EFAULT, and with write
 *             access over read-only memory too, as the kernel's pinning
 *   munmap    a registered buffer unmapped by the program: WRITEs into it
 *             and READs from it complete, nothing crashes (docs/daemon.md)
 *   destroy   a second destroy of every kind of object is EINVAL
 *   sigexit   a signal handler calls exit() while another thread is in
 *             verbs: the process exits 0, at once
 *   fork      a child of fork() lists, opens and uses devices of its own;
 *             the parent's objects are EINVAL there, and memory registered
 *             before the fork stays the parent's
 *   crash     blocks in ibv_get_cq_event after printing "waiting"; when the
 *             test kills the daemon the wait returns EIO and so do verbs
 *   idlepoll  polls an empty CQ 100000 times between two writes to stdout,
 *             which strace shows to make no system call in between
 *   signal    a signal whose handler has no SA_RESTART interrupts a blocked
 *             ibv_get_cq_event (-1, EINTR), as the kernel's read(2) does
 *             and as qperf relies on to stop at its alarm; with SA_RESTART
 *             the wait goes on until the event comes
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "check.h"
#include "rc.h"

struct world {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *a, *b;
	uint16_t lid;
};

static struct ibv_qp *rc_qp(struct world *w)
{
	struct ibv_qp_init_attr qa = { .send_cq = w->cq, .recv_cq = w->cq, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp *q = ibv_create_qp(w->pd, &qa);

	CHECK(q, "create_qp");
	return q;
}

/* open_world opens the first device, a PD, a CQ and two connected RC QPs. */
static void open_world(struct world *w)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_port_attr pa;
	const int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

	CHECK(l && l[0], "no device");
	w->ctx = ibv_open_device(l[0]);
	CHECK(w->ctx, "open_device");
	ibv_free_device_list(l);
	CHECK(!ibv_query_port(w->ctx, 1, &pa), "query_port");
	w->lid = pa.lid;
	w->pd = ibv_alloc_pd(w->ctx);
	CHECK(w->pd, "alloc_pd");
	w->cq = ibv_create_cq(w->ctx, 16, NULL, NULL, 0);
	CHECK(w->cq, "create_cq");
	w->a = rc_qp(w);
	w->b = rc_qp(w);
	rc_to_rts(w->a, w->b->qp_num, w->lid, all);
	rc_to_rts(w->b, w->a->qp_num, w->lid, all);
}

static void close_world(struct world *w)
{
	CHECK(!ibv_destroy_qp(w->a) && !ibv_destroy_qp(w->b), "destroy_qp");
	CHECK(!ibv_destroy_cq(w->cq), "destroy_cq");
	CHECK(!ibv_dealloc_pd(w->pd), "dealloc_pd");
	CHECK(!ibv_close_device(w->ctx), "close_device");
}

/* rdma posts one signaled RDMA op of n bytes from local to remote on qp and
 * returns its completion. */
static struct ibv_wc rdma(struct world *w, enum ibv_wr_opcode op, struct ibv_mr *local, void *laddr,
			  struct ibv_mr *remote, void *raddr, uint32_t n)
{
	struct ibv_sge s = { .addr = (uintptr_t)laddr, .length = n, .lkey = local->lkey };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &s, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.rdma.remote_addr = (uintptr_t)raddr;
	wr.wr.rdma.rkey = remote->rkey;
	CHECK(!ibv_post_send(w->a, &wr, &bad), "post_send");
	return wait1(w->cq);
}

static int cmd_unmapped(void)
{
	struct world w;
	long page = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr;

	open_world(&w);
	CHECK(p != MAP_FAILED, "mmap");
	CHECK(!munmap(p + page, page), "munmap the second page");
	errno = 0;
	mr = ibv_reg_mr(w.pd, p + page, page, IBV_ACCESS_LOCAL_WRITE);
	CHECK(!mr && errno == EFAULT, "reg_mr over an unmapped page");
	errno = 0;
	mr = ibv_reg_mr(w.pd, p, 3 * page, 0);
	CHECK(!mr && errno == EFAULT, "reg_mr over a hole");
	CHECK(!mprotect(p + 2 * page, page, PROT_READ), "mprotect");
	errno = 0;
	mr = ibv_reg_mr(w.pd, p + 2 * page, page, IBV_ACCESS_LOCAL_WRITE);
	CHECK(!mr && errno == EFAULT, "reg_mr with LOCAL_WRITE over read-only memory");
	mr = ibv_reg_mr(w.pd, p + 2 * page, page, IBV_ACCESS_REMOTE_READ);
	CHECK(mr, "reg_mr for reading over read-only memory");
	CHECK(!ibv_dereg_mr(mr), "dereg_mr");
	mr = ibv_reg_mr(w.pd, p + page, page, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	if (mr) /* on-demand pages are not pinned: no fault until used */
		CHECK(!ibv_dereg_mr(mr), "dereg_mr");
	close_world(&w);
	printf("unmapped: OK\n");
	return 0;
}

static int cmd_munmap(void)
{
	struct world w;
	long page = sysconf(_SC_PAGESIZE);
	const int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	char *gone = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *src = malloc(2 * page);
	struct ibv_mr *gmr, *smr;
	struct ibv_wc wc;

	open_world(&w);
	CHECK(gone != MAP_FAILED && src, "buffers");
	memset(src, 'x', 2 * page);
	gmr = ibv_reg_mr(w.pd, gone, 2 * page, all);
	smr = ibv_reg_mr(w.pd, src, 2 * page, all);
	CHECK(gmr && smr, "reg_mr");
	CHECK(!munmap(gone, 2 * page), "munmap the registered buffer");
	/* The adapter still reaches pinned pages the program no longer maps:
	 * the requests complete, and the program never sees the bytes. */
	wc = rdma(&w, IBV_WR_RDMA_WRITE, smr, src, gmr, gone, 2 * page);
	CHECK(wc.status == IBV_WC_SUCCESS, "WRITE into the unmapped buffer: %s", ibv_wc_status_str(wc.status));
	wc = rdma(&w, IBV_WR_RDMA_READ, smr, src, gmr, gone + 100, 1000);
	CHECK(wc.status == IBV_WC_SUCCESS, "READ from the unmapped buffer: %s", ibv_wc_status_str(wc.status));
	wc = rdma(&w, IBV_WR_RDMA_WRITE, gmr, gone, smr, src, 64);
	CHECK(wc.status == IBV_WC_SUCCESS, "WRITE from the unmapped buffer: %s", ibv_wc_status_str(wc.status));
	CHECK(!ibv_dereg_mr(gmr) && !ibv_dereg_mr(smr), "dereg_mr");
	close_world(&w);
	free(src);
	printf("munmap: OK\n");
	return 0;
}

static int cmd_destroy(void)
{
	struct world w;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	struct ibv_srq *srq;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_ah_attr aa = { .dlid = 1, .port_num = 1 };
	static char buf[64];

	open_world(&w);
	ch = ibv_create_comp_channel(w.ctx);
	cq = ibv_create_cq(w.ctx, 4, NULL, ch, 0);
	mr = ibv_reg_mr(w.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	ah = ibv_create_ah(w.pd, &aa);
	srq = ibv_create_srq(w.pd, &sa);
	CHECK(ch && cq && mr && ah && srq, "objects");
	/* The library frees an object's struct when it is destroyed; a second
	 * destroy through the dangling pointer finds a dead handle in it as
	 * long as the memory was not reused, and the daemon, whose handles
	 * never repeat, says EINVAL: no crash, no other object touched. */
	CHECK(!ibv_destroy_srq(srq) && ibv_destroy_srq(srq) == EINVAL, "destroy_srq twice");
	CHECK(!ibv_destroy_ah(ah) && ibv_destroy_ah(ah) == EINVAL, "destroy_ah twice");
	CHECK(!ibv_dereg_mr(mr) && ibv_dereg_mr(mr) == EINVAL, "dereg_mr twice");
	CHECK(!ibv_destroy_cq(cq) && ibv_destroy_cq(cq) == EINVAL, "destroy_cq twice");
	CHECK(!ibv_destroy_comp_channel(ch) && ibv_destroy_comp_channel(ch) == EINVAL, "destroy_comp_channel twice");
	CHECK(!ibv_destroy_qp(w.b) && ibv_destroy_qp(w.b) == EINVAL, "destroy_qp twice");
	CHECK(!ibv_destroy_qp(w.a), "destroy_qp");
	CHECK(!ibv_destroy_cq(w.cq), "destroy_cq");
	CHECK(!ibv_dealloc_pd(w.pd) && ibv_dealloc_pd(w.pd) == EINVAL, "dealloc_pd twice");
	CHECK(!ibv_close_device(w.ctx), "close_device");
	printf("destroy: OK\n");
	return 0;
}

static struct world sig_world;

static void on_signal(int sig)
{
	(void)sig;
	exit(0);
}

/* busy is a thread in verbs without end. */
static void *busy(void *arg)
{
	struct ibv_wc wc;
	struct ibv_port_attr pa;

	(void)arg;
	for (;;) {
		ibv_poll_cq(sig_world.cq, 1, &wc);
		ibv_query_port(sig_world.ctx, 1, &pa);
	}
	return NULL;
}

static int cmd_sigexit(void)
{
	pthread_t t[2];

	open_world(&sig_world);
	signal(SIGUSR1, on_signal);
	for (int i = 0; i < 2; i++)
		CHECK(!pthread_create(&t[i], NULL, busy, NULL), "pthread_create");
	usleep(20000);
	printf("sigexit: exiting\n");
	fflush(stdout);
	kill(getpid(), SIGUSR1);
	for (;;)
		pause();
}

static int cmd_fork(void)
{
	struct world w;
	const int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	static char mine[256], peer[256];
	struct ibv_mr *m1, *m2;
	struct ibv_wc wc;
	int st;
	pid_t pid;

	open_world(&w);
	strcpy(mine, "the parent's");
	m1 = ibv_reg_mr(w.pd, mine, sizeof(mine), all);
	m2 = ibv_reg_mr(w.pd, peer, sizeof(peer), all);
	CHECK(m1 && m2, "reg_mr");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct world c;

		/* The parent's objects are not the child's. */
		errno = 0;
		CHECK(!ibv_alloc_pd(w.ctx) && errno == EINVAL, "alloc_pd on the parent's context");
		CHECK(ibv_destroy_qp(w.a) == EINVAL, "destroy the parent's QP");
		/* Its copy of the registered buffer is its own. */
		strcpy(mine, "the child's");
		/* Devices of its own work end to end. */
		open_world(&c);
		struct ibv_mr *cm = ibv_reg_mr(c.pd, mine, sizeof(mine), all);
		struct ibv_mr *cp = ibv_reg_mr(c.pd, peer, sizeof(peer), all);
		CHECK(cm && cp, "reg_mr in the child");
		wc = rdma(&c, IBV_WR_RDMA_WRITE, cm, mine, cp, peer, 32);
		CHECK(wc.status == IBV_WC_SUCCESS && !strcmp(peer, "the child's"), "WRITE in the child: %s",
		      ibv_wc_status_str(wc.status));
		CHECK(!ibv_dereg_mr(cm) && !ibv_dereg_mr(cp), "dereg_mr in the child");
		close_world(&c);
		exit(0);
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	/* The parent's MR still covers the parent's bytes (ibv_fork_init(3):
	 * as IBV_FORK_UNNEEDED, the fork-safe kernels). */
	wc = rdma(&w, IBV_WR_RDMA_WRITE, m1, mine, m2, peer, 32);
	CHECK(wc.status == IBV_WC_SUCCESS && !strcmp(peer, "the parent's"), "WRITE in the parent: %s (%s)",
	      ibv_wc_status_str(wc.status), peer);
	CHECK(ibv_is_fork_initialized() == IBV_FORK_UNNEEDED, "is_fork_initialized");
	CHECK(!ibv_dereg_mr(m1) && !ibv_dereg_mr(m2), "dereg_mr");
	close_world(&w);
	printf("fork: OK\n");
	return 0;
}

static int cmd_crash(void)
{
	struct world w;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq, *ecq;
	void *ectx;
	struct pollfd p;

	open_world(&w);
	ch = ibv_create_comp_channel(w.ctx);
	CHECK(ch, "create_comp_channel");
	cq = ibv_create_cq(w.ctx, 4, NULL, ch, 0);
	CHECK(cq && !ibv_req_notify_cq(cq, 0), "armed CQ");
	printf("waiting\n");
	fflush(stdout);
	errno = 0;
	CHECK(ibv_get_cq_event(ch, &ecq, &ectx) == -1 && errno == EIO, "get_cq_event when the daemon dies");
	/* The descriptor says so too: hung up, for a program that polls it. */
	p.fd = ch->fd;
	p.events = POLLIN;
	CHECK(poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLIN)), "the channel's descriptor: %#x", p.revents);
	errno = 0;
	CHECK(!ibv_alloc_pd(w.ctx) && errno == EIO, "alloc_pd without a daemon");
	CHECK(ibv_req_notify_cq(cq, 0) == EIO, "req_notify_cq without a daemon");
	printf("crash: OK\n");
	return 0;
}

static int cmd_idlepoll(void)
{
	struct world w;
	struct ibv_wc wc;
	int n = 0;

	open_world(&w);
	CHECK(write(1, "polling\n", 8) == 8, "write");
	for (int i = 0; i < 100000; i++)
		n += ibv_poll_cq(w.cq, 1, &wc);
	CHECK(write(1, "polled\n", 7) == 7, "write");
	CHECK(n == 0, "completions on an idle CQ");
	close_world(&w);
	printf("idlepoll: OK\n");
	return 0;
}

/* The signal subcommand's state: the main thread, the signals its
 * handler took, and whether its wait has returned. */
static pthread_t sig_main;
static volatile sig_atomic_t sig_taken;
static volatile int sig_done;

static void on_alarm(int sig) { (void)sig; sig_taken++; }

struct sig_arg {
	struct ibv_qp *x;
	int then_send; /* after some signals, a SEND whose completion wakes the wait */
};

/* sig_pester signals the main thread every 10 ms until its wait returned
 * (signals before the wait began are harmless: the handler only counts),
 * and with then_send, after five, posts a SEND that completes on the
 * waited-for CQ. */
static void *sig_pester(void *p)
{
	struct sig_arg *a = p;
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	int sent = 0;

	for (int i = 0; !__atomic_load_n(&sig_done, __ATOMIC_ACQUIRE); i++) {
		pthread_kill(sig_main, SIGALRM);
		if (a->then_send && i == 5 && !sent) {
			struct ibv_send_wr wr = { .wr_id = 9, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;

			CHECK(!ibv_post_send(a->x, &wr, &bad), "post_send");
			sent = 1;
		}
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static int cmd_signal(void)
{
	struct world w;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq, *ecq;
	struct ibv_qp *x, *y;
	struct ibv_recv_wr rwr = { .wr_id = 1 }, *rbad;
	struct sigaction sa = { .sa_handler = on_alarm };
	struct sig_arg arg = { 0 };
	pthread_t t;
	void *ectx;
	int rc;

	open_world(&w);
	ch = ibv_create_comp_channel(w.ctx);
	CHECK(ch, "create_comp_channel");
	cq = ibv_create_cq(w.ctx, 8, NULL, ch, 0);
	CHECK(cq && !ibv_req_notify_cq(cq, 0), "armed CQ");
	{
		struct ibv_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
					       .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 } };

		x = ibv_create_qp(w.pd, &qa);
		y = ibv_create_qp(w.pd, &qa);
		CHECK(x && y, "create_qp");
	}
	rc_to_rts(x, y->qp_num, w.lid, 0);
	rc_to_rts(y, x->qp_num, w.lid, 0);
	CHECK(!ibv_post_recv(y, &rwr, &rbad), "post_recv");
	sig_main = pthread_self();

	/* No SA_RESTART: the wait ends with EINTR. */
	CHECK(!sigaction(SIGALRM, &sa, NULL), "sigaction");
	arg.x = x;
	CHECK(!pthread_create(&t, NULL, sig_pester, &arg), "pthread_create");
	errno = 0;
	rc = ibv_get_cq_event(ch, &ecq, &ectx);
	CHECK(rc == -1 && errno == EINTR, "get_cq_event interrupted: %d, errno %d", rc, errno);
	__atomic_store_n(&sig_done, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);

	/* SA_RESTART: the wait goes on through the signals, to the event. */
	sa.sa_flags = SA_RESTART;
	CHECK(!sigaction(SIGALRM, &sa, NULL), "sigaction");
	sig_done = 0;
	arg.then_send = 1;
	CHECK(!pthread_create(&t, NULL, sig_pester, &arg), "pthread_create");
	rc = ibv_get_cq_event(ch, &ecq, &ectx);
	__atomic_store_n(&sig_done, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	CHECK(rc == 0 && ecq == cq, "get_cq_event with SA_RESTART: %d, errno %d", rc, errno);
	ibv_ack_cq_events(cq, 1);
	CHECK(sig_taken > 0, "no signal taken");

	CHECK(!ibv_destroy_qp(x) && !ibv_destroy_qp(y), "destroy_qp");
	CHECK(!ibv_destroy_cq(cq), "destroy_cq");
	CHECK(!ibv_destroy_comp_channel(ch), "destroy_comp_channel");
	close_world(&w);
	printf("signal: OK\n");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(void);
	} cmds[] = { { "unmapped", cmd_unmapped }, { "munmap", cmd_munmap }, { "destroy", cmd_destroy },
		     { "sigexit", cmd_sigexit },   { "fork", cmd_fork },     { "crash", cmd_crash },
		     { "idlepoll", cmd_idlepoll }, { "signal", cmd_signal } };

	for (size_t i = 0; argc == 2 && i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn();
	fprintf(stderr, "usage: %s unmapped|munmap|destroy|sigexit|fork|crash|idlepoll|signal\n", argv[0]);
	return 2;
}
