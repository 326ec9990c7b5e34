/*
 * store_lmdb.c - the storage seam on LMDB.  The only file that includes
 * <lmdb.h> and knows how rows are laid out:
 *
 *   DBI "mrtx.meta"   "format" -> u32 LE, "store_id" -> 16 random bytes,
 *                     "t/<table>" -> u8 nfamilies, (u8 len, name)...
 *   DBI "d/<table>"   enc(row) . family-id . qualifier -> value
 *   DBI "l/<table>"   row -> lock record bytes
 *
 * One environment per store directory, shared by every mrtx_db of this
 * process that opens the same directory (LMDB forbids opening one twice in
 * a process: closing either would drop the other's POSIX locks).  A forked
 * child never reuses its parent's environment.
 *
 * Batched writes run every op of a call in one LMDB write transaction, so a
 * protocol phase costs one commit (one fsync in sync mode).  Unbatched
 * stores run one write transaction per op, as a distributed engine would.
 */
#include "store.h"

#include <errno.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "keyenc.h"

#define META_FORMAT 1u
#define DEFAULT_MAP ((size_t)1 << 30)

struct store {
	MDB_env *env;
	char *path;
	dev_t dev;
	ino_t ino;
	pid_t pid;
	int refs;
	int unbatched;
	size_t map_size;
	MDB_dbi dbi_meta;
	uint8_t id[16];
	pthread_mutex_t mu; /* table creation and DBI opens */
	store_table *tables[MRTX_MAX_TABLES];
	atomic_size_t ntables; /* entries below are immutable once published */
	atomic_ulong write_calls, write_txns, read_txns;
	atomic_int stale_cleared; /* dead readers' slots cleared (open, store_get_info) */
	store *next;        /* process registry */
};

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static store *registry;

/* ---------------------------------------------------------------- errors */

static int lmdb_err(store *st, int rc, const char *step)
{
	if (rc == MDB_MAP_FULL)
		return mrtx__seterr(MRTX_EFULL, "store %s is full (map size %zu bytes) during %s; "
		                    "reopen with a larger mrtx_options.map_size",
		                    st->path, st->map_size, step);
	if (rc == ENOSPC)
		return mrtx__seterr(MRTX_EFULL, "store %s: disk full during %s", st->path, step);
	if (rc == ENOMEM)
		return mrtx__seterr(MRTX_ENOMEM, "store %s: out of memory during %s", st->path, step);
	if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND)
		return mrtx__seterr(MRTX_ECORRUPT, "store %s: %s during %s", st->path,
		                    mdb_strerror(rc), step);
	return mrtx__seterr(MRTX_ESTORE, "store %s: %s: %s", st->path, step, mdb_strerror(rc));
}

/* ------------------------------------------------------ fault injection */

/*
 * Test hook (store.h, store__fail_at): while armed, every store call
 * (store_read_row, store_read_locks, store_scan_rows, store_write_rows) is
 * counted and the n-th fails with an LMDB error before touching LMDB.  Off,
 * it costs one load and a predicted branch.
 */
static volatile int fault_armed;
static atomic_ulong fault_calls, fault_at;
static atomic_int fault_err;

unsigned long store__fail_at(unsigned long n, int lmdb_error)
{
	unsigned long before = atomic_exchange(&fault_calls, 0);

	atomic_store(&fault_err, lmdb_error ? lmdb_error : EIO);
	atomic_store(&fault_at, n);
	fault_armed = n != 0;
	return before;
}

static int fault_hit(store *st, const char *step)
{
	unsigned long n = atomic_fetch_add(&fault_calls, 1) + 1;

	if (n != atomic_load(&fault_at))
		return 0;
	return lmdb_err(st, atomic_load(&fault_err), step);
}

#define STORE_FAULT(st, step) (MRTX_UNLIKELY(fault_armed) ? fault_hit(st, step) : 0)

/* -------------------------------------------------------------- helpers */

static int cmp_bytes(const void *a, size_t an, const void *b, size_t bn)
{
	int c = memcmp(a, b, MRTX_MIN(an, bn));

	if (c)
		return c;
	return an < bn ? -1 : an > bn;
}

static MDB_val mv(const void *p, size_t n)
{
	MDB_val v = { n, (void *)(uintptr_t)p };
	return v;
}

static int txn_begin(store *st, unsigned flags, MDB_txn **out)
{
	int rc = mdb_txn_begin(st->env, NULL, flags, out);

	if (rc == MDB_MAP_RESIZED) {
		/* Another process grew the map; adopt its size and retry. */
		mdb_env_set_mapsize(st->env, 0);
		rc = mdb_txn_begin(st->env, NULL, flags, out);
	}
	if (rc)
		return lmdb_err(st, rc, flags & MDB_RDONLY ? "begin read" : "begin write");
	atomic_fetch_add_explicit(flags & MDB_RDONLY ? &st->read_txns : &st->write_txns, 1,
	                          memory_order_relaxed);
	return 0;
}

/* A growable array in an arena (old storage is left to the arena). */
static void *arr_grow(mrtx_arena *a, void *arr, size_t n, size_t *cap, size_t elem)
{
	size_t ncap = *cap ? *cap * 2 : 8;
	void *p;

	if (n < *cap)
		return arr;
	if (ncap > SIZE_MAX / elem || !(p = arena_alloc(a, ncap * elem)))
		return NULL;
	if (n)
		memcpy(p, arr, n * elem);
	*cap = ncap;
	return p;
}

/* --------------------------------------------------------------- tables */

