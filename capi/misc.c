/*
 * misc.c: the exports of verbsim's libibverbs.so.1 that need no simulator:
 * the *_str functions and rate conversions, the fork and sysfs helpers,
 * and every export verbsim does not support, which fails cleanly
 * (EOPNOTSUPP, or NULL with errno set) instead of being absent, so that
 * programs linked with immediate binding still load.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capi.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- strings -------------------------------------------------------- */

EXPORT const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	static const char *const s[] = {
		"success", "local length error", "local QP operation error",
		"local EE context operation error", "local protection error",
		"Work Request Flushed Error", "memory management operation error",
		"bad response error", "local access error", "remote invalid request error",
		"remote access error", "remote operation error",
		"transport retry counter exceeded", "RNR retry counter exceeded",
		"local RDD violation error", "remote invalid RD request", "aborted error",
		"invalid EE context number", "invalid EE context state", "fatal error",
		"response timeout error", "general error", "TM error", "TM software rendezvous",
	};
	if ((unsigned)status < sizeof(s) / sizeof(s[0]))
		return s[status];
	return "unknown";
}

EXPORT const char *ibv_event_type_str(enum ibv_event_type event)
{
	static const char *const s[] = {
		"CQ error", "local work queue catastrophic error",
		"invalid request local work queue error", "local access violation work queue error",
		"communication established", "send queue drained", "path migrated",
		"path migration request error", "local catastrophic error", "port active",
		"port error", "LID change", "P_Key change", "SM change", "SRQ catastrophic error",
		"SRQ limit reached", "last WQE reached", "client reregistration", "GID table change",
		"WQ fatal",
	};
	if ((unsigned)event < sizeof(s) / sizeof(s[0]))
		return s[event];
	return "unknown";
}

EXPORT const char *ibv_node_type_str(enum ibv_node_type t)
{
	switch (t) {
	case IBV_NODE_CA: return "InfiniBand channel adapter";
	case IBV_NODE_SWITCH: return "InfiniBand switch";
	case IBV_NODE_ROUTER: return "InfiniBand router";
	case IBV_NODE_RNIC: return "iWARP NIC";
	case IBV_NODE_USNIC: return "usNIC";
	case IBV_NODE_USNIC_UDP: return "usNIC UDP";
	case IBV_NODE_UNSPECIFIED: return "unspecified";
	default: return "unknown";
	}
}

EXPORT const char *ibv_port_state_str(enum ibv_port_state s)
{
	static const char *const n[] = { "PORT_NOP", "PORT_DOWN", "PORT_INIT", "PORT_ARMED", "PORT_ACTIVE",
					  "PORT_ACTIVE_DEFER" };
	if ((unsigned)s < sizeof(n) / sizeof(n[0]))
		return n[s];
	return "unknown";
}

/* ---- rates ---------------------------------------------------------- */

/* rate code, multiple of 2.5 Gb/s (0: none), Mb/s */
static const struct { int rate, mult, mbps; } rates[] = {
	{ IBV_RATE_2_5_GBPS, 1, 2500 },	    { IBV_RATE_5_GBPS, 2, 5000 },
	{ IBV_RATE_10_GBPS, 4, 10000 },	    { IBV_RATE_20_GBPS, 8, 20000 },
	{ IBV_RATE_30_GBPS, 12, 30000 },    { IBV_RATE_40_GBPS, 16, 40000 },
	{ IBV_RATE_60_GBPS, 24, 60000 },    { IBV_RATE_80_GBPS, 32, 80000 },
	{ IBV_RATE_120_GBPS, 48, 120000 },  { IBV_RATE_14_GBPS, 0, 14062 },
	{ IBV_RATE_56_GBPS, 0, 56250 },	    { IBV_RATE_112_GBPS, 0, 112500 },
	{ IBV_RATE_168_GBPS, 0, 168750 },   { IBV_RATE_25_GBPS, 0, 25781 },
	{ IBV_RATE_100_GBPS, 0, 103125 },   { IBV_RATE_200_GBPS, 0, 206250 },
	{ IBV_RATE_300_GBPS, 0, 309375 },   { IBV_RATE_28_GBPS, 0, 28125 },
	{ IBV_RATE_50_GBPS, 0, 53125 },	    { IBV_RATE_400_GBPS, 0, 425000 },
	{ IBV_RATE_600_GBPS, 0, 637500 },   { IBV_RATE_800_GBPS, 0, 850000 },
	{ IBV_RATE_1200_GBPS, 0, 1275000 },
};
#define NRATES (sizeof(rates) / sizeof(rates[0]))

EXPORT int ibv_rate_to_mult(enum ibv_rate rate)
{
	for (size_t i = 0; i < NRATES; i++)
		if (rates[i].rate == (int)rate && rates[i].mult)
			return rates[i].mult;
	return -1;
}

