/*
 * glue.c: the libibverbs ABI of verbsim's drop-in libibverbs.so.1.
 *
 * This file owns everything a C program sees: the structs it is handed
 * (allocated with room for verbs_context, ibv_cq_ex and ibv_qp_ex), the
 * function tables the static inline verbs of verbs.h call through, errno
 * and the return conventions, and pointer checks (a NULL or malformed
 * argument is EINVAL, never a crash). Everything the simulator does is a
 * call into engine.go (the vs_* functions, see _cgo_export.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <endian.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include "capi.h"
#include "vs.h"
#ifdef VERBSIM_NICD
#include "nicd/ring.h"
#endif

/* verbs.h wraps a few exports in macros; define the exports themselves. */
#undef ibv_get_device_list
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

#define EXPORT __attribute__((visibility("default")))

_Static_assert(sizeof(struct capi_wc) == sizeof(struct ibv_wc), "capi_wc is struct ibv_wc");
_Static_assert(offsetof(struct capi_wc, imm_data) == offsetof(struct ibv_wc, imm_data), "imm_data");
_Static_assert(offsetof(struct capi_wc, qp_num) == offsetof(struct ibv_wc, qp_num), "qp_num");
_Static_assert(offsetof(struct capi_wc, wc_flags) == offsetof(struct ibv_wc, wc_flags), "wc_flags");
_Static_assert(offsetof(struct capi_wc, dlid_path_bits) == offsetof(struct ibv_wc, dlid_path_bits), "dlid_path_bits");
_Static_assert(offsetof(struct capi_context, vctx.context) + sizeof(struct ibv_context) ==
		       sizeof(struct verbs_context),
	       "struct ibv_context is the last field of struct verbs_context");

static inline struct capi_context *to_ctx(struct ibv_context *c)
{
	return c ? (struct capi_context *)((char *)c - offsetof(struct capi_context, vctx.context)) : NULL;
}
static inline struct capi_pd *to_pd(struct ibv_pd *p) { return (struct capi_pd *)p; }
static inline struct capi_mr *to_mr(struct ibv_mr *p) { return (struct capi_mr *)p; }
static inline struct capi_ah *to_ah(struct ibv_ah *p) { return (struct capi_ah *)p; }
static inline struct capi_cq *to_cq(struct ibv_cq *p) { return (struct capi_cq *)p; }
static inline struct capi_cq *to_cqx(struct ibv_cq_ex *p) { return (struct capi_cq *)p; }
static inline struct capi_qp *to_qp(struct ibv_qp *p) { return (struct capi_qp *)p; }
static inline struct capi_qp *to_qpx(struct ibv_qp_ex *p) { return (struct capi_qp *)p; }
static inline struct capi_srq *to_srq(struct ibv_srq *p) { return (struct capi_srq *)p; }
static inline struct capi_channel *to_ch(struct ibv_comp_channel *p) { return (struct capi_channel *)p; }
static struct ibv_pd *op_alloc_parent_domain(struct ibv_context *ic, struct ibv_parent_domain_init_attr *a);
static int dealloc_parent_domain(struct capi_pd *p);

/* Return conventions: ERRP sets errno and returns NULL; ERRI sets errno and
 * returns -1; verbs that return an errno return it directly. */
#define ERRP(e) do { errno = (e); return NULL; } while (0)
#define ERRI(e) do { errno = (e); return -1; } while (0)

/* ---- fork ----------------------------------------------------------- */

#ifdef VERBSIM_NICD
/*
 * The C-only library (nicd/) survives fork: a child of fork() opens
 * devices and uses verbs of its own, while the parent's objects are not
 * its (nicd/client.c). No verb fails for being called in a child.
 */
int capi_forked(void) { return 0; }
int capi_in_child(void) { return 0; }
#else
/*
 * The simulator runs on the Go runtime, whose threads do not exist in a
 * child of fork(): a call into Go there could hang. So after fork() (and
 * before any exec) every verb fails at once with EOPNOTSUPP, after one
 * message on stderr. docs/c-programs.md has the details.
 */
static volatile int forked;

static void on_fork_child(void) { forked = 1; }

__attribute__((constructor)) static void capi_init(void) { pthread_atfork(NULL, NULL, on_fork_child); }

int capi_forked(void)
{
	static int told;

	/* Every verb calls this first: with the sanitizer on, it records
	 * where the program called the verb from (check.c). */
	if (capi_checking)
		capi_bt_capture();
	if (!forked)
		return 0;
	if (!told) {
		told = 1;
		fprintf(stderr, "verbsim: libibverbs called in a child of fork(): the simulator does not "
				"survive fork, so verbs fail with EOPNOTSUPP there (see docs/c-programs.md)\n");
	}
	errno = EOPNOTSUPP;
	return 1;
}

/* capi_in_child says, without a message, whether this is a child of
 * fork() (dm.c serves device memory there from the child's own memory). */
int capi_in_child(void) { return forked; }

#endif

#define FORKED_P() do { if (capi_forked()) return NULL; } while (0)
#define FORKED_R() do { if (capi_forked()) return EOPNOTSUPP; } while (0)
#define FORKED_M1() do { if (capi_forked()) return -1; } while (0)
#define FORKED_V() do { if (capi_forked()) return; } while (0)

/* ---- devices -------------------------------------------------------- */

static pthread_mutex_t dev_mu = PTHREAD_MUTEX_INITIALIZER;
static struct capi_device *devs;
static int ndevs = -1;

static int load_devices(void)
{
	int n = 0, i, rc = 0;

	pthread_mutex_lock(&dev_mu);
	if (ndevs >= 0)
		goto out;
	rc = vs_init(&n);
	if (rc)
		goto out;
	devs = calloc(n ? n : 1, sizeof(*devs));
	if (!devs) {
		rc = ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		struct capi_device *d = &devs[i];
		uint64_t guid = 0;

		rc = vs_device(i, d->dev.name, (uint64_t *)&guid);
		if (rc)
			goto out;
		d->index = i;
		d->guid = guid;
		d->dev.node_type = IBV_NODE_CA;
		d->dev.transport_type = IBV_TRANSPORT_IB;
		snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "uverbs%d", i);
		snprintf(d->dev.dev_path, sizeof(d->dev.dev_path), "/sys/class/infiniband_verbs/uverbs%d", i);
		snprintf(d->dev.ibdev_path, sizeof(d->dev.ibdev_path), "/sys/class/infiniband/%s", d->dev.name);
	}
	ndevs = n;
out:
	pthread_mutex_unlock(&dev_mu);
	return rc;
}

#ifdef VERBSIM_TEST_HOOKS
/* testhooks.c: a device verbsim_test_device made, or NULL. */
struct capi_device *capi_test_to_dev(struct ibv_device *d);
#endif

static struct capi_device *to_dev(struct ibv_device *d)
{
	if (!d || ndevs <= 0)
		return NULL;
	for (int i = 0; i < ndevs; i++)
		if (&devs[i].dev == d)
			return &devs[i];
#ifdef VERBSIM_TEST_HOOKS
	return capi_test_to_dev(d);
#else
	return NULL;
#endif
}

EXPORT struct ibv_device **ibv_get_device_list(int *num)
{
	FORKED_P();
	struct ibv_device **l;
	int rc = load_devices();

	if (rc)
		ERRP(rc);
	l = calloc(ndevs + 1, sizeof(*l));
	if (!l)
		ERRP(ENOMEM);
	for (int i = 0; i < ndevs; i++)
		l[i] = &devs[i].dev;
	if (num)
		*num = ndevs;
	return l;
}

EXPORT void ibv_free_device_list(struct ibv_device **list) { free(list); }

EXPORT const char *ibv_get_device_name(struct ibv_device *d)
{
	if (!d)
		ERRP(EINVAL);
	return d->name;
}

EXPORT __be64 ibv_get_device_guid(struct ibv_device *d)
{
	struct capi_device *cd = to_dev(d);

	if (!cd) {
		errno = EINVAL;
		return 0;
	}
	return htobe64(cd->guid);
}

EXPORT int ibv_get_device_index(struct ibv_device *d)
{
	struct capi_device *cd = to_dev(d);

	return cd ? cd->index : -1;
}

/* ---- contexts ------------------------------------------------------- */

static int op_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
static int op_req_notify_cq(struct ibv_cq *cq, int solicited);
static int op_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
static int op_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
static int op_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
static int op_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *attr, size_t len);
static int op_query_device_ex(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
			      struct ibv_device_attr_ex *attr, size_t len);
