/*
 * lmdb_meta.c - store metadata in LMDB: the format record, the store id,
 * tables and their families, and opaque records for upper layers (index
 * declarations).
 *
 *   DBI "mrtx.meta"   "format" -> u32 LE, "store_id" -> 16 random bytes,
 *                     "t/<table>" -> u8 nfamilies, (u8 len, name)...,
 *                     other "x/<name>" -> opaque (store_meta_*)
 *   DBI "d/<table>"   enc(row) . family-id . qualifier -> value,
 *                     enc(row) . 0xFF -> lock record (lmdb_rw.c)
 */
#include "lmdb_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "keyenc.h"

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
	MDB_dbi dd;
	int rc;

	if ((rc = table_parse(name, meta, &t)))
		return rc;
	snprintf(dname, sizeof(dname), "d/%s", name);
	if ((rc = mdb_dbi_open(txn, dname, dbflags, &dd))) {
		mrtx__free(t);
		if (rc == MDB_NOTFOUND)
			return mrtx__seterr(MRTX_ECORRUPT, "table '%s' is in the metadata but its "
			                    "databases are missing", name);
		return lmdb_err(st, rc, "open table");
	}
	t->dbi_data = dd;
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
	if ((rc = lmdb_txn_begin(st, 0, &txn)))
		goto done;
	rc = mdb_get(txn, st->dbi_meta, &k, &old);
	if (rc == 0) {
		rc = (old.mv_size == mlen && memcmp(old.mv_data, meta, mlen) == 0) ? 0 :
		     mrtx__seterr(MRTX_EEXIST, "table '%s' exists with different families", name);
		lmdb_wabort(st, txn);
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
	rc = lmdb_commit(st, txn, 1);
	txn = NULL;
	if (rc) {
		mrtx__free(t);
		rc = lmdb_err(st, rc, "create table");
		goto done;
	}
	rc = table_publish(st, t);
done:
	if (txn)
		lmdb_wabort(st, txn);
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
	if ((rc = lmdb_txn_begin(st, MDB_RDONLY, &txn)))
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
	if ((rc = lmdb_txn_begin(st, MDB_RDONLY, &txn)))
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
			if ((rc = lmdb_txn_begin(st, MDB_RDONLY, &txn)))
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

int lmdb_meta_init(store *st)
{
	MDB_txn *txn;
	MDB_dbi main_dbi;
	MDB_cursor *cur = NULL;
	MDB_val k, v;
	MDB_stat ms;
	uint32_t fmt;
	int rc;

	if ((rc = lmdb_txn_begin(st, 0, &txn)))
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
	if ((rc = lmdb_commit(st, txn, 1)))
		return lmdb_err(st, rc, "open");
	return 0;
lmdb_fail:
	rc = lmdb_err(st, rc, "initialise metadata");
fail:
	if (cur)
		mdb_cursor_close(cur);
	lmdb_wabort(st, txn);
	return rc;
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
	if ((rc = lmdb_txn_begin(st, MDB_RDONLY, &txn)))
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
	if ((rc = lmdb_txn_begin(st, 0, &txn)))
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
	rc = lmdb_commit(st, txn, 1);
	txn = NULL;
	if (rc)
		rc = lmdb_err(st, rc, "write metadata");
done:
	if (txn)
		lmdb_wabort(st, txn);
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
	if ((rc = lmdb_txn_begin(st, MDB_RDONLY, &txn)))
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

