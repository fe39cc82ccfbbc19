/*
 * abigen prints the verbs ABI golden table that the Go tests of sim/wc (and,
 * through internal/abigolden, other packages) compare against. It is the only
 * place where the real rdma-core libibverbs is consulted; the Go code never
 * links against it.
 *
 * Regenerate (from the module root, with libibverbs-dev 44 installed):
 *
 *   gcc -std=c11 -Wall -Wextra -Werror=switch -o /tmp/abigen \
 *       verbs/internal/abigen/abigen.c -libverbs
 *   /tmp/abigen > verbs/testdata/verbs44.golden
 *
 * Output: one row per line, fields separated by a single TAB:
 *
 *   kind  value  enumerator  [str]
 *
 * value is decimal. enumerator is the C name, or empty for an out-of-range
 * probe. str is present only for kinds that libibverbs can render
 * (ibv_wc_status_str, ibv_event_type_str). Lines starting with '#' are
 * comments. Output is deterministic (no dates, no host data).
 *
 * The layout of struct ibv_wc is recorded too: kind wc_field has one row
 * per member with value = offsetof, enumerator = member name and str = its
 * size in bytes (the anonymous imm_data/invalidated_rkey union is one row,
 * named imm_data); kind wc_sizeof has the single row sizeof(struct ibv_wc).
 * These describe the ABI of the host the program ran on (x86_64 for the
 * committed file).
 *
 * Completeness: every name_* function below is a switch with one case per
 * enumerator and no default, so -Werror=switch fails the build when the
 * installed header gains an enumerator this file does not list. main then
 * scans a value range that covers every enumerator, so each one is printed
 * exactly once and in ascending order.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#define C(e) \
	case e: \
		return #e

static const char *name_wc_status(enum ibv_wc_status v)
{
	switch (v) {
		C(IBV_WC_SUCCESS);
		C(IBV_WC_LOC_LEN_ERR);
		C(IBV_WC_LOC_QP_OP_ERR);
		C(IBV_WC_LOC_EEC_OP_ERR);
		C(IBV_WC_LOC_PROT_ERR);
		C(IBV_WC_WR_FLUSH_ERR);
		C(IBV_WC_MW_BIND_ERR);
		C(IBV_WC_BAD_RESP_ERR);
		C(IBV_WC_LOC_ACCESS_ERR);
		C(IBV_WC_REM_INV_REQ_ERR);
		C(IBV_WC_REM_ACCESS_ERR);
		C(IBV_WC_REM_OP_ERR);
		C(IBV_WC_RETRY_EXC_ERR);
		C(IBV_WC_RNR_RETRY_EXC_ERR);
		C(IBV_WC_LOC_RDD_VIOL_ERR);
		C(IBV_WC_REM_INV_RD_REQ_ERR);
		C(IBV_WC_REM_ABORT_ERR);
		C(IBV_WC_INV_EECN_ERR);
		C(IBV_WC_INV_EEC_STATE_ERR);
		C(IBV_WC_FATAL_ERR);
		C(IBV_WC_RESP_TIMEOUT_ERR);
		C(IBV_WC_GENERAL_ERR);
		C(IBV_WC_TM_ERR);
		C(IBV_WC_TM_RNDV_INCOMPLETE);
	}
	return NULL;
}

static const char *name_wc_opcode(enum ibv_wc_opcode v)
{
	switch (v) {
		C(IBV_WC_SEND);
		C(IBV_WC_RDMA_WRITE);
		C(IBV_WC_RDMA_READ);
		C(IBV_WC_COMP_SWAP);
		C(IBV_WC_FETCH_ADD);
		C(IBV_WC_BIND_MW);
		C(IBV_WC_LOCAL_INV);
		C(IBV_WC_TSO);
		C(IBV_WC_ATOMIC_WRITE);
		C(IBV_WC_RECV);
		C(IBV_WC_RECV_RDMA_WITH_IMM);
		C(IBV_WC_TM_ADD);
		C(IBV_WC_TM_DEL);
		C(IBV_WC_TM_SYNC);
		C(IBV_WC_TM_RECV);
		C(IBV_WC_TM_NO_TAG);
		C(IBV_WC_DRIVER1);
		C(IBV_WC_DRIVER2);
		C(IBV_WC_DRIVER3);
	}
	return NULL;
}

static const char *name_wc_flags(enum ibv_wc_flags v)
{
	switch (v) {
		C(IBV_WC_GRH);
		C(IBV_WC_WITH_IMM);
		C(IBV_WC_IP_CSUM_OK);
		C(IBV_WC_WITH_INV);
		C(IBV_WC_TM_SYNC_REQ);
		C(IBV_WC_TM_MATCH);
		C(IBV_WC_TM_DATA_VALID);
	}
	return NULL;
}

static const char *name_wr_opcode(enum ibv_wr_opcode v)
{
	switch (v) {
		C(IBV_WR_RDMA_WRITE);
		C(IBV_WR_RDMA_WRITE_WITH_IMM);
		C(IBV_WR_SEND);
		C(IBV_WR_SEND_WITH_IMM);
		C(IBV_WR_RDMA_READ);
		C(IBV_WR_ATOMIC_CMP_AND_SWP);
		C(IBV_WR_ATOMIC_FETCH_AND_ADD);
		C(IBV_WR_LOCAL_INV);
		C(IBV_WR_BIND_MW);
		C(IBV_WR_SEND_WITH_INV);
		C(IBV_WR_TSO);
		C(IBV_WR_DRIVER1);
		C(IBV_WR_ATOMIC_WRITE);
	}
	return NULL;
}

static const char *name_event_type(enum ibv_event_type v)
{
	switch (v) {
		C(IBV_EVENT_CQ_ERR);
		C(IBV_EVENT_QP_FATAL);
		C(IBV_EVENT_QP_REQ_ERR);
		C(IBV_EVENT_QP_ACCESS_ERR);
		C(IBV_EVENT_COMM_EST);
		C(IBV_EVENT_SQ_DRAINED);
		C(IBV_EVENT_PATH_MIG);
		C(IBV_EVENT_PATH_MIG_ERR);
		C(IBV_EVENT_DEVICE_FATAL);
		C(IBV_EVENT_PORT_ACTIVE);
		C(IBV_EVENT_PORT_ERR);
		C(IBV_EVENT_LID_CHANGE);
		C(IBV_EVENT_PKEY_CHANGE);
		C(IBV_EVENT_SM_CHANGE);
		C(IBV_EVENT_SRQ_ERR);
		C(IBV_EVENT_SRQ_LIMIT_REACHED);
		C(IBV_EVENT_QP_LAST_WQE_REACHED);
		C(IBV_EVENT_CLIENT_REREGISTER);
		C(IBV_EVENT_GID_CHANGE);
		C(IBV_EVENT_WQ_FATAL);
	}
	return NULL;
}

static const char *name_qp_state(enum ibv_qp_state v)
{
	switch (v) {
		C(IBV_QPS_RESET);
		C(IBV_QPS_INIT);
		C(IBV_QPS_RTR);
		C(IBV_QPS_RTS);
		C(IBV_QPS_SQD);
		C(IBV_QPS_SQE);
		C(IBV_QPS_ERR);
		C(IBV_QPS_UNKNOWN);
	}
	return NULL;
}

static const char *name_qp_type(enum ibv_qp_type v)
{
	switch (v) {
		C(IBV_QPT_RC);
		C(IBV_QPT_UC);
		C(IBV_QPT_UD);
		C(IBV_QPT_RAW_PACKET);
		C(IBV_QPT_XRC_SEND);
		C(IBV_QPT_XRC_RECV);
		C(IBV_QPT_DRIVER);
	}
	return NULL;
}

static const char *name_access_flags(enum ibv_access_flags v)
{
	switch (v) {
		C(IBV_ACCESS_LOCAL_WRITE);
		C(IBV_ACCESS_REMOTE_WRITE);
		C(IBV_ACCESS_REMOTE_READ);
		C(IBV_ACCESS_REMOTE_ATOMIC);
		C(IBV_ACCESS_MW_BIND);
		C(IBV_ACCESS_ZERO_BASED);
		C(IBV_ACCESS_ON_DEMAND);
		C(IBV_ACCESS_HUGETLB);
		C(IBV_ACCESS_RELAXED_ORDERING);
	}
	return NULL;
}

static const char *name_qp_attr_mask(enum ibv_qp_attr_mask v)
{
	switch (v) {
		C(IBV_QP_STATE);
		C(IBV_QP_CUR_STATE);
		C(IBV_QP_EN_SQD_ASYNC_NOTIFY);
		C(IBV_QP_ACCESS_FLAGS);
		C(IBV_QP_PKEY_INDEX);
		C(IBV_QP_PORT);
		C(IBV_QP_QKEY);
		C(IBV_QP_AV);
		C(IBV_QP_PATH_MTU);
		C(IBV_QP_TIMEOUT);
		C(IBV_QP_RETRY_CNT);
		C(IBV_QP_RNR_RETRY);
		C(IBV_QP_RQ_PSN);
		C(IBV_QP_MAX_QP_RD_ATOMIC);
		C(IBV_QP_ALT_PATH);
		C(IBV_QP_MIN_RNR_TIMER);
		C(IBV_QP_SQ_PSN);
		C(IBV_QP_MAX_DEST_RD_ATOMIC);
		C(IBV_QP_PATH_MIG_STATE);
		C(IBV_QP_CAP);
		C(IBV_QP_DEST_QPN);
		C(IBV_QP_RATE_LIMIT);
	}
	return NULL;
}

static const char *name_mtu(enum ibv_mtu v)
{
	switch (v) {
		C(IBV_MTU_256);
		C(IBV_MTU_512);
		C(IBV_MTU_1024);
		C(IBV_MTU_2048);
		C(IBV_MTU_4096);
	}
	return NULL;
}

static const char *name_mig_state(enum ibv_mig_state v)
{
	switch (v) {
		C(IBV_MIG_MIGRATED);
		C(IBV_MIG_REARM);
		C(IBV_MIG_ARMED);
	}
	return NULL;
}

#undef C

static void row3(const char *kind, uint32_t v, const char *name)
{
	printf("%s\t%lu\t%s\n", kind, (unsigned long)v, name);
}

static void row4(const char *kind, uint32_t v, const char *name,
		 const char *str)
{
	printf("%s\t%lu\t%s\t%s\n", kind, (unsigned long)v, name ? name : "",
	       str);
}

/* Out-of-range probes for the *_str functions: just past the last
 * enumerator, well past it, and all bits set ((enum)-1 of an enum whose
 * underlying type is unsigned int). */
