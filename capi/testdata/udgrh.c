/*
 * udgrh.c: the GRH of a UD receive through verbsim's drop-in library
 * (AV-05). Two UD QPs of one process; a datagram through an AH with
 * traffic class 0xb8, hop limit 9 and flow label 0x12345 arrives with a GRH
 * that says so (the flow label 0 under VERBSIM_PROFILE=rxe, whose adapter
 * sends none), with next header 0x1B on InfiniBand and UDP on RoCE; the
 * reply path ibv_create_ah_from_wc builds from it carries the same fields
 * back. ibv_init_ah_from_wc tells a RoCE v2 IPv4 header (in the last 20 of
 * the 40 bytes) from an IPv6 one and refuses an unknown next header.
 * Prints "udgrh: OK".
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "check.h"
#include "rc.h"

enum { QKEY = 0x1111, SIZE = 4096 };

static void ud_ready(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = QKEY;
	CHECK(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY), "INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	CHECK(!ibv_modify_qp(qp, &a, IBV_QP_STATE), "RTR");
	a.qp_state = IBV_QPS_RTS;
	CHECK(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), "RTS");
}

/* send_recv sends 3 bytes from qp to QP dqpn through ah, into a receive
 * posted on rq at buf, and returns the receive's completion. */
static struct ibv_wc send_recv(struct ibv_qp *qp, struct ibv_cq *scq, struct ibv_ah *ah, uint32_t dqpn,
			       struct ibv_qp *rq, struct ibv_cq *rcq, struct ibv_mr *mr, char *buf)
{
	struct ibv_sge rs = { .addr = (uintptr_t)buf, .length = 100, .lkey = mr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 2, .sg_list = &rs, .num_sge = 1 }, *rbad;
	struct ibv_sge ss = { .addr = (uintptr_t)buf + 2048, .length = 3, .lkey = mr->lkey };
	struct ibv_send_wr sw = { .wr_id = 1, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED },
			   *sbad;
	struct ibv_wc wc;

	memcpy(buf + 2048, "abc", 3);
	sw.wr.ud.ah = ah;
	sw.wr.ud.remote_qpn = dqpn;
	sw.wr.ud.remote_qkey = QKEY;
	CHECK(!ibv_post_recv(rq, &rw, &rbad), "post_recv");
	CHECK(!ibv_post_send(qp, &sw, &sbad), "post_send");
	wc = wait1(scq);
	CHECK(wc.status == IBV_WC_SUCCESS, "send: %s", ibv_wc_status_str(wc.status));
	wc = wait1(rcq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == 43 && (wc.wc_flags & IBV_WC_GRH) && !memcmp(buf + 40, "abc", 3),
	      "receive: %s byte_len %u flags %#x", ibv_wc_status_str(wc.status), wc.byte_len, wc.wc_flags);
	return wc;
}

