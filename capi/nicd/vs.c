/*
 * vs.c: the vs_* calls of ../vs.h for the C-only library: each verb that
 * glue.c, dm.c and xrc.c hand over becomes one request to the per-host
 * daemon (nicd.h), whose body is the libibverbs struct or a record of
 * nicd.h; the daemon reads them with internal/cabi and answers as the
 * engine does. Handles are the daemon's, tagged with the fork epoch of
 * the process that made them (client.h), so that a child of fork never
 * names its parent's objects: EINVAL, as for a destroyed one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../vs.h"
#include "client.h"

/* ---- handles --------------------------------------------------------- */

#define EPOCH_SHIFT 48

uintptr_t nicd_tag(uint64_t d) { return d ? (uintptr_t)((uint64_t)nicd_epoch() << EPOCH_SHIFT | d) : 0; }

/* untag returns the daemon's handle in h, 0 for 0, and for a handle of
 * another epoch one that names nothing (the daemon's handles start far
 * above 1), which the daemon refuses with EINVAL. */
uint64_t nicd_untag(uintptr_t h)
{
	if (!h)
		return 0;
	if ((uint64_t)h >> EPOCH_SHIFT != nicd_epoch())
		return 1;
	return (uint64_t)h & ((1ull << EPOCH_SHIFT) - 1);
}

static int call(uint32_t op, uintptr_t obj, uint64_t a, uint64_t b, const void *body, size_t blen,
		struct nicd_rep *p, void *out, size_t cap)
{
	return nicd_call(op, nicd_untag(obj), a, b, body, blen, p, out, cap);
}

static int simple(uint32_t op, uintptr_t obj, uint64_t a, uint64_t b)
{
	struct nicd_rep p;

	return call(op, obj, a, b, NULL, 0, &p, NULL, 0);
}

/* ---- devices and contexts ------------------------------------------- */

static struct nicd_devinfo *devs;
static int ndevs;

int vs_init(int *n)
{
	struct nicd_rep p;
	struct nicd_devinfo buf[64];
	int rc = nicd_connect();

	if (rc)
		return rc == EIO ? ENODEV : rc;
	rc = nicd_call(NICD_DEVICES, 0, 0, 0, NULL, 0, &p, buf, sizeof(buf));
	if (rc)
		return rc;
	free(devs);
	devs = malloc(sizeof(buf));
	if (!devs)
		return ENOMEM;
	memcpy(devs, buf, sizeof(buf));
	ndevs = (int)p.v;
	if (n)
		*n = ndevs;
	return 0;
}

int vs_device(int i, char *name, uint64_t *guid)
{
	if (i < 0 || i >= ndevs || !name || !guid)
		return ENODEV;
	memcpy(name, devs[i].name, sizeof(devs[i].name));
	name[63] = 0;
	*guid = devs[i].guid;
	return 0;
}

/* signal_pair turns the descriptor glue.c made for events into the
 * program's end of a socket pair, fills fds with both ends for the
 * daemon, which keeps them (events.go), and returns 0 or an errno. */
static int signal_pair(int fd, int fds[2])
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return errno;
	if (dup3(sv[0], fd, O_CLOEXEC) < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		return e;
	}
	close(sv[0]);
	fds[0] = fd;
	fds[1] = sv[1];
	return 0;
}

static int with_signal(uint32_t op, uintptr_t obj, uint64_t a, int fd, struct nicd_rep *p)
{
	int fds[2], rc = signal_pair(fd, fds);

	if (rc)
		return rc;
	rc = nicd_call_fds(op, nicd_untag(obj), a, 0, NULL, 0, fds, 2, p, NULL, 0);
	close(fds[1]);
	return rc;
}

int vs_open(int i, int asyncFD, uintptr_t *h, int *ncomp)
{
	struct nicd_rep p;
	int rc;

	if (!h || !ncomp || i < 0)
		return EINVAL;
	rc = with_signal(NICD_OPEN, 0, (uint64_t)i, asyncFD, &p);
	if (rc)
		return rc;
	*h = nicd_tag(p.v);
	*ncomp = (int)p.w;
	return 0;
}

int vs_close(uintptr_t h) { return simple(NICD_CLOSE, h, 0, 0); }

void vs_shutdown(void) {}

int vs_query_device(uintptr_t h, struct ibv_device_attr *out)
{
	struct nicd_rep p;

	return call(NICD_QUERY_DEVICE, h, 0, 0, NULL, 0, &p, out, sizeof(*out));
}

int vs_query_device_ex(uintptr_t h, struct ibv_device_attr_ex *out)
{
	struct nicd_rep p;

	return call(NICD_QUERY_DEVICE_EX, h, 0, 0, NULL, 0, &p, out, sizeof(*out));
}

int vs_query_port(uintptr_t h, uint8_t port, struct ibv_port_attr *out)
{
	struct nicd_rep p;

	return call(NICD_QUERY_PORT, h, port, 0, NULL, 0, &p, out, sizeof(*out));
}

