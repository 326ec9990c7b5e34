/*
 * commit.c - the commit protocol (DESIGN §5).
 *
 *   read-only:  from a view with no pending lock met (snapread.c) ... OK
 *               else validate_reads .......................... OK | CONFLICT
 *   one row, nothing else read:  one conditional write
 *               expect(seen lock) -> STABLE(txn, ts) + data .. OK | CONFLICT
 *   many rows (primary = first mutated row in (table, row) order):
 *     1 commit_prewrite   all rows: expect(seen) -> PREWRITTEN(+redo)   one call
 *                         (rows written blind: the store-checked condition
 *                         of commit_multi_blind, no read before)
 *        -- commit.after_prewrite --        failure: rollback, CONFLICT; only
 *                                           blind conditions: rollback, read,
 *                                           start again
 *     2 txn_validate      read-only rows unchanged, scanned ranges unchanged
 *        -- commit.after_validate --        failure: rollback, CONFLICT
 *     3 commit_point      primary PREWRITTEN -> COMMITTED + primary's data
 *        -- commit.after_point --           store error here: EUNKNOWN
 *     4 apply             secondaries PREWRITTEN -> STABLE + data        one call
 *        -- commit.after_secondaries --
 *     5 release           primary COMMITTED -> STABLE
 *     (4 and 5 are the tail, tail.h: over RADOS the handle's tail thread
 *     runs them after commit returns)
 *   From before step 1 to step 3 the primary's expiry is moved on while the
 *   commit runs (heartbeat.h), so a slow but live commit is not aborted by
 *   readers that judge its owner by the expiry alone (another host's).
 *   After step 3 the transaction is committed whatever happens; failures in
 *   4-5 are left to recovery (readers, `mrtx recover`) and commit reports OK.
 *   Step 5 runs only when every secondary of step 4 succeeded, so a primary
 *   never leaves COMMITTED while a secondary is still PREWRITTEN.
 *
 * Serializability: every read row's lock and every scanned range is checked
 * unchanged after all write locks are held (step 2), so the transaction is
 * equivalent to running atomically at its commit point.
 */
#include "txn_int.h"
#include "heartbeat.h"
#include "tail.h"

#include <stdlib.h>
#include <string.h>

#include <bsd/string.h>

typedef struct wrow {
	trow *r;
	store_mut *redo;
	size_t nredo;
	int has_prev;
	int fetched;      /* prev read at commit (a blind write), not remembered */
	int blind;        /* prewritten without reading prev: guarded by "no lock,
	                   * or STABLE at or below start_ts" (commit_multi_blind) */
	mrtx_bytes prev;  /* the lock the prewrite expects */
	uint8_t prev_txn[LOCK_TXNID_SIZE]; /* prev decoded (it is STABLE) */
	uint64_t prev_ts;
	lock_rec rec;     /* the PREWRITTEN record */
	mrtx_bytes pw;    /* its bytes */
} wrow;

/* ----------------------------------------------------------- validation */

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

static int validate_reads(mrtx_txn *txn)
{
	store_rowref *refs;
	store_row *cur;
	size_t n = 0, k = 0;
	trow *r;
	int rc;

	RB_FOREACH(r, trow_tree, &txn->rows)
		n += r->read && !r->mutated;
	if (n == 0)
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
			                    "was changed by a concurrent commit", r->t->name);
		k++;
	}
	return 0;
}

static int validate_range(mrtx_txn *txn, const scan_range *sr)
{
	store_filter f = STORE_FILTER_ALL;
	store_range rg;
	store_row *rows;
	size_t n, i = 0;
	int more, rc;
	trow key, *r;

	if (!sr->exhausted && !sr->any)
		return 0;
	f.lock_only = 1;
	rg.lo = sr->start;
	rg.lo_excl = 0;
	rg.hi = sr->end;
	if (!sr->exhausted) {
		if (!sr->reverse) {
			/* [start, last]: hi = last . 0x00, the successor of last */
			uint8_t *h = arena_alloc(&txn->arena, sr->last.size + 1);

			if (!h)
				return MRTX_ENOMEM;
			memcpy(h, sr->last.data, sr->last.size);
			h[sr->last.size] = 0;
			rg.hi = MRTX_BYTES(h, sr->last.size + 1);
		} else {
			rg.lo = sr->last;
		}
	}
	if ((rc = store_scan_rows(txn->db->st, sr->t, &rg, 0, &f, 0, &txn->arena, &rows, &n,
	                          &more)))
		return rc;
	/* Walk the store's locks and the rows we saw in the same order. */
	key.t = sr->t;
	key.row = rg.lo;
	for (r = RB_NFIND(trow_tree, &txn->rows, &key);; r = RB_NEXT(trow_tree, &txn->rows, r)) {
		int in = r && r->t == sr->t && (!rg.hi.size || bytes_cmp(r->row, rg.hi) < 0);
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

int txn_validate(mrtx_txn *txn)
{
	int rc = validate_reads(txn);

	for (size_t i = 0; rc == 0 && i < txn->nranges; i++)
		rc = validate_range(txn, txn->ranges[i]);
	return rc;
}

/* ------------------------------------------------------------- helpers */

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
 * store stamps the commit point itself, at or above this: DESIGN "Time").
 * A blind row's expected commit_ts is its start_ts, so the floor is above
 * every blind row's start (recovery.c: an orphan's fence relies on it). */
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
 * stamps follow every read dependency (DESIGN §9). */
