/*
 * lmdb_meta.c - store metadata in LMDB: the format record, the store id,
 * tables and their families, and opaque records for upper layers (index
 * declarations).
 *
 * Since format 3 everything is in LMDB's unnamed database (named databases
 * cost every transaction a lookup of the database record, and every write
 * one more dirty page); since format 7 every value below ends with its
 * seal (lmdb_seal.h), which lmdb_get and lmdb_put add and check, and
 * since format 8 the format record tallies the others:
 *
 *   0x00 "format"      -> u32 LE 8, the tally of the other metadata
 *                         records: u32 LE count, u64 LE digest
 *                         (lmdb_mcount.c; bare, without a seal or a
 *                         tally, before 7)
 *   0x00 "store_id"    -> 16 random bytes
 *   0x00 "next_table"  -> u16 BE, the prefix the next new table gets
 *   0x00 "gen"         -> u64 LE, bumped by every new "x/" record (absent: 0)
 *   0x00 "unsettled"   -> u64 LE, unsettled lock records (format 5;
 *                         lmdb_unsettled.c)
 *   0x00 "t/<table>"   -> u16 BE prefix P, u8 nfamilies, (u8 len, name)...
 *   0x00 "x/<name>"    -> opaque records of upper layers (store_meta_*)
 *   P . ...            -> the table's cells and lock records (lmdb_read.c),
 *                         P >= 0x0100, so metadata sorts first
 */
#include "storage/lmdb/lmdb_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "storage/keyenc.h"

/* --------------------------------------------------------------- tables */

/* A metadata key: 0x00 . s, into buf (MRTX_MAX_NAME + 4 bytes). */
static MDB_val meta_key(char *buf, const char *s)
{
	size_t n = strlen(s);

	buf[0] = '\0';
	memcpy(buf + 1, s, n);
	return mv(buf, n + 1);
}

/* 0x00 "t/" name: a table's record. */
MDB_val lmdb_table_key(char *buf, const char *name)
{
	size_t n = strlen(name);

	memcpy(buf, "\0t/", 3);
	memcpy(buf + 3, name, n);
	return mv(buf, n + 3);
}

/*
 * A table record: u16 BE prefix, u8 family count, (u8 len, name) per
 * family, then optionally one byte 0x01: the table is FROZEN (a drop or
 * truncate is settling it, lmdb_ddl.c).  Returns the offset of the
 * families in *fams_at.
 */
int lmdb_table_peek(const MDB_val *v, unsigned *kp, int *frozen, size_t *nfam)
{
	const uint8_t *p = v->mv_data, *e = p + v->mv_size;

	if (v->mv_size < TPFX + 1 || (*kp = (unsigned)p[0] << 8 | p[1]) < KP_FIRST ||
	    *kp == 0xFFFFu || (*nfam = p[TPFX]) == 0)
		return MRTX_ECORRUPT;
	p += TPFX + 1;
	for (size_t i = 0; i < *nfam; i++) {
		size_t len;

		if (p >= e || (len = *p++) == 0 || len > (size_t)(e - p))
			return MRTX_ECORRUPT;
		p += len;
	}
	if (p == e)
		*frozen = 0;
	else if (e - p == 1 + 8 && *p == 1) /* the mark: 1, then its owner's token */
		*frozen = 1;
	else
		return MRTX_ECORRUPT;
	return 0;
}

void lmdb_table_dropped(const MDB_val *v, uint64_t bits[4])
{
	const uint8_t *p = v->mv_data;
	size_t nfam = p[TPFX];

	memset(bits, 0, 4 * sizeof(bits[0]));
	p += TPFX + 1;
	for (size_t i = 0; i < nfam; i++) {
		size_t len = *p++;

		if (len == 1 && *p == STORE_DROPPED_NAME[0])
			bits[i >> 6] |= (uint64_t)1 << (i & 63);
		p += len;
	}
}

int lmdb_table_parse(const char *name, const MDB_val *v, store_table **out)
{
	const uint8_t *p = v->mv_data;
	size_t nfam, namelen = strlen(name), total;
	unsigned kp;
	int frozen;
	store_table *t;
	char **fams, *s;

	if (lmdb_table_peek(v, &kp, &frozen, &nfam))
		return mrtx__seterr(MRTX_ECORRUPT, "metadata of table '%s' is malformed", name);
	p += TPFX + 1;
	/* room for every family a table may get (store_add_family) */
	total = sizeof(lmdb_table) + MRTX_MAX_FAMILIES * sizeof(char *) + namelen + 1 +
	        v->mv_size;
	if (!(t = mrtx__calloc(1, total)))
		return mrtx__seterr(MRTX_ENOMEM, "out of memory loading table '%s'", name);
	fams = (char **)(LT(t) + 1);
	s = (char *)(fams + MRTX_MAX_FAMILIES);
	memcpy(s, name, namelen + 1);
	t->name = s;
	s += namelen + 1;
	for (size_t i = 0; i < nfam; i++) {
		size_t len = *p++;

		memcpy(s, p, len);
		s[len] = '\0';
		fams[i] = s;
		s += len + 1;
		p += len;
	}
	t->families = (const char *const *)fams;
	atomic_init(&t->nfamilies, nfam);
	LT(t)->nfam0 = nfam;
	LT(t)->kp = kp;
	t->ident = kp;
	atomic_init(&t->state, frozen ? STORE_T_FROZEN : STORE_T_LIVE);
	{
		uint64_t bits[4];

		lmdb_table_dropped(v, bits);
		if (store_table_mark_dropped(t, bits)) {
			lmdb_table_free(t);
			return MRTX_ENOMEM;
		}
	}
	*out = t;
	return 0;
}

