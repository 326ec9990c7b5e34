/*
 * lmdb_ddl.c - schema changes of existing tables on LMDB (DESIGN §3.4):
 * adding a family, changing a family's version policy, freezing a table,
 * clearing (truncating or dropping) it, and how every process's table
 * objects learn of them.
 *
 * Every change rewrites or deletes the table's record 0x00 "t/<name>" and
 * bumps the table generation 0x00 "tgen" in the same write transaction.
 * A process's table objects reflect tgen_valid; a mismatch is noticed
 *  - by every write, inside its own write transaction (lmdb_table_wcheck):
 *    it then checks the table's record itself, so a write can never act on
 *    a stale view of a table (the guard that makes freezing exact);
 *  - by every read, at its snapshot (lmdb_table_rcheck, once per snapshot),
 *    which re-reads every attached table's record (store_table_refresh)
 *    when the snapshot is newer than the objects.
 */
#include "storage/lmdb/lmdb_int.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

/* -------------------------------------------------------------- refresh */

/* Bring t up to the record v (families, state); caller holds st->mu. */
static int table_update(store *st, store_table *t, const MDB_val *v)
{
	const uint8_t *p = v->mv_data;
	unsigned kp;
	int frozen;
	size_t nfam, have = t->nfamilies;
	char **fams = (char **)(uintptr_t)t->families;

	if (lmdb_table_peek(v, &kp, &frozen, &nfam))
		return mrtx__seterr(MRTX_ECORRUPT, "store %s: metadata of table '%s' is "
		                    "malformed", st->path, t->name);
	if (kp != LT(t)->kp) { /* dropped, and the name is another table's now */
		atomic_store(&t->state, STORE_T_GONE);
		return 0;
	}
	if (nfam < have)
		return mrtx__seterr(MRTX_ECORRUPT, "store %s: table '%s' lost families",
		                    st->path, t->name);
	p += TPFX + 1;
	for (size_t i = 0; i < nfam; i++) {
		size_t len = *p++;

		if (i >= have) {
			char *s = mrtx__malloc(len + 1);

			if (!s)
				return mrtx__seterr(MRTX_ENOMEM, "out of memory loading table '%s'",
				                    t->name);
			memcpy(s, p, len);
			s[len] = '\0';
			fams[i] = s;
			/* published before the count that covers it */
			atomic_store(&t->nfamilies, i + 1);
		}
		p += len;
	}
	{
		uint64_t bits[4];

		lmdb_table_dropped(v, bits);
		if (store_table_mark_dropped(t, bits))
			return MRTX_ENOMEM;
	}
	atomic_store(&t->state, frozen ? STORE_T_FROZEN : STORE_T_LIVE);
	return 0;
}

int lmdb_store_table_refresh(store *st)
{
	char kb[MRTX_MAX_NAME + 4];
	lmdb_rtxn rt;
	uint64_t tg;
	int rc;

	pthread_mutex_lock(&st->mu);
	if ((rc = lmdb_rtxn_begin(st, &rt)))
		goto out;
	if ((rc = lmdb_u64_read(rt.cur, TGEN_KEY, TGEN_KEY_LEN, &tg))) {
		rc = rc == MRTX_ECORRUPT ?
		     mrtx__seterr(rc, "%s: the table generation record is malformed", st->path) :
		     lmdb_err(st, rc, "read metadata");
		goto end;
	}
	if (tg == atomic_load(&st->tgen_valid))
		goto end;
	/* (every metadata record checked, as at the open: a table record or
	 * policies whose key was damaged would read as gone or as defaults) */
	if ((rc = lmdb_meta_walk(rt.cur, NULL, NULL))) {
		rc = lmdb_err(st, rc, "read metadata");
		goto end;
	}
	for (size_t i = 0, n = atomic_load(&st->ntables); i < n && rc == 0; i++) {
		store_table *t = st->tables[i];
		MDB_val k, v;

		if (atomic_load(&t->state) == STORE_T_GONE)
			continue;
		k = lmdb_table_key(kb, t->name);
		rc = lmdb_get(rt.txn, st->dbi, &k, &v);
		if (rc == MDB_NOTFOUND) {
			atomic_store(&t->state, STORE_T_GONE);
			rc = 0;
		} else if (rc) {
			rc = lmdb_err(st, rc, "read metadata");
		} else if ((rc = table_update(st, t, &v)) == 0 &&
		           atomic_load(&t->state) != STORE_T_GONE) {
			rc = lmdb_table_load_policy(st, rt.txn, t);
		}
	}
	if (rc == 0)
		atomic_store(&st->tgen_valid, tg);
end:
	lmdb_rtxn_end(st, &rt);
out:
	pthread_mutex_unlock(&st->mu);
	return rc;
}