/* check_grh checks the IPv6-form GRH at buf. */
static void check_grh(const char *what, const char *buf, int eth, uint32_t flow)
{
	const struct ibv_grh *g = (const struct ibv_grh *)buf;
	uint32_t vtf = ntohl(g->version_tclass_flow);

	CHECK(vtf >> 28 == 6 && ((vtf >> 20) & 0xff) == 0xb8 && (vtf & 0xfffff) == flow,
	      "%s: version/class/flow %#x, want 6, 0xb8, %#x", what, vtf, flow);
	CHECK(g->hop_limit == 9, "%s: hop limit %u, want 9", what, g->hop_limit);
	CHECK(g->next_hdr == (eth ? 17 : 0x1b), "%s: next header %#x on %s", what, g->next_hdr, eth ? "RoCE" : "InfiniBand");
	/* BTH 12, DETH 8, 3 bytes and 1 of pad, ICRC 4; RoCE adds UDP's 8. */
	CHECK(ntohs(g->paylen) == (eth ? 36 : 28), "%s: payload length %u", what, ntohs(g->paylen));
}

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cqa, *cqb;
	struct ibv_qp *qa, *qb;
	struct ibv_mr *mr;
	struct ibv_ah *ah, *back;
	struct ibv_ah_attr av, got;
	struct ibv_port_attr pa;
	struct ibv_qp_init_attr ia;
	struct ibv_wc wc;
	union ibv_gid gid;
	char *buf;
	const char *prof = getenv("VERBSIM_PROFILE");
	uint32_t flow = prof && !strcmp(prof, "rxe") ? 0 : 0x12345;
	int eth;

	CHECK(list && list[0], "no device");
	ctx = ibv_open_device(list[0]);
	CHECK(ctx, "open");
	CHECK(!ibv_query_port(ctx, 1, &pa), "query_port");
	eth = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
	CHECK(!ibv_query_gid(ctx, 1, 0, &gid), "query_gid");
	pd = ibv_alloc_pd(ctx);
	cqa = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	cqb = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	buf = calloc(1, SIZE);
	CHECK(pd && cqa && cqb && buf, "resources");
	mr = ibv_reg_mr(pd, buf, SIZE, IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr, "reg_mr");
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.send_cq = ia.recv_cq = cqa;
	qa = ibv_create_qp(pd, &ia);
	ia.send_cq = ia.recv_cq = cqb;
	qb = ibv_create_qp(pd, &ia);
	CHECK(qa && qb, "create_qp");
	ud_ready(qa);
	ud_ready(qb);

	memset(&av, 0, sizeof(av));
	av.port_num = 1;
	av.dlid = pa.lid;
	av.is_global = 1;
	av.grh.dgid = gid;
	av.grh.traffic_class = 0xb8;
	av.grh.hop_limit = 9;
	av.grh.flow_label = 0x12345;
	ah = ibv_create_ah(pd, &av);
	CHECK(ah, "create_ah");

	/* a -> b: the AH's fields in b's GRH. */
	wc = send_recv(qa, cqa, ah, qb->qp_num, qb, cqb, mr, buf);
	check_grh("a -> b", buf, eth, flow);

	/* b -> a along the path the receive gives. */
	CHECK(!ibv_init_ah_from_wc(ctx, 1, &wc, (struct ibv_grh *)buf, &got), "init_ah_from_wc");
	CHECK(got.is_global && got.grh.traffic_class == 0xb8 && got.grh.hop_limit == 9 && got.grh.flow_label == flow &&
		      !memcmp(got.grh.dgid.raw, gid.raw, 16) && got.grh.sgid_index == 0,
	      "init_ah_from_wc: global %d class %#x hop %u flow %#x sgid_index %u", got.is_global,
	      got.grh.traffic_class, got.grh.hop_limit, got.grh.flow_label, got.grh.sgid_index);
	back = ibv_create_ah_from_wc(pd, &wc, (struct ibv_grh *)buf, 1);
	CHECK(back, "create_ah_from_wc");
	memset(buf, 0, 100);
	send_recv(qb, cqb, back, wc.src_qp, qa, cqa, mr, buf);
	check_grh("b -> a", buf, eth, flow);

	/* A RoCE v2 IPv4 header in the last 20 bytes (checksum valid) is taken
	 * as one: its destination 10.9.9.9 is no GID of the port. */
	{
		uint8_t h[40] = { 0 };
		uint8_t *ip = h + 20;
		uint32_t sum = 0;

		ip[0] = 0x45, ip[1] = 0xb8, ip[3] = 56, ip[6] = 0x40, ip[8] = 9, ip[9] = 17;
		ip[12] = 10, ip[15] = 1, ip[16] = 10, ip[17] = 9, ip[18] = 9, ip[19] = 9;
		for (int i = 0; i < 20; i += 2)
			sum += (uint32_t)ip[i] << 8 | ip[i + 1];
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		ip[10] = (uint8_t)(~sum >> 8), ip[11] = (uint8_t)~sum;
		errno = 0;
		CHECK(ibv_init_ah_from_wc(ctx, 1, &wc, (struct ibv_grh *)h, &got) && errno == ENOENT,
		      "an IPv4 header to 10.9.9.9");
		/* An IPv6 header with next header TCP is refused. */
		memcpy(h, buf, 40);
		((struct ibv_grh *)h)->next_hdr = 6;
		errno = 0;
		CHECK(ibv_init_ah_from_wc(ctx, 1, &wc, (struct ibv_grh *)h, &got) && errno == EPROTONOSUPPORT,
		      "next header 6");
	}

	CHECK(!ibv_destroy_ah(back) && !ibv_destroy_ah(ah), "destroy_ah");
	CHECK(!ibv_destroy_qp(qa) && !ibv_destroy_qp(qb), "destroy_qp");
	CHECK(!ibv_dereg_mr(mr), "dereg_mr");
	CHECK(!ibv_destroy_cq(cqa) && !ibv_destroy_cq(cqb) && !ibv_dealloc_pd(pd), "teardown");
	CHECK(!ibv_close_device(ctx), "close");
	ibv_free_device_list(list);
	free(buf);
	printf("udgrh: OK\n");
	return 0;
}