static struct ibv_cq_ex *op_create_cq_ex(struct ibv_context *c, struct ibv_cq_init_attr_ex *attr);
static struct ibv_qp *op_create_qp_ex(struct ibv_context *c, struct ibv_qp_init_attr_ex *attr);
static int compat_query_device(struct ibv_context *c, struct ibv_device_attr *attr);
static struct ibv_mw *op_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
static int op_dealloc_mw(struct ibv_mw *mw);
static int op_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *b);
static int op_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
			struct ibv_sge *sg_list, uint32_t num_sge);

EXPORT struct ibv_context *ibv_open_device(struct ibv_device *d)
{
	FORKED_P();
	struct capi_device *cd = to_dev(d);
	struct capi_context *c;
	struct ibv_context *ic;
	int ncomp = 0, rc;

	if (!cd)
		ERRP(EINVAL);
	c = calloc(1, sizeof(*c));
	if (!c)
		ERRP(ENOMEM);
	ic = &c->vctx.context;
	ic->async_fd = eventfd(0, EFD_CLOEXEC);
	ic->cmd_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (ic->async_fd < 0 || ic->cmd_fd < 0) {
		rc = errno;
		goto fail;
	}
	rc = vs_open(cd->index, ic->async_fd, (uintptr_t *)&c->h, &ncomp);
	if (rc)
		goto fail;
	ic->device = d;
	ic->num_comp_vectors = ncomp;
	ic->abi_compat = __VERBS_ABI_IS_EXTENDED;
	pthread_mutex_init(&ic->mutex, NULL);
	ic->ops._compat_query_device = compat_query_device;
	ic->ops.poll_cq = op_poll_cq;
	ic->ops.req_notify_cq = op_req_notify_cq;
	ic->ops.post_send = op_post_send;
	ic->ops.post_recv = op_post_recv;
	ic->ops.post_srq_recv = op_post_srq_recv;
	ic->ops.alloc_mw = op_alloc_mw;
	ic->ops.dealloc_mw = op_dealloc_mw;
	ic->ops.bind_mw = op_bind_mw;
	c->vctx.sz = sizeof(struct verbs_context);
	c->vctx.query_port = op_query_port;
	c->vctx.query_device_ex = op_query_device_ex;
	c->vctx.advise_mr = op_advise_mr;
	c->vctx.create_cq_ex = op_create_cq_ex;
	c->vctx.create_qp_ex = op_create_qp_ex;
	c->vctx.alloc_parent_domain = op_alloc_parent_domain;
	capi_xrc_ops(&c->vctx);
	capi_dm_ops(c);
	return ic;
fail:
	if (ic->async_fd >= 0)
		close(ic->async_fd);
	if (ic->cmd_fd >= 0)
		close(ic->cmd_fd);
	free(c);
	ERRP(rc);
}

EXPORT int ibv_close_device(struct ibv_context *ic)
{
	FORKED_M1();
	struct capi_context *c = to_ctx(ic);
	int rc;

	if (!c)
		return EINVAL;
	rc = vs_close(c->h);
	if (rc) {
		errno = rc;
		return -1;
	}
	close(ic->async_fd);
	close(ic->cmd_fd);
	pthread_mutex_destroy(&ic->mutex);
	free(c);
	return 0;
}

EXPORT int ibv_query_device(struct ibv_context *ic, struct ibv_device_attr *attr)
{
	FORKED_R();
	struct capi_context *c = to_ctx(ic);

	if (!c || !attr)
		return EINVAL;
	return vs_query_device(c->h, attr);
}

static int compat_query_device(struct ibv_context *c, struct ibv_device_attr *attr)
{
	return ibv_query_device(c, attr);
}

static int op_query_device_ex(struct ibv_context *ic, const struct ibv_query_device_ex_input *in,
			      struct ibv_device_attr_ex *attr, size_t len)
{
	struct capi_context *c = to_ctx(ic);
	struct ibv_device_attr_ex full;
	int rc;

	if (capi_in_child() && c) /* device memory in a child needs it (dm.c) */
		return capi_child_query_device_ex(c, in, attr, len);
	FORKED_R();

	if (!c || !attr || len < sizeof(attr->orig_attr))
		return EINVAL;
	if (in && in->comp_mask)
		return EINVAL;
	memset(&full, 0, sizeof(full));
	rc = vs_query_device_ex(c->h, &full);
	if (rc)
		return rc;
	memcpy(attr, &full, len < sizeof(full) ? len : sizeof(full));
	return 0;
}

static int op_query_port(struct ibv_context *ic, uint8_t port, struct ibv_port_attr *attr, size_t len)
{
	FORKED_R();
	struct capi_context *c = to_ctx(ic);
	struct ibv_port_attr full;
	int rc;

	if (!c || !attr)
		return EINVAL;
	rc = vs_query_port(c->h, port, &full);
	if (rc)
		return rc;
	memcpy(attr, &full, len < sizeof(full) ? len : sizeof(full));
	return 0;
}

/* The compat export: programs built against verbs.h call the context's
 * query_port op; older binaries call this with the legacy struct, which
 * ends before port_cap_flags2. */
EXPORT int ibv_query_port(struct ibv_context *ic, uint8_t port, struct _compat_ibv_port_attr *attr)
{
	return op_query_port(ic, port, (struct ibv_port_attr *)attr,
			     offsetof(struct ibv_port_attr, port_cap_flags2));
}

EXPORT int ibv_query_gid(struct ibv_context *ic, uint8_t port, int index, union ibv_gid *gid)
{
	FORKED_M1();
	struct capi_context *c = to_ctx(ic);
	int rc;

	if (!c || !gid)
		ERRI(EINVAL);
	rc = vs_query_gid(c->h, port, index, gid->raw);
	if (rc)
		ERRI(rc);
	return 0;
}

EXPORT int ibv_query_pkey(struct ibv_context *ic, uint8_t port, int index, __be16 *pkey)
{
	FORKED_M1();
	struct capi_context *c = to_ctx(ic);
	uint16_t k;
	int rc;

	if (!c || !pkey)
		ERRI(EINVAL);
	rc = vs_query_pkey(c->h, port, index, &k);
	if (rc)
		ERRI(rc);
	*pkey = htobe16(k);
	return 0;
}

EXPORT int ibv_get_pkey_index(struct ibv_context *ic, uint8_t port, __be16 pkey)
{
	struct ibv_port_attr pa;

	if (op_query_port(ic, port, &pa, sizeof(pa)))
		ERRI(EINVAL);
	for (int i = 0; i < pa.pkey_tbl_len; i++) {
		__be16 k;

		if (ibv_query_pkey(ic, port, i, &k))
			return -1;
		if (k == pkey)
			return i;
	}
	ERRI(ENOENT);
}

EXPORT int _ibv_query_gid_ex(struct ibv_context *ic, uint32_t port, uint32_t index,
			     struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	FORKED_R();
	struct capi_context *c = to_ctx(ic);
	struct ibv_gid_entry e;
	uint32_t typ = 0;
	int rc;

	if (!c || !entry || flags)
		return EINVAL;
	if (entry_size < sizeof(e))
		return EINVAL;
	memset(&e, 0, sizeof(e));
	rc = vs_query_gid_ex(c->h, port, index, e.gid.raw, &typ);
	if (rc)
		return rc;
	e.gid_index = index;
	e.port_num = port;
	e.gid_type = typ;
	e.ndev_ifindex = 0;
	memcpy(entry, &e, sizeof(e));
	return 0;
}

EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *ic, struct ibv_gid_entry *entries,
				    size_t max_entries, uint32_t flags, size_t entry_size)
{
	struct ibv_device_attr da;
	size_t n = 0;

	if (!ic || (!entries && max_entries) || flags || entry_size < sizeof(struct ibv_gid_entry))
		return -EINVAL;
	if (ibv_query_device(ic, &da))
		return -EINVAL;
	for (int p = 1; p <= da.phys_port_cnt; p++) {
		struct ibv_port_attr pa;

		if (op_query_port(ic, p, &pa, sizeof(pa)))
			return -EINVAL;
		for (int i = 0; i < pa.gid_tbl_len; i++) {
			struct ibv_gid_entry e;
			static const uint8_t zero[16];

			if (_ibv_query_gid_ex(ic, p, i, &e, 0, sizeof(e)))
				continue;
			if (!memcmp(e.gid.raw, zero, 16))
				continue;
			if (n == max_entries)
				return -EINVAL;
			memcpy((char *)entries + n * entry_size, &e, sizeof(e));
			n++;
		}
	}
	return n;
}

