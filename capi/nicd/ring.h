/*
 * ring.h: the fast path of a CQ in the C-only library (ring.c): its
 * completions are polled from memory shared with the daemon (nicd.h,
 * struct nicd_cq_ring), without a system call. glue.c calls these for a
 * CQ whose fast is set.
 */
#ifndef VERBSIM_NICD_RING_H
#define VERBSIM_NICD_RING_H

#include "../capi.h"

/* nicd_ring_attach gives q a ring for a capacity of cqe completions; when
 * it cannot (no memfd), q keeps polling through the daemon. */
void nicd_ring_attach(struct capi_cq *q, int cqe);
/* nicd_ring_free unmaps q's ring, once q is destroyed. */
void nicd_ring_free(struct capi_cq *q);
/* nicd_ring_poll is ibv_poll_cq: the number of completions copied to wc,
 * or -1 (an overrun CQ with none left, or a poll batch open). */
int nicd_ring_poll(struct capi_cq *q, int n, struct ibv_wc *wc);
/* ibv_start_poll, ibv_next_poll and ibv_end_poll: 0 or an errno. */
int nicd_ring_start(struct capi_cq *q);
int nicd_ring_next(struct capi_cq *q);
void nicd_ring_end(struct capi_cq *q);
/* nicd_ring_expect tells q's ring that the program posted n requests that
 * may complete there (a CQ of q's NULL, or without a ring, is left alone). */
void nicd_ring_expect(struct capi_cq *q, int n);
/* nicd_ring_resize is ibv_resize_cq: the daemon's, and a bigger ring when
 * the CQ outgrew its own; *real is the new capacity. */
int nicd_ring_resize(struct capi_cq *q, int cqe, int *real);

#endif
