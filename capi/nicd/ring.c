/*
 * ring.c: the fast path of a CQ in the C-only library (ring.h; nicd.h,
 * struct nicd_cq_ring). The daemon mirrors the engine CQ's completions
 * into a memfd this library made and handed over; polling reads them and
 * moves tail, the poll iterator moves seen, and neither makes a system
 * call: the engine learns of them when what is left in the CQ matters
 * (internal/nicd/ring.go). A mutex of the process (no system call when
 * uncontended) keeps a resize, which may change the ring, apart from polls.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

#include "../vs.h"
#include "client.h"
#include "ring.h"

struct nicd_cq_fast {
	pthread_mutex_t mu;
	struct nicd_cq_ring *r;
	size_t len;
	uint64_t mask;
	uint64_t cur; /* the poll iterator's entry */
	int end;      /* next_poll went past the last one */
	unsigned empty; /* polls that found nothing in a row */
	int64_t expect; /* requests posted that may complete here, not yet polled */
};

#define LOAD(p) __atomic_load_n(p, __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n(p, v, __ATOMIC_RELEASE)

static uint32_t ring_size(int cqe)
{
	uint32_t n = 64;

	while (n < (uint32_t)cqe && n < (1u << 24))
		n <<= 1;
	return n;
}

/* make_ring maps a fresh ring of size entries and hands it to the daemon
 * for q. */
