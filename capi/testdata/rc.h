/*
 * rc.h: what the C test programs under capi/testdata share to run an RC QP
 * on one port: rc_to_rts takes a QP through INIT and RTR to RTS, connected
 * to QP dqpn at LID dlid on port 1 (MTU 1024, PSNs 0, one outstanding READ
 * or atomic each way, timeout 14, 7 retries and RNR retries), with access
 * as its qp_access_flags; wait1 busy-polls a CQ for one completion, and
 * fails the program if none comes within ten million polls.
 */
#ifndef VERBSIM_TESTDATA_RC_H
#define VERBSIM_TESTDATA_RC_H

#include <string.h>
#include <infiniband/verbs.h>

#include "check.h"

static inline void rc_to_rts(struct ibv_qp *qp, uint32_t dqpn, uint16_t dlid, int access)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = access;
	CHECK(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), "INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.dlid = dlid;
	a.ah_attr.port_num = 1;
	CHECK(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
	      "RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	CHECK(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC),
	      "RTS");
}

static inline struct ibv_wc wait1(struct ibv_cq *cq)
{
	struct ibv_wc wc;
	int n;

	for (int i = 0; i < 10000000; i++) {
		n = ibv_poll_cq(cq, 1, &wc);
		CHECK(n >= 0, "poll");
		if (n == 1)
			return wc;
	}
	CHECK(0, "no completion");
	return wc;
}

#endif
