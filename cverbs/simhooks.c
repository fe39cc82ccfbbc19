/* simhooks.c: the test hooks of verbsim's test-mode libibverbs.so.1
 * (capi/verbsim_test.h), looked up at run time: any other libibverbs, and
 * verbsim's production build, has none of them, and the binding then
 * offers none of the capabilities they back (see simhooks.go). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include "cverbs.h"

#define VERSION "VERBSIM_TEST_1"

static int (*push)(struct ibv_cq *, const struct ibv_wc *, int, int *);
static int (*cq_ref)(struct ibv_cq *);
static int (*cq_unref)(struct ibv_cq *);
static int (*mr_ref)(struct ibv_mr *);
static int (*mr_unref)(struct ibv_mr *);
static int (*device)(struct ibv_device *, const cv_sim_limits *, size_t, struct ibv_device **);

/* cv_sim_hooks looks the hooks up (once: the Go side calls it under a
 * sync.Once) and says whether all of them are there. */
int cv_sim_hooks(void)
{
	push = dlvsym(RTLD_DEFAULT, "verbsim_test_cq_push", VERSION);
	cq_ref = dlvsym(RTLD_DEFAULT, "verbsim_test_cq_ref", VERSION);
	cq_unref = dlvsym(RTLD_DEFAULT, "verbsim_test_cq_unref", VERSION);
	mr_ref = dlvsym(RTLD_DEFAULT, "verbsim_test_mr_ref", VERSION);
	mr_unref = dlvsym(RTLD_DEFAULT, "verbsim_test_mr_unref", VERSION);
	device = dlvsym(RTLD_DEFAULT, "verbsim_test_device", VERSION);
	return push && cq_ref && cq_unref && mr_ref && mr_unref && device;
}

int cv_sim_cq_push(struct ibv_cq *cq, const struct ibv_wc *wc, int solicited, int *overrun)
{
	return push ? push(cq, wc, solicited, overrun) : EOPNOTSUPP;
}

int cv_sim_cq_ref(struct ibv_cq *cq, int take)
{
	if (!cq_ref || !cq_unref)
		return EOPNOTSUPP;
	return take ? cq_ref(cq) : cq_unref(cq);
}

int cv_sim_mr_ref(struct ibv_mr *mr, int take)
{
	if (!mr_ref || !mr_unref)
		return EOPNOTSUPP;
	return take ? mr_ref(mr) : mr_unref(mr);
}

int cv_sim_device(struct ibv_device *like, const cv_sim_limits *l, struct ibv_device **out)
{
	return device ? device(like, l, sizeof(*l), out) : EOPNOTSUPP;
}
