/*
 * bank.h - the bank workload of `mrtx-sim` and its checker.
 *
 * K accounts, spread over two tables of a few tablets each, start with 100
 * each.  Clients transfer between two accounts (read two, write two, under
 * mrtx_run's retries) and audit (a read-only transaction summing every
 * account).  Anomalies: an audit that committed with another sum, a final
 * sum (after the live clients stopped and the clock passed every lock's
 * expiry) off the initial total, a lock record left unsettled after a
 * recovery sweep, or an error code mrtx.h does not allow for the call.
 */
#ifndef MRTX_SIM_BANK_H
#define MRTX_SIM_BANK_H

#include "sched.h"

#include <stdint.h>
#include <stdio.h>

typedef struct bank_cfg {
	int clients;         /* client threads, each with its own handle */
	int txns;            /* transactions per client */
	int accounts;        /* K, at least 2 */
	uint32_t split_rows; /* the address's split_rows (0: tablets never split) */
	sim_faults faults;
	FILE *trace;         /* every trace line (may be NULL) */
	int threads;         /* clients' handles run their heartbeat and tail
	                        threads, as tasks of the scheduler */
} bank_cfg;

typedef struct bank_result {
	unsigned long committed; /* transfers and audits that returned MRTX_OK */
	unsigned long unknown;   /* transfers that returned MRTX_EUNKNOWN */
	unsigned long failed;    /* other allowed failures (conflicts, timeouts, ...) */
	unsigned long faults[SIM_NFAULTS];
	unsigned long anomalies;
	char first[256];         /* the first anomaly, in words */
	uint64_t hash;           /* the trace's hash */
} bank_result;

/* One run of the bank on seed; the result in *out.  Returns the number of
 * anomalies (0: the run passed). */
unsigned long bank_run(uint64_t seed, const bank_cfg *cfg, bank_result *out);

#endif
