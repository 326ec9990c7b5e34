/*
 * index_create.c - declaring a secondary index (mrtx_create_index): checks,
 * the metadata record, and the backfill that makes an index match its
 * source table (every source value gets its entry, orphan entries go), in
 * transactions of IDX_BACKFILL_ROWS rows.
 */
#include "index.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_name(const char *what, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > MRTX_MAX_NAME)
		return mrtx__seterr(n ? MRTX_ETOOBIG : MRTX_EINVAL, "mrtx_create_index: %s name "
		                    "is missing or longer than %u bytes", what, MRTX_MAX_NAME);
	for (size_t i = 0; i < n; i++)
		if (s[i] <= ' ' || s[i] > '~' || s[i] == '/' || s[i] == ':')
			return mrtx__seterr(MRTX_EINVAL, "mrtx_create_index: %s name '%s' has a "
			                    "character outside printable ASCII or one of space / :",
			                    what, s);
	return 0;
}

/* An index table is written only by its index; no table is both a source
 * and an index table (so index maintenance never recurses). */
static int check_roles(mrtx_db *db, const mrtx_index_spec *s, uint64_t *gen)
{
	struct index_set set;
	mrtx_arena a;
	int rc;

	arena_init(&a);
	rc = idx_load_set(db->st, &a, &set, gen);
	for (size_t i = 0; i < set.n && rc == 0; i++) {
		const idx_decl *d = &set.d[i];

		if (strcmp(d->name, s->name) == 0)
			continue;
		if (strcmp(d->index_table, s->index_table) == 0)
			rc = mrtx__seterr(MRTX_EINVAL, "index '%s': table '%s' is already the index "
			                  "table of index '%s'", s->name, s->index_table, d->name);
		else if (strcmp(d->index_table, s->table) == 0)
			rc = mrtx__seterr(MRTX_EINVAL, "index '%s': source table '%s' is the index "
			                  "table of index '%s'", s->name, s->table, d->name);
		else if (strcmp(d->table, s->index_table) == 0)
			rc = mrtx__seterr(MRTX_EINVAL, "index '%s': index table '%s' is the source of "
			                  "index '%s'", s->name, s->index_table, d->name);
	}
	arena_free(&a);
	return rc;
}

static int check_spec(mrtx_db *db, const mrtx_index_spec *s)
{
	const store_table *t;
	uint8_t fid;
	int rc;

	if (s->version != MRTX_INDEX_SPEC_VERSION)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_create_index: spec version %d; this mrtx "
		                    "knows %d", s->version, MRTX_INDEX_SPEC_VERSION);
	if ((rc = check_name("index", s->name)) || (rc = check_name("table", s->table)) ||
	    (rc = check_name("index table", s->index_table)))
		return rc;
	if (strcmp(s->table, s->index_table) == 0)
		return mrtx__seterr(MRTX_EINVAL, "index '%s': the index table is the source table",
		                    s->name);
	if ((rc = check_roles(db, s, NULL)) || (rc = store_table_find(db->st, s->table, &t)) ||
	    (rc = store_family_find(db->st, t, s->family, &fid)))
		return rc;
	if (s->ncluster > IDX_MAX_CLUSTER || (s->ncluster && !s->cluster))
		return mrtx__seterr(MRTX_EINVAL, "index '%s': %zu clustered columns; the limit is %d",
		                    s->name, s->ncluster, IDX_MAX_CLUSTER);
	if (s->qualifier.size > IDX_MAX_QUAL || (s->qualifier.size && !s->qualifier.data))
		return mrtx__seterr(MRTX_EINVAL, "index '%s': source qualifier is NULL or over %d "
		                    "bytes", s->name, IDX_MAX_QUAL);
	for (size_t j = 0; j < s->ncluster; j++) {
		const mrtx_column *c = &s->cluster[j];

		if ((rc = store_family_find(db->st, t, c->family, &fid)))
			return rc;
		if (c->qualifier.size > IDX_MAX_QUAL || (c->qualifier.size && !c->qualifier.data))
			return mrtx__seterr(MRTX_EINVAL, "index '%s': clustered qualifier %zu is NULL "
			                    "or over %d bytes", s->name, j, IDX_MAX_QUAL);
	}
	return 0;
}