static int table_parse(const char *name, const MDB_val *v, store_table **out)
{
	const uint8_t *p = v->mv_data, *e = p + v->mv_size;
	size_t nfam, namelen = strlen(name), total;
	store_table *t;
	char **fams, *s;

	if (v->mv_size < 1 || (nfam = p[0]) == 0)
		return mrtx__seterr(MRTX_ECORRUPT, "metadata of table '%s' is malformed", name);
	total = sizeof(*t) + nfam * sizeof(char *) + namelen + 1 + v->mv_size;
	if (!(t = mrtx__calloc(1, total)))
		return mrtx__seterr(MRTX_ENOMEM, "out of memory loading table '%s'", name);
	fams = (char **)(t + 1);
	s = (char *)(fams + nfam);
	memcpy(s, name, namelen + 1);
	t->name = s;
	s += namelen + 1;
	p++;
	for (size_t i = 0; i < nfam; i++) {
		size_t len;

		if (p >= e || (len = *p++) == 0 || len > (size_t)(e - p)) {
			mrtx__free(t);
			return mrtx__seterr(MRTX_ECORRUPT, "metadata of table '%s' is malformed", name);
		}
		memcpy(s, p, len);
		s[len] = '\0';
		fams[i] = s;
		s += len + 1;
		p += len;
	}
	if (p != e) {
		mrtx__free(t);
		return mrtx__seterr(MRTX_ECORRUPT, "metadata of table '%s' has trailing bytes", name);
	}
	t->families = (const char *const *)fams;
	t->nfamilies = nfam;
	*out = t;
	return 0;
}

static store_table *table_lookup(store *st, const char *name)
{
	size_t n = atomic_load_explicit(&st->ntables, memory_order_acquire);

	for (size_t i = 0; i < n; i++)
		if (strcmp(st->tables[i]->name, name) == 0)
			return st->tables[i];
	return NULL;
}

/* Open the DBIs of a table described in meta and publish it.  Caller holds st->mu
 * and runs txn; on success the table is published once txn commits. */
static int table_attach(store *st, MDB_txn *txn, const char *name, const MDB_val *meta,
                        unsigned dbflags, store_table **out)
{
	char dname[MRTX_MAX_NAME + 3];
	store_table *t = NULL;
	MDB_dbi dd, dl;
	int rc;

	if ((rc = table_parse(name, meta, &t)))
		return rc;
	snprintf(dname, sizeof(dname), "d/%s", name);
	if ((rc = mdb_dbi_open(txn, dname, dbflags, &dd)) == 0) {
		snprintf(dname, sizeof(dname), "l/%s", name);
		rc = mdb_dbi_open(txn, dname, dbflags, &dl);
	}
	if (rc) {
		mrtx__free(t);
		if (rc == MDB_NOTFOUND)
			return mrtx__seterr(MRTX_ECORRUPT, "table '%s' is in the metadata but its "
			                    "databases are missing", name);
		return lmdb_err(st, rc, "open table");
	}
	t->dbi_data = dd;
	t->dbi_lock = dl;
	*out = t;
	return 0;
}

static int table_publish(store *st, store_table *t)
{
	size_t n = atomic_load(&st->ntables);

	if (n >= MRTX_MAX_TABLES) {
		mrtx__free(t);
		return mrtx__seterr(MRTX_ETOOBIG, "store %s has the maximum of %u tables",
		                    st->path, MRTX_MAX_TABLES);
	}
	t->id = (unsigned)n;
	st->tables[n] = t;
	atomic_store_explicit(&st->ntables, n + 1, memory_order_release);
	return 0;
}

static int check_name(const char *what, const char *s)
{
	size_t n;

	if (!s)
		return mrtx__seterr(MRTX_EINVAL, "%s name is NULL", what);
	n = strlen(s);
	if (n == 0)
		return mrtx__seterr(MRTX_EINVAL, "%s name is empty", what);
	if (n > MRTX_MAX_NAME)
		return mrtx__seterr(MRTX_ETOOBIG, "%s name '%.20s...' is %zu bytes; the limit is %u",
		                    what, s, n, MRTX_MAX_NAME);
	for (size_t i = 0; i < n; i++)
		if (s[i] <= ' ' || s[i] > '~' || s[i] == '/' || s[i] == ':')
			return mrtx__seterr(MRTX_EINVAL, "%s name '%s' has a character outside "
			                    "printable ASCII or one of space / :", what, s);
	return 0;
}

int store_create_table(store *st, const char *name, const char *const *families,
                       size_t nfamilies)
{
	uint8_t meta[1 + MRTX_MAX_FAMILIES * (MRTX_MAX_NAME + 1)];
	char key[MRTX_MAX_NAME + 3];
	size_t mlen = 1;
	store_table *t = NULL;
	MDB_txn *txn = NULL;
	MDB_val k, v, old;
	int rc;

	if ((rc = check_name("table", name)))
		return rc;
	if (!families || nfamilies == 0)
		return mrtx__seterr(MRTX_EINVAL, "table '%s' needs at least one family", name);
	if (nfamilies > MRTX_MAX_FAMILIES)
		return mrtx__seterr(MRTX_ETOOBIG, "table '%s': %zu families; the limit is %u",
		                    name, nfamilies, MRTX_MAX_FAMILIES);
	meta[0] = (uint8_t)nfamilies;
	for (size_t i = 0; i < nfamilies; i++) {
		size_t len;

		if ((rc = check_name("family", families[i])))
			return rc;
		for (size_t j = 0; j < i; j++)
			if (strcmp(families[i], families[j]) == 0)
				return mrtx__seterr(MRTX_EINVAL, "table '%s': family '%s' listed twice",
				                    name, families[i]);
		len = strlen(families[i]);
		meta[mlen++] = (uint8_t)len;
		memcpy(meta + mlen, families[i], len);
		mlen += len;
	}
	snprintf(key, sizeof(key), "t/%s", name);
	k = mv(key, strlen(key));
	v = mv(meta, mlen);

	pthread_mutex_lock(&st->mu);
	if ((rc = txn_begin(st, 0, &txn)))
		goto done;
	rc = mdb_get(txn, st->dbi_meta, &k, &old);
	if (rc == 0) {
		rc = (old.mv_size == mlen && memcmp(old.mv_data, meta, mlen) == 0) ? 0 :
		     mrtx__seterr(MRTX_EEXIST, "table '%s' exists with different families", name);
		mdb_txn_abort(txn);
		txn = NULL;
		if (rc == 0 && !table_lookup(st, name)) {
			pthread_mutex_unlock(&st->mu);
			return store_table_find(st, name, (const store_table **)&t);
		}
		goto done;
	}
	if (rc != MDB_NOTFOUND) {
		rc = lmdb_err(st, rc, "read metadata");
		goto done;
	}
	if (atomic_load(&st->ntables) >= MRTX_MAX_TABLES) {
		rc = mrtx__seterr(MRTX_ETOOBIG, "store %s has the maximum of %u tables",
		                  st->path, MRTX_MAX_TABLES);
		goto done;
	}
	if ((rc = mdb_put(txn, st->dbi_meta, &k, &v, 0))) {
		rc = lmdb_err(st, rc, "write metadata");
		goto done;
	}
	if ((rc = table_attach(st, txn, name, &v, MDB_CREATE, &t)))
		goto done;
	rc = mdb_txn_commit(txn);
	txn = NULL;
	if (rc) {
		mrtx__free(t);
		rc = lmdb_err(st, rc, "create table");
		goto done;
	}
	rc = table_publish(st, t);
done:
	if (txn)
		mdb_txn_abort(txn);
	pthread_mutex_unlock(&st->mu);
	return rc;
}

