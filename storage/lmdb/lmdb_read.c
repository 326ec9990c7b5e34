/*
 * lmdb_read.c - the storage seam's reads on LMDB: rows, locks and scans
 * (views: lmdb_view.c; writes: lmdb_write.c).
 *
 * Layout (format 3): LMDB's one unnamed database holds every table, each
 * under its 2-byte key prefix P (lmdb_meta.c), with a row's cells and its
 * lock record side by side:
 *
 *     P . enc(row) . family-id . qualifier  ->  value        family-id 0..254
 *     P . enc(row) . 0xFF                   ->  lock record  (after the cells)
 *
 * so a commit dirties one B-tree and no named-database record, and a row's
 * lock and cells share pages.
 * Rows are found through their lock keys: every row a transaction ever
 * wrote has one, and cells without a lock key are damage to scans.
 *
 * Reads run in pooled read transactions (lmdb_env.c).
 */
#include "storage/lmdb/lmdb_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "storage/keyenc.h"

/* ---------------------------------------------------------------- reads */

int lmdb_row_fits(mrtx_bytes row, size_t extra)
{
	return TPFX + keyenc_size(row.data, row.size) + extra <= MRTX_MAX_KEY;
}

int lmdb_key_row(const MDB_val *k, uint8_t *rowbuf, mrtx_bytes *row, int *is_lock)
{
	const uint8_t *kd = (const uint8_t *)k->mv_data + TPFX;
	size_t used, n = keyenc_get(rowbuf, kd, k->mv_size - TPFX, &used);

	used += TPFX;
	if (n == (size_t)-1 || used >= k->mv_size)
		return MRTX_ECORRUPT;
	*row = MRTX_BYTES(rowbuf, n);
	*is_lock = k->mv_size == used + 1 && ((const uint8_t *)k->mv_data)[used] == LOCK_TAG;
	return 0;
}

/* Is k a history key (lmdb_cell.c: after its row's lock key)? */
static int key_is_hist(const MDB_val *k, mrtx_bytes row)
{
	size_t used = TPFX + keyenc_size(row.data, row.size);

	return k->mv_size > used + 1 && ((const uint8_t *)k->mv_data)[used] == LOCK_TAG;
}

/* key = P . enc(row).  Rows come from the API (checked) but also from lock
 * keys and lock records, which a damaged store could make too long to
 * encode. */
static int row_key_checked(uint8_t *key, const store_table *t, mrtx_bytes row, size_t *plen)
{
	/* A row this short encodes within any key buffer (2 * size + 2): encode,
	 * then check, in one pass over its bytes. */
	if (row.size <= (MRTX_MAX_KEY - TPFX - 2) / 2) {
		*plen = tkey_put(key, t, row);
		if (*plen + 1 <= MRTX_MAX_KEY)
			return 0;
	}
	if (!lmdb_row_fits(row, 1))
		return mrtx__seterr(MRTX_ECORRUPT, "table '%s': a %zu-byte row cannot be a key "
		                    "(damaged store?)", t->name, row.size);
	*plen = tkey_put(key, t, row);
	return 0;
}

/* Is the newest version of a cell of family fid, at ts, past the family's
 * TTL (and not kept by min_versions)?  Then reads do not show it. */
static int cell_expired(const store_table *t, unsigned fid, uint64_t ts)
{
	store_policy p = store_table_policy(t, fid);

	if (MRTX_LIKELY(!p.ttl_ms))
		return 0; /* (no clock read for a family without a TTL) */
	return !store_version_kept(&p, 0, ts, mrtx__now_us());
}

/* A read of a family the table dropped (the name resolved before this
 * handle learnt of it, at the read's refresh). */
static int family_gone(const store_table *t, unsigned fid)
{
	if (MRTX_LIKELY(!store_family_dropped(t, fid)))
		return 0;
	return mrtx__seterr(MRTX_ENOFAMILY, "table '%s': family '%s' was dropped", t->name,
	                    t->families[fid]);
}

static int damaged_keys(const store_table *t)
{
	return mrtx__seterr(MRTX_ECORRUPT, "table '%s': a lookup in the data file met keys out "
	                    "of order: the store is damaged (restore it from a backup)", t->name);
}

/*
 * Read row's cells (filtered) into out, moving cursor cur.  A cursor that
 * stands near the row (on its lock key, say) finds the cells without a
 * descent from the root: LMDB searches the current page first.
 * key[0..plen) = P . enc(row) (row_key_checked); key has room for
 * MRTX_MAX_KEY + 16 bytes and is scratch for this call.
 */
