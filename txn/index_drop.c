/*
 * index_drop.c - removing a secondary index (mrtx_drop_index): its
 * declaration, then its index table.
 *
 * Two steps, each one store write or one table drop:
 *
 *   1 retire   one metadata write deletes the declaration "i/<name>" and
 *              the backfill record "b/<name>", writes the drop record
 *              "d/<name>" = the index table's name and identity
 *              (store_table.ident), and moves the metadata generation:
 *              every writer holding the old declarations conflicts at its
 *              next conditional write and its retry no longer maintains
 *              the index (index.c);
 *   2 drop     mrtx_drop_table of the index table (ddl.c, which settles
 *              the locks those writers left there), then the record goes.
 *
 * A process that dies between the steps leaves the record and the index
 * table, now an ordinary table no writer maintains: mrtx_drop_index of the
 * name finds the record and runs step 2 again, and mrtx_drop_table of the
 * table removes the record with it (ddl.c index_drop_finished).  An index
 * declared again under the name removes a record naming another table
 * (index_drop_forget), which stays then as an ordinary table: no record
 * outlives its name being declared again, and no table a user may have
 * written since (the new index's source, say) is dropped for it.  A record
 * whose table has meanwhile become the index table of another index only
 * goes (the table is that index's now).
 *
 * The record names the table by name and identity, and only the table
 * holding both is ever dropped for it: a process that dies after the
 * table's drop but before removing the record leaves a record whose
 * identity no table holds, and a user's new table of the same name is not
 * the index drop's to take.  Such a record only goes.  (A record written
 * without an identity, by an older mrtx, holds any table of its name.)
 * A truncate renews a RADOS table's identity, so a table that a record
 * holds is not truncated (ddl.c): it is dropped, or the index drop run
 * again.
 */
#include "index.h"

#include <stdio.h>
#include <string.h>

#define MARK_PREFIX "d/"
#define MARK_MAX (MRTX_MAX_NAME + 1 + 8)

/* A drop record: "<table>" (older), or "<table>" 0x00 ident (8 bytes BE). */
typedef struct drop_mark {
	char table[MRTX_MAX_NAME + 1];
	uint64_t ident;
	int any; /* no identity: holds any table of the name */
} drop_mark;

static size_t mark_encode(uint8_t buf[MARK_MAX], const drop_mark *m)
{
	size_t n = strlen(m->table);

	memcpy(buf, m->table, n);
	buf[n] = 0;
	for (int i = 0; i < 8; i++)
		buf[n + 1 + i] = (uint8_t)(m->ident >> (56 - 8 * i));
	return n + 9;
}

/* 0, or -1 if v is not a drop record. */
static int mark_decode(mrtx_bytes v, drop_mark *m)
{
	const uint8_t *nul = v.size ? memchr(v.data, '\0', v.size) : NULL;
	size_t n = nul ? (size_t)(nul - (const uint8_t *)v.data) : v.size;

	if (n == 0 || n > MRTX_MAX_NAME || (nul && v.size != n + 9))
		return -1;
	memcpy(m->table, v.data, n);
	m->table[n] = '\0';
	m->any = !nul;
	m->ident = 0;
	for (size_t i = 0; nul && i < 8; i++)
		m->ident = m->ident << 8 | nul[1 + i];
	return 0;
}

/* Does record m hold the table (name, ident), the one it was written for? */
static int mark_holds(const drop_mark *m, const char *name, uint64_t ident)
{
	return strcmp(m->table, name) == 0 && (m->any || m->ident == ident);
}

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

/* Step 2: drop the table record m holds (if it still exists and no index
 * uses it), then the record of index name. */
static int finish(mrtx_db *db, const char *name, const drop_mark *m)
{
	char key[MRTX_MAX_NAME + 3];
	const char *del[1] = { key };
	struct idx_user u = { m->table, 0 };
	const store_table *t;
	int rc;

	if ((rc = mrtx_indexes(db, idx_uses_table, &u)))
		return rc;
	if (!u.used && (rc = store_table_find(db->st, m->table, &t)) != MRTX_ENOTABLE) {
		/* the drop removes the record with the table (index_drop_finished) */
		if (rc == 0 && mark_holds(m, t->name, t->ident) &&
		    (rc = ddl_drop_table_of(db, m->table, m->any ? NULL : &m->ident)) == 0)
			return 0;
		/* (ENOTABLE: another drop of it ran; EINVAL: an index declared
		 * since uses it, the table is that index's now) */
		if (rc != 0 && rc != MRTX_ENOTABLE && rc != MRTX_EINVAL) {
			char msg[512];

			snprintf(msg, sizeof(msg), "%s", mrtx_errmsg());
			return mrtx__seterr(rc, "index '%s' is no longer maintained, but dropping "
			                    "its index table '%s' failed (run the drop again): %s",
			                    name, m->table, msg);
		}
		/* (0: the table of that name is another, newer one) */
	}
	snprintf(key, sizeof(key), MARK_PREFIX "%s", name);
	return store_meta_change(db->st, del, 1, NULL, MRTX_BYTES(NULL, 0));
}