int store_table_find(store *st, const char *name, const store_table **out)
{
	char key[MRTX_MAX_NAME + 3];
	store_table *t;
	MDB_txn *txn = NULL;
	MDB_val k, v;
	int rc;

	if ((t = table_lookup(st, name))) {
		*out = t;
		return 0;
	}
	if (!name || !*name || strlen(name) > MRTX_MAX_NAME)
		return mrtx__seterr(MRTX_ENOTABLE, "no table '%.64s'", name ? name : "(null)");
	/* Maybe another process created it: read the metadata and open its DBIs. */
	pthread_mutex_lock(&st->mu);
	if ((t = table_lookup(st, name))) {
		rc = 0;
		goto done;
	}
	if ((rc = txn_begin(st, MDB_RDONLY, &txn)))
		goto done;
	snprintf(key, sizeof(key), "t/%s", name);
	k = mv(key, strlen(key));
	rc = mdb_get(txn, st->dbi_meta, &k, &v);
	if (rc == MDB_NOTFOUND) {
		rc = mrtx__seterr(MRTX_ENOTABLE, "no table '%s' in store %s", name, st->path);
		goto done;
	}
	if (rc) {
		rc = lmdb_err(st, rc, "read metadata");
		goto done;
	}
	if ((rc = table_attach(st, txn, name, &v, 0, &t)))
		goto done;
	rc = mdb_txn_commit(txn); /* keeps the DBI handles */
	txn = NULL;
	if (rc) {
		mrtx__free(t);
		t = NULL;
		rc = lmdb_err(st, rc, "open table");
		goto done;
	}
	rc = table_publish(st, t);
done:
	if (txn)
		mdb_txn_abort(txn);
	pthread_mutex_unlock(&st->mu);
	if (rc == 0)
		*out = t;
	return rc;
}

int store_family_find(const store_table *t, const char *family, uint8_t *fid)
{
	if (!family)
		return mrtx__seterr(MRTX_EINVAL, "family is NULL (table '%s')", t->name);
	for (size_t i = 0; i < t->nfamilies; i++)
		if (strcmp(t->families[i], family) == 0) {
			*fid = (uint8_t)i;
			return 0;
		}
	return mrtx__seterr(MRTX_ENOFAMILY, "table '%s' has no family '%.64s'", t->name, family);
}

static int table_name_cmp(const void *a, const void *b)
{
	return strcmp((*(store_table *const *)a)->name, (*(store_table *const *)b)->name);
}

int store_tables_list(store *st, const store_table ***out, size_t *count)
{
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_val k, v;
	const store_table **arr;
	size_t n;
	int rc, op = MDB_SET_RANGE;

	/* Attach every table in the metadata, including other processes' new ones. */
	if ((rc = txn_begin(st, MDB_RDONLY, &txn)))
		return rc;
	if ((rc = mdb_cursor_open(txn, st->dbi_meta, &cur))) {
		mdb_txn_abort(txn);
		return lmdb_err(st, rc, "list tables");
	}
	k = mv("t/", 2);
	for (;;) {
		char name[MRTX_MAX_NAME + 1];
		const store_table *t;

		rc = mdb_cursor_get(cur, &k, &v, op);
		op = MDB_NEXT;
		if (rc || k.mv_size < 3 || memcmp(k.mv_data, "t/", 2) != 0)
			break;
		if (k.mv_size - 2 > MRTX_MAX_NAME)
			continue;
		memcpy(name, (char *)k.mv_data + 2, k.mv_size - 2);
		name[k.mv_size - 2] = '\0';
		if (!table_lookup(st, name)) {
			/* store_table_find needs its own txn; remember and resume. */
			mdb_cursor_close(cur);
			mdb_txn_abort(txn);
			if ((rc = store_table_find(st, name, &t)))
				return rc;
			if ((rc = txn_begin(st, MDB_RDONLY, &txn)))
				return rc;
			if ((rc = mdb_cursor_open(txn, st->dbi_meta, &cur))) {
				mdb_txn_abort(txn);
				return lmdb_err(st, rc, "list tables");
			}
			k = mv("t/", 2);
			op = MDB_SET_RANGE;
		}
	}
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	if (rc && rc != MDB_NOTFOUND)
		return lmdb_err(st, rc, "list tables");
	n = atomic_load_explicit(&st->ntables, memory_order_acquire);
	if (!(arr = mrtx__reallocarray(NULL, n, sizeof(*arr))))
		return mrtx__seterr(MRTX_ENOMEM, "out of memory listing tables");
	for (size_t i = 0; i < n; i++)
		arr[i] = st->tables[i];
	qsort(arr, n, sizeof(*arr), table_name_cmp);
	*out = arr;
	*count = n;
	return 0;
}

