/*
 * commit_plan.c - what every commit strategy shares (commit_int.h): the
 * plan (rows, redo lists, strategy), blind rows, the locks the writes
 * expect, the commit timestamp's floor, and the store ops' common fields.
 */
#include "commit_int.h"
#include "tail.h"

#include <string.h>

/* ------------------------------------------------------------- the plan */

/* May this commit be one store_write_atomic (store_atomic_ok: LMDB,
 * batched, always; RADOS when every written and read row is in one tablet
 * and nothing was scanned)?  MRTX_ENOMEM or 0, *ok set. */
static int atomic_fits(mrtx_txn *txn, const commit_plan *p, int *ok)
{
	store *st = txn->db->st;
	store_rowref *refs;
	size_t k = 0;
	trow *r;

	*ok = 0;
	if (txn->db->two_phase)
		return 0;
	if (store_has(st, STORE_CAP_ATOMIC)) {
		*ok = 1;
		return 0;
	}
	if (txn->nranges)
		return 0; /* (only a store that checks ranges: ENOTSUP below) */
	RB_FOREACH(r, trow_tree, &txn->rows)
		k += r->read && !r->mutated;
	if (!(refs = arena_alloc(&txn->arena, (p->n + k) * sizeof(*refs))))
		return MRTX_ENOMEM;
	k = 0;
	for (size_t i = 0; i < p->n; i++)
		refs[k++] = (store_rowref){ p->w[i].r->t, p->w[i].r->row };
	RB_FOREACH(r, trow_tree, &txn->rows)
		if (r->read && !r->mutated)
			refs[k++] = (store_rowref){ r->t, r->row };
	*ok = store_atomic_ok(st, refs, k, txn->nranges);
	return 0;
}

/* One row written and nothing else read or scanned: the write is its own
 * commit point.  Else one atomic write where the store can take it and
 * the handle did not ask for two phases; else two phases. */
static int plan_strategy(mrtx_txn *txn, commit_plan *p, int others_read)
{
	int ok, rc;

	if (p->n == 1 && !others_read) {
		p->how = COMMIT_ONE_ROW;
		return 0;
	}
	if ((rc = atomic_fits(txn, p, &ok)))
		return rc;
	p->how = ok ? COMMIT_ATOMIC : COMMIT_TWO_PHASE;
	return 0;
}

int plan_build(mrtx_txn *txn, commit_plan *p)
{
	size_t n = txn->nmutated, k = 0;
	int rc, others_read = txn->nranges > 0;
	trow *r;

	memset(p, 0, sizeof(*p));
	if (!(p->w = arena_alloc(&txn->arena, n * sizeof(*p->w))))
		return MRTX_ENOMEM;
	RB_FOREACH(r, trow_tree, &txn->rows) {
		wrow *x = &p->w[k];

		if (!r->mutated) {
			others_read |= r->read;
			continue;
		}
		memset(x, 0, sizeof(*x));
		x->r = r;
		if ((rc = txn_row_redo(txn, r, &x->redo, &x->nredo)))
			return rc;
		k++;
	}
	p->n = k;
	return plan_strategy(txn, p, others_read);
}

/* Set x's expected lock when it is known without a read: remembered from
 * a read, or "none" for a row inside a scanned range where it was not
 * seen (it had no lock when scanned and must still have none).  0 when
 * the lock is unknown. */
static int prev_known(const mrtx_txn *txn, wrow *x)
{
	const trow *r = x->r;

	if (r->lock_known) {
		x->has_prev = r->has_lock;
		x->prev = r->lock;
		return 1;
	}
	if (txn_in_scanned_range(txn, r->t, r->row)) {
		x->has_prev = 0;
		return 1;
	}
	return 0;
}

/* A commit_ts floor: strictly above every expected lock's commit_ts, and
 * above the store's source as this handle knows it (store_ts_known; the
 * store stamps the commit point itself, at or above this: DESIGN §9.1).
 * A blind row's expected commit_ts is its start_ts, so the floor is above
 * every blind row's start (recovery.c: an orphan's fence relies on it).
 * Keeps I14 (DESIGN §10). */
