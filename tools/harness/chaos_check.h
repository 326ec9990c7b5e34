/*
 * chaos_check.h - what `mrtx chaos` verifies after the run: recovery, no
 * lock left behind, `mrtx check`, and the workload's own invariants (bank
 * sums, or the list-append history through histcheck).
 */
#ifndef MRTX_TOOL_CHAOS_CHECK_H
#define MRTX_TOOL_CHAOS_CHECK_H

#include "txn/admin.h"
#include "chaos_work.h"
#include "histcheck.h"

typedef struct chaos_result {
	unsigned long committed, failed, unknown;
	unsigned long audits;        /* bank: committed audits */
	unsigned long wrong_views;   /* bank: audits that saw a wrong total or a torn
	                              * mirror before their commit (anomalies where
	                              * reads come from a snapshot) */
	int snapshots;               /* the store gives transactions snapshot reads
	                              * (DESIGN §9: every store chaos makes) */
	int readers_si;              /* ... and read-only ones commit without
	                              * validating even where multi-row commits are
	                              * two-phase (RADOS): the history's anomalies are
	                              * those of HC_SNAPSHOT_READONLY, and the count
	                              * held to serializability is reported beside */
	long final_total;            /* bank */
	long final_min;              /* bank */
	recover_stats recover;
	int recover_rc;
	unsigned long locks_left;    /* non-STABLE locks after recovery */
	const char *check;           /* "passed", "failed", "unavailable" */
	int check_status;
	hc_report hc;                /* append */
	int have_hc;
	size_t si_total;             /* append: anomalies of the same history held
	                                to HC_SNAPSHOT_READONLY (a subset of hc's);
	                                with readers_si, those held to
	                                serializability (a superset: hc is then
	                                HC_SNAPSHOT_READONLY's) */
	char **anomalies;            /* the first few, one line each */
	size_t nanomalies, nshown;
} chaos_result;

/* Record an anomaly (counted always, kept for output up to a limit). */
void chaos_anomaly(chaos_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Create the store's tables and initial data (the parent, before forking). */
int chaos_setup_store(const chaos_cfg *cfg);

/* After every child stopped: recover, scan locks, run `mrtx check`, check
 * the workload.  Returns 0, or 1 when a step could not run at all. */
int chaos_postrun(const chaos_cfg *cfg, chaos_result *r);

void chaos_result_free(chaos_result *r);

#endif
