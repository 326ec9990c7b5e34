/*
 * commit_two_phase.c - COMMIT_TWO_PHASE: the two-phase protocol (DESIGN §5.2).
 *
 *  rows in (table, row) order; the primary is the first:
 *     1 prewrite          all rows: expect(seen) -> PREWRITTEN(+redo)   one call
 *                         (blind rows: their guard, no read before;
 *                         commit_plan.c plan_blind)
 *        -- commit.after_prewrite --        failure: rollback, CONFLICT; only
 *                                           blind conditions: rollback, read,
 *                                           start again
 *     2 txn_validate      read-only rows unchanged, scanned ranges unchanged
 *                         (validate.c)
 *        -- commit.after_validate --        failure: rollback, CONFLICT
 *     3 commit point      primary PREWRITTEN -> COMMITTED + primary's data
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
#include "commit_int.h"
#include "storage/breaks.h"
#include "heartbeat.h"
#include "tail.h"

#include <string.h>

#include <bsd/string.h>

/* The commit point without its guard (MRTX_BREAK_POINT): expect whatever
 * the primary holds now, so the write lands even where a resolver rolled
 * the prewrite back. */
static int unguarded(mrtx_txn *txn, store_op *op)
{
	store_row cur;
	int rc;

	if ((rc = store_read_locks(txn->db->st, &(store_rowref){ op->table, op->row }, 1,
	                           &txn->arena, &cur)))
		return rc;
	op->cond.absent = !cur.has_lock;
	op->cond.lock = cur.has_lock ? cur.lock : MRTX_BYTES(NULL, 0);
	return 0;
}

static void lock_ref_of(const trow *r, lock_ref *out)
{
	out->table = MRTX_BYTES(r->t->name, strlen(r->t->name));
	out->row = r->row;
}

/* Fill the PREWRITTEN record of w[i] and encode it. */
/* A family the puts named was dropped since (mrtx_drop_family): each
 * prewrite's check of its table learnt of a drop that committed before
 * it, and a drop after it settles these locks itself. */
static int writes_dropped(const wrow *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < w[i].nredo; j++)
			if (w[i].redo[j].kind != STORE_MUT_DEL_ROW &&
			    store_family_dropped(w[i].r->t, w[i].redo[j].fid))
				return mrtx__seterr(MRTX_CONFLICT, "table '%s': a family this "
				                    "transaction writes was dropped meanwhile",
				                    w[i].r->t->name);
	return 0;
}

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

/* Undo the prewrites that were applied (pw_ops' results say which);
 * primary: the primary's current bytes (the heartbeat may have moved its
 * expiry since the prewrite).  Best effort: what is left is a PREWRITTEN
 * lock recovery rolls back.  1 when every undo surely applied (so the
 * transaction holds no lock), else 0.
 * Keeps I6 (DESIGN §10). */
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

/*
 * Steps 1-5, each row prewritten with the lock it must expect (w[i].prev,
 * or "none" when has_prev is 0), or, for a blind row, with its blind guard.
 * Returns as every strategy does (commit_int.h; 1: only blind guards
 * failed, and every prewrite was rolled back).
 * Keeps I4, I5, I6 (DESIGN §10).
 */
int commit_two_phase(mrtx_txn *txn, commit_plan *p, uint64_t ts)
{
	wrow *w = p->w;
	size_t n = p->n;
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
		op_init_row(&ops[i], &w[i]);
		if ((rc = op_guard_blind(txn, &ops[i], &w[i])))
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
	else if (rc == 0 && conflict) {
		const store_table *ct = NULL;

		for (size_t i = 0; i < n && !ct; i++)
			if (ops[i].result == MRTX_CONFLICT && (hard ? !w[i].blind : 1))
				ct = w[i].r->t;
		rc = write_refused(txn, ct, "prewrite", "a row to write changed or is locked by a "
		                   "concurrent transaction");
	}
	if (rc == 0)
		rc = FAILPOINT(FP_COMMIT_AFTER_PREWRITE);
	if (rc == 0)
		rc = writes_dropped(w, n);
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
	if (mrtx__broken(MRTX_BREAK_POINT) && (rc = unguarded(txn, &ops[0])))
		return rc;
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
