/*
 * index.c - secondary indexes kept atomically with their source data.
 *
 * Declaration (metadata record "i/<name>", opaque to storage/):
 *
 *     u8 version (1)
 *     u8 len, source table      u8 len, source family     u16 BE len, qualifier
 *     u8 len, index table       u8 ncluster, then per clustered column:
 *                               u8 len, family, u16 BE len, qualifier
 *
 * Index row (table spec.index_table, family MRTX_INDEX_FAMILY):
 *
 *     key  = bytes(value) . bytes(source row)       (mrtx_key_bytes twice)
 *     "r"          -> source row
 *     "c" . u8 n   -> copy of clustered column n of the source row
 *
 * Invariant kept by every committed transaction (checked by tests/txn/test_index):
 *
 *     source (row, column) holds v  <=>  index row key(v, row) exists,
 *     and its copies equal the source row's clustered columns.
 *
 * Why it holds under concurrency: every write that can change an index row
 * first reads what the index row depends on (the indexed value, through
 * mrtx_get in the writing transaction), and the row it writes is the source
 * row it read.  Commit validates those reads and holds the source row's lock
 * while it writes the index rows, so two transactions that touch the same
 * source row serialize, and an aborted or killed transaction leaves both or
 * neither (the commit protocol's all-or-nothing, rolled forward or back by
 * recovery).  Declarations are read once per writing transaction, at its
 * first write, so a process sees a declaration made by another process from
 * its next transaction on.
 */
#include "index.h"

#include <stdatomic.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct plan_op {
	int kind;
	const char *table;
	mrtx_bytes row, qual, value;
} plan_op;

struct index_plan {
	plan_op *ops;
	size_t n, cap;
};

const uint8_t idx_qual_ref[1] = { 'r' };

int idx_bytes_eq(mrtx_bytes a, mrtx_bytes b)
{
	return bytes_cmp(a, b) == 0;
}

/* ------------------------------------------------ declaration codec */

static int enc_str(mrtx_buf *b, const char *s)
{
	uint8_t n = (uint8_t)strlen(s);

	return buf_put(b, &n, 1) || buf_put(b, s, n) ? MRTX_ENOMEM : 0;
}

static int enc_bytes16(mrtx_buf *b, mrtx_bytes v)
{
	uint8_t n[2] = { (uint8_t)(v.size >> 8), (uint8_t)v.size };

	return buf_put(b, n, 2) || (v.size && buf_put(b, v.data, v.size)) ? MRTX_ENOMEM : 0;
}

int idx_decl_encode(const mrtx_index_spec *s, mrtx_buf *b)
{
	uint8_t v = IDX_VERSION, nc = (uint8_t)s->ncluster;
	int rc;

	if (buf_put(b, &v, 1) || (rc = enc_str(b, s->table)) || (rc = enc_str(b, s->family)) ||
	    (rc = enc_bytes16(b, s->qualifier)) || (rc = enc_str(b, s->index_table)) ||
	    buf_put(b, &nc, 1))
		return MRTX_ENOMEM;
	for (size_t i = 0; i < s->ncluster; i++)
		if ((rc = enc_str(b, s->cluster[i].family)) ||
		    (rc = enc_bytes16(b, s->cluster[i].qualifier)))
			return rc;
	return 0;
}

struct rd {
	const uint8_t *p, *e;
	mrtx_arena *a;
	int bad;
};

static const char *dec_str(struct rd *r)
{
	size_t n;
	char *s;

	if (r->bad || r->p >= r->e || (n = *r->p++) == 0 || n > (size_t)(r->e - r->p)) {
		r->bad = 1;
		return NULL;
	}
	if (!(s = arena_alloc(r->a, n + 1))) {
		r->bad = 1;
		return NULL;
	}
	memcpy(s, r->p, n);
	s[n] = '\0';
	r->p += n;
	return s;
}

static mrtx_bytes dec_bytes16(struct rd *r)
{
	mrtx_bytes v = { NULL, 0 };
	size_t n;

	if (r->bad || r->e - r->p < 2) {
		r->bad = 1;
		return v;
	}
	n = ((size_t)r->p[0] << 8) | r->p[1];
	r->p += 2;
	if (n > (size_t)(r->e - r->p) || n > IDX_MAX_QUAL) {
		r->bad = 1;
		return v;
	}
	v = MRTX_BYTES(r->p, n);
	r->p += n;
	return v;
}