static uint64_t ts_floor(mrtx_txn *txn, const wrow *w, size_t n)
{
	uint64_t ts = ts_above(txn, w, n);
	trow *r;

	RB_FOREACH(r, trow_tree, &txn->rows) {
		uint8_t k[LOCK_ORDER_SIZE];
		uint64_t cts = 0;

		if (r->mutated || !r->read || !r->lock_known || !r->has_lock)
			continue;
		lock_order_key(r->lock.data, r->lock.size, k);
		if (k[0] != 0)
			continue; /* not STABLE */
		for (unsigned i = 1; i < LOCK_ORDER_SIZE; i++)
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

	if (!(refs = arena_alloc(&txn->arena, n * sizeof(*refs))) ||
	    !(cur = arena_alloc(&txn->arena, n * sizeof(*cur))) ||
	    !(idx = arena_alloc(&txn->arena, n * sizeof(*idx))))
		return MRTX_ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (!prev_known(txn, &w[i])) {
			idx[k] = i;
			refs[k++] = (store_rowref){ w[i].r->t, w[i].r->row };
		}
	if (k == 0)
		return 0;
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
		x->fetched = 1;
	}
	return 0;
}

/* Decode every expected lock once (commit_ts, txn id for the prewrite's
 * "restore on abort" fields) and apply the write-write check to rows
 * written blindly: a lock fetched at commit whose commit is stamped above
 * the row's start_ts was committed after our first write to it (both are
 * timestamps of the store's own source: DESIGN "Time", T3).  The first
 * committer wins, as with rows this transaction read.  A RADOS handle
 * whose knowledge of the oracle lagged may take an earlier commit for a
 * later one (a conflict that was not, never one missed); it learns the
 * stamp, so the retry does not. */
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

static void lock_ref_of(const trow *r, lock_ref *out)
{
	out->table = MRTX_BYTES(r->t->name, strlen(r->t->name));
	out->row = r->row;
}

/* Fill the PREWRITTEN record of w[i] and encode it. */
static int build_prewrite(mrtx_txn *txn, wrow *w, size_t n, size_t i, uint64_t ts,
                          lock_ref *secs)
{
	store *st = txn->db->st;
	lock_rec *rec = &w[i].rec;

	memset(rec, 0, sizeof(*rec));
	rec->state = LOCK_PREWRITTEN;
	memcpy(rec->tag, store_id(st), LOCK_TAG_SIZE);
	memcpy(rec->txn, txn->id, LOCK_TXNID_SIZE);
	rec->commit_ts = ts;
	rec->expiry_ms = mrtx__now_ms() + txn->lock_ttl_ms;
	rec->owner = *lock_self_owner();
	if (w[i].has_prev) {
		memcpy(rec->prev_txn, w[i].prev_txn, LOCK_TXNID_SIZE);
		rec->prev_commit_ts = w[i].prev_ts;
	} else {
		rec->flags |= LOCK_F_PREV_ABSENT;
	}
	if (i == 0) {
		rec->secondaries = secs;
		rec->nsecondaries = n - 1;
	} else {
		rec->flags |= LOCK_F_SECONDARY;
		lock_ref_of(w[0].r, &rec->primary);
	}
	rec->redo = w[i].redo;
	rec->nredo = w[i].nredo;
	return lock_encode(rec, &txn->arena, &w[i].pw);
}

static void op_init(store_op *op, const trow *r, int has_expect, mrtx_bytes expect)
{
	memset(op, 0, sizeof(*op));
	op->table = r->t;
	op->row = r->row;
	op->cond.absent = !has_expect;
	op->cond.lock = expect;
}

/* Ask the store to stamp op, a commit point whose timestamp must be at
 * least ts (store_op.stamp; LMDB). */
static void op_stamp(store_op *op, uint64_t ts)
{
	op->stamp = 1;
	op->stamp_off = LOCK_COMMIT_TS_OFF;
	op->stamp_floor = ts;
}

/* The commit timestamp the store gave op, or ts if it gave none; the
 * transaction keeps it (txn->commit_ts). */