/* Is t, in the snapshot rt, the table of that name?  (A view older than our
 * objects: t may have been created, under a name dropped since, after it.) */
static int table_in_snapshot(store *st, lmdb_rtxn *rt, const store_table *t)
{
	char kb[MRTX_MAX_NAME + 4];
	MDB_val k = lmdb_table_key(kb, t->name), v;
	unsigned kp;
	int frozen, rc;
	size_t nfam;

	rc = lmdb_get(rt->txn, st->dbi, &k, &v);
	if (rc == MDB_NOTFOUND || (rc == 0 && !lmdb_table_peek(&v, &kp, &frozen, &nfam) &&
	                           kp != LT(t)->kp))
		return STORE_NOT_IN_VIEW;
	if (rc)
		return lmdb_err(st, rc, "read metadata");
	return 0;
}

int lmdb_table_rcheck(store *st, lmdb_rtxn *rt, const store_table *t)
{
	size_t id = mdb_txn_id(rt->txn);

	if (id != atomic_load_explicit(&st->tchk_txnid, memory_order_relaxed)) {
		uint64_t tg;
		int rc = lmdb_u64_read(rt->cur, TGEN_KEY, TGEN_KEY_LEN, &tg);

		if (rc)
			return rc == MRTX_ECORRUPT ?
			       mrtx__seterr(rc, "%s: the table generation record is malformed",
			                    st->path) : lmdb_err(st, rc, "read metadata");
		uint64_t valid = atomic_load_explicit(&st->tgen_valid, memory_order_acquire);

		/* A snapshot older than our objects (a transaction's view held
		 * open across a change) reads with the newer objects: one dropped
		 * since is GONE; one first seen after the snapshot is checked
		 * below (table_in_snapshot). */
		if (tg > valid) {
			if ((rc = lmdb_store_table_refresh(st)))
				return rc;
		} else if (tg == valid) {
			atomic_store_explicit(&st->tchk_txnid, id, memory_order_relaxed);
		}
	}
	if (atomic_load_explicit(&t->state, memory_order_acquire) == STORE_T_GONE)
		return mrtx__seterr(MRTX_ENOTABLE, "table '%s' was dropped", t->name);
	if (id < LT(t)->seen) /* a view older than our first sight of t */
		return table_in_snapshot(st, rt, t);
	return 0;
}

int lmdb_table_wcheck(store *st, MDB_cursor *cur, const store_op *op)
{
	const store_table *t = op->table;
	int rc, state;

	if (!st->w_tgen_ok) {
		if ((rc = lmdb_u64_read(cur, TGEN_KEY, TGEN_KEY_LEN, &st->w_tgen)))
			return rc;
		st->w_tgen_ok = 1;
	}
	if (st->w_tgen == atomic_load_explicit(&st->tgen_valid, memory_order_acquire)) {
		state = atomic_load_explicit(&t->state, memory_order_acquire);
	} else {
		/* Our objects are behind: the record itself, in this txn. */
		char kb[MRTX_MAX_NAME + 4];
		MDB_val k = lmdb_table_key(kb, t->name), v;
		unsigned kp;
		int frozen;
		size_t nfam;

		atomic_store(&st->trefresh, 1);
		rc = lmdb_cget(cur, &k, &v, MDB_SET);
		if (rc && rc != MDB_NOTFOUND)
			return rc;
		if (rc == MDB_NOTFOUND)
			state = STORE_T_GONE;
		else if (lmdb_table_peek(&v, &kp, &frozen, &nfam))
			return MRTX_ECORRUPT;
		else
			state = kp != LT(t)->kp ? STORE_T_GONE :
			        frozen ? STORE_T_FROZEN : STORE_T_LIVE;
		if (state != STORE_T_GONE) {
			/* families dropped since: known from now on (the list of
			 * names waits for the refresh) */
			uint64_t bits[4];

			lmdb_table_dropped(&v, bits);
			for (unsigned w = 0; w < 4; w++)
				if (bits[w])
					atomic_fetch_or(&((store_table *)(uintptr_t)t)->dropped[w],
					                bits[w]);
		}
	}
	if (state == STORE_T_GONE)
		return MRTX_ENOTABLE;
	if (state == STORE_T_FROZEN && op->acquire)
		return MRTX_CONFLICT;
	if (op->acquire && lmdb_writes_dropped(op))
		return MRTX_CONFLICT; /* a commit that took a dropped family's id */
	return 0;
}

