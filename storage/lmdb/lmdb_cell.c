/*
 * lmdb_cell.c - cells and their versions in an LMDB store (format 4,
 * DESIGN §3.2 and §9).
 *
 * A cell's newest version is its "current" key, older ones and deletions
 * sit in the row's history, after its lock key:
 *
 *   P . enc(row) . fid . qual                       -> u64 ts | u8 flags | value
 *   P . enc(row) . 0xFF                             -> the row's lock record
 *   P . enc(row) . 0xFF . fid . u16 len . qual . ~ts -> u8 flags | value
 *
 * (integers big-endian in keys, little-endian in values; ~ts sorts a
 * cell's versions newest first).  ts is the commit timestamp the version
 * was written at (store_op.ts / .stamp).  Flags: GONE, versions older than
 * this one were collected; DELETED (history only), the cell was deleted at
 * ts.  Readers of the current state (every ordinary read) never look past
 * the lock key; reads at a timestamp or of several versions merge both.
 *
 * Writes keep a family's policy (store_policy) for the cell they write:
 *
 *                put v at ts                          delete at ts
 *   current c   max > 1: c -> history; trim          max > 1: c -> history
 *               max = 1: overwrite, flag GONE        delete c; tombstone at ts;
 *               (c not GONE: drop the history        trim (max = 1: GONE)
 *               first)
 *   no current  history?  trim it below v            nothing
 *               (max = 1: drop it, flag GONE)
 *
 * Trimming walks a cell's versions newest first and keeps version i while
 * i < max_versions and (i < min_versions or it is younger than ttl_ms);
 * the first it drops goes with every older one, and the last kept gets
 * GONE.  Readers apply the same rule themselves (HBase's), so what trimming
 * has not reached yet is never shown.  Dropping is safe for running
 * snapshots: a view is an LMDB read transaction, whose pages stay as they
 * were.  A read at a timestamp that finds no version at or below it where
 * the oldest kept one says GONE cannot know what was there:
 * MRTX_ESNAPSHOT.
 */
#include <errno.h>
#include <stdlib.h>

#include "storage/lmdb/lmdb_int.h"

#define GC_CURSOR_KEY "\0g/cursor"
#define GC_CURSOR_LEN 9u

#define put_be mrtx__be_put
#define get_be mrtx__be_get

void lmdb_cell_hdr(uint8_t *out, uint64_t ts, uint8_t flags)
{
	for (unsigned i = 0; i < 8; i++)
		out[i] = (uint8_t)(ts >> (8 * i));
	out[8] = flags;
}

int lmdb_cell_decode(const MDB_val *v, uint64_t *ts, uint8_t *flags, mrtx_bytes *value)
{
	const uint8_t *p = v->mv_data;
	uint64_t x = 0;

	if (v->mv_size < CELL_HDR)
		return MRTX_ECORRUPT;
	/* (in a local: through *ts, which may alias p, the compiler keeps
	 * eight loads and shifts instead of one load) */
	for (unsigned i = 0; i < 8; i++)
		x |= (uint64_t)p[i] << (8 * i);
	*ts = x;
	*flags = p[8];
	*value = MRTX_BYTES(p + CELL_HDR, v->mv_size - CELL_HDR);
	return 0;
}

size_t lmdb_hist_prefix(uint8_t *key, size_t plen, uint8_t fid, mrtx_bytes qual)
{
	key[plen] = LOCK_TAG;
	key[plen + 1] = fid;
	put_be(key + plen + 2, qual.size, 2);
	if (qual.size)
		memcpy(key + plen + 4, qual.data, qual.size);
	return plen + 4 + qual.size;
}

int lmdb_hist_parse(const uint8_t *k, size_t klen, size_t plen, uint8_t *fid,
                    mrtx_bytes *qual, uint64_t *ts)
{
	size_t ql;

	if (klen < plen + 4 + 8 || k[plen] != LOCK_TAG)
		return MRTX_ECORRUPT;
	ql = (size_t)get_be(k + plen + 2, 2);
	if (klen != plen + 4 + ql + 8)
		return MRTX_ECORRUPT;
	*fid = k[plen + 1];
	*qual = MRTX_BYTES(k + plen + 4, ql);
	*ts = ~get_be(k + plen + 4 + ql, 8);
	return 0;
}

