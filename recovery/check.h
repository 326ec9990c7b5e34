/*
 * check.h - verify the lock family of a store (behind `mrtx check`).
 *
 * Every lock record of every table is decoded and its store tag compared;
 * every non-STABLE lock's primary/secondary pointers are followed, each
 * pair read from one snapshot (store_read_locks) so a concurrent commit
 * never looks like damage.  Findings come in two severities:
 *
 * CHECK_CORRUPT - a state the protocol can never produce; recovery cannot
 *   (or must not) settle it, an operator has to look:
 *     undecodable   the record does not decode (MRTX_ECORRUPT)
 *     foreign-tag   the record's store tag is not this store's
 *     bad-state     a secondary in COMMITTED/ABORTED (only primaries are)
 *     missing-table a pointer names a table that does not exist, or a name
 *                   no table can have (but a secondary whose primary's
 *                   table is gone from an LMDB store, where tables are
 *                   dropped, is a dropped table's orphan: RESOLVABLE)
 *     dangling      a PREWRITTEN secondary whose primary is STABLE holding
 *                   the same txn id (the primary finished without it)
 *     not-listed    the primary holds the txn but does not list the secondary
 *     bad-pointer   a secondary of the txn does not point back at the
 *                   primary that lists it, or the "primary" is a secondary
 *     index         (admin_check, txn/admin.c) an index declaration names a
 *                   source table, family or index table the store has not
 *
 * CHECK_RESOLVABLE - what a crashed or expired writer leaves behind; the
 *   protocol settles it (any reader, or `mrtx recover`):
 *     stale         a primary PREWRITTEN/COMMITTED/ABORTED whose owner is
 *                   dead or whose lock expired (reported once per txn, at
 *                   its primary)
 *     orphan        a secondary whose primary's lock does not hold its txn
 *                   (the primary's prewrite lost a conflict, or was fenced,
 *                   and the writer died before cleaning up): recovery fences
 *                   the primary and rolls the secondary back
 *   Orphans and stale locks whose owner is alive and unexpired are a
 *   transaction in flight and are only counted (live).
 *
 * Last, on LMDB, the store's count of unsettled lock records (format 5,
 * storage/lmdb/lmdb_unsettled.c) is recounted from one snapshot: a
 * mismatch is not a finding but MRTX_ECORRUPT from check_store, since
 * reads trust the count.
 *
 * Cost: linear in the number of lock records, however many rows one
 * transaction holds (check.c says how).
 *
 * Decision: a resolvable finding does not make the store unhealthy; `mrtx
 * check` fails on CHECK_CORRUPT only, and on CHECK_RESOLVABLE too with
 * --strict.  After `mrtx recover` (with no live writers) a healthy store has
 * no finding of either kind.
 */
#ifndef MRTX_CHECK_H
#define MRTX_CHECK_H

#include "../lockcf/lockio.h"
#include "../storage/store_file.h"

typedef enum {
	CHECK_CORRUPT = 1,
	CHECK_RESOLVABLE = 2
} check_severity;

typedef struct check_issue {
	check_severity severity;
	const char *kind;         /* one of the words above */
	const store_table *table; /* where the finding is */
	mrtx_bytes row;
	uint8_t txn[LOCK_TXNID_SIZE]; /* the lock's txn (zero when undecodable) */
	const char *detail;       /* one line of English */
} check_issue;

typedef struct check_stats {
	unsigned long tables;
	unsigned long locks;         /* lock records read */
	unsigned long by_state[4];   /* indexed by lock_state (decodable ones) */
	unsigned long live;          /* non-STABLE, owner alive and unexpired */
	unsigned long corrupt;       /* CHECK_CORRUPT findings */
	unsigned long resolvable;    /* CHECK_RESOLVABLE findings */
} check_stats;

/* Called for each finding; memory valid during the call.  Nonzero stops. */
typedef int (*check_issue_fn)(const check_issue *is, void *payload);

/*
 * Check every table's lock family.  Returns 0 when the walk completed
 * (whatever it found: see stats), fn's nonzero value, or a store error
 * (MRTX_ESTORE, MRTX_ENOMEM) that stopped it.
 */
int check_store(store *st, check_stats *stats, check_issue_fn fn, void *payload);

/* Called after each batch of lock records (the stats so far). */
typedef void (*check_progress_fn)(const check_stats *stats, void *payload);

/* check_store, calling progress (may be NULL) as it goes; payload goes to both. */
int check_store_progress(store *st, check_stats *stats, check_issue_fn fn,
                         check_progress_fn progress, void *payload);

/*
 * The deep check (`mrtx check --deep`): the LMDB store at path verified
 * page by page without opening it (store_check_file says what, and its
 * errors), its lock records decoded with lock_decode and their store tag
 * compared, the count of unsettled ones recounted with lock_order_key.
 * damage and table (either may be NULL) get payload.
 */
int check_file(const char *path, int (*damage)(const store_damage *d, void *payload),
               void (*table)(const char *name, int damaged, void *payload), void *payload,
               store_file_stats *stats);

#endif