static int read_cells(store *st, MDB_cursor *cur, const store_table *t, uint8_t *key,
                      size_t plen, const store_filter *f, const MDB_val *first,
                      mrtx_arena *a, store_row *out)
{
	size_t cap = 0, klen = plen;
	MDB_val k, v, target, prev = { 0, NULL };
	int rc, op = MDB_SET_RANGE, qs_cut = 0, at_lock = 0;

	out->cells = NULL;
	out->ncells = 0;
	out->vmax = 0;
	if (f && f->lock_only)
		return 0;
	if (f && f->family >= 0) {
		key[plen++] = (uint8_t)f->family;
		klen = plen;
		if (f->qs.size) {
			/* Seek to the longest prefix of qs that fits this row's key:
			 * it sorts no later than qs.  A row too long for P . enc(row)
			 * . fid . qs still holds the cells above qs that fit (shorter
			 * ones); the loop skips the at most one cell below qs. */
			size_t room = klen < MRTX_MAX_KEY ? MRTX_MAX_KEY - klen : 0,
			       n = MRTX_MIN(f->qs.size, room);

			qs_cut = n < f->qs.size;
			memcpy(key + klen, f->qs.data, n);
			klen += n;
		}
	}
	k = target = mv(key, klen);
	if (f && f->family >= 0)
		first = NULL; /* (the seek lands on the family's first key) */
	for (;;) {
		store_cell *c;
		const uint8_t *kd;
		size_t encsize = plen - ((f && f->family >= 0) ? 1 : 0);
		int order = 0;

		rc = lmdb_cget(cur, &k, &v, op);
		/* the keys in order where the walk goes (lmdb_walk.c): the seek
		 * lands where a walk to the row went before (first), or where its
		 * neighbours say it should; each step goes on past the last key */
		if (op == MDB_SET_RANGE && first)
			order = rc == 0 && k.mv_data != first->mv_data &&
			        !(k.mv_size == first->mv_size && bytes_eq(k.mv_data, first->mv_data,
			                                                  k.mv_size)) ? LMDB_DISORDER : 0;
		else if (op == MDB_SET_RANGE && (rc == 0 || rc == MDB_NOTFOUND))
			order = lmdb_landing_check(cur, &target, rc == 0);
		else if (rc == 0 && !lmdb_key_after(&prev, &k))
			order = LMDB_DISORDER;
		if (order) {
			rc = order == LMDB_DISORDER ? damaged_keys(t) : lmdb_err(st, order, "read row");
			break;
		}
		op = MDB_NEXT;
		prev = k;
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
		if (!(out->cells = store_arr_grow(a, out->cells, out->ncells, &cap, sizeof(*c)))) {
			rc = MRTX_ENOMEM;
			break;
		}
		if (kd[encsize] == LOCK_TAG) {
			at_lock = 1;
			break; /* the row's lock key: its last key */
		}
		if (kd[encsize] >= t->nfamilies &&
		    /* a family added since we loaded t?  (store_add_family) */
		    ((rc = lmdb_store_table_refresh(st)) || kd[encsize] >= t->nfamilies)) {
			if (rc == 0)
				rc = mrtx__seterr(MRTX_ECORRUPT, "table '%s': cell with unknown "
				                  "family id %u", t->name, kd[encsize]);
			break;
		}
		if (qs_cut && cmp_bytes(kd + plen, k.mv_size - plen, f->qs.data, f->qs.size) < 0)
			continue;
		{
			uint64_t ts;
			uint8_t flags;
			mrtx_bytes val;

			if (lmdb_cell_decode(&v, &ts, &flags, &val)) {
				rc = mrtx__seterr(MRTX_ECORRUPT, "table '%s': a cell value without "
				                  "its version header", t->name);
				break;
			}
			if (cell_expired(t, kd[encsize], ts))
				continue;
			c = &out->cells[out->ncells++];
			c->fid = kd[encsize];
			c->ts = ts;
			c->qual = MRTX_BYTES(arena_dup(a, kd + encsize + 1, k.mv_size - encsize - 1),
			                     k.mv_size - encsize - 1);
			c->value = MRTX_BYTES(arena_dup(a, val.data, val.size), val.size);
		}
		if (!c->qual.data || !c->value.data) {
			rc = MRTX_ENOMEM;
			break;
		}
	}
	/* every family read, of a row with a lock: the walk ends on that lock
	 * key, its last; ending elsewhere means a damaged key ended it early */
	if (rc == 0 && out->has_lock && !(f && f->family >= 0) && !at_lock)
		rc = mrtx__seterr(MRTX_ECORRUPT, "table '%s': a row's keys out of order in the "
		                  "data file: the store is damaged (restore it from a backup)",
		                  t->name);
	return rc;
}

/*
 * A key looked up was not there: is the tree around it sound?  The first
 * key at or above it must be above it, and its neighbours in order around
 * it (lmdb_walk.c): a damaged branch key sends a lookup to the wrong leaf,
 * and a damaged node offset the search past the key, where it is missing
 * although the store holds it.  Costs a few steps, on misses only; the
 * cursor is left anywhere.
 */
static int miss_check(MDB_cursor *cur, const store_table *t, const uint8_t *key, size_t n)
{
	MDB_val target = mv(key, n), k = target, v;
	int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);

	if (rc == 0 && lmdb_key_cmp(&k, &target) < 0)
		return damaged_keys(t);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return 0; /* (an error of the walk itself: the caller's read stands) */
	rc = lmdb_landing_check(cur, &target, rc == 0);
	return rc == LMDB_DISORDER ? damaged_keys(t) : 0;
}