static uint64_t ts_above(mrtx_txn *txn, const wrow *w, size_t n)
{
	uint64_t ts = 0;

	if (store_ts_known(txn->db->st, &ts))
		mrtx__clearerr(); /* (0: the expected locks alone) */

	for (size_t i = 0; i < n; i++)
		if (w[i].has_prev)
			ts = MRTX_MAX(ts, w[i].prev_ts);
	return ts + 1;
}

/* A commit point's floor: ts_above, and above the commit timestamp of
 * every row this transaction read (STABLE when read).  A store that stamps
 * one-row commits from its host's clock (RADOS) may hold rows stamped above
 * its oracle; a transaction that read such a row still stamps above it, so
 * stamps follow every read dependency (DESIGN §9).
 * Keeps I14 (DESIGN §10). */
static uint64_t ts_floor(mrtx_txn *txn, const wrow *w, size_t n)
{
	uint64_t ts = ts_above(txn, w, n);
	trow *r;

	RB_FOREACH(r, trow_tree, &txn->rows) {
		uint8_t k[STORE_ORDER_SIZE];
		uint64_t cts = 0;

		if (r->mutated || !r->read || !r->lock_known || !r->has_lock)
			continue;
		lock_order_key(r->lock.data, r->lock.size, k);
		if (k[0] != 0)
			continue; /* not STABLE */
		for (unsigned i = 1; i < STORE_ORDER_SIZE; i++)
			cts = cts << 7 | (k[i] & 0x7f);
		ts = MRTX_MAX(ts, cts + 1);
	}
	return ts;
}

/* The lock each mutated row's first write must expect.  Rows never read
 * are fetched now, all in one store call (foreign locks resolved); one
 * whose lock was committed after our first write to it is a write-write
 * conflict.  Rows inside a scanned range but not seen there had no lock
 * when scanned, and must still have none. */
static int expected_locks(mrtx_txn *txn, wrow *w, size_t n)
{
	store_rowref *refs;
	store_row *cur;
	size_t *idx, k = 0;
	int rc;

	/* (counted first: most commits know every lock, and allocate nothing) */
	for (size_t i = 0; i < n; i++) {
		w[i].fetched = !w[i].blind && !prev_known(txn, &w[i]);
		k += (size_t)w[i].fetched;
	}
	if (k == 0)
		return 0;
	if (!(refs = arena_alloc(&txn->arena, k * sizeof(*refs))) ||
	    !(cur = arena_alloc(&txn->arena, k * sizeof(*cur))) ||
	    !(idx = arena_alloc(&txn->arena, k * sizeof(*idx))))
		return MRTX_ENOMEM;
	k = 0;
	for (size_t i = 0; i < n; i++)
		if (w[i].fetched) {
			idx[k] = i;
			refs[k++] = (store_rowref){ w[i].r->t, w[i].r->row };
		}
	if ((rc = store_read_locks(txn->db->st, refs, k, &txn->arena, cur)))
		return rc;
	for (size_t j = 0; j < k; j++) {
		uint8_t state, id[LOCK_TXNID_SIZE];
		wrow *x = &w[idx[j]];

		if (cur[j].has_lock) {
			if ((rc = lock_peek(cur[j].lock, &state, id)))
				return rc;
			if (state != LOCK_STABLE &&
			    (rc = txn_read_row(txn, x->r->t, x->r->row,
			                       &(store_filter){ .family = -1, .lock_only = 1 },
			                       &cur[j])))
				return rc;
		}
		x->has_prev = cur[j].has_lock;
		x->prev = cur[j].lock;
	}
	return 0;
}

/* Decode every expected lock once (commit_ts, txn id for the prewrite's
 * "restore on abort" fields) and apply the write-write check to rows
 * written blindly: a lock fetched at commit whose commit is stamped above
 * the row's start_ts was committed after our first write to it (both are
 * timestamps of the store's own source: DESIGN §9.1, I15).  The first
 * committer wins, as with rows this transaction read.  A RADOS handle
 * whose knowledge of the oracle lagged may take an earlier commit for a
 * later one (a conflict that was not, never one missed); it learns the
 * stamp, so the retry does not.
 * Keeps I15 (DESIGN §10). */