/* -------------------------------------------------------------- changes */

/* Begin a schema change of t: st->mu held, write txn begun, t's current
 * record in *rec (MRTX_ENOTABLE if t was dropped). */
static int change_begin(store *st, const store_table *t, MDB_txn **txn, MDB_val *rec)
{
	char kb[MRTX_MAX_NAME + 4];
	MDB_val k = lmdb_table_key(kb, t->name);
	unsigned kp;
	int rc, frozen;
	size_t nfam;

	pthread_mutex_lock(&st->mu);
	if ((rc = lmdb_txn_begin(st, 0, txn))) {
		pthread_mutex_unlock(&st->mu);
		return rc;
	}
	rc = lmdb_get(*txn, st->dbi, &k, rec);
	if (rc == 0 && lmdb_table_peek(rec, &kp, &frozen, &nfam))
		rc = mrtx__seterr(MRTX_ECORRUPT, "store %s: metadata of table '%s' is malformed",
		                  st->path, t->name);
	else if (rc == MDB_NOTFOUND || (rc == 0 && kp != LT(t)->kp))
		rc = mrtx__seterr(MRTX_ENOTABLE, "no table '%s' in store %s (dropped)", t->name,
		                  st->path);
	else if (rc)
		rc = lmdb_err(st, rc, "read metadata");
	if (rc) {
		lmdb_wabort(st, *txn);
		pthread_mutex_unlock(&st->mu);
	}
	return rc;
}

/* Write t's record (rec = NULL: delete it), bump the table generation,
 * commit (durably), and bring this process's objects up to date. */
static int change_end(store *st, const store_table *t, MDB_txn *txn, const MDB_val *rec)
{
	char kb[MRTX_MAX_NAME + 4];
	MDB_val k = lmdb_table_key(kb, t->name), gk = mv(TGEN_KEY, TGEN_KEY_LEN), gv;
	MDB_cursor *cur;
	uint64_t tg = 0;
	int rc;

	if ((rc = rec ? lmdb_put(txn, st->dbi, &k, (MDB_val *)(uintptr_t)rec, 0) :
	                lmdb_del(txn, st->dbi, &k)))
		goto fail;
	if ((rc = mdb_cursor_open(txn, st->dbi, &cur)))
		goto fail;
	rc = lmdb_u64_read(cur, TGEN_KEY, TGEN_KEY_LEN, &tg);
	mdb_cursor_close(cur);
	if (rc == MRTX_ECORRUPT) {
		lmdb_wabort(st, txn);
		pthread_mutex_unlock(&st->mu);
		return mrtx__seterr(rc, "%s: the table generation record is malformed", st->path);
	}
	tg++;
	gv = mv(&tg, sizeof(tg));
	st->w_tgen_ok = 0; /* what this txn inherited (lmdb_txn_begin) is stale */
	if (rc || (rc = lmdb_put(txn, st->dbi, &gk, &gv, 0)))
		goto fail;
	rc = lmdb_commit(st, txn, 1);
	pthread_mutex_unlock(&st->mu);
	if (rc)
		return lmdb_err(st, rc, "change table");
	return lmdb_store_table_refresh(st);
fail:
	lmdb_wabort(st, txn);
	pthread_mutex_unlock(&st->mu);
	return lmdb_err(st, rc, "change table");
}

/* The token of rec's frozen mark (checked by change_begin), 0 without one. */
static uint64_t mark_token(const MDB_val *rec)
{
	unsigned kp;
	int frozen;
	size_t nfam;
	uint64_t token = 0;

	lmdb_table_peek(rec, &kp, &frozen, &nfam);
	if (frozen)
		memcpy(&token, (const uint8_t *)rec->mv_data + rec->mv_size - 8, 8);
	return token;
}

/* A copy of record old with the frozen mark of `token` (0: no mark) and,
 * if fam, one more family, into buf (room for the largest record). */