/* enum ibv_gid_type_sysfs of rdma-core's driver.h. */
enum { CAPI_GID_SYSFS_IB_ROCE_V1 = 0, CAPI_GID_SYSFS_ROCE_V2 = 1 };

EXPORT int ibv_query_gid_type(struct ibv_context *ic, uint8_t port, unsigned int index, int *type)
{
	struct ibv_gid_entry e;
	int rc;

	if (!ic || !type)
		ERRI(EINVAL);
	rc = _ibv_query_gid_ex(ic, port, index, &e, 0, sizeof(e));
	if (rc)
		ERRI(rc);
	*type = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? CAPI_GID_SYSFS_ROCE_V2 : CAPI_GID_SYSFS_IB_ROCE_V1;
	return 0;
}

/* ---- async events --------------------------------------------------- */

/* wait_fd blocks until fd polls readable, unless it is in non-blocking
 * mode (EAGAIN), as read(2) on the real descriptor would. */
static int wait_fd(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return errno;
	if (fl & O_NONBLOCK)
		return EAGAIN;
#ifdef VERBSIM_NICD
	/* The daemon's descriptor is a socket: wait in recv(2), which signals
	 * treat as they treat the kernel's read(2) in ibv_get_cq_event and
	 * ibv_get_async_event: a handler without SA_RESTART interrupts the
	 * wait (EINTR, which programs such as qperf rely on to stop at their
	 * alarm), one with SA_RESTART restarts it. A daemon gone ends it (0):
	 * the request that follows says EIO. */
	char c;

	if (recv(fd, &c, 1, MSG_PEEK) < 0)
		return errno;
	return 0;
#else
	/* The in-process library's Go runtime signals its threads for its
	 * own ends: an EINTR is not the program's. */
	struct pollfd p = { .fd = fd, .events = POLLIN };

	while (poll(&p, 1, -1) < 0)
		if (errno != EINTR)
			return errno;
	return 0;
#endif
}

/* wait_checked is wait_fd for a read of the program's: with the sanitizer
 * on, a blocking wait is told to it as it starts and ends (vs_check_wait),
 * kind 1 for a completion channel's, 2 for the async queue's. */
static int wait_checked(int fd, uintptr_t h, int kind)
{
	int fl, rc;

	if (!capi_checking)
		return wait_fd(fd);
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (fl & O_NONBLOCK))
		return wait_fd(fd);
	if (vs_check_wait(h, kind, 1) == 0) /* an event came meanwhile */
		return 0;
	rc = wait_fd(fd);
	vs_check_wait(h, kind, 0);
	return rc;
}

EXPORT int ibv_get_async_event(struct ibv_context *ic, struct ibv_async_event *ev)
{
	FORKED_M1();
	struct capi_context *c = to_ctx(ic);
	uint32_t typ;
	uintptr_t obj;
	int port, rc;

	if (!c || !ev)
		ERRI(EINVAL);
	for (;;) {
		rc = vs_get_async(c->h, &typ, &obj, &port, 0);
		if (!rc)
			break;
		if (rc != EAGAIN)
			ERRI(rc);
		rc = wait_checked(ic->async_fd, c->h, 2);
		if (rc == EAGAIN) {
			/* Non-blocking: EAGAIN only once the events the engine
			 * raised are taken too (internal/evfeed). */
			rc = vs_get_async(c->h, &typ, &obj, &port, 1);
			if (!rc)
				break;
		}
		if (rc)
			ERRI(rc);
	}
	memset(ev, 0, sizeof(*ev));
	ev->event_type = typ;
	switch (typ) {
	case IBV_EVENT_CQ_ERR:
		ev->element.cq = (struct ibv_cq *)obj;
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		ev->element.srq = (struct ibv_srq *)obj;
		break;
	case IBV_EVENT_WQ_FATAL:
		ev->element.wq = (struct ibv_wq *)obj;
		break;
	case IBV_EVENT_DEVICE_FATAL:
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
		ev->element.port_num = port;
		break;
	default:
		ev->element.qp = (struct ibv_qp *)obj;
	}
	return 0;
}

EXPORT void ibv_ack_async_event(struct ibv_async_event *ev)
{
	FORKED_V();
	struct capi_context *c;
	uintptr_t obj = 0;
	int port = 0;

	if (!ev)
		return;
	switch (ev->event_type) {
	case IBV_EVENT_CQ_ERR:
		obj = (uintptr_t)ev->element.cq;
		c = ev->element.cq ? to_ctx(ev->element.cq->context) : NULL;
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		obj = (uintptr_t)ev->element.srq;
		c = ev->element.srq ? to_ctx(ev->element.srq->context) : NULL;
		break;
	case IBV_EVENT_WQ_FATAL:
		return;
	case IBV_EVENT_DEVICE_FATAL:
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
		/* A port event names no object, hence no context: it is acked
		 * on the context that has it outstanding. */
		vs_ack_port_event(ev->event_type, ev->element.port_num);
		return;
	default:
		obj = (uintptr_t)ev->element.qp;
		c = ev->element.qp ? to_ctx(ev->element.qp->context) : NULL;
	}
	if (c)
		vs_ack_async(c->h, ev->event_type, obj, port);
}

/* ---- protection domains, memory regions, address handles ----------- */

EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *ic)
{
	FORKED_P();
	struct capi_context *c = to_ctx(ic);
	struct capi_pd *p;
	uint32_t handle = 0;
	int rc;

	if (!c)
		ERRP(EINVAL);
	p = calloc(1, sizeof(*p));
	if (!p)
		ERRP(ENOMEM);
	rc = vs_alloc_pd(c->h, (uintptr_t *)&p->h, &handle);
	if (rc) {
		free(p);
		ERRP(rc);
	}
	p->pd.context = ic;
	p->pd.handle = handle;
	return &p->pd;
}

EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	FORKED_R();
	int rc;

	if (!pd)
		return EINVAL;
	if (to_pd(pd)->base)
		return dealloc_parent_domain(to_pd(pd));
	/* A PD wrapped by parent domains is in use, as mlx5 answers. */
	if (__atomic_load_n(&to_pd(pd)->parents, __ATOMIC_ACQUIRE))
		return EBUSY;
	rc = vs_dealloc_pd(to_pd(pd)->h);
	if (rc)
		return rc;
	free(to_pd(pd));
	return 0;
}

/*
 * Parent domains (ibv_alloc_parent_domain): a PD that wraps a protection
 * domain, optionally with a thread domain and the program's allocators for
 * the provider's queue buffers. Every verb given a parent domain acts on
 * the wrapped PD. verbsim keeps no queue buffers in the program's memory,
 * so it never calls the allocators; it has no thread domains
 * (ibv_alloc_td is EOPNOTSUPP), so a td is EINVAL.
 */
static struct ibv_pd *op_alloc_parent_domain(struct ibv_context *ic, struct ibv_parent_domain_init_attr *a)
{
	FORKED_P();
	const uint32_t known = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	struct capi_pd *base, *p;

	if (!ic || !a || !a->pd || a->pd->context != ic || a->td || (a->comp_mask & ~known))
		ERRP(EINVAL);
	if ((a->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) && (!a->alloc || !a->free))
		ERRP(EINVAL);
	base = to_pd(a->pd);
	if (base->base)
		ERRP(EINVAL); /* a parent domain wraps a protection domain */
	p = calloc(1, sizeof(*p));
	if (!p)
		ERRP(ENOMEM);
	p->pd.context = ic;
	p->pd.handle = base->pd.handle;
	p->h = base->h;
	p->base = base;
	if (a->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		p->pd_context = a->pd_context;
	__atomic_add_fetch(&base->parents, 1, __ATOMIC_ACQ_REL);
	return &p->pd;
}

static int dealloc_parent_domain(struct capi_pd *p)
{
	__atomic_sub_fetch(&p->base->parents, 1, __ATOMIC_ACQ_REL);
	free(p);
	return 0;
}

static struct ibv_mr *reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, unsigned int access)
{
	FORKED_P();
	struct capi_mr *m;
	uint32_t lkey = 0, rkey = 0;
	int rc;

	/* addr NULL with length SIZE_MAX asks for an implicit on-demand MR:
	 * the engine says why it cannot have one (ODP-02). */
	if (!pd || (!addr && length && !(length == SIZE_MAX && (access & IBV_ACCESS_ON_DEMAND))))
		ERRP(EINVAL);
	/* Optional access bits are hints a device may ignore (verbs.h). */
	access &= ~IBV_ACCESS_OPTIONAL_RANGE;
	if (access & IBV_ACCESS_ZERO_BASED)
		iova = 0;
	m = calloc(1, sizeof(*m));
	if (!m)
		ERRP(ENOMEM);
	rc = vs_reg_mr(to_pd(pd)->h, addr, length, iova, access, (uintptr_t *)&m->h, &lkey, &rkey);
	if (rc) {
		free(m);
		ERRP(rc);
	}
	return capi_mr_fill(m, pd, addr, length, lkey, rkey);
}

