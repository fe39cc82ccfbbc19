/* C helpers of package cverbs for librdmacm: socket addresses as 16 bytes,
 * a family and a port; the unions of struct rdma_cm_event and struct
 * rdma_route. */
#ifndef CVERBS_CM_H
#define CVERBS_CM_H

#include <stdint.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

/* cm_ip is an IP address as Go passes it: family 4 or 6 (0: none), the
 * address in ip (4 or 16 bytes used), the port in host order. */
typedef struct {
	int family;
	uint8_t ip[16];
	uint16_t port;
} cm_ip;

/* cm_route is what Go reads of an ID's route. */
typedef struct {
	uint8_t sgid[16], dgid[16];
	uint16_t slid, dlid, pkey;
	uint8_t sl, tclass, hop_limit, mtu, plt;
	int num_paths;
} cm_route;

int cm_from_sockaddr(const struct sockaddr *sa, cm_ip *out);
int cm_bind(struct rdma_cm_id *id, const cm_ip *a);
int cm_resolve_addr(struct rdma_cm_id *id, const cm_ip *src, const cm_ip *dst, int timeout_ms);
int cm_join(struct rdma_cm_id *id, const cm_ip *a, uint32_t flags, int ex, uintptr_t ctx);
int cm_leave(struct rdma_cm_id *id, const cm_ip *a);
void cm_local(struct rdma_cm_id *id, cm_ip *out);
void cm_peer(struct rdma_cm_id *id, cm_ip *out);
void cm_get_route(struct rdma_cm_id *id, cm_route *out);
struct rdma_conn_param *cm_event_conn(struct rdma_cm_event *e);
struct rdma_ud_param *cm_event_ud(struct rdma_cm_event *e);
struct rdma_addrinfo *cm_make_addrinfo(int flags, int family, int qp_type, int ps, const cm_ip *src, const cm_ip *dst);
void cm_free_addrinfo(struct rdma_addrinfo *ai);

#endif
