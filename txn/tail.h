/*
 * tail.h - the end of a multi-row commit, after its commit point: apply
 * the secondaries (PREWRITTEN -> STABLE with their data), then, when every
 * one applied, release the primary (COMMITTED -> STABLE).  Steps 4 and 5
 * of commit_two_phase.c.
 *
 * These two phases decide nothing: the transaction is committed at its
 * point, and whoever meets a lock it left PREWRITTEN or COMMITTED rolls it
 * forward from the primary (recovery.c).  Over a network (RADOS) they are
 * two of a blind commit's five round trips, so there the committing
 * thread hands them to its handle's tail thread (started and stopped
 * with the heartbeat's, heartbeat.c, but its own, so that a slow tail
 * never holds back a lock refresh) and returns; on LMDB they cost two local write
 * transactions and run at once:
 *
 *   commit point applied
 *      |  tail_submit
 *      |---- LMDB; no worker thread; queue full (TAIL_QUEUE_MAX);
 *      |     out of memory for the copy ------------> run by the caller
 *      v
 *   queued: a copy of its ops, in one allocation; db->tail.pending + 1
 *      |  the worker lingers up to TAIL_LINGER_MS after the oldest queued
 *      |  tail for more to join its batch -- not when TAIL_BATCH are
 *      |  queued, tails come further apart than half that on average
 *      |  (db->tail.gap_ms: a sparse stream runs at once), the handle
 *      |  closes or forks, or a caller waits (mrtx_flush, tail_wait:
 *      |  db->tail.hurry) -- then takes up to TAIL_BATCH queued tails
 *      v
 *   running: one store call applies every secondary of the batch (and
 *      |     releases the previous pass's primaries, below);
 *      |     commit.after_secondaries fires once per tail
 *      |---- a secondary not surely applied --------> done (recovery's)
 *      v
 *   releasing (db->tail.rel): the primary's release rides the next
 *      |     pass's store call -- with the next batch's secondaries, or
 *      |     alone once TAIL_LINGER_MS pass with no batch
 *      v
 *   done: freed; db->tail.pending - 1; tail_wait callers woken
 *
 * A tail run by its committer (or by a worker short of memory) applies
 * and releases in two calls of its own.
 *
 * A transaction of the same handle that meets a lock of a queued,
 * running or releasing tail waits for it (tail_wait) rather than resolving the lock
 * itself: one wake-up instead of a roll-forward racing the worker.
 * mrtx_close and fork() drain the queue first (the worker runs it to the
 * end before it exits).  A process that ends without mrtx_close leaves
 * the rest to readers and `mrtx recover`, as a crash after the point does:
 * nothing committed is lost, and nothing is reported before its point.
 */
#ifndef MRTX_TXN_TAIL_H
#define MRTX_TXN_TAIL_H

#include "txn_int.h"

#define TAIL_BATCH 64        /* tails run by one pass of the worker */
/*
 * How long the worker waits for a batch to fill.  A batch writes each
 * tablet it touches once, however many of its tails touch it: commits
 * from one stream, a few milliseconds apart, share most of their
 * tablets, and the store's work per commit falls with the batch (BENCH.md:
 * multi_row).  Meanwhile the locks stay COMMITTED / PREWRITTEN: this
 * handle's own transactions hurry the worker (tail_wait), other clients
 * roll them forward as from a crashed writer.  Group commit's trade, and
 * only where it pays: tails that come further apart than half of this
 * run at once.
 */
#define TAIL_LINGER_MS 50
#define TAIL_QUEUE_MAX 1024  /* queued beyond this, the committer runs its own */

typedef struct tail_job tail_job;

/* Run or queue the tail of transaction id: ops[0..nsec) apply the
 * secondaries, ops[nsec] releases the primary.  Queued, the ops are
 * copied (the caller's memory may die on return); run here, their results
 * are written.  Never fails: what is not done is left to recovery. */
void tail_submit(mrtx_db *db, const uint8_t id[LOCK_TXNID_SIZE], store_op *ops, size_t nsec);

/* If a tail of transaction id is queued or running on db, wait until it
 * is done and return 1 (re-read the row); else 0 at once. */
int tail_wait(mrtx_db *db, const uint8_t id[LOCK_TXNID_SIZE]);

/* Does a queued, running or releasing tail of db hold a lock on (t, row)?
 * (A blind prewrite of that row would fail its condition: the commit reads
 * it instead, which waits for the tail.)  0 at once when none is pending. */
int tail_holds(mrtx_db *db, const store_table *t, mrtx_bytes row);

/*
 * Trims (txn.c trim_written: a collection step on a row a commit wrote)
 * run on the same thread, so that the commit that asks for one returns
 * without waiting for it: a trim is a read and a write of the row's
 * tablet, and every eighth commit asking for up to four of them added
 * their round trips to its latency.  Queued when the handle has a worker
 * (RADOS; the thread is started here if no commit started it yet), run
 * here otherwise; dropped when TAIL_TRIMS_MAX are queued already or the
 * handle closes first (a trim is best effort: collection finds what is
 * left).  The worker runs them between its tail passes, never lingering
 * for them.
 */
#define TAIL_TRIMS_MAX 256
/* Trims one tail_trim_pass runs: between passes the worker runs tails
 * that are due and notices a close or fork (which drop the rest). */
#define TAIL_TRIMS_PASS 4
void tail_trim(mrtx_db *db, const store_table *t, mrtx_bytes row, uint64_t safe);
/* The worker: run up to TAIL_TRIMS_PASS queued trims, oldest first
 * (db->hb.mu held on entry and on return, released while the store
 * works). */
void tail_trim_pass(mrtx_db *db);
/* Free the queued trims (the worker, quitting). */
void tail_trims_drop(mrtx_db *db);

/* Wait until nothing is queued or running on db (mrtx_flush). */
void tail_flush(mrtx_db *db);

/* When the worker should run its next pass (db->hb.mu held, a tail
 * queued): 0 at once, else the wall-clock millisecond to wait until. */
uint64_t tail_due_ms(const mrtx_db *db);

/* The tail thread's pass (heartbeat.c), db->hb.mu held on entry and on return
 * (released while the store works): apply up to TAIL_BATCH queued tails'
 * secondaries and release the previous pass's primaries, in one call. */
void tail_pass(mrtx_db *db);

/* Set up db's empty queue (hb_init); also in a forked child, whose copy
 * of the queue is empty (fork drains it first). */
void tail_init(mrtx_db *db);
/* Free the worker's batch room (mrtx_close, after the worker stopped). */
void tail_fini(mrtx_db *db);

#endif
