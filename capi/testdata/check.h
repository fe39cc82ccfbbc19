/*
 * check.h: the assertion of the C test programs under capi/testdata. CHECK
 * prints the file, line and condition, the message, and errno, then exits
 * with status 1.
 */
#ifndef VERBSIM_TESTDATA_CHECK_H
#define VERBSIM_TESTDATA_CHECK_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond, ...)                                                             \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond);   \
			fprintf(stderr, __VA_ARGS__);                                \
			fprintf(stderr, " (errno %d %s)\n", errno, strerror(errno)); \
			exit(1);                                                     \
		}                                                                    \
	} while (0)

#endif