int index_drop_forget(mrtx_db *db, const char *name, const char *index_table)
{
	char dkey[MRTX_MAX_NAME + 3];
	const char *del[1] = { dkey };
	mrtx_arena a;
	mrtx_bytes v;
	drop_mark m;
	int rc;

	snprintf(dkey, sizeof(dkey), MARK_PREFIX "%s", name);
	arena_init(&a);
	if ((rc = store_meta_get(db->st, dkey, &a, &v)) == MRTX_NOTFOUND)
		rc = 0;
	else if (rc == 0 && mark_decode(v, &m))
		rc = mrtx__seterr(MRTX_ECORRUPT, "the drop record of index '%s' is malformed", name);
	else if (rc == 0 && strcmp(m.table, index_table) != 0)
		rc = store_meta_change(db->st, del, 1, NULL, MRTX_BYTES(NULL, 0));
	arena_free(&a);
	return rc;
}

int mrtx_drop_index(mrtx_db *db, const char *name)
{
	char ikey[MRTX_MAX_NAME + 3], bkey[MRTX_MAX_NAME + 3], dkey[MRTX_MAX_NAME + 3];
	const char *del[2] = { ikey, bkey };
	uint8_t rec[MARK_MAX];
	size_t recsize;
	const store_table *t;
	drop_mark m;
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
		if (mark_decode(v, &m)) {
			rc = mrtx__seterr(MRTX_ECORRUPT, "the drop record of index '%s' is malformed",
			                  name);
			goto done;
		}
		rc = finish(db, name, &m);
		goto done;
	}
	if (rc || (rc = idx_decl_decode(name, v, &a, &d)))
		goto done;
	/* the index table's identity, for the record; with no such table
	 * (not expected: it is dropped only after its declaration) there is
	 * nothing to drop and no record is written */
	rc = store_table_find(db->st, d.index_table, &t);
	if (rc && rc != MRTX_ENOTABLE)
		goto done;
	snprintf(m.table, sizeof(m.table), "%s", d.index_table);
	m.ident = rc ? 0 : t->ident;
	m.any = 0;
	recsize = rc ? 0 : mark_encode(rec, &m);
	/* 1: no writer maintains the index from here on */
	if ((rc = store_meta_change(db->st, del, 2, recsize ? dkey : NULL,
	                            MRTX_BYTES(rec, recsize))))
		goto done;
	idx_cache_drop(db, IDX_GEN_ANY);
	if ((rc = FAILPOINT(FP_INDEX_AFTER_RETIRE)))
		goto done;
	/* 2 */
	if (recsize)
		rc = finish(db, name, &m);
done:
	arena_free(&a);
	return rc;
}

/* The records naming table (by name) and their decoded contents. */
struct mark_scan {
	const char *table;
	const char *keys[8];
	char buf[8][MRTX_MAX_NAME + 3];
	drop_mark marks[8];
	size_t n;
};

static int mark_names(const char *key, mrtx_bytes value, void *payload)
{
	struct mark_scan *m = payload;
	drop_mark d;

	if (m->n < 8 && mark_decode(value, &d) == 0 && strcmp(d.table, m->table) == 0) {
		snprintf(m->buf[m->n], sizeof(m->buf[m->n]), "%s", key);
		m->keys[m->n] = m->buf[m->n];
		m->marks[m->n] = d;
		m->n++;
	}
	return 0;
}

/* The records naming table, into *m; 0 or an error. */
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

/* Delete the records of m whose holding the table (name, ident) is
 * `holding` (ident NULL: every record of m). */
static int marks_delete(mrtx_db *db, struct mark_scan *m, const uint64_t *ident, int holding)
{
	const char *keys[8];
	size_t n = 0;

	for (size_t i = 0; i < m->n; i++)
		if (!ident || mark_holds(&m->marks[i], m->table, *ident) == holding)
			keys[n++] = m->keys[i];
	return n ? store_meta_change(db->st, keys, n, NULL, MRTX_BYTES(NULL, 0)) : 0;
}

int index_drop_finished(mrtx_db *db, const char *table, uint64_t ident)
{
	struct mark_scan *m;
	int rc;

	if ((rc = marks_of(db, table, &m)))
		return rc;
	rc = marks_delete(db, m, &ident, 1);
	mrtx__free(m);
	return rc;
}

int index_drop_holds(mrtx_db *db, const store_table *t, char index[MRTX_MAX_NAME + 1])
{
	struct mark_scan *m;
	int rc;

	if ((rc = marks_of(db, t->name, &m)))
		return rc;
	for (size_t i = 0; i < m->n && rc == 0; i++)
		if (mark_holds(&m->marks[i], t->name, t->ident)) {
			snprintf(index, MRTX_MAX_NAME + 1, "%s", m->keys[i] + strlen(MARK_PREFIX));
			rc = 1;
		}
	mrtx__free(m);
	return rc;
}

int index_drop_leftover(mrtx_db *db, const char *table)
{
	struct mark_scan *m;
	const store_table *t;
	uint64_t ident;
	int rc;

	if ((rc = marks_of(db, table, &m)))
		return rc;
	if (m->n == 0)
		goto done;
	if ((rc = store_table_find(db->st, table, &t)) == MRTX_ENOTABLE) {
		rc = marks_delete(db, m, NULL, 1); /* (dropped, its records not yet) */
		goto done;
	}
	if (rc)
		goto done;
	ident = t->ident;
	/* records naming an older table of the name only go; the table a
	 * record holds is dropped (the drop takes those records with it) */
	if ((rc = marks_delete(db, m, &ident, 0)))
		goto done;
	for (size_t i = 0; i < m->n; i++)
		if (mark_holds(&m->marks[i], table, ident)) {
			if ((rc = ddl_drop_table_of(db, table, &ident)) == MRTX_ENOTABLE)
				rc = index_drop_finished(db, table, ident); /* (dropped meanwhile) */
			break;
		}
done:
	mrtx__free(m);
	return rc;
}