EXPORT enum ibv_rate mult_to_ibv_rate(int mult)
{
	for (size_t i = 0; i < NRATES; i++)
		if (rates[i].mult && rates[i].mult == mult)
			return rates[i].rate;
	return IBV_RATE_MAX;
}

EXPORT int ibv_rate_to_mbps(enum ibv_rate rate)
{
	for (size_t i = 0; i < NRATES; i++)
		if (rates[i].rate == (int)rate)
			return rates[i].mbps;
	return -1;
}

EXPORT enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	for (size_t i = 0; i < NRATES; i++)
		if (rates[i].mbps == mbps)
			return rates[i].rate;
	return IBV_RATE_MAX;
}

/* ---- fork and sysfs ------------------------------------------------- */

/* Nothing is pinned, so there is nothing to protect across fork(); see
 * docs/c-programs.md for what a forked child can and cannot do. */
EXPORT int ibv_fork_init(void) { return 0; }
EXPORT enum ibv_fork_status ibv_is_fork_initialized(void) { return IBV_FORK_UNNEEDED; }
EXPORT int ibv_dontfork_range(void *base, size_t size) { (void)base, (void)size; return 0; }
EXPORT int ibv_dofork_range(void *base, size_t size) { (void)base, (void)size; return 0; }

EXPORT const char *ibv_get_sysfs_path(void) { return "/sys"; }

/* The simulated devices have one sysfs attribute, board_id; other paths are
 * read from the file system as rdma-core does. */
EXPORT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	char *path;
	int fd, len;

	if (!dir || !file || !buf || !size) {
		errno = EINVAL;
		return -1;
	}
	if (!strncmp(dir, "/sys/class/infiniband/sim", 25) && !strcmp(file, "board_id")) {
		snprintf(buf, size, "VERBSIM");
		return strlen(buf);
	}
	if (asprintf(&path, "%s/%s", dir, file) < 0)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return -1;
	len = read(fd, buf, size);
	close(fd);
	if (len > 0) {
		if ((size_t)len == size)
			len--;
		if (buf[len - 1] == '\n')
			len--;
		buf[len] = '\0';
	}
	return len;
}

EXPORT int ibv_read_ibdev_sysfs_file(char *buf, size_t size, const char *fmt, ...)
{
	(void)buf, (void)size, (void)fmt;
	errno = ENOENT;
	return -1;
}

/* ---- unsupported public verbs --------------------------------------- */

EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	(void)cmd_fd;
	errno = EOPNOTSUPP;
	return NULL;
}

EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *c, uint32_t h)
{
	(void)c, (void)h;
	errno = EOPNOTSUPP;
	return NULL;
}

EXPORT void ibv_unimport_pd(struct ibv_pd *pd) { (void)pd; }

EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t h)
{
	(void)pd, (void)h;
	errno = EOPNOTSUPP;
	return NULL;
}

EXPORT void ibv_unimport_mr(struct ibv_mr *mr) { (void)mr; }

EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *c, uint32_t h)
{
	(void)c, (void)h;
	errno = EOPNOTSUPP;
	return NULL;
}

EXPORT void ibv_unimport_dm(struct ibv_dm *dm) { (void)dm; }

EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova, int fd,
					int access)
{
	(void)pd, (void)offset, (void)length, (void)iova, (void)fd, (void)access;
	errno = EOPNOTSUPP;
	return NULL;
}

EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	(void)op, (void)flags;
	/* The simulator writes a message's data in order. */
	return qp ? 1 : 0;
}

EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *c, struct ibv_ah_attr *a, uint8_t mac[6], uint16_t *vid)
{
	(void)c, (void)a, (void)mac, (void)vid;
	return EOPNOTSUPP;
}

EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp, (void)ece;
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp, (void)ece;
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

/* Conversions between the kernel ABI structs and the verbs ones: there is
 * no kernel, so they leave the destination alone. */
EXPORT void ibv_copy_ah_attr_from_kern(void *dst, const void *src) { (void)dst, (void)src; }
EXPORT void ibv_copy_qp_attr_from_kern(void *dst, const void *src) { (void)dst, (void)src; }
EXPORT void ibv_copy_path_rec_from_kern(void *dst, const void *src) { (void)dst, (void)src; }
EXPORT void ibv_copy_path_rec_to_kern(void *dst, const void *src) { (void)dst, (void)src; }

/* ---- the provider interface (IBVERBS_PRIVATE_34) --------------------- */

/*
 * Provider libraries (libmlx5, libefa...) link against these. verbsim has
 * no kernel to issue commands to, so registering a provider does nothing
 * and every command fails with EOPNOTSUPP. The real prototypes take more
 * arguments; a C callee may ignore the arguments it is passed.
 */