/* ---------------------------------------------------------------- writes */

/* Put value (with its header) at key k; MDB_RESERVE spares a copy. */
static int put_versioned(MDB_cursor *cur, const uint8_t *k, size_t klen, uint64_t ts,
                         uint8_t flags, mrtx_bytes value, unsigned extra, unsigned mdb_flags)
{
	MDB_val kv = mv(k, klen), v;
	uint8_t *d;
	int rc;

	if ((rc = lmdb_cput_reserve(cur, &kv, &v, extra + value.size, mdb_flags)))
		return rc;
	d = v.mv_data;
	if (extra == CELL_HDR)
		lmdb_cell_hdr(d, ts, flags);
	else
		d[0] = flags;
	if (value.size)
		memcpy(d + extra, value.data, value.size);
	lmdb_seal_reserved(&kv, &v);
	return 0;
}

/* A history entry of the cell whose prefix is hk[0..hplen). */
static int hist_put(MDB_cursor *cur, uint8_t *hk, size_t hplen, uint64_t ts, uint8_t flags,
                    mrtx_bytes value)
{
	put_be(hk + hplen, ~ts, 8);
	return put_versioned(cur, hk, hplen + 8, ts, flags, value, 1, 0);
}

/*
 * Trim the history of the cell whose prefix is hk[0..hplen): the newest
 * version (index 0) is the current cell when hist0 is 0, else the history
 * entry at ts0 (a tombstone just written).  Entries past what p keeps are
 * deleted; the last kept history entry gets GONE, or *gone0 = 1 when that
 * is the current cell.  Returns an LMDB rc.
 */
static int trim(MDB_cursor *cur, uint8_t *hk, size_t hplen, int hist0, uint64_t ts0,
                const store_policy *p, uint64_t now_us, int *gone0)
{
	uint8_t last[MRTX_MAX_KEY + 16];
	MDB_val k = mv(hk, hplen), v;
	size_t i = 1, lastlen = 0;
	int rc, dropped = 0;

	*gone0 = 0;
	/* (the walk reads keys only: no seal checked on what it passes) */
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	while (rc == 0) {
		const uint8_t *kd = k.mv_data;
		uint64_t ts;

		if (k.mv_size != hplen + 8 || memcmp(kd, hk, hplen) != 0)
			break;
		ts = ~get_be(kd + hplen, 8);
		if (!dropped && ((hist0 && ts == ts0) || store_version_kept(p, i, ts, now_us))) {
			/* (the newest, a tombstone just written, is kept) */
			i += !(hist0 && ts == ts0);
			memcpy(last, kd, k.mv_size);
			lastlen = k.mv_size;
			rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
			continue;
		}
		dropped = 1;
		if ((rc = mdb_cursor_del(cur, 0)))
			return rc;
		rc = mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT);
	}
	if (rc && rc != MDB_NOTFOUND)
		return rc;
	if (!dropped)
		return 0;
	if (lastlen == 0) {
		*gone0 = 1; /* the current cell is the last version kept */
		return 0;
	}
	k = mv(last, lastlen);
	if ((rc = lmdb_cget(cur, &k, &v, MDB_SET)))
		return rc;
	if (v.mv_size >= 1 && !(((const uint8_t *)v.mv_data)[0] & CELL_GONE)) {
		uint8_t *copy = mrtx__malloc(v.mv_size + LMDB_SEAL);

		if (!copy)
			return ENOMEM;
		memcpy(copy, v.mv_data, v.mv_size);
		copy[0] |= CELL_GONE;
		rc = lmdb_cput_sealed(cur, &k, copy, v.mv_size, MDB_CURRENT);
		mrtx__free(copy);
	}
	return rc;
}

/* A copy of an MDB value (pages move under puts). */
static int copy_out(const MDB_val *v, uint8_t **out)
{
	if (!(*out = mrtx__malloc(v->mv_size ? v->mv_size : 1)))
		return ENOMEM;
	memcpy(*out, v->mv_data, v->mv_size);
	return 0;
}

