/*
 * index_drop.c - removing a secondary index (mrtx_drop_index): its
 * declaration, then its index table.
 *
 * Two steps, each one store write or one table drop:
 *
 *   1 retire   one metadata write deletes the declaration "i/<name>" and
 *              the backfill record "b/<name>", writes the marker
 *              "d/<name>" = the index table's name, and moves the
 *              metadata generation: every writer holding the old
 *              declarations conflicts at its next conditional write and
 *              its retry no longer maintains the index (index.c);
 *   2 drop     mrtx_drop_table of the index table (ddl.c, which settles
 *              the locks those writers left there), then the marker goes.
 *
 * A process that dies between the steps leaves the marker and the index
 * table, now an ordinary table no writer maintains: mrtx_drop_index of the
 * name finds the marker and runs step 2 again, and mrtx_drop_table of the
 * table removes the marker with it (ddl.c index_drop_finished).  A marker
 * whose table has meanwhile become the index table of another index only
 * goes (the table is that index's now).
 */
#include "index.h"

#include <stdio.h>
#include <string.h>

#define MARK_PREFIX "d/"

/* Is table the index table or the source of a declared index? */
struct idx_user {
	const char *table;
	int used;
};

static int idx_uses_table(const mrtx_index_spec *s, void *payload)
{
	struct idx_user *u = payload;

	if (strcmp(s->table, u->table) == 0 || strcmp(s->index_table, u->table) == 0)
		u->used = 1;
	return 0;
}

/* Step 2: drop table (if it still exists and no index uses it), then the
 * marker of index name. */
static int finish(mrtx_db *db, const char *name, const char *table)
{
	char key[MRTX_MAX_NAME + 3];
	const char *del[1] = { key };
	struct idx_user u = { table, 0 };
	const store_table *t;
	int rc;

	if ((rc = mrtx_indexes(db, idx_uses_table, &u)))
		return rc;
	if (!u.used && (rc = store_table_find(db->st, table, &t)) != MRTX_ENOTABLE) {
		/* the drop removes the marker with the table (index_drop_finished) */
		if (rc == 0 && (rc = mrtx_drop_table(db, table)) == 0)
			return 0;
		if (rc != MRTX_ENOTABLE) { /* (ENOTABLE: another drop of it ran) */
			char msg[512];

			snprintf(msg, sizeof(msg), "%s", mrtx_errmsg());
			return mrtx__seterr(rc, "index '%s' is no longer maintained, but dropping "
			                    "its index table '%s' failed (run the drop again): %s",
			                    name, table, msg);
		}
	}
	snprintf(key, sizeof(key), MARK_PREFIX "%s", name);
	return store_meta_change(db->st, del, 1, NULL, MRTX_BYTES(NULL, 0));
}

int mrtx_drop_index(mrtx_db *db, const char *name)
{
	char ikey[MRTX_MAX_NAME + 3], bkey[MRTX_MAX_NAME + 3], dkey[MRTX_MAX_NAME + 3];
	char table[MRTX_MAX_NAME + 1];
	const char *del[2] = { ikey, bkey };
	mrtx_bytes v;
	mrtx_arena a;
	idx_decl d;
	int rc;

	mrtx__clearerr();
	if (!db || !name)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_drop_index: NULL argument");
	if (!*name || strlen(name) > MRTX_MAX_NAME)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_drop_index: index name is empty or "
		                    "longer than %u bytes", MRTX_MAX_NAME);
	if (store_read_only(db->st))
		return mrtx__seterr(MRTX_EREADONLY, "mrtx_drop_index: store %s is open "
		                    "read-only", store_path(db->st));
	snprintf(ikey, sizeof(ikey), "i/%s", name);
	snprintf(bkey, sizeof(bkey), "b/%s", name);
	snprintf(dkey, sizeof(dkey), MARK_PREFIX "%s", name);
	arena_init(&a);
	rc = store_meta_get(db->st, ikey, &a, &v);
	if (rc == MRTX_NOTFOUND) {
		/* no declaration: an earlier drop that stopped after step 1? */
		if ((rc = store_meta_get(db->st, dkey, &a, &v)) == MRTX_NOTFOUND) {
			rc = mrtx__seterr(MRTX_EINVAL, "no index '%s'", name);
			goto done;
		}
		if (rc)
			goto done;
		if (v.size == 0 || v.size > MRTX_MAX_NAME || memchr(v.data, '\0', v.size)) {
			rc = mrtx__seterr(MRTX_ECORRUPT, "the drop record of index '%s' is malformed",
			                  name);
			goto done;
		}
		memcpy(table, v.data, v.size);
		table[v.size] = '\0';
		rc = finish(db, name, table);
		goto done;
	}
	if (rc || (rc = idx_decl_decode(name, v, &a, &d)))
		goto done;
	snprintf(table, sizeof(table), "%s", d.index_table);
	/* 1: no writer maintains the index from here on */
	if ((rc = store_meta_change(db->st, del, 2, dkey, MRTX_CSTR(table))))
		goto done;
	idx_cache_drop(db, IDX_GEN_ANY);
	if ((rc = FAILPOINT(FP_INDEX_AFTER_RETIRE)))
		goto done;
	/* 2 */
	rc = finish(db, name, table);
done:
	arena_free(&a);
	return rc;
}

/* Called by mrtx_drop_table once table is gone: the markers naming it go
 * too (a drop of an index table whose index drop stopped half way). */
struct mark_scan {
	const char *table;
	const char *keys[8];
	char buf[8][MRTX_MAX_NAME + 3];
	size_t n;
};

static int mark_names(const char *key, mrtx_bytes value, void *payload)
{
	struct mark_scan *m = payload;

	if (m->n < 8 && value.size == strlen(m->table) &&
	    memcmp(value.data, m->table, value.size) == 0) {
		snprintf(m->buf[m->n], sizeof(m->buf[m->n]), "%s", key);
		m->keys[m->n] = m->buf[m->n];
		m->n++;
	}
	return 0;
}

/* The markers naming table, into *m; 0 or an error. */
static int marks_of(mrtx_db *db, const char *table, struct mark_scan **out)
{
	struct mark_scan *m = mrtx__calloc(1, sizeof(*m));
	mrtx_arena a;
	int rc;

	*out = NULL;
	if (!m)
		return mrtx__seterr(MRTX_ENOMEM, "out of memory reading index drop records");
	m->table = table;
	arena_init(&a);
	rc = store_meta_list(db->st, MARK_PREFIX, &a, mark_names, m, NULL);
	arena_free(&a); /* (mark_names copied the keys) */
	if (rc)
		mrtx__free(m);
	else
		*out = m;
	return rc;
}

int index_drop_finished(mrtx_db *db, const char *table)
{
	struct mark_scan *m;
	int rc;

	if ((rc = marks_of(db, table, &m)))
		return rc;
	if (m->n)
		rc = store_meta_change(db->st, m->keys, m->n, NULL, MRTX_BYTES(NULL, 0));
	mrtx__free(m);
	return rc;
}

int index_drop_leftover(mrtx_db *db, const char *table)
{
	struct mark_scan *m;
	int rc;

	if ((rc = marks_of(db, table, &m)))
		return rc;
	if (m->n && (rc = mrtx_drop_table(db, table)) == MRTX_ENOTABLE)
		rc = index_drop_finished(db, table); /* (dropped, its markers not yet) */
	mrtx__free(m);
	return rc;
}