static uint64_t stamped_ts(mrtx_txn *txn, const store_op *op, uint64_t ts)
{
	txn->commit_ts = op->stamped ? op->stamped : ts;
	return txn->commit_ts;
}

/* Undo the prewrites that were applied (pw_ops' results say which);
 * primary: the primary's current bytes (the heartbeat may have moved its
 * expiry since the prewrite).  Best effort: what is left is a PREWRITTEN
 * lock recovery rolls back.  1 when every undo surely applied (so the
 * transaction holds no lock), else 0. */
static int commit_rollback(mrtx_txn *txn, wrow *w, size_t n, const store_op *pw_ops,
                           mrtx_bytes primary)
{
	store *st = txn->db->st;
	store_op *ops = arena_alloc(&txn->arena, n * sizeof(*ops));
	size_t k = 0;
	int all = 1;

	if (!ops)
		return 0;
	for (size_t pass = 0; pass < 2; pass++) {
		k = 0;
		for (size_t i = pass ? 0 : 1; pass ? i < 1 : i < n; i++) {
			if (pw_ops[i].result == MRTX_CONFLICT ||
			    pw_ops[i].result == STORE_GEN_CHANGED)
				continue; /* not applied */
			op_init(&ops[k], w[i].r, 1, i == 0 ? primary : w[i].pw);
			if (lockio_restore_prev(st, &w[i].rec, &txn->arena, &ops[k]) == 0)
				k++;
			else
				all = 0;
		}
		if (k && lockio_write_rows(st, ops, k))
			all = 0;
		for (size_t i = 0; i < k; i++)
			all &= ops[i].result == 0;
	}
	return all;
}

/* ------------------------------------------------------------- commit */

/* Writes before the commit point hold while the transaction's index
 * declarations are current (index.c); else MRTX_CONFLICT, for a retry. */
static void op_check_gen(const mrtx_txn *txn, store_op *op)
{
	if (txn->idx) {
		op->check_gen = 1;
		op->gen = idx_snap_gen(txn->idx);
	}
}

static int gen_changed(mrtx_txn *txn)
{
	idx_cache_drop(txn->db, idx_snap_gen(txn->idx));
	return mrtx__seterr(MRTX_CONFLICT, "an index was declared while the transaction ran; "
	                    "retry it to maintain the index");
}

/* The commit point's write failed in a way that may have applied it. */
static int point_unknown(const char *what)
{
	return mrtx__seterr(MRTX_EUNKNOWN, "%s: store failed (%s); the transaction may or "
	                    "may not have committed (the next reader or `mrtx recover` "
	                    "settles it)", what, mrtx_errmsg());
}

/* The condition of a blind one-row commit (see commit_blind_row). */
struct stable_before {
	const uint8_t *tag;
	uint64_t ts;
};

static int cond_stable_before(const void *lock, size_t size, void *arg)
{
	const struct stable_before *c = arg;

	return !lock || lock_is_stable_before(MRTX_BYTES(lock, size), c->tag, c->ts);
}

/*
 * A one-row commit is its own commit point: one conditional write.  With
 * sb NULL it expects w->prev (read earlier, or at commit); with sb, it is
 * conditional on the row having no lock record or a STABLE one committed
 * before sb->ts, checked inside the write, so a blind write needs no read
 * first.  Returns 1 when that condition failed (the caller falls back to
 * reading the lock).
 */
static int commit_one_row(mrtx_txn *txn, wrow *w, uint64_t ts, struct stable_before *sb)
{
	store *st = txn->db->st;
	uint8_t below[LOCK_ORDER_SIZE];
	store_op op;
	int rc;

	op_init(&op, w->r, w->has_prev, w->prev);
	if (sb) {
		op.cond.kind = STORE_IF_BELOW;
		op.cond.pred = cond_stable_before;
		op.cond.arg = sb;
		lock_order_below(sb->ts, below);
		op.cond.below = MRTX_BYTES(below, sizeof(below));
	}
	op_check_gen(txn, &op);
	if ((rc = lockio_stable(st, txn->id, ts, &txn->arena, &op.new_lock)))
		return rc;
	op.muts = w->redo;
	op.nmuts = w->nredo;
	op.durable = 1; /* the commit point */
	op_stamp(&op, ts);
	op.stamp = STORE_STAMP_ONE_ROW; /* (it read no other row) */
	rc = lockio_write_rows(st, &op, 1);
	if (op.result == MRTX_EUNKNOWN)
		return point_unknown("single-row commit");
	if (rc)
		return rc; /* surely not applied: nothing was written */
	if (op.result == STORE_GEN_CHANGED)
		return gen_changed(txn);
	if (op.result == MRTX_CONFLICT && sb)
		return 1;
	if (op.result == MRTX_CONFLICT)
		return mrtx__seterr(MRTX_CONFLICT, "table '%s': the row changed or is locked by "
		                    "a concurrent transaction", w->r->t->name);
	(void)stamped_ts(txn, &op, ts);
	return 0;
}