int lmdb_cell_write(MDB_cursor *cur, const store_table *t, uint8_t *key, size_t plen,
                    uint8_t fid, mrtx_bytes qual, int del, mrtx_bytes value, uint64_t ts)
{
	store_policy p = store_table_policy(t, fid);
	uint8_t hk[MRTX_MAX_KEY + 16], *old = NULL;
	size_t klen = plen + 1 + qual.size, hplen;
	uint64_t now = mrtx__now_us(), ts0 = 0;
	uint8_t flags0 = 0;
	mrtx_bytes v0;
	MDB_val k, v;
	int rc, have, gone = 0, g = 0;

	if (klen > MRTX_MAX_KEY || plen + 4 + qual.size + 8 > MRTX_MAX_KEY)
		return MDB_BAD_VALSIZE; /* (store_check_key refuses such keys first) */
	key[plen] = fid;
	if (qual.size)
		memcpy(key + plen + 1, qual.data, qual.size);
	memcpy(hk, key, plen);
	hplen = lmdb_hist_prefix(hk, plen, fid, qual);
	k = mv(key, klen);
	rc = lmdb_cget(cur, &k, &v, MDB_SET);
	if (rc && rc != MDB_NOTFOUND)
		return rc;
	have = rc == 0;
	if (have && lmdb_cell_decode(&v, &ts0, &flags0, &v0))
		return MDB_CORRUPTED;
	if (!have && del)
		return 0; /* absent already */
	if (have && ts0 >= ts) {
		/* rewritten in the same version (or, from a damaged clock, an
		 * older one): no history entry between them */
		if (!del)
			return put_versioned(cur, key, klen, ts0, flags0, value, CELL_HDR,
			                     MDB_CURRENT);
		if ((rc = mdb_cursor_del(cur, 0)))
			return rc;
		return hist_put(cur, hk, hplen, ts0, CELL_DELETED | (flags0 & CELL_GONE),
		                MRTX_BYTES(NULL, 0));
	}
	if (!have) {
		/* a new cell, or one deleted before: its history (tombstones,
		 * older versions) is below the new version -- except a deletion
		 * at this very version (a row deleted, then this cell put, in
		 * one transaction), which the put replaces */
		k = mv(hk, hplen);
		rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
		if (rc == 0 && k.mv_size == hplen + 8 && memcmp(k.mv_data, hk, hplen) == 0 &&
		    ~get_be((const uint8_t *)k.mv_data + hplen, 8) == ts &&
		    (rc = lmdb_unseal(&k, &v)) == 0 && v.mv_size >= 1 &&
		    ((const uint8_t *)v.mv_data)[0] & CELL_DELETED) {
			gone = ((const uint8_t *)v.mv_data)[0] & CELL_GONE; /* (what it dropped) */
			if ((rc = mdb_cursor_del(cur, 0)))
				return rc;
		}
		if (rc && rc != MDB_NOTFOUND)
			return rc;
		/* (one version kept: trim drops the whole history) */
		if ((rc = trim(cur, hk, hplen, 0, ts, &p, now, &g)))
			return rc;
		return put_versioned(cur, key, klen, ts, gone || g ? CELL_GONE : 0, value, CELL_HDR,
		                     0);
	}
	if (p.max_versions == 1) {
		if (!(flags0 & CELL_GONE)) {
			/* history may be there, kept by a larger policy before
			 * mrtx_alter_family: drop it all, then back to the cell */
			if ((rc = trim(cur, hk, hplen, 0, ts, &p, now, &g)))
				return rc;
			k = mv(key, klen);
			if ((rc = lmdb_cget(cur, &k, &v, MDB_SET)))
				return rc;
		}
		if (!del)
			return put_versioned(cur, key, klen, ts, CELL_GONE, value, CELL_HDR,
			                     MDB_CURRENT);
		if ((rc = mdb_cursor_del(cur, 0)))
			return rc;
		return hist_put(cur, hk, hplen, ts, CELL_DELETED | CELL_GONE, MRTX_BYTES(NULL, 0));
	}
	/* keeps history: the old version moves there */
	if ((rc = copy_out(&v, &old)))
		return rc;
	v0 = MRTX_BYTES(old + CELL_HDR, v.mv_size - CELL_HDR);
	if (del)
		rc = mdb_cursor_del(cur, 0);
	if (rc == 0)
		rc = hist_put(cur, hk, hplen, ts0, flags0 & CELL_GONE, v0);
	mrtx__free(old);
	if (rc)
		return rc;
	if (del) {
		if ((rc = hist_put(cur, hk, hplen, ts, CELL_DELETED, MRTX_BYTES(NULL, 0))))
			return rc;
		return trim(cur, hk, hplen, 1, ts, &p, now, &gone);
	}
	if ((rc = trim(cur, hk, hplen, 0, ts, &p, now, &gone)))
		return rc;
	return put_versioned(cur, key, klen, ts, gone ? CELL_GONE : 0, value, CELL_HDR, 0);
}