int vs_query_gid(uintptr_t h, uint8_t port, int index, uint8_t *out)
{
	struct nicd_rep p;

	return call(NICD_QUERY_GID, h, port, (uint64_t)(uint32_t)index, NULL, 0, &p, out, 16);
}

int vs_query_gid_ex(uintptr_t h, uint32_t port, uint32_t index, uint8_t *gid, uint32_t *typ)
{
	struct nicd_rep p;
	int rc = call(NICD_QUERY_GID, h, port | 1ull << 32, index, NULL, 0, &p, gid, 16);

	if (!rc)
		*typ = (uint32_t)p.v;
	return rc;
}

int vs_query_pkey(uintptr_t h, uint8_t port, int index, uint16_t *out)
{
	struct nicd_rep p;
	int rc = call(NICD_QUERY_PKEY, h, port, (uint64_t)(uint32_t)index, NULL, 0, &p, NULL, 0);

	if (!rc)
		*out = (uint16_t)p.v;
	return rc;
}

int vs_get_async(uintptr_t h, uint32_t *typ, uintptr_t *cptr, int *port, int sync)
{
	struct nicd_rep p;
	int rc = call(NICD_GET_ASYNC, h, sync != 0, 0, NULL, 0, &p, NULL, 0);

	if (rc)
		return rc;
	*typ = (uint32_t)p.v;
	*port = (int)(p.v >> 32);
	*cptr = (uintptr_t)p.w;
	return 0;
}

int vs_ack_async(uintptr_t h, uint32_t typ, uintptr_t cptr, int port)
{
	return simple(NICD_ACK_ASYNC, h, typ | (uint64_t)(uint8_t)port << 32, cptr);
}

void vs_ack_port_event(uint32_t typ, int port) { simple(NICD_ACK_PORT_EVENT, 0, typ, (uint64_t)(uint8_t)port); }

/* ---- PDs, MRs, MWs, AHs ---------------------------------------------- */

int vs_alloc_pd(uintptr_t h, uintptr_t *out, uint32_t *handle)
{
	struct nicd_rep p;
	int rc = call(NICD_ALLOC_PD, h, 0, 0, NULL, 0, &p, NULL, 0);

	if (rc)
		return rc;
	*out = nicd_tag(p.v);
	*handle = (uint32_t)p.w;
	return 0;
}

int vs_dealloc_pd(uintptr_t h) { return simple(NICD_DEALLOC_PD, h, 0, 0); }

int vs_reg_mr(uintptr_t h, void *addr, size_t length, uint64_t iova, uint32_t access, uintptr_t *out, uint32_t *lkey,
	      uint32_t *rkey)
{
	struct nicd_mr m = { .addr = (uintptr_t)addr, .length = length, .iova = iova, .access = access };
	struct nicd_rep p;
	int rc = call(NICD_REG_MR, h, 0, 0, &m, sizeof(m), &p, NULL, 0);

	if (rc)
		return rc;
	*out = nicd_tag(p.v);
	*lkey = (uint32_t)p.w;
	*rkey = (uint32_t)(p.w >> 32);
	return 0;
}

int vs_advise_mr(uintptr_t h, uint32_t advice, uint32_t flags, struct ibv_sge *sgl, uint32_t n)
{
	struct nicd_rep p;

	if ((size_t)n * sizeof(*sgl) > NICD_MAX_MSG / 2)
		return EINVAL;
	return call(NICD_ADVISE_MR, h, advice, flags, sgl, (size_t)n * sizeof(*sgl), &p, NULL, 0);
}

int vs_dereg_mr(uintptr_t h) { return simple(NICD_DEREG_MR, h, 0, 0); }

int vs_rereg_mr(uintptr_t h, int flags, uintptr_t pdh, void *addr, size_t length, int access, uint32_t *lkey,
		uint32_t *rkey, int *eno)
{
	struct nicd_rereg q = { .pd = nicd_untag(pdh), .addr = (uintptr_t)addr, .length = length, .flags = flags,
				.access = access };
	struct nicd_rep p;
	int rc = call(NICD_REREG_MR, h, 0, 0, &q, sizeof(q), &p, NULL, 0);

	if (rc) {
		*eno = rc;
		return p.w ? (int)(int64_t)p.w : IBV_REREG_MR_ERR_INPUT;
	}
	*lkey = (uint32_t)p.v;
	*rkey = (uint32_t)(p.v >> 32);
	return 0;
}

int vs_alloc_mw(uintptr_t pdh, int typ, uintptr_t *out, uint32_t *rkey)
{
	struct nicd_rep p;
	int rc = call(NICD_ALLOC_MW, pdh, (uint64_t)(uint32_t)typ, 0, NULL, 0, &p, NULL, 0);

	if (rc)
		return rc;
	*out = nicd_tag(p.v);
	*rkey = (uint32_t)p.w;
	return 0;
}

int vs_dealloc_mw(uintptr_t h) { return simple(NICD_DEALLOC_MW, h, 0, 0); }

