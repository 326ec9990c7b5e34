/*
 * admin.h - what the `mrtx` tool needs beyond the public API: lock records
 * read raw, recovery, the checks, and a few of the store's own figures
 * (DESIGN §2: the tools see the public API plus recovery/ and lockcf/).
 *
 * Every call takes an open handle and reaches the store behind it itself,
 * so no caller holds a store: the records reported are lockcf/'s
 * (lock_rec, lock_owner) and recovery/'s (recover_opts, recover_stats,
 * check_stats); what the storage layer describes gets an admin_ name here.
 *
 * Internal, like every non-mrtx_ name: the installed library exports only
 * mrtx_[a-z0-9]* (mrtx.map), which is why these are admin_*, not mrtx_*.
 * Errors are the library's codes, with the detail in mrtx_errmsg().
 */
#ifndef MRTX_ADMIN_H
#define MRTX_ADMIN_H

#include "mrtx.h"
#include "../recovery/check.h"
#include "../recovery/recovery.h"

/* ------------------------------------------------------------ recovery */

/*
 * Resolve every non-STABLE lock of every table in batches (`mrtx
 * recover`); recovery/recovery.h says how (recover_sweep).  progress (may
 * be NULL) gets payload after each batch.
 * @return 0 (stats->errors counts the locks that could not be settled);
 *   MRTX_EREADONLY (a read-only handle, unless o->dry_run); MRTX_ESTORE;
 *   MRTX_ENOMEM.
 */
int admin_recover(mrtx_db *db, const recover_opts *o, recover_stats *stats,
                  recover_progress_fn progress, void *payload);

/* -------------------------------------------------------------- checks */

/* One finding of admin_check (recovery/check.h lists the kinds). */
typedef struct admin_issue {
	check_severity severity;
	const char *kind;             /* "stale", "dangling", ... */
	const char *table;            /* where the finding is: the table's name */
	mrtx_bytes row;
	uint8_t txn[LOCK_TXNID_SIZE]; /* the lock's txn (zero when undecodable) */
	const char *detail;           /* one line of English */
} admin_issue;

/* Called for each finding; its memory is valid during the call only.  A
 * nonzero return stops the check and is returned. */
typedef int (*admin_issue_fn)(const admin_issue *is, void *payload);

/*
 * Verify the lock family of every table (`mrtx check`; recovery/check.h
 * says what is checked).  fn and progress (either may be NULL) get payload.
 * @return 0 when the walk completed, whatever it found (see stats); fn's
 *   nonzero value; MRTX_ECORRUPT (LMDB: the count of unsettled lock
 *   records is wrong); MRTX_ESTORE; MRTX_ENOMEM.
 */
int admin_check(mrtx_db *db, check_stats *stats, admin_issue_fn fn,
                check_progress_fn progress, void *payload);

/* A damage `mrtx check --deep` found, and the figures of its walk. */
typedef store_damage admin_damage;
typedef store_file_stats admin_file_stats;
/* admin_damage.page of a damage of the file as a whole */
#define ADMIN_NO_PAGE STORE_NO_PAGE

/*
 * Verify the LMDB store at path page by page without opening it (`mrtx
 * check --deep`; recovery/check.h, check_file).  damage and table (either
 * may be NULL) get payload; a nonzero return of damage stops and is
 * returned.
 * @return 0 when the walk completed, whatever it found (see stats);
 *   damage's nonzero value; MRTX_ENOTSTORE (no data.mdb at path, or a
 *   store of a format newer than this mrtx's);
 *   MRTX_ENOTSUP (a RADOS store); MRTX_ESTORE (a read failed, or the store
 *   kept changing under three walks); MRTX_ENOMEM; MRTX_EINVAL.
 */
int admin_check_file(const char *path, int (*damage)(const admin_damage *d, void *payload),
                     void (*table)(const char *name, int damaged, void *payload),
                     void *payload, admin_file_stats *stats);

/* --------------------------------------------------------- lock records */

/* A redo mutation of a lock record (lock_rec.redo): kind ADMIN_MUT_*, fid
 * its family's index in the table's families, qual and value. */
typedef store_mut admin_mut;
enum {
	ADMIN_MUT_PUT = STORE_MUT_PUT,
	ADMIN_MUT_DEL_CELL = STORE_MUT_DEL_CELL,
	ADMIN_MUT_DEL_FAMILY = STORE_MUT_DEL_FAMILY,
	ADMIN_MUT_DEL_ROW = STORE_MUT_DEL_ROW
};

/* One row's lock record, as admin_locks and admin_row_lock report it.  Every
 * pointer is valid during the callback only. */
typedef struct admin_lock {
	const char *table;           /* the table's name */
	const char *const *families; /* its families, by index (admin_mut.fid) */
	size_t nfamilies;
	mrtx_bytes row;
	const lock_rec *rec;         /* the record, decoded; NULL when it does not
	                                decode (rc) or the row has none (rc 0) */
	int rc;                      /* why rec is NULL: the decode's error
	                                (MRTX_ECORRUPT: malformed, or another
	                                store's tag), detail in mrtx_errmsg() */
} admin_lock;

/* A nonzero return stops the walk and is returned. */
typedef int (*admin_lock_fn)(const admin_lock *l, void *payload);

