/*
 * ddl.c - changing existing tables: mrtx_add_family, mrtx_drop_table,
 * mrtx_truncate_table, mrtx_alter_family, mrtx_drop_family (DESIGN §3.4).
 *
 * A drop or truncate (of a table, or of one family) is transactional with
 * respect to running transactions in three steps:
 *   1 freeze   the table's record is marked FROZEN: from that write on, no
 *              op may take a new lock in the table (the store checks the
 *              mark inside each row write), while locks already there can
 *              still move (commit points, roll forward, release);
 *   2 settle   every lock left in the table is settled with the recovery
 *              code, live ones included (as `mrtx recover --force`): each
 *              transaction holding one commits entirely (rolled forward) or
 *              aborts entirely (its commit point then fails), and its
 *              primary ends STABLE.  Repeated until a walk finds no lock:
 *              with acquisitions refused, none can appear;
 *   3 clear    one store write deletes every key of the table and the
 *              record (drop) or the FROZEN mark (truncate); or the family's
 *              keys, its name (marked dropped) and the mark.
 * Lock records name their primary by table name, so step 2 runs while the
 * name still resolves to the old data.
 */
#include "txn_int.h"
#include "index.h"

#include <stdio.h>
#include <string.h>

#include "../recovery/recovery.h"

int mrtx_add_family(mrtx_db *db, const char *table, const char *family)
{
	const store_table *t;
	int rc;

	mrtx__clearerr();
	if (!db || !table || !family)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_add_family: NULL argument");
	if ((rc = store_check_name("family", family)) ||
	    (rc = store_table_find(db->st, table, &t)))
		return rc;
	return store_add_family(db->st, t, family);
}

int mrtx_alter_family(mrtx_db *db, const char *table, const mrtx_family_spec *spec)
{
	const store_table *t;
	store_policy pol;
	uint8_t fid;
	int rc;

	mrtx__clearerr();
	if (!db || !table || !spec || !spec->name)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_alter_family: NULL argument");
	pol.max_versions = spec->max_versions ? spec->max_versions : 1;
	pol.min_versions = spec->min_versions;
	pol.ttl_ms = spec->ttl_ms;
	if (pol.min_versions > pol.max_versions)
		return mrtx__seterr(MRTX_EINVAL, "family '%s': MIN_VERSIONS %u is above VERSIONS "
		                    "%u", spec->name, pol.min_versions, pol.max_versions);
	if (pol.ttl_ms > UINT64_MAX / 1000u / 2)
		return mrtx__seterr(MRTX_EINVAL, "family '%s': a TTL of %llu ms is too long",
		                    spec->name, (unsigned long long)pol.ttl_ms);
	if ((rc = store_table_find(db->st, table, &t)) ||
	    (rc = store_family_find(db->st, t, spec->name, &fid)))
		return rc;
	return store_alter_family(db->st, t, fid, &pol);
}

/* An index that reads or writes the table would go out of step with it. */
struct idx_use {
	const char *table;
	char index[MRTX_MAX_NAME + 1]; /* a copy: the spec lives in mrtx_indexes */
};

static int idx_uses(const mrtx_index_spec *s, void *payload)
{
	struct idx_use *u = payload;

	if (strcmp(s->table, u->table) == 0 || strcmp(s->index_table, u->table) == 0) {
		snprintf(u->index, sizeof(u->index), "%s", s->name);
		return 1;
	}
	return 0;
}

/* MRTX_EINVAL if an index reads or writes table, else 0 (or an error). */
static int refuse_indexed(mrtx_db *db, const char *fn, const char *table)
{
	struct idx_use u;
	int rc;

	u.table = table;
	u.index[0] = '\0';
	if ((rc = mrtx_indexes(db, idx_uses, &u)) == 1)
		return mrtx__seterr(MRTX_EINVAL, "%s: table '%s' is used by index '%s' (as its "
		                    "source or its index table)", fn, table, u.index);
	return rc;
}

/* MRTX_EINVAL if t is the index table of an index drop that stopped before
 * dropping it, else 0 (or an error).  A truncate would renew a RADOS
 * table's identity and leave the drop's record holding nothing. */
static int refuse_index_leftover(mrtx_db *db, const char *fn, const store_table *t)
{
	char index[MRTX_MAX_NAME + 1];
	int rc;

	if ((rc = index_drop_holds(db, t, index)) == 1)
		return mrtx__seterr(MRTX_EINVAL, "%s: table '%s' is the index table of index "
		                    "'%s', whose drop stopped before dropping it: drop that index "
		                    "again (or drop the table)", fn, t->name, index);
	return rc;
}

/* A drop or truncate refused before its freeze because an index uses t
 * (rc, message set): if one cut short left t frozen, nothing would lift
 * that freeze while the refusal stands (the index was declared before it
 * froze), so it is taken over and lifted, as that call would have on
 * failing.  (A freeze of one still running is lifted too: it would fail at
 * its own second look at the indexes all the same.)  rc. */
static int refused(mrtx_db *db, const store_table *t, int rc)
{
	uint64_t token;
	char msg[512];
	int held = 0;

	if (rc != MRTX_EINVAL)
		return rc;
	snprintf(msg, sizeof(msg), "%s", mrtx_errmsg());
	if (store_table_held(db->st, t, &held) == 0 && held == STORE_HELD_FROZEN &&
	    store_table_freeze(db->st, t, 1, &token) == 0)
		(void)store_table_freeze(db->st, t, 0, &token);
	return mrtx__seterr(rc, "%s", msg);
}

typedef struct settle_ctx {
	store *st;
	size_t found;
} settle_ctx;