struct ibv_mr *capi_mr_fill(struct capi_mr *m, struct ibv_pd *pd, void *addr, size_t length, uint32_t lkey,
			    uint32_t rkey)
{
	m->mr.context = pd->context;
	m->mr.pd = pd;
	m->mr.addr = addr;
	m->mr.length = length;
	m->mr.handle = lkey;
	m->mr.lkey = lkey;
	m->mr.rkey = rkey;
	return &m->mr;
}

EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return reg_mr(pd, addr, length, (uintptr_t)addr, access);
}

EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, int access)
{
	return reg_mr(pd, addr, length, iova, access);
}

EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				       unsigned int access)
{
	return reg_mr(pd, addr, length, iova, access);
}

EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
	FORKED_R();
	int rc;

	if (!mr)
		return EINVAL;
	rc = vs_dereg_mr(to_mr(mr)->h);
	if (rc)
		return rc;
	free(to_mr(mr));
	return 0;
}

/* ibv_rereg_mr: libibverbs' argument checks, then the engine (MR-13..17).
 * The result is 0 or an IBV_REREG_MR_ERR_* class with errno set. */
EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t length, int access)
{
	uint32_t lkey = 0, rkey = 0;
	int rc, eno = 0;

	if (capi_forked()) {
		errno = EOPNOTSUPP;
		return IBV_REREG_MR_ERR_INPUT;
	}
	if (!mr || (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) || ((flags & IBV_REREG_MR_CHANGE_PD) && !pd) ||
	    ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!addr || !length))) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	/* A new buffer is addressed by work requests from its own address,
	 * which libibverbs passes as hca_va (vs_rereg_mr: MR.ReregIOVA). */
	access &= ~IBV_ACCESS_OPTIONAL_RANGE;
	rc = vs_rereg_mr(to_mr(mr)->h, flags, (flags & IBV_REREG_MR_CHANGE_PD) ? to_pd(pd)->h : 0,
			 (flags & IBV_REREG_MR_CHANGE_TRANSLATION) ? addr : NULL,
			 (flags & IBV_REREG_MR_CHANGE_TRANSLATION) ? length : 0, access, &lkey, &rkey, &eno);
	if (rc) {
		errno = eno;
		return rc;
	}
	if (flags & IBV_REREG_MR_CHANGE_PD)
		mr->pd = pd;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		mr->addr = addr;
		mr->length = length;
	}
	mr->handle = lkey;
	mr->lkey = lkey;
	mr->rkey = rkey;
	return 0;
}

/* ibv_advise_mr is inline in verbs.h and calls this verbs_context op; it
 * returns an errno, not -1 (ODP-04..06). */
static int op_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
			struct ibv_sge *sg_list, uint32_t num_sge)
{
	FORKED_R();
	if (!pd || (num_sge && !sg_list))
		return EINVAL;
	return vs_advise_mr(to_pd(pd)->h, advice, flags, sg_list, num_sge);
}

/* ---- memory windows (context ops: ibv_alloc_mw, ibv_dealloc_mw and
 * ibv_bind_mw are inline in verbs.h) ----------------------------------- */

static struct ibv_mw *op_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	FORKED_P();
	struct capi_mw *w;
	uint32_t rkey = 0;
	int rc;

	if (!pd)
		ERRP(EINVAL);
	w = calloc(1, sizeof(*w));
	if (!w)
		ERRP(ENOMEM);
	rc = vs_alloc_mw(to_pd(pd)->h, (int)type, (uintptr_t *)&w->h, &rkey);
	if (rc) {
		free(w);
		ERRP(rc);
	}
	w->mw.context = pd->context;
	w->mw.pd = pd;
	w->mw.rkey = rkey;
	w->mw.handle = rkey;
	w->mw.type = type;
	return &w->mw;
}

static int op_dealloc_mw(struct ibv_mw *mw)
{
	FORKED_R();
	int rc;

	if (!mw)
		return EINVAL;
	rc = vs_dealloc_mw(((struct capi_mw *)mw)->h);
	if (rc)
		return rc;
	free(mw);
	return 0;
}

static int op_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *b)
{
	FORKED_R();
	const struct ibv_mw_bind_info *bi;
	uint32_t rkey = 0;
	int rc;

	if (!qp || !mw || !b)
		return EINVAL;
	bi = &b->bind_info;
	rc = vs_bind_mw(to_qp(qp)->h, ((struct capi_mw *)mw)->h, b->wr_id, b->send_flags,
			bi->mr ? to_mr(bi->mr)->h : 0, bi->addr, bi->length, bi->mw_access_flags, &rkey);
	if (rc)
		return rc;
	mw->rkey = rkey;
	return 0;
}

EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	FORKED_P();
	struct capi_ah *a;
	int rc;

	if (!pd || !attr)
		ERRP(EINVAL);
	a = calloc(1, sizeof(*a));
	if (!a)
		ERRP(ENOMEM);
	rc = vs_create_ah(to_pd(pd)->h, attr, (uintptr_t *)&a->h);
	if (rc) {
		free(a);
		ERRP(rc);
	}
	a->ah.context = pd->context;
	a->ah.pd = pd;
	return &a->ah;
}

EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
	FORKED_R();
	int rc;

	if (!ah)
		return EINVAL;
	rc = vs_destroy_ah(to_ah(ah)->h);
	if (rc)
		return rc;
	free(to_ah(ah));
	return 0;
}

/* capi_find_gid returns the index of gid in port's GID table, or -1. */
static int capi_find_gid(struct ibv_context *ic, uint8_t port, const union ibv_gid *gid)
{
	struct ibv_port_attr pa;
	union ibv_gid g;

	if (op_query_port(ic, port, &pa, sizeof(pa)))
		return -1;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		if (ibv_query_gid(ic, port, i, &g))
			break;
		if (!memcmp(g.raw, gid->raw, 16))
			return i;
	}
	return -1;
}

/* capi_grh_is_ipv4 reports whether the 40 bytes at grh hold the RoCE v2
 * IPv4 form (AV-05): no IPv6 version in the first nibble, or an IPv4
 * header in the last 20 bytes whose checksum verifies, as libibverbs
 * tells them apart. */
static int capi_grh_is_ipv4(const uint8_t *grh)
{
	const uint8_t *h = grh + 20;
	uint32_t sum = 0;

	if (grh[0] >> 4 != 6)
		return h[0] >> 4 == 4;
	if (h[0] != 0x45)
		return 0;
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)h[i] << 8 | h[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

/* ibv_init_ah_from_wc builds the reply path to the sender of a UD receive:
 * from the WC, and from the network header at the head of the buffer when
 * the WC has one (AV-05): the IPv6 form (the IBA GRH, next header 0x1B, or
 * RoCE v2's IPv6 header, UDP), whose traffic class, flow label and hop
 * limit the path takes, or RoCE v2's IPv4 header in its last 20 bytes,
 * whose addresses become IPv4-mapped GIDs and whose TOS and TTL the path
 * takes. The source GID index is the local GID the datagram was sent to:
 * ENOENT when the port has none. */
EXPORT int ibv_init_ah_from_wc(struct ibv_context *ic, uint8_t port, struct ibv_wc *wc, struct ibv_grh *grh,
			       struct ibv_ah_attr *ah)
{
	if (!ic || !wc || !ah || ((wc->wc_flags & IBV_WC_GRH) && !grh))
		ERRI(EINVAL);
	memset(ah, 0, sizeof(*ah));
	ah->dlid = wc->slid;
	ah->sl = wc->sl;
	ah->src_path_bits = wc->dlid_path_bits;
	ah->port_num = port;
	if (wc->wc_flags & IBV_WC_GRH) {
		const uint8_t *raw = (const uint8_t *)grh;
		union ibv_gid local;
		int idx;

		ah->is_global = 1;
		if (capi_grh_is_ipv4(raw)) {
			const uint8_t *h = raw + 20;

			memset(&local, 0, sizeof(local));
			local.raw[10] = local.raw[11] = 0xff;
			memcpy(&local.raw[12], h + 16, 4);
			memset(&ah->grh.dgid, 0, sizeof(ah->grh.dgid));
			ah->grh.dgid.raw[10] = ah->grh.dgid.raw[11] = 0xff;
			memcpy(&ah->grh.dgid.raw[12], h + 12, 4);
			ah->grh.traffic_class = h[1];
			ah->grh.hop_limit = h[8];
		} else {
			uint32_t flow = be32toh(grh->version_tclass_flow);

			if (grh->next_hdr != 17 && grh->next_hdr != 0x1b)
				ERRI(EPROTONOSUPPORT);
			local = grh->dgid;
			ah->grh.dgid = grh->sgid;
			ah->grh.flow_label = flow & 0xfffff;
			ah->grh.traffic_class = (flow >> 20) & 0xff;
			ah->grh.hop_limit = grh->hop_limit;
		}
		idx = capi_find_gid(ic, port, &local);
		if (idx < 0)
			ERRI(ENOENT);
		ah->grh.sgid_index = idx;
	}
	return 0;
}

EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
					    uint8_t port)
{
	struct ibv_ah_attr a;

	if (!pd)
		ERRP(EINVAL);
	if (ibv_init_ah_from_wc(pd->context, port, wc, grh, &a))
		return NULL;
	return ibv_create_ah(pd, &a);
}