void lmdb_table_free(store_table *t)
{
	if (!t)
		return;
	for (size_t i = LT(t)->nfam0; i < t->nfamilies; i++)
		mrtx__free((void *)(uintptr_t)t->families[i]);
	store_table_free_policies(t);
	mrtx__free(t);
}

/* strcmp(a, b) == 0, inline: names are short and looked up on every call. */
static inline int name_eq(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return *a == *b;
}

/* FNV-1a of a name, reduced to a slot of st->tslot. */
static size_t name_slot(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h & (TABLE_SLOTS - 1);
}

static store_table *table_lookup(store *st, const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = name_slot(name);; i = (i + 1) & (TABLE_SLOTS - 1)) {
		store_table *t = atomic_load_explicit(&st->tslot[i], memory_order_acquire);

		if (!t)
			return NULL; /* never full: at most TABLES_CAP of TABLE_SLOTS */
		if (name_eq(t->name, name))
			return atomic_load_explicit(&t->state, memory_order_acquire) ==
			       STORE_T_GONE ? NULL : t;
	}
}

/* Publish a parsed table (caller holds st->mu, or is opening the store). */
static int table_publish(store *st, store_table *t)
{
	size_t n = atomic_load(&st->ntables);

	if (n >= TABLES_CAP) {
		lmdb_table_free(t);
		return mrtx__seterr(MRTX_ETOOBIG, "store %s: this process has attached %u tables "
		                    "(dropped ones included); close every handle of the store "
		                    "and open it again", st->path, TABLES_CAP);
	}
	for (size_t i = 0; i < n; i++)
		if (LT(st->tables[i])->kp == LT(t)->kp &&
		    atomic_load(&st->tables[i]->state) != STORE_T_GONE) {
			int rc = mrtx__seterr(MRTX_ECORRUPT, "store %s: tables '%s' and '%s' share "
			                      "key prefix %#x", st->path, st->tables[i]->name,
			                      t->name, LT(t)->kp);
			lmdb_table_free(t);
			return rc;
		}
	t->id = (unsigned)n;
	st->tables[n] = t;
	for (size_t i = name_slot(t->name);; i = (i + 1) & (TABLE_SLOTS - 1)) {
		store_table *o = atomic_load_explicit(&st->tslot[i], memory_order_relaxed);

		/* empty, or the dropped table of the same name: take its slot */
		if (!o || name_eq(o->name, t->name)) {
			if (o)
				atomic_store(&o->state, STORE_T_GONE);
			atomic_store_explicit(&st->tslot[i], t, memory_order_release);
			break;
		}
	}
	atomic_store_explicit(&st->ntables, n + 1, memory_order_release);
	return 0;
}

/* ---- version policies: 0x00 "p/" name -> per family (u32 max, u32 min,
 * u64 ttl_ms), LE; absent: one version each (DESIGN §3.2) ---- */


static MDB_val policy_key(char *buf, const char *name)
{
	size_t n = strlen(name);

	memcpy(buf, "\0p/", 3);
	memcpy(buf + 3, name, n);
	return mv(buf, 3 + n);
}

/* Give t its policies, from the record in txn (none: one version each);
 * a set equal to t's current one is kept.  Caller holds st->mu, or is
 * opening the store (publications of one table are serialised). */
int lmdb_table_load_policy(store *st, MDB_txn *txn, store_table *t)
{
	char kb[MRTX_MAX_NAME + 4];
	MDB_val k = policy_key(kb, t->name), v;
	store_polset *pol;
	const store_polset *cur = atomic_load(&t->pols);
	int rc = lmdb_get(txn, st->dbi, &k, &v);

	if (rc == MDB_NOTFOUND)
		return 0; /* (a record is never removed from a live table) */
	if (rc)
		return lmdb_err(st, rc, "read table policies");
	if (cur && cur->n * STORE_POL_SIZE == v.mv_size) {
		uint8_t b[STORE_POL_SIZE];
		size_t i;

		for (i = 0; i < cur->n; i++) {
			store_policy_put(b, &cur->p[i]);
			if (memcmp(b, (const uint8_t *)v.mv_data + i * STORE_POL_SIZE, sizeof(b)))
				break;
		}
		if (i == cur->n)
			return 0;
	}
	if ((rc = store_policies_parse(MRTX_BYTES(v.mv_data, v.mv_size), &pol)) == MRTX_ENOMEM)
		return mrtx__seterr(MRTX_ENOMEM, "out of memory loading table '%s'", t->name);
	if (rc)
		return mrtx__seterr(MRTX_ECORRUPT, "%s: the version policies of table '%s' are "
		                    "malformed", st->path, t->name);
	store_policies_publish(t, pol);
	return 0;
}