/* Decode the record of index `name`; every length is checked. */
int idx_decl_decode(const char *name, mrtx_bytes v, mrtx_arena *a, idx_decl *d)
{
	struct rd r = { v.data, (const uint8_t *)v.data + v.size, a, 0 };

	memset(d, 0, sizeof(*d));
	if (v.size < 1 || r.p[0] != IDX_VERSION)
		return mrtx__seterr(MRTX_ECORRUPT, "index '%s': unknown declaration version", name);
	r.p++;
	d->name = arena_dup(a, name, strlen(name) + 1);
	d->table = dec_str(&r);
	d->family = dec_str(&r);
	d->qual = dec_bytes16(&r);
	d->index_table = dec_str(&r);
	if (!r.bad && r.p < r.e && *r.p <= IDX_MAX_CLUSTER)
		d->ncluster = *r.p++;
	else
		r.bad = 1;
	for (size_t i = 0; i < d->ncluster && !r.bad; i++) {
		d->cluster[i].family = dec_str(&r);
		d->cluster[i].qual = dec_bytes16(&r);
	}
	if (r.bad || r.p != r.e || !d->name)
		return mrtx__seterr(MRTX_ECORRUPT, "index '%s': malformed declaration", name);
	return 0;
}

/* --------------------------------------------------- loading declarations */

struct load_ctx {
	struct index_set *set;
	mrtx_arena *a;
};

static int load_one(const char *key, mrtx_bytes value, void *payload)
{
	struct load_ctx *c = payload;
	struct index_set *s = c->set;
	int rc;

	if (s->n == s->cap) {
		size_t ncap = s->cap ? 2 * s->cap : 4;
		idx_decl *nd = arena_alloc(c->a, ncap * sizeof(*nd));

		if (!nd)
			return MRTX_ENOMEM;
		if (s->n)
			memcpy(nd, s->d, s->n * sizeof(*nd));
		s->d = nd;
		s->cap = ncap;
	}
	if ((rc = idx_decl_decode(key + 2, value, c->a, &s->d[s->n])))
		return rc;
	s->n++;
	return 0;
}

int idx_load_set(store *st, mrtx_arena *a, struct index_set *set, uint64_t *gen)
{
	struct load_ctx c = { set, a };

	memset(set, 0, sizeof(*set));
	return store_meta_list(st, "i/", a, load_one, &c, gen);
}

/*
 * Declarations are cached per db handle: reading them cost a writing
 * transaction a read of the store.  A cached set may be stale (another
 * process declared an index since), so every conditional write a commit
 * issues before its commit point is also conditional on the generation the
 * set was read at: if an index was declared since, the write fails, the
 * cache is dropped and the commit returns MRTX_CONFLICT, and the retry
 * maintains the new index.  A transaction that prewrote before the
 * declaration is covered by the backfill, which resolves its locks before
 * reading those rows.
 */
struct idx_snap {
	atomic_int refs;
	uint64_t gen;
	mrtx_arena a;
	struct index_set set;
};

void idx_snap_release(idx_snap *s)
{
	if (s && atomic_fetch_sub(&s->refs, 1) == 1) {
		arena_free(&s->a);
		mrtx__free(s);
	}
}

uint64_t idx_snap_gen(const idx_snap *s)
{
	return s->gen;
}

void idx_cache_drop(mrtx_db *db, uint64_t gen)
{
	idx_snap *old = NULL;

	pthread_mutex_lock(&db->idx_mu);
	if (db->idx && (db->idx->gen == gen || gen == IDX_GEN_ANY)) {
		old = db->idx;
		db->idx = NULL;
	}
	pthread_mutex_unlock(&db->idx_mu);
	idx_snap_release(old);
}

static int gen_only(const char *key, mrtx_bytes value, void *payload)
{
	(void)key;
	(void)value;
	(void)payload;
	return 0;
}