static struct nicd_cq_ring *make_ring(struct capi_cq *q, uint32_t size, size_t *len)
{
	size_t n = sizeof(struct nicd_cq_ring) + (size_t)size * sizeof(struct nicd_cqe);
	struct nicd_rep p;
	struct nicd_cq_ring *r;
	int fd = memfd_create("verbsim-cq", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return NULL;
	if (ftruncate(fd, (off_t)n) || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		close(fd);
		return NULL;
	}
	r = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	if (nicd_call_fds(NICD_CQ_RING, nicd_untag(q->h), size, 0, NULL, 0, &fd, 1, &p, NULL, 0)) {
		munmap(r, n);
		close(fd);
		return NULL;
	}
	close(fd);
	*len = n;
	return r;
}

void nicd_ring_attach(struct capi_cq *q, int cqe)
{
	struct nicd_cq_fast *f;
	uint32_t size = ring_size(cqe);
	const char *off = getenv("VERBSIM_NICD_SLOWPOLL");

	if (off && *off) /* every poll a request to the daemon, for comparison (docs/daemon.md) */
		return;
	f = calloc(1, sizeof(*f));
	if (!f)
		return;
	f->r = make_ring(q, size, &f->len);
	if (!f->r) {
		free(f);
		return;
	}
	f->mask = size - 1;
	pthread_mutex_init(&f->mu, NULL);
	q->fast = f;
}

void nicd_ring_free(struct capi_cq *q)
{
	struct nicd_cq_fast *f = q->fast;

	if (!f)
		return;
	munmap(f->r, f->len);
	pthread_mutex_destroy(&f->mu);
	free(f);
	q->fast = NULL;
}

static inline struct nicd_cqe *at(struct nicd_cq_fast *f, uint64_t i) { return &f->r->e[i & f->mask]; }

/* next_live returns the first entry at or after i that is not dead, or
 * head. */
static uint64_t next_live(struct nicd_cq_fast *f, uint64_t i, uint64_t head)
{
	while (i < head && LOAD(&at(f, i)->dead))
		i++;
	return i;
}

/* idle follows a poll that found nothing: while the daemon serves
 * requests (nicd_busy), the completion a program spins for is likely on
 * its way, and the daemon needs the CPU the spinning would take, so the
 * poll sleeps until the daemon writes to the ring, for a millisecond at
 * most; with the daemon idle it returns at once, without a system call. */
static void idle(struct nicd_cq_fast *f)
{
	struct nicd_cq_ring *r = f->r;
	struct timespec ts = { 0, 1000000 };
	uint32_t seq;

	if (__atomic_load_n(&f->expect, __ATOMIC_RELAXED) <= 0) /* nothing to wait for: spin */
		return;
	if (__atomic_add_fetch(&f->empty, 1, __ATOMIC_RELAXED) < 256 && !nicd_busy())
		return;
	__atomic_store_n(&f->empty, 0, __ATOMIC_RELAXED);
	seq = LOAD(&r->wseq);
	__atomic_add_fetch(&r->waiters, 1, __ATOMIC_SEQ_CST);
	if (LOAD(&r->head) == r->tail && LOAD(&r->wseq) == seq)
		syscall(SYS_futex, &r->wseq, FUTEX_WAIT, seq, &ts, NULL, 0);
	__atomic_sub_fetch(&r->waiters, 1, __ATOMIC_SEQ_CST);
}

int nicd_ring_poll(struct capi_cq *q, int n, struct ibv_wc *wc)
{
	struct nicd_cq_fast *f = q->fast;
	struct nicd_cq_ring *r = f->r;
	uint64_t t, h;
	int got = 0;

	if (n < 0 || (n && !wc))
		return -1;
	pthread_mutex_lock(&f->mu);
	r = f->r;
	if (r->batch) { /* ibv_poll_cq inside a start_poll batch (CQX-06) */
		pthread_mutex_unlock(&f->mu);
		return -1;
	}
	t = r->tail;
	h = LOAD(&r->head);
	while (got < n && t < h) {
		struct nicd_cqe *e = at(f, t++);

		if (LOAD(&e->dead))
			continue;
		memcpy(&wc[got++], &e->wc, sizeof(*wc));
	}
	if (got || t != r->tail) {
		if (LOAD(&r->seen) < t)
			STORE(&r->seen, t);
		STORE(&r->tail, t);
	}
	if (!got && n && LOAD(&r->error)) { /* overran, nothing left (CQ-23 A) */
		pthread_mutex_unlock(&f->mu);
		return -1;
	}
	pthread_mutex_unlock(&f->mu);
	if (got) {
		__atomic_store_n(&f->empty, 0, __ATOMIC_RELAXED);
		__atomic_sub_fetch(&f->expect, got, __ATOMIC_RELAXED);
	} else if (n) {
		idle(f);
	}
	return got;
}

/* current makes entry i the iterator's, for the read_* functions. */
static void current(struct capi_cq *q, uint64_t i)
{
	struct nicd_cq_fast *f = q->fast;
	struct nicd_cqe *e = at(f, i);

	f->cur = i;
	memcpy(&q->cur, &e->wc, sizeof(q->cur));
	q->ts = e->ts;
	q->wallclock = e->wallclock;
	q->cq.wr_id = q->cur.wr_id;
	q->cq.status = q->cur.status;
	/* The iterator's reach frees work-queue slots (QP-29 reading A). */
	if (LOAD(&f->r->seen) < i + 1)
		STORE(&f->r->seen, i + 1);
}

int nicd_ring_start(struct capi_cq *q)
{
	struct nicd_cq_fast *f = q->fast;
	struct nicd_cq_ring *r;
	uint64_t i;

	pthread_mutex_lock(&f->mu);
	r = f->r;
	if (r->batch) {
		pthread_mutex_unlock(&f->mu);
		return EINVAL; /* CQX-06 */
	}
	i = next_live(f, r->tail, LOAD(&r->head));
	if (i == LOAD(&r->head)) {
		int err = LOAD(&r->error) ? EIO : ENOENT; /* CQX-04 */

		pthread_mutex_unlock(&f->mu);
		if (err == ENOENT)
			idle(f);
		return err;
	}
	STORE(&r->batch, 1);
	f->end = 0;
	current(q, i);
	pthread_mutex_unlock(&f->mu);
	return 0;
}

int nicd_ring_next(struct capi_cq *q)
{
	struct nicd_cq_fast *f = q->fast;
	struct nicd_cq_ring *r;
	uint64_t i, h;

	pthread_mutex_lock(&f->mu);
	r = f->r;
	if (!r->batch) {
		pthread_mutex_unlock(&f->mu);
		return EINVAL; /* CQX-06 */
	}
	h = LOAD(&r->head);
	i = next_live(f, f->end ? f->cur : f->cur + 1, h);
	if (i >= h) { /* past the last one; a later one is the next (CQX-05) */
		int err = LOAD(&r->error) ? EIO : ENOENT;

		f->cur = h;
		f->end = 1;
		pthread_mutex_unlock(&f->mu);
		return err;
	}
	f->end = 0;
	current(q, i);
	pthread_mutex_unlock(&f->mu);
	return 0;
}

void nicd_ring_end(struct capi_cq *q)
{
	struct nicd_cq_fast *f = q->fast;
	struct nicd_cq_ring *r;

	pthread_mutex_lock(&f->mu);
	r = f->r;
	if (r->batch) { /* everything the iterator pointed at is consumed (CQX-08) */
		uint64_t t = f->end ? f->cur : f->cur + 1;

		__atomic_store_n(&f->empty, 0, __ATOMIC_RELAXED);
		__atomic_sub_fetch(&f->expect, (int64_t)(t - r->tail), __ATOMIC_RELAXED);
		if (LOAD(&r->seen) < t)
			STORE(&r->seen, t);
		STORE(&r->tail, t);
		STORE(&r->batch, 0);
	}
	pthread_mutex_unlock(&f->mu);
}

void nicd_ring_expect(struct capi_cq *q, int n)
{
	if (q && q->fast && n > 0)
		__atomic_add_fetch(&q->fast->expect, n, __ATOMIC_RELAXED);
}

int nicd_ring_resize(struct capi_cq *q, int cqe, int *real)
{
	struct nicd_cq_fast *f = q->fast;
	int rc;

	if (!f)
		return vs_resize_cq(q->h, cqe, real);
	pthread_mutex_lock(&f->mu);
	rc = vs_resize_cq(q->h, cqe, real);
	if (!rc && (uint32_t)*real > f->mask + 1) {
		/* Outgrown: a bigger ring, to which the daemon moves what the
		 * old one held; this process polls nothing meanwhile. */
		uint32_t size = ring_size(*real);
		size_t len;
		struct nicd_cq_ring *r = make_ring(q, size, &len);

		if (r) {
			munmap(f->r, f->len);
			f->r = r;
			f->len = len;
			f->mask = size - 1;
		}
	}
	pthread_mutex_unlock(&f->mu);
	return rc;
}