/* key[0..plen) = P . enc(row); key[plen] is overwritten. */
static int read_lock_at(store *st, MDB_cursor *cur, const store_table *t, uint8_t *key,
                        size_t plen, mrtx_bytes row, mrtx_arena *a, store_row *out)
{
	MDB_val k = mv(key, plen + 1), v;
	int rc;

	key[plen] = LOCK_TAG;
	rc = lmdb_cget(cur, &k, &v, MDB_SET);
	out->row = row;
	out->has_lock = 0;
	out->lock = MRTX_BYTES(NULL, 0);
	if (rc == MDB_NOTFOUND)
		return miss_check(cur, t, key, plen + 1);
	if (rc)
		return lmdb_err(st, rc, "read lock");
	if (!(out->lock.data = arena_dup(a, v.mv_data, v.mv_size)))
		return MRTX_ENOMEM;
	out->lock.size = v.mv_size;
	out->has_lock = 1;
	return 0;
}

static int read_lock(store *st, MDB_cursor *cur, const store_table *t, mrtx_bytes row,
                     mrtx_arena *a, store_row *out)
{
	uint8_t key[MRTX_MAX_KEY + 1];
	size_t plen = 0;
	int rc;

	if ((rc = row_key_checked(key, t, row, &plen)))
		return rc;
	return read_lock_at(st, cur, t, key, plen, row, a, out);
}

/*
 * One cell and the row's lock in one descent: position on the cell's key,
 * then step forward to the lock key, which is the row's last key.  A row
 * with many cells after this one is not walked: after a few steps the lock
 * is looked up directly, from a cursor that already stands near it.
 * lazy: the view holds no unsettled lock record (lmdb_unsettled.c), and the
 * caller takes the row's lock as read later from the same view: the cell
 * alone (out->lock_lazy).  The walk to the lock was a tenth of a point
 * read in a row of four cells.
 * key[0..plen) = P . enc(row), room for MRTX_MAX_KEY + 16 bytes.
 */
#define EXACT_WALK 6

static int read_cell_exact(store *st, MDB_cursor *cur, const store_table *t, uint8_t *key,
                           size_t plen, mrtx_bytes row, const store_filter *f, int lazy,
                           mrtx_arena *a, store_row *out)
{
	size_t klen = plen + 1 + f->qs.size;
	MDB_val k, v, prev;
	int rc, steps = 0, hit;

	out->row = row;
	out->has_lock = 0;
	out->lock = MRTX_BYTES(NULL, 0);
	out->cells = NULL;
	out->ncells = 0;
	out->vmax = 0;
	if (klen > MRTX_MAX_KEY + 16)
		return mrtx__seterr(MRTX_ETOOBIG, "qualifier too long");
	key[plen] = (uint8_t)f->family;
	if (f->qs.size)
		memcpy(key + plen + 1, f->qs.data, f->qs.size);
	k = mv(key, klen);
	/* (raw: a value is unsealed only where it is used, the cell's on a hit
	 * and the lock's at the end of the walk) */
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	if (rc == 0 && lmdb_key_cmp(&k, &(MDB_val){ .mv_size = klen, .mv_data = key }) < 0)
		return damaged_keys(t);
	hit = rc == 0 && k.mv_size == klen && bytes_eq(k.mv_data, key, klen);
	if (hit && (rc = lmdb_unseal(&k, &v)))
		return lmdb_err(st, rc, "read row");
	if (!hit && (rc == 0 || rc == MDB_NOTFOUND)) {
		/* a miss: the cell's neighbours say whether it is truly absent */
		int order = lmdb_landing_check(cur, &(MDB_val){ .mv_size = klen, .mv_data = key },
		                               rc == 0);

		if (order)
			return order == LMDB_DISORDER ? damaged_keys(t) : lmdb_err(st, order, "read row");
	}
	if (hit) {
		store_cell *c;
		uint64_t ts;
		uint8_t flags;
		mrtx_bytes val;

		if (lmdb_cell_decode(&v, &ts, &flags, &val))
			return mrtx__seterr(MRTX_ECORRUPT, "a cell value without its version header");
		if (!cell_expired(t, (unsigned)f->family, ts)) {
			if (!(c = out->cells = arena_alloc(a, sizeof(*c) + (val.size ? val.size : 1))))
				return MRTX_ENOMEM;
			c->fid = (uint8_t)f->family;
			c->ts = ts;
			c->qual = f->qs; /* the caller's bytes: see store.h */
			c->value = MRTX_BYTES(val.size ? memcpy(c + 1, val.data, val.size) : (void *)(c + 1),
			                      val.size);
			out->ncells = 1;
		}
		if (!lazy) {
			prev = k;
			rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT); /* (raw: the walk below) */
			if (rc == 0 && !lmdb_key_after(&prev, &k))
				return damaged_keys(t);
		}
	}
	if (lazy) {
		if (rc && rc != MDB_NOTFOUND)
			return lmdb_err(st, rc, "read row");
		out->lock_lazy = 1;
		return 0;
	}
	/*
	 * Step to the lock key, the row's last.  Every key between the cell's
	 * and the lock's starts with P . enc(row) (both do), so only a key
	 * shaped like the lock key needs its prefix checked; a row without a
	 * lock (not written through mrtx) ends when the walk leaves it, or at
	 * the direct lookup after EXACT_WALK steps.
	 */
	for (int first = !out->ncells;; first = 0) {
		const uint8_t *kd = k.mv_data;

		if (rc == MDB_NOTFOUND)
			return 0; /* past the last key: no lock */
		if (rc)
			return lmdb_err(st, rc, "read row");
		if (k.mv_size == plen + 1 && kd[plen] == LOCK_TAG) {
			if (!bytes_eq(kd, key, plen))
				return 0; /* another row's lock */
			break;
		}
		if (first && (k.mv_size <= plen || !bytes_eq(kd, key, plen)))
			return miss_check(cur, t, key, klen); /* no such row (a found
			                                       * cell proved the row) */
		if (++steps > EXACT_WALK) {
			key[plen] = LOCK_TAG;
			k = mv(key, plen + 1);
			rc = mdb_cursor_get(cur, &k, &v, MDB_SET);
			if (rc == MDB_NOTFOUND)
				return miss_check(cur, t, key, plen + 1);
			if (rc)
				return lmdb_err(st, rc, "read lock");
			break;
		}
		prev = k;
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
		if (rc == 0 && !lmdb_key_after(&prev, &k))
			return damaged_keys(t);
	}
	if ((rc = lmdb_unseal(&k, &v)))
		return lmdb_err(st, rc, "read lock");
	if (!(out->lock.data = arena_dup(a, v.mv_data, v.mv_size)))
		return MRTX_ENOMEM;
	out->lock.size = v.mv_size;
	out->has_lock = 1;
	return 0;
}

