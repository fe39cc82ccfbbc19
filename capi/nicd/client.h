/*
 * client.h: the C-only library's connection to the per-host daemon
 * (client.c), which vs.c's implementations of the vs_* calls use.
 */
#ifndef VERBSIM_NICD_CLIENT_H
#define VERBSIM_NICD_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include "nicd.h"

/* nicd_connect opens the process's session with the fabric's daemon,
 * starting the daemon when nobody serves the fabric; 0 or an errno. */
int nicd_connect(void);

/* nicd_call sends one request and waits for its reply, whose body lands in
 * out (at most cap bytes). It returns the reply's errno, EIO when the
 * daemon is gone, ENODEV without a session. */
int nicd_call(uint32_t op, uint64_t obj, uint64_t a, uint64_t b, const void *body, size_t blen, struct nicd_rep *p,
	      void *out, size_t cap);

/* nicd_call_fds is nicd_call with descriptors passed along. */
int nicd_call_fds(uint32_t op, uint64_t obj, uint64_t a, uint64_t b, const void *body, size_t blen, const int *fds,
		  int nfds, struct nicd_rep *p, void *out, size_t cap);

/* nicd_epoch counts the forks this process is a child of (1 in the
 * process that loaded the library): a handle made in another epoch is not
 * this process's. */
unsigned nicd_epoch(void);

/* nicd_tag makes a daemon's handle the process's, tagged with its epoch
 * (0 stays 0); nicd_untag gives the daemon's handle back, 0 for 0, and
 * for a handle of another epoch one that names nothing (vs.c). */
uintptr_t nicd_tag(uint64_t d);
uint64_t nicd_untag(uintptr_t h);

/* nicd_busy reports whether the daemon has requests to serve (struct
 * nicd_status), without a system call. */
int nicd_busy(void);

/* nicd_dead reports whether the daemon went away. */
int nicd_dead(void);

#endif
