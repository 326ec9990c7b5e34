/*
 * commit_int.h - the commit pipeline's plan, shared by its strategies.
 *
 * mrtx_commit (txn.c) calls txn_commit_run (commit.c), which runs the
 * pipeline:
 *
 *   read-only?  ----------------------------------- commit.c: commit_read_only
 *   plan_build     which rows, their redo lists,      commit_plan.c
 *                  which strategy (plan_strategy)
 *   plan_blind     rows whose lock need not be read:  commit_plan.c
 *                  guarded by the store instead
 *   (nothing blind, or a blind guard failed:)
 *   plan_expect    read the locks the writes expect   commit_plan.c
 *   execute one strategy, sharing the plan:
 *     COMMIT_ONE_ROW    one conditional write          commit_one_row.c
 *     COMMIT_ATOMIC     one atomic multi-row write     commit_atomic.c
 *     COMMIT_TWO_PHASE  prewrite, validate, commit     commit_two_phase.c
 *                       point, then the tail (tail.c)
 *
 * Every strategy returns 0 (committed), an MRTX_* error as mrtx_commit
 * does, or 1: only blind guards failed and no lock of the transaction is
 * left in the store (a rolled-back blind prewrite leaves STABLE(0, bound):
 * plan_blind), so the pipeline reads the expected locks and runs the
 * strategy once more (never returns 1 then: no row is blind).
 */
#ifndef MRTX_COMMIT_INT_H
#define MRTX_COMMIT_INT_H

#include "txn_int.h"

/* One row the commit writes. */
typedef struct wrow {
	trow *r;
	store_mut *redo;
	size_t nredo;
	int has_prev;
	int fetched;      /* prev read at commit (a blind write), not remembered */
	int blind;        /* written without reading prev: guarded by "no lock,
	                   * or STABLE at or below start_ts" (plan_blind) */
	mrtx_bytes prev;  /* the lock the first write expects */
	uint8_t prev_txn[LOCK_TXNID_SIZE]; /* prev decoded (it is STABLE) */
	uint64_t prev_ts;
	lock_rec rec;     /* the PREWRITTEN record (two-phase) */
	mrtx_bytes pw;    /* its bytes */
} wrow;

typedef enum commit_strategy {
	COMMIT_ONE_ROW,   /* one row written, nothing else read or scanned */
	COMMIT_ATOMIC,    /* the store writes many rows atomically (STORE_CAP_ATOMIC) */
	COMMIT_TWO_PHASE  /* anything else, or the handle asked for it */
} commit_strategy;

typedef struct commit_plan {
	wrow *w;          /* the written rows in (table, row) order; w[0] is the
	                     primary of a two-phase commit */
	size_t n;
	commit_strategy how;
	size_t nblind;    /* rows of w marked blind */
} commit_plan;

/* commit_plan.c */
int plan_build(mrtx_txn *txn, commit_plan *p);
int plan_blind(mrtx_txn *txn, commit_plan *p);
void plan_unblind(commit_plan *p);
int plan_expect(mrtx_txn *txn, commit_plan *p);
uint64_t plan_ts(mrtx_txn *txn, const commit_plan *p);
void op_init(store_op *op, const trow *r, int has_expect, mrtx_bytes expect);
void op_init_row(store_op *op, const wrow *x);
int op_guard_blind(mrtx_txn *txn, store_op *op, const wrow *x);
void op_stamp(store_op *op, uint64_t ts);
void op_check_gen(const mrtx_txn *txn, store_op *op);
uint64_t stamped_ts(mrtx_txn *txn, const store_op *op, uint64_t ts);
int gen_changed(mrtx_txn *txn);
/* MRTX_CONFLICT for a write to table t the store refused: "<where>: <why>",
 * or, when a drop or truncate holds t, that it does (no step named: the
 * step is not the cause). */
int write_refused(mrtx_txn *txn, const store_table *t, const char *where, const char *why);
int point_unknown(const char *what);

/* validate.c */
int range_covered(mrtx_txn *txn, const scan_range *sr, store_range *rg, int *skip);

/* the strategies */
int commit_one_row(mrtx_txn *txn, commit_plan *p, uint64_t ts);
int commit_atomic(mrtx_txn *txn, commit_plan *p, uint64_t ts);
int commit_two_phase(mrtx_txn *txn, commit_plan *p, uint64_t ts);

#endif