/* The read transaction of a call: the view's (held open by its owner), or
 * one of the pool's for this call alone. */
static int rt_get(store *st, lmdb_rtxn *view, lmdb_rtxn *rt)
{
	if (view) {
		*rt = *view;
		return 0;
	}
	return lmdb_rtxn_begin(st, rt);
}

static void rt_put(store *st, lmdb_rtxn *view, lmdb_rtxn *rt)
{
	if (!view)
		lmdb_rtxn_end(st, rt);
}

int lmdb_store_read_row(store *st, lmdb_rtxn *view, const store_table *t, mrtx_bytes row,
                        const store_filter *f, mrtx_arena *a, store_row *out)
{
	uint8_t key[MRTX_MAX_KEY + 16];
	lmdb_rtxn rt;
	size_t plen = 0;
	int rc;

	if ((rc = STORE_FAULT(st, "read row (injected fault)")))
		return rc;
	if ((rc = row_key_checked(key, t, row, &plen)) || (rc = rt_get(st, view, &rt)))
		return rc;
	if ((rc = lmdb_table_rcheck(st, &rt, t)) ||
	    (f && f->family >= 0 && (rc = family_gone(t, (unsigned)f->family)))) {
		rt_put(st, view, &rt);
		return rc;
	}
	if (f && (f->at || f->versions > 1)) {
		if ((rc = read_lock_at(st, rt.cur, t, key, plen, row, a, out)) == 0)
			rc = lmdb_cell_read_versions(st, rt.cur, t, key, plen, f, a, out);
	} else if (f && f->qual_exact && f->family >= 0) {
		rc = read_cell_exact(st, rt.cur, t, key, plen, row, f,
		                     f->lazy_lock && view && view->settled, a, out);
	} else {
		/* the lock first: the cells are then found from its page */
		if ((rc = read_lock_at(st, rt.cur, t, key, plen, row, a, out)) == 0)
			rc = read_cells(st, rt.cur, t, key, plen, f, NULL, a, out);
	}
	rt_put(st, view, &rt);
	return rc;
}

int lmdb_store_read_locks(store *st, lmdb_rtxn *view, const store_rowref *refs, size_t n,
                          mrtx_arena *a, store_row *out)
{
	lmdb_rtxn rt;
	int rc = 0;

	if (n == 0)
		return 0;
	if ((rc = STORE_FAULT(st, "read locks (injected fault)")))
		return rc;
	if ((rc = rt_get(st, view, &rt)))
		return rc;
	for (size_t i = 0; i < n && rc == 0; i++) {
		if ((rc = lmdb_table_rcheck(st, &rt, refs[i].table)))
			break;
		rc = read_lock(st, rt.cur, refs[i].table, refs[i].row, a, &out[i]);
		out[i].cells = NULL;
		out[i].ncells = 0;
		out[i].vmax = 0;
	}
	rt_put(st, view, &rt);
	return rc;
}

MDB_val lmdb_bound_key(uint8_t *buf, const store_table *t, mrtx_bytes b)
{
	uint8_t tmp[TPFX + 2 * MRTX_MAX_ROW + 2];
	size_t n = tkey_put(tmp, t, MRTX_BYTES(b.data, MRTX_MIN(b.size, (size_t)MRTX_MAX_ROW)));

	n = MRTX_MIN(n, (size_t)MRTX_MAX_KEY);
	memcpy(buf, tmp, n);
	return mv(buf, n);
}

#define ROW_WALK 16 /* keys a scan walks in a row before it seeks */

/* Cells without the lock record every row a transaction wrote has (its
 * key damaged, or the record lost with its page): a scan would skip the
 * row.  (check --deep reports the same.) */
static int lockless(const store_table *t)
{
	return mrtx__seterr(MRTX_ECORRUPT, "table '%s': a row's cells without its lock record "
	                    "in the data file: the store is damaged (restore it from a backup)",
	                    t->name);
}

/* The lock key kb[0..n] (kb[n] = LOCK_TAG) of a row whose cells the
 * cursor stands among: a seek. */