/* ---- completion channels ------------------------------------------- */

EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ic)
{
	FORKED_P();
	struct capi_context *c = to_ctx(ic);
	struct capi_channel *ch;
	int rc;

	if (!c)
		ERRP(EINVAL);
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		ERRP(ENOMEM);
	ch->ch.fd = eventfd(0, EFD_CLOEXEC);
	if (ch->ch.fd < 0) {
		rc = errno;
		free(ch);
		ERRP(rc);
	}
	rc = vs_create_channel(c->h, ch->ch.fd, (uintptr_t *)&ch->h);
	if (rc) {
		close(ch->ch.fd);
		free(ch);
		ERRP(rc);
	}
	ch->ch.context = ic;
	return &ch->ch;
}

EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	FORKED_M1();
	struct capi_channel *ch = to_ch(channel);
	int rc;

	if (!ch)
		return EINVAL;
	rc = vs_destroy_channel(ch->h);
	if (rc)
		return rc; /* libibverbs returns the errno (EBUSY), as ibv_destroy_cq does */
	close(ch->ch.fd);
	free(ch);
	return 0;
}

EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	FORKED_M1();
	struct capi_channel *ch = to_ch(channel);
	uintptr_t p = 0;
	int rc;

	if (!ch || !cq || !cq_context)
		ERRI(EINVAL);
	for (;;) {
		rc = vs_chan_get(ch->h, &p, 0);
		if (!rc)
			break;
		if (rc != EAGAIN)
			ERRI(rc);
		rc = wait_checked(ch->ch.fd, ch->h, 1);
		if (rc == EAGAIN) {
			/* Non-blocking: EAGAIN only once the events the engine
			 * raised are taken too (internal/evfeed). */
			rc = vs_chan_get(ch->h, &p, 1);
			if (!rc)
				break;
		}
		if (rc)
			ERRI(rc);
	}
	*cq = (struct ibv_cq *)p;
	*cq_context = (*cq)->cq_context;
	return 0;
}

EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	FORKED_V();
	if (cq && nevents)
		vs_ack_cq(to_cq(cq)->h, nevents);
}

/* ---- completion queues --------------------------------------------- */

static int cqx_start_poll(struct ibv_cq_ex *cq, struct ibv_poll_cq_attr *attr);
static int cqx_next_poll(struct ibv_cq_ex *cq);
static void cqx_end_poll(struct ibv_cq_ex *cq);
static enum ibv_wc_opcode cqx_read_opcode(struct ibv_cq_ex *cq) { return to_cqx(cq)->cur.opcode; }
static uint32_t cqx_read_vendor_err(struct ibv_cq_ex *cq) { return to_cqx(cq)->cur.vendor_err; }
static uint32_t cqx_read_byte_len(struct ibv_cq_ex *cq) { return to_cqx(cq)->cur.byte_len; }
static __be32 cqx_read_imm_data(struct ibv_cq_ex *cq) { return to_cqx(cq)->cur.imm_data; }
static uint32_t cqx_read_qp_num(struct ibv_cq_ex *cq) { return to_cqx(cq)->cur.qp_num; }
static uint32_t cqx_read_src_qp(struct ibv_cq_ex *cq) { return to_cqx(cq)->cur.src_qp; }
static unsigned int cqx_read_wc_flags(struct ibv_cq_ex *cq) { return to_cqx(cq)->cur.wc_flags; }
static uint32_t cqx_read_slid(struct ibv_cq_ex *cq) { return to_cqx(cq)->cur.slid; }
static uint8_t cqx_read_sl(struct ibv_cq_ex *cq) { return to_cqx(cq)->cur.sl; }
static uint8_t cqx_read_dlid_path_bits(struct ibv_cq_ex *cq) { return to_cqx(cq)->cur.dlid_path_bits; }
static uint64_t cqx_read_completion_ts(struct ibv_cq_ex *cq) { return to_cqx(cq)->ts; }
static uint64_t cqx_read_wallclock(struct ibv_cq_ex *cq) { return to_cqx(cq)->wallclock; }
static uint16_t cqx_read_cvlan(struct ibv_cq_ex *cq) { (void)cq; return 0; }
static uint32_t cqx_read_flow_tag(struct ibv_cq_ex *cq) { (void)cq; return 0; }
static void cqx_read_tm_info(struct ibv_cq_ex *cq, struct ibv_wc_tm_info *tm)
{
	(void)cq;
	if (tm)
		memset(tm, 0, sizeof(*tm));
}

static int cqx_step(struct ibv_cq_ex *cq, int next)
{
	FORKED_R();
	struct capi_cq *c = to_cqx(cq);
	int rc;

	if (!c)
		return EINVAL;
#ifdef VERBSIM_NICD
	if (c->fast)
		return next ? nicd_ring_next(c) : nicd_ring_start(c);
#endif
	rc = vs_cq_poll_ex(c->h, next, &c->cur, (uint64_t *)&c->ts, (uint64_t *)&c->wallclock);
	if (rc)
		return rc;
	c->cq.wr_id = c->cur.wr_id;
	c->cq.status = c->cur.status;
	return 0;
}

static int cqx_start_poll(struct ibv_cq_ex *cq, struct ibv_poll_cq_attr *attr)
{
	if (!attr || attr->comp_mask)
		return EINVAL;
	return cqx_step(cq, 0);
}

static int cqx_next_poll(struct ibv_cq_ex *cq) { return cqx_step(cq, 1); }

static void cqx_end_poll(struct ibv_cq_ex *cq)
{
	FORKED_V();
	struct capi_cq *c = to_cqx(cq);

#ifdef VERBSIM_NICD
	if (c && c->fast) {
		nicd_ring_end(c);
		return;
	}
#endif
	if (c)
		vs_cq_poll_ex(c->h, 2, &c->cur, (uint64_t *)&c->ts, (uint64_t *)&c->wallclock);
}

/* ex says the call is ibv_create_cq_ex, which a provider may lack (CQX-11). */
static struct ibv_cq_ex *create_cq(struct ibv_context *ic, int cqe, void *cq_context,
				   struct ibv_comp_channel *channel, int vector, uint64_t wc_flags,
				   uint32_t comp_mask, uint32_t flags, int ex)
{
	FORKED_P();
	struct capi_context *c = to_ctx(ic);
	struct capi_cq *q;
	int real = 0, rc;

	if (!c)
		ERRP(EINVAL);
	if (channel && channel->context != ic)
		ERRP(EINVAL);
	q = calloc(1, sizeof(*q));
	if (!q)
		ERRP(ENOMEM);
	rc = vs_create_cq(c->h, cqe, channel ? to_ch(channel)->h : 0, vector, wc_flags, comp_mask, flags, ex,
			  (uintptr_t)q, (uintptr_t *)&q->h, &real);
	if (rc) {
		free(q);
		ERRP(rc);
	}
	q->cq.context = ic;
	q->cq.channel = channel;
	q->cq.cq_context = cq_context;
	q->cq.cqe = real;
	pthread_mutex_init(&q->cq.mutex, NULL);
	pthread_cond_init(&q->cq.cond, NULL);
	q->cq.start_poll = cqx_start_poll;
	q->cq.next_poll = cqx_next_poll;
	q->cq.end_poll = cqx_end_poll;
	q->cq.read_opcode = cqx_read_opcode;
	q->cq.read_vendor_err = cqx_read_vendor_err;
	q->cq.read_byte_len = cqx_read_byte_len;
	q->cq.read_imm_data = cqx_read_imm_data;
	q->cq.read_qp_num = cqx_read_qp_num;
	q->cq.read_src_qp = cqx_read_src_qp;
	q->cq.read_wc_flags = cqx_read_wc_flags;
	q->cq.read_slid = cqx_read_slid;
	q->cq.read_sl = cqx_read_sl;
	q->cq.read_dlid_path_bits = cqx_read_dlid_path_bits;
	q->cq.read_completion_ts = cqx_read_completion_ts;
	q->cq.read_cvlan = cqx_read_cvlan;
	q->cq.read_flow_tag = cqx_read_flow_tag;
	q->cq.read_tm_info = cqx_read_tm_info;
	q->cq.read_completion_wallclock_ns = cqx_read_wallclock;
	if (channel)
		__atomic_add_fetch(&channel->refcnt, 1, __ATOMIC_SEQ_CST);
#ifdef VERBSIM_NICD
	nicd_ring_attach(q, real);
#endif
	return &q->cq;
}

EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *ic, int cqe, void *cq_context,
				    struct ibv_comp_channel *channel, int vector)
{
	/* IBV_WC_STANDARD_FLAGS, as rdma-core gives a legacy CQ. */
	return (struct ibv_cq *)create_cq(ic, cqe, cq_context, channel, vector, IBV_WC_STANDARD_FLAGS, 0, 0, 0);
}

static struct ibv_cq_ex *op_create_cq_ex(struct ibv_context *ic, struct ibv_cq_init_attr_ex *a)
{
	if (!a)
		ERRP(EINVAL);
	/* parent_domain must be a parent domain of the context (its
	 * allocators are not needed: see op_alloc_parent_domain). */
	if ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	    (!a->parent_domain || a->parent_domain->context != ic || !to_pd(a->parent_domain)->base))
		ERRP(EINVAL);
	return create_cq(ic, a->cqe, a->cq_context, a->channel, a->comp_vector, a->wc_flags,
			 a->comp_mask & ~IBV_CQ_INIT_ATTR_MASK_PD,
			 (a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) ? a->flags : 0, 1);
}

EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
	FORKED_R();
	struct capi_cq *q = to_cq(cq);
	int rc;

	if (!q)
		return EINVAL;
	rc = vs_destroy_cq(q->h);
	if (rc)
		return rc;
#ifdef VERBSIM_NICD
	nicd_ring_free(q);
#endif
	if (q->cq.channel)
		__atomic_sub_fetch(&q->cq.channel->refcnt, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_destroy(&q->cq.mutex);
	pthread_cond_destroy(&q->cq.cond);
	free(q);
	return 0;
}

EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	FORKED_R();
	struct capi_cq *q = to_cq(cq);
	int real = 0, rc;

	if (!q)
		return EINVAL;
#ifdef VERBSIM_NICD
	rc = nicd_ring_resize(q, cqe, &real);
#else
	rc = vs_resize_cq(q->h, cqe, &real);
#endif
	if (rc)
		return rc;
	q->cq.cqe = real;
	return 0;
}

static int op_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	FORKED_M1();
	struct capi_cq *q = to_cq(cq);
	int total = 0;

	if (!q || n < 0 || (n && !wc))
		return -1;
#ifdef VERBSIM_NICD
	if (q->fast)
		return nicd_ring_poll(q, n, wc);
#endif
	while (total < n) {
		int got = vs_poll_cq(q->h, n - total, (struct capi_wc *)(wc + total));

		if (got < 0)
			return total ? total : -1;
		total += got;
		if (got < 64 || got == 0)
			break;
	}
	return total;
}

static int op_req_notify_cq(struct ibv_cq *cq, int solicited)
{
	FORKED_R();
	if (!cq)
		return EINVAL;
	return vs_req_notify(to_cq(cq)->h, solicited);
}

/* ---- queue pairs ---------------------------------------------------- */

static void wr_op(struct ibv_qp_ex *qx, int op, uint32_t a32, uint32_t b32, uint64_t a64, uint64_t b64,
		  uint64_t c64, uintptr_t obj)
{
	FORKED_V();
	struct capi_qp *q = to_qpx(qx);
	int rc;

	if (!q)
		return;
	rc = vs_wr(q->h, op, qx->wr_id, qx->wr_flags, a32, b32, a64, b64, c64, obj);
	if (rc && !q->wr_err)
		q->wr_err = rc;
}

static void wrx_start(struct ibv_qp_ex *qx)
{
	if (!qx)
		return;
	to_qpx(qx)->wr_err = 0;
	wr_op(qx, CAPI_WR_START, 0, 0, 0, 0, 0, 0);
}

static int wrx_complete(struct ibv_qp_ex *qx)
{
	FORKED_R();
	struct capi_qp *q = to_qpx(qx);
	int err;

	if (!q)
		return EINVAL;
	err = q->wr_err;
	q->wr_err = 0;
	if (err) {
		vs_wr(q->h, CAPI_WR_ABORT, 0, 0, 0, 0, 0, 0, 0, 0);
		return err;
	}
#ifdef VERBSIM_NICD
	if (qx->qp_base.send_cq)
		nicd_ring_expect(to_cq(qx->qp_base.send_cq), 1);
#endif
	return vs_wr(q->h, CAPI_WR_COMPLETE, 0, 0, 0, 0, 0, 0, 0, 0);
}

static void wrx_abort(struct ibv_qp_ex *qx)
{
	if (!qx)
		return;
	to_qpx(qx)->wr_err = 0;
	wr_op(qx, CAPI_WR_ABORT, 0, 0, 0, 0, 0, 0);
}

static void wrx_send(struct ibv_qp_ex *qx) { wr_op(qx, CAPI_WR_SEND, 0, 0, 0, 0, 0, 0); }
static void wrx_send_imm(struct ibv_qp_ex *qx, __be32 imm) { wr_op(qx, CAPI_WR_SEND_IMM, imm, 0, 0, 0, 0, 0); }
static void wrx_send_inv(struct ibv_qp_ex *qx, uint32_t rkey) { wr_op(qx, CAPI_WR_SEND_INV, rkey, 0, 0, 0, 0, 0); }
static void wrx_rdma_write(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t addr)
{
	wr_op(qx, CAPI_WR_RDMA_WRITE, rkey, 0, addr, 0, 0, 0);
}
static void wrx_rdma_write_imm(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t addr, __be32 imm)
{
	wr_op(qx, CAPI_WR_RDMA_WRITE_IMM, rkey, imm, addr, 0, 0, 0);
}
static void wrx_rdma_read(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t addr)
{
	wr_op(qx, CAPI_WR_RDMA_READ, rkey, 0, addr, 0, 0, 0);
}
static void wrx_atomic_cmp_swp(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t addr, uint64_t cmp, uint64_t swp)
{
	wr_op(qx, CAPI_WR_ATOMIC_CMP_SWP, rkey, 0, addr, cmp, swp, 0);
}
static void wrx_atomic_fetch_add(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t addr, uint64_t add)
{
	wr_op(qx, CAPI_WR_ATOMIC_FETCH_ADD, rkey, 0, addr, add, 0, 0);
}
static void wrx_local_inv(struct ibv_qp_ex *qx, uint32_t rkey) { wr_op(qx, CAPI_WR_LOCAL_INV, rkey, 0, 0, 0, 0, 0); }
static void wrx_set_sge(struct ibv_qp_ex *qx, uint32_t lkey, uint64_t addr, uint32_t len)
{
	wr_op(qx, CAPI_WR_SET_SGE, lkey, len, addr, 0, 0, 0);
}
static void wrx_set_sge_list(struct ibv_qp_ex *qx, size_t n, const struct ibv_sge *l)
{
	FORKED_V();
	struct capi_qp *q = to_qpx(qx);
	int rc;

	if (!q)
		return;
	rc = vs_wr_sge_list(q->h, (struct ibv_sge *)l, n);
	if (rc && !q->wr_err)
		q->wr_err = rc;
}
static void wrx_set_inline_data(struct ibv_qp_ex *qx, void *addr, size_t len)
{
	wr_op(qx, CAPI_WR_SET_INLINE, 0, 0, (uintptr_t)addr, len, 0, 0);
}
static void wrx_set_inline_data_list(struct ibv_qp_ex *qx, size_t n, const struct ibv_data_buf *l)
{
	FORKED_V();
	struct capi_qp *q = to_qpx(qx);
	int rc;

	if (!q)
		return;
	rc = vs_wr_inline_list(q->h, (struct ibv_data_buf *)l, n);
	if (rc && !q->wr_err)
		q->wr_err = rc;
}
static void wrx_set_ud_addr(struct ibv_qp_ex *qx, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	wr_op(qx, CAPI_WR_SET_UD_ADDR, qpn, qkey, 0, 0, 0, ah ? to_ah(ah)->h : 0);
}
/* Builders of features verbsim does not model: the batch fails at
 * wr_complete with EOPNOTSUPP. */