int lmdb_cell_exists(MDB_cursor *cur, const store_table *t, mrtx_bytes row, uint8_t fid,
                     mrtx_bytes qual, int *have)
{
	uint8_t key[MRTX_MAX_KEY + 16], hk[MRTX_MAX_KEY + 16];
	size_t plen, klen, hplen;
	MDB_val k, v;
	int rc;

	*have = 0;
	if (!lmdb_row_fits(row, 1))
		return MDB_BAD_VALSIZE;
	plen = tkey_put(key, t, row);
	klen = plen + 1 + qual.size;
	if (klen > MRTX_MAX_KEY || plen + 4 + qual.size + 8 > MRTX_MAX_KEY)
		return MDB_BAD_VALSIZE; /* (store_check_key refuses such keys first) */
	key[plen] = fid;
	if (qual.size)
		memcpy(key + plen + 1, qual.data, qual.size);
	k = mv(key, klen);
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET); /* (the key only) */
	if (rc != MDB_NOTFOUND) {
		*have = rc == 0;
		return rc;
	}
	memcpy(hk, key, plen);
	hplen = lmdb_hist_prefix(hk, plen, fid, qual);
	k = mv(hk, hplen);
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc)
		return rc;
	*have = k.mv_size == hplen + 8 && memcmp(k.mv_data, hk, hplen) == 0;
	return 0;
}

int lmdb_cell_del_range(MDB_cursor *cur, const store_table *t, uint8_t *key, size_t plen,
                        int fid, uint64_t ts)
{
	uint8_t pk[MRTX_MAX_KEY + 16];
	size_t pl = plen + (fid >= 0);
	MDB_val k, v;
	int rc;

	memcpy(pk, key, plen);
	if (fid >= 0)
		pk[plen] = (uint8_t)fid;
	/* One current cell at a time, each found by a seek from the last one's
	 * key (gone by then): a delete moves the cursor (history, tombstone). */
	for (;;) {
		const uint8_t *kd;
		uint8_t cf;

		k = mv(pk, pl);
		rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); /* (keys only) */
		if (rc == MDB_NOTFOUND)
			return 0;
		if (rc)
			return rc;
		kd = k.mv_data;
		if (k.mv_size <= plen || memcmp(kd, key, plen) != 0 || kd[plen] == LOCK_TAG ||
		    (fid >= 0 && kd[plen] != (uint8_t)fid))
			return 0; /* past the row's (or the family's) cells */
		cf = kd[plen];
		memcpy(pk, kd, k.mv_size);
		pl = k.mv_size;
		if ((rc = lmdb_cell_write(cur, t, key, plen, cf,
		                          MRTX_BYTES(pk + plen + 1, pl - plen - 1), 1,
		                          MRTX_BYTES(NULL, 0), ts)))
			return rc;
	}
}

/* ----------------------------------------------------------------- reads */

static int ver_cmp(const void *a, const void *b)
{
	const store_ver *x = a, *y = b;

	return store_version_order(x->fid, x->qual.data, x->qual.size, x->ts, x->flags & CELL_DELETED,
	                     y->fid, y->qual.data, y->qual.size, y->ts, y->flags & CELL_DELETED);
}