static int seek_lock(MDB_cursor *cur, const store_table *t, const uint8_t *kb, size_t n,
                     MDB_val *k, MDB_val *v)
{
	int rc;

	*k = mv(kb, n + 1);
	rc = lmdb_cget(cur, k, v, MDB_SET_RANGE);
	if (rc == MDB_NOTFOUND || (rc == 0 && !(k->mv_size == n + 1 && bytes_eq(k->mv_data, kb,
	                                                                         n + 1))))
		return lockless(t);
	return rc;
}

/* From the first key of the row whose P . enc(row) is kb[0..n) (the cursor
 * on it, in *k) to its lock key (kb[n] = LOCK_TAG), walking so that every
 * key on the way is seen in order (lmdb_walk.c), or seeking when the row
 * has more cells than ROW_WALK. */
static int walk_to_lock(MDB_cursor *cur, const store_table *t, const uint8_t *kb, size_t n,
                        MDB_val *k, MDB_val *v)
{
	int rc;

	for (int i = 0; i < ROW_WALK; i++) {
		MDB_val prev = *k;

		if ((rc = mdb_cursor_get(cur, k, v, MDB_NEXT)) == MDB_NOTFOUND)
			return lockless(t);
		if (rc)
			return rc;
		if (!lmdb_key_after(&prev, k))
			return damaged_keys(t);
		if (k->mv_size == n + 1 && bytes_eq(k->mv_data, kb, n + 1))
			return lmdb_unseal(k, v);
		if (k->mv_size <= n || !bytes_eq(k->mv_data, kb, n) ||
		    ((const uint8_t *)k->mv_data)[n] == LOCK_TAG)
			return lockless(t); /* the row ended, or its history began */
	}
	return seek_lock(cur, t, kb, n, k, v);
}

/*
 * A forward scan's read of one row on the way to its lock: the cursor
 * stands on the row's first key (*k, a cell: the lock key follows the
 * cells), and the row's cells are taken as they are walked past, as
 * read_cells would take them after a seek back from the lock, the lock
 * found at the end of the walk (*k, *v unsealed, the cursor on it); raw:
 * *v is the first key's value as stored (else it is read again); pinned:
 * the read transaction is the caller's view, and the cells' qualifiers and
 * values point into its pages instead of copies in a.  Not
 * for a qualifier range (read_cells seeks to it).  Returns 1 when the lock
 * is not among the row's first ROW_WALK keys: nothing kept (nothing copied
 * yet), the cursor somewhere in the row (seek_lock then).  Errors are the
 * library's (lmdb_err).
 */
static int walk_cells(store *st, MDB_cursor *cur, const store_table *t, const uint8_t *kb,
                      size_t n, const store_filter *f, mrtx_arena *a, store_row *out,
                      int raw, int pinned, MDB_val *k, MDB_val *v)
{
	/* the cells met, pointing into the read transaction's pages (valid
	 * while it lasts): copied once the lock ends the walk, unless it is
	 * the caller's view (pinned), which outlasts the rows returned */
	store_cell seen[ROW_WALK];
	size_t nseen = 0;
	int rc;

	out->cells = NULL;
	out->ncells = 0;
	out->vmax = 0;
	for (int i = 0; i < ROW_WALK; i++) {
		const uint8_t *kd;
		uint64_t ts;
		uint8_t flags, fid;
		mrtx_bytes val;

		if (!i) {
			/* (the value as stored: the step here may have unsealed it) */
			if (!raw && (rc = mdb_cursor_get(cur, k, v, MDB_GET_CURRENT)))
				return lmdb_err(st, rc, "scan");
		} else {
			MDB_val prev = *k;

			if ((rc = mdb_cursor_get(cur, k, v, MDB_NEXT)) == MDB_NOTFOUND)
				return lockless(t);
			if (rc)
				return lmdb_err(st, rc, "scan");
			if (!lmdb_key_after(&prev, k))
				return damaged_keys(t);
		}
		kd = k->mv_data;
		if (k->mv_size == n + 1 && bytes_eq(kd, kb, n + 1)) {
			if ((rc = lmdb_unseal(k, v)))
				return lmdb_err(st, rc, "scan");
			if (nseen && !(out->cells = arena_alloc(a, nseen * sizeof(*out->cells))))
				return MRTX_ENOMEM;
			/* (one copy of the array: a struct at a time took a slow
			 * string move each) */
			if (nseen)
				memcpy(out->cells, seen, nseen * sizeof(*seen));
			for (size_t c = 0; c < nseen && !pinned; c++) {
				store_cell *o = &out->cells[c];

				o->qual.data = arena_dup(a, seen[c].qual.data, seen[c].qual.size);
				o->value.data = arena_dup(a, seen[c].value.data, seen[c].value.size);
				if (!o->qual.data || !o->value.data)
					return MRTX_ENOMEM;
			}
			out->ncells = nseen;
			return 0;
		}
		if (k->mv_size <= n || !bytes_eq(kd, kb, n) || kd[n] == LOCK_TAG)
			return lockless(t); /* the row ended, or its history began */
		if ((fid = kd[n]) >= t->nfamilies &&
		    /* a family added since we loaded t?  (store_add_family) */
		    ((rc = lmdb_store_table_refresh(st)) || fid >= t->nfamilies))
			return rc ? rc : mrtx__seterr(MRTX_ECORRUPT, "table '%s': cell with unknown "
			                              "family id %u", t->name, fid);
		if (f && (f->lock_only || (f->family >= 0 && fid != (uint8_t)f->family)))
			continue;
		if ((rc = lmdb_unseal(k, v)))
			return lmdb_err(st, rc, "scan");
		if (lmdb_cell_decode(v, &ts, &flags, &val))
			return mrtx__seterr(MRTX_ECORRUPT, "table '%s': a cell value without its "
			                    "version header", t->name);
		if (cell_expired(t, fid, ts))
			continue;
		seen[nseen++] = (store_cell){ .fid = fid, .ts = ts,
		                              .qual = MRTX_BYTES(kd + n + 1, k->mv_size - n - 1),
		                              .value = val };
	}
	return 1;
}