static void wrx_unsupported(struct ibv_qp_ex *qx)
{
	struct capi_qp *q = to_qpx(qx);

	if (q && !q->wr_err)
		q->wr_err = EOPNOTSUPP;
}
static void wrx_bind_mw(struct ibv_qp_ex *qx, struct ibv_mw *mw, uint32_t rkey, const struct ibv_mw_bind_info *bi)
{
	if (!mw || !bi) {
		struct capi_qp *q = to_qpx(qx);

		if (q && !q->wr_err)
			q->wr_err = EINVAL;
		return;
	}
	wr_op(qx, CAPI_WR_BIND_MW, rkey, bi->mw_access_flags, bi->addr, bi->length, bi->mr ? to_mr(bi->mr)->h : 0,
	      ((struct capi_mw *)mw)->h);
}
static void wrx_send_tso(struct ibv_qp_ex *qx, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr, (void)hdr_sz, (void)mss;
	wrx_unsupported(qx);
}
static void wrx_set_xrc_srqn(struct ibv_qp_ex *qx, uint32_t srqn)
{
	wr_op(qx, CAPI_WR_SET_XRC_SRQN, srqn, 0, 0, 0, 0, 0);
}
/* The 8 bytes atomic_wr points to are copied now and travel as one
 * uint64 in host byte order (XFER-33). A NULL pointer fails the batch. */
static void wrx_atomic_write(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t addr, const void *wr)
{
	struct capi_qp *q = to_qpx(qx);
	uint64_t v;

	if (!q)
		return;
	if (!wr) {
		if (!q->wr_err)
			q->wr_err = EFAULT;
		return;
	}
	memcpy(&v, wr, sizeof(v));
	wr_op(qx, CAPI_WR_ATOMIC_WRITE, rkey, 0, addr, v, 0, 0);
}

struct ibv_qp *capi_qp_base_init(struct ibv_qp *b, struct ibv_context *ic, const struct ibv_qp_init_attr_ex *a,
				 uint32_t qpn)
{
	b->context = ic;
	b->qp_context = a->qp_context;
	b->handle = qpn;
	b->qp_num = qpn;
	b->state = IBV_QPS_RESET;
	b->qp_type = a->qp_type;
	pthread_mutex_init(&b->mutex, NULL);
	pthread_cond_init(&b->cond, NULL);
	return b;
}

static struct ibv_qp *create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr_ex *a)
{
	FORKED_P();
	struct capi_qp_init in;
	struct capi_qp *q;
	struct ibv_qp_cap cap;
	uint32_t qpn = 0;
	int rc;

	/* An XRC_SEND QP has no receive side: recv_cq and srq are ignored. */
	int xrc = a && a->qp_type == IBV_QPT_XRC_SEND;

	if (!pd || !a || !a->send_cq || (!a->recv_cq && !xrc))
		ERRP(EINVAL);
	/* A QP type the device lacks, as rxe answers (rxe_qp_chk_init). */
	if (a->qp_type == IBV_QPT_RAW_PACKET || a->qp_type == IBV_QPT_DRIVER)
		ERRP(EOPNOTSUPP);
	if (a->send_cq->context != pd->context ||
	    (!xrc && (a->recv_cq->context != pd->context || (a->srq && a->srq->context != pd->context))))
		ERRP(EINVAL);
	memset(&in, 0, sizeof(in));
	in.send_cq = to_cq(a->send_cq)->h;
	in.recv_cq = xrc ? 0 : to_cq(a->recv_cq)->h;
	in.srq = a->srq && !xrc ? to_srq(a->srq)->h : 0;
	in.cap = a->cap;
	in.qp_type = a->qp_type;
	in.sq_sig_all = a->sq_sig_all;
	in.comp_mask = a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	in.send_ops_flags = a->send_ops_flags;
	q = calloc(1, sizeof(*q));
	if (!q)
		ERRP(ENOMEM);
	rc = vs_create_qp(to_pd(pd)->h, &in, (uintptr_t)q, (uintptr_t *)&q->h, &qpn, &cap);
	if (rc) {
		free(q);
		ERRP(rc);
	}
	q->ex = !!(a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS);
	a->cap = cap;
	struct ibv_qp *b = capi_qp_base_init(&q->qpx.qp_base, pd->context, a, qpn);
	b->pd = pd;
	b->send_cq = a->send_cq;
	b->recv_cq = a->recv_cq;
	b->srq = a->srq;
	struct ibv_qp_ex *x = &q->qpx;
	x->comp_mask = 0;
	x->wr_atomic_cmp_swp = wrx_atomic_cmp_swp;
	x->wr_atomic_fetch_add = wrx_atomic_fetch_add;
	x->wr_bind_mw = wrx_bind_mw;
	x->wr_local_inv = wrx_local_inv;
	x->wr_rdma_read = wrx_rdma_read;
	x->wr_rdma_write = wrx_rdma_write;
	x->wr_rdma_write_imm = wrx_rdma_write_imm;
	x->wr_send = wrx_send;
	x->wr_send_imm = wrx_send_imm;
	x->wr_send_inv = wrx_send_inv;
	x->wr_send_tso = wrx_send_tso;
	x->wr_set_ud_addr = wrx_set_ud_addr;
	x->wr_set_xrc_srqn = wrx_set_xrc_srqn;
	x->wr_set_inline_data = wrx_set_inline_data;
	x->wr_set_inline_data_list = wrx_set_inline_data_list;
	x->wr_set_sge = wrx_set_sge;
	x->wr_set_sge_list = wrx_set_sge_list;
	x->wr_start = wrx_start;
	x->wr_complete = wrx_complete;
	x->wr_abort = wrx_abort;
	x->wr_atomic_write = wrx_atomic_write;
	return b;
}

EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *qp;

	if (!pd || !attr)
		ERRP(EINVAL);
	memset(&a, 0, sizeof(a));
	a.qp_context = attr->qp_context;
	a.send_cq = attr->send_cq;
	a.recv_cq = attr->recv_cq;
	a.srq = attr->srq;
	a.cap = attr->cap;
	a.qp_type = attr->qp_type;
	a.sq_sig_all = attr->sq_sig_all;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd;
	qp = create_qp(pd, &a);
	if (qp)
		attr->cap = a.cap;
	return qp;
}

static struct ibv_qp *op_create_qp_ex(struct ibv_context *ic, struct ibv_qp_init_attr_ex *a)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;

	if (!ic || !a)
		ERRP(EINVAL);
	if (capi_forked())
		return NULL;
	if ((a->comp_mask & IBV_QP_INIT_ATTR_XRCD) && a->qp_type == IBV_QPT_XRC_RECV)
		return capi_create_xrc_recv_qp(ic, a);
	if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || !a->pd || a->pd->context != ic)
		ERRP(EINVAL);
	if (a->comp_mask & ~known & ~IBV_QP_INIT_ATTR_CREATE_FLAGS)
		ERRP(EOPNOTSUPP);
	/* No creation flag is supported (rxe: EOPNOTSUPP); none asked is fine. */
	if ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags)
		ERRP(EOPNOTSUPP);
	return create_qp(a->pd, a);
}

EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	struct capi_qp *q = to_qp(qp);

	if (!q || !q->ex)
		return NULL;
	return &q->qpx;
}

EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	FORKED_R();
	int rc;

	if (!qp || !attr)
		return EINVAL;
	rc = vs_modify_qp(to_qp(qp)->h, attr, mask);
	if (rc)
		return rc;
	if (mask & IBV_QP_STATE)
		qp->state = attr->qp_state;
	return 0;
}

EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask, struct ibv_qp_init_attr *init)
{
	FORKED_R();
	int rc;

	if (!qp || !attr || !init)
		return EINVAL;
	rc = vs_query_qp(to_qp(qp)->h, mask, attr, init);
	if (rc)
		return rc;
	init->qp_context = qp->qp_context;
	init->send_cq = qp->send_cq;
	init->recv_cq = qp->recv_cq;
	init->srq = qp->srq;
	if (mask & IBV_QP_STATE)
		qp->state = attr->qp_state;
	return 0;
}

EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
	FORKED_R();
	struct capi_qp *q = to_qp(qp);
	int rc;

	if (!q)
		return EINVAL;
	rc = vs_destroy_qp(q->h);
	if (rc)
		return rc;
	pthread_mutex_destroy(&qp->mutex);
	pthread_cond_destroy(&qp->cond);
	free(q);
	return 0;
}