int idx_stale_table(mrtx_txn *txn, int rc)
{
	char msg[512];
	mrtx_arena a;
	uint64_t gen = 0;
	int lrc;

	if (rc != MRTX_ENOTABLE || !txn->idx)
		return rc;
	snprintf(msg, sizeof(msg), "%s", mrtx_errmsg());
	arena_init(&a);
	lrc = store_meta_list(txn->db->st, "i/", &a, gen_only, NULL, &gen);
	arena_free(&a);
	if (lrc) /* (whether the table is gone for good is not known) */
		return lrc;
	if (gen == txn->idx->gen)
		return mrtx__seterr(rc, "%s", msg);
	idx_cache_drop(txn->db, txn->idx->gen);
	return mrtx__seterr(MRTX_CONFLICT, "an index was dropped while the transaction ran "
	                    "(%s); retry it to maintain the indexes as they are now", msg);
}

/* A reference to the db's declarations, read from the store if none is
 * cached. */
static int idx_snap_take(mrtx_db *db, idx_snap **out)
{
	idx_snap *s, *old = NULL;
	int rc;

	pthread_mutex_lock(&db->idx_mu);
	if ((s = db->idx))
		atomic_fetch_add(&s->refs, 1);
	pthread_mutex_unlock(&db->idx_mu);
	if (s) {
		*out = s;
		return 0;
	}
	if (!(s = mrtx__malloc(sizeof(*s))))
		return mrtx__seterr(MRTX_ENOMEM, "out of memory loading index declarations");
	arena_init(&s->a);
	if ((rc = idx_load_set(db->st, &s->a, &s->set, &s->gen))) {
		arena_free(&s->a);
		mrtx__free(s);
		return rc;
	}
	atomic_init(&s->refs, 2); /* the cache's and the caller's */
	pthread_mutex_lock(&db->idx_mu);
	if (!db->idx || db->idx->gen <= s->gen) {
		old = db->idx;
		db->idx = s;
	} else {
		atomic_fetch_sub(&s->refs, 1); /* a newer set is cached: ours is not */
	}
	pthread_mutex_unlock(&db->idx_mu);
	idx_snap_release(old);
	*out = s;
	return 0;
}

/* The transaction's declarations, taken at its first write. */
static int txn_set(mrtx_txn *txn, struct index_set **out)
{
	int rc;

	if (!txn->idx && (rc = idx_snap_take(txn->db, &txn->idx)))
		return rc;
	*out = &txn->idx->set;
	return 0;
}

static int find_decl(store *st, const char *name, mrtx_arena *a, idx_decl *d)
{
	char key[MRTX_MAX_NAME + 3];
	mrtx_bytes v;
	int rc;

	if (!name || !*name || strlen(name) > MRTX_MAX_NAME)
		return mrtx__seterr(MRTX_EINVAL, "bad index name");
	snprintf(key, sizeof(key), "i/%s", name);
	if ((rc = store_meta_get(st, key, a, &v)) == MRTX_NOTFOUND)
		return mrtx__seterr(MRTX_EINVAL, "no index '%s'", name);
	return rc ? rc : idx_decl_decode(name, v, a, d);
}

/* ---------------------------------------------------------- planning */

int idx_plan_add(mrtx_txn *txn, index_plan **pp, int kind, const char *table,
                    mrtx_bytes row, mrtx_bytes qual, mrtx_bytes value)
{
	index_plan *p = *pp;

	if (!p) {
		if (!(p = arena_alloc(&txn->arena, sizeof(*p))))
			return MRTX_ENOMEM;
		memset(p, 0, sizeof(*p));
		*pp = p;
	}
	if (p->n == p->cap) {
		size_t ncap = p->cap ? 2 * p->cap : 8;
		plan_op *nops = arena_alloc(&txn->arena, ncap * sizeof(*nops));

		if (!nops)
			return MRTX_ENOMEM;
		if (p->n)
			memcpy(nops, p->ops, p->n * sizeof(*nops));
		p->ops = nops;
		p->cap = ncap;
	}
	p->ops[p->n++] = (plan_op){ kind, table, row, qual, value };
	return 0;
}

/* The index row key of (value, row), checked against the index table's key
 * limits; copied into the transaction's arena. */