int store_check_key(const store_table *t, mrtx_bytes row, size_t qual_size)
{
	size_t k;

	if (row.size == 0)
		return mrtx__seterr(MRTX_EINVAL, "table '%s': row key is empty", t->name);
	if (!row.data)
		return mrtx__seterr(MRTX_EINVAL, "table '%s': row data is NULL", t->name);
	if (row.size > MRTX_MAX_ROW)
		return mrtx__seterr(MRTX_ETOOBIG, "table '%s': row of %zu bytes; the limit is %u",
		                    t->name, row.size, MRTX_MAX_ROW);
	k = keyenc_cell_size(row.data, row.size, qual_size);
	if (k > MRTX_MAX_KEY)
		return mrtx__seterr(MRTX_ETOOBIG, "table '%s': row of %zu bytes with qualifier of "
		                    "%zu bytes encodes to a %zu-byte key; the limit is %u (row + "
		                    "NUL bytes in row + 3 + qualifier)", t->name, row.size,
		                    qual_size, k, MRTX_MAX_KEY);
	return 0;
}

/* ---------------------------------------------------------------- reads */

/* Read row's cells (filtered) with cursor cur into out. */
static int read_cells(store *st, MDB_txn *txn, const store_table *t, mrtx_bytes row,
                      const store_filter *f, mrtx_arena *a, store_row *out)
{
	uint8_t key[MRTX_MAX_KEY + 16];
	size_t plen, cap = 0, klen;
	MDB_cursor *cur = NULL;
	MDB_val k, v;
	int rc, op = MDB_SET_RANGE;

	out->cells = NULL;
	out->ncells = 0;
	if (f && f->lock_only)
		return 0;
	plen = keyenc_put(key, row.data, row.size);
	klen = plen;
	if (f && f->family >= 0) {
		key[plen++] = (uint8_t)f->family;
		klen = plen;
		if (f->qs.size) {
			if (klen + f->qs.size > sizeof(key))
				return mrtx__seterr(MRTX_ETOOBIG, "qualifier bound too long");
			memcpy(key + klen, f->qs.data, f->qs.size);
			klen += f->qs.size;
		}
	}
	if (f && f->family >= 0 && f->qual_exact) {
		k = mv(key, klen);
		rc = mdb_get(txn, t->dbi_data, &k, &v);
		if (rc == MDB_NOTFOUND)
			return 0;
		if (rc)
			return lmdb_err(st, rc, "read cell");
		if (!(out->cells = arena_alloc(a, sizeof(store_cell))))
			return MRTX_ENOMEM;
		out->cells[0].fid = (uint8_t)f->family;
		out->cells[0].qual = MRTX_BYTES(arena_dup(a, f->qs.data, f->qs.size), f->qs.size);
		out->cells[0].value = MRTX_BYTES(arena_dup(a, v.mv_data, v.mv_size), v.mv_size);
		if (!out->cells[0].qual.data || !out->cells[0].value.data)
			return MRTX_ENOMEM;
		out->ncells = 1;
		return 0;
	}
	if ((rc = mdb_cursor_open(txn, t->dbi_data, &cur)))
		return lmdb_err(st, rc, "open cursor");
	k = mv(key, klen);
	for (;;) {
		store_cell *c;
		const uint8_t *kd;
		size_t encsize = plen - ((f && f->family >= 0) ? 1 : 0);

		rc = mdb_cursor_get(cur, &k, &v, op);
		op = MDB_NEXT;
		if (rc == MDB_NOTFOUND) {
			rc = 0;
			break;
		}
		if (rc) {
			rc = lmdb_err(st, rc, "read row");
			break;
		}
		kd = k.mv_data;
		if (k.mv_size < plen + ((f && f->family >= 0) ? 0 : 1) ||
		    memcmp(kd, key, plen) != 0)
			break;
		if (f && f->family >= 0 && f->qe.size &&
		    cmp_bytes(kd + plen, k.mv_size - plen, f->qe.data, f->qe.size) >= 0)
			break;
		if (!(out->cells = arr_grow(a, out->cells, out->ncells, &cap, sizeof(*c)))) {
			rc = MRTX_ENOMEM;
			break;
		}
		c = &out->cells[out->ncells++];
		c->fid = kd[encsize];
		c->qual = MRTX_BYTES(arena_dup(a, kd + encsize + 1, k.mv_size - encsize - 1),
		                     k.mv_size - encsize - 1);
		c->value = MRTX_BYTES(arena_dup(a, v.mv_data, v.mv_size), v.mv_size);
		if (!c->qual.data || !c->value.data) {
			rc = MRTX_ENOMEM;
			break;
		}
	}
	mdb_cursor_close(cur);
	return rc;
}

static int read_lock(store *st, MDB_txn *txn, const store_table *t, mrtx_bytes row,
                     mrtx_arena *a, store_row *out)
{
	MDB_val k = mv(row.data, row.size), v;
	int rc = mdb_get(txn, t->dbi_lock, &k, &v);

	out->row = row;
	out->has_lock = 0;
	out->lock = MRTX_BYTES(NULL, 0);
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc)
		return lmdb_err(st, rc, "read lock");
	if (!(out->lock.data = arena_dup(a, v.mv_data, v.mv_size)))
		return MRTX_ENOMEM;
	out->lock.size = v.mv_size;
	out->has_lock = 1;
	return 0;
}

int store_read_row(store *st, const store_table *t, mrtx_bytes row,
                   const store_filter *f, mrtx_arena *a, store_row *out)
{
	MDB_txn *txn;
	int rc;

	if ((rc = STORE_FAULT(st, "read row (injected fault)")))
		return rc;
	if ((rc = txn_begin(st, MDB_RDONLY, &txn)))
		return rc;
	if ((rc = read_lock(st, txn, t, row, a, out)) == 0)
		rc = read_cells(st, txn, t, row, f, a, out);
	mdb_txn_abort(txn);
	return rc;
}

int store_read_locks(store *st, const store_rowref *refs, size_t n, mrtx_arena *a,
                     store_row *out)
{
	MDB_txn *txn;
	int rc = 0;

	if (n == 0)
		return 0;
	if ((rc = STORE_FAULT(st, "read locks (injected fault)")))
		return rc;
	if ((rc = txn_begin(st, MDB_RDONLY, &txn)))
		return rc;
	for (size_t i = 0; i < n && rc == 0; i++) {
		rc = read_lock(st, txn, refs[i].table, refs[i].row, a, &out[i]);
		out[i].cells = NULL;
		out[i].ncells = 0;
	}
	mdb_txn_abort(txn);
	return rc;
}