int lmdb_store_create_table(store *st, const char *name, const char *const *families,
                            size_t nfamilies, const store_policy *pol)
{
	uint8_t pbuf[MRTX_MAX_FAMILIES * STORE_POL_SIZE] = { 0 }; /* (filled under the lock) */
	char pkey[MRTX_MAX_NAME + 4];
	MDB_val polk, pv = mv(pbuf, pol ? nfamilies * STORE_POL_SIZE : 0), oldp;
	uint8_t meta[TPFX + 1 + MRTX_MAX_FAMILIES * (MRTX_MAX_NAME + 1)];
	char key[MRTX_MAX_NAME + 4], nkey[16];
	size_t mlen = TPFX + 1;
	store_table *t = NULL;
	MDB_txn *txn = NULL;
	MDB_val k, v, old, nk, nv;
	unsigned kp;
	uint8_t next[TPFX];
	int rc;

	if ((rc = store_check_table_spec(name, families, nfamilies)))
		return rc;
	polk = policy_key(pkey, name); /* (after the check: pkey holds a name of the limit) */
	meta[TPFX] = (uint8_t)nfamilies;
	for (size_t i = 0; i < nfamilies; i++) {
		size_t len = strlen(families[i]);

		meta[mlen++] = (uint8_t)len;
		memcpy(meta + mlen, families[i], len);
		mlen += len;
	}
	k = lmdb_table_key(key, name);
	v = mv(meta, mlen);

	pthread_mutex_lock(&st->mu);
	if ((rc = lmdb_txn_begin(st, 0, &txn)))
		goto done;
	for (size_t i = 0; pol && i < nfamilies; i++)
		store_policy_put(pbuf + i * STORE_POL_SIZE, &pol[i]);
	rc = lmdb_get(txn, st->dbi, &k, &old);
	if (rc == 0) {
		int prc = lmdb_get(txn, st->dbi, &polk, &oldp);

		if (prc == MDB_NOTFOUND)
			oldp = mv(NULL, 0);
		/* the same families and policies make create idempotent (the prefix
		 * is the store's; a drop's freeze mark may follow them) */
		rc = ((old.mv_size == mlen ||
		       (old.mv_size == mlen + 9 && ((const uint8_t *)old.mv_data)[mlen] == 1)) &&
		      memcmp((uint8_t *)old.mv_data + TPFX, meta + TPFX, mlen - TPFX) == 0) ?
		     ((prc == 0 || prc == MDB_NOTFOUND) && oldp.mv_size == pv.mv_size &&
		      (!pv.mv_size || memcmp(oldp.mv_data, pbuf, pv.mv_size) == 0) ? 0 :
		      mrtx__seterr(MRTX_EEXIST, "table '%s' exists with other version policies",
		                   name)) :
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
	/* The new table's key prefix: the store's next one. */
	nk = meta_key(nkey, "next_table");
	if ((rc = lmdb_get(txn, st->dbi, &nk, &nv)) || nv.mv_size != TPFX) {
		rc = rc && rc != MDB_NOTFOUND ? lmdb_err(st, rc, "read metadata") :
		     mrtx__seterr(MRTX_ECORRUPT, "%s: the next-table record is missing or "
		                  "malformed", st->path);
		goto done;
	}
	kp = (unsigned)((const uint8_t *)nv.mv_data)[0] << 8 | ((const uint8_t *)nv.mv_data)[1];
	if (kp < KP_FIRST) {
		rc = mrtx__seterr(MRTX_ECORRUPT, "%s: the next-table record is malformed",
		                  st->path);
		goto done;
	}
	/* Prefixes are never reused (a stale handle of a dropped table must
	 * not reach a new one's keys), so the store counts its live tables
	 * once it has handed out MRTX_MAX_TABLES prefixes. */
	if (kp >= 0xFFFFu) {
		rc = mrtx__seterr(MRTX_ETOOBIG, "store %s has handed out every table key prefix "
		                  "(tables created and dropped over its life)", st->path);
		goto done;
	}
	if (kp - KP_FIRST >= MRTX_MAX_TABLES) {
		MDB_cursor *cur;
		MDB_val ck = mv("\0t/", 3), cv;
		size_t live = 0;

		if ((rc = mdb_cursor_open(txn, st->dbi, &cur))) {
			rc = lmdb_err(st, rc, "read metadata");
			goto done;
		}
		for (rc = lmdb_cget(cur, &ck, &cv, MDB_SET_RANGE);
		     rc == 0 && ck.mv_size > 3 && memcmp(ck.mv_data, "\0t/", 3) == 0;
		     rc = lmdb_cget(cur, &ck, &cv, MDB_NEXT))
			live++;
		mdb_cursor_close(cur);
		if (rc && rc != MDB_NOTFOUND) {
			rc = lmdb_err(st, rc, "read metadata");
			goto done;
		}
		if (live >= MRTX_MAX_TABLES) {
			rc = mrtx__seterr(MRTX_ETOOBIG, "store %s has the maximum of %u tables",
			                  st->path, MRTX_MAX_TABLES);
			goto done;
		}
	}
	{
		/* A damaged next-table record must not hand out a prefix in use:
		 * no key may start with it yet. */
		uint8_t pk[TPFX] = { (uint8_t)(kp >> 8), (uint8_t)kp };
		MDB_cursor *cur;
		MDB_val ck = mv(pk, TPFX), cv;

		if ((rc = mdb_cursor_open(txn, st->dbi, &cur))) {
			rc = lmdb_err(st, rc, "read metadata");
			goto done;
		}
		rc = lmdb_cget(cur, &ck, &cv, MDB_SET_RANGE);
		mdb_cursor_close(cur);
		if (rc == 0 && ck.mv_size >= TPFX && memcmp(ck.mv_data, pk, TPFX) == 0) {
			rc = mrtx__seterr(MRTX_ECORRUPT, "%s: the next-table record names key prefix "
			                  "%#x, which holds data already", st->path, kp);
			goto done;
		}
		if (rc && rc != MDB_NOTFOUND) {
			rc = lmdb_err(st, rc, "read metadata");
			goto done;
		}
		for (size_t i = 0; i < atomic_load(&st->ntables); i++)
			if (LT(st->tables[i])->kp == kp) {
				rc = mrtx__seterr(MRTX_ECORRUPT, "%s: the next-table record names the "
				                  "key prefix of table '%s'", st->path,
				                  st->tables[i]->name);
				goto done;
			}
	}
	meta[0] = (uint8_t)(kp >> 8);
	meta[1] = (uint8_t)kp;
	next[0] = (uint8_t)((kp + 1) >> 8);
	next[1] = (uint8_t)(kp + 1);
	nv = mv(next, TPFX);
	if ((rc = lmdb_put(txn, st->dbi, &k, &v, 0)) || (rc = lmdb_put(txn, st->dbi, &nk, &nv, 0)) ||
	    (pv.mv_size && (rc = lmdb_put(txn, st->dbi, &polk, &pv, 0)))) {
		rc = lmdb_err(st, rc, "write metadata");
		goto done;
	}
	if ((rc = lmdb_table_parse(name, &v, &t)))
		goto done;
	if ((rc = lmdb_table_load_policy(st, txn, t))) {
		lmdb_table_free(t);
		goto done;
	}
	LT(t)->seen = mdb_txn_id(txn);
	rc = lmdb_commit(st, txn, 1);
	txn = NULL;
	if (rc) {
		lmdb_table_free(t);
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

int lmdb_store_table_find(store *st, const char *name, const store_table **out)
{
	char key[MRTX_MAX_NAME + 4];
	store_table *t;
	lmdb_rtxn rt = { NULL, NULL, NULL, 0, 0, 0, 0 };
	MDB_val k, v;
	int rc;

	if ((t = table_lookup(st, name))) {
		*out = t;
		return 0;
	}
	if (!name || !*name || strlen(name) > MRTX_MAX_NAME)
		return mrtx__seterr(MRTX_ENOTABLE, "no table '%.64s'", name ? name : "(null)");
	/* Maybe another process created it: read its record. */
	pthread_mutex_lock(&st->mu);
	if ((t = table_lookup(st, name))) {
		rc = 0;
		goto done;
	}
	if ((rc = lmdb_rtxn_begin(st, &rt)))
		goto done;
	k = lmdb_table_key(key, name);
	rc = lmdb_get(rt.txn, st->dbi, &k, &v);
	if (rc == MDB_NOTFOUND) {
		rc = mrtx__seterr(MRTX_ENOTABLE, "no table '%s' in store %s", name, st->path);
		goto done;
	}
	if (rc) {
		rc = lmdb_err(st, rc, "read metadata");
		goto done;
	}
	if ((rc = lmdb_table_parse(name, &v, &t)))
		goto done;
	if ((rc = lmdb_table_load_policy(st, rt.txn, t))) {
		lmdb_table_free(t);
		goto done;
	}
	LT(t)->seen = mdb_txn_id(rt.txn);
	rc = table_publish(st, t);
done:
	if (rt.txn)
		lmdb_rtxn_end(st, &rt);
	pthread_mutex_unlock(&st->mu);
	if (rc == 0)
		*out = t;
	return rc;
}

static int table_name_cmp(const void *a, const void *b)
{
	return strcmp((*(store_table *const *)a)->name, (*(store_table *const *)b)->name);
}

int lmdb_store_tables_list(store *st, const store_table ***out, size_t *count)
{
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_val k, v;
	const store_table **arr;
	size_t n;
	int rc, op = MDB_SET_RANGE;

	/* Forget dropped tables; attach every table in the metadata, including
	 * other processes' new ones. */
	if ((rc = lmdb_store_table_refresh(st)))
		return rc;
	if ((rc = lmdb_txn_begin(st, MDB_RDONLY, &txn)))
		return rc;
	if ((rc = mdb_cursor_open(txn, st->dbi, &cur))) {
		mdb_txn_abort(txn);
		return lmdb_err(st, rc, "list tables");
	}
	k = mv("\0t/", 3);
	for (;;) {
		char name[MRTX_MAX_NAME + 1], tk[MRTX_MAX_NAME + 4];
		const store_table *t;

		rc = lmdb_cget(cur, &k, &v, op);
		op = MDB_NEXT;
		if (rc || k.mv_size < 4 || memcmp(k.mv_data, "\0t/", 3) != 0)
			break;
		if (k.mv_size - 3 > MRTX_MAX_NAME)
			continue;
		memcpy(name, (char *)k.mv_data + 3, k.mv_size - 3);
		name[k.mv_size - 3] = '\0';
		if (!table_lookup(st, name)) {
			/* store_table_find needs its own txn; remember and resume. */
			mdb_cursor_close(cur);
			mdb_txn_abort(txn);
			if ((rc = store_table_find(st, name, &t)))
				return rc;
			if ((rc = lmdb_txn_begin(st, MDB_RDONLY, &txn)))
				return rc;
			if ((rc = mdb_cursor_open(txn, st->dbi, &cur))) {
				mdb_txn_abort(txn);
				return lmdb_err(st, rc, "list tables");
			}
			/* resume at the table just attached; the loop steps past it */
			k = lmdb_table_key(tk, name);
			if ((rc = lmdb_cget(cur, &k, &v, MDB_SET_RANGE)))
				break;
		}
	}
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	if (rc && rc != MDB_NOTFOUND)
		return lmdb_err(st, rc, "list tables");
	n = atomic_load_explicit(&st->ntables, memory_order_acquire);
	if (!(arr = mrtx__reallocarray(NULL, n, sizeof(*arr))))
		return mrtx__seterr(MRTX_ENOMEM, "out of memory listing tables");
	{
		size_t live = 0;

		for (size_t i = 0; i < n; i++)
			if (atomic_load(&st->tables[i]->state) != STORE_T_GONE)
				arr[live++] = st->tables[i];
		n = live;
	}
	qsort(arr, n, sizeof(*arr), table_name_cmp);
	*out = arr;
	*count = n;
	return 0;
}

/* Put 0x00 . key -> (p, n). */
static int meta_put(MDB_txn *txn, store *st, const char *key, const void *p, size_t n)
{
	char kb[MRTX_MAX_NAME + 4];
	MDB_val k = meta_key(kb, key), v = mv(p, n);

	return lmdb_put(txn, st->dbi, &k, &v, 0);
}

/* The open's walk of the metadata (lmdb_meta_walk): every table's policy
 * record names a table of the store.  One whose key was changed and
 * sealed anew (a writer's bug: damage fails the seal) would leave the
 * table it was for with the defaults, which the collector acts on. */
typedef struct policy_owner {
	store *st;
	MDB_txn *txn;
} policy_owner;

static int policy_owned(const MDB_val *k, const MDB_val *v, void *arg)
{
	policy_owner *po = arg;
	char tb[MRTX_MAX_NAME + 4], name[MRTX_MAX_NAME + 1];
	MDB_val tk, tv;
	size_t n = k->mv_size - 3;
	int rc;

	(void)v;
	if (k->mv_size <= 3 || memcmp(k->mv_data, "\0p/", 3) != 0)
		return 0;
	if (n > MRTX_MAX_NAME)
		return mrtx__seterr(MRTX_ECORRUPT, "%s: a version-policy record of a name too "
		                    "long for a table", po->st->path);
	memcpy(name, (const char *)k->mv_data + 3, n);
	name[n] = '\0';
	tk = lmdb_table_key(tb, name);
	if ((rc = mdb_get(po->txn, po->st->dbi, &tk, &tv)) == MDB_NOTFOUND)
		return mrtx__seterr(MRTX_ECORRUPT, "%s: version policies of table '%s', which the "
		                    "store does not have: the store is damaged (`mrtx check --deep "
		                    "%s` says where)", po->st->path, name, po->st->path);
	return rc;
}

int lmdb_meta_init(store *st)
{
	char kb[MRTX_MAX_NAME + 4];
	MDB_txn *txn;
	MDB_cursor *cur = NULL;
	MDB_val k, v;
	MDB_stat ms;
	uint32_t fmt;
	int rc, sealed = 0, ro = st->head.read_only;

	/* Every writer keeps the count of unsettled lock records, which needs
	 * the layer above's classifier (lmdb_unsettled.c). */
	if (!ro && !st->lock_order)
		return mrtx__seterr(MRTX_EINVAL, "%s: a writable open needs store_opts.lock_order",
		                    st->path);
	/* Read-only: a read transaction, which creates nothing (LMDB keeps
	 * the unnamed database's handle and comparator after it ends). */
	if ((rc = lmdb_txn_begin(st, ro ? MDB_RDONLY : 0, &txn)))
		return rc;
	if ((rc = mdb_dbi_open(txn, NULL, 0, &st->dbi)) ||
	    (rc = mdb_set_compare(txn, st->dbi, lmdb_key_cmp)))
		goto lmdb_fail;
	rc = lmdb_format_get(txn, st->dbi, &fmt, &sealed, NULL);
	if (rc == MDB_NOTFOUND) {
		/* A brand-new environment, an older store, or someone else's LMDB. */
		if ((rc = mdb_stat(txn, st->dbi, &ms)))
			goto lmdb_fail;
		if (st->no_create && !ms.ms_entries) {
			rc = mrtx__seterr(MRTX_ENOTSTORE, "%s: an empty LMDB environment, no mrtx "
			                  "store yet (%s)", st->path, ro ? "a read-only open creates "
			                  "nothing" : "this open was asked not to create one");
			goto fail;
		}
		if (ms.ms_entries) {
			k = mv("mrtx.meta", 9); /* formats 1 and 2 kept metadata in this DBI */
			rc = mdb_get(txn, st->dbi, &k, &v) == 0 ?
			     mrtx__seterr(MRTX_ENOTSTORE, "%s: store format 2 or older (one LMDB "
			                  "database per table) is not supported by this mrtx (format "
			                  "%u); export its data with the older mrtx", st->path,
			                  META_FORMAT) :
			     mrtx__seterr(MRTX_ENOTSTORE, "%s holds an LMDB database that is not an "
			                  "mrtx store; refusing to touch it", st->path);
			goto fail;
		}
		{
			uint8_t next[TPFX] = { KP_FIRST >> 8, KP_FIRST & 0xFF };

			if (RAND_bytes(st->id, sizeof(st->id)) != 1) {
				rc = mrtx__seterr(MRTX_ESTORE, "RAND_bytes failed creating the store id");
				goto fail;
			}
			/* (the format record first: it tallies the rest) */
			if ((rc = lmdb_format_put(txn, st->dbi, &(lmdb_mtally){ 0, 0 })) ||
			    (rc = lmdb_unsettled_put(txn, st->dbi, 0)) ||
			    (rc = meta_put(txn, st, "store_id", st->id, sizeof(st->id))) ||
			    (rc = meta_put(txn, st, "next_table", next, sizeof(next))))
				goto lmdb_fail;
		}
	} else if (rc == MRTX_ECORRUPT) {
		rc = mrtx__seterr(MRTX_ECORRUPT, "%s: store format record malformed", st->path);
		goto fail;
	} else if (rc) {
		goto lmdb_fail;
	} else {
		if ((!sealed && (fmt == 3 || fmt == 4 || fmt == 5 || fmt == FORMAT_DATA_SEALED ||
		                 FORMAT_IN_HEADER_PASS(fmt) || fmt == FORMAT_SEALING)) ||
		    (sealed && fmt == FORMAT_META_SEALED)) {
			rc = mrtx__seterr(MRTX_ENOTSTORE, "%s: store format %s; this mrtx reads format "
			                  "%u (cells with versions, a count of unsettled locks, a "
			                  "checksum on every record, metadata included, and a count "
			                  "of the metadata records): run `mrtx upgrade %s`, which "
			                  "converts it in place", st->path,
			                  fmt == 3 ? "3" : fmt == 4 ? "4" : fmt == 5 ? "5" :
			                  fmt == 6 ? "6" : fmt == 7 ? "7" : "being upgraded (interrupted)",
			                  META_FORMAT, st->path);
			goto fail;
		}
		if (!sealed && (fmt == META_FORMAT || fmt == FORMAT_META_SEALED)) {
			rc = mrtx__seterr(MRTX_ECORRUPT, "%s: the store format record says %u without "
			                  "the checksum that format carries: the store is damaged "
			                  "(`mrtx check --deep %s` says where)", st->path, fmt, st->path);
			goto fail;
		}
		if (fmt != META_FORMAT) {
			rc = mrtx__seterr(MRTX_ENOTSTORE, "%s: store format %u is not supported by "
			                  "this mrtx (format %u)", st->path, fmt, META_FORMAT);
			goto fail;
		}
		/* Every metadata record checked before any is looked up by key
		 * (lmdb_meta_walk) */
		if ((rc = mdb_cursor_open(txn, st->dbi, &cur)))
			goto lmdb_fail;
		{
			policy_owner po = { st, txn };

			if ((rc = lmdb_meta_walk(cur, policy_owned, &po)))
				goto walk_fail;
		}
		k = meta_key(kb, "store_id");
		if ((rc = lmdb_get(txn, st->dbi, &k, &v)) && rc != MDB_NOTFOUND)
			goto lmdb_fail; /* (a seal that does not match, an I/O error) */
		if (rc || v.mv_size != sizeof(st->id)) {
			rc = mrtx__seterr(MRTX_ECORRUPT, "%s: store id record %s", st->path,
			                  rc ? "missing" : "malformed");
			goto fail;
		}
		memcpy(st->id, v.mv_data, sizeof(st->id));
		/* Attach every existing table now, while no other txn runs. */
		k = mv("\0t/", 3);
		for (rc = lmdb_cget(cur, &k, &v, MDB_SET_RANGE); rc == 0;
		     rc = lmdb_cget(cur, &k, &v, MDB_NEXT)) {
			char name[MRTX_MAX_NAME + 1];
			store_table *t;

			if (k.mv_size < 4 || memcmp(k.mv_data, "\0t/", 3) != 0)
				break;
			if (k.mv_size - 3 > MRTX_MAX_NAME) {
				rc = mrtx__seterr(MRTX_ECORRUPT, "%s: table name too long in metadata",
				                  st->path);
				goto fail;
			}
			memcpy(name, (char *)k.mv_data + 3, k.mv_size - 3);
			name[k.mv_size - 3] = '\0';
			if ((rc = lmdb_table_parse(name, &v, &t)))
				goto fail;
			if ((rc = lmdb_table_load_policy(st, txn, t))) {
				lmdb_table_free(t);
				goto fail;
			}
			if ((rc = table_publish(st, t)))
				goto fail;
		}
		mdb_cursor_close(cur);
		cur = NULL;
		if (rc != MDB_NOTFOUND && rc != 0)
			goto lmdb_fail;
		{
			uint64_t tg;

			if ((rc = mdb_cursor_open(txn, st->dbi, &cur)))
				goto lmdb_fail;
			rc = lmdb_u64_read(cur, TGEN_KEY, TGEN_KEY_LEN, &tg);
			mdb_cursor_close(cur);
			cur = NULL;
			if (rc == MRTX_ECORRUPT) {
				rc = mrtx__seterr(MRTX_ECORRUPT, "%s: the table generation record "
				                  "is malformed", st->path);
				goto fail;
			}
			if (rc)
				goto lmdb_fail;
			atomic_store(&st->tgen_valid, tg);
		}
	}
	if ((rc = ro ? mdb_txn_commit(txn) : lmdb_commit(st, txn, 1)))
		return lmdb_err(st, rc, "open");
	return 0;
walk_fail:
	if (mrtx__is_code(rc))
		goto fail; /* (policy_owned's, its message set) */
lmdb_fail:
	rc = lmdb_err(st, rc, "initialise metadata");
fail:
	if (cur)
		mdb_cursor_close(cur);
	if (ro)
		mdb_txn_abort(txn);
	else
		lmdb_wabort(st, txn);
	return rc;
}

/* ------------------------------------------- opaque metadata records */

int lmdb_gen_read(MDB_cursor *cur, uint64_t *gen)
{
	return lmdb_u64_read(cur, GEN_KEY, GEN_KEY_LEN, gen);
}

int lmdb_u64_read(MDB_cursor *cur, const char *key, size_t klen, uint64_t *gen)
{
	MDB_val k = mv(key, klen), v;
	int rc = lmdb_cget(cur, &k, &v, MDB_SET);

	*gen = 0;
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc)
		return rc;
	if (v.mv_size != sizeof(*gen))
		return MRTX_ECORRUPT;
	memcpy(gen, v.mv_data, sizeof(*gen));
	return 0;
}

int lmdb_meta_walk(MDB_cursor *cur, int (*fn)(const MDB_val *k, const MDB_val *v, void *arg),
                   void *arg)
{
	MDB_val target = mv("\0", 1), k = target, v, prev;
	int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE), order;
	/* (no format record met: a tally no store has) */
	lmdb_mtally met = { 0, 0 }, kept = { UINT32_MAX, 0 };
	int have = 0;

	/* (raw reads: the data record met at the end is not the walk's) */
	if (rc != 0 && rc != MDB_NOTFOUND)
		return rc;
	if ((order = lmdb_landing_check(cur, &target, rc == 0)))
		return order;
	if (rc == 0 && (rc = mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT)))
		return rc;
	while (rc == 0 && ((const uint8_t *)k.mv_data)[0] == 0) {
		int format = k.mv_size == 7 && memcmp(k.mv_data, "\0format", 7) == 0;
		MDB_val raw = v;

		if ((rc = lmdb_unseal(&k, &v)))
			return rc;
		if (!format)
			lmdb_mtally_add(&met, &k, &raw); /* (its part: the seal) */
		if (fn && (rc = fn(&k, &v, arg)))
			return rc;
		if (format) {
			/* (format 8's: the format, then the tally; lmdb_mcount.c) */
			if (v.mv_size < 4 || mrtx__le32_get(v.mv_data) != META_FORMAT ||
			    lmdb_format_parse(META_FORMAT, 1, &v, &kept))
				return LMDB_BADFORMAT;
			have = 1;
		}
		prev = k;
		if ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0 && !lmdb_key_after(&prev, &k))
			return LMDB_DISORDER;
	}
	/* The key that ends the walk is in order with the one after it too: a
	 * metadata record whose first byte was damaged (or a slot sent to a
	 * data node) ends the walk early, and the keys after it, the rest of
	 * the metadata or the first data record, sort below it. */
	if (rc == 0) {
		prev = k;
		if ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0 && !lmdb_key_after(&prev, &k))
			return LMDB_DISORDER;
	}
	if (rc && rc != MDB_NOTFOUND)
		return rc;
	/* A record gone whole, or an older copy of one, which no seal or key
	 * order shows: the tally */
	return !have || met.n != kept.n ? LMDB_METACOUNT : met.sum != kept.sum ? LMDB_METADIGEST : 0;
}