int vs_bind_mw(uintptr_t qph, uintptr_t mwh, uint64_t wrID, uint32_t flags, uintptr_t mrh, uint64_t addr,
	       uint64_t length, uint32_t access, uint32_t *rkey)
{
	struct nicd_bind b = { .qp = nicd_untag(qph), .mw = nicd_untag(mwh), .wr_id = wrID, .mr = nicd_untag(mrh), .addr = addr,
			       .length = length, .flags = flags, .access = access };
	struct nicd_rep p;
	int rc = nicd_call(NICD_BIND_MW, 0, 0, 0, &b, sizeof(b), &p, NULL, 0);

	if (!rc)
		*rkey = (uint32_t)p.v;
	return rc;
}

int vs_create_ah(uintptr_t h, struct ibv_ah_attr *attr, uintptr_t *out)
{
	struct nicd_rep p;
	int rc = call(NICD_CREATE_AH, h, 0, 0, attr, sizeof(*attr), &p, NULL, 0);

	if (!rc)
		*out = nicd_tag(p.v);
	return rc;
}

int vs_destroy_ah(uintptr_t h) { return simple(NICD_DESTROY_AH, h, 0, 0); }

/* ---- completion channels and CQs ------------------------------------ */

int vs_create_channel(uintptr_t h, int fd, uintptr_t *out)
{
	struct nicd_rep p;
	int rc = with_signal(NICD_CREATE_CHANNEL, h, 0, fd, &p);

	if (!rc)
		*out = nicd_tag(p.v);
	return rc;
}

int vs_destroy_channel(uintptr_t h) { return simple(NICD_DESTROY_CHANNEL, h, 0, 0); }

int vs_chan_get(uintptr_t h, uintptr_t *cptr, int sync)
{
	struct nicd_rep p;
	int rc = call(NICD_CHAN_GET, h, sync != 0, 0, NULL, 0, &p, NULL, 0);

	if (!rc)
		*cptr = (uintptr_t)p.v;
	return rc;
}

int vs_create_cq(uintptr_t h, int cqe, uintptr_t chh, int vector, uint64_t wcFlags, uint32_t compMask, uint32_t flags,
		 int ex, uintptr_t cptr, uintptr_t *out, int *real)
{
	struct nicd_cq q = { .cqe = cqe, .vector = vector, .channel = nicd_untag(chh), .wc_flags = wcFlags,
			     .comp_mask = compMask, .flags = flags, .ex = ex, .cptr = cptr };
	struct nicd_rep p;
	int rc = call(NICD_CREATE_CQ, h, 0, 0, &q, sizeof(q), &p, NULL, 0);

	if (rc)
		return rc;
	*out = nicd_tag(p.v);
	*real = (int)p.w;
	return 0;
}

int vs_destroy_cq(uintptr_t h) { return simple(NICD_DESTROY_CQ, h, 0, 0); }

/* vs_poll_cq returns the number of completions polled, or -errno. */
int vs_poll_cq(uintptr_t h, int n, struct capi_wc *out)
{
	const int most = NICD_MAX_MSG / 2 / (int)sizeof(struct ibv_wc);
	struct nicd_rep p;
	int rc;

	if (n < 0 || (n && !out))
		return -EINVAL;
	if (n == 0)
		return 0;
	if (n > most)
		n = most;
	rc = call(NICD_POLL_CQ, h, (uint64_t)n, 0, NULL, 0, &p, out, (size_t)n * sizeof(*out));
	return rc ? -rc : (int)p.v;
}

int vs_req_notify(uintptr_t h, int solicited) { return simple(NICD_REQ_NOTIFY, h, solicited != 0, 0); }

int vs_ack_cq(uintptr_t h, unsigned int n) { return simple(NICD_ACK_CQ, h, n, 0); }

int vs_resize_cq(uintptr_t h, int cqe, int *real)
{
	struct nicd_rep p;
	int rc = call(NICD_RESIZE_CQ, h, (uint64_t)(uint32_t)cqe, 0, NULL, 0, &p, NULL, 0);

	if (!rc)
		*real = (int)p.v;
	return rc;
}

int vs_cq_poll_ex(uintptr_t h, int next, struct capi_wc *out, uint64_t *ts, uint64_t *wall)
{
	struct nicd_wcx x;
	struct nicd_rep p;
	int rc = call(NICD_CQ_POLL_EX, h, (uint64_t)next, 0, NULL, 0, &p, &x, sizeof(x));

	if (rc || next == 2)
		return rc;
	memcpy(out, &x.wc, sizeof(*out));
	*ts = x.ts;
	*wall = x.wallclock;
	return 0;
}

int vs_mcast(uintptr_t h, uint8_t *gid, uint16_t lid, int on)
{
	struct nicd_rep p;

	if (!gid)
		return EINVAL;
	return call(NICD_MCAST, h, lid, on ? 1 : 0, gid, 16, &p, NULL, 0);
}

/* The sanitizer (VERBSIM_CHECK, check.c) runs in the in-process library
 * only for now: capi_checking stays 0 here, so glue.c never asks this. */
int capi_checking;

int vs_check_wait(uintptr_t h, int kind, int start)
{
	(void)h;
	(void)kind;
	(void)start;
	return 1;
}