int idx_key(mrtx_txn *txn, const idx_decl *d, mrtx_bytes value, mrtx_bytes row,
                   mrtx_bytes *out)
{
	const store_table *t;
	mrtx_key k = MRTX_KEY_INIT;
	mrtx_bytes kb;
	int rc;

	mrtx_key_bytes(&k, value);
	mrtx_key_bytes(&k, row);
	if (mrtx_key_finish(&k, &kb) || kb.size > MRTX_MAX_ROW)
		return mrtx__seterr(MRTX_ETOOBIG, "index '%s': a value of %zu bytes with a row of "
		                    "%zu bytes does not fit an index row key (%u bytes)",
		                    d->name, value.size, row.size, MRTX_MAX_ROW);
	if ((rc = store_table_find(txn->db->st, d->index_table, &t)))
		return idx_stale_table(txn, rc);
	if ((rc = store_check_key(t, kb, 2)))
		return rc;
	if (!(out->data = arena_dup(&txn->arena, kb.data, kb.size)))
		return MRTX_ENOMEM;
	out->size = kb.size;
	return 0;
}

mrtx_bytes idx_cluster_qual(mrtx_txn *txn, size_t j)
{
	uint8_t *q = arena_alloc(&txn->arena, 2);

	if (!q)
		return MRTX_BYTES(NULL, 0);
	q[0] = 'c';
	q[1] = (uint8_t)j;
	return MRTX_BYTES(q, 2);
}

/* mrtx_get that maps NOTFOUND to *found = 0. */
int idx_get_opt(mrtx_txn *txn, const char *table, mrtx_bytes row, const char *family,
                   mrtx_bytes qual, mrtx_bytes *value, int *found)
{
	int rc = mrtx_get(txn, table, row, family, qual, value);

	/* A cell whose key cannot fit (a long row with many NULs, a long
	 * qualifier) can never exist: it is absent, whatever the row holds,
	 * and nothing needs validating.  A row that is itself too big fails
	 * in the write being planned, with its own MRTX_ETOOBIG. */
	if (rc == MRTX_ETOOBIG) {
		mrtx__clearerr();
		rc = MRTX_NOTFOUND;
	}
	*found = rc == 0;
	return rc == MRTX_NOTFOUND ? 0 : rc;
}

/*
 * Plan writing the whole index row key(value, row): the reference and every
 * clustered copy, read from the source row (column `col` reads as *colval
 * instead: the write being planned).
 */
int idx_plan_build_row(mrtx_txn *txn, index_plan **pp, const idx_decl *d,
                          mrtx_bytes key, mrtx_bytes row, const idx_col *col,
                          const mrtx_bytes *colval)
{
	int rc;

	if ((rc = idx_plan_add(txn, pp, OP_PUT, d->index_table, key,
	                   MRTX_BYTES(idx_qual_ref, 1), row)))
		return rc;
	for (size_t j = 0; j < d->ncluster; j++) {
		const idx_col *c = &d->cluster[j];
		mrtx_bytes v, q = idx_cluster_qual(txn, j);
		int found = 1;

		if (!q.data)
			return MRTX_ENOMEM;
		if (col && strcmp(c->family, col->family) == 0 && idx_bytes_eq(c->qual, col->qual))
			v = *colval;
		else if ((rc = idx_get_opt(txn, d->table, row, c->family, c->qual, &v, &found)))
			return rc;
		if (found && (rc = idx_plan_add(txn, pp, OP_PUT, d->index_table, key, q, v)))
			return rc;
	}
	return 0;
}

