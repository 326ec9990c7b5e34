/*
 * restore.c - mrtx_restore_versions: a cell's versions written back at
 * the timestamps a dump of them recorded (DESIGN §9.2, "Restoring").
 *
 * One conditional store write, shaped as a one-row commit that read its
 * row: the row's lock must be what was read (absent or STABLE), the cell
 * must hold no version at all (checked by the store inside the write:
 * STORE_MUT_RESTORE), and the write sets a new STABLE lock stamped as a
 * commit, with the versions written oldest first under the family's
 * policy.  The new lock is what a transaction that read the row validates
 * against, so one that read the cell before the restore and commits after
 * it conflicts, as with any commit.  The store's timestamp source is first
 * raised to the newest version, so that every later commit is stamped
 * above the restored versions.
 */
#include "txn_int.h"

#include <string.h>

#include "lockcf/lockio.h"

#define RESTORE_ATTEMPTS 10

/* The versions: newest first, timestamps strictly decreasing, each in
 * 1 .. 2^63-1, values within the limits. */
static int check_versions(const mrtx_version *v, size_t n)
{
	const char *fn = "mrtx_restore_versions";

	if (n == 0)
		return mrtx__seterr(MRTX_EINVAL, "%s: no version to restore", fn);
	if (n > SIZE_MAX / sizeof(store_mut))
		return mrtx__seterr(MRTX_ENOMEM, "%s: %zu versions of one cell", fn, n);
	for (size_t i = 0; i < n; i++) {
		if (v[i].ts == 0 || v[i].ts > INT64_MAX)
			return mrtx__seterr(MRTX_EINVAL, "%s: version %zu has timestamp %llu (1 .. "
			                    "2^63-1)", fn, i + 1, (unsigned long long)v[i].ts);
		if (i && v[i].ts >= v[i - 1].ts)
			return mrtx__seterr(MRTX_EINVAL, "%s: version %zu's timestamp %llu is not "
			                    "below the one before it (%llu): newest first", fn, i + 1,
			                    (unsigned long long)v[i].ts,
			                    (unsigned long long)v[i - 1].ts);
		if (v[i].value.size && !v[i].value.data)
			return mrtx__seterr(MRTX_EINVAL, "%s: version %zu's value data is NULL", fn,
			                    i + 1);
		if (v[i].value.size > MRTX_MAX_VALUE)
			return mrtx__seterr(MRTX_ETOOBIG, "%s: version %zu's value is %zu bytes; the "
			                    "limit is %u", fn, i + 1, v[i].value.size, MRTX_MAX_VALUE);
	}
	return 0;
}

/* An index reads or writes the table: it would not learn of the cells. */
static int idx_of(const mrtx_index_spec *s, void *payload)
{
	const char *table = payload;

	return strcmp(s->table, table) == 0 || strcmp(s->index_table, table) == 0;
}

int mrtx_restore_versions(mrtx_db *db, const char *table, mrtx_bytes row, const char *family,
                          mrtx_bytes qualifier, const mrtx_version *versions, size_t n)
{
	store_filter lock_only = STORE_FILTER_ALL;
	const store_table *t;
	store_mut *muts = NULL;
	mrtx_arena a;
	uint64_t floor;
	uint8_t fid;
	int rc;

	mrtx__clearerr();
	if (!db || !table || !family || !versions || (qualifier.size && !qualifier.data))
		return mrtx__seterr(MRTX_EINVAL, "mrtx_restore_versions: NULL argument");
	if ((rc = check_versions(versions, n)))
		return rc;
	if (store_read_only(db->st))
		return mrtx__seterr(MRTX_EREADONLY, "the store was opened read-only: restoring "
		                    "versions writes");
	if (!store_has(db->st, STORE_CAP_RESTORE))
		return mrtx__seterr(MRTX_ENOTSUP, "restoring versions at their timestamps is not "
		                    "supported on this store's backend");
	if ((rc = store_table_find(db->st, table, &t)) ||
	    (rc = store_family_find(db->st, t, family, &fid)) ||
	    (rc = store_check_key(t, row, qualifier.size)))
		return rc;
	if ((rc = mrtx_indexes(db, idx_of, (void *)(uintptr_t)table)) == 1)
		return mrtx__seterr(MRTX_EINVAL, "table '%s' is used by an index: restored versions "
		                    "would bypass it", table);
	if (rc)
		return rc;
	/* every later stamp above the newest restored version */
	if ((rc = store_ts_next(db->st, versions[0].ts, &floor)))
		return rc;
	arena_init(&a);
	if (!(muts = arena_alloc(&a, n * sizeof(*muts)))) {
		arena_free(&a);
		return mrtx__seterr(MRTX_ENOMEM, "out of memory restoring versions");
	}
	for (size_t i = 0; i < n; i++) { /* oldest first */
		const mrtx_version *v = &versions[n - 1 - i];

		memset(&muts[i], 0, sizeof(muts[i]));
		muts[i].kind = STORE_MUT_RESTORE;
		muts[i].fid = fid;
		muts[i].qual = qualifier;
		muts[i].value = v->value;
		muts[i].ts = v->ts;
	}
	lock_only.lock_only = 1;
	for (int attempt = 0;; attempt++) {
		uint8_t id[LOCK_TXNID_SIZE], state, owner[LOCK_TXNID_SIZE];
		store_row cur;
		store_op op;

		if ((rc = store_read_row(db->st, t, row, &lock_only, &a, &cur)))
			break;
		if (cur.has_lock) {
			if ((rc = lockio_peek(db->st, t, cur.lock, &state, owner)))
				break;
			if (state != LOCK_STABLE) {
				rc = mrtx__seterr(MRTX_ELOCKED, "table '%s': a transaction is writing "
				                  "the row; restore it once that ends (or after `mrtx "
				                  "recover`)", table);
				break;
			}
		}
		memset(&op, 0, sizeof(op));
		op.table = t;
		op.row = row;
		op.cond.absent = !cur.has_lock;
		op.cond.lock = cur.lock;
		if ((rc = lock_new_txnid(id)) ||
		    (rc = lockio_stable(db->st, id, floor, &a, &op.new_lock)))
			break;
		op.muts = muts;
		op.nmuts = n;
		op.durable = 1;
		op.stamp = 1;
		op.stamp_off = LOCK_COMMIT_TS_OFF;
		op.stamp_floor = floor;
		if ((rc = lockio_write_rows(db->st, &op, 1)))
			break;
		if (op.result == 0)
			break;
		if (op.result == MRTX_EEXIST) {
			rc = mrtx__seterr(MRTX_EEXIST, "table '%s': a cell of family '%s' already has "
			                  "versions in that row; versions are restored only into "
			                  "cells without any (a new table, or one truncated)", table,
			                  family);
			break;
		}
		if (op.result != MRTX_CONFLICT || attempt + 1 == RESTORE_ATTEMPTS) {
			rc = op.result == MRTX_CONFLICT ?
			     mrtx__seterr(MRTX_CONFLICT, "table '%s': the row kept changing while "
			                  "its versions were restored; try again", table) :
			     mrtx__seterr(op.result, "table '%s': restoring versions: %s", table,
			                  mrtx_strerror(op.result));
			break;
		}
	}
	arena_free(&a);
	return rc;
}
