/*
 * check_manpage.c: the verbs documentation's example of a wait that can
 * never end, for the sanitizer (VERBSIM_CHECK, docs/check.md): the CQ is
 * created with no completion channel, a channel is created later that no
 * CQ uses, and the program waits in ibv_get_cq_event on it. Without the
 * sanitizer it blocks for ever; with it, the wait is reported as it
 * starts (CHAN-13), and VERBSIM_CHECK=halt_on_error ends the program.
 */
#include <stdio.h>
#include <infiniband/verbs.h>

#include "check.h"

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq, *ev_cq;
	void *ev_ctx;

	CHECK(list && list[0], "no device");
	ctx = ibv_open_device(list[0]);
	CHECK(ctx, "ibv_open_device");
	cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	CHECK(cq, "ibv_create_cq");
	ch = ibv_create_comp_channel(ctx);
	CHECK(ch, "ibv_create_comp_channel");
	CHECK(ibv_req_notify_cq(cq, 0) == 0, "ibv_req_notify_cq");
	printf("check_manpage: waiting\n");
	fflush(stdout);
	CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0, "ibv_get_cq_event");
	printf("check_manpage: an event came\n");
	return 0;
}