/*
 * Every lock record of table, in row order, in batches each read from one
 * snapshot (so a store of any size is walked without holding one read for
 * long).  A record that does not decode is reported too (rec NULL, rc
 * its error) and the walk goes on.
 * @return 0; fn's nonzero value; MRTX_EINVAL (NULL argument);
 *   MRTX_ENOTABLE; MRTX_ESTORE; MRTX_ENOMEM.
 */
int admin_locks(mrtx_db *db, const char *table, admin_lock_fn fn, void *payload);

/*
 * The lock record of one row: fn is called once, with rec NULL and rc 0
 * when the row has no lock record (no transaction ever wrote it).
 * @return 0; fn's value; MRTX_EINVAL (NULL argument); MRTX_ENOTABLE;
 *   MRTX_ECORRUPT (the record does not decode: fn is not called);
 *   MRTX_ESTORE; MRTX_ENOMEM.
 */
int admin_row_lock(mrtx_db *db, const char *table, mrtx_bytes row, admin_lock_fn fn,
                   void *payload);

/* The wall clock lock records are stamped with (expiry_ms), in ms. */
uint64_t admin_now_ms(void);

/* ------------------------------------------------------------- figures */

/* What admin_count_rows finds in one table. */
typedef struct admin_row_counts {
	unsigned long rows;         /* rows holding at least one cell */
	unsigned long cells;
	unsigned long lock_records;
	unsigned long by_state[5];  /* lock records by lock_state; [4]: do not decode */
} admin_row_counts;

/*
 * Count table's rows, cells and lock records (`mrtx stats`), walking every
 * row in batches each from one snapshot.  *out is set on success only.
 * @return 0; MRTX_EINVAL; MRTX_ENOTABLE; MRTX_ESTORE; MRTX_ENOMEM.
 */
int admin_count_rows(mrtx_db *db, const char *table, admin_row_counts *out);

/*
 * The version policy of table's family i, in its order among those
 * mrtx_table_families lists (`mrtx describe`):
 * as mrtx_create_table2 was given it, max_versions 0 read as 1; a family
 * added later keeps one version.  out->name is the family's name, owned by
 * db until mrtx_close.
 * @return 0; MRTX_EINVAL (NULL argument, i past the last family);
 *   MRTX_ENOTABLE; MRTX_ESTORE.
 */
int admin_family_policy(mrtx_db *db, const char *table, size_t i, mrtx_family_spec *out);

/*
 * Is table held by a drop or truncate (of it or of one of its families)
 * that has not finished, one cut short included (`mrtx describe`, `mrtx
 * stats`)?  *held: 0; ADMIN_HELD_FROZEN (commits that would write it fail
 * with MRTX_CONFLICT); ADMIN_HELD_CLOSED (RADOS: reads fail with
 * MRTX_ELOCKED too).  Running the drop or truncate again finishes it.
 * @return 0; MRTX_EINVAL; MRTX_ENOTABLE; MRTX_ECORRUPT; MRTX_ESTORE.
 */
enum { ADMIN_HELD_FROZEN = STORE_HELD_FROZEN, ADMIN_HELD_CLOSED = STORE_HELD_CLOSED };
int admin_table_held(mrtx_db *db, const char *table, int *held);

/* The store's kind, and LMDB's map and reader figures (storage/store.h:
 * store_info). */
typedef store_info admin_store_info;

/* @return 0; MRTX_ESTORE. */
int admin_info(mrtx_db *db, admin_store_info *out);

/* Calls to the store since it opened (`mrtx bench`). */
typedef store_counters admin_counters;

void admin_counters_get(mrtx_db *db, admin_counters *out);

/* A timestamp of the store's source (`mrtx bench`, the `ts` workload):
 * what a commit or a snapshot takes.  @return 0; MRTX_EREADONLY;
 * MRTX_ESTORE; MRTX_EFULL; MRTX_ENOMEM; MRTX_ECORRUPT (storage/store.h,
 * store_ts_next, says when). */
int admin_ts_next(mrtx_db *db, uint64_t *out);

/* Bytes the transaction holds for its buffer and its reads (`mrtx bench`). */
size_t admin_txn_mem(const mrtx_txn *txn);

/*
 * For `mrtx bench`'s recovery workload: write n abandoned two-row
 * transactions into table, as a writer that died after its prewrite leaves
 * them.  Transaction i has its PREWRITTEN primary at rows[2i], listing its
 * secondary at rows[2i + 1]; both locks are owner's (a process known dead,
 * so recovery settles them at once), never expire, and carry one redo put
 * of family 0, qualifier "q0", value.  The rows must hold no lock record.
 * @return 0; MRTX_EINVAL; MRTX_ENOTABLE; MRTX_CONFLICT (a row holds a lock
 *   record); MRTX_EREADONLY; MRTX_EFULL; MRTX_ESTORE; MRTX_ENOMEM.  A
 *   failure may leave the transactions of earlier batches written.
 */
int admin_plant_abandoned(mrtx_db *db, const char *table, const mrtx_bytes *rows, size_t n,
                          const lock_owner *owner, mrtx_bytes value);

#ifdef MRTX_HAVE_RADOS
/* `mrtx bench rados://...`'s baseline: plain guarded RADOS writes, and the
 * removal of the objects a run made (rraw_*; no store, no librados type). */
#include "../storage/rados/rados_raw.h"
#endif

#endif
