/*
 * lmdb_rw.c - the storage seam's reads and writes on LMDB.
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
 * Reads run in pooled read transactions (lmdb_env.c).  Batched writes run
 * every op of a call in one LMDB write transaction, so a protocol phase
 * costs one commit; unbatched stores run one write transaction per op, as
 * a distributed engine would.
 */
#include "storage/lmdb/lmdb_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "storage/keyenc.h"

/* ---------------------------------------------------------------- reads */

#define LOCK_TAG 0xFFu /* after enc(row): the row's lock record */

/* Does row fit in a key with `extra` bytes after P . enc(row)? */
static int row_fits(mrtx_bytes row, size_t extra)
{
	return TPFX + keyenc_size(row.data, row.size) + extra <= MRTX_MAX_KEY;
}

/* The row of a data key of this table (into rowbuf) and whether the key is
 * its lock key. */
static int key_row(const MDB_val *k, uint8_t *rowbuf, mrtx_bytes *row, int *is_lock)
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
	if (!row_fits(row, 1))
		return mrtx__seterr(MRTX_ECORRUPT, "table '%s': a %zu-byte row cannot be a key "
		                    "(damaged store?)", t->name, row.size);
	*plen = tkey_put(key, t, row);
	return 0;
}

/* Is the newest version of a cell of family fid, at ts, past the family's
 * TTL (and not kept by min_versions)?  Then reads do not show it. */