static MDB_val record_with(uint8_t *buf, const MDB_val *old, uint64_t token, const char *fam)
{
	unsigned kp;
	int was;
	size_t nfam, n;

	lmdb_table_peek(old, &kp, &was, &nfam); /* checked by change_begin */
	n = old->mv_size - (was ? 1 + 8 : 0);
	memcpy(buf, old->mv_data, n);
	if (fam) {
		size_t len = strlen(fam);

		buf[TPFX] = (uint8_t)(nfam + 1);
		buf[n++] = (uint8_t)len;
		memcpy(buf + n, fam, len);
		n += len;
	}
	if (token) {
		buf[n++] = 1;
		memcpy(buf + n, &token, 8);
		n += 8;
	}
	return mv(buf, n);
}

#define REC_MAX (TPFX + 1 + MRTX_MAX_FAMILIES * (MRTX_MAX_NAME + 1) + 1 + 8)

int lmdb_store_add_family(store *st, const store_table *t, const char *family)
{
	uint8_t *buf;
	MDB_txn *txn;
	MDB_val rec, nrec;
	unsigned kp;
	int rc, frozen;
	size_t nfam;
	const uint8_t *p;

	if ((rc = store_check_name("family", family)))
		return rc;
	if (!(buf = mrtx__malloc(REC_MAX)))
		return mrtx__seterr(MRTX_ENOMEM, "out of memory adding a family");
	if ((rc = change_begin(st, t, &txn, &rec)))
		goto out;
	lmdb_table_peek(&rec, &kp, &frozen, &nfam);
	p = (const uint8_t *)rec.mv_data + TPFX + 1;
	for (size_t i = 0; i < nfam; i++) {
		size_t len = *p++;

		if (len == strlen(family) && memcmp(p, family, len) == 0)
			rc = mrtx__seterr(MRTX_EEXIST, "table '%s' already has family '%s'",
			                  t->name, family);
		p += len;
	}
	if (rc == 0 && nfam >= MRTX_MAX_FAMILIES)
		rc = mrtx__seterr(MRTX_ETOOBIG, "table '%s' has the maximum of %u families",
		                  t->name, MRTX_MAX_FAMILIES);
	if (rc) {
		lmdb_wabort(st, txn);
		pthread_mutex_unlock(&st->mu);
		goto out;
	}
	(void)frozen;
	nrec = record_with(buf, &rec, mark_token(&rec), family);
	rc = change_end(st, t, txn, &nrec);
out:
	mrtx__free(buf);
	return rc;
}

int lmdb_store_table_freeze(store *st, const store_table *t, int on, uint64_t *token)
{
	uint8_t buf[REC_MAX];
	MDB_txn *txn;
	MDB_val rec, nrec;
	uint64_t mine = 0;
	int rc;

	if (on) {
		while (mine == 0)
			if (RAND_bytes((unsigned char *)&mine, sizeof(mine)) != 1)
				return mrtx__seterr(MRTX_ESTORE, "RAND_bytes failed freezing a table");
	}
	if ((rc = change_begin(st, t, &txn, &rec)))
		return rc;
	if (!on && mark_token(&rec) != *token) {
		/* another drop or truncate owns the mark now: it is theirs to lift */
		lmdb_wabort(st, txn);
		pthread_mutex_unlock(&st->mu);
		return 0;
	}
	nrec = record_with(buf, &rec, mine, NULL);
	if ((rc = change_end(st, t, txn, &nrec)) == 0 && on)
		*token = mine;
	return rc;
}

/*
 * The write that deletes a table's rows or a family's cells removes every
 * version a past snapshot would read there; LMDB keeps no older ones.  So
 * the collection safe point (STORE_GC_SAFE_KEY, which mrtx_begin_at
 * refuses snapshots below: MRTX_ESNAPSHOT) is raised, in that write, to a
 * stamp of it: a snapshot from before reads as gone, never as a table or
 * family without rows (I19).  Returns 0, an LMDB code, or (the stamp
 * failed, *mrtx set) an mrtx code.
 */
static int past_ends_here(store *st, MDB_txn *txn, int *mrtx)
{
	uint64_t ts = 0;
	int rc;

	if ((*mrtx = (rc = lmdb_ts_stamp(st, txn, 0, &ts)) != 0))
		return rc;
	return lmdb_gc_safe_raise(st, txn, ts);
}