static int decode_prev(mrtx_txn *txn, wrow *w, size_t n)
{
	int rc;

	for (size_t i = 0; i < n; i++) {
		wrow *x = &w[i];
		lock_rec rec;

		if (!x->has_prev || x->blind)
			continue;
		if ((rc = lockio_decode(txn->db->st, x->r->t, x->r->row, x->prev, &txn->arena,
		                        &rec)))
			return rc;
		memcpy(x->prev_txn, rec.txn, LOCK_TXNID_SIZE);
		x->prev_ts = rec.commit_ts;
		if (rec.state == LOCK_STABLE)
			store_ts_learn(txn->db->st, rec.commit_ts);
		if (x->fetched && rec.commit_ts > x->r->start_ts)
			return mrtx__seterr(MRTX_CONFLICT, "table '%s': a row this transaction "
			                    "wrote was committed by another transaction "
			                    "meanwhile", x->r->t->name);
	}
	return 0;
}


/*
 * Mark the rows the commit writes without reading their lock first: rows
 * never read and outside every scanned range.  Each is written on the
 * condition "no lock, or a STABLE one committed before my first write to
 * the row" -- the write-write check of decode_prev, evaluated by the store
 * (op_guard_blind), so that such a commit sends no read before its first
 * write.  A two-phase prewrite then cannot carry the exact lock to restore
 * on abort: it carries the all-zero txn id and start_ts, an upper bound of
 * the replaced lock's commit_ts (lock.h), and a rollback leaves
 * STABLE(0, bound).  That keeps every commit_ts above the row's last and
 * every later write-write check conservative; a reader that remembered the
 * replaced lock sees a change and retries.  A strategy whose blind guard
 * fails (a lock to resolve, a commit after our first write) returns 1 and
 * the pipeline reads the locks (plan_unblind, plan_expect).  No row is
 * blind on a store that cannot evaluate the guard (STORE_CAP_COND), or when
 * one of this handle's tails still holds a row (reading it waits for the
 * tail).
 * Keeps I15 (DESIGN §10).
 */
int plan_blind(mrtx_txn *txn, commit_plan *p)
{
	p->nblind = 0;
	if (!store_has(txn->db->st, STORE_CAP_COND))
		return 0;
	/* One row written in two phases means other rows were read, and such
	 * a commit fails mostly at validation, after its prewrite: a blind one
	 * would then leave STABLE(0, bound) (or a lock on a row that had none)
	 * where the exact lock stood, a false conflict for every reader of the
	 * row.  The reading path restores the exact bytes. */
	if (p->how == COMMIT_TWO_PHASE && p->n == 1)
		return 0;
	for (size_t i = 0; i < p->n; i++) {
		wrow *x = &p->w[i];

		if (prev_known(txn, x))
			continue;
		if (tail_holds(txn->db, x->r->t, x->r->row)) {
			plan_unblind(p);
			return 0;
		}
		/* (so commit_ts > start_ts: an orphan's fence, at the orphan's
		 * commit_ts, fails this row's condition -- recovery.c) */
		x->blind = 1;
		x->has_prev = 1;
		x->prev_ts = x->r->start_ts;
		p->nblind++;
	}
	return 0;
}

void plan_unblind(commit_plan *p)
{
	for (size_t i = 0; i < p->n; i++)
		p->w[i].blind = 0;
	p->nblind = 0;
}

/* The lock each written row's first write expects (blind rows: their
 * guard), read where it is not known, and decoded. */
int plan_expect(mrtx_txn *txn, commit_plan *p)
{
	int rc = expected_locks(txn, p->w, p->n);

	return rc ? rc : decode_prev(txn, p->w, p->n);
}


/* The commit timestamp's floor for the plan (ts_floor, for every
 * strategy); the store may stamp the commit point above it.  (On LMDB the
 * read rows' part never matters: every stored stamp is at or below the
 * counter the store stamps above.) */
uint64_t plan_ts(mrtx_txn *txn, const commit_plan *p)
{
	return ts_floor(txn, p->w, p->n);
}

/* ------------------------------------------------------- the store ops */

void op_init(store_op *op, const trow *r, int has_expect, mrtx_bytes expect)
{
	memset(op, 0, sizeof(*op));
	op->table = r->t;
	op->row = r->row;
	op->cond.absent = !has_expect;
	op->cond.lock = expect;
}