static int in_range_lo(const store_range *r, const MDB_val *k)
{
	int c;

	if (!r->lo.size)
		return 1;
	c = cmp_bytes(k->mv_data, k->mv_size, r->lo.data, r->lo.size);
	return r->lo_excl ? c > 0 : c >= 0;
}

static int in_range_hi(const store_range *r, const MDB_val *k)
{
	return !r->hi.size || cmp_bytes(k->mv_data, k->mv_size, r->hi.data, r->hi.size) < 0;
}

int store_scan_rows(store *st, const store_table *t, const store_range *r,
                    int reverse, const store_filter *f, size_t max_rows,
                    mrtx_arena *a, store_row **rows, size_t *nrows, int *more)
{
	MDB_txn *txn = NULL;
	MDB_cursor *cur = NULL;
	MDB_val k, v;
	size_t cap = 0;
	int rc, op;

	*rows = NULL;
	*nrows = 0;
	*more = 0;
	if ((rc = STORE_FAULT(st, "scan (injected fault)")))
		return rc;
	if ((rc = txn_begin(st, MDB_RDONLY, &txn)))
		return rc;
	if ((rc = mdb_cursor_open(txn, t->dbi_lock, &cur))) {
		rc = lmdb_err(st, rc, "open cursor");
		goto done;
	}
	/* Position on the first row of the range in scan order. */
	if (!reverse) {
		if (r->lo.size) {
			k = mv(r->lo.data, r->lo.size);
			rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
			if (rc == 0 && !in_range_lo(r, &k))
				rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
		} else
			rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
		op = MDB_NEXT;
	} else {
		if (r->hi.size) {
			k = mv(r->hi.data, r->hi.size);
			rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
			rc = rc == 0 ? mdb_cursor_get(cur, &k, &v, MDB_PREV) :
			     rc == MDB_NOTFOUND ? mdb_cursor_get(cur, &k, &v, MDB_LAST) : rc;
		} else
			rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
		op = MDB_PREV;
	}
	for (; rc == 0; rc = mdb_cursor_get(cur, &k, &v, op)) {
		store_row *row;

		if (reverse ? !in_range_lo(r, &k) : !in_range_hi(r, &k))
			break;
		if (max_rows && *nrows == max_rows) {
			*more = 1;
			break;
		}
		if (!(*rows = arr_grow(a, *rows, *nrows, &cap, sizeof(**rows)))) {
			rc = MRTX_ENOMEM;
			goto done;
		}
		row = &(*rows)[(*nrows)++];
		row->row = MRTX_BYTES(arena_dup(a, k.mv_data, k.mv_size), k.mv_size);
		row->lock = MRTX_BYTES(arena_dup(a, v.mv_data, v.mv_size), v.mv_size);
		row->has_lock = 1;
		if (!row->row.data || !row->lock.data) {
			rc = MRTX_ENOMEM;
			goto done;
		}
		if ((rc = read_cells(st, txn, t, row->row, f, a, row)))
			goto done;
	}
	rc = (rc == MDB_NOTFOUND || rc == 0) ? 0 : lmdb_err(st, rc, "scan");
done:
	if (cur)
		mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	if (rc) {
		/* No half-filled row reaches the caller. */
		*rows = NULL;
		*nrows = 0;
		*more = 0;
	}
	return rc;
}

/* --------------------------------------------------------------- writes */

