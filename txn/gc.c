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

#define GC_ROWS 256u

/* Keeps I19 (DESIGN §10). */
int mrtx_gc(mrtx_db *db, uint64_t keep_ms, uint64_t *collected)
{
	uint8_t row[MRTX_MAX_KEY];
	char from[MRTX_MAX_NAME + 1] = "";
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
		int c = resume ? strcmp(tables[i]->name, from) : 1, done = 0;

		if (c < 0 || (c == 0 && from_done))
			continue; /* walked by the run this one resumes */
		if (c > 0)
			rowlen = 0;
		while (!done && rc == 0)
			rc = store_gc_step(db->st, tables[i], row, &rowlen, safe, GC_ROWS, &done, &n);
		resume = 0;
	}
	mrtx__free(tables);
	if (rc == 0)
		rc = store_gc_mark(db->st, 0, 1);
	if (collected)
		*collected = n;
	return rc;
}