/* Ask the store to stamp op, a commit point whose timestamp must be at
 * least ts (store_op.stamp; LMDB). */
void op_stamp(store_op *op, uint64_t ts)
{
	op->stamp = 1;
	op->stamp_off = LOCK_COMMIT_TS_OFF;
	op->stamp_floor = ts;
}

/* The commit timestamp the store gave op, or ts if it gave none; the
 * transaction keeps it (txn->commit_ts). */
uint64_t stamped_ts(mrtx_txn *txn, const store_op *op, uint64_t ts)
{
	txn->commit_ts = op->stamped ? op->stamped : ts;
	return txn->commit_ts;
}


/* op for x's first write: expecting x's lock, or x's blind guard. */
void op_init_row(store_op *op, const wrow *x)
{
	op_init(op, x->r, x->has_prev && !x->blind, x->prev);
}

/* The condition of a blind row: no lock, or a STABLE one of this store
 * committed before ts (for a store that reads the lock: STORE_IF_BELOW's
 * pred). */
struct stable_before {
	const uint8_t *tag;
	uint64_t ts;
};

static int cond_stable_before(const void *lock, size_t size, void *arg)
{
	const struct stable_before *c = arg;

	return !lock || lock_is_stable_before(MRTX_BYTES(lock, size), c->tag, c->ts);
}

/* Guard op as a blind row first written at start_ts: no lock, or a STABLE
 * one committed at or below start_ts (cond for a store that reads, below
 * for one that compares bytes; STORE_CAP_COND).
 * Keeps I15 (DESIGN §10). */
static int blind_guard(mrtx_txn *txn, store_op *op, uint64_t start_ts)
{
	struct stable_before *sb = arena_alloc(&txn->arena, sizeof(*sb));
	uint8_t *below = arena_alloc(&txn->arena, STORE_ORDER_SIZE);

	if (!sb || !below)
		return MRTX_ENOMEM;
	*sb = (struct stable_before){ store_id(txn->db->st), start_ts + 1 };
	lock_order_below(start_ts + 1, below);
	op->cond.kind = STORE_IF_BELOW;
	op->cond.pred = cond_stable_before;
	op->cond.arg = sb;
	op->cond.below = MRTX_BYTES(below, STORE_ORDER_SIZE);
	return 0;
}


/* The blind guard on x's op (plan_blind), when x is blind. */
int op_guard_blind(mrtx_txn *txn, store_op *op, const wrow *x)
{
	return x->blind ? blind_guard(txn, op, x->r->start_ts) : 0;
}

/* Writes before the commit point hold while the transaction's index
 * declarations are current (index.c); else MRTX_CONFLICT, for a retry. */
void op_check_gen(const mrtx_txn *txn, store_op *op)
{
	if (txn->idx) {
		op->check_gen = 1;
		op->gen = idx_snap_gen(txn->idx);
	}
}

int gen_changed(mrtx_txn *txn)
{
	idx_cache_drop(txn->db, idx_snap_gen(txn->idx));
	return mrtx__seterr(MRTX_CONFLICT, "an index was declared or dropped while the transaction "
	                    "ran; retry it to maintain the indexes as they are now");
}

int write_refused(mrtx_txn *txn, const store_table *t, const char *where, const char *why)
{
	int held = 0;

	/* (only on this failure path: a look at the table's records) */
	if (t && store_table_held(txn->db->st, t, &held) == 0 && held)
		return mrtx__seterr(MRTX_CONFLICT, "table '%s' is frozen by a drop or truncate (of "
		                    "it or of a family) that has not finished, and no commit may "
		                    "write it until that ends; one cut short is finished by "
		                    "running it again", t->name);
	return mrtx__seterr(MRTX_CONFLICT, "%s: %s", where, why);
}

/* The commit point's write failed in a way that may have applied it. */
int point_unknown(const char *what)
{
	return mrtx__seterr(MRTX_EUNKNOWN, "%s: store failed (%s); the transaction may or "
	                    "may not have committed (the next reader or `mrtx recover` "
	                    "settles it)", what, mrtx_errmsg());
}
