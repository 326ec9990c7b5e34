/*
 * validate.c - commit step 2 (DESIGN §5.2): every row the transaction read
 * and every range it scanned is as it was, checked after every write lock
 * is held (two-phase) or inside the one write (atomic: commit_atomic.c
 * passes range_covered's bounds to the store).  A transaction whose reads
 * all hold is equivalent to one run at its commit point: serializable.
 */
#include "commit_int.h"
#include "storage/breaks.h"

#include <string.h>

/*
 * The part of a scanned range the scan covered, as a store range: all of
 * [start, end) when it ran to the end; [start, last] forward, [last, end)
 * in reverse when it stopped early.  *skip when it covered nothing to
 * check (stopped before it met a row).
 */
int range_covered(mrtx_txn *txn, const scan_range *sr, store_range *rg, int *skip)
{
	*skip = !sr->exhausted && !sr->any;
	memset(rg, 0, sizeof(*rg));
	if (*skip)
		return 0;
	rg->lo = sr->start;
	rg->hi = sr->end;
	if (sr->exhausted)
		return 0;
	if (!sr->reverse) {
		/* [start, last]: hi = last . 0x00, the successor of last */
		uint8_t *h = arena_alloc(&txn->arena, sr->last.size + 1);

		if (!h)
			return MRTX_ENOMEM;
		memcpy(h, sr->last.data, sr->last.size);
		h[sr->last.size] = 0;
		rg->hi = MRTX_BYTES(h, sr->last.size + 1);
	} else {
		rg->lo = sr->last;
	}
	return 0;
}

static int same_lock(const trow *r, int has, mrtx_bytes lock)
{
	if (!r->lock_known || r->has_lock != (unsigned)!!has)
		return 0;
	return !has || bytes_cmp(r->lock, lock) == 0;
}

/* Is this lock our own prewrite of a row we mutate?  (The primary's expiry
 * may have been moved on by the heartbeat since.) */
static int ours(const trow *r, mrtx_bytes lock)
{
	return r->mutated && r->prewrite.size && lock_same_but_expiry(r->prewrite, lock);
}

/* Keeps I11 (DESIGN §10). */
static int validate_reads(mrtx_txn *txn)
{
	store_rowref *refs;
	store_row *cur;
	size_t n = 0, k = 0;
	trow *r;
	int rc;

	RB_FOREACH(r, trow_tree, &txn->rows)
		n += r->read && !r->mutated;
	if (n == 0 || mrtx__broken(MRTX_BREAK_READS))
		return 0;
	if (!(refs = arena_alloc(&txn->arena, n * sizeof(*refs))) ||
	    !(cur = arena_alloc(&txn->arena, n * sizeof(*cur))))
		return MRTX_ENOMEM;
	RB_FOREACH(r, trow_tree, &txn->rows)
		if (r->read && !r->mutated)
			refs[k++] = (store_rowref){ r->t, r->row };
	if ((rc = store_read_locks(txn->db->st, refs, n, &txn->arena, cur)))
		return rc;
	k = 0;
	RB_FOREACH(r, trow_tree, &txn->rows) {
		if (!(r->read && !r->mutated))
			continue;
		if (!same_lock(r, cur[k].has_lock, cur[k].lock))
			return mrtx__seterr(MRTX_CONFLICT, "table '%s': a row this transaction read "
			                    "was changed, or is being written, by a concurrent "
			                    "transaction", r->t->name);
		k++;
	}
	return 0;
}

/* Keeps I11 (DESIGN §10). */
static int validate_range(mrtx_txn *txn, const scan_range *sr)
{
	store_filter f = STORE_FILTER_ALL;
	store_range rg;
	store_row *rows;
	size_t n, i = 0;
	int more, rc, skip;
	trow key, *r;

	if ((rc = range_covered(txn, sr, &rg, &skip)) || skip ||
	    mrtx__broken(MRTX_BREAK_RANGES))
		return rc;
	f.lock_only = 1;
	if ((rc = store_scan_rows(txn->db->st, sr->t, &rg, 0, &f, 0, &txn->arena, &rows, &n,
	                          &more)))
		return rc;
	/* Walk the store's locks and the rows we saw in the same order. */
	key.t = sr->t;
	key.row = rg.lo;
	for (r = txn_rows_nfind(txn, &key);; r = RB_NEXT(trow_tree, &txn->rows, r)) {
		int in = r && r->t == sr->t && !store_range_past(&rg, r->row);
		int seen = in && r->lock_known && r->has_lock;

		/* every store row before r must be one we saw */
		while (i < n && (!in || bytes_cmp(rows[i].row, r->row) < 0)) {
			trow *x;

			if (txn_row(txn, sr->t, rows[i].row, 0, &x) || !x ||
			    !(same_lock(x, 1, rows[i].lock) || ours(x, rows[i].lock)))
				goto phantom;
			i++;
		}
		if (!in)
			break;
		if (i < n && bytes_cmp(rows[i].row, r->row) == 0) {
			if (!(same_lock(r, 1, rows[i].lock) || ours(r, rows[i].lock)))
				goto phantom;
			i++;
		} else if (seen) {
			goto phantom; /* a lock we saw has vanished */
		}
	}
	return 0;
phantom:
	return mrtx__seterr(MRTX_CONFLICT, "table '%s': a scanned range changed (a row was "
	                    "inserted, deleted or updated by a concurrent commit)", sr->t->name);
}

/* Keeps I11 (DESIGN §10). */
int txn_validate(mrtx_txn *txn)
{
	int rc = validate_reads(txn);

	for (size_t i = 0; rc == 0 && i < txn->nranges; i++)
		rc = validate_range(txn, txn->ranges[i]);
	return rc;
}