/*
 * A row written blindly and alone: commit without reading its lock when it
 * has none or a STABLE one committed before our first write to it (then
 * there is no write-write conflict, and a commit_ts above both the first
 * write and the source as this handle knows it is above the old one).
 * Anything else -- a lock of another transaction, a commit after our first
 * write -- fails the condition and takes the reading path, which resolves
 * or reports it.
 */
static int commit_blind_row(mrtx_txn *txn, wrow *w)
{
	trow *r = w->r;
	struct stable_before sb = { store_id(txn->db->st), r->start_ts + 1 };
	uint64_t known = 0;

	if (r->lock_known || txn_in_scanned_range(txn, r->t, r->row) ||
	    !store_has(txn->db->st, STORE_CAP_COND) || tail_holds(txn->db, r->t, r->row))
		return 1; /* the lock to expect is known without a read, or must be read
		           * (one of this handle's tails holds it: the read waits) */
	if (store_ts_known(txn->db->st, &known))
		mrtx__clearerr(); /* (the start alone: the store stamps above it) */
	return commit_one_row(txn, w, MRTX_MAX(r->start_ts, known) + 1, &sb);
}

/* Guard op as a blind row first written at start_ts: no lock, or a STABLE
 * one committed at or below start_ts (cond for a store that reads, below
 * for one that compares bytes; STORE_CAP_COND). */
static int blind_guard(mrtx_txn *txn, store_op *op, uint64_t start_ts)
{
	struct stable_before *sb = arena_alloc(&txn->arena, sizeof(*sb));
	uint8_t *below = arena_alloc(&txn->arena, LOCK_ORDER_SIZE);

	if (!sb || !below)
		return MRTX_ENOMEM;
	*sb = (struct stable_before){ store_id(txn->db->st), start_ts + 1 };
	lock_order_below(start_ts + 1, below);
	op->cond.kind = STORE_IF_BELOW;
	op->cond.pred = cond_stable_before;
	op->cond.arg = sb;
	op->cond.below = MRTX_BYTES(below, LOCK_ORDER_SIZE);
	return 0;
}

/*
 * Steps 1-5 for a transaction of several rows, prewritten with the lock
 * each must expect (w[i].prev, or "none" when has_prev is 0), or, for a
 * blind row (w[i].blind), with blind_guard.  Returns 0 or an error as
 * mrtx_commit does, or 1 when only blind guards failed: every prewrite was
 * rolled back and the caller reads the locks and tries again.
 */