/* ibv_attach_mcast and ibv_detach_mcast (MCAST-01, MCAST-02): the GID goes
 * to Go as its 16 bytes. */
EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	FORKED_R();
	if (!to_qp(qp) || !gid)
		return EINVAL;
	return vs_mcast(to_qp(qp)->h, (uint8_t *)gid->raw, lid, 1);
}

EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	FORKED_R();
	if (!to_qp(qp) || !gid)
		return EINVAL;
	return vs_mcast(to_qp(qp)->h, (uint8_t *)gid->raw, lid, 0);
}

/* Requests go to Go in batches of POST_BATCH, so a long list needs no
 * allocation; the engine stops at the first failing one. */
#define POST_BATCH 32

static int post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);

/* The C-only library's CQ rings sleep in a poll that finds nothing only
 * when the program waits for completions there (nicd/ring.c): a post tells
 * the rings of the QP's CQs how many requests it made. */
static int op_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
#ifdef VERBSIM_NICD
	if (qp && qp->send_cq) {
		int n = 0;

		for (struct ibv_send_wr *w = wr; w && n < (1 << 20); w = w->next)
			n++;
		nicd_ring_expect(to_cq(qp->send_cq), n);
	}
#endif
	return post_send(qp, wr, bad);
}

static int post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct capi_swr b[POST_BATCH];
	struct ibv_send_wr *first[POST_BATCH];
	struct ibv_send_wr **badp = bad ? bad : &(struct ibv_send_wr *){ NULL };
	int ud;
	if (capi_forked()) {
		*badp = wr;
		return EOPNOTSUPP;
	}

	if (!qp) {
		*badp = wr;
		return EINVAL;
	}
	ud = qp->qp_type == IBV_QPT_UD;
	while (wr) {
		int n = 0, posted = 0, rc;

		for (; wr && n < POST_BATCH; wr = wr->next, n++) {
			struct capi_swr *s = &b[n];

			memset(s, 0, sizeof(*s));
			first[n] = wr;
			if (wr->num_sge < 0 || (wr->num_sge > 0 && !wr->sg_list)) {
				*badp = wr;
				if (n) { /* post what came before it first */
					rc = vs_post_send(to_qp(qp)->h, b, n, &posted);
					if (rc) {
						*badp = first[posted];
						return rc;
					}
				}
				return EINVAL;
			}
			s->wr_id = wr->wr_id;
			s->sg_list = wr->sg_list;
			s->num_sge = wr->num_sge;
			s->opcode = wr->opcode;
			s->flags = wr->send_flags;
			s->imm = wr->imm_data; /* also invalidate_rkey */
			switch (wr->opcode) {
			case IBV_WR_RDMA_WRITE:
			case IBV_WR_RDMA_WRITE_WITH_IMM:
			case IBV_WR_RDMA_READ:
			case IBV_WR_ATOMIC_WRITE: /* wr.rdma, as rxe reads it */
				s->remote_addr = wr->wr.rdma.remote_addr;
				s->rkey = wr->wr.rdma.rkey;
				break;
			case IBV_WR_ATOMIC_CMP_AND_SWP:
			case IBV_WR_ATOMIC_FETCH_AND_ADD:
				s->remote_addr = wr->wr.atomic.remote_addr;
				s->rkey = wr->wr.atomic.rkey;
				s->compare_add = wr->wr.atomic.compare_add;
				s->swap = wr->wr.atomic.swap;
				break;
			case IBV_WR_BIND_MW:
				if (capi_bind_wr(s, wr)) {
					*badp = wr;
					if (n) {
						rc = vs_post_send(to_qp(qp)->h, b, n, &posted);
						if (rc) {
							*badp = first[posted];
							return rc;
						}
					}
					return EINVAL;
				}
				break;
			case IBV_WR_TSO:
			case IBV_WR_DRIVER1:
				*badp = wr;
				if (n) {
					rc = vs_post_send(to_qp(qp)->h, b, n, &posted);
					if (rc) {
						*badp = first[posted];
						return rc;
					}
				}
				return EOPNOTSUPP;
			default:
				break;
			}
			if (ud) {
				if (!wr->wr.ud.ah) {
					*badp = wr;
					if (n) {
						rc = vs_post_send(to_qp(qp)->h, b, n, &posted);
						if (rc) {
							*badp = first[posted];
							return rc;
						}
					}
					return EINVAL;
				}
				s->ah = to_ah(wr->wr.ud.ah)->h;
				s->remote_qpn = wr->wr.ud.remote_qpn;
				s->remote_qkey = wr->wr.ud.remote_qkey;
			}
			if (qp->qp_type == IBV_QPT_XRC_SEND)
				s->xrc_srqn = wr->qp_type.xrc.remote_srqn;
		}
		rc = vs_post_send(to_qp(qp)->h, b, n, &posted);
		if (rc) {
			*badp = first[posted < n ? posted : n - 1];
			return rc;
		}
	}
	return 0;
}

static int post_recv_list(uintptr_t h, int srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **badp)
{
	struct capi_rwr b[POST_BATCH];
	struct ibv_recv_wr *first[POST_BATCH];

	while (wr) {
		int n = 0, posted = 0, rc, bad_sge = 0;

		for (; wr && n < POST_BATCH; wr = wr->next, n++) {
			if (wr->num_sge < 0 || (wr->num_sge > 0 && !wr->sg_list)) {
				bad_sge = 1;
				break;
			}
			first[n] = wr;
			b[n].wr_id = wr->wr_id;
			b[n].sg_list = wr->sg_list;
			b[n].num_sge = wr->num_sge;
		}
		if (n) {
			rc = srq ? vs_post_srq_recv(h, b, n, &posted) : vs_post_recv(h, b, n, &posted);
			if (rc) {
				*badp = first[posted < n ? posted : n - 1];
				return rc;
			}
		}
		if (bad_sge) {
			*badp = wr;
			return EINVAL;
		}
	}
	return 0;
}

static int op_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct ibv_recv_wr **badp = bad ? bad : &(struct ibv_recv_wr *){ NULL };
	if (capi_forked()) {
		*badp = wr;
		return EOPNOTSUPP;
	}

	if (!qp) {
		*badp = wr;
		return EINVAL;
	}
#ifdef VERBSIM_NICD
	if (qp->recv_cq) {
		int n = 0;

		for (struct ibv_recv_wr *w = wr; w && n < (1 << 20); w = w->next)
			n++;
		nicd_ring_expect(to_cq(qp->recv_cq), n);
	}
#endif
	return post_recv_list(to_qp(qp)->h, 0, wr, badp);
}

/* ---- shared receive queues ----------------------------------------- */

EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	FORKED_P();
	struct capi_srq *s;
	int rc;

	if (!pd || !attr)
		ERRP(EINVAL);
	s = calloc(1, sizeof(*s));
	if (!s)
		ERRP(ENOMEM);
	rc = vs_create_srq(to_pd(pd)->h, &attr->attr, (uintptr_t)s, (uintptr_t *)&s->h);
	if (rc) {
		free(s);
		ERRP(rc);
	}
	s->srq.context = pd->context;
	s->srq.srq_context = attr->srq_context;
	s->srq.pd = pd;
	pthread_mutex_init(&s->srq.mutex, NULL);
	pthread_cond_init(&s->srq.cond, NULL);
	return &s->srq;
}

EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	FORKED_R();
	if (!srq || !attr)
		return EINVAL;
	return vs_modify_srq(to_srq(srq)->h, attr, mask);
}

EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	FORKED_R();
	if (!srq || !attr)
		return EINVAL;
	return vs_query_srq(to_srq(srq)->h, attr);
}

EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
	FORKED_R();
	int rc;

	if (!srq)
		return EINVAL;
	rc = vs_destroy_srq(to_srq(srq)->h);
	if (rc)
		return rc;
	pthread_mutex_destroy(&srq->mutex);
	pthread_cond_destroy(&srq->cond);
	free(to_srq(srq));
	return 0;
}

static int op_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct ibv_recv_wr **badp = bad ? bad : &(struct ibv_recv_wr *){ NULL };
	if (capi_forked()) {
		*badp = wr;
		return EOPNOTSUPP;
	}

	if (!srq) {
		*badp = wr;
		return EINVAL;
	}
	return post_recv_list(to_srq(srq)->h, 1, wr, badp);
}

/* Flush the trace when the program exits. */
__attribute__((destructor)) static void capi_fini(void)
{
	if (!capi_in_child())
		vs_shutdown();
}