int index_plan_cell(mrtx_txn *txn, const char *table, mrtx_bytes row, const char *family,
                    mrtx_bytes qual, const mrtx_bytes *value, index_plan **out)
{
	struct index_set *s;
	idx_col col = { family, qual };
	int rc;

	*out = NULL;
	if (txn && txn->idx && txn->idx->set.n == 0)
		return 0; /* no index at all (the common case): nothing to plan */
	if (!txn || txn->doom || !table || !family || (qual.size && !qual.data))
		return 0; /* the buffering step reports these */
	if ((rc = txn_set(txn, &s)))
		return rc;
	for (size_t i = 0; i < s->n; i++) {
		const idx_decl *d = &s->d[i];
		int is_src, found;
		mrtx_bytes old, key;

		if (strcmp(d->table, table) != 0)
			continue;
		is_src = strcmp(d->family, family) == 0 && idx_bytes_eq(d->qual, qual);
		if (is_src) {
			if ((rc = idx_get_opt(txn, table, row, family, qual, &old, &found)))
				return rc;
			if (value && found && idx_bytes_eq(old, *value))
				continue;
			if (value && ((rc = idx_key(txn, d, *value, row, &key)) ||
			              (rc = idx_plan_build_row(txn, out, d, key, row, &col, value))))
				return rc;
			/* An old value too big to index has no index row to delete. */
			if (found && (rc = idx_key(txn, d, old, row, &key)) == 0)
				rc = idx_plan_add(txn, out, OP_DEL_ROW, d->index_table, key,
				              MRTX_BYTES(NULL, 0), MRTX_BYTES(NULL, 0));
			if (rc && rc != MRTX_ETOOBIG)
				return rc;
			continue;
		}
		for (size_t j = 0; j < d->ncluster; j++) {
			const idx_col *c = &d->cluster[j];
			mrtx_bytes iv, q;

			if (strcmp(c->family, family) != 0 || !idx_bytes_eq(c->qual, qual))
				continue;
			if ((rc = idx_get_opt(txn, table, row, d->family, d->qual, &iv, &found)))
				return rc;
			if (!found)
				break;
			if ((rc = idx_key(txn, d, iv, row, &key)))
				return rc;
			if (!(q = idx_cluster_qual(txn, j)).data)
				return MRTX_ENOMEM;
			if ((rc = idx_plan_add(txn, out, value ? OP_PUT : OP_DEL_CELL, d->index_table,
			                   key, q, value ? *value : MRTX_BYTES(NULL, 0))))
				return rc;
		}
	}
	return 0;
}

int index_plan_delete_row(mrtx_txn *txn, const char *table, mrtx_bytes row,
                          index_plan **out)
{
	struct index_set *s;
	int rc;

	*out = NULL;
	if (!txn || txn->doom || !table)
		return 0;
	if ((rc = txn_set(txn, &s)))
		return rc;
	for (size_t i = 0; i < s->n; i++) {
		const idx_decl *d = &s->d[i];
		mrtx_bytes old, key;
		int found;

		if (strcmp(d->table, table) != 0)
			continue;
		if ((rc = idx_get_opt(txn, table, row, d->family, d->qual, &old, &found)))
			return rc;
		if (!found)
			continue;
		/* An old value too big to index has no index row to delete; any
		 * other failure (the index table unreadable, out of memory) must
		 * fail the delete, or it would commit without its index delete. */
		if ((rc = idx_key(txn, d, old, row, &key)) == MRTX_ETOOBIG) {
			mrtx__clearerr();
			continue;
		}
		if (rc || (rc = idx_plan_add(txn, out, OP_DEL_ROW, d->index_table, key,
		                             MRTX_BYTES(NULL, 0), MRTX_BYTES(NULL, 0))))
			return rc;
	}
	return 0;
}

int index_apply(mrtx_txn *txn, index_plan *plan)
{
	int rc = 0;

	if (!plan)
		return 0;
	/* Deletes of whole rows first: a plan may delete the old index row and
	 * write a new one, and a row delete only drops what was buffered before. */
	for (int pass = 0; pass < 2 && !rc; pass++)
		for (size_t i = 0; i < plan->n && !rc; i++) {
			const plan_op *o = &plan->ops[i];

			if ((o->kind == OP_DEL_ROW) != (pass == 0))
				continue;
			if (o->kind == OP_DEL_ROW)
				rc = txn_buffer_delete_row(txn, o->table, o->row);
			else
				rc = txn_buffer_cell(txn, o->table, o->row, MRTX_INDEX_FAMILY, o->qual,
				                     o->kind == OP_PUT ? &o->value : NULL);
		}
	if (rc) {
		/* The data write is buffered and its index write is not: this
		 * transaction must never commit. */
		txn->doom = rc;
		return mrtx__seterr(rc, "index maintenance failed, the transaction is doomed: %s",
		                    mrtx_errmsg());
	}
	return 0;
}

/* ------------------------------------------------------------ scanning */

/* Did index d's backfill end before the transaction's view opened (its
 * record "b/<name>", written after the backfill, is in the view; without
 * views, its timestamp is at or below the live snapshot's)?  From then on
 * every commit maintains the index, so the snapshot's index table matches
 * its source rows.  No snapshot, no record, or an error reading it: no. */