/* A seek of a scan landed on k (rc: the seek's): its neighbours in order
 * (lmdb_walk.c)?  rc, or MRTX_ECORRUPT. */
static int landed(MDB_cursor *cur, const store_table *t, const MDB_val *target, int rc)
{
	int order;

	if (rc != 0 && rc != MDB_NOTFOUND)
		return rc;
	if ((order = lmdb_landing_check(cur, target, rc == 0)))
		return order == LMDB_DISORDER ? damaged_keys(t) : order;
	return rc;
}

/* From the row whose P . enc(row) is key[0..n) (key has room for
 * MRTX_MAX_KEY + 1 bytes) to the next row's first key by a seek: past the
 * lock key and the history after it (lmdb_cell.c: history keys continue
 * with a family id, at most 254). */
static int seek_past_row(MDB_cursor *cur, const store_table *t, uint8_t *key, size_t n,
                         MDB_val *k, MDB_val *v)
{
	MDB_val target, prev;
	int rc;

	key[n] = LOCK_TAG;
	if (n + 2 <= MRTX_MAX_KEY) {
		key[n + 1] = 0xFF;
		*k = target = mv(key, n + 2);
		return landed(cur, t, &target, lmdb_cget(cur, k, v, MDB_SET_RANGE));
	}
	/* (a row this long has no room for history keys) */
	*k = target = mv(key, n + 1);
	rc = landed(cur, t, &target, lmdb_cget(cur, k, v, MDB_SET_RANGE));
	if (rc == 0 && k->mv_size == n + 1 && memcmp(k->mv_data, key, n + 1) == 0) {
		prev = *k;
		rc = lmdb_cget(cur, k, v, MDB_NEXT);
		if (rc == 0 && !lmdb_key_after(&prev, k))
			return damaged_keys(t);
	}
	return rc;
}

/*
 * Forward, from a key prev of the row whose P . enc(row) is key[0..n) (the
 * cursor on it; key has room for MRTX_MAX_KEY + 1 bytes, its bytes from n
 * on are overwritten) to the next row's first key: lmdb_step_row's walk,
 * for a caller that has both at hand already.  *raw (may be NULL): the
 * value left in *v is as stored (the walk unseals only a key ending in
 * LOCK_TAG; the seek, every data key).
 */
static int step_past_row(MDB_cursor *cur, const store_table *t, uint8_t *key, size_t n,
                         MDB_val prev, MDB_val *k, MDB_val *v, int *raw)
{
	int rc;

	if (raw)
		*raw = 0;
	for (int i = 0; i < ROW_WALK; i++) {
		if ((rc = mdb_cursor_get(cur, k, v, MDB_NEXT)))
			return rc;
		if (!lmdb_key_after(&prev, k))
			return damaged_keys(t);
		if (!(k->mv_size > n && bytes_eq(k->mv_data, key, n))) {
			/* the next row: its value is used when it is a lock (a
			 * lock key ends in LOCK_TAG; so may a cell's) */
			if (((const uint8_t *)k->mv_data)[k->mv_size - 1] == LOCK_TAG)
				return lmdb_unseal(k, v);
			if (raw)
				*raw = 1;
			return 0;
		}
		prev = *k;
	}
	return seek_past_row(cur, t, key, n, k, v);
}

int lmdb_step_row(MDB_cursor *cur, const store_table *t, mrtx_bytes row, int reverse,
                    MDB_val *k, MDB_val *v)
{
	uint8_t key[MRTX_MAX_KEY + 1];
	size_t n = tkey_put(key, t, row);
	MDB_val target, prev;
	int rc;

	if (reverse) {
		*k = target = mv(key, n);
		rc = lmdb_cget(cur, k, v, MDB_SET_RANGE);
		/* (the row is there: the seek lands on its first key, unless a
		 * damaged key sits out of order before it) */
		if (rc == 0 && !(k->mv_size >= n && memcmp(k->mv_data, key, n) == 0))
			return mrtx__seterr(MRTX_ECORRUPT, "table '%s': a key out of order in the "
			                    "data file: the store is damaged (restore it from a "
			                    "backup)", t->name);
		if ((rc = landed(cur, t, &target, rc)))
			return rc;
		rc = lmdb_step_back(cur, k, v, MDB_PREV);
		return rc == LMDB_DISORDER ? damaged_keys(t) : rc;
	}
	if (mdb_cursor_get(cur, &prev, v, MDB_GET_CURRENT) == 0 && prev.mv_size >= n &&
	    bytes_eq(prev.mv_data, key, n))
		return step_past_row(cur, t, key, n, prev, k, v, NULL);
	return seek_past_row(cur, t, key, n, k, v);
}