static const uint32_t wc_status_probes[] = { 24, 100, UINT32_MAX };
static const uint32_t event_type_probes[] = { 20, 21, 100, UINT32_MAX };

int main(void)
{
	const char *n;
	uint32_t v;
	size_t i;

	printf("# verbs44.golden: generated by verbs/internal/abigen/abigen.c"
	       " against the installed libibverbs; DO NOT EDIT.\n");
	printf("# format: kind<TAB>value<TAB>enumerator[<TAB>str]; "
	       "enumerator is empty for out-of-range probes.\n");

	for (v = 0; v < 256; v++) {
		n = name_wc_status((enum ibv_wc_status)v);
		if (n)
			row4("wc_status", v, n,
			     ibv_wc_status_str((enum ibv_wc_status)v));
	}
	for (i = 0; i < sizeof(wc_status_probes) / sizeof(*wc_status_probes);
	     i++) {
		v = wc_status_probes[i];
		if (name_wc_status((enum ibv_wc_status)v))
			return 1; /* probe is no longer out of range */
		row4("wc_status", v, NULL,
		     ibv_wc_status_str((enum ibv_wc_status)v));
	}

	for (v = 0; v < 256; v++) {
		n = name_wc_opcode((enum ibv_wc_opcode)v);
		if (n)
			row3("wc_opcode", v, n);
	}

	for (i = 0; i < 32; i++) {
		v = UINT32_C(1) << i;
		n = name_wc_flags((enum ibv_wc_flags)v);
		if (n)
			row3("wc_flags", v, n);
	}

	for (v = 0; v < 256; v++) {
		n = name_wr_opcode((enum ibv_wr_opcode)v);
		if (n)
			row3("wr_opcode", v, n);
	}

	for (v = 0; v < 256; v++) {
		n = name_event_type((enum ibv_event_type)v);
		if (n)
			row4("event_type", v, n,
			     ibv_event_type_str((enum ibv_event_type)v));
	}
	for (i = 0; i < sizeof(event_type_probes) / sizeof(*event_type_probes);
	     i++) {
		v = event_type_probes[i];
		if (name_event_type((enum ibv_event_type)v))
			return 1;
		row4("event_type", v, NULL,
		     ibv_event_type_str((enum ibv_event_type)v));
	}

	for (v = 0; v < 256; v++) {
		n = name_qp_state((enum ibv_qp_state)v);
		if (n)
			row3("qp_state", v, n);
	}

	for (v = 0; v < 256; v++) {
		n = name_qp_type((enum ibv_qp_type)v);
		if (n)
			row3("qp_type", v, n);
	}

	for (i = 0; i < 32; i++) {
		v = UINT32_C(1) << i;
		n = name_access_flags((enum ibv_access_flags)v);
		if (n)
			row3("access_flags", v, n);
	}

	for (i = 0; i < 32; i++) {
		v = UINT32_C(1) << i;
		n = name_qp_attr_mask((enum ibv_qp_attr_mask)v);
		if (n)
			row3("qp_attr_mask", v, n);
	}

	for (v = 0; v < 256; v++) {
		n = name_mtu((enum ibv_mtu)v);
		if (n)
			row3("mtu", v, n);
	}

	for (v = 0; v < 256; v++) {
		n = name_mig_state((enum ibv_mig_state)v);
		if (n)
			row3("mig_state", v, n);
	}

#define F(m) \
	printf("wc_field\t%lu\t%s\t%lu\n", \
	       (unsigned long)offsetof(struct ibv_wc, m), #m, \
	       (unsigned long)sizeof(((struct ibv_wc *)0)->m))
	F(wr_id);
	F(status);
	F(opcode);
	F(vendor_err);
	F(byte_len);
	F(imm_data);
	F(qp_num);
	F(src_qp);
	F(wc_flags);
	F(pkey_index);
	F(slid);
	F(sl);
	F(dlid_path_bits);
#undef F
	printf("wc_sizeof\t%lu\tstruct ibv_wc\n",
	       (unsigned long)sizeof(struct ibv_wc));

	return fflush(stdout) == 0 ? 0 : 1;
}