struct backfill {
	const idx_decl *d;
	int phase;        /* 0: every source value has its entry; 1: no orphan entries */
	uint8_t start[MRTX_MAX_ROW + 1];
	size_t nstart;
	uint8_t next[MRTX_MAX_ROW + 1];
	size_t nnext;
	int done;
	unsigned long fixed;
	unsigned long fixed_txn;
};

/* Make index row key(v, row) exactly what the source row says. */
static int ensure_entry(mrtx_txn *txn, struct backfill *b, mrtx_bytes row, mrtx_bytes v)
{
	const idx_decl *d = b->d;
	index_plan *plan = NULL;
	mrtx_bytes key, ref;
	int rc, found;

	if ((rc = idx_key(txn, d, v, row, &key)) ||
	    (rc = idx_get_opt(txn, d->index_table, key, MRTX_INDEX_FAMILY, MRTX_BYTES(idx_qual_ref, 1),
	                  &ref, &found)))
		return rc;
	if (found && idx_bytes_eq(ref, row)) {
		size_t j;

		for (j = 0; j < d->ncluster; j++) {
			mrtx_bytes sv, iv, q = idx_cluster_qual(txn, j);
			int sf, xf;

			if (!q.data)
				return MRTX_ENOMEM;
			if ((rc = idx_get_opt(txn, d->table, row, d->cluster[j].family, d->cluster[j].qual,
			                  &sv, &sf)) ||
			    (rc = idx_get_opt(txn, d->index_table, key, MRTX_INDEX_FAMILY, q, &iv, &xf)))
				return rc;
			if (sf != xf || (sf && !idx_bytes_eq(sv, iv)))
				break;
		}
		if (j == d->ncluster)
			return 0;
	}
	if ((rc = idx_plan_add(txn, &plan, OP_DEL_ROW, d->index_table, key, MRTX_BYTES(NULL, 0),
	                   MRTX_BYTES(NULL, 0))) ||
	    (rc = idx_plan_build_row(txn, &plan, d, key, row, NULL, NULL)))
		return rc;
	b->fixed_txn++;
	return index_apply(txn, plan);
}

/* Drop index row key if the source row no longer holds its value. */
static int drop_orphan(mrtx_txn *txn, struct backfill *b, mrtx_bytes key)
{
	mrtx_key_part kp[2] = { { .type = MRTX_KEY_BYTES }, { .type = MRTX_KEY_BYTES } };
	uint8_t *buf = arena_alloc(&txn->arena, key.size);
	mrtx_bytes v;
	int rc, found = 0;

	if (!buf)
		return MRTX_ENOMEM;
	if (mrtx_key_parse(kp, 2, key, buf, key.size) == 0 && kp[1].bytes.size &&
	    (rc = idx_get_opt(txn, b->d->table, kp[1].bytes, b->d->family, b->d->qual, &v, &found)))
		return rc;
	if (found && idx_bytes_eq(v, kp[0].bytes))
		return 0;
	b->fixed_txn++;
	return txn_buffer_delete_row(txn, b->d->index_table, key);
}