int lmdb_store_table_clear(store *st, const store_table *t, int drop, uint64_t token)
{
	uint8_t buf[REC_MAX], pk[TPFX] = { (uint8_t)(LT(t)->kp >> 8), (uint8_t)LT(t)->kp };
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_val rec, nrec, k, v;
	int rc, mrtx = 0;

	if ((rc = change_begin(st, t, &txn, &rec)))
		return rc;
	/* Still frozen by this caller since its freeze, so no lock was taken
	 * in the table after its settle began (else another drop or truncate
	 * lifted or took over the mark in between: its settle is not ours). */
	if (mark_token(&rec) != token) {
		lmdb_wabort(st, txn);
		pthread_mutex_unlock(&st->mu);
		return mrtx__seterr(MRTX_ELOCKED, "table '%s': another drop or truncate of it ran "
		                    "meanwhile; nothing was removed (run it again)", t->name);
	}
	/* Every key of the table, in this one write: no snapshot holds part. */
	if ((rc = mdb_cursor_open(txn, st->dbi, &cur)))
		goto fail;
	k = mv(pk, TPFX);
	/* (read raw: only lock records' values are used, for the count of
	 * unsettled records; one whose seal does not match goes too, counted
	 * as settled) */
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	while (rc == 0 && k.mv_size >= TPFX && memcmp(k.mv_data, pk, TPFX) == 0) {
		int uns = lmdb_unseal(&k, &v) == 0 &&
		          lmdb_record_unsettled(st, &k, &v); /* (lmdb_unsettled.c) */

		if ((rc = mdb_cursor_del(cur, 0)))
			break;
		st->w_udelta -= uns;
		/* after a delete, NEXT gives the key that followed it */
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	if (rc && rc != MDB_NOTFOUND)
		goto fail;
	if ((rc = past_ends_here(st, txn, &mrtx)))
		goto fail;
	if (drop) {
		/* the name's version policies go with it (lmdb_meta.c) */
		char pkb[MRTX_MAX_NAME + 4];
		size_t n = strlen(t->name);

		memcpy(pkb, "\0p/", 3);
		memcpy(pkb + 3, t->name, n);
		k = mv(pkb, 3 + n);
		if ((rc = lmdb_del(txn, st->dbi, &k)) && rc != MDB_NOTFOUND)
			goto fail;
		return change_end(st, t, txn, NULL);
	}
	nrec = record_with(buf, &rec, 0, NULL);
	return change_end(st, t, txn, &nrec);
fail:
	lmdb_wabort(st, txn);
	pthread_mutex_unlock(&st->mu);
	return mrtx ? rc : lmdb_err(st, rc, drop ? "drop table" : "truncate table");
}

int lmdb_store_alter_family(store *st, const store_table *t, unsigned fid,
                            const store_policy *pol)
{
	uint8_t buf[REC_MAX], pb[MRTX_MAX_FAMILIES * STORE_POL_SIZE];
	char pkb[MRTX_MAX_NAME + 4];
	size_t n = strlen(t->name), have = 0, np;
	MDB_txn *txn;
	MDB_val rec, nrec, pk, pv;
	unsigned kp;
	int rc, frozen;
	size_t nfam;

	if ((rc = change_begin(st, t, &txn, &rec)))
		return rc;
	lmdb_table_peek(&rec, &kp, &frozen, &nfam);
	if (fid >= nfam) {
		lmdb_wabort(st, txn);
		pthread_mutex_unlock(&st->mu);
		return mrtx__seterr(MRTX_ENOFAMILY, "table '%s' has no family number %u",
		                    t->name, fid + 1);
	}
	/* the record of policies (lmdb_meta.c): families past its end keep one
	 * version; it grows to cover fid */
	memcpy(pkb, "\0p/", 3);
	memcpy(pkb + 3, t->name, n);
	pk = mv(pkb, 3 + n);
	rc = lmdb_get(txn, st->dbi, &pk, &pv);
	if (rc == 0) {
		if (pv.mv_size % STORE_POL_SIZE || pv.mv_size > sizeof(pb)) {
			lmdb_wabort(st, txn);
			pthread_mutex_unlock(&st->mu);
			return mrtx__seterr(MRTX_ECORRUPT, "%s: the version policies of table '%s' "
			                    "are malformed", st->path, t->name);
		}
		memcpy(pb, pv.mv_data, pv.mv_size);
		have = pv.mv_size / STORE_POL_SIZE;
	} else if (rc != MDB_NOTFOUND) {
		goto fail;
	}
	np = fid + 1 > have ? fid + 1 : have;
	for (size_t i = have; i < np; i++) {
		store_policy one = { 1, 0, 0 };

		store_policy_put(pb + i * STORE_POL_SIZE, &one);
	}
	store_policy_put(pb + fid * STORE_POL_SIZE, pol);
	pv = mv(pb, np * STORE_POL_SIZE);
	if ((rc = lmdb_put(txn, st->dbi, &pk, &pv, 0)))
		goto fail;
	/* the table's record as it is (copied out of the txn's pages) */
	nrec = record_with(buf, &rec, mark_token(&rec), NULL);
	return change_end(st, t, txn, &nrec);
fail:
	lmdb_wabort(st, txn);
	pthread_mutex_unlock(&st->mu);
	return lmdb_err(st, rc, "change a family's versions");
}

/* Is key k (a key of the table, prefix included) a cell or an older version of
 * family fid?  P . enc(row) . fid . qual, or P . enc(row) . 0xFF . fid ... */
static int key_of_family(const MDB_val *k, uint8_t fid)
{
	uint8_t scratch[MRTX_MAX_KEY];
	const uint8_t *d = k->mv_data;
	size_t used, n = k->mv_size;

	if (n <= TPFX || n - TPFX > sizeof(scratch) ||
	    keyenc_get(scratch, d + TPFX, n - TPFX, &used) == (size_t)-1)
		return 0;
	d += TPFX + used;
	n -= TPFX + used;
	if (n >= 1 && d[0] != LOCK_TAG)
		return d[0] == fid;
	return n >= 2 && d[1] == fid; /* (the lock key itself: n == 1) */
}

int lmdb_store_drop_family(store *st, const store_table *t, unsigned fid, uint64_t token)
{
	uint8_t buf[REC_MAX], pk[TPFX] = { (uint8_t)(LT(t)->kp >> 8), (uint8_t)LT(t)->kp };
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_val rec, nrec, k, v;
	uint64_t bits[4];
	unsigned kp;
	int rc, frozen, mrtx = 0;
	size_t nfam, live = 0, n = 0;
	const uint8_t *p;

	if ((rc = change_begin(st, t, &txn, &rec)))
		return rc;
	lmdb_table_peek(&rec, &kp, &frozen, &nfam);
	lmdb_table_dropped(&rec, bits);
	for (size_t i = 0; i < nfam; i++)
		live += !((bits[i >> 6] >> (i & 63)) & 1);
	if (mark_token(&rec) != token)
		rc = mrtx__seterr(MRTX_ELOCKED, "table '%s': another drop or truncate of it ran "
		                  "meanwhile; nothing was removed (run it again)", t->name);
	else if (fid >= nfam || ((bits[fid >> 6] >> (fid & 63)) & 1))
		rc = mrtx__seterr(MRTX_ENOFAMILY, "table '%s': the family was dropped already",
		                  t->name);
	else if (live == 1)
		rc = mrtx__seterr(MRTX_EINVAL, "family '%s' is the last one of table '%s': drop the "
		                  "table instead", t->families[fid], t->name);
	if (rc) {
		lmdb_wabort(st, txn);
		pthread_mutex_unlock(&st->mu);
		return rc;
	}
	/* the new record: the family's name replaced by the dropped mark, and
	 * the freeze lifted (built before the walk moves the txn's pages) */
	p = rec.mv_data;
	memcpy(buf, p, TPFX + 1);
	n = TPFX + 1;
	p += TPFX + 1;
	for (size_t i = 0; i < nfam; i++) {
		size_t len = *p++;

		if (i == fid) {
			buf[n++] = 1;
			buf[n++] = (uint8_t)STORE_DROPPED_NAME[0];
		} else {
			buf[n++] = (uint8_t)len;
			memcpy(buf + n, p, len);
			n += len;
		}
		p += len;
	}
	nrec = mv(buf, n);
	/* every cell and older version of the family, in this one write */
	if ((rc = mdb_cursor_open(txn, st->dbi, &cur)))
		goto fail;
	k = mv(pk, TPFX);
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	while (rc == 0 && k.mv_size >= TPFX && memcmp(k.mv_data, pk, TPFX) == 0) {
		if (key_of_family(&k, (uint8_t)fid)) {
			if ((rc = mdb_cursor_del(cur, 0)))
				break;
			/* after a delete, NEXT gives the key that followed it */
		}
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	if (rc && rc != MDB_NOTFOUND)
		goto fail;
	if ((rc = past_ends_here(st, txn, &mrtx)))
		goto fail;
	return change_end(st, t, txn, &nrec);
fail:
	lmdb_wabort(st, txn);
	pthread_mutex_unlock(&st->mu);
	return mrtx ? rc : lmdb_err(st, rc, "drop a family");
}