/* Delete every data key starting with prefix. */
static int del_prefix(MDB_txn *txn, MDB_dbi dbi, const uint8_t *prefix, size_t plen)
{
	MDB_cursor *cur;
	MDB_val k = mv(prefix, plen), v;
	int rc;

	if ((rc = mdb_cursor_open(txn, dbi, &cur)))
		return rc;
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	while (rc == 0 && k.mv_size >= plen && memcmp(k.mv_data, prefix, plen) == 0) {
		if ((rc = mdb_cursor_del(cur, 0)))
			break;
		/* After a delete the cursor already stands on the next item. */
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

static int apply_mut(MDB_txn *txn, const store_op *op, const store_mut *m)
{
	uint8_t key[MRTX_MAX_KEY + 16];
	size_t klen;
	MDB_val k, v;
	int rc;

	klen = keyenc_put(key, op->row.data, op->row.size);
	if (m->kind == STORE_MUT_DEL_ROW)
		return del_prefix(txn, op->table->dbi_data, key, klen);
	key[klen++] = m->fid;
	if (m->kind == STORE_MUT_DEL_FAMILY)
		return del_prefix(txn, op->table->dbi_data, key, klen);
	if (klen + m->qual.size > MRTX_MAX_KEY)
		return MDB_BAD_VALSIZE;
	if (m->qual.size)
		memcpy(key + klen, m->qual.data, m->qual.size);
	klen += m->qual.size;
	k = mv(key, klen);
	if (m->kind == STORE_MUT_PUT) {
		v = mv(m->value.data, m->value.size);
		return mdb_put(txn, op->table->dbi_data, &k, &v, 0);
	}
	rc = mdb_del(txn, op->table->dbi_data, &k, NULL);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Apply one op inside txn.  Sets op->result to 0 or MRTX_CONFLICT; a
 * nonzero return is an LMDB error that breaks txn. */
static int apply_op(MDB_txn *txn, store_op *op)
{
	MDB_val k = mv(op->row.data, op->row.size), v;
	int rc = mdb_get(txn, op->table->dbi_lock, &k, &v), match;

	if (rc && rc != MDB_NOTFOUND)
		return rc;
	if (op->expect_absent)
		match = rc == MDB_NOTFOUND;
	else
		match = rc == 0 && v.mv_size == op->expect_lock.size &&
		        memcmp(v.mv_data, op->expect_lock.data, v.mv_size) == 0;
	if (!match) {
		op->result = MRTX_CONFLICT;
		return 0;
	}
	for (size_t i = 0; i < op->nmuts; i++)
		if ((rc = apply_mut(txn, op, &op->muts[i])))
			return rc;
	if (op->delete_lock) {
		rc = mdb_del(txn, op->table->dbi_lock, &k, NULL);
		rc = rc == MDB_NOTFOUND ? 0 : rc;
	} else {
		v = mv(op->new_lock.data, op->new_lock.size);
		rc = mdb_put(txn, op->table->dbi_lock, &k, &v, 0);
	}
	if (rc == 0)
		op->result = 0;
	return rc;
}

/* Run ops[0..n) in one write transaction. */
static int write_txn(store *st, store_op *ops, size_t n)
{
	MDB_txn *txn;
	int rc;

	for (size_t i = 0; i < n; i++)
		ops[i].result = MRTX_ESTORE;
	if ((rc = txn_begin(st, 0, &txn)))
		goto fail;
	for (size_t i = 0; i < n; i++)
		if ((rc = apply_op(txn, &ops[i]))) {
			mdb_txn_abort(txn);
			rc = lmdb_err(st, rc, "write row");
			goto fail;
		}
	if ((rc = mdb_txn_commit(txn))) {
		rc = lmdb_err(st, rc, "commit");
		goto fail;
	}
	return 0;
fail:
	for (size_t i = 0; i < n; i++)
		ops[i].result = rc;
	return rc;
}

int store_write_rows(store *st, store_op *ops, size_t n)
{
	int first = 0;

	if (n == 0)
		return 0;
	if ((first = STORE_FAULT(st, "write rows (injected fault)"))) {
		for (size_t i = 0; i < n; i++)
			ops[i].result = first;
		return first;
	}
	atomic_fetch_add_explicit(&st->write_calls, 1, memory_order_relaxed);
	if (!st->unbatched)
		return write_txn(st, ops, n);
	for (size_t i = 0; i < n; i++) {
		int rc = write_txn(st, &ops[i], 1), fp;

		if ((fp = FAILPOINT(FP_STORE_AFTER_ROW_WRITE)) && rc == 0)
			ops[i].result = rc = fp; /* applied, but reported failed */
		if (rc && !first)
			first = rc;
	}
	return first;
}

/* ----------------------------------------------------------- open/close */

static int meta_init(store *st)
{
	MDB_txn *txn;
	MDB_dbi main_dbi;
	MDB_cursor *cur = NULL;
	MDB_val k, v;
	MDB_stat ms;
	uint32_t fmt;
	int rc;

	if ((rc = txn_begin(st, 0, &txn)))
		return rc;
	rc = mdb_dbi_open(txn, "mrtx.meta", 0, &st->dbi_meta);
	if (rc == MDB_NOTFOUND) {
		/* A brand-new environment, or someone else's LMDB database. */
		if ((rc = mdb_dbi_open(txn, NULL, 0, &main_dbi)) ||
		    (rc = mdb_stat(txn, main_dbi, &ms))) {
			rc = lmdb_err(st, rc, "read metadata");
			goto fail;
		}
		if (ms.ms_entries) {
			rc = mrtx__seterr(MRTX_ENOTSTORE, "%s holds an LMDB database that is not an "
			                  "mrtx store; refusing to touch it", st->path);
			goto fail;
		}
		fmt = META_FORMAT;
		if (RAND_bytes(st->id, sizeof(st->id)) != 1) {
			rc = mrtx__seterr(MRTX_ESTORE, "RAND_bytes failed creating the store id");
			goto fail;
		}
		if ((rc = mdb_dbi_open(txn, "mrtx.meta", MDB_CREATE, &st->dbi_meta)))
			goto lmdb_fail;
		k = mv("format", 6);
		v = mv(&fmt, sizeof(fmt));
		if ((rc = mdb_put(txn, st->dbi_meta, &k, &v, 0)))
			goto lmdb_fail;
		k = mv("store_id", 8);
		v = mv(st->id, sizeof(st->id));
		if ((rc = mdb_put(txn, st->dbi_meta, &k, &v, 0)))
			goto lmdb_fail;
	} else if (rc == MDB_INCOMPATIBLE) {
		rc = mrtx__seterr(MRTX_ENOTSTORE, "%s holds an LMDB database that is not an "
		                  "mrtx store; refusing to touch it", st->path);
		goto fail;
	} else if (rc) {
		goto lmdb_fail;
	} else {
		k = mv("format", 6);
		if ((rc = mdb_get(txn, st->dbi_meta, &k, &v)) || v.mv_size != 4) {
			rc = mrtx__seterr(MRTX_ECORRUPT, "%s: store format record missing", st->path);
			goto fail;
		}
		memcpy(&fmt, v.mv_data, 4);
		if (fmt != META_FORMAT) {
			rc = mrtx__seterr(MRTX_ENOTSTORE, "%s: store format %u is not supported by "
			                  "this mrtx (format %u)", st->path, fmt, META_FORMAT);
			goto fail;
		}
		k = mv("store_id", 8);
		if ((rc = mdb_get(txn, st->dbi_meta, &k, &v)) || v.mv_size != sizeof(st->id)) {
			rc = mrtx__seterr(MRTX_ECORRUPT, "%s: store id record missing", st->path);
			goto fail;
		}
		memcpy(st->id, v.mv_data, sizeof(st->id));
		/* Attach every existing table now, while no other txn runs. */
		if ((rc = mdb_cursor_open(txn, st->dbi_meta, &cur)))
			goto lmdb_fail;
		k = mv("t/", 2);
		for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
		     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
			char name[MRTX_MAX_NAME + 1];
			store_table *t;

			if (k.mv_size < 3 || memcmp(k.mv_data, "t/", 2) != 0)
				break;
			if (k.mv_size - 2 > MRTX_MAX_NAME) {
				rc = mrtx__seterr(MRTX_ECORRUPT, "%s: table name too long in metadata",
				                  st->path);
				goto fail;
			}
			memcpy(name, (char *)k.mv_data + 2, k.mv_size - 2);
			name[k.mv_size - 2] = '\0';
			if ((rc = table_attach(st, txn, name, &v, 0, &t)) ||
			    (rc = table_publish(st, t)))
				goto fail;
		}
		mdb_cursor_close(cur);
		cur = NULL;
		if (rc != MDB_NOTFOUND && rc != 0)
			goto lmdb_fail;
	}
	if ((rc = mdb_txn_commit(txn)))
		return lmdb_err(st, rc, "open");
	return 0;
lmdb_fail:
	rc = lmdb_err(st, rc, "initialise metadata");
fail:
	if (cur)
		mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	return rc;
}

static void store_destroy(store *st)
{
	size_t n = atomic_load(&st->ntables);

	if (st->env)
		mdb_env_close(st->env);
	for (size_t i = 0; i < n; i++)
		mrtx__free(st->tables[i]);
	pthread_mutex_destroy(&st->mu);
	mrtx__free(st->path);
	mrtx__free(st);
}

static int env_open(store *st, const store_opts *o)
{
	unsigned flags = MDB_NOTLS;
	MDB_envinfo info;
	int rc, dead;

	if (o->durability == MRTX_NOMETASYNC)
		flags |= MDB_NOMETASYNC;
	else if (o->durability == MRTX_NOSYNC)
		flags |= MDB_NOSYNC;
	if ((rc = mdb_env_create(&st->env)))
		return lmdb_err(st, rc, "create environment");
	if ((rc = mdb_env_set_maxdbs(st->env, 2 * MRTX_MAX_TABLES + 2)) ||
	    (rc = mdb_env_set_maxreaders(st->env, 1022)))
		return lmdb_err(st, rc, "configure environment");
	rc = mdb_env_open(st->env, st->path, flags, o->file_mode ? o->file_mode : 0600);
	if (rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH)
		return mrtx__seterr(MRTX_ENOTSTORE, "%s: not an mrtx store (%s)", st->path,
		                    mdb_strerror(rc));
	if (rc == EACCES || rc == EPERM || rc == EROFS)
		return mrtx__seterr(MRTX_ESTORE, "%s: cannot open store: %s", st->path, strerror(rc));
	if (rc)
		return lmdb_err(st, rc, "open environment");
	/*
	 * The map size is set after opening, when the file's own size is known:
	 * a new store gets map_size (default 1 GiB); an existing one grows to
	 * map_size if that is larger and never shrinks (LMDB would otherwise
	 * take a smaller request as long as the data fits).  No transaction of
	 * this environment is active yet, as mdb_env_set_mapsize requires.
	 */
	if ((rc = mdb_env_info(st->env, &info)))
		return lmdb_err(st, rc, "read environment info");
	{
		size_t want = o->map_size ? o->map_size : DEFAULT_MAP;
		int fresh = info.me_last_pgno <= 1; /* only the two meta pages */

		if ((fresh && want != info.me_mapsize) || want > info.me_mapsize) {
			if ((rc = mdb_env_set_mapsize(st->env, want)))
				return lmdb_err(st, rc, "set map size");
		}
	}
	if ((rc = mdb_env_info(st->env, &info)))
		return lmdb_err(st, rc, "read environment info");
	st->map_size = info.me_mapsize;
	/* Slots of killed processes would pin old snapshots and grow the file. */
	if (mdb_reader_check(st->env, &dead) == 0 && dead > 0)
		atomic_fetch_add(&st->stale_cleared, dead);
	return 0;
}

int store_open(store **out, const char *path, const store_opts *o)
{
	struct stat sb;
	store *st;
	int rc;

	if (stat(path, &sb) != 0) {
		if (errno != ENOENT)
			return mrtx__seterr(MRTX_ESTORE, "%s: %s", path, strerror(errno));
		if (mkdir(path, 0700) != 0 && errno != EEXIST)
			return mrtx__seterr(MRTX_ESTORE, "cannot create store directory %s: %s", path,
			                    strerror(errno));
		if (stat(path, &sb) != 0)
			return mrtx__seterr(MRTX_ESTORE, "%s: %s", path, strerror(errno));
	}
	if (!S_ISDIR(sb.st_mode))
		return mrtx__seterr(MRTX_ENOTSTORE, "%s is not a directory (an mrtx store is a "
		                    "directory)", path);
	pthread_mutex_lock(&registry_mu);
	for (st = registry; st; st = st->next)
		if (st->dev == sb.st_dev && st->ino == sb.st_ino && st->pid == getpid()) {
			st->refs++;
			pthread_mutex_unlock(&registry_mu);
			*out = st;
			return 0;
		}
	rc = MRTX_ENOMEM;
	if (!(st = mrtx__calloc(1, sizeof(*st))) || !(st->path = mrtx__strdup(path))) {
		mrtx__free(st);
		rc = mrtx__seterr(MRTX_ENOMEM, "out of memory opening %s", path);
		goto done;
	}
	pthread_mutex_init(&st->mu, NULL);
	st->dev = sb.st_dev;
	st->ino = sb.st_ino;
	st->pid = getpid();
	st->refs = 1;
	st->unbatched = o->unbatched;
	if ((rc = env_open(st, o)) || (rc = meta_init(st))) {
		store_destroy(st);
		goto done;
	}
	st->next = registry;
	registry = st;
	*out = st;
done:
	pthread_mutex_unlock(&registry_mu);
	return rc;
}

void store_close(store *st)
{
	store **pp;

	if (!st)
		return;
	pthread_mutex_lock(&registry_mu);
	if (--st->refs > 0) {
		pthread_mutex_unlock(&registry_mu);
		return;
	}
	for (pp = &registry; *pp; pp = &(*pp)->next)
		if (*pp == st) {
			*pp = st->next;
			break;
		}
	pthread_mutex_unlock(&registry_mu);
	if (st->pid != getpid()) {
		/* A forked child must not close its parent's environment's locks. */
		return;
	}
	store_destroy(st);
}

const char *store_path(const store *st)
{
	return st->path;
}

int store_is_unbatched(const store *st)
{
	return st->unbatched;
}

const uint8_t *store_id(const store *st)
{
	return st->id;
}

void store_counters_get(store *st, store_counters *out)
{
	out->write_calls = atomic_load(&st->write_calls);
	out->write_txns = atomic_load(&st->write_txns);
	out->read_txns = atomic_load(&st->read_txns);
}

/* mdb_reader_list prints a header line, then one line per live reader. */
static int count_reader(const char *msg, void *ctx)
{
	if (msg[0] != '(' && !strstr(msg, "pid"))
		++*(unsigned *)ctx;
	return 0;
}

int store_get_info(store *st, store_info *out)
{
	MDB_envinfo info;
	MDB_stat ms;
	int rc, dead = 0;

	memset(out, 0, sizeof(*out));
	if ((rc = mdb_reader_check(st->env, &dead)) ||
	    (rc = mdb_env_info(st->env, &info)) || (rc = mdb_env_stat(st->env, &ms)))
		return lmdb_err(st, rc, "stat");
	out->map_size = info.me_mapsize;
	out->page_size = ms.ms_psize;
	out->used_bytes = (info.me_last_pgno + 1) * (size_t)ms.ms_psize;
	out->max_readers = info.me_maxreaders;
	out->num_readers = 0;
	mdb_reader_list(st->env, count_reader, &out->num_readers);
	out->stale_readers_cleared = atomic_fetch_add(&st->stale_cleared, dead) + dead;
	return 0;
}

/* ------------------------------------------- opaque metadata records */

/* Keys "x/<name>" with x not 't': tables and the fixed records stay private. */
static int meta_key_check(store *st, const char *key, size_t minlen)
{
	size_t n = key ? strlen(key) : 0;

	if (n < minlen || n > MRTX_MAX_NAME + 2 || key[1] != '/' || key[0] == 't' ||
	    key[0] < 'a' || key[0] > 'z')
		return mrtx__seterr(MRTX_EINVAL, "store %s: '%s' is not a metadata record key",
		                    st->path, key ? key : "(null)");
	return 0;
}

int store_meta_get(store *st, const char *key, mrtx_arena *a, mrtx_bytes *out)
{
	MDB_txn *txn;
	MDB_val k, v;
	int rc;

	if ((rc = meta_key_check(st, key, 3)))
		return rc;
	if ((rc = txn_begin(st, MDB_RDONLY, &txn)))
		return rc;
	k = mv(key, strlen(key));
	rc = mdb_get(txn, st->dbi_meta, &k, &v);
	if (rc == 0) {
		if ((out->data = arena_dup(a, v.mv_data, v.mv_size)))
			out->size = v.mv_size;
		else
			rc = MRTX_ENOMEM;
	} else if (rc == MDB_NOTFOUND) {
		rc = mrtx__seterr(MRTX_NOTFOUND, "store %s: no metadata record '%s'", st->path, key);
	} else {
		rc = lmdb_err(st, rc, "read metadata");
	}
	mdb_txn_abort(txn);
	return rc;
}

int store_meta_put_new(store *st, const char *key, mrtx_bytes value)
{
	MDB_txn *txn = NULL;
	MDB_val k, v, old;
	int rc;

	if ((rc = meta_key_check(st, key, 3)))
		return rc;
	k = mv(key, strlen(key));
	v = mv(value.data, value.size);
	pthread_mutex_lock(&st->mu);
	if ((rc = txn_begin(st, 0, &txn)))
		goto done;
	rc = mdb_get(txn, st->dbi_meta, &k, &old);
	if (rc == 0) {
		rc = (old.mv_size == value.size && memcmp(old.mv_data, value.data, value.size) == 0)
		     ? 0 : mrtx__seterr(MRTX_EEXIST, "store %s: metadata record '%s' exists with "
		                        "other content", st->path, key);
		goto done;
	}
	if (rc != MDB_NOTFOUND) {
		rc = lmdb_err(st, rc, "read metadata");
		goto done;
	}
	if ((rc = mdb_put(txn, st->dbi_meta, &k, &v, 0))) {
		rc = lmdb_err(st, rc, "write metadata");
		goto done;
	}
	rc = mdb_txn_commit(txn);
	txn = NULL;
	if (rc)
		rc = lmdb_err(st, rc, "write metadata");
done:
	if (txn)
		mdb_txn_abort(txn);
	pthread_mutex_unlock(&st->mu);
	return rc;
}

int store_meta_list(store *st, const char *prefix, mrtx_arena *a,
                    int (*fn)(const char *key, mrtx_bytes value, void *payload),
                    void *payload)
{
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_val k, v;
	size_t plen;
	int rc, op = MDB_SET_RANGE;

	if ((rc = meta_key_check(st, prefix, 2)))
		return rc;
	plen = strlen(prefix);
	if ((rc = txn_begin(st, MDB_RDONLY, &txn)))
		return rc;
	if ((rc = mdb_cursor_open(txn, st->dbi_meta, &cur))) {
		mdb_txn_abort(txn);
		return lmdb_err(st, rc, "list metadata");
	}
	k = mv(prefix, plen);
	for (;;) {
		char key[MRTX_MAX_NAME + 3];
		mrtx_bytes val;

		rc = mdb_cursor_get(cur, &k, &v, op);
		op = MDB_NEXT;
		if (rc == MDB_NOTFOUND || (rc == 0 && (k.mv_size < plen ||
		                                       memcmp(k.mv_data, prefix, plen) != 0))) {
			rc = 0;
			break;
		}
		if (rc) {
			rc = lmdb_err(st, rc, "list metadata");
			break;
		}
		if (k.mv_size >= sizeof(key)) {
			rc = mrtx__seterr(MRTX_ECORRUPT, "store %s: metadata key of %zu bytes",
			                  st->path, k.mv_size);
			break;
		}
		memcpy(key, k.mv_data, k.mv_size);
		key[k.mv_size] = '\0';
		if (!(val.data = arena_dup(a, v.mv_data, v.mv_size))) {
			rc = MRTX_ENOMEM;
			break;
		}
		val.size = v.mv_size;
		if ((rc = fn(key, val, payload)))
			break;
	}
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	return rc;
}