/* Does f ask for the cell (fid, qual)? */
static int wanted(const store_filter *f, uint8_t fid, mrtx_bytes q)
{
	if (!f || f->family < 0)
		return 1;
	if (fid != (uint8_t)f->family)
		return 0;
	if (f->qual_exact)
		return cmp_bytes(q.data, q.size, f->qs.data, f->qs.size) == 0;
	if (f->qs.size && cmp_bytes(q.data, q.size, f->qs.data, f->qs.size) < 0)
		return 0;
	return !f->qe.size || cmp_bytes(q.data, q.size, f->qe.data, f->qe.size) < 0;
}

int lmdb_cell_read_versions(store *st, MDB_cursor *cur, const store_table *t, uint8_t *key,
                            size_t plen, const store_filter *f, mrtx_arena *a, store_row *out)
{
	size_t n = 0, cap = 0;
	store_ver *vs = NULL;
	MDB_val k, v;
	int rc;

	out->cells = NULL;
	out->ncells = 0;
	out->vmax = 0;
	if (f->lock_only)
		return 0;
	/* the current cells (the family's, when it is named) */
	if (f->family >= 0)
		key[plen] = (uint8_t)f->family;
	k = mv(key, plen + (f->family >= 0));
	for (rc = lmdb_seek(cur, &k, &v); rc == 0; rc = lmdb_step(cur, &k, &v, MDB_NEXT)) {
		const uint8_t *kd = k.mv_data;
		store_ver x;

		if (k.mv_size <= plen || memcmp(kd, key, plen) != 0 || kd[plen] == LOCK_TAG ||
		    (f->family >= 0 && kd[plen] != (uint8_t)f->family))
			break;
		x.fid = kd[plen];
		x.qual = MRTX_BYTES(kd + plen + 1, k.mv_size - plen - 1);
		if (!wanted(f, x.fid, x.qual))
			continue;
		if (lmdb_cell_decode(&v, &x.ts, &x.flags, &x.value))
			return mrtx__seterr(MRTX_ECORRUPT, "table '%s': a cell value without its "
			                    "version header", t->name);
		x.flags &= CELL_GONE;
		if ((rc = store_ver_add(a, &vs, &n, &cap, &x)))
			return rc;
	}
	if (rc && rc != MDB_NOTFOUND)
		return lmdb_err(st, rc, "read versions");
	/* the history, after the lock key */
	key[plen] = LOCK_TAG;
	k = mv(key, plen + 1);
	for (rc = lmdb_seek(cur, &k, &v); rc == 0; rc = lmdb_step(cur, &k, &v, MDB_NEXT)) {
		const uint8_t *kd = k.mv_data;
		store_ver x;

		if (k.mv_size <= plen || memcmp(kd, key, plen + 1) != 0)
			break;
		if (k.mv_size == plen + 1)
			continue; /* the lock */
		if (lmdb_hist_parse(kd, k.mv_size, plen, &x.fid, &x.qual, &x.ts) || v.mv_size < 1)
			return mrtx__seterr(MRTX_ECORRUPT, "table '%s': a malformed cell version",
			                    t->name);
		if (!wanted(f, x.fid, x.qual))
			continue;
		x.flags = ((const uint8_t *)v.mv_data)[0];
		x.value = MRTX_BYTES((const uint8_t *)v.mv_data + 1, v.mv_size - 1);
		if ((rc = store_ver_add(a, &vs, &n, &cap, &x)))
			return rc;
	}
	if (rc && rc != MDB_NOTFOUND)
		return lmdb_err(st, rc, "read versions");
	if (n > 1)
		qsort(vs, n, sizeof(*vs), ver_cmp);
	return store_versions_select(t, f, vs, n, a, out);
}

/* ------------------------------------------------------------ collection */

typedef struct gent {
	uint8_t key[MRTX_MAX_KEY];
	size_t klen;
	uint8_t fid, flags;
	int current;
	size_t qoff, qlen; /* the qualifier in key (an offset: qsort moves entries) */
	uint64_t ts;
} gent;

static int gent_cmp(const void *a, const void *b)
{
	const gent *x = a, *y = b;

	/* (the current cell is a value: it ranks first) */
	return store_version_order(x->fid, x->key + x->qoff, x->qlen, x->ts, !x->current,
	                     y->fid, y->key + y->qoff, y->qlen, y->ts, !y->current);
}