static int commit_multi(mrtx_txn *txn, wrow *w, size_t n, uint64_t ts)
{
	store *st = txn->db->st;
	store_op *ops;
	lock_ref *secs;
	lock_rec crec;
	mrtx_bytes cbytes, pcur;
	hb_entry hb;
	int rc, conflict = 0, hard = 0, gen = 0, reread;

	if (!(ops = arena_alloc(&txn->arena, n * sizeof(*ops))) ||
	    !(secs = arena_alloc(&txn->arena, n * sizeof(*secs))))
		return MRTX_ENOMEM;
	for (size_t i = 1; i < n; i++)
		lock_ref_of(w[i].r, &secs[i - 1]);
	for (size_t i = 0; i < n; i++) {
		if ((rc = build_prewrite(txn, w, n, i, ts, secs)))
			return rc;
		/* (a blind row: "absent", or blind_guard's condition, as in
		 * commit_one_row -- and a row the tablet may not have held) */
		op_init(&ops[i], w[i].r, w[i].has_prev && !w[i].blind, w[i].prev);
		if (w[i].blind && (rc = blind_guard(txn, &ops[i], w[i].r->start_ts)))
			return rc;
		op_check_gen(txn, &ops[i]);
		ops[i].new_lock = w[i].pw;
		w[i].r->prewrite = w[i].pw;
	}
	/* From here to the commit point the primary's expiry is kept moving. */
	if ((rc = hb_start(txn->db, &hb, w[0].r->t, w[0].r->row, w[0].pw, w[0].rec.expiry_ms,
	                   txn->lock_ttl_ms)))
		return rc; /* nothing written */
	/* 1: prewrite */
	rc = lockio_write_rows(st, ops, n);
	for (size_t i = 0; i < n; i++) {
		conflict |= ops[i].result == MRTX_CONFLICT;
		hard |= ops[i].result == MRTX_CONFLICT && !w[i].blind;
		gen |= ops[i].result == STORE_GEN_CHANGED;
	}
	reread = rc == 0 && !gen && conflict && !hard;
	if (rc == 0 && gen)
		rc = gen_changed(txn);
	else if (rc == 0 && conflict)
		rc = mrtx__seterr(MRTX_CONFLICT, "prewrite: a row to write changed or is locked by "
		                  "a concurrent transaction");
	if (rc == 0)
		rc = FAILPOINT(FP_COMMIT_AFTER_PREWRITE);
	/* 2: validate reads after every write lock is held */
	if (rc == 0)
		rc = txn_validate(txn);
	if (rc == 0)
		rc = FAILPOINT(FP_COMMIT_AFTER_VALIDATE);
	/* The primary's bytes, as the heartbeat last wrote them. */
	if (hb_stop(txn->db, &hb, &txn->arena, &pcur))
		return rc ? rc : MRTX_ENOMEM; /* prewrites left to recovery */
	if (rc) {
		int saved = rc;
		char msg[512];

		strlcpy(msg, mrtx_errmsg(), sizeof(msg));
		/* only blind guards failed and nothing of ours is left: read the
		 * locks, then try again */
		if (commit_rollback(txn, w, n, ops, pcur) && reread && saved == MRTX_CONFLICT)
			return 1;
		return mrtx__seterr(saved, "%s", msg);
	}
	/* 3: the commit point */
	crec = w[0].rec;
	crec.state = LOCK_COMMITTED;
	crec.expiry_ms = mrtx__now_ms() + txn->lock_ttl_ms; /* (no one aborts a COMMITTED
	                                                       record; for `mrtx check`) */
	crec.nredo = 0; /* applied in this same op */
	crec.redo = NULL;
	if ((rc = lock_encode(&crec, &txn->arena, &cbytes)))
		return rc; /* nothing committed yet; prewrites are left to recovery */
	op_init(&ops[0], w[0].r, 1, pcur);
	ops[0].new_lock = cbytes;
	ops[0].muts = w[0].redo;
	ops[0].nmuts = w[0].nredo;
	ops[0].durable = 1;
	op_stamp(&ops[0], ts);
	rc = lockio_write_rows(st, ops, 1);
	if (ops[0].result == MRTX_EUNKNOWN)
		return point_unknown("commit point");
	if (rc) {
		/* Surely not applied: nothing is committed; undo the prewrites. */
		int saved = rc;
		char msg[512];

		strlcpy(msg, mrtx_errmsg(), sizeof(msg));
		ops[0].result = 0; /* the primary still holds our prewrite */
		(void)commit_rollback(txn, w, n, ops, pcur);
		return mrtx__seterr(saved, "commit point: %s; nothing was committed", msg);
	}
	if (ops[0].result == MRTX_CONFLICT) {
		/* A resolver aborted us (our locks expired), or (RADOS) readers
		 * pushed the commit above their snapshots round after round:
		 * nothing is committed.  The primary is rolled back too, on the
		 * condition that it still holds our prewrite (it does after
		 * pushes; after an abort the condition fails, harmlessly). */
		ops[0].result = 0;
		(void)commit_rollback(txn, w, n, ops, pcur);
		return mrtx__seterr(MRTX_CONFLICT, "commit point: the transaction's primary lock "
		                    "was expired and rolled back by another process, or readers "
		                    "kept pushing the commit above their snapshots; nothing was "
		                    "committed");
	}
	/* The commit timestamp is the one the store stamped into the COMMITTED
	 * record (LMDB), which every roller forward reads from there: the
	 * release expects those bytes, and the secondaries carry it. */
	if ((ts = stamped_ts(txn, &ops[0], ts)) != crec.commit_ts) {
		crec.commit_ts = ts;
		if (lock_encode(&crec, &txn->arena, &cbytes))
			return 0; /* committed; recovery finishes */
	}
	if (FAILPOINT(FP_COMMIT_AFTER_POINT))
		return 0;
	/* 4-5: apply the secondaries, then release the primary (tail.c: run
	 * here, or on the handle's tail thread over RADOS) */
	for (size_t i = 1; i <= n; i++) {
		const wrow *x = &w[i == n ? 0 : i];
		store_op *op = &ops[i - 1];

		op_init(op, x->r, 1, i == n ? cbytes : x->pw);
		if (lockio_stable(st, txn->id, ts, &txn->arena, &op->new_lock))
			return 0; /* committed; recovery finishes */
		if (i < n) {
			op->muts = x->redo;
			op->nmuts = x->nredo;
			op->ts = ts; /* (the commit point's stamp) */
		}
	}
	tail_submit(txn->db, txn->id, ops, n - 1);
	return 0;
}