EXPORT int verbs_allow_disassociate_destroy;

EXPORT void verbs_register_driver_34(const void *ops) { (void)ops; }
EXPORT void verbs_set_ops(void *ctx, const void *ops) { (void)ctx, (void)ops; }
EXPORT void verbs_uninit_context(void *ctx) { (void)ctx; }
EXPORT void verbs_init_cq(void *cq, void *ctx, void *channel, void *cq_context)
{
	(void)cq, (void)ctx, (void)channel, (void)cq_context;
}
EXPORT void *_verbs_init_and_alloc_context(void) { errno = EOPNOTSUPP; return NULL; }
EXPORT int verbs_open_device(void) { return EOPNOTSUPP; }
EXPORT void __verbs_log(void *ctx, const char *fmt, ...) { (void)ctx, (void)fmt; }
EXPORT int execute_ioctl(void) { return EOPNOTSUPP; }
EXPORT unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void *link)
{
	(void)link;
	return num_attrs;
}

#define CMD_STUB(name) \
	EXPORT int name(void) { return EOPNOTSUPP; }
CMD_STUB(ibv_cmd_advise_mr)
CMD_STUB(ibv_cmd_alloc_dm)
CMD_STUB(ibv_cmd_alloc_mw)
CMD_STUB(ibv_cmd_alloc_pd)
CMD_STUB(ibv_cmd_attach_mcast)
CMD_STUB(ibv_cmd_close_xrcd)
CMD_STUB(ibv_cmd_create_ah)
CMD_STUB(ibv_cmd_create_counters)
CMD_STUB(ibv_cmd_create_cq)
CMD_STUB(ibv_cmd_create_cq_ex)
CMD_STUB(ibv_cmd_create_flow)
CMD_STUB(ibv_cmd_create_flow_action_esp)
CMD_STUB(ibv_cmd_create_qp)
CMD_STUB(ibv_cmd_create_qp_ex)
CMD_STUB(ibv_cmd_create_qp_ex2)
CMD_STUB(ibv_cmd_create_rwq_ind_table)
CMD_STUB(ibv_cmd_create_srq)
CMD_STUB(ibv_cmd_create_srq_ex)
CMD_STUB(ibv_cmd_create_wq)
CMD_STUB(ibv_cmd_dealloc_mw)
CMD_STUB(ibv_cmd_dealloc_pd)
CMD_STUB(ibv_cmd_dereg_mr)
CMD_STUB(ibv_cmd_destroy_ah)
CMD_STUB(ibv_cmd_destroy_counters)
CMD_STUB(ibv_cmd_destroy_cq)
CMD_STUB(ibv_cmd_destroy_flow)
CMD_STUB(ibv_cmd_destroy_flow_action)
CMD_STUB(ibv_cmd_destroy_qp)
CMD_STUB(ibv_cmd_destroy_rwq_ind_table)
CMD_STUB(ibv_cmd_destroy_srq)
CMD_STUB(ibv_cmd_destroy_wq)
CMD_STUB(ibv_cmd_detach_mcast)
CMD_STUB(ibv_cmd_free_dm)
CMD_STUB(ibv_cmd_get_context)
CMD_STUB(ibv_cmd_modify_cq)
CMD_STUB(ibv_cmd_modify_flow_action_esp)
CMD_STUB(ibv_cmd_modify_qp)
CMD_STUB(ibv_cmd_modify_qp_ex)
CMD_STUB(ibv_cmd_modify_srq)
CMD_STUB(ibv_cmd_modify_wq)
CMD_STUB(ibv_cmd_open_qp)
CMD_STUB(ibv_cmd_open_xrcd)
CMD_STUB(ibv_cmd_poll_cq)
CMD_STUB(ibv_cmd_post_recv)
CMD_STUB(ibv_cmd_post_send)
CMD_STUB(ibv_cmd_post_srq_recv)
CMD_STUB(ibv_cmd_query_context)
CMD_STUB(ibv_cmd_query_device_any)
CMD_STUB(ibv_cmd_query_mr)
CMD_STUB(ibv_cmd_query_port)
CMD_STUB(ibv_cmd_query_qp)
CMD_STUB(ibv_cmd_query_srq)
CMD_STUB(ibv_cmd_read_counters)
CMD_STUB(ibv_cmd_reg_dm_mr)
CMD_STUB(ibv_cmd_reg_dmabuf_mr)
CMD_STUB(ibv_cmd_reg_mr)
CMD_STUB(ibv_cmd_req_notify_cq)
CMD_STUB(ibv_cmd_rereg_mr)
CMD_STUB(ibv_cmd_resize_cq)
