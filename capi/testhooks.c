//go:build verbsim_testhooks

/*
 * testhooks.c: the C side of the test hooks (verbsim_test.h), compiled only
 * into the test-mode library (build.sh --test-hooks, build tag
 * verbsim_testhooks); testhooks.go is the Go side.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "capi.h"
#include "verbsim_test.h"
#include "vs.h"

#define EXPORT __attribute__((visibility("default")))

_Static_assert(sizeof(struct capi_wc) == sizeof(struct ibv_wc), "capi_wc is struct ibv_wc");

/* The devices verbsim_test_device made, never freed. */
struct test_device {
	struct capi_device d;
	struct test_device *next;
};

static pthread_mutex_t test_mu = PTHREAD_MUTEX_INITIALIZER;
static struct test_device *test_devs;

struct capi_device *capi_test_to_dev(struct ibv_device *d)
{
	struct capi_device *found = NULL;

	pthread_mutex_lock(&test_mu);
	for (struct test_device *t = test_devs; t; t = t->next)
		if (&t->d.dev == d) {
			found = &t->d;
			break;
		}
	pthread_mutex_unlock(&test_mu);
	return found;
}

EXPORT int verbsim_test_cq_push(struct ibv_cq *cq, const struct ibv_wc *wc, int solicited, int *overrun)
{
	int over = 0, rc;

	if (capi_forked())
		return EOPNOTSUPP;
	if (!cq || !wc)
		return EINVAL;
	rc = vs_test_cq_push(((struct capi_cq *)cq)->h, (struct capi_wc *)wc, solicited, &over);
	if (!rc && overrun)
		*overrun = over;
	return rc;
}

EXPORT int verbsim_test_cq_ref(struct ibv_cq *cq)
{
	if (capi_forked())
		return EOPNOTSUPP;
	return cq ? vs_test_cq_ref(((struct capi_cq *)cq)->h, 1) : EINVAL;
}

EXPORT int verbsim_test_cq_unref(struct ibv_cq *cq)
{
	if (capi_forked())
		return EOPNOTSUPP;
	return cq ? vs_test_cq_ref(((struct capi_cq *)cq)->h, 0) : EINVAL;
}

EXPORT int verbsim_test_mr_ref(struct ibv_mr *mr)
{
	if (capi_forked())
		return EOPNOTSUPP;
	return mr ? vs_test_mr_ref(((struct capi_mr *)mr)->h, 1) : EINVAL;
}

EXPORT int verbsim_test_mr_unref(struct ibv_mr *mr)
{
	if (capi_forked())
		return EOPNOTSUPP;
	return mr ? vs_test_mr_ref(((struct capi_mr *)mr)->h, 0) : EINVAL;
}

EXPORT int verbsim_test_device(struct ibv_device *like, const struct verbsim_test_limits *l, size_t size,
			       struct ibv_device **out)
{
	struct test_device *t;
	uint64_t guid = 0;
	int index = 0, rc;

	if (capi_forked())
		return EOPNOTSUPP;
	if (!like || !l || size != sizeof(*l) || !out)
		return EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return ENOMEM;
	rc = vs_test_device(like->name, (struct verbsim_test_limits *)l, &index, (uint64_t *)&guid, t->d.dev.name);
	if (rc) {
		free(t);
		return rc;
	}
	t->d.index = index;
	t->d.guid = guid;
	t->d.dev.node_type = IBV_NODE_CA;
	t->d.dev.transport_type = IBV_TRANSPORT_IB;
	snprintf(t->d.dev.dev_name, sizeof(t->d.dev.dev_name), "uverbs%d", index);
	snprintf(t->d.dev.dev_path, sizeof(t->d.dev.dev_path), "/sys/class/infiniband_verbs/uverbs%d", index);
	snprintf(t->d.dev.ibdev_path, sizeof(t->d.dev.ibdev_path), "/sys/class/infiniband/%s", t->d.dev.name);
	pthread_mutex_lock(&test_mu);
	t->next = test_devs;
	test_devs = t;
	pthread_mutex_unlock(&test_mu);
	*out = &t->d.dev;
	return 0;
}