static int settle_batch(const store_table *t, store_row *rows, size_t n, mrtx_arena *a,
                        void *payload)
{
	settle_ctx *c = payload;
	recover_opts o = { 0, 1, 0 }; /* no wait; force: live owners too */

	(void)a;
	for (size_t i = 0; i < n; i++) {
		uint8_t state, txn[LOCK_TXNID_SIZE];
		int rc;

		if (!rows[i].has_lock)
			continue;
		if ((rc = lockio_peek(c->st, t, rows[i].lock, &state, txn)))
			return rc;
		if (state == LOCK_STABLE)
			continue;
		c->found++;
		if ((rc = recover_resolve(c->st, t, rows[i].row, rows[i].lock, &o, NULL)) &&
		    rc != MRTX_ELOCKED)
			return rc;
	}
	return 0;
}

#define SETTLE_PASSES 64

/* drop (1), truncate (0), or drop family fid (2) of table, if its identity
 * is *ident (NULL: any) */
static int drop_or_truncate(mrtx_db *db, const char *table, int drop, const char *family,
                            const uint64_t *ident)
{
	const char *fn = drop == 2 ? "mrtx_drop_family" : drop ? "mrtx_drop_table" :
	                 "mrtx_truncate_table";
	store_filter lock_only = STORE_FILTER_ALL;
	const store_table *t;
	uint64_t token, tident;
	uint8_t fid = 0;
	int rc, pass, closed;

	mrtx__clearerr();
	if (!db || !table || (drop == 2 && !family))
		return mrtx__seterr(MRTX_EINVAL, "%s: NULL argument", fn);
	if ((rc = store_table_find(db->st, table, &t)))
		return rc;
	tident = t->ident;
	if (ident && *ident != tident)
		return mrtx__seterr(MRTX_ENOTABLE, "no table '%s' (the table of that name is a "
		                    "newer one)", table);
	if (drop == 2 && (rc = store_family_find(db->st, t, family, &fid)))
		return rc;
	if ((rc = refuse_indexed(db, fn, table)))
		return refused(db, t, rc);
	/* (a table an unfinished index drop holds: that drop, run again,
	 * takes any freeze over) */
	if (drop == 0 && (rc = refuse_index_leftover(db, fn, t)))
		return rc;
	if (drop == 2 && !store_drops_families(db->st))
		return store_drop_family(db->st, t, fid, 0); /* (its refusal) */
	/* 1: no new lock in the table from here on */
	if ((rc = store_table_freeze(db->st, t, 1, &token)) < 0)
		return rc;
	/* 2: settle every lock in it, until a whole walk meets none (taking
	 * over a RADOS drop that had closed the table: settled before) */
	closed = rc == STORE_FREEZE_CLOSED;
	rc = 0;
	lock_only.lock_only = 1;
	for (pass = 0; !closed && pass < SETTLE_PASSES; pass++) {
		settle_ctx c = { db->st, 0 };

		if ((rc = store_walk(db->st, t, &lock_only, 1024, settle_batch, &c)))
			break;
		if (c.found == 0)
			break;
	}
	if (rc == 0 && pass == SETTLE_PASSES)
		rc = mrtx__seterr(MRTX_ELOCKED, "%s: locks in table '%s' kept changing", fn,
		                  table);
	/* an index declared on the table since the first look */
	if (rc == 0)
		rc = refuse_indexed(db, fn, table);
	if (rc) {
		/* Leave the table as it was (the settled locks stay settled). */
		char msg[512];

		snprintf(msg, sizeof(msg), "%s", mrtx_errmsg());
		store_table_freeze(db->st, t, 0, &token);
		return mrtx__seterr(rc, "%s", msg);
	}
	/* 3: every key and the record (drop) or the mark (truncate), or the
	 * family's cells and name, at once, if the mark is still ours (else
	 * another drop or truncate ran) */
	rc = drop == 2 ? store_drop_family(db->st, t, fid, token) :
	     store_table_clear(db->st, t, drop, token);
	if (rc && rc != MRTX_ELOCKED) {
		/* nothing removed (a table too large for one write, say): the
		 * table is writable again, the settled locks stay settled */
		char msg[512];

		snprintf(msg, sizeof(msg), "%s", mrtx_errmsg());
		store_table_freeze(db->st, t, 0, &token);
		return mrtx__seterr(rc, "%s", msg);
	}
	/* the table was the index table of an index whose drop stopped after
	 * retiring the declaration: that drop is finished now */
	if (rc == 0 && drop == 1 && ((rc = FAILPOINT(FP_DDL_AFTER_CLEAR)) ||
	                             (rc = index_drop_finished(db, table, tident)))) {
		char msg[512];

		snprintf(msg, sizeof(msg), "%s", mrtx_errmsg());
		return mrtx__seterr(rc, "table '%s' was dropped, but the record of an unfinished "
		                    "index drop naming it stays (drop that index again): %s",
		                    table, msg);
	}
	return rc;
}

/* Keeps I25 (DESIGN §10). */
int mrtx_drop_table(mrtx_db *db, const char *table)
{
	return drop_or_truncate(db, table, 1, NULL, NULL);
}

int ddl_drop_table_of(mrtx_db *db, const char *table, const uint64_t *ident)
{
	return drop_or_truncate(db, table, 1, NULL, ident);
}

/* Keeps I25 (DESIGN §10). */
int mrtx_drop_family(mrtx_db *db, const char *table, const char *family)
{
	return drop_or_truncate(db, table, 2, family, NULL);
}

/* Keeps I25 (DESIGN §10). */
int mrtx_truncate_table(mrtx_db *db, const char *table)
{
	return drop_or_truncate(db, table, 0, NULL, NULL);
}