/*
 * A multi-row commit without reading the locks of the rows written blindly
 * (never read, outside every scanned range): each is prewritten on the
 * condition a blind one-row commit uses, "no lock, or a STABLE one
 * committed before my first write to the row" -- the write-write check of
 * decode_prev, evaluated by the store, so that such a commit sends no read
 * before its prewrite.  The prewrite then cannot carry the exact lock to
 * restore on abort: it carries the all-zero txn id and start_ts, an upper
 * bound of the replaced lock's commit_ts (lock.h), and a rollback leaves
 * STABLE(0, bound).  That keeps every commit_ts above the row's last and
 * every later write-write check conservative; a reader that remembered the
 * replaced lock sees a change and retries.  Any row whose condition fails
 * (a lock to resolve, a commit after our first write) sends the whole
 * commit down the reading path (return 1), after the rollback.
 */
static int commit_multi_blind(mrtx_txn *txn, wrow *w, size_t n)
{
	size_t nblind = 0;
	int rc;

	if (!store_has(txn->db->st, STORE_CAP_COND))
		return 1;
	for (size_t i = 0; i < n; i++) {
		trow *r = w[i].r;

		if (prev_known(txn, &w[i]))
			continue;
		if (tail_holds(txn->db, r->t, r->row)) {
			for (size_t j = 0; j < i; j++) /* this handle's own tail: read */
				w[j].blind = 0;        /* the row, which waits for it */
			return 1;
		}
		/* (so commit_ts > start_ts: an orphan's fence, at the orphan's
		 * commit_ts, fails this row's condition -- recovery.c) */
		w[i].blind = 1;
		w[i].has_prev = 1;
		w[i].prev_ts = r->start_ts;
		nblind++;
	}
	if (nblind == 0)
		return 1; /* nothing to read: the reading path is this path */
	if ((rc = decode_prev(txn, w, n)))
		return rc;
	if ((rc = commit_multi(txn, w, n, ts_floor(txn, w, n))) == 1)
		for (size_t i = 0; i < n; i++)
			w[i].blind = 0;
	return rc;
}

/* ------------------------------------------------------ one-phase commit */

/* The range check of a scanned range for store_write_atomic: the rows the
 * transaction saw there with a lock, with that lock (validate_range's rule:
 * every row with a lock in the range was seen, unchanged, and none seen has
 * vanished).  0 with *skip when there is nothing to check. */
static int range_check_of(mrtx_txn *txn, const scan_range *sr, store_rcheck *c, int *skip)
{
	mrtx_bytes *rows = NULL, *locks = NULL;
	size_t n = 0, cap = 0;
	trow key, *r;

	*skip = !sr->exhausted && !sr->any;
	if (*skip)
		return 0;
	memset(c, 0, sizeof(*c));
	c->table = sr->t;
	c->range.lo = sr->start;
	c->range.hi = sr->end;
	if (!sr->exhausted) {
		if (!sr->reverse) {
			uint8_t *h = arena_alloc(&txn->arena, sr->last.size + 1);

			if (!h)
				return MRTX_ENOMEM;
			memcpy(h, sr->last.data, sr->last.size);
			h[sr->last.size] = 0;
			c->range.hi = MRTX_BYTES(h, sr->last.size + 1);
		} else {
			c->range.lo = sr->last;
		}
	}
	key.t = sr->t;
	key.row = c->range.lo;
	for (int pass = 0; pass < 2; pass++) {
		if (pass && (!(rows = arena_alloc(&txn->arena, (cap + 1) * sizeof(*rows))) ||
		             !(locks = arena_alloc(&txn->arena, (cap + 1) * sizeof(*locks)))))
			return MRTX_ENOMEM;
		n = 0;
		for (r = RB_NFIND(trow_tree, &txn->rows, &key); r && r->t == sr->t;
		     r = RB_NEXT(trow_tree, &txn->rows, r)) {
			if (c->range.hi.size && bytes_cmp(r->row, c->range.hi) >= 0)
				break;
			if (!(r->lock_known && r->has_lock))
				continue;
			if (pass) {
				rows[n] = r->row;
				locks[n] = r->lock;
			}
			n++;
		}
		cap = n;
	}
	c->rows = rows;
	c->locks = locks;
	c->n = n;
	return 0;
}

/*
 * One-phase commit, on a store that writes many rows atomically
 * (STORE_CAP_ATOMIC: LMDB).  TiKV commits in one phase when all of a
 * transaction's keys live in one region; here all of them live in one
 * environment, so the whole commit is one conditional write, and that
 * write is the commit point:
 *
 *     -- commit.after_prewrite --  -- commit.after_validate --
 *     one store_write_atomic: every written row's condition (the lock its
 *       prewrite would expect, or blind_guard), every read row's lock and
 *       every scanned range unchanged  ->  every row STABLE(txn, ts) + data
 *     -- commit.after_point --  -- commit.after_secondaries --
 *
 * No lock is ever PREWRITTEN, so there is nothing to roll back or forward:
 * a writer that dies before the write leaves nothing, one that dies after
 * it has committed everything.  The failpoints keep their meaning and fire
 * on every such commit.  Returns as commit_multi does (1: only blind
 * guards failed, nothing was written; the caller reads and tries again).
 */