/* The hooks of VERBSIM_TEST_2. */

EXPORT int verbsim_test_qp_fatal(struct ibv_qp *qp)
{
	if (capi_forked())
		return EOPNOTSUPP;
	return qp ? vs_test_qp_fatal(((struct capi_qp *)qp)->h) : EINVAL;
}

EXPORT int verbsim_test_qp_force_status(struct ibv_qp *qp, uint64_t wr_id, int recv, enum ibv_wc_status status)
{
	if (capi_forked())
		return EOPNOTSUPP;
	return qp ? vs_test_qp_force_status(((struct capi_qp *)qp)->h, wr_id, recv, (int)status) : EINVAL;
}

EXPORT int verbsim_test_qp_outstanding(struct ibv_qp *qp, int *send, int *recv)
{
	int s = 0, r = 0, rc;

	if (capi_forked())
		return EOPNOTSUPP;
	if (!qp || !send || !recv)
		return EINVAL;
	rc = vs_test_qp_outstanding(((struct capi_qp *)qp)->h, &s, &r);
	if (!rc) {
		*send = s;
		*recv = r;
	}
	return rc;
}

EXPORT int verbsim_test_srq_take(struct ibv_srq *srq, uint64_t *wr_id, struct ibv_sge *sg_list, int max_sge,
				 int *num_sge)
{
	if (capi_forked())
		return EOPNOTSUPP;
	if (!srq || !wr_id || !num_sge || max_sge < 0 || (max_sge > 0 && !sg_list))
		return EINVAL;
	return vs_test_srq_take(((struct capi_srq *)srq)->h, wr_id, sg_list, max_sge, num_sge);
}

EXPORT int verbsim_test_srq_len(struct ibv_srq *srq, int *len)
{
	if (capi_forked())
		return EOPNOTSUPP;
	if (!srq || !len)
		return EINVAL;
	return vs_test_srq_len(((struct capi_srq *)srq)->h, len);
}

EXPORT int verbsim_test_srq_error(struct ibv_srq *srq)
{
	if (capi_forked())
		return EOPNOTSUPP;
	return srq ? vs_test_srq_error(((struct capi_srq *)srq)->h) : EINVAL;
}

EXPORT int verbsim_test_channel_len(struct ibv_comp_channel *ch, int *len)
{
	if (capi_forked())
		return EOPNOTSUPP;
	if (!ch || !len)
		return EINVAL;
	return vs_test_channel_len(((struct capi_channel *)ch)->h, len);
}

/* dev_index returns the fabric index of dev, a device of
 * ibv_get_device_list or of verbsim_test_device, or -1. */
static int dev_index(struct ibv_device *dev)
{
	struct capi_device *t = capi_test_to_dev(dev);
	struct ibv_device **l;
	int n = 0, index = -1;

	if (t)
		return t->index;
	l = ibv_get_device_list(&n);
	if (!l)
		return -1;
	for (int i = 0; i < n; i++)
		if (l[i] == dev)
			index = ((struct capi_device *)dev)->index;
	ibv_free_device_list(l);
	return index;
}

EXPORT int verbsim_test_port_state(struct ibv_device *dev, uint8_t port, int up)
{
	int index;

	if (capi_forked())
		return EOPNOTSUPP;
	if (!dev || (index = dev_index(dev)) < 0)
		return EINVAL;
	return vs_test_port_state(index, port, up);
}

EXPORT int verbsim_test_receive(struct ibv_device *dev, const void *frame, size_t len)
{
	int index;

	if (capi_forked())
		return EOPNOTSUPP;
	if (!dev || (!frame && len) || (index = dev_index(dev)) < 0)
		return EINVAL;
	return vs_test_receive(index, (void *)frame, len);
}

EXPORT int verbsim_test_faults(struct ibv_device *dev, double drop, double duplicate, double delay)
{
	int index;

	if (capi_forked())
		return EOPNOTSUPP;
	if (!dev || (index = dev_index(dev)) < 0)
		return EINVAL;
	return vs_test_faults(index, drop, duplicate, delay);
}
