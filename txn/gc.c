/*
 * gc.c - mrtx_gc: collect the versions no snapshot may read any more
 * (DESIGN §9).
 *
 *   resume?  the store's cursor (store_gc_cursor) names a run cut short:
 *            go on from its table and row with its safe point
 *   else     safe point = the store's newest commit timestamp, less keep_ms;
 *            recorded first (g/safe only rises: mrtx_begin_at refuses below)
 *   walk     every table in name order, GC_ROWS rows a write (each write
 *            records the cursor), dropping what policies no longer keep and
 *            deleted cells older than the safe point
 *   end      the cursor removed
 *
 * Snapshots running meanwhile are LMDB read transactions: what they read
 * stays in their pages whatever the collector deletes.  Writes collect the
 * cells they write as they go (storage/lmdb/lmdb_cell.c); this walk
 * reaches the cells nobody writes: TTLs passed, deleted cells.
 */
#include "txn_int.h"

#include <stdio.h>

#define GC_ROWS 256u
#define GC_TABLE_TRIES 4 /* walks of one name truncated or made again under it */

/*
 * Walk table t from row (*rowlen bytes; 0: its first) to its end.  A
 * table dropped under the walk has nothing left to collect.  One truncated,
 * or dropped and created again, is walked from its first row as the name's
 * new table (up to GC_TABLE_TRIES times).  One closed by a drop or truncate
 * that has not ended, or whose tablets cannot be walked now, gives
 * MRTX_ELOCKED: the caller goes on with the other tables.
 */
static int gc_table(mrtx_db *db, const store_table *t, uint8_t *row, size_t *rowlen,
                    uint64_t safe, uint64_t *n)
{
	const store_table *now;
	int rc = 0, done = 0, tries = 0;

	while (!done) {
		char msg[512];
		int frc;

		if ((rc = store_gc_step(db->st, t, row, rowlen, safe, GC_ROWS, &done, n)) == 0)
			continue;
		if (rc != MRTX_ENOTABLE && rc != MRTX_CONFLICT)
			return rc;
		/* the table changed under the walk: what is the name now? */
		snprintf(msg, sizeof(msg), "%s", mrtx_errmsg());
		if ((frc = store_table_find(db->st, t->name, &now)) == MRTX_ENOTABLE)
			return 0;
		if (frc)
			return frc;
		if (now == t) /* (the same table: held up, the caller goes on) */
			return mrtx__seterr(MRTX_ELOCKED, "table '%s': %s", t->name, msg);
		if (++tries == GC_TABLE_TRIES)
			return mrtx__seterr(MRTX_ELOCKED, "table '%s' kept changing under the "
			                    "collector", t->name);
		t = now;
		*rowlen = 0;
	}
	return 0;
}

/* Keeps I19 (DESIGN §10). */
int mrtx_gc(mrtx_db *db, uint64_t keep_ms, uint64_t *collected)
{
	uint8_t row[MRTX_MAX_KEY];
	char from[MRTX_MAX_NAME + 1] = "", busy[512] = "";
	const store_table **tables;
	size_t rowlen = 0, ntables;
	uint64_t safe = 0, n = 0;
	int rc, resume, from_done = 0;

	mrtx__clearerr();
	if (collected)
		*collected = 0;
	if (!db)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_gc: db is NULL");
	if (keep_ms > UINT64_MAX / 2000u)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_gc: keep_ms %llu is out of range",
		                    (unsigned long long)keep_ms);
	if (store_read_only(db->st))
		return mrtx__seterr(MRTX_EREADONLY, "mrtx_gc: store %s is open read-only",
		                    store_path(db->st));
	rc = store_gc_cursor(db->st, &safe, from, row, &rowlen, &from_done);
	if (rc && rc != MRTX_NOTFOUND)
		return rc;
	resume = rc == 0;
	if (!resume) {
		store_view *v;

		if ((rc = store_view_open_ts(db->st, &v)) == MRTX_ENOTSUP) {
			/* RADOS: the newest timestamp is the oracle's (every commit
			 * is stamped by it) */
			if ((rc = store_ts_now(db->st, &safe)))
				return rc;
		} else if (rc) {
			return rc;
		} else {
			safe = store_view_ts(db->st, v);
			store_view_close(db->st, v);
		}
		if (safe == 0)
			return mrtx__seterr(MRTX_ENOTSUP, "mrtx_gc: store %s has no commit timestamps "
			                    "here (no timestamp page, or writers kept every view "
			                    "from pinning one)", store_path(db->st));
		safe = safe > keep_ms * 1000u ? safe - keep_ms * 1000u : 0;
		/* RADOS: not above a running snapshot (LMDB's reader table
		 * keeps theirs: snapread.c) that this handle has or the
		 * registry lists (every one, from its reservation on) */
		if (!store_has(db->st, STORE_CAP_TRIMS_ON_WRITE))
			safe = MRTX_MIN(safe, txn_safe_bound(db, 1));
		if ((rc = store_gc_mark(db->st, safe, 0)))
			return rc;
	}
	if ((rc = store_tables_list(db->st, &tables, &ntables)))
		return rc;
	for (size_t i = 0; i < ntables && rc == 0; i++) {
		int c = resume ? strcmp(tables[i]->name, from) : 1;

		if (c < 0 || (c == 0 && from_done))
			continue; /* walked by the run this one resumes */
		if (c > 0)
			rowlen = 0;
		rc = gc_table(db, tables[i], row, &rowlen, safe, &n);
		if (rc == MRTX_ELOCKED && !busy[0]) {
			snprintf(busy, sizeof(busy), "%s", mrtx_errmsg());
			rc = 0;
		} else if (rc == MRTX_ELOCKED) {
			rc = 0;
		}
		resume = 0;
	}
	mrtx__free(tables);
	if (rc == 0)
		rc = store_gc_mark(db->st, 0, 1);
	if (rc == 0 && busy[0])
		rc = mrtx__seterr(MRTX_ELOCKED, "mrtx_gc: every other table was collected, but %s",
		                  busy);
	if (collected)
		*collected = n;
	return rc;
}