static int commit_atomic(mrtx_txn *txn, wrow *w, size_t n, uint64_t ts)
{
	store *st = txn->db->st;
	size_t nread = 0, nops, nchk = 0;
	store_rcheck *chk = NULL;
	store_op *ops;
	mrtx_bytes stable;
	int rc, applied, hard = 0, blind = 0, gen = 0, nochk = 0;
	const char *why = NULL;
	trow *r;

	RB_FOREACH(r, trow_tree, &txn->rows)
		nread += r->read && !r->mutated;
	nops = n + nread;
	if (!(ops = arena_alloc(&txn->arena, nops * sizeof(*ops))) ||
	    (txn->nranges &&
	     !(chk = arena_alloc(&txn->arena, txn->nranges * sizeof(*chk)))))
		return MRTX_ENOMEM;
	if ((rc = lockio_stable(st, txn->id, ts, &txn->arena, &stable)))
		return rc;
	for (size_t i = 0; i < n; i++) {
		op_init(&ops[i], w[i].r, w[i].has_prev && !w[i].blind, w[i].prev);
		if (w[i].blind && (rc = blind_guard(txn, &ops[i], w[i].r->start_ts)))
			return rc;
		op_check_gen(txn, &ops[i]);
		ops[i].new_lock = stable;
		ops[i].muts = w[i].redo;
		ops[i].nmuts = w[i].nredo;
		ops[i].durable = 1; /* the commit point */
		op_stamp(&ops[i], ts);
	}
	nops = n;
	RB_FOREACH(r, trow_tree, &txn->rows) {
		if (!r->read || r->mutated)
			continue;
		if (!r->lock_known)
			return mrtx__seterr(MRTX_CONFLICT, "table '%s': a row this transaction "
			                    "read was changed by a concurrent commit", r->t->name);
		op_init(&ops[nops], r, r->has_lock, r->lock);
		ops[nops++].check_only = 1;
	}
	for (size_t i = 0; i < txn->nranges; i++) {
		if ((rc = range_check_of(txn, txn->ranges[i], &chk[nchk], &nochk)))
			return rc;
		nchk += !nochk;
	}
	if ((rc = FAILPOINT(FP_COMMIT_AFTER_PREWRITE)) ||
	    (rc = FAILPOINT(FP_COMMIT_AFTER_VALIDATE)))
		return rc; /* nothing written */
	rc = lockio_write_atomic(st, ops, nops, chk, nchk, &applied);
	for (size_t i = 0; i < nops; i++)
		if (ops[i].result == MRTX_EUNKNOWN)
			return point_unknown("one-phase commit");
	if (rc)
		return rc; /* surely not applied */
	if (applied) {
		(void)stamped_ts(txn, &ops[0], ts);
		(void)FAILPOINT(FP_COMMIT_AFTER_POINT);
		(void)FAILPOINT(FP_COMMIT_AFTER_SECONDARIES);
		return 0;
	}
	for (size_t i = 0; i < nops; i++) {
		if (ops[i].result == STORE_GEN_CHANGED)
			gen = 1;
		else if (ops[i].result == 0)
			continue;
		else if (i < n && w[i].blind && ops[i].result == MRTX_CONFLICT)
			blind = 1;
		else {
			hard = 1;
			why = why ? why : i < n ? "a row to write changed or is locked by a concurrent "
			                          "transaction" :
			                          "a row this transaction read was changed by a "
			                          "concurrent commit";
		}
	}
	for (size_t i = 0; i < nchk; i++)
		if (chk[i].result) {
			hard = 1;
			why = why ? why : "a scanned range changed (a row was inserted, deleted or "
			                  "updated by a concurrent commit)";
		}
	if (gen)
		return gen_changed(txn);
	if (blind && !hard)
		return 1;
	return mrtx__seterr(MRTX_CONFLICT, "commit: %s", why ? why : "a condition failed");
}

/* Commit in one phase?  On a store that writes many rows atomically, unless
 * the handle asked for the two-phase protocol (mrtx_options.two_phase). */
static int one_phase(const mrtx_txn *txn)
{
	return !txn->db->two_phase && store_has(txn->db->st, STORE_CAP_ATOMIC);
}

/* The blind variant of commit_atomic: rows neither read nor in a scanned
 * range are guarded by blind_guard (commit_multi_blind's rule), so nothing
 * is read before the write.  1: take the reading path. */