static int backfilled_in_view(mrtx_txn *txn, const idx_decl *d)
{
	char key[MRTX_MAX_NAME + 3];
	store_view *v;
	mrtx_bytes val;

	if (txn_view_get(txn, &v) || (!v && !txn->snap_live))
		return 0;
	snprintf(key, sizeof(key), "b/%s", d->name);
	if (store_meta_get_in(txn->db->st, v, key, &txn->arena, &val))
		return 0;
	if (v)
		return 1;
	/* a live snapshot without a view (RADOS): the record is read as it
	 * is now; its timestamp, taken after the backfill's last commit,
	 * must be at or below the snapshot's (index_create.c).  A record of
	 * one byte is from before records had timestamps: its backfill ended
	 * before any snapshot taken now. */
	if (val.size == 1)
		return 1;
	return val.size == 8 && mrtx__le64_get(val.data) <= txn->snap_ts;
}

/* Has index d's backfill ended, as the store is now?  One that has not --
 * running, or cut short, which nothing will finish until mrtx_create_index
 * runs again -- leaves the index table without entries its source rows
 * have, for good when cut short: a scan would read a part of the index as
 * the whole of it, and validation, which compares the scanned range with
 * itself, would pass.  MRTX_ELOCKED then, naming the remedy. */
static int backfill_ended(mrtx_txn *txn, const idx_decl *d)
{
	char key[MRTX_MAX_NAME + 3];
	mrtx_bytes val;
	int rc;

	snprintf(key, sizeof(key), "b/%s", d->name);
	rc = store_meta_get(txn->db->st, key, &txn->arena, &val);
	if (rc == MRTX_NOTFOUND)
		return mrtx__seterr(MRTX_ELOCKED, "index '%s' is not complete: its backfill has not "
		                    "ended (mrtx_create_index is running, or one was cut short: "
		                    "calling it again, `mrtx index create`, completes it)", d->name);
	return rc;
}

static int scan_keys(mrtx_txn *txn, const idx_decl *d, mrtx_bytes start, mrtx_bytes end,
                     int reverse, size_t limit,
                     int (*fn)(const mrtx_index_hit *hit, void *payload), void *payload)
{
	mrtx_scan_spec spec = { d->index_table, start, end, MRTX_INDEX_FAMILY,
	                        { NULL, 0 }, { NULL, 0 }, reverse, 0 };
	mrtx_cell cells[IDX_MAX_CLUSTER], c;
	mrtx_scanner *sc = NULL;
	mrtx_bytes cur = { NULL, 0 };
	size_t ncells = 0, nhits = 0;
	int rc, more = 1;

	/* The declaration is read as it is now, but the transaction's view
	 * may predate it or its backfill (which runs in transactions after
	 * it): an index table read from the view can then lack entries its
	 * source rows in the view have.  Unless the view holds the record
	 * that the backfill ended, the transaction validates at commit, as
	 * without views (snapread.c); a missed entry is then a change of the
	 * scanned range. */
	int backfilled = backfilled_in_view(txn, d);

	if (!backfilled && (rc = backfill_ended(txn, d)))
		return rc;
	if (!backfilled)
		txn->must_validate = 1;
	if ((rc = mrtx_scan_open(txn, &spec, &sc)))
		return rc;
	/* (a live snapshot, RADOS: at the snapshot the backfill's entries,
	 * committed above it, would read as present rows without cells,
	 * which validation compares equal and so could not catch a missed
	 * entry: the index table is read as it is now instead, and validated,
	 * as LMDB reads a table newer than its view) */
	if (!backfilled && txn->snap_live)
		txn_scan_current(sc);
	while (more) {
		rc = mrtx_scan_next(sc, &c);
		if (rc && rc != MRTX_NOTFOUND)
			break;
		more = rc == 0;
		if (cur.data && (!more || !idx_bytes_eq(c.row, cur))) {
			mrtx_key_part kp[2] = { { .type = MRTX_KEY_BYTES }, { .type = MRTX_KEY_BYTES } };
			uint8_t *buf = arena_alloc(&txn->arena, cur.size);
			mrtx_index_hit hit;

			if (!buf) {
				rc = MRTX_ENOMEM;
				break;
			}
			if (mrtx_key_parse(kp, 2, cur, buf, cur.size)) {
				rc = mrtx__seterr(MRTX_ECORRUPT, "index '%s': malformed index row key",
				                  d->name);
				break;
			}
			for (size_t i = 0; i < ncells; i++)
				cells[i].row = kp[1].bytes;
			hit = (mrtx_index_hit){ kp[0].bytes, kp[1].bytes, cells, ncells };
			if ((rc = fn(&hit, payload)))
				break;
			ncells = 0;
			if (limit && ++nhits >= limit) {
				more = 0;
				break;
			}
		}
		rc = 0;
		if (!more)
			break;
		cur = c.row;
		if (c.qualifier.size == 2 && ((const uint8_t *)c.qualifier.data)[0] == 'c') {
			size_t j = ((const uint8_t *)c.qualifier.data)[1];

			if (j < d->ncluster)
				cells[ncells++] = (mrtx_cell){ c.row, d->cluster[j].family,
				                               d->cluster[j].qual, c.value };
		}
	}
	mrtx_scan_close(sc);
	return rc;
}

