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

/* The hooks of VERBSIM_TEST_2. */

#define VERSION2 "VERBSIM_TEST_2"

static int (*qp_fatal)(struct ibv_qp *);
static int (*qp_force_status)(struct ibv_qp *, uint64_t, int, enum ibv_wc_status);
static int (*qp_outstanding)(struct ibv_qp *, int *, int *);
static int (*srq_take)(struct ibv_srq *, uint64_t *, struct ibv_sge *, int, int *);
static int (*srq_len)(struct ibv_srq *, int *);
static int (*srq_error)(struct ibv_srq *);
static int (*channel_len)(struct ibv_comp_channel *, int *);
static int (*port_state)(struct ibv_device *, uint8_t, int);
static int (*faults)(struct ibv_device *, double, double, double);

/* cv_sim_hooks2 looks the hooks of VERBSIM_TEST_2 up (once, as
 * cv_sim_hooks) and says whether all of them are there. */
int cv_sim_hooks2(void)
{
	qp_fatal = dlvsym(RTLD_DEFAULT, "verbsim_test_qp_fatal", VERSION2);
	qp_force_status = dlvsym(RTLD_DEFAULT, "verbsim_test_qp_force_status", VERSION2);
	qp_outstanding = dlvsym(RTLD_DEFAULT, "verbsim_test_qp_outstanding", VERSION2);
	srq_take = dlvsym(RTLD_DEFAULT, "verbsim_test_srq_take", VERSION2);
	srq_len = dlvsym(RTLD_DEFAULT, "verbsim_test_srq_len", VERSION2);
	srq_error = dlvsym(RTLD_DEFAULT, "verbsim_test_srq_error", VERSION2);
	channel_len = dlvsym(RTLD_DEFAULT, "verbsim_test_channel_len", VERSION2);
	port_state = dlvsym(RTLD_DEFAULT, "verbsim_test_port_state", VERSION2);
	faults = dlvsym(RTLD_DEFAULT, "verbsim_test_faults", VERSION2);
	return qp_fatal && qp_force_status && qp_outstanding && srq_take && srq_len && srq_error && channel_len &&
	       port_state && faults;
}

int cv_sim_qp_fatal(struct ibv_qp *qp) { return qp_fatal ? qp_fatal(qp) : EOPNOTSUPP; }

int cv_sim_qp_force_status(struct ibv_qp *qp, uint64_t wr_id, int recv, int status)
{
	return qp_force_status ? qp_force_status(qp, wr_id, recv, (enum ibv_wc_status)status) : EOPNOTSUPP;
}

int cv_sim_qp_outstanding(struct ibv_qp *qp, int *send, int *recv)
{
	return qp_outstanding ? qp_outstanding(qp, send, recv) : EOPNOTSUPP;
}

int cv_sim_srq_take(struct ibv_srq *srq, uint64_t *wr_id, struct ibv_sge *sg_list, int max_sge, int *num_sge)
{
	return srq_take ? srq_take(srq, wr_id, sg_list, max_sge, num_sge) : EOPNOTSUPP;
}

int cv_sim_srq_len(struct ibv_srq *srq, int *len) { return srq_len ? srq_len(srq, len) : EOPNOTSUPP; }

int cv_sim_srq_error(struct ibv_srq *srq) { return srq_error ? srq_error(srq) : EOPNOTSUPP; }

int cv_sim_channel_len(struct ibv_comp_channel *ch, int *len)
{
	return channel_len ? channel_len(ch, len) : EOPNOTSUPP;
}

int cv_sim_port_state(struct ibv_device *dev, uint8_t port, int up)
{
	return port_state ? port_state(dev, port, up) : EOPNOTSUPP;
}

int cv_sim_faults(struct ibv_device *dev, double drop, double duplicate, double delay)
{
	return faults ? faults(dev, drop, duplicate, delay) : EOPNOTSUPP;
}

/* The hook of VERBSIM_TEST_3. */

#define VERSION3 "VERBSIM_TEST_3"

static int (*receive)(struct ibv_device *, const void *, size_t);

int cv_sim_hooks3(void)
{
	receive = dlvsym(RTLD_DEFAULT, "verbsim_test_receive", VERSION3);
	return receive != NULL;
}

int cv_sim_receive(struct ibv_device *dev, const void *frame, size_t len)
{
	return receive ? receive(dev, frame, len) : EOPNOTSUPP;
}