/* One transaction of the backfill: up to IDX_BACKFILL_ROWS rows from start. */
static int backfill_chunk(mrtx_txn *txn, void *payload)
{
	struct backfill *b = payload;
	const idx_decl *d = b->d;
	uint8_t *qe = arena_alloc(&txn->arena, IDX_MAX_QUAL + 1);
	mrtx_bytes rows[IDX_BACKFILL_ROWS], vals[IDX_BACKFILL_ROWS];
	mrtx_scan_spec spec;
	mrtx_scanner *sc;
	mrtx_cell c;
	size_t n = 0;
	int rc;

	if (!qe)
		return MRTX_ENOMEM;
	b->done = 0;
	b->fixed_txn = 0;
	memset(&spec, 0, sizeof(spec));
	spec.start = MRTX_BYTES(b->start, b->nstart);
	if (b->phase == 0) {
		spec.table = d->table;
		spec.family = d->family;
		spec.qual_start = d->qual;
		memcpy(qe, d->qual.data ? d->qual.data : idx_qual_ref, d->qual.size);
	} else {
		spec.table = d->index_table;
		spec.family = MRTX_INDEX_FAMILY;
		spec.qual_start = MRTX_BYTES(idx_qual_ref, 1);
		memcpy(qe, idx_qual_ref, 1);
	}
	qe[spec.qual_start.size] = 0x00; /* the first qualifier after qual_start */
	spec.qual_end = MRTX_BYTES(qe, spec.qual_start.size + 1);
	if ((rc = mrtx_scan_open(txn, &spec, &sc)))
		return rc;
	while (n < IDX_BACKFILL_ROWS && (rc = mrtx_scan_next(sc, &c)) == 0) {
		rows[n] = c.row;
		vals[n++] = c.value;
	}
	mrtx_scan_close(sc);
	if (rc && rc != MRTX_NOTFOUND)
		return rc;
	for (size_t i = 0; i < n; i++)
		if ((rc = b->phase == 0 ? ensure_entry(txn, b, rows[i], vals[i])
		                        : drop_orphan(txn, b, rows[i])))
			return rc;
	if (n < IDX_BACKFILL_ROWS) {
		b->done = 1;
		return 0;
	}
	/* Resume after the last row: its smallest successor. */
	memcpy(b->next, rows[n - 1].data, rows[n - 1].size);
	b->nnext = rows[n - 1].size;
	if (b->nnext < MRTX_MAX_ROW) {
		b->next[b->nnext++] = 0x00;
	} else {
		while (b->nnext && b->next[b->nnext - 1] == 0xFF)
			b->nnext--;
		if (b->nnext)
			b->next[b->nnext - 1]++;
		else
			b->done = 1;
	}
	return 0;
}

static int backfill(mrtx_db *db, const idx_decl *d)
{
	struct backfill *b = mrtx__calloc(1, sizeof(*b));
	int rc = 0;

	if (!b)
		return mrtx__seterr(MRTX_ENOMEM, "out of memory backfilling index '%s'", d->name);
	b->d = d;
	for (b->phase = 0; b->phase < 2 && rc == 0; b->phase++) {
		b->nstart = 0;
		do {
			if ((rc = mrtx_run(db, backfill_chunk, b, 50)))
				break;
			b->fixed += b->fixed_txn;
			memcpy(b->start, b->next, b->nnext);
			b->nstart = b->nnext;
		} while (!b->done);
	}
	mrtx__free(b);
	return rc;
}

#define DECLARE_TRIES 16 /* tables dropped, or declarations made, meanwhile */

/*
 * Make the index table if missing and write the declaration (key = enc)
 * on the condition that the source and index tables are still there and
 * no drop or truncate of either has begun (store_meta_put_new_on): a drop
 * or truncate freezes its table before it checks that no index uses it
 * (txn/ddl.c), so either it sees this declaration and stops, or this write
 * sees the freeze.  A table that an unfinished mrtx_drop_index left (a drop
 * record names it) is dropped first: the index gets a new, empty one.  A
 * declaration already there (a repeated call) is kept as it is, and
 * written again as such: that spreads its generation again (RADOS: to
 * tablets a failed call left behind, where writers holding older
 * declarations could still commit); if it went meanwhile (a drop), the
 * write is the guarded one.
 *
 * The tables' roles (check_roles: an index table is no other index's, nor
 * a source) are checked again from a listing of the declarations, and the
 * declaration is written only while the metadata generation is still that
 * listing's: two calls that would give one table two roles cannot both
 * land, the later one retries, sees the other's declaration and is
 * refused.
 */
static int other_spec(const mrtx_index_spec *spec)
{
	return mrtx__seterr(MRTX_EEXIST, "index '%s' exists with another spec", spec->name);
}

