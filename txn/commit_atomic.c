/*
 * commit_atomic.c - COMMIT_ATOMIC: one-phase commit, on a store that writes
 * many rows atomically (STORE_CAP_ATOMIC: LMDB), or these rows
 * (store_atomic_ok: RADOS, all in one tablet), unless the handle asked for
 * two phases.
 */
#include "commit_int.h"
#include "storage/breaks.h"

#include <string.h>

/* The range check of a scanned range for store_write_atomic: the rows the
 * transaction saw there with a lock, with that lock (validate_range's rule:
 * every row with a lock in the range was seen, unchanged, and none seen has
 * vanished).  0 with *skip when there is nothing to check.
 * Keeps I11 (DESIGN §10). */
static int range_check_of(mrtx_txn *txn, const scan_range *sr, store_rcheck *c, int *skip)
{
	mrtx_bytes *rows = NULL, *locks = NULL;
	size_t n = 0, cap = 0;
	trow key, *r;

	int rc;

	memset(c, 0, sizeof(*c));
	if ((rc = range_covered(txn, sr, &c->range, skip)) || *skip)
		return rc;
	c->table = sr->t;
	key.t = sr->t;
	key.row = c->range.lo;
	for (int pass = 0; pass < 2; pass++) {
		if (pass && (!(rows = arena_alloc(&txn->arena, (cap + 1) * sizeof(*rows))) ||
		             !(locks = arena_alloc(&txn->arena, (cap + 1) * sizeof(*locks)))))
			return MRTX_ENOMEM;
		n = 0;
		for (r = txn_rows_nfind(txn, &key); r && r->t == sr->t;
		     r = RB_NEXT(trow_tree, &txn->rows, r)) {
			if (store_range_past(&c->range, r->row))
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
 * (STORE_CAP_ATOMIC: LMDB) or these rows (RADOS: one tablet).  TiKV
 * commits in one phase when all of a transaction's keys live in one
 * region; here all of them live in one environment (LMDB) or one object
 * (RADOS), so the whole commit is one conditional write, and that write
 * is the commit point:
 *
 *     -- commit.after_prewrite --  -- commit.after_validate --
 *     one store_write_atomic: every written row's condition (the lock its
 *       prewrite would expect, or its blind guard), every read row's lock and
 *       every scanned range unchanged  ->  every row STABLE(txn, ts) + data
 *     -- commit.after_point --  -- commit.after_secondaries --
 *
 * No lock is ever PREWRITTEN, so there is nothing to roll back or forward:
 * a writer that dies before the write leaves nothing, one that dies after
 * it has committed everything.  The failpoints keep their meaning and fire
 * on every such commit.  Returns as every strategy does (commit_int.h; 1:
 * only blind guards failed, nothing was written).
 * Keeps I12 (DESIGN §10).
 */
int commit_atomic(mrtx_txn *txn, commit_plan *p, uint64_t ts)
{
	wrow *w = p->w;
	size_t n = p->n;
	store *st = txn->db->st;
	size_t nread = 0, nops, nchk = 0;
	store_rcheck *chk = NULL;
	store_op *ops;
	mrtx_bytes stable;
	int rc, applied, hard = 0, blind = 0, gen = 0, nochk = 0;
	const char *why = NULL;
	const store_table *wt = NULL; /* the first refused write's table */
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
		op_init_row(&ops[i], &w[i]);
		if ((rc = op_guard_blind(txn, &ops[i], &w[i])))
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
		if (!r->read || r->mutated || mrtx__broken(MRTX_BREAK_READS))
			continue;
		if (!r->lock_known)
			return mrtx__seterr(MRTX_CONFLICT, "table '%s': a row this transaction "
			                    "read was being written by a concurrent transaction, so "
			                    "the read cannot be validated; run it again",
			                    r->t->name);
		op_init(&ops[nops], r, r->has_lock, r->lock);
		ops[nops++].check_only = 1;
	}
	for (size_t i = 0; i < txn->nranges && !mrtx__broken(MRTX_BREAK_RANGES); i++) {
		if ((rc = range_check_of(txn, txn->ranges[i], &chk[nchk], &nochk)))
			return rc;
		nchk += !nochk;
	}
	if ((rc = FAILPOINT(FP_COMMIT_AFTER_PREWRITE)) ||
	    (rc = FAILPOINT(FP_COMMIT_AFTER_VALIDATE)))
		return rc; /* nothing written */
	rc = lockio_write_atomic(st, ops, nops, chk, nchk, &applied);
	if (rc == STORE_NOT_ATOMIC) {
		/* a split moved the rows into several tablets (RADOS): nothing
		 * written; two phases then (a single blind row re-reads first,
		 * plan_blind's rule) */
		mrtx__clearerr();
		p->how = COMMIT_TWO_PHASE;
		if (p->n == 1 && p->nblind)
			return 1;
		return commit_two_phase(txn, p, ts);
	}
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
			if (i < n && !why)
				wt = w[i].r->t;
			why = why ? why : i < n ? "a row to write changed or is locked by a concurrent "
			                          "transaction" :
			                          "a row this transaction read was changed, or is "
			                          "being written, by a concurrent transaction";
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
	return write_refused(txn, wt, "commit", why ? why : "a condition failed");
}
