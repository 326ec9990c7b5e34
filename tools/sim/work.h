/*
 * work.h - what every workload of `mrtx-sim` shares: a run's address,
 * options and result, recording an anomaly, the error codes mrtx.h allows
 * under simulated faults, opening a handle (in a client, with retries),
 * and the recovery sweep that ends a run.
 */
#ifndef MRTX_SIM_WORK_H
#define MRTX_SIM_WORK_H

#include "bank.h"

#include "mrtx.h"

/* Every handle's lock TTL; a run settles past twice it before its end. */
#define WORK_LOCK_TTL_MS 5000

/* The part of a workload's state the shared functions use; each workload
 * keeps it as its member w. */
typedef struct work {
	const bank_cfg *cfg;
	char addr[128];
	bank_result *res;
} work;

/* One run's steps, for work_run: setup (before the clients; a failure is
 * an anomaly and ends the run), client (each client's body), ended (may
 * be NULL: after the clients, before the settle), final (the checks). */
typedef struct work_ops {
	int (*setup)(void *arg);
	void (*client)(int ci, void *arg);
	void (*ended)(void *arg);
	void (*final)(void *arg);
} work_ops;

/* w->addr for a store called name, with split_rows=N when N > 0. */
void work_addr(work *w, const char *name, unsigned split_rows);

/* Run seed: a fresh simulated cluster, the scheduler started, setup, the
 * clients, the settle past every lock's expiry, the checks; the trace's
 * hash and the faults seen into w->res. */
void work_run(work *w, uint64_t seed, const work_ops *ops, void *arg);

/* Trace an anomaly; the first one becomes w->res->first. */
void work_anomaly(work *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Is rc one mrtx.h allows from this call under the simulated faults?
 * Timeouts surface as MRTX_ESTORE (before the commit point) or
 * MRTX_EUNKNOWN (at it: commit non-zero). */
int work_allowed(int rc, int commit);

/* Count rc in w->res: committed, unknown or failed. */
void work_count(work *w, int rc);

/* Open a handle on w->addr: no sync, the workloads' lock TTL, threads
 * only in a client of a run with cfg->threads. */
int work_open_db(const work *w, mrtx_db **db);

/* A client's handle: up to five tries while opening fails, each traced;
 * a failure other than MRTX_ESTORE is an anomaly.  0 and *db, or non-zero
 * when the client stops (it died, or never opened). */
int work_client_open(work *w, mrtx_db **db);

/* The final check's handle: 0 and *db, or the failure, an anomaly. */
int work_final_open(work *w, mrtx_db **db);

/* The end-of-run sweep: a recovery sweep (traced; a failure is an
 * anomaly), then the lock records of tables[0..n) not STABLE, counted
 * whatever the sweep did, each an anomaly. */
void work_sweep(work *w, mrtx_db *db, const char *const *tables, int n);

#endif
