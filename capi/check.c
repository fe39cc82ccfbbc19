/*
 * check.c: the C half of the sanitizer in the drop-in library
 * (VERBSIM_CHECK, docs/check.md). With the sanitizer on, every verb's
 * entry (capi_forked, which every verb calls first) records the calling
 * thread's backtrace; the checker in Go reads it back (capi_bt_get) when
 * a finding or a site it keeps names this thread, and symbolizes it
 * (capi_bt_where). Off, a verb pays one load and one branch.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <stdint.h>

#include "capi.h"

int capi_checking;

#define CAPI_BT_MAX 32

static __thread void *bt[CAPI_BT_MAX];
static __thread int btn;

void capi_bt_capture(void) { btn = backtrace(bt, CAPI_BT_MAX); }

int capi_bt_get(uintptr_t *out, int max)
{
	int n = btn < max ? btn : max;

	for (int i = 0; i < n; i++)
		out[i] = (uintptr_t)bt[i];
	return n;
}

void capi_check_on(void)
{
	void *first[2];

	/* backtrace loads libgcc's unwinder on its first call: do it now,
	 * not inside a verb. */
	backtrace(first, 2);
	capi_checking = 1;
}

/* capi_bt_where says where pc is: the object file it is in and where that
 * is loaded, and the nearest dynamic symbol below it with its address
 * (NULL and 0 when there is none). 0 when pc is in no object. */
int capi_bt_where(uintptr_t pc, const char **file, uintptr_t *base, const char **sym, uintptr_t *saddr)
{
	Dl_info info;

	if (!dladdr((void *)pc, &info))
		return 0;
	*file = info.dli_fname;
	*base = (uintptr_t)info.dli_fbase;
	*sym = info.dli_sname;
	*saddr = (uintptr_t)info.dli_saddr;
	return 1;
}

/* capi_bt_self is an address inside this library, to tell its frames. */
uintptr_t capi_bt_self(void) { return (uintptr_t)&capi_bt_capture; }

/* capi_cq_cookie returns the program's cq_context of the ibv_cq at cq. */
uintptr_t capi_cq_cookie(uintptr_t cq) { return (uintptr_t)((struct ibv_cq *)cq)->cq_context; }
