/* C helpers of package cverbs for librdmacm (cm.h). */
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include "cm.h"

int cm_from_sockaddr(const struct sockaddr *sa, cm_ip *out)
{
	memset(out, 0, sizeof(*out));
	if (!sa)
		return 0;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)sa;
		out->family = 4;
		memcpy(out->ip, &s->sin_addr, 4);
		out->port = ntohs(s->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)sa;
		out->family = 6;
		memcpy(out->ip, &s->sin6_addr, 16);
		out->port = ntohs(s->sin6_port);
	}
	return out->family;
}

/* to_sockaddr fills ss from a and returns the sockaddr, or NULL for no
 * address. */
static struct sockaddr *to_sockaddr(const cm_ip *a, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (!a || a->family == 0)
		return NULL;
	if (a->family == 4) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;
		s->sin_family = AF_INET;
		memcpy(&s->sin_addr, a->ip, 4);
		s->sin_port = htons(a->port);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;
		s->sin6_family = AF_INET6;
		memcpy(&s->sin6_addr, a->ip, 16);
		s->sin6_port = htons(a->port);
	}
	return (struct sockaddr *)ss;
}

int cm_bind(struct rdma_cm_id *id, const cm_ip *a)
{
	struct sockaddr_storage ss;
	return rdma_bind_addr(id, to_sockaddr(a, &ss));
}

int cm_resolve_addr(struct rdma_cm_id *id, const cm_ip *src, const cm_ip *dst, int timeout_ms)
{
	struct sockaddr_storage s, d;
	return rdma_resolve_addr(id, to_sockaddr(src, &s), to_sockaddr(dst, &d), timeout_ms);
}

int cm_join(struct rdma_cm_id *id, const cm_ip *a, uint32_t flags, int ex, uintptr_t ctx)
{
	struct sockaddr_storage ss;
	struct sockaddr *sa = to_sockaddr(a, &ss);
	if (!ex)
		return rdma_join_multicast(id, sa, (void *)ctx);
	struct rdma_cm_join_mc_attr_ex attr = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = flags,
		.addr = sa,
	};
	return rdma_join_multicast_ex(id, &attr, (void *)ctx);
}

int cm_leave(struct rdma_cm_id *id, const cm_ip *a)
{
	struct sockaddr_storage ss;
	return rdma_leave_multicast(id, to_sockaddr(a, &ss));
}

void cm_local(struct rdma_cm_id *id, cm_ip *out)
{
	cm_from_sockaddr(rdma_get_local_addr(id), out);
}

void cm_peer(struct rdma_cm_id *id, cm_ip *out)
{
	cm_from_sockaddr(rdma_get_peer_addr(id), out);
}

void cm_get_route(struct rdma_cm_id *id, cm_route *out)
{
	memset(out, 0, sizeof(*out));
	out->num_paths = id->route.num_paths;
	if (id->route.num_paths < 1 || !id->route.path_rec)
		return;
	struct ibv_sa_path_rec *p = id->route.path_rec;
	memcpy(out->sgid, p->sgid.raw, 16);
	memcpy(out->dgid, p->dgid.raw, 16);
	out->slid = ntohs(p->slid);
	out->dlid = ntohs(p->dlid);
	out->pkey = ntohs(p->pkey);
	out->sl = p->sl;
	out->tclass = p->traffic_class;
	out->hop_limit = p->hop_limit;
	out->mtu = p->mtu;
	out->plt = p->packet_life_time;
}

struct rdma_conn_param *cm_event_conn(struct rdma_cm_event *e) { return &e->param.conn; }
struct rdma_ud_param *cm_event_ud(struct rdma_cm_event *e) { return &e->param.ud; }

static struct sockaddr *dup_sockaddr(const cm_ip *a, socklen_t *len)
{
	struct sockaddr_storage ss;
	struct sockaddr *sa = to_sockaddr(a, &ss);
	if (!sa) {
		*len = 0;
		return NULL;
	}
	*len = a->family == 4 ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	struct sockaddr *out = malloc(*len);
	if (out)
		memcpy(out, sa, *len);
	return out;
}

struct rdma_addrinfo *cm_make_addrinfo(int flags, int family, int qp_type, int ps, const cm_ip *src, const cm_ip *dst)
{
	struct rdma_addrinfo *ai = calloc(1, sizeof(*ai));
	if (!ai)
		return NULL;
	ai->ai_flags = flags;
	ai->ai_family = family;
	ai->ai_qp_type = qp_type;
	ai->ai_port_space = ps;
	ai->ai_src_addr = dup_sockaddr(src, &ai->ai_src_len);
	ai->ai_dst_addr = dup_sockaddr(dst, &ai->ai_dst_len);
	return ai;
}

void cm_free_addrinfo(struct rdma_addrinfo *ai)
{
	if (!ai)
		return;
	free(ai->ai_src_addr);
	free(ai->ai_dst_addr);
	free(ai);
}
