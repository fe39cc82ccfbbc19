/*
 * verbsim_test.h: the test hooks of verbsim's drop-in libibverbs.so.1.
 *
 * Only the test-mode build (capi/build.sh --test-hooks) defines them, at
 * their own version node VERBSIM_TEST_1, on top of the 146 exports of the
 * real library; the production build exports none of them. They give a
 * program the simulator controls that no verb offers, so that the
 * conformance suite can run through C the cases that need them (package
 * cverbs finds them with dlvsym and offers its test capabilities only when
 * they are there). Each returns 0 or an errno, and sets nothing else on
 * failure. See docs/c-programs.md, "The Go binding".
 */
#ifndef VERBSIM_TEST_H
#define VERBSIM_TEST_H

#include <stddef.h>
#include <infiniband/verbs.h>

/* The version node of the hooks below. */
#define VERBSIM_TEST_VERSION "VERBSIM_TEST_1"

/*
 * Adds *wc to cq as the adapter adds a completion when a work request
 * finishes: the engine's own path, so a full CQ overruns (*overrun is then
 * 1), and an armed CQ fires its completion event (solicited says a receive
 * completion's message carried the solicited-event bit). EINVAL for a
 * destroyed CQ or a status, opcode or flag outside the enums.
 */
int verbsim_test_cq_push(struct ibv_cq *cq, const struct ibv_wc *wc, int solicited, int *overrun);

/* Hold cq as a QP using it does (ibv_destroy_cq is then EBUSY), and drop
 * such a hold (without one, nothing). */
int verbsim_test_cq_ref(struct ibv_cq *cq);
int verbsim_test_cq_unref(struct ibv_cq *cq);

/* Hold mr as a memory window bound to it does (ibv_dereg_mr is then
 * EBUSY), and drop such a hold. */
int verbsim_test_mr_ref(struct ibv_mr *mr);
int verbsim_test_mr_unref(struct ibv_mr *mr);

/* Limits of a device made by verbsim_test_device; a field left 0 keeps the
 * value of the device it is made like. */
struct verbsim_test_limits {
	int max_cq, max_cqe, num_comp_vectors, max_pd;
	int max_qp_wr, max_sge, max_inline;
	int max_qp_rd_atom, max_qp_init_rd_atom;
	int max_srq_wr, max_srq_sge;
	int port_max_mtu; /* enum ibv_mtu of port 1 */
};

/*
 * Makes a fresh device like `like` (same profile, name and ports) on a
 * fabric of its own, whose limits are *l (size is sizeof *l), and returns
 * it in *out: ibv_open_device opens it, ibv_get_device_list does not list
 * it. It lives as long as the process.
 */
int verbsim_test_device(struct ibv_device *like, const struct verbsim_test_limits *l, size_t size,
			struct ibv_device **out);

#endif
