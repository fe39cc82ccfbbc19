/*
 * verbsim_test.h: the test hooks of verbsim's drop-in libibverbs.so.1.
 *
 * Only the test-mode build (capi/build.sh --test-hooks) defines them, at
 * their own version nodes VERBSIM_TEST_1 and VERBSIM_TEST_2, on top of the
 * 146 exports of the real library; the production build exports none of them. They give a
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

/* The version nodes of the hooks below: the first ones, and those added
 * later (a library with VERBSIM_TEST_2 has VERBSIM_TEST_1 too). */
#define VERBSIM_TEST_VERSION "VERBSIM_TEST_1"
#define VERBSIM_TEST_VERSION_2 "VERBSIM_TEST_2"
#define VERBSIM_TEST_VERSION_3 "VERBSIM_TEST_3"

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

/*
 * The hooks of VERBSIM_TEST_2. Each calls the simulator's control that the
 * in-process conformance device uses for the same capability.
 */

/* Makes qp hit a catastrophic work-queue error, as a fault of the adapter
 * would: it goes to ERR, its queues are flushed and IBV_EVENT_QP_FATAL
 * names it (a QP already in ERR stays there without another event). */
int verbsim_test_qp_fatal(struct ibv_qp *qp);

/* Makes the next completion of qp's send request (or, with recv, its
 * receive request) whose wr_id is wr_id complete with status, an error
 * status; the QP then reacts as to any failed request. EINVAL for
 * IBV_WC_SUCCESS or a status outside the enum. */
int verbsim_test_qp_force_status(struct ibv_qp *qp, uint64_t wr_id, int recv, enum ibv_wc_status status);

/* The numbers of send and receive requests posted to qp and not yet
 * completed (or flushed). */
int verbsim_test_qp_outstanding(struct ibv_qp *qp, int *send, int *recv);

/*
 * Consumes the oldest receive request of srq as a QP receiving a message
 * through it would (the limit event fires as for a real consumption):
 * *wr_id is its wr_id, *num_sge its number of SGEs, of which the first
 * max_sge are copied to sg_list. ENOENT, with nothing consumed, when the
 * SRQ is empty.
 */
int verbsim_test_srq_take(struct ibv_srq *srq, uint64_t *wr_id, struct ibv_sge *sg_list, int max_sge,
			  int *num_sge);

/* *len is the number of receive requests waiting in srq. */
int verbsim_test_srq_len(struct ibv_srq *srq, int *len);

/* Makes srq hit a catastrophic error: IBV_EVENT_SRQ_ERR names it, and each
 * QP receiving through it goes to ERR as with verbsim_test_qp_fatal. */
int verbsim_test_srq_error(struct ibv_srq *srq);

/* *len is the number of completion events queued on ch and not yet read:
 * its descriptor polls readable exactly while it is not 0. */
int verbsim_test_channel_len(struct ibv_comp_channel *ch, int *len);

/* Takes port (1-based) of dev down or up, as a cable pull would: every open
 * context of the device gets IBV_EVENT_PORT_ERR or IBV_EVENT_PORT_ACTIVE;
 * setting the state the port has does nothing. */
int verbsim_test_port_state(struct ibv_device *dev, uint8_t port, int up);

/* Sets the packet faults of the fabric dev is on: the probabilities, in
 * [0, 1], that a packet is dropped, duplicated or delayed (zeros switch
 * them off). */
int verbsim_test_faults(struct ibv_device *dev, double drop, double duplicate, double delay);

/*
 * The hook of VERBSIM_TEST_3.
 *
 * Delivers the len bytes at frame, one packet in the wire format of the
 * cross-process fabric (Go: sim.AppendFrame), to the port of dev's fabric
 * that has its destination address, as a packet from another adapter: the
 * way a test plays a buggy or hostile peer. EINVAL for a frame that does
 * not decode; a packet for an address no port has is dropped (0).
 */
int verbsim_test_receive(struct ibv_device *dev, const void *frame, size_t len);

#endif