/* Set GONE on the version stored at e. */
static int mark_gone(MDB_txn *txn, MDB_dbi dbi, const gent *e)
{
	MDB_val k = mv(e->key, e->klen), v;
	size_t at = e->current ? 8 : 0;
	uint8_t *copy;
	int rc;

	if ((rc = lmdb_get(txn, dbi, &k, &v)))
		return rc;
	if (v.mv_size <= at || ((const uint8_t *)v.mv_data)[at] & CELL_GONE)
		return 0;
	if (!(copy = mrtx__malloc(v.mv_size)))
		return ENOMEM;
	memcpy(copy, v.mv_data, v.mv_size);
	copy[at] |= CELL_GONE;
	v = mv(copy, v.mv_size);
	rc = lmdb_put(txn, dbi, &k, &v, 0);
	mrtx__free(copy);
	return rc;
}

/* Collect one cell's versions e[0..n) (newest first) in txn. */
static int gc_cell(MDB_txn *txn, MDB_dbi dbi, const store_policy *p, gent *e, size_t n,
                   uint64_t safe, uint64_t now, uint64_t *collected)
{
	size_t keep = n;
	int rc;

	for (size_t i = 0; i < n; i++) {
		if (e[i].flags & CELL_DELETED && e[i].ts <= safe) {
			/* no snapshot from the safe point on reads past it; the newest
			 * one is itself absence, which no key says as well */
			keep = i == 0 ? 0 : i + 1;
			break;
		}
		if (!store_version_kept(p, i, e[i].ts, now)) {
			keep = i;
			break;
		}
	}
	if (keep == n)
		return 0;
	for (size_t i = keep; i < n; i++) {
		MDB_val k = mv(e[i].key, e[i].klen);

		if ((rc = mdb_del(txn, dbi, &k, NULL)) && rc != MDB_NOTFOUND)
			return rc;
		++*collected;
	}
	return keep ? mark_gone(txn, dbi, &e[keep - 1]) : 0;
}

/* End a collector's write transaction: commit it durably, or abort it on
 * LMDB error rc. */
static int gc_end_txn(store *st, MDB_txn *txn, int rc)
{
	if (rc) {
		lmdb_wabort(st, txn);
		return lmdb_err(st, rc, "collect");
	}
	st->w_dirty = 1;
	if ((rc = lmdb_commit(st, txn, 1)))
		return lmdb_err(st, rc, "collect");
	return 0;
}