/* Room for one more row in a scan's batch: 16 rows at first (or max_rows,
 * when fewer), then doubling.  The arrays stay in the transaction's arena
 * until it ends, so a batch's whole array at its first row would make each
 * short scan (an index lookup, a one-row range) cost a full batch's
 * memory; a full batch of 128 rows pays three copies instead. */
static store_row *rows_grow(mrtx_arena *a, store_row *rows, size_t n, size_t *cap,
                            size_t max_rows)
{
	if (!*cap) {
		*cap = max_rows && max_rows < 16 ? max_rows : 16;
		return arena_alloc(a, *cap * sizeof(*rows));
	}
	return store_arr_grow(a, rows, n, cap, sizeof(*rows));
}

/* out's row and lock record (v): copies, in one piece of a. */
static int keep_row_lock(mrtx_arena *a, store_row *out, mrtx_bytes row, const MDB_val *v)
{
	uint8_t *d = arena_alloc(a, MRTX_MAX(row.size + v->mv_size, 1));

	if (!d)
		return MRTX_ENOMEM;
	memcpy(d, row.data, row.size);
	memcpy(d + row.size, v->mv_data, v->mv_size);
	out->row = MRTX_BYTES(d, row.size);
	out->lock = MRTX_BYTES(d + row.size, v->mv_size);
	out->has_lock = 1;
	return 0;
}

/*
 * A scan leaves the table: is the key k that ended it (forward: after the
 * table's keys; reverse: before them) really past it, and the key beyond
 * it no key of the table?  A damaged key (a flipped prefix byte) sits out
 * of order in LMDB's tree, where it would end the scan early with a short
 * result; one step more tells.
 */
static int scan_end_check(MDB_cursor *cur, const store_table *t, int reverse, MDB_val *k,
                          MDB_val *v)
{
	const uint8_t *p = k->mv_data;
	unsigned kp = k->mv_size >= TPFX ? (unsigned)p[0] << 8 | p[1] : 0;
	int rc;

	if (reverse ? kp >= LT(t)->kp : kp <= LT(t)->kp)
		return mrtx__seterr(MRTX_ECORRUPT, "table '%s': a key out of order in the data "
		                    "file: the store is damaged (restore it from a backup)",
		                    t->name);
	rc = reverse ? lmdb_step_back(cur, k, v, MDB_PREV) : lmdb_cget(cur, k, v, MDB_NEXT);
	if (rc == LMDB_DISORDER)
		return damaged_keys(t);
	if (rc == 0 && tkey_is(t, k->mv_data, k->mv_size))
		return mrtx__seterr(MRTX_ECORRUPT, "table '%s': a key of another table among its "
		                    "keys in the data file: the store is damaged (restore it "
		                    "from a backup)", t->name);
	return rc == 0 || rc == MDB_NOTFOUND ? 0 : rc;
}

