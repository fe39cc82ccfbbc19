/*
 * vs.h: the calls the C side of the drop-in library (glue.c, dm.c, xrc.c,
 * testhooks.c) makes into the simulator. Two libraries implement them:
 * the in-process one (engine.go and its siblings, cgo's exports) and the
 * C-only one (nicd/vs.c, built with VERBSIM_NICD), which carries each to
 * the per-host daemon (docs/daemon.md). Every call returns 0 or an errno
 * unless its comment in engine.go says otherwise.
 */
#ifndef VERBSIM_VS_H
#define VERBSIM_VS_H

#ifndef VERBSIM_NICD
#include "_cgo_export.h"
#else
#include <stddef.h>
#include <stdint.h>
#include "capi.h"

int vs_init(int *n);
int vs_device(int i, char *name, uint64_t *guid);
int vs_open(int i, int asyncFD, uintptr_t *h, int *ncomp);
int vs_close(uintptr_t h);
void vs_shutdown(void);
int vs_query_device(uintptr_t h, struct ibv_device_attr *out);
int vs_query_device_ex(uintptr_t h, struct ibv_device_attr_ex *out);
int vs_query_port(uintptr_t h, uint8_t port, struct ibv_port_attr *out);
int vs_query_gid(uintptr_t h, uint8_t port, int index, uint8_t *out);
int vs_query_gid_ex(uintptr_t h, uint32_t port, uint32_t index, uint8_t *gid, uint32_t *typ);
int vs_query_pkey(uintptr_t h, uint8_t port, int index, uint16_t *out);
int vs_get_async(uintptr_t h, uint32_t *typ, uintptr_t *cptr, int *port, int sync);
int vs_ack_async(uintptr_t h, uint32_t typ, uintptr_t cptr, int port);
void vs_ack_port_event(uint32_t typ, int port);
int vs_alloc_pd(uintptr_t h, uintptr_t *out, uint32_t *handle);
int vs_dealloc_pd(uintptr_t h);
int vs_reg_mr(uintptr_t h, void *addr, size_t length, uint64_t iova, uint32_t access, uintptr_t *out, uint32_t *lkey,
	      uint32_t *rkey);
int vs_advise_mr(uintptr_t h, uint32_t advice, uint32_t flags, struct ibv_sge *sgl, uint32_t n);
int vs_dereg_mr(uintptr_t h);
int vs_rereg_mr(uintptr_t h, int flags, uintptr_t pdh, void *addr, size_t length, int access, uint32_t *lkey,
		uint32_t *rkey, int *eno);
int vs_alloc_mw(uintptr_t pdh, int typ, uintptr_t *out, uint32_t *rkey);
int vs_dealloc_mw(uintptr_t h);
int vs_bind_mw(uintptr_t qph, uintptr_t mwh, uint64_t wrID, uint32_t flags, uintptr_t mrh, uint64_t addr,
	       uint64_t length, uint32_t access, uint32_t *rkey);
int vs_create_ah(uintptr_t h, struct ibv_ah_attr *attr, uintptr_t *out);
int vs_destroy_ah(uintptr_t h);
int vs_create_channel(uintptr_t h, int fd, uintptr_t *out);
int vs_destroy_channel(uintptr_t h);
int vs_chan_get(uintptr_t h, uintptr_t *cptr, int sync);
int vs_create_cq(uintptr_t h, int cqe, uintptr_t chh, int vector, uint64_t wcFlags, uint32_t compMask, uint32_t flags,
		 int ex, uintptr_t cptr, uintptr_t *out, int *real);
int vs_mcast(uintptr_t h, uint8_t *gid, uint16_t lid, int on);
int vs_check_wait(uintptr_t h, int kind, int start);
int vs_destroy_cq(uintptr_t h);
int vs_poll_cq(uintptr_t h, int n, struct capi_wc *out);
int vs_req_notify(uintptr_t h, int solicited);
int vs_ack_cq(uintptr_t h, unsigned int n);
int vs_resize_cq(uintptr_t h, int cqe, int *real);
int vs_cq_poll_ex(uintptr_t h, int next, struct capi_wc *out, uint64_t *ts, uint64_t *wall);
int vs_create_qp(uintptr_t h, struct capi_qp_init *in, uintptr_t cptr, uintptr_t *out, uint32_t *qpn,
		 struct ibv_qp_cap *capOut);
int vs_destroy_qp(uintptr_t h);
int vs_modify_qp(uintptr_t h, struct ibv_qp_attr *a, int mask);
int vs_query_qp(uintptr_t h, int mask, struct ibv_qp_attr *a, struct ibv_qp_init_attr *ia);
int vs_post_send(uintptr_t h, struct capi_swr *in, int n, int *posted);
int vs_post_recv(uintptr_t h, struct capi_rwr *in, int n, int *posted);
int vs_wr(uintptr_t h, int op, uint64_t wrID, uint32_t flags, uint32_t a32, uint32_t b32, uint64_t a64, uint64_t b64,
	  uint64_t c64, uintptr_t obj);
int vs_wr_sge_list(uintptr_t h, struct ibv_sge *p, size_t n);
int vs_wr_inline_list(uintptr_t h, struct ibv_data_buf *p, size_t n);
int vs_create_srq(uintptr_t h, struct ibv_srq_attr *attr, uintptr_t cptr, uintptr_t *out);
int vs_modify_srq(uintptr_t h, struct ibv_srq_attr *attr, int mask);
int vs_query_srq(uintptr_t h, struct ibv_srq_attr *attr);
int vs_destroy_srq(uintptr_t h);
int vs_post_srq_recv(uintptr_t h, struct capi_rwr *in, int n, int *posted);
int vs_open_xrcd(uintptr_t h, uint32_t compMask, int byFile, uint64_t dev, uint64_t ino, int oflags, uintptr_t *out);
int vs_close_xrcd(uintptr_t h);
int vs_create_srq_ex(uintptr_t h, struct ibv_srq_attr *a, uint32_t compMask, uint32_t srqType, uintptr_t pdh,
		     uintptr_t xrcdh, uintptr_t cqh, uintptr_t cptr, uintptr_t *out);
int vs_get_srq_num(uintptr_t h, uint32_t *num);
int vs_create_xrc_recv_qp(uintptr_t xrcdh, struct capi_qp_init *in, uintptr_t cptr, uintptr_t *out, uint32_t *qpn);
int vs_alloc_dm(uintptr_t h, size_t length, uint32_t logAlign, uint32_t compMask, uintptr_t *out);
int vs_free_dm(uintptr_t h);
int vs_memcpy_dm(uintptr_t h, uint64_t offset, void *host, size_t length, int toDM);
int vs_reg_dm_mr(uintptr_t pdh, uintptr_t dmh, uint64_t offset, size_t length, uint32_t access, uintptr_t *out,
		 uint32_t *lkey, uint32_t *rkey);
#endif

#endif