int lmdb_store_meta_get(store *st, lmdb_rtxn *view, const char *key, mrtx_arena *a,
                        mrtx_bytes *out)
{
	char kb[MRTX_MAX_NAME + 4];
	lmdb_rtxn rt;
	MDB_val k, v;
	int rc;

	if (view)
		rt = *view;
	else if ((rc = lmdb_rtxn_begin(st, &rt)))
		return rc;
	k = meta_key(kb, key);
	rc = lmdb_get(rt.txn, st->dbi, &k, &v);
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
	if (!view)
		lmdb_rtxn_end(st, &rt);
	return rc;
}

/* Move the generation inside txn: transactions that listed the records
 * before this write fail their conditional writes (check_gen). */
static int gen_move(store *st, MDB_txn *txn)
{
	MDB_cursor *cur;
	uint64_t gen = 0;
	MDB_val gk = mv(GEN_KEY, GEN_KEY_LEN), gv;
	int rc;

	if ((rc = mdb_cursor_open(txn, st->dbi, &cur)))
		return lmdb_err(st, rc, "write metadata");
	rc = lmdb_gen_read(cur, &gen);
	mdb_cursor_close(cur);
	if (rc == MRTX_ECORRUPT)
		return mrtx__seterr(MRTX_ECORRUPT, "%s: the metadata generation record is "
		                    "malformed", st->path);
	gen++;
	gv = mv(&gen, sizeof(gen));
	if (rc || (rc = lmdb_put(txn, st->dbi, &gk, &gv, 0)))
		return lmdb_err(st, rc, "write metadata");
	st->w_gen = gen; /* lmdb_commit records it */
	st->w_gen_ok = 1;
	st->w_dirty = 1;
	return 0;
}