static int declare(mrtx_db *db, const mrtx_index_spec *spec, const char *key, mrtx_bytes enc)
{
	static const char *const fams[1] = { MRTX_INDEX_FAMILY };
	const store_table *on[2];
	uint64_t gen = 0;
	int rc = 0;

	for (int tries = 0; tries < DECLARE_TRIES; tries++) {
		mrtx_bytes have;
		mrtx_arena a;
		int declared;

		arena_init(&a);
		rc = store_meta_get(db->st, key, &a, &have);
		if (rc == 0 && (have.size != enc.size || memcmp(have.data, enc.data, enc.size)))
			rc = other_spec(spec);
		arena_free(&a);
		if (rc && rc != MRTX_NOTFOUND)
			break;
		declared = rc == 0;
		/* (MRTX_EINVAL: an index took the table meanwhile -- this one,
		 * declared by another call, if the next look finds it) */
		if (!declared && (rc = index_drop_leftover(db, spec->index_table)) == MRTX_EINVAL)
			continue;
		/* (declared: the table is that index's; one missing is made) */
		if (rc)
			break;
		if ((rc = mrtx_create_table(db, spec->index_table, fams, 1)) ||
		    (rc = store_table_find(db->st, spec->table, &on[0])))
			break;
		if ((rc = store_table_find(db->st, spec->index_table, &on[1])) == 0 &&
		    (declared || ((rc = check_roles(db, spec, &gen)) == 0 &&
		                  (rc = FAILPOINT(FP_INDEX_BEFORE_DECLARE)) == 0)) &&
		    (rc = store_meta_put_new_on(db->st, key, enc, on, 2,
		                                declared ? NULL : &gen)) == MRTX_EEXIST)
			rc = other_spec(spec); /* (declared meanwhile, otherwise) */
		if (rc != MRTX_ENOTABLE && rc != MRTX_CONFLICT)
			break; /* (else dropped, truncated or declared meanwhile: again) */
	}
	if (rc == MRTX_ENOTABLE || rc == MRTX_CONFLICT)
		rc = mrtx__seterr(MRTX_ELOCKED, "index '%s': its tables kept being dropped or "
		                  "truncated, or other declarations kept being made, while it "
		                  "was declared", spec->name);
	return rc;
}

int mrtx_create_index(mrtx_db *db, const mrtx_index_spec *spec)
{
	char key[MRTX_MAX_NAME + 3];
	mrtx_buf enc = MRTX_BUF_INIT;
	mrtx_arena a;
	idx_decl d;
	int rc;

	mrtx__clearerr();
	if (!db || !spec)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_create_index: NULL argument");
	if (store_read_only(db->st))
		return mrtx__seterr(MRTX_EREADONLY, "mrtx_create_index: store %s is open "
		                    "read-only", store_path(db->st));
	arena_init(&a);
	if ((rc = check_spec(db, spec)))
		goto done;
	/* the record of an unfinished drop of an index of this name goes: it
	 * would otherwise outlive the new index and name a table no index
	 * holds */
	if ((rc = index_drop_forget(db, spec->name, spec->index_table)))
		goto done;
	if ((rc = idx_decl_encode(spec, &enc))) {
		rc = mrtx__seterr(rc, "out of memory declaring index '%s'", spec->name);
		goto done;
	}
	snprintf(key, sizeof(key), "i/%s", spec->name);
	if ((rc = declare(db, spec, key, MRTX_BYTES(enc.data, enc.size))))
		goto done;
	idx_cache_drop(db, IDX_GEN_ANY); /* this process's next writers see the index */
	/* Backfill from the stored declaration, exactly what writers will use. */
	if ((rc = idx_decl_decode(spec->name, MRTX_BYTES(enc.data, enc.size), &a, &d)))
		goto done;
	if ((rc = backfill(db, &d)) == 0) {
		/* The backfill ended: from here the index table matches its
		 * source in every snapshot (index.c backfilled_in_view). */
		mrtx_bytes have;
		uint64_t ts = 0;
		uint8_t le[8];

		snprintf(key, sizeof(key), "b/%s", spec->name);
		/* the record carries a timestamp taken after the backfill's last
		 * commit: a snapshot at or above it holds every entry the
		 * backfill wrote (a store without views reads it so); a record
		 * there already (the index made before) stays as it is */
		rc = store_meta_get(db->st, key, &a, &have);
		if (rc == MRTX_NOTFOUND) {
			if ((rc = store_ts_next(db->st, 0, &ts)))
				goto done;
			mrtx__le64_put(le, ts);
			rc = store_meta_put_new(db->st, key, MRTX_BYTES(le, 8));
			if (rc == MRTX_EEXIST) /* (another creator of the same index
			                        * wrote its record first) */
				rc = store_meta_get(db->st, key, &a, &have);
		}
	}
done:
	buf_free(&enc);
	arena_free(&a);
	return rc;
}