static int cell_expired(const store_table *t, unsigned fid, uint64_t ts)
{
	if (MRTX_LIKELY(fid >= t->npol) || !t->pol[fid].ttl_ms)
		return 0; /* (no clock read for a family without a TTL) */
	return !store_version_kept(&t->pol[fid], 0, ts, mrtx__now_us());
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

/*
 * Is read txn txn's snapshot the one its id names?  LMDB begins a read by
 * taking the last committed id V from its lock region and then reading the
 * meta page in slot V & 1; a reader held up between the two while two
 * commits land reads the meta of V + 2 (the slot's next user) under id V
 * -- a consistent snapshot, but a newer one than V, whose timestamp and
 * count of unsettled locks (ring[V]) would then be wrong for it.  (Seen:
 * views of id V holding unsettled records with ring[V] settled, under
 * `mrtx chaos --unbatched`.)  The newest meta page still being V's, after
 * the read began, proves the slot was not rewritten before it was read:
 * V + 2 writes it only after V + 1's meta page is out.  A newest meta page
 * of V + 1 alone proves nothing -- V + 2 may be writing V's slot, whose id
 * LMDB writes last, so it still reads V -- but the id LMDB publishes to
 * readers still being V then does: V + 2 begins only after V + 1 has
 * published its id.  (That is read by renewing a second read transaction,
 * only in that case: a writer between its meta page and the id it
 * publishes, which a busy store meets often.)
 */
static int view_exact(store *st, MDB_txn *txn)
{
	MDB_envinfo info;
	lmdb_rtxn probe;
	uint64_t v = mdb_txn_id(txn);
	int n = atomic_load_explicit(&store__lmdb_inexact_views, memory_order_relaxed), ok;

	if (n > 0 && atomic_compare_exchange_strong(&store__lmdb_inexact_views, &n, n - 1))
		return 0; /* (test hook: as if two commits landed meanwhile) */
	if (mdb_env_info(st->env, &info) != 0 || info.me_last_txnid > v + 1)
		return 0;
	if (info.me_last_txnid == v)
		return 1;
	if (lmdb_rtxn_begin(st, &probe)) {
		mrtx__clearerr();
		return 0;
	}
	ok = mdb_txn_id(probe.txn) == v; /* (the id published now) */
	lmdb_rtxn_end(st, &probe);
	return ok;
}

int lmdb_store_view_open(store *st, lmdb_rtxn **out)
{
	lmdb_rtxn rt;
	int rc;

	uint64_t ts = 0;
	int settled = 0, loose = 0;

	/* Its snapshot timestamp (lmdb_ts.c): a view whose write txn's entry
	 * the ring no longer holds (it lagged thousands of commits behind
	 * between its begin and here) is traded for a newer one, and so is
	 * one whose snapshot may be newer than its id (view_exact), a few
	 * times; after that the view is taken with its timestamp unknown (0:
	 * ring[V] could be below commits it holds) and its count of unsettled
	 * locks not trusted.  So is one whose newest has no entry either
	 * (written by an mrtx older than the ring). */
	for (int tries = 0, inexact = 0;; tries++) {
		if ((rc = lmdb_rtxn_begin(st, &rt)))
			return rc;
		if (lmdb_ts_of_view(st, rt.txn, &ts, &settled) == 0) {
			if (view_exact(st, rt.txn))
				break;
			/* two commits landed during each of a few tries: take
			 * the view with its timestamp unknown and its locks
			 * read (settled = 0) */
			if (++inexact == 8) {
				ts = 0;
				settled = 0;
				loose = 1;
				break;
			}
		}
		if (tries == 100) {
			ts = 0;
			settled = 0;
			loose = 1;
			break;
		}
		lmdb_rtxn_end(st, &rt);
	}
	rt.slot->forks = lmdb_forks();
	rt.slot->ts = ts;
	rt.slot->settled = settled;
	rt.slot->inexact = loose;
	*out = rt.slot; /* the pool's allocation carries txn and cursor */
	return 0;
}

uint64_t lmdb_view_txnid(const lmdb_rtxn *v)
{
	return v->inexact ? 0 : mdb_txn_id(v->txn);
}

uint64_t lmdb_store_view_ts(const lmdb_rtxn *v)
{
	return v->ts;
}

void lmdb_store_view_close(store *st, lmdb_rtxn *v)
{
	lmdb_rtxn rt = *v;

	if (v->forks != lmdb_forks())
		return; /* a child ending a transaction it inherited: the read
		           transaction and its reader slot are the parent's (the
		           child's copies are left, as LMDB requires after fork) */
	lmdb_rtxn_end(st, &rt);
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
	if ((rc = lmdb_table_rcheck(st, &rt, t))) {
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

/* Seek key for a bound: P . enc(bound), cut to LMDB's key size.  A cut key
 * sorts no later than the whole one, and the scan loop checks every row
 * against the bounds, so positioning only has to be early enough. */
static MDB_val bound_key(uint8_t *buf, const store_table *t, mrtx_bytes b)
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
	*k = mv(kb, n + 1);
	rc = lmdb_cget(cur, k, v, MDB_SET_RANGE);
	if (rc == MDB_NOTFOUND || (rc == 0 && !(k->mv_size == n + 1 && bytes_eq(k->mv_data, kb,
	                                                                         n + 1))))
		return lockless(t);
	return rc;
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

/* Move cur from row R (rowbuf) to the next row (forward: past R's lock key
 * and history, walking from where the cursor stands in R, so that every
 * key on the way is seen in order (lmdb_walk.c), or seeking when R has
 * more keys left than ROW_WALK; reverse: before R's first key). */
static int step_row(MDB_cursor *cur, const store_table *t, mrtx_bytes row, int reverse,
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
		return lmdb_cget(cur, k, v, MDB_PREV);
	}
	if (mdb_cursor_get(cur, &prev, v, MDB_GET_CURRENT) == 0 && prev.mv_size >= n &&
	    bytes_eq(prev.mv_data, key, n)) {
		for (int i = 0; i < ROW_WALK; i++) {
			if ((rc = mdb_cursor_get(cur, k, v, MDB_NEXT)))
				return rc;
			if (!lmdb_key_after(&prev, k))
				return damaged_keys(t);
			if (!(k->mv_size > n && bytes_eq(k->mv_data, key, n)))
				/* the next row: its value is used when it is a lock (a
				 * lock key ends in LOCK_TAG; so may a cell's) */
				return lmdb_sealed_key(k) && ((const uint8_t *)k->mv_data)[k->mv_size - 1] ==
				       LOCK_TAG ? lmdb_unseal(k, v) : 0;
			prev = *k;
		}
	}
	/* past the lock key and the history after it (lmdb_cell.c: history
	 * keys continue with a family id, at most 254) */
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
	rc = lmdb_cget(cur, k, v, reverse ? MDB_PREV : MDB_NEXT);
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
	uint8_t kb[MRTX_MAX_KEY + 1], rowbuf[MRTX_MAX_KEY + 1], prevbuf[MRTX_MAX_KEY + 1];
	mrtx_bytes prev = MRTX_BYTES(NULL, 0);
	lmdb_rtxn rt;
	MDB_cursor *cur;
	MDB_val k, v, target, first;
	size_t cap = 0;
	int rc, c;

	*rows = NULL;
	*nrows = 0;
	*more = 0;
	if ((rc = STORE_FAULT(st, "scan (injected fault)")))
		return rc;
	if ((rc = rt_get(st, view, &rt)))
		return rc;
	if ((rc = lmdb_table_rcheck(st, &rt, t)))
		goto done;
	cur = rt.cur;
	/* Position near the first row of the range in scan order. */
	if (!reverse) {
		if (r->lo.size) {
			k = bound_key(kb, t, r->lo);
		} else {
			kb[0] = (uint8_t)(LT(t)->kp >> 8); /* the table's first key */
			kb[1] = (uint8_t)LT(t)->kp;
			k = mv(kb, TPFX);
		}
		target = k;
		rc = landed(cur, t, &target, lmdb_cget(cur, &k, &v, MDB_SET_RANGE));
	} else {
		if (r->hi.size) {
			k = bound_key(kb, t, r->hi);
		} else {
			kb[0] = (uint8_t)((LT(t)->kp + 1) >> 8); /* just past the table */
			kb[1] = (uint8_t)(LT(t)->kp + 1);
			k = mv(kb, TPFX);
		}
		target = k;
		rc = landed(cur, t, &target, lmdb_cget(cur, &k, &v, MDB_SET_RANGE));
		rc = rc == 0 ? lmdb_cget(cur, &k, &v, MDB_PREV) :
		     rc == MDB_NOTFOUND ? lmdb_cget(cur, &k, &v, MDB_LAST) : rc;
	}
	/* Forward, the cursor stands on a row's first key; reverse, on its last
	 * (its lock key when it has one).  A key of another table (or of the
	 * metadata) ends the scan. */
	while (rc == 0) {
		mrtx_bytes row;
		store_row *out;
		int is_lock;

		if (!tkey_is(t, k.mv_data, k.mv_size)) {
			if ((rc = scan_end_check(cur, t, reverse, &k, &v)) == MRTX_ECORRUPT)
				goto done;
			break;
		}
		if (key_row(&k, rowbuf, &row, &is_lock)) {
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
		memcpy(prevbuf, row.data, row.size);
		prev = MRTX_BYTES(prevbuf, row.size);
		if (reverse ? store_range_before(r, row) : store_range_past(r, row))
			break;
		if (reverse && key_is_hist(&k, row)) {
			/* the row's history, after its lock key: go to the lock */
			size_t n = TPFX + keyenc_size(row.data, row.size);

			memcpy(kb, k.mv_data, n);
			kb[n] = LOCK_TAG;
			k = mv(kb, n + 1);
			if ((rc = lmdb_cget(cur, &k, &v, MDB_SET)))
				break;
			is_lock = 1;
		}
		if (reverse ? store_range_past(r, row) : store_range_before(r, row)) {
			rc = step_row(cur, t, row, reverse, &k, &v);
			continue;
		}
		/* (forward, the row's first key, which the walk reached in order) */
		first = k;
		if (!is_lock && !reverse) {
			/* cells first: jump to the row's lock key, if it has one */
			size_t n = TPFX + keyenc_size(row.data, row.size);

			memcpy(kb, k.mv_data, n);
			kb[n] = LOCK_TAG;
			if ((rc = walk_to_lock(cur, t, kb, n, &k, &v)))
				break;
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
		if (!(*rows = store_arr_grow(a, *rows, *nrows, &cap, sizeof(**rows)))) {
			rc = MRTX_ENOMEM;
			goto done;
		}
		out = &(*rows)[(*nrows)++];
		out->row = MRTX_BYTES(arena_dup(a, row.data, row.size), row.size);
		out->lock = MRTX_BYTES(arena_dup(a, v.mv_data, v.mv_size), v.mv_size);
		out->has_lock = 1;
		if (!out->row.data || !out->lock.data) {
			rc = MRTX_ENOMEM;
			goto done;
		}
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
		rc = step_row(cur, t, out->row, reverse, &k, &v);
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

/* --------------------------------------------------------------- writes */


/* The version op's cells are written at (store_op.ts, .stamp). */
static uint64_t op_ts(const store_op *op)
{
	return op->stamp ? op->stamped : op->ts;
}

/* Apply m to the row whose key prefix P . enc(row) is key[0..plen); the
 * rest of key (MRTX_MAX_KEY + 16 bytes) is scratch. */
static int apply_mut(MDB_cursor *cur, const store_op *op, uint8_t *key, size_t plen,
                     const store_mut *m)
{
	if (m->kind != STORE_MUT_DEL_ROW && m->fid >= op->table->nfamilies)
		return MDB_BAD_VALSIZE; /* lockio_decode refuses such redo first */
	if (m->kind == STORE_MUT_DEL_ROW)
		return lmdb_cell_del_range(cur, op->table, key, plen, -1, op_ts(op));
	if (m->kind == STORE_MUT_DEL_FAMILY)
		return lmdb_cell_del_range(cur, op->table, key, plen, m->fid, op_ts(op));
	return lmdb_cell_write(cur, op->table, key, plen, m->fid, m->qual,
	                       m->kind != STORE_MUT_PUT, m->value, op_ts(op));
}

/* Are op's mutations all puts, in strictly ascending key order (family,
 * then qualifier bytewise, a prefix first)?  A transaction's buffered
 * cells are; put_cells_back relies on it. */
static int puts_ascending(const store_op *op)
{
	for (size_t i = 0; i < op->nmuts; i++) {
		const store_mut *m = &op->muts[i], *p;
		size_t n;
		int c;

		if (m->kind != STORE_MUT_PUT)
			return 0;
		if (i == 0)
			continue;
		p = m - 1;
		if (p->fid < m->fid)
			continue;
		if (p->fid > m->fid)
			return 0;
		n = MRTX_MIN(p->qual.size, m->qual.size);
		c = n ? memcmp(p->qual.data, m->qual.data, n) : 0;
		if (c > 0 || (c == 0 && p->qual.size >= m->qual.size))
			return 0;
	}
	return 1;
}

/*
 * The puts of op (puts_ascending) with cur standing on the row's lock key,
 * which sorts after every cell of the row: walk back from it.  A cell the
 * store already holds is usually the key just before the one written last
 * (a row rewritten with the cells it had): it is overwritten where the
 * cursor stands (MDB_CURRENT), without the search of the page that a put
 * makes.  Any other cell is put with that search, and the walk goes on
 * from where the put left the cursor (on the new key).
 */
static int put_cells_back(MDB_cursor *cur, const store_op *op, uint8_t *key, size_t plen)
{
	for (size_t i = op->nmuts; i-- > 0;) {
		const store_mut *m = &op->muts[i];
		size_t klen = plen + 1 + m->qual.size;
		MDB_val k, ck, cv;
		int rc, here;

		if (m->fid >= op->table->nfamilies || klen > MRTX_MAX_KEY)
			return MDB_BAD_VALSIZE; /* as apply_mut */
		key[plen] = m->fid;
		if (m->qual.size)
			memcpy(key + plen + 1, m->qual.data, m->qual.size);
		k = mv(key, klen);
		rc = mdb_cursor_get(cur, &ck, &cv, MDB_PREV); /* (its key and size only) */
		if (rc && rc != MDB_NOTFOUND)
			return rc;
		here = rc == 0 && ck.mv_size == klen && memcmp(ck.mv_data, key, klen) == 0;
		if (here && store_table_policy(op->table, m->fid).max_versions == 1 &&
		    cv.mv_size >= CELL_HDR) {
			/* overwrite the one version kept (lmdb_cell.c), where the cursor
			 * stands */
			_Alignas(8) uint8_t buf[512];
			uint8_t *d = CELL_HDR + m->value.size + LMDB_SEAL <= sizeof(buf) ? buf :
			             mrtx__malloc(CELL_HDR + m->value.size + LMDB_SEAL);

			/* (a copy, not MDB_RESERVE: see put_lock) */
			if (!d)
				return ENOMEM;
			lmdb_cell_hdr(d, op_ts(op), CELL_GONE);
			if (m->value.size)
				memcpy(d + CELL_HDR, m->value.data, m->value.size);
			rc = lmdb_cput_sealed(cur, &k, d, CELL_HDR + m->value.size, MDB_CURRENT);
			if (d != buf)
				mrtx__free(d);
			if (rc)
				return rc;
			continue;
		}
		if ((rc = lmdb_cell_write(cur, op->table, key, plen, m->fid, m->qual, 0, m->value,
		                          op_ts(op))))
			return rc;
	}
	return 0;
}

/*
 * Ops run inside the write transaction of cursor cur, in two steps:
 * op_check evaluates the condition (sets op->result on failure, *pass),
 * op_write applies the op.  A nonzero return is an LMDB error that breaks
 * the transaction.  One cursor serves the whole op: after the lock lookup
 * it stands on the row's page, where LMDB finds the cells without
 * descending from the root again.
 */
typedef struct wctx {
	store *st;
	MDB_cursor *cur;
	/* the op whose lock key the cursor stands on, from op_check; NULL
	 * once anything may have moved it */
	const store_op *at_lock;
} wctx;

static int op_check(wctx *w, store_op *op, int *pass)
{
	uint8_t lk[MRTX_MAX_KEY + 1];
	MDB_cursor *cur = w->cur;
	size_t plen;
	MDB_val k, v;
	int rc, match;

	*pass = 0;
	if (!row_fits(op->row, 1))
		return MDB_BAD_VALSIZE;
	/* the table is still this one, and not frozen for an acquisition */
	if ((rc = lmdb_table_wcheck(w->st, cur, op))) {
		if (rc != MRTX_ENOTABLE && rc != MRTX_CONFLICT)
			return rc;
		op->result = rc;
		return 0;
	}
	if (op->check_gen) {
		uint64_t gen;

		if ((rc = lmdb_wgen(w->st, cur, &gen)))
			return rc;
		if (gen != op->gen) {
			op->result = STORE_GEN_CHANGED;
			return 0;
		}
	}
	plen = tkey_put(lk, op->table, op->row);
	lk[plen] = LOCK_TAG;
	k = mv(lk, plen + 1);
	rc = lmdb_cget(cur, &k, &v, MDB_SET);
	if (rc && rc != MDB_NOTFOUND)
		return rc;
	if (op->cond.kind == STORE_IF_BELOW)
		match = op->cond.pred(rc == 0 ? v.mv_data : NULL, rc == 0 ? v.mv_size : 0,
		                      op->cond.arg);
	else if (op->cond.absent)
		match = rc == MDB_NOTFOUND;
	else
		match = rc == 0 && v.mv_size == op->cond.lock.size &&
		        memcmp(v.mv_data, op->cond.lock.data, v.mv_size) == 0;
	if (!match)
		op->result = MRTX_CONFLICT;
	else /* (for op_write's count of unsettled records) */
		op->was_unsettled = rc == 0 && lmdb_lock_unsettled(w->st, v.mv_data, v.mv_size);
	*pass = match;
	w->at_lock = rc == 0 ? op : NULL;
	return 0;
}

/* Put op's new lock at key k (flags: mdb_cursor_put's), its timestamp
 * patched in when the op is stamped (store_op.stamp; taken now unless an
 * atomic request took it for all its ops). */
static int put_lock(wctx *w, store_op *op, MDB_val *k, unsigned flags)
{
	_Alignas(8) uint8_t buf[256];
	MDB_val v = mv(op->new_lock.data, op->new_lock.size);
	uint8_t *d;
	int rc;

	if (!op->stamp)
		return lmdb_cput(w->cur, k, &v, flags);
	if (op->stamp_off > op->new_lock.size || op->new_lock.size - op->stamp_off < 8)
		return MDB_BAD_VALSIZE;
	/* (patched in a copy, not with MDB_RESERVE: LMDB before 0.9.28 takes
	 * MDB_CURRENT only alone, and would search the tree again) */
	d = op->new_lock.size + LMDB_SEAL <= sizeof(buf) ? buf :
	    mrtx__malloc(op->new_lock.size + LMDB_SEAL);
	if (!d)
		return ENOMEM;
	memcpy(d, op->new_lock.data, op->new_lock.size);
	for (unsigned i = 0; i < 8; i++)
		d[op->stamp_off + i] = (uint8_t)(op->stamped >> (8 * i));
	rc = lmdb_cput_sealed(w->cur, k, d, op->new_lock.size, flags);
	if (d != buf)
		mrtx__free(d);
	return rc;
}

/* op replaced the record op_check met (was_unsettled; none: 0) with
 * new_lock: the change in the count of unsettled records.  (A stamp patches
 * only the commit_ts, which does not decide settledness.) */
static void note_unsettled(wctx *w, const store_op *op)
{
	w->st->w_udelta += lmdb_lock_unsettled(w->st, op->new_lock.data, op->new_lock.size) -
	                   op->was_unsettled;
}

static int op_write(wctx *w, store_op *op)
{
	uint8_t key[MRTX_MAX_KEY + 16], lk[MRTX_MAX_KEY + 1];
	MDB_cursor *cur = w->cur;
	size_t plen = tkey_put(key, op->table, op->row);
	MDB_val k, v;
	int rc, in_place;

	if (op->stamp && !op->stamped) /* (apply_op and apply_atomic stamp first) */
		return MDB_BAD_TXN;
	memcpy(lk, key, plen);
	lk[plen] = LOCK_TAG;
	k = mv(lk, plen + 1);
	in_place = w->at_lock == op && !op->delete_lock;
	w->at_lock = NULL;
	if (in_place) {
		/* the condition left the cursor on this lock: replace it there,
		 * without a search, before the cells move the cursor */
		if ((rc = put_lock(w, op, &k, MDB_CURRENT)))
			return rc;
		w->st->w_dirty = 1;
		note_unsettled(w, op);
		if (puts_ascending(op))
			return put_cells_back(cur, op, key, plen);
	}
	for (size_t i = 0; i < op->nmuts; i++)
		if ((rc = apply_mut(cur, op, key, plen, &op->muts[i])))
			return rc;
	if (in_place)
		return 0;
	if (op->delete_lock) {
		rc = lmdb_cget(cur, &k, &v, MDB_SET);
		if (rc == 0) {
			int was = lmdb_lock_unsettled(w->st, v.mv_data, v.mv_size);

			if ((rc = mdb_cursor_del(cur, 0)) == 0) {
				w->st->w_dirty = 1;
				w->st->w_udelta -= was;
			}
		}
		rc = rc == MDB_NOTFOUND ? 0 : rc;
	} else if ((rc = put_lock(w, op, &k, 0)) == 0) {
		w->st->w_dirty = 1;
		note_unsettled(w, op);
	}
	/* w_dirty: this LMDB txn surely changes the file, so its commit takes
	 * its txn id (lmdb_commit); an op that changed nothing does not say so */
	return rc;
}

static int apply_op(wctx *w, store_op *op)
{
	int rc, pass;

	/* The stamp first: a raise of the ceiling writes, and op_check leaves
	 * the cursor on the lock for op_write (a stamp whose op then fails its
	 * condition is simply never used). */
	if (op->stamp && (rc = lmdb_ts_stamp(w->st, mdb_cursor_txn(w->cur), op->stamp_floor,
	                                     &op->stamped)))
		return rc;
	if ((rc = op_check(w, op, &pass)) || !pass)
		return rc;
	if ((rc = op_write(w, op)) == 0)
		op->result = 0;
	return rc;
}

/*
 * A range check (store_rcheck) inside the write transaction: walk the
 * table's lock keys in the range, jumping from a row's first cell to its
 * lock key, and compare them with the expected rows and locks.
 */
static int check_range(wctx *w, store_rcheck *c)
{
	uint8_t kb[MRTX_MAX_KEY + 1], rowbuf[MRTX_MAX_KEY + 1];
	const store_table *t = c->table;
	const store_range *r = &c->range;
	MDB_val k, v;
	size_t j = 0;
	int rc;

	c->result = MRTX_CONFLICT;
	if (r->lo.size) {
		k = bound_key(kb, t, r->lo);
	} else {
		kb[0] = (uint8_t)(LT(t)->kp >> 8);
		kb[1] = (uint8_t)LT(t)->kp;
		k = mv(kb, TPFX);
	}
	rc = lmdb_cget(w->cur, &k, &v, MDB_SET_RANGE);
	while (rc == 0) {
		mrtx_bytes row;
		int is_lock;

		if (!tkey_is(t, k.mv_data, k.mv_size))
			break;
		if (key_row(&k, rowbuf, &row, &is_lock))
			return MRTX_ECORRUPT;
		if (store_range_past(r, row))
			break;
		if (store_range_before(r, row)) {
			rc = step_row(w->cur, t, row, 0, &k, &v);
			continue;
		}
		if (!is_lock) {
			size_t n = TPFX + keyenc_size(row.data, row.size);

			memcpy(kb, k.mv_data, n);
			kb[n] = LOCK_TAG;
			k = mv(kb, n + 1);
			rc = lmdb_cget(w->cur, &k, &v, MDB_SET_RANGE);
			if (rc || !(k.mv_size == n + 1 && memcmp(k.mv_data, kb, n + 1) == 0))
				continue; /* no lock: not a row; k is the next row's first key */
		}
		if (j == c->n ||
		    cmp_bytes(row.data, row.size, c->rows[j].data, c->rows[j].size) != 0 ||
		    v.mv_size != c->locks[j].size ||
		    memcmp(v.mv_data, c->locks[j].data, v.mv_size) != 0)
			return 0; /* a row not expected, or another lock */
		j++;
		rc = step_row(w->cur, t, row, 0, &k, &v); /* (past its history too) */
	}
	if (rc && rc != MDB_NOTFOUND)
		return rc;
	if (j == c->n)
		c->result = 0;
	return 0;
}

/* An atomic request (store_write_atomic): every condition, then every
 * write or none. */
static int apply_atomic(wctx *w, wreq *q)
{
	int rc, pass, all = 1;

	for (size_t i = 0; i < q->n; i++) {
		q->ops[i].result = 0;
		if ((rc = op_check(w, &q->ops[i], &pass)))
			return rc;
		all &= pass;
	}
	for (size_t i = 0; i < q->nchecks; i++) {
		if ((rc = check_range(w, &q->checks[i])))
			return rc;
		all &= q->checks[i].result == 0;
	}
	if (!all)
		return 0;
	{
		uint64_t floor = 0;
		int any = 0;

		for (size_t i = 0; i < q->n; i++)
			if (q->ops[i].stamp && !q->ops[i].check_only) {
				any = 1;
				floor = MRTX_MAX(floor, q->ops[i].stamp_floor);
			}
		if (any && (rc = lmdb_ts_stamp(w->st, mdb_cursor_txn(w->cur), floor, &floor)))
			return rc;
		for (size_t i = 0; i < q->n; i++)
			if (q->ops[i].stamp && !q->ops[i].check_only)
				q->ops[i].stamped = floor;
	}
	w->at_lock = NULL; /* later checks moved the cursor */
	for (size_t i = 0; i < q->n; i++)
		if (!q->ops[i].check_only && (rc = op_write(w, &q->ops[i])))
			return rc;
	q->applied = 1;
	return 0;
}

static int apply_req(wctx *w, wreq *q)
{
	int rc;

	q->applied = 0;
	for (size_t i = 0; i < q->n; i++)
		q->ops[i].stamped = 0; /* (a retry takes a new one) */
	if (q->atomic)
		return apply_atomic(w, q);
	for (size_t i = 0; i < q->n; i++)
		if ((rc = apply_op(w, &q->ops[i])))
			return rc;
	return 0;
}

static void req_results(wreq *q, int rc)
{
	q->applied = 0;
	for (size_t i = 0; i < q->n; i++)
		q->ops[i].result = rc;
}

/* The transaction's commit failed: maybe applied (LMDB may have written
 * the meta page before failing its write or sync), so no applied op may
 * be reported as surely not applied; a failed condition applied nothing. */
static void req_unknown(wreq *q, int rc)
{
	q->rc = rc;
	if (q->atomic && !q->applied)
		return;
	for (size_t i = 0; i < q->n; i++)
		if (q->ops[i].result == 0)
			q->ops[i].result = MRTX_EUNKNOWN;
}

/* An mdb_txn_commit error that surely wrote no meta page: the map or the
 * transaction's page list filled while LMDB was still allocating pages
 * (its free list), before any page reached the file; or a system error
 * that did not set the latch -- a failed write of its pages, such as a
 * full disk's, which LMDB reports before it syncs them or writes the
 * meta page (lmdb_commit_nowait).  Any other may have written the meta
 * page.  (The latch may also come from another thread's failed sync
 * meanwhile: then this says "maybe", which is never wrong.) */
static int commit_surely_failed(store *st, int lmdb_rc)
{
	return lmdb_rc == MDB_MAP_FULL || lmdb_rc == MDB_TXN_FULL ||
	       (lmdb_rc > 0 && !lmdb_io_failed(st));
}

/* Run one request in its own write transaction; *need: as
 * lmdb_commit_nowait's (the caller makes it durable). */
static int write_txn(store *st, wreq *q, uint64_t *need)
{
	MDB_txn *txn;
	wctx w = { st, NULL, NULL };
	int rc;

	*need = 0;
	req_results(q, MRTX_ESTORE);
	if ((rc = lmdb_txn_begin(st, 0, &txn)))
		goto fail;
	if ((rc = mdb_cursor_open(txn, st->dbi, &w.cur))) {
		lmdb_wabort(st, txn);
		rc = lmdb_err(st, rc, "open cursor");
		goto fail;
	}
	if ((rc = apply_req(&w, q))) {
		lmdb_wabort(st, txn); /* closes the cursor */
		/* (MRTX codes come with their message: a stamp's, lmdb_ts_stamp) */
		rc = rc == MRTX_ECORRUPT ?
		     mrtx__seterr(rc, "store %s: the metadata generation record or a key "
		                  "is malformed", store_path(st)) :
		     rc <= MRTX_NOTFOUND && rc > MRTX_NOTFOUND - 1000 ? rc :
		     lmdb_err(st, rc, "write row");
		goto fail;
	}
	if ((rc = lmdb_commit_nowait(st, txn, q->durable, need))) {
		int raw = rc;

		rc = lmdb_err(st, rc, "commit");
		if (commit_surely_failed(st, raw))
			req_results(q, rc);
		else
			req_unknown(q, rc);
		return rc;
	}
	return 0;
fail:
	req_results(q, rc);
	return rc;
}

/*
 * A sync-mode group's late joiners.  A request waits for two commits: its
 * own group's, and the next one, whose data sync makes its meta page
 * durable (lmdb_durable).  Were a group written as soon as it is taken,
 * the threads a commit releases would queue while the next group is
 * already being written and join the one after: with T writer threads a
 * group would hold about T/3 requests.  So while requests of the last
 * groups are still to come back (st->returning: their threads are usually
 * a few microseconds of work away), the leader, having applied what it
 * took, waits for and takes what queues since, until LMDB_ROLL_US after
 * it began (requests still queued then go to the next leader), and
 * a group holds about T/2 (measured: 2.9 -> 4.0 requests a group with 8
 * threads).  The count is a guess -- a thread may go on to other work --
 * so a leader waits only while writers have come back within
 * LMDB_ROLL_US / 2 on average (st->ret_us; a return not measured counts
 * as slow), and the count is dropped when the time runs out or a leader
 * does not wait.  One writer thread never waits: its request takes its
 * count back before it leads.  The wait holds LMDB's writer lock, which
 * other processes may be waiting for: hence the short bound, and no wait
 * while other processes have been committing between ours (st->foreign).
 * Returns the first request taken (linked after *tail, which moves to the
 * last), or NULL when the group is done.
 */
#define LMDB_ROLL_US 150u

/* The store this thread last wrote through, and when its write returned:
 * how soon writers come back (st->ret_us) decides whether to wait. */
static _Thread_local const store *tl_store;
static _Thread_local uint64_t tl_done;

static wreq *take_more(store *st, wreq **tail, uint64_t until)
{
	wreq *got = NULL;

	pthread_mutex_lock(&st->gmu);
	while (!st->gq_head && st->returning && mrtx__mono_us() < until) {
		struct timespec ts = mrtx__mono_timespec(until);

		pthread_cond_timedwait(&st->lcv, &st->gmu, &ts);
	}
	if (mrtx__mono_us() >= until) /* (what queued goes to the next leader) */
		st->returning = 0;
	else if ((got = st->gq_head)) {
		st->gq_head = NULL;
		st->gq_tail = &st->gq_head;
		(*tail)->next = got;
		for (wreq *q = got; q; q = q->next) {
			q->taken = 1;
			st->inflight++;
			*tail = q;
		}
	}
	pthread_mutex_unlock(&st->gmu);
	return got;
}

/*
 * Group commit: every request queued while a leader runs is applied by the
 * next leader in one LMDB write transaction (one fsync for all of them).
 * Requests stay independent: each op is conditional on its own row (an
 * atomic request on all of its own), and requests are applied in queue
 * order.  If the shared transaction fails, each request is retried alone
 * so that one request's error is its own.  roll: take late joiners
 * (take_more).
 */
static void write_group(store *st, wreq *head, int roll, uint64_t *need)
{
	MDB_txn *txn;
	wctx w = { st, NULL, NULL };
	int durable = 0, rc;
	uint64_t until = roll ? mrtx__mono_us() + LMDB_ROLL_US : 0;
	wreq *tail = head, *more;

	*need = 0;
	if (!head->next && !roll) {
		head->rc = write_txn(st, head, need);
		return;
	}
	for (wreq *r = head; r; r = r->next)
		tail = r;
	more = head;
	if ((rc = lmdb_txn_begin(st, 0, &txn)))
		goto alone;
	if ((rc = mdb_cursor_open(txn, st->dbi, &w.cur))) {
		lmdb_wabort(st, txn);
		goto alone;
	}
	do {
		for (wreq *r = more; r; r = r->next) {
			req_results(r, MRTX_ESTORE);
			durable |= r->durable;
			if ((rc = apply_req(&w, r))) {
				lmdb_wabort(st, txn);
				goto alone;
			}
		}
	} while (roll && (more = take_more(st, &tail, until)));
	if ((rc = lmdb_commit_nowait(st, txn, durable, need)) == 0) {
		for (wreq *r = head; r; r = r->next)
			r->rc = 0;
		return;
	}
	{
		int raw = rc;

		rc = lmdb_err(st, rc, "commit");
		for (wreq *r = head; r; r = r->next) {
			if (commit_surely_failed(st, raw)) {
				r->rc = rc;
				req_results(r, rc);
			} else {
				req_unknown(r, rc);
			}
		}
	}
	return;
	/* Nothing was applied (a row write failed; LMDB aborted the
	 * transaction): each request alone, so its error is its own. */
alone:
	for (wreq *r = head; r; r = r->next) {
		uint64_t n1;

		r->rc = write_txn(st, r, &n1);
		*need = MRTX_MAX(*need, n1);
	}
}

static int write_batched(store *st, wreq *me)
{
	uint64_t need;

	pthread_mutex_lock(&st->gmu);
	*st->gq_tail = me;
	st->gq_tail = &me->next;
	if (st->returning) {
		st->returning--;
		pthread_cond_signal(&st->lcv);
	}
	if (st->durability == MRTX_SYNC) { /* how soon this thread came back
	                                     * (not known: slow) */
		uint64_t d = tl_store == st ? mrtx__mono_us() - tl_done : 10000u;

		st->ret_us = (st->ret_us * 7 + MRTX_MIN(d, 10000u)) / 8;
	}
	while (!me->done) {
		wreq *batch, *next;
		size_t mine = 0;
		int roll;

		if (st->leader || me->taken) { /* (taken: a leader has it, or
		                                  * makes it durable) */
			pthread_cond_wait(&st->gcv, &st->gmu);
			continue;
		}
		st->leader = 1;
		/* Wait for late joiners only while this process's writers come
		 * back quickly and other processes are not writing too (they
		 * would wait on the writer lock meanwhile); counts left while
		 * not waiting are stale. */
		roll = st->returning != 0 && st->ret_us < LMDB_ROLL_US / 2 &&
		       atomic_load_explicit(&st->foreign, memory_order_relaxed) < 512;
		if (!roll)
			st->returning = 0;
		batch = st->gq_head;
		st->gq_head = NULL;
		st->gq_tail = &st->gq_head;
		for (wreq *q = batch; q; q = q->next) {
			q->taken = 1;
			st->inflight++;
		}
		pthread_mutex_unlock(&st->gmu);
		write_group(st, batch, roll, &need);
		pthread_mutex_lock(&st->gmu);
		for (wreq *q = batch; q; q = q->next) /* (with take_more's) */
			mine++;
		st->leader = 0;
		pthread_cond_broadcast(&st->dcv); /* a commit: durable waiters */
		if (need) {
			/* Let the next group write while this one's commit is made
			 * durable: its sync may well do it (lmdb_durable).  Busy:
			 * requests queued, or taken by other groups still waiting
			 * (their threads' next commits come soon). */
			int busy, rc;

			busy = st->gq_head != NULL || st->inflight > mine;
			pthread_cond_broadcast(&st->gcv);
			pthread_mutex_unlock(&st->gmu);
			if ((rc = lmdb_durable(st, need, busy))) {
				rc = lmdb_err(st, rc, "sync");
				for (wreq *q = batch; q; q = q->next)
					req_unknown(q, rc);
			}
			pthread_mutex_lock(&st->gmu);
		}
		for (; batch; batch = next) {
			next = batch->next; /* a finished waiter's wreq dies with its frame */
			batch->done = 1;
			st->inflight--;
		}
		if (st->durability == MRTX_SYNC)
			st->returning += mine;
		pthread_cond_broadcast(&st->gcv);
	}
	pthread_mutex_unlock(&st->gmu);
	if (st->durability == MRTX_SYNC) {
		tl_store = st;
		tl_done = mrtx__mono_us();
	}
	return me->rc;
}

/* The injected STORE_FAULT_APPLIED: the call ran; its reply is "lost". */
static int lost_reply(store *st, store_op *ops, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ops[i].result == 0)
			ops[i].result = MRTX_EUNKNOWN;
	return mrtx__seterr(MRTX_ESTORE, "store %s: write rows: reply lost (injected fault)",
	                    store_path(st));
}

/* After a write: name a dropped table in the caller's error, and catch up
 * with a schema change a write met (lmdb_table_wcheck). */
static int write_done(store *st, store_op *ops, size_t n, int rc)
{
	if (atomic_load_explicit(&st->trefresh, memory_order_relaxed) &&
	    atomic_exchange(&st->trefresh, 0))
		lmdb_store_table_refresh(st); /* best effort: reads refresh too */
	if (rc == 0)
		for (size_t i = 0; i < n; i++)
			if (ops[i].result == MRTX_ENOTABLE)
				return mrtx__seterr(MRTX_ENOTABLE, "table '%s' was dropped",
				                    ops[i].table->name);
	return rc;
}

int lmdb_store_write_rows(store *st, store_op *ops, size_t n)
{
	int first = 0, durable = 0;

	if (n == 0)
		return 0;
	if ((first = STORE_FAULT_W(st, "write rows (injected fault)")) &&
	    first != STORE_FAULT_APPLIED) {
		for (size_t i = 0; i < n; i++)
			ops[i].result = first;
		return first;
	}
	atomic_fetch_add_explicit(&st->write_calls, 1, memory_order_relaxed);
	for (size_t i = 0; i < n; i++)
		durable |= ops[i].durable;
	if (!st->unbatched) {
		wreq me = { .ops = ops, .n = n, .durable = durable };
		int rc = write_batched(st, &me);

		return first ? lost_reply(st, ops, n) : write_done(st, ops, n, rc);
	}
	for (size_t i = 0; i < n; i++) {
		wreq one = { .ops = &ops[i], .n = 1, .durable = durable };
		uint64_t need;
		int rc = write_txn(st, &one, &need), fp;

		if (rc == 0 && (rc = lmdb_durable(st, need, 0))) {
			rc = lmdb_err(st, rc, "sync");
			req_unknown(&one, rc);
		}

		if ((fp = FAILPOINT(FP_STORE_AFTER_ROW_WRITE)) && rc == 0) {
			rc = fp; /* applied, but reported failed */
			ops[i].result = MRTX_EUNKNOWN;
		}
		if (rc && !first)
			first = rc;
	}
	return first == STORE_FAULT_APPLIED ? lost_reply(st, ops, n) :
	       write_done(st, ops, n, first);
}


int lmdb_store_write_atomic(store *st, store_op *ops, size_t n, store_rcheck *checks,
                            size_t nchecks, int *applied)
{
	wreq me = { .ops = ops, .n = n, .checks = checks, .nchecks = nchecks, .atomic = 1 };
	int first, rc;

	*applied = 0;
	for (size_t i = 0; i < n; i++)
		me.durable |= ops[i].durable;
	if ((first = STORE_FAULT_W(st, "write rows (injected fault)")) &&
	    first != STORE_FAULT_APPLIED) {
		for (size_t i = 0; i < n; i++)
			ops[i].result = first;
		return first;
	}
	atomic_fetch_add_explicit(&st->write_calls, 1, memory_order_relaxed);
	rc = write_batched(st, &me);
	*applied = me.applied && rc == 0;
	if (first) {
		*applied = 0;
		if (me.applied)
			return lost_reply(st, ops, n);
	}
	return write_done(st, ops, n, rc);
}