/* In txn: is t still the table of its name, and no drop or truncate of
 * it begun (its record not frozen)?  (store_meta_put_new_on) */
static int table_open_in(store *st, MDB_txn *txn, const store_table *t)
{
	char kb[MRTX_MAX_NAME + 4];
	MDB_val k = lmdb_table_key(kb, t->name), v;
	unsigned kp;
	size_t nfam;
	int rc, frozen;

	if ((rc = lmdb_get(txn, st->dbi, &k, &v)) == MDB_NOTFOUND)
		return mrtx__seterr(MRTX_ENOTABLE, "table '%s' was dropped", t->name);
	if (rc)
		return lmdb_err(st, rc, "read a table record");
	if (lmdb_table_peek(&v, &kp, &frozen, &nfam))
		return mrtx__seterr(MRTX_ECORRUPT, "%s: the record of table '%s' is malformed",
		                    st->path, t->name);
	if (kp != LT(t)->kp)
		return mrtx__seterr(MRTX_ENOTABLE, "table '%s' was dropped", t->name);
	if (frozen)
		return mrtx__seterr(MRTX_ELOCKED, "table '%s' is being dropped or truncated: try "
		                    "again when that has finished (one cut short is finished by "
		                    "running the drop or truncate again)", t->name);
	return 0;
}