static int value_key(mrtx_bytes v, mrtx_key *k)
{
	mrtx_key_init(k);
	return mrtx_key_bytes(k, v);
}

int mrtx_index_scan(mrtx_txn *txn, const char *index, mrtx_bytes value_start,
                    mrtx_bytes value_end, int reverse, size_t limit,
                    int (*fn)(const mrtx_index_hit *hit, void *payload), void *payload)
{
	mrtx_key ks, ke;
	idx_decl d;
	int rc;

	mrtx__clearerr();
	TXN_CHECK_SETTLED(txn);
	if (!fn)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_index_scan: fn is NULL");
	if ((rc = find_decl(txn->db->st, index, &txn->arena, &d)))
		return rc;
	mrtx_key_init(&ks);
	mrtx_key_init(&ke);
	if ((value_start.size && (rc = value_key(value_start, &ks))) ||
	    (value_end.size && (rc = value_key(value_end, &ke))))
		return rc;
	return scan_keys(txn, &d, MRTX_BYTES(ks.buf, ks.size), MRTX_BYTES(ke.buf, ke.size),
	                 reverse, limit, fn, payload);
}

int mrtx_index_lookup(mrtx_txn *txn, const char *index, mrtx_bytes value,
                      int (*fn)(const mrtx_index_hit *hit, void *payload), void *payload)
{
	mrtx_key ks, ke;
	idx_decl d;
	int rc;

	mrtx__clearerr();
	TXN_CHECK_SETTLED(txn);
	if (!fn)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_index_lookup: fn is NULL");
	if ((rc = find_decl(txn->db->st, index, &txn->arena, &d)) ||
	    (rc = value_key(value, &ks)) || (rc = mrtx_key_prefix_end(&ke, &ks)))
		return rc;
	return scan_keys(txn, &d, MRTX_BYTES(ks.buf, ks.size), MRTX_BYTES(ke.buf, ke.size),
	                 0, 0, fn, payload);
}

/* ------------------------------------------------ listing declarations */

static void decl_to_spec(const idx_decl *d, mrtx_column *cols, mrtx_index_spec *s)
{
	for (size_t j = 0; j < d->ncluster; j++)
		cols[j] = (mrtx_column){ d->cluster[j].family, d->cluster[j].qual };
	*s = (mrtx_index_spec){ MRTX_INDEX_SPEC_VERSION, d->name, d->table, d->family, d->qual,
	                        d->index_table, d->ncluster ? cols : NULL, d->ncluster };
}

int mrtx_indexes(mrtx_db *db, int (*fn)(const mrtx_index_spec *spec, void *payload),
                 void *payload)
{
	struct index_set set;
	mrtx_arena a;
	int rc;

	mrtx__clearerr();
	if (!db || !fn)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_indexes: NULL argument");
	arena_init(&a);
	rc = idx_load_set(db->st, &a, &set, NULL);
	for (size_t i = 0; i < set.n && rc == 0; i++) {
		mrtx_column cols[IDX_MAX_CLUSTER];
		mrtx_index_spec s;

		decl_to_spec(&set.d[i], cols, &s);
		rc = fn(&s, payload);
	}
	arena_free(&a);
	return rc;
}
