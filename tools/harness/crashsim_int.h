/*
 * crashsim_int.h - between the state builder (crashsim_state.c) and the
 * checker (crashsim_check.c) of `mrtx crashsim`.
 */
#ifndef MRTX_TOOL_CRASHSIM_INT_H
#define MRTX_TOOL_CRASHSIM_INT_H

#include <stdint.h>

#define CS_MAXW 64 /* writers */

/* What a state must hold: the workload's shape and, per writer, the last
 * commit acknowledged before the crash (0: none). */
typedef struct cs_expect {
	int writers, txns;
	uint64_t seed;
	const uint32_t *need;
} cs_expect;

/* A state's verdict: a mask of CSV_* kinds, the first kind and its detail. */
typedef struct verdict {
	uint32_t mask;
	int first;
	char detail[512];
} verdict;

/* Check the store image in dir (data.mdb) in a child process; fills *v
 * (mask 0: no violation). */
void cs_check_image(const char *dir, const cs_expect *t, verdict *v);

#endif