int lmdb_store_meta_put_new(store *st, const char *key, mrtx_bytes value,
                            const store_table *const *on, size_t non, const uint64_t *gen)
{
	char kb[MRTX_MAX_NAME + 4];
	MDB_txn *txn = NULL;
	MDB_val k, v, old;
	int rc;

	k = meta_key(kb, key);
	v = mv(value.data, value.size);
	pthread_mutex_lock(&st->mu);
	if ((rc = lmdb_txn_begin(st, 0, &txn)))
		goto done;
	rc = lmdb_get(txn, st->dbi, &k, &old);
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
	for (size_t i = 0; i < non; i++)
		if ((rc = table_open_in(st, txn, on[i])))
			goto done;
	if (gen) {
		MDB_cursor *cur;
		uint64_t now = 0;

		if ((rc = mdb_cursor_open(txn, st->dbi, &cur))) {
			rc = lmdb_err(st, rc, "read metadata");
			goto done;
		}
		rc = lmdb_gen_read(cur, &now);
		mdb_cursor_close(cur);
		if (rc) {
			rc = rc == MRTX_ECORRUPT ?
			     mrtx__seterr(MRTX_ECORRUPT, "%s: the metadata generation record is "
			                  "malformed", st->path) : lmdb_err(st, rc, "read metadata");
			goto done;
		}
		if (now != *gen) {
			rc = mrtx__seterr(MRTX_CONFLICT, "store %s: the metadata changed since it "
			                  "was read", st->path);
			goto done;
		}
	}
	if ((rc = lmdb_put(txn, st->dbi, &k, &v, 0))) {
		rc = lmdb_err(st, rc, "write metadata");
		goto done;
	}
	if ((rc = gen_move(st, txn)))
		goto done;
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

int lmdb_store_meta_change(store *st, const char *const *del, size_t ndel,
                           const char *put_key, mrtx_bytes put_value)
{
	char kb[MRTX_MAX_NAME + 4];
	MDB_txn *txn = NULL;
	MDB_val k, v;
	int rc;

	pthread_mutex_lock(&st->mu);
	if ((rc = lmdb_txn_begin(st, 0, &txn)))
		goto done;
	for (size_t i = 0; i < ndel; i++) {
		k = meta_key(kb, del[i]);
		if ((rc = lmdb_del(txn, st->dbi, &k)) && rc != MDB_NOTFOUND) {
			rc = lmdb_err(st, rc, "write metadata");
			goto done;
		}
	}
	if (put_key) {
		k = meta_key(kb, put_key);
		v = mv(put_value.data, put_value.size);
		if ((rc = lmdb_put(txn, st->dbi, &k, &v, 0))) {
			rc = lmdb_err(st, rc, "write metadata");
			goto done;
		}
	}
	if ((rc = gen_move(st, txn)))
		goto done;
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

/* lmdb_store_meta_list's walk: the records under its prefix, handed on. */
typedef struct meta_lister {
	store *st;
	const char *pk; /* 0x00 . prefix */
	size_t plen;
	mrtx_arena *a;
	int (*fn)(const char *key, mrtx_bytes value, void *payload);
	void *payload;
	int rc;         /* fn's, or a message set here */
} meta_lister;

static int meta_list_one(const MDB_val *k, const MDB_val *v, void *arg)
{
	meta_lister *l = arg;
	char key[MRTX_MAX_NAME + 3];
	mrtx_bytes val;

	if (k->mv_size < l->plen || memcmp(k->mv_data, l->pk, l->plen) != 0)
		return 0;
	if (k->mv_size > sizeof(key))
		return l->rc = mrtx__seterr(MRTX_ECORRUPT, "store %s: metadata key of %zu bytes",
		                            l->st->path, k->mv_size);
	memcpy(key, (const char *)k->mv_data + 1, k->mv_size - 1); /* without 0x00 */
	key[k->mv_size - 1] = '\0';
	if (!(val.data = arena_dup(l->a, v->mv_data, v->mv_size)))
		return l->rc = MRTX_ENOMEM;
	val.size = v->mv_size;
	return l->rc = l->fn(key, val, l->payload);
}

/* Every metadata record is walked, not only the prefix's: a record whose
 * key was damaged out of the prefix is met by its seal (lmdb_meta_walk),
 * where a walk of the prefix would list the others and say nothing. */
int lmdb_store_meta_list(store *st, const char *prefix, mrtx_arena *a,
                    int (*fn)(const char *key, mrtx_bytes value, void *payload),
                    void *payload, uint64_t *gen)
{
	char pk[MRTX_MAX_NAME + 4];
	MDB_val p = meta_key(pk, prefix);
	meta_lister l = { st, pk, p.mv_size, a, fn, payload, 0 };
	lmdb_rtxn rt;
	int rc;

	if ((rc = lmdb_rtxn_begin(st, &rt)))
		return rc;
	if (gen && (rc = lmdb_gen_read(rt.cur, gen))) {
		rc = rc == MRTX_ECORRUPT ?
		     mrtx__seterr(MRTX_ECORRUPT, "%s: the metadata generation record is "
		                  "malformed", st->path) : lmdb_err(st, rc, "read metadata");
		lmdb_rtxn_end(st, &rt);
		return rc;
	}
	rc = lmdb_meta_walk(rt.cur, meta_list_one, &l);
	if (rc && rc != l.rc)
		rc = lmdb_err(st, rc, "list metadata");
	lmdb_rtxn_end(st, &rt);
	return rc;
}