int lmdb_store_scan_rows(store *st, lmdb_rtxn *view, const store_table *t,
                         const store_range *r, int reverse, const store_filter *f,
                         size_t max_rows, mrtx_arena *a, store_row **rows, size_t *nrows,
                         int *more)
{
	/* each row is decoded into one buffer while the row before stays in
	 * the other, for the order check: rowbuf[rb] is the next to use */
	uint8_t kb[MRTX_MAX_KEY + 1], rowbuf[2][MRTX_MAX_KEY + 1];
	mrtx_bytes prev = MRTX_BYTES(NULL, 0);
	unsigned rb = 0;
	int inside = 0; /* a row met was not before the range (in scan order):
	                   every later one, past it in order, is not either */
	lmdb_rtxn rt;
	MDB_cursor *cur;
	MDB_val k, v, target, first;
	size_t cap = 0;
	int rc, c, raw = 0; /* raw: v is k's value as stored (not unsealed) */

	*rows = NULL;
	*nrows = 0;
	*more = 0;
	if ((rc = STORE_FAULT(st, "scan (injected fault)")))
		return rc;
	if ((rc = rt_get(st, view, &rt)))
		return rc;
	if ((rc = lmdb_table_rcheck(st, &rt, t)) ||
	    (f && f->family >= 0 && (rc = family_gone(t, (unsigned)f->family))))
		goto done;
	cur = rt.cur;
	/* Position near the first row of the range in scan order. */
	if (!reverse) {
		if (r->lo.size) {
			k = lmdb_bound_key(kb, t, r->lo);
		} else {
			kb[0] = (uint8_t)(LT(t)->kp >> 8); /* the table's first key */
			kb[1] = (uint8_t)LT(t)->kp;
			k = mv(kb, TPFX);
		}
		target = k;
		rc = landed(cur, t, &target, lmdb_cget(cur, &k, &v, MDB_SET_RANGE));
	} else {
		if (r->hi.size) {
			k = lmdb_bound_key(kb, t, r->hi);
		} else {
			kb[0] = (uint8_t)((LT(t)->kp + 1) >> 8); /* just past the table */
			kb[1] = (uint8_t)(LT(t)->kp + 1);
			k = mv(kb, TPFX);
		}
		target = k;
		rc = landed(cur, t, &target, lmdb_cget(cur, &k, &v, MDB_SET_RANGE));
		rc = rc == 0 ? lmdb_step_back(cur, &k, &v, MDB_PREV) :
		     rc == MDB_NOTFOUND ? lmdb_step_back(cur, &k, &v, MDB_LAST) : rc;
		if (rc == LMDB_DISORDER) {
			rc = damaged_keys(t);
			goto done;
		}
	}
	/* Forward, the cursor stands on a row's first key; reverse, on its last
	 * (its lock key when it has one).  A key of another table (or of the
	 * metadata) ends the scan. */
	while (rc == 0) {
		mrtx_bytes row;
		store_row *out;
		int is_lock, was_raw = raw;

		raw = 0;
		if (!tkey_is(t, k.mv_data, k.mv_size)) {
			if ((rc = scan_end_check(cur, t, reverse, &k, &v)) == MRTX_ECORRUPT)
				goto done;
			break;
		}
		if (lmdb_key_row(&k, rowbuf[rb], &row, &is_lock)) {
			rc = mrtx__seterr(MRTX_ECORRUPT, "table '%s': undecodable key in the data "
			                  "database", t->name);
			goto done;
		}
		/* each step lands on a row past the last one: a damaged tree
		 * that sends a seek back would make the scan go round for ever */
		if (prev.data && (c = cmp_bytes(row.data, row.size, prev.data, prev.size),
		                  reverse ? c >= 0 : c <= 0)) {
			rc = mrtx__seterr(MRTX_ECORRUPT, "table '%s': keys out of order in the data "
			                  "file: the store is damaged (restore it from a backup)",
			                  t->name);
			goto done;
		}
		prev = row;
		rb ^= 1;
		if (reverse ? store_range_before(r, row) : store_range_past(r, row))
			break;
		if (reverse && key_is_hist(&k, row)) {
			/* the row's history, after its lock key: go to the lock */
			size_t n = TPFX + keyenc_size(row.data, row.size);

			memcpy(kb, k.mv_data, n);
			kb[n] = LOCK_TAG;
			k = mv(kb, n + 1);
			if ((rc = lmdb_cget(cur, &k, &v, MDB_SET)) == MDB_NOTFOUND) {
				rc = lockless(t); /* (a row's history without its lock) */
				goto done;
			}
			if (rc)
				break;
			is_lock = 1;
		}
		if (!inside && (reverse ? store_range_past(r, row) : store_range_before(r, row))) {
			rc = lmdb_step_row(cur, t, row, reverse, &k, &v);
			continue;
		}
		inside = 1;
		/* (forward, the row's first key, which the walk reached in order) */
		first = k;
		if (!is_lock && !reverse) {
			/* cells first: jump to the row's lock key, if it has one */
			size_t n = TPFX + keyenc_size(row.data, row.size);

			memcpy(kb, k.mv_data, n);
			kb[n] = LOCK_TAG;
			if ((!f || (!f->at && f->versions <= 1 && !f->qs.size && !f->qe.size)) &&
			    !(max_rows && *nrows == max_rows)) {
				/* the cells on the way, then step on from the lock */
				if (!(*rows = rows_grow(a, *rows, *nrows, &cap, max_rows))) {
					rc = MRTX_ENOMEM;
					goto done;
				}
				out = &(*rows)[(*nrows)++];
				if ((rc = walk_cells(st, cur, t, kb, n, f, a, out, was_raw,
				                     view != NULL, &k, &v)) == 0) {
					if ((rc = keep_row_lock(a, out, row, &v)))
						goto done;
					/* (the cursor on the lock key, k: on from there) */
					rc = step_past_row(cur, t, kb, n, k, &k, &v, &raw);
					continue;
				}
				(*nrows)--;
				if (rc != 1)
					goto done;
				if ((rc = seek_lock(cur, t, kb, n, &k, &v)))
					break;
			} else if ((rc = walk_to_lock(cur, t, kb, n, &k, &v))) {
				break;
			}
			is_lock = 1;
		}
		if (!is_lock) { /* (reverse: the row's last key is a cell) */
			rc = lockless(t);
			goto done;
		}
		if (max_rows && *nrows == max_rows) {
			*more = 1;
			break;
		}
		if (!(*rows = rows_grow(a, *rows, *nrows, &cap, max_rows))) {
			rc = MRTX_ENOMEM;
			goto done;
		}
		out = &(*rows)[(*nrows)++];
		if ((rc = keep_row_lock(a, out, row, &v)))
			goto done;
		{
			uint8_t ck[MRTX_MAX_KEY + 16];
			size_t plen = 0;

			if ((rc = row_key_checked(ck, t, out->row, &plen)) ||
			    (rc = f && (f->at || f->versions > 1) ?
			          lmdb_cell_read_versions(st, cur, t, ck, plen, f, a, out) :
			          read_cells(st, cur, t, ck, plen, f, reverse ? NULL : &first, a,
			                     out)))
				goto done;
		}
		/* read_cells moved the cursor: step from the row itself */
		rc = lmdb_step_row(cur, t, out->row, reverse, &k, &v);
	}
	rc = rc == MDB_NOTFOUND || rc == 0 ? 0 : rc == MRTX_ECORRUPT ? rc : lmdb_err(st, rc, "scan");
done:
	rt_put(st, view, &rt);
	if (rc) {
		/* No half-filled row reaches the caller. */
		*rows = NULL;
		*nrows = 0;
		*more = 0;
	}
	return rc;
}