static int commit_atomic_blind(mrtx_txn *txn, wrow *w, size_t n)
{
	int rc;

	for (size_t i = 0; i < n; i++) {
		trow *r = w[i].r;

		if (prev_known(txn, &w[i]))
			continue;
		if (tail_holds(txn->db, r->t, r->row)) {
			for (size_t j = 0; j < i; j++)
				w[j].blind = 0;
			return 1;
		}
		w[i].blind = 1;
		w[i].has_prev = 1;
		w[i].prev_ts = r->start_ts;
	}
	if ((rc = decode_prev(txn, w, n)))
		return rc;
	if ((rc = commit_atomic(txn, w, n, ts_above(txn, w, n))) == 1)
		for (size_t i = 0; i < n; i++)
			w[i].blind = 0;
	return rc;
}

int txn_commit_run(mrtx_txn *txn)
{
	size_t n = txn->nmutated, k = 0;
	uint64_t ts;
	wrow *w;
	trow *r;
	int rc, others_read = txn->nranges > 0;

	if (n == 0) {
		/* Read-only: every read came from one view that met no pending
		 * lock (snapread.c) is a serializable snapshot, with nothing to
		 * validate; otherwise validate.  Either way the commit vouches for
		 * what it read: in sync mode a commit is visible a moment before
		 * it is durable (DESIGN §8), so make what it could see durable
		 * first. */
		uint64_t point;

		if (!txn->at && ((!txn->view && !txn->snap_live) || txn->must_validate) &&
		    ((rc = txn_fetch_lazy(txn)) || (rc = txn_validate(txn))))
			return rc; /* (a past snapshot's reads are of fixed versions;
			            * a live one's on RADOS are a snapshot: DESIGN §9) */
		if (!txn->view && RB_EMPTY(&txn->rows) && txn->nranges == 0)
			return 0; /* (read nothing: vouches for nothing) */
		/* (what the view holds, when every read came from it; else
		 * everything visible now: validation read the store as it is;
		 * the view is closed first, as the sync may take the writer
		 * lock, and growing the map then waits for this thread's view) */
		point = txn->must_validate ? 0 : store_view_point(txn->db->st, txn->view);
		txn_view_close(txn);
		return store_sync_visible(txn->db->st, point);
	}
	if (txn->snap_stale) {
		/* a read at the snapshot showed a row as it was before a later
		 * commit: writing on what it read would lose that commit */
		txn->doom = MRTX_CONFLICT;
		return mrtx__seterr(MRTX_CONFLICT, "a row this transaction read was committed by "
		                    "another transaction after its snapshot (%llu)",
		                    (unsigned long long)txn->snap_ts);
	}
	if (store_read_only(txn->db->st)) /* mrtx_put & co. refuse first: defence */
		return mrtx__seterr(MRTX_EREADONLY, "commit: store %s is open read-only",
		                    store_path(txn->db->st));
	/* A writing commit reads and writes the store as it is now, never
	 * through the view (everything read is copied into the arena): end it,
	 * so that its read transaction does not stand in the way of a map
	 * another process grew (lmdb_remap) or of pages writers could reuse.
	 * The locks of rows read without them come from it first. */
	if ((rc = txn_fetch_lazy(txn)))
		return rc;
	txn_view_close(txn);
	if ((rc = lock_new_txnid(txn->id)))
		return rc;
	if (!(w = arena_alloc(&txn->arena, n * sizeof(*w))))
		return MRTX_ENOMEM;
	RB_FOREACH(r, trow_tree, &txn->rows) {
		if (!r->mutated) {
			others_read |= r->read;
			continue;
		}
		memset(&w[k], 0, sizeof(w[k]));
		w[k].r = r;
		if ((rc = txn_row_redo(txn, r, &w[k].redo, &w[k].nredo)))
			return rc;
		k++;
	}
	if (n == 1 && !others_read && (rc = commit_blind_row(txn, &w[0])) <= 0)
		return rc;
	if (n == 1 && !others_read) {
		if ((rc = expected_locks(txn, w, n)) || (rc = decode_prev(txn, w, n)))
			return rc;
		return commit_one_row(txn, &w[0], ts_above(txn, w, n), NULL);
	}
	if (one_phase(txn)) {
		if ((rc = commit_atomic_blind(txn, w, n)) <= 0)
			return rc;
		if ((rc = expected_locks(txn, w, n)) || (rc = decode_prev(txn, w, n)))
			return rc;
		return commit_atomic(txn, w, n, ts_above(txn, w, n));
	}
	if (n > 1 && (rc = commit_multi_blind(txn, w, n)) <= 0)
		return rc;
	if ((rc = expected_locks(txn, w, n)) || (rc = decode_prev(txn, w, n)))
		return rc;
	ts = ts_floor(txn, w, n);
	return commit_multi(txn, w, n, ts);
}