int lmdb_store_gc_step(store *st, const store_table *t, uint8_t *row, size_t *rowlen,
                       uint64_t safe, size_t max_rows, int *done, uint64_t *collected)
{
	uint8_t kb[MRTX_MAX_KEY + 16], rowbuf[MRTX_MAX_KEY];
	gent *e = NULL;
	size_t ne = 0, cap = 0, rows = 0;
	uint64_t now = mrtx__now_us();
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_val k, v;
	int rc;

	*done = 0;
	if ((rc = lmdb_txn_begin(st, 0, &txn)))
		return rc;
	if ((rc = mdb_cursor_open(txn, st->dbi, &cur))) {
		lmdb_wabort(st, txn);
		return lmdb_err(st, rc, "collect");
	}
	kb[0] = (uint8_t)(LT(t)->kp >> 8);
	kb[1] = (uint8_t)LT(t)->kp;
	k = mv(kb, TPFX);
	if (*rowlen) {
		size_t n = TPFX + keyenc_put(kb + TPFX, row, *rowlen);

		k = mv(kb, MRTX_MIN(n, (size_t)MRTX_MAX_KEY));
	}
	rc = lmdb_cget(cur, &k, &v, MDB_SET_RANGE);
	while (rc == 0 && rows < max_rows) {
		const uint8_t *kd = k.mv_data;
		size_t used, rn, plen;

		if (!tkey_is(t, kd, k.mv_size)) {
			rc = MDB_NOTFOUND;
			break;
		}
		if ((rn = keyenc_get(rowbuf, kd + TPFX, k.mv_size - TPFX, &used)) == (size_t)-1 ||
		    TPFX + used >= k.mv_size) {
			rc = MDB_CORRUPTED;
			break;
		}
		plen = TPFX + used;
		memcpy(kb, kd, plen); /* this row's P . enc(row) */
		/* every key of the row: its cells, its lock, its history */
		ne = 0;
		while (rc == 0 && k.mv_size > plen && memcmp(k.mv_data, kb, plen) == 0) {
			gent *x;

			kd = k.mv_data;
			if (!(k.mv_size == plen + 1 && kd[plen] == 0xFF)) {
				if (ne == cap) {
					gent *ng = mrtx__reallocarray(e, cap ? cap * 2 : 16, sizeof(*e));

					if (!ng) {
						rc = ENOMEM;
						break;
					}
					e = ng;
					cap = cap ? cap * 2 : 16;
				}
				x = &e[ne];
				memcpy(x->key, kd, k.mv_size);
				x->klen = k.mv_size;
				x->current = kd[plen] != 0xFF;
				if (x->current) {
					mrtx_bytes val;

					if (lmdb_cell_decode(&v, &x->ts, &x->flags, &val)) {
						rc = MDB_CORRUPTED;
						break;
					}
					x->fid = kd[plen];
					x->qoff = plen + 1;
					x->qlen = k.mv_size - plen - 1;
				} else {
					mrtx_bytes q;

					if (lmdb_hist_parse(x->key, x->klen, plen, &x->fid, &q, &x->ts) ||
					    v.mv_size < 1) {
						rc = MDB_CORRUPTED;
						break;
					}
					x->qoff = (size_t)((const uint8_t *)q.data - x->key);
					x->qlen = q.size;
					x->flags = ((const uint8_t *)v.mv_data)[0];
				}
				ne++;
			}
			rc = lmdb_cget(cur, &k, &v, MDB_NEXT);
		}
		if (rc && rc != MDB_NOTFOUND)
			break;
		{
			int end = rc == MDB_NOTFOUND;

			if (ne > 1)
				qsort(e, ne, sizeof(*e), gent_cmp);
			for (size_t i = 0, j; i < ne && rc != ENOMEM; i = j) {
				store_policy p = store_table_policy(t, e[i].fid);

				for (j = i + 1; j < ne && e[j].fid == e[i].fid &&
				     cmp_bytes(e[j].key + e[j].qoff, e[j].qlen, e[i].key + e[i].qoff,
				               e[i].qlen) == 0; j++)
					;
				if ((rc = gc_cell(txn, st->dbi, &p, e + i, j - i, safe, now, collected)))
					break;
				rc = 0;
			}
			if (rc)
				break;
			rows++;
			/* the next row: past this one's keys (the deletes moved the cursor) */
			kb[plen] = 0xFF;
			if (plen + 2 <= MRTX_MAX_KEY) {
				kb[plen + 1] = 0xFF;
				k = mv(kb, plen + 2);
			} else {
				k = mv(kb, plen + 1);
			}
			rc = end ? MDB_NOTFOUND : lmdb_cget(cur, &k, &v, MDB_SET_RANGE);
			if (rc == 0 && plen + 2 > MRTX_MAX_KEY && k.mv_size == plen + 1 &&
			    memcmp(k.mv_data, kb, plen + 1) == 0)
				rc = lmdb_cget(cur, &k, &v, MDB_NEXT);
			*rowlen = 0;
			if (rc == 0 && tkey_is(t, k.mv_data, k.mv_size)) {
				size_t u2, n2 = keyenc_get(rowbuf, (const uint8_t *)k.mv_data + TPFX,
				                           k.mv_size - TPFX, &u2);

				if (n2 != (size_t)-1) {
					memcpy(row, rowbuf, n2);
					*rowlen = n2;
				}
			}
		}
	}
	mrtx__free(e);
	mdb_cursor_close(cur);
	if (rc == MDB_NOTFOUND || (rc == 0 && *rowlen == 0)) {
		*done = 1;
		rc = 0;
	}
	if (rc) {
		lmdb_wabort(st, txn);
		return rc == ENOMEM ? mrtx__seterr(MRTX_ENOMEM, "out of memory collecting") :
		       rc == MDB_CORRUPTED ? mrtx__seterr(MRTX_ECORRUPT, "table '%s': a malformed "
		                                          "cell met while collecting", t->name) :
		       lmdb_err(st, rc, "collect");
	}
	/* where the next step starts, in the same write: a crash resumes there */
	{
		uint8_t cv[8 + 1 + MRTX_MAX_NAME + MRTX_MAX_KEY];
		size_t nl = strlen(t->name), n = 0;
		MDB_val ck = mv(GC_CURSOR_KEY, GC_CURSOR_LEN), cval;

		for (unsigned i = 0; i < 8; i++)
			cv[n++] = (uint8_t)(safe >> (8 * i));
		cv[n++] = (uint8_t)nl;
		memcpy(cv + n, t->name, nl);
		n += nl;
		cv[n++] = (uint8_t)!!*done; /* 1: this table is done */
		if (!*done) {
			memcpy(cv + n, row, *rowlen);
			n += *rowlen;
		}
		cval = mv(cv, n);
		rc = lmdb_put(txn, st->dbi, &ck, &cval, 0);
	}
	return gc_end_txn(st, txn, rc);
}

int lmdb_store_gc_cursor(store *st, uint64_t *safe, char *table, uint8_t *row,
                         size_t *rowlen, int *table_done)
{
	lmdb_rtxn rt;
	MDB_val k = mv(GC_CURSOR_KEY, GC_CURSOR_LEN), v;
	const uint8_t *p;
	size_t nl;
	int rc;

	if ((rc = lmdb_rtxn_begin(st, &rt)))
		return rc;
	rc = lmdb_get(rt.txn, st->dbi, &k, &v);
	if (rc) {
		lmdb_rtxn_end(st, &rt);
		return rc == MDB_NOTFOUND ? MRTX_NOTFOUND : lmdb_err(st, rc, "read the collector's "
		                                                     "cursor");
	}
	p = v.mv_data;
	if (v.mv_size < 10 || (nl = p[8]) == 0 || nl > MRTX_MAX_NAME || v.mv_size < 10 + nl ||
	    v.mv_size - 10 - nl > MRTX_MAX_KEY || p[9 + nl] > 1) {
		lmdb_rtxn_end(st, &rt);
		return mrtx__seterr(MRTX_ECORRUPT, "%s: the collector's cursor is malformed",
		                    st->path);
	}
	*safe = 0;
	for (unsigned i = 0; i < 8; i++)
		*safe |= (uint64_t)p[i] << (8 * i);
	memcpy(table, p + 9, nl);
	table[nl] = '\0';
	*table_done = p[9 + nl];
	*rowlen = v.mv_size - 10 - nl;
	memcpy(row, p + 10 + nl, *rowlen);
	lmdb_rtxn_end(st, &rt);
	return 0;
}

int lmdb_gc_safe_raise(store *st, MDB_txn *txn, uint64_t safe)
{
	MDB_val sk = mv("\0" STORE_GC_SAFE_KEY, 7), v;
	uint8_t b[8];
	int rc = lmdb_get(txn, st->dbi, &sk, &v);

	if (rc && rc != MDB_NOTFOUND)
		return rc;
	if (safe <= (rc == 0 && v.mv_size == 8 ? mrtx__le64_get(v.mv_data) : 0))
		return 0;
	mrtx__le64_put(b, safe);
	v = mv(b, 8);
	return lmdb_put(txn, st->dbi, &sk, &v, 0);
}

int lmdb_store_gc_mark(store *st, uint64_t safe, int end)
{
	MDB_val ck = mv(GC_CURSOR_KEY, GC_CURSOR_LEN);
	MDB_txn *txn;
	int rc;

	if ((rc = lmdb_txn_begin(st, 0, &txn)))
		return rc;
	if (end) {
		rc = lmdb_del(txn, st->dbi, &ck);
		rc = rc == MDB_NOTFOUND ? 0 : rc;
	} else {
		rc = lmdb_gc_safe_raise(st, txn, safe);
	}
	return gc_end_txn(st, txn, rc);
}
