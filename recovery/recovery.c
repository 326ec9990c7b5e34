/*
 * recovery.c - settle a transaction found holding locks (DESIGN §6).
 *
 * A lock L of txn t was met on row R.  Its fate is read off the primary P:
 *
 *   P holds t as ...   decision                         performed by
 *   COMMITTED          roll forward: secondaries still  settle_secondaries(fwd)
 *                      PREWRITTEN(t) -> STABLE with      then release_primary
 *                      redo applied; then P -> STABLE
 *   ABORTED            roll back: secondaries -> their   settle_secondaries(back)
 *                      previous STABLE lock (redo        then release_primary
 *                      dropped); then P -> previous
 *   PREWRITTEN         expired / owner dead / --force:   abort_primary, then as
 *                      CAS P -> ABORTED, then roll back  ABORTED
 *                      otherwise: live -> wait, ELOCKED
 *   STABLE             P finished, so R must be settled  (re-read; else ECORRUPT)
 *   P does not hold t  expired / owner dead / --force:   resolve_orphan
 *                      fence P (STABLE -> STABLE' with
 *                      fresh bytes, so a late prewrite of
 *                      P by t fails; not when P is STABLE
 *                      at or above t's commit_ts already),
 *                      roll R back;
 *                      otherwise (P's prewrite may be in
 *                      flight): live -> wait, ELOCKED
 *
 * P held by another transaction's lock is settled first, following the
 * primaries (CHAIN_MAX links by recursion, then handed back to the loop of
 * recover_resolve_counted, R_DEEPER); orphans whose primaries lead back
 * round to R are a cycle, broken at R (find_cycle, break_cycle).
 *
 * Invariant kept: P leaves COMMITTED/ABORTED only after every secondary is
 * settled (settle_secondaries verifies none still holds t).  Every write is
 * conditional on the exact bytes read, so any number of resolvers and the
 * original client may race: the loser's condition fails and it re-reads.
 */
#include "recovery.h"
#include "keyset.h"
#include "storage/breaks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Internal returns, never an MRTX code (negative), an LMDB code (negative)
 * or an errno value (small and positive), so none is taken for another. */
#define R_RETRY 0x10001 /* state moved under us; re-read and decide again */

/* A lock to settle: the one asked about, or a link of a chain handed
 * back to recover_resolve_counted's loop (R_DEEPER). */
typedef struct rtarget {
	const store_table *t;
	mrtx_bytes row, lock;
} rtarget;

typedef struct rctx {
	store *st;
	const recover_opts *o;
	mrtx_arena *a;
	int depth;
	recover_fence_fn fenced; /* told of every fence written (may be NULL) */
	void *fenced_arg;
	recover_settled_fn settled; /* told of every transaction settled on the
	                             * way to the one asked about (may be NULL) */
	void *settled_arg;
	rtarget deep;            /* R_DEEPER: the link to settle first */
	const rtarget *decided;  /* a dry run's links decided so far */
	size_t ndecided;
	keyset *acyclic;         /* locks on no cycle (find_cycle; may be NULL) */
} rctx;

static int read_one_lock(store *st, const store_table *t, mrtx_bytes row, mrtx_arena *a,
                         store_row *out)
{
	store_rowref ref = { t, row };

	return store_read_locks(st, &ref, 1, a, out);
}

static int cas1(store *st, store_op *op)
{
	int rc = lockio_write_rows(st, op, 1);

	if (rc)
		return rc;
	return op->result == MRTX_CONFLICT ? R_RETRY : 0;
}

/* The secondaries of pr whose tables exist, into refs[0..*n). */
static int secondary_refs(rctx *c, const lock_rec *pr, store_rowref *refs, size_t *n)
{
	size_t k = 0;
	int rc;

	for (size_t i = 0; i < pr->nsecondaries; i++) {
		/* A secondary in a dropped table is settled: the drop settled every
		 * transaction holding a lock there before it removed the table
		 * (DESIGN §3.4), so what is left is a prewrite refused by the frozen
		 * table, which wrote nothing. */
		if ((rc = lockio_ref_table(c->st, &pr->secondaries[i], &refs[k].table)) ==
		    MRTX_ENOTABLE) {
			mrtx__clearerr();
			continue;
		}
		if (rc)
			return rc;
		refs[k++].row = pr->secondaries[i].row;
	}
	*n = k;
	return 0;
}

/*
 * After MRTX_ELOCKED from refs[0..*n): leave out the refs whose table a
 * drop or truncate has closed (RADOS, a call cut short): it settled every
 * lock there before the close, and nothing lands there after, so such a
 * secondary is settled.  *left: whether any went; 0 or an error.
 */
static int skip_closed(rctx *c, store_rowref *refs, size_t *n, int *left)
{
	size_t k = 0;
	int rc, closed;

	*left = 0;
	for (size_t i = 0; i < *n; i++) {
		if ((rc = store_table_closed(c->st, refs[i].table, &closed)))
			return rc;
		if (closed)
			*left = 1;
		else
			refs[k++] = refs[i];
	}
	*n = k;
	return 0;
}

/*
 * Roll every secondary of primary record pr forward (fwd) or back.  Returns
 * 0 only when no secondary still holds pr's txn PREWRITTEN.
 * Keeps I4, I5 (DESIGN §10).
 */
static int settle_secondaries(rctx *c, const lock_rec *pr, int fwd)
{
	size_t n = pr->nsecondaries;
	store_rowref *refs;
	store_row *cur;
	store_op *ops;
	size_t nops = 0;
	int rc;

	if (n == 0)
		return 0;
	refs = arena_alloc(c->a, n * sizeof(*refs));
	cur = arena_alloc(c->a, n * sizeof(*cur));
	ops = arena_alloc(c->a, n * sizeof(*ops));
	if (!refs || !cur || !ops)
		return MRTX_ENOMEM;
	if ((rc = secondary_refs(c, pr, refs, &n)))
		return rc;
	if (n == 0)
		return 0;
	for (int round = 0; round < 8; round++) {
		int left;

		nops = 0;
		/* (a table this handle knew, dropped since: the read or the write
		 * says so, once, having applied nothing, and the names are looked
		 * up again) */
		if ((rc = store_read_locks(c->st, refs, n, c->a, cur)) == MRTX_ENOTABLE)
			goto gone;
		if (rc == MRTX_ELOCKED) {
			char msg[512];

			snprintf(msg, sizeof(msg), "%s", mrtx_errmsg());
			if ((rc = skip_closed(c, refs, &n, &left)))
				return rc;
			if (!left)
				return mrtx__seterr(MRTX_ELOCKED, "%s", msg);
			if (n == 0)
				return 0;
			continue;
		}
		if (rc)
			return rc;
		for (size_t i = 0; i < n; i++) {
			store_op *op = &ops[nops];
			lock_rec sr;

			if (!cur[i].has_lock)
				continue;
			if ((rc = lockio_decode(c->st, refs[i].table, refs[i].row, cur[i].lock, c->a,
			                        &sr)))
				return rc;
			if (sr.state != LOCK_PREWRITTEN || !lock_of_txn(&sr, pr->txn))
				continue;
			memset(op, 0, sizeof(*op));
			op->table = refs[i].table;
			op->row = refs[i].row;
			op->cond.lock = cur[i].lock;
			if (fwd) {
				/* (the primary's commit_ts: the store stamps the commit
				 * point, after the secondaries' prewrite) */
				rc = lockio_stable(c->st, sr.txn, pr->commit_ts, c->a, &op->new_lock);
				op->muts = sr.redo;
				op->nmuts = sr.nredo;
				op->ts = pr->commit_ts;
			} else {
				rc = lockio_restore_prev(c->st, &sr, c->a, op);
			}
			if (rc)
				return rc;
			nops++;
		}
		if (nops == 0)
			return 0;
		if ((rc = lockio_write_rows(c->st, ops, nops)) == MRTX_ENOTABLE)
			goto gone;
		if (rc)
			return rc;
		continue;
gone:
		mrtx__clearerr();
		if ((rc = secondary_refs(c, pr, refs, &n)) || n == 0)
			return rc;
	}
	return mrtx__seterr(MRTX_ELOCKED, "secondaries keep changing while settling a txn");
}

/* P COMMITTED/ABORTED(t) -> STABLE, after its secondaries are settled.
 * Keeps I7, I8 (DESIGN §10). */
static int finish(rctx *c, const store_table *pt, mrtx_bytes prow, mrtx_bytes plock,
                  const lock_rec *pr, int fwd)
{
	store_op op;
	int rc;

	if ((rc = settle_secondaries(c, pr, fwd)))
		return rc;
	if (fwd && (rc = FAILPOINT(FP_RECOVER_AFTER_FORWARD)))
		return rc;
	memset(&op, 0, sizeof(op));
	op.table = pt;
	op.row = prow;
	op.cond.lock = plock;
	if (fwd)
		rc = lockio_stable(c->st, pr->txn, pr->commit_ts, c->a, &op.new_lock);
	else
		rc = lockio_restore_prev(c->st, pr, c->a, &op);
	if (rc)
		return rc;
	/* (the primary's table dropped since: the primary went with it, and
	 * every secondary is settled) */
	if ((rc = cas1(c->st, &op)) == MRTX_ENOTABLE) {
		mrtx__clearerr();
		rc = 0;
	}
	return rc;
}

/* P PREWRITTEN(t) -> ABORTED(t).  Keeps I4 (DESIGN §10). */
/*
 * Before settling a lock whose owner is dead or whose lock expired: fence
 * the owner's clients (store_fence: RADOS blocklists them), so that none
 * of its requests still on their way lands after this resolver's writes
 * -- a late prewrite would otherwise leave a lock behind the settling.
 * Not for an owner alive and within its expiry (--force): its own
 * requests fail their guards.  Best effort: the protocol is safe without
 * it, so a fence that fails is only skipped.
 */
static void fence_owner(rctx *c, const lock_owner *o, int dead, uint64_t expiry_ms)
{
	uint8_t b[LOCK_OWNER_BYTES], self[LOCK_OWNER_BYTES];
	size_t fenced, denied;

	_Static_assert(LOCK_OWNER_BYTES == STORE_OWNER_SIZE, "one owner encoding");
	if (c->o->dry_run || (!dead && expiry_ms > mrtx__now_ms()))
		return;
	lock_owner_put(o, b);
	lock_owner_put(lock_self_owner(), self);
	if (memcmp(b, self, sizeof(b)) == 0)
		return;
	if (store_fence(c->st, b, !dead, &fenced, &denied))
		mrtx__clearerr();
}

static int abort_primary(rctx *c, const store_table *pt, mrtx_bytes prow, mrtx_bytes plock,
                         lock_rec *pr, mrtx_bytes *newlock)
{
	store_op op;
	int rc;
	pr->state = LOCK_ABORTED;
	pr->nredo = 0; /* data was never touched: nothing to keep */
	memset(&op, 0, sizeof(op));
	op.table = pt;
	op.row = prow;
	op.cond.lock = plock;
	if ((rc = lock_encode(pr, c->a, &op.new_lock)))
		return rc;
	if ((rc = cas1(c->st, &op)))
		return rc;
	*newlock = op.new_lock;
	return FAILPOINT(FP_RECOVER_AFTER_ABORT);
}

static int resolve_at(rctx *c, const store_table *t, mrtx_bytes row, mrtx_bytes lock,
                      recover_decision *dec);

static int resolve_gone(rctx *c, const store_table *t, mrtx_bytes row, mrtx_bytes lock,
                        const lock_rec *l, recover_decision *dec);

/* Is lock record r a secondary whose primary is (t,row)? */
static int primary_is(const lock_rec *r, const store_table *t, mrtx_bytes row)
{
	return (r->flags & LOCK_F_SECONDARY) && r->primary.table.size == strlen(t->name) &&
	       memcmp(r->primary.table.data, t->name, r->primary.table.size) == 0 &&
	       r->primary.row.size == row.size &&
	       (row.size == 0 || memcmp(r->primary.row.data, row.data, row.size) == 0);
}

/* May a resolver settle lock record r without waiting for its owner? */
static int takeable(const rctx *c, const lock_rec *r)
{
	return c->o->force || lock_owner_dead(&r->owner) || r->expiry_ms <= mrtx__now_ms();
}

/* Settling an orphan settles the holder of its primary first, by
 * recursion, CHAIN_MAX links deep; a longer chain is handed to the
 * caller's loop (R_DEEPER, recover_resolve_counted), which settles it from
 * that link on and comes back: any length, bounded stack. */
#define CHAIN_MAX 8
#define R_DEEPER 0x10002 /* internal: settle c->deep first, then decide again */
/* Links find_cycle follows at most: a walk ends at the chain's end, back
 * at its start (a cycle), or on a loop that does not pass its start
 * (Brent's test), so this only bounds a walk over a graph that other
 * resolvers keep changing under it. */
#define WALK_MAX (1u << 16)

static int same_row(const store_table *a, mrtx_bytes ra, const store_table *b, mrtx_bytes rb)
{
	return a == b && ra.size == rb.size &&
	       (ra.size == 0 || memcmp(ra.data, rb.data, ra.size) == 0);
}

/* The key of lock `lock` of (t,row) in rctx.acyclic: the table's object
 * and the row's length (so that row and lock bytes cannot shift), into h. */
static mrtx_bytes acyclic_head(uint8_t h[sizeof(void *) + 4], const store_table *t,
                               mrtx_bytes row)
{
	uint32_t n = (uint32_t)row.size;

	memcpy(h, &t, sizeof(t));
	memcpy(h + sizeof(t), &n, 4);
	return (mrtx_bytes){ h, sizeof(t) + 4 };
}

/* Is lock `lock` of (t,row) known to lead to no cycle? */
static int acyclic_has(const rctx *c, const store_table *t, mrtx_bytes row, mrtx_bytes lock)
{
	uint8_t h[sizeof(void *) + 4];

	return c->acyclic && keyset_get(c->acyclic, acyclic_head(h, t, row), row, lock, NULL);
}

/* The links a walk of find_cycle passed, to be noted in rctx.acyclic if
 * it reaches the chain's end: (t, u32 row size, u32 lock size, row, lock). */
static int walk_log(mrtx_buf *w, const store_table *t, mrtx_bytes row, mrtx_bytes lock)
{
	uint32_t n[2] = { (uint32_t)row.size, (uint32_t)lock.size };
	int rc;

	if ((rc = buf_put(w, &t, sizeof(t))) || (rc = buf_put(w, n, sizeof(n))) ||
	    (rc = buf_put(w, row.data, row.size)))
		return rc;
	return buf_put(w, lock.data, lock.size);
}

/* Every link of walk w leads to the chain's end, not round to itself:
 * none is on a cycle while its lock is the one read (a new cycle needs a
 * new lock somewhere on it, whose row is then not known).  Best effort:
 * without memory, the walks are made again. */
static void walk_acyclic(rctx *c, const mrtx_buf *w)
{
	const uint8_t *p = w->data, *e = p + w->size;

	while (p < e) {
		const store_table *t;
		uint32_t n[2];
		mrtx_bytes row, lock;
		uint8_t h[sizeof(void *) + 4];

		memcpy(&t, p, sizeof(t));
		memcpy(n, p + sizeof(t), sizeof(n));
		p += sizeof(t) + sizeof(n);
		row = (mrtx_bytes){ p, n[0] };
		lock = (mrtx_bytes){ p + n[0], n[1] };
		p += n[0] + n[1];
		if (keyset_add(c->acyclic, acyclic_head(h, t, row), row, lock, 0) < 0)
			return;
	}
}

/*
 * Orphans in a cycle: (t,row) holds transaction T1's secondary whose
 * primary R2 holds T2's secondary whose primary R3 holds T3's ... whose
 * primary is (t,row) again, k rows in all.  "Settle the primary's holder
 * first" goes round for ever, and no lock may go before the row it blocks
 * is fenced against its transaction -- each fence would replace the next
 * one's lock.  Follows the primaries from pl (R2's lock) while each row
 * holds another transaction's PREWRITTEN secondary that may be taken
 * (takeable): *found when they lead back to (t,row), with *last_ts the
 * commit_ts of the record whose primary (t,row) is (Tk's).  A walk that
 * enters a loop not through (t,row) -- a chain into another cycle, broken
 * when the settling reaches it -- stops there (Brent's test: the row
 * reached is compared with one remembered at steps 1, 2, 4, 8, ...).  A
 * walk that reaches the chain's end notes (t,row) and every link it passed
 * in rctx.acyclic: a walk from any of them would take the same way, so
 * settling a chain link by link walks it once, not once a link.  pt, prow
 * and plock are pl's row and bytes; lock is (t,row)'s.  0 or an error.
 */
static int find_cycle(rctx *c, const store_table *pt, mrtx_bytes prow, mrtx_bytes plock,
                      const lock_rec *pl, const store_table *t, mrtx_bytes row,
                      mrtx_bytes lock, int *found, uint64_t *last_ts)
{
	mrtx_arena sa[2], ma; /* the links read, alternately; the remembered row */
	const store_table *mt = NULL;
	mrtx_bytes mrow = { NULL, 0 };
	lock_rec cur = *pl;
	size_t power = 1, lam = 0;
	mrtx_buf walk = MRTX_BUF_INIT; /* the links passed (c->acyclic) */
	int rc = 0, end = 0;

	*found = 0;
	arena_init(&sa[0]);
	arena_init(&sa[1]);
	arena_init(&ma);
	if (c->acyclic && walk_log(&walk, t, row, lock))
		buf_free(&walk); /* (no memory: noted nowhere) */
	for (unsigned k = 2; k < WALK_MAX; k++) {
		mrtx_arena *a = &sa[k & 1];
		const store_table *nt;
		mrtx_bytes nrow;
		store_row nr;

		if (cur.state != LOCK_PREWRITTEN || !(cur.flags & LOCK_F_SECONDARY) ||
		    !takeable(c, &cur)) {
			end = 1;
			break;
		}
		if (primary_is(&cur, t, row)) {
			*last_ts = cur.commit_ts;
			*found = 1;
			break;
		}
		if (walk.data && walk_log(&walk, pt, prow, plock))
			buf_free(&walk);
		if ((rc = lockio_ref_table(c->st, &cur.primary, &nt)))
			break;
		nrow = cur.primary.row;
		if (mt && same_row(mt, mrow, nt, nrow))
			break; /* a loop that does not pass (t,row) */
		if (++lam == power) {
			arena_free(&ma);
			arena_init(&ma);
			if (!(mrow.data = arena_dup(&ma, nrow.data, nrow.size ? nrow.size : 1))) {
				rc = MRTX_ENOMEM;
				break;
			}
			mrow.size = nrow.size;
			mt = nt;
			power *= 2;
			lam = 0;
		}
		/* (cur's bytes are in the other arena: this one held the link
		 * before it, no longer needed) */
		arena_free(a);
		arena_init(a);
		if ((rc = read_one_lock(c->st, nt, nrow, a, &nr)))
			break;
		if (!nr.has_lock) {
			end = 1;
			break;
		}
		if ((rc = lockio_decode(c->st, nt, nrow, nr.lock, a, &cur)))
			break;
		pt = nt;
		prow = nrow;
		plock = nr.lock;
	}
	if (end && walk.data)
		walk_acyclic(c, &walk);
	buf_free(&walk);
	arena_free(&sa[0]);
	arena_free(&sa[1]);
	arena_free(&ma);
	return rc;
}

/* op's new lock as written: the store's stamp patched into its commit_ts
 * (a stamped one-row write). */
static void note_stamped(store_op *op)
{
	uint8_t *d = (uint8_t *)op->new_lock.data;

	for (unsigned i = 0; op->stamped && i < 8; i++)
		d[LOCK_COMMIT_TS_OFF + i] = (uint8_t)(op->stamped >> (8 * i));
}

/* Lock record `before` at (t,row) was rewritten as `after`, both pending:
 * tell the reader that what rolling it back restores moved too (a reader
 * records a pending lock as that, txn/snapread.c). */
static int note_restored(rctx *c, const store_table *t, mrtx_bytes row, const lock_rec *before,
                         const lock_rec *after)
{
	store_op was, now;
	int rc;

	memset(&was, 0, sizeof(was));
	memset(&now, 0, sizeof(now));
	if ((rc = lockio_restore_prev(c->st, before, c->a, &was)) ||
	    (rc = lockio_restore_prev(c->st, after, c->a, &now)))
		return rc;
	if (!now.delete_lock)
		c->fenced(c->fenced_arg, t, row, !was.delete_lock, was.new_lock, now.new_lock);
	return 0;
}

/*
 * Break a cycle of orphans (find_cycle) at (t,row), whose lock `lock` (l)
 * is T1's and whose primary P = R2 holds lock X (pl) of T2, in two writes.
 * First the fence against T1 goes into X itself: X's "previous lock"
 * becomes a fresh STABLE one at T1's commit floor, so that whoever rolls
 * T2 back at P leaves that fence, and T2 committing leaves a commit above
 * T1's first write (T2's primary held another transaction's lock when the
 * cycle was read, after T1's lock: T2's commit point is stamped later):
 * either defeats T1's prewrite of P.  Then T1's lock at (t,row) is
 * replaced by a fence against Tk (`last`, the transaction whose primary
 * (t,row) is).  That settles T1 and leaves Tk an ordinary orphan
 * (its primary STABLE), rolled back into the fence; then T(k-1), whose
 * primary Rk no longer holds anything of another transaction, is an
 * ordinary orphan, and so on back to T2, whose rollback leaves the fence
 * against T1 at P.  For k = 2, Tk is T2.  Every lock on the cycle may be
 * taken (past its expiry, owner dead, or --force), as for any orphan; a
 * cycle with a live lock waits as for a live owner.  A reader settling on
 * its way is told of both writes (c->fenced), and of what rolling the
 * rewritten locks back now restores, which is what it recorded for them
 * (txn/snapread.c).
 * Keeps I9, I10, I13 (DESIGN §10).
 */
static int break_cycle(rctx *c, const store_table *pt, mrtx_bytes prow, const store_row *pcur,
                       const lock_rec *pl, const store_table *t, mrtx_bytes row,
                       mrtx_bytes lock, const lock_rec *l, uint64_t last_ts,
                       recover_decision *dec)
{
	uint8_t fence_id[LOCK_TXNID_SIZE];
	lock_rec x = *pl;
	store_row again;
	store_op op;
	int rc;

	*dec = RECOVER_ORPHAN;
	if (c->o->dry_run)
		return 0;
	/* (the owners of the two locks written; the others' are fenced as
	 * their own locks are settled, after this) */
	fence_owner(c, &l->owner, lock_owner_dead(&l->owner), l->expiry_ms);
	fence_owner(c, &pl->owner, lock_owner_dead(&pl->owner), pl->expiry_ms);
	if ((rc = read_one_lock(c->st, t, row, c->a, &again)))
		return rc;
	if (!again.has_lock || again.lock.size != lock.size ||
	    memcmp(again.lock.data, lock.data, lock.size) != 0)
		return R_RETRY;
	/* 1: X, its rollback a fence against T1 */
	if ((rc = lock_new_txnid(fence_id)))
		return rc;
	memcpy(x.prev_txn, fence_id, LOCK_TXNID_SIZE);
	x.prev_commit_ts = MRTX_MAX(l->commit_ts, pl->prev_commit_ts);
	x.flags &= (uint8_t)~LOCK_F_PREV_ABSENT;
	memset(&op, 0, sizeof(op));
	op.table = pt;
	op.row = prow;
	op.cond.lock = pcur->lock;
	if ((rc = lock_encode(&x, c->a, &op.new_lock)))
		return rc;
	/* (a table dropped under either write: decide again from the top) */
	if ((rc = cas1(c->st, &op)) == MRTX_ENOTABLE)
		goto again;
	if (rc)
		return rc;
	if (c->fenced) {
		c->fenced(c->fenced_arg, pt, prow, 1, pcur->lock, op.new_lock);
		/* (a reader records a pending lock as what its rollback
		 * restores: that moved from X's previous lock to the fence) */
		if ((rc = note_restored(c, pt, prow, pl, &x)))
			return rc;
	}
	/* 2: T1's lock, a fence against Tk (stamped like any fence) */
	memset(&op, 0, sizeof(op));
	op.table = t;
	op.row = row;
	op.cond.lock = lock;
	op.stamp = STORE_STAMP_ONE_ROW;
	op.stamp_off = LOCK_COMMIT_TS_OFF;
	op.stamp_floor = MRTX_MAX(last_ts, l->commit_ts);
	if ((rc = lock_new_txnid(fence_id)) ||
	    (rc = lockio_stable(c->st, fence_id, op.stamp_floor, c->a, &op.new_lock)))
		return rc;
	if ((rc = cas1(c->st, &op)) != MRTX_ENOTABLE) {
		/* T1's lock, and what its rollback would have restored, both
		 * became the fence: a reader may have recorded either */
		if (rc == 0 && c->fenced) {
			store_op was;

			note_stamped(&op);
			c->fenced(c->fenced_arg, t, row, 1, lock, op.new_lock);
			memset(&was, 0, sizeof(was));
			if ((rc = lockio_restore_prev(c->st, l, c->a, &was)))
				return rc;
			c->fenced(c->fenced_arg, t, row, !was.delete_lock, was.new_lock,
			          op.new_lock);
		}
		return rc;
	}
again:
	mrtx__clearerr();
	return R_RETRY;
}

/* Has this dry run decided the lock `lock` of (t,row) already (a link the
 * loop settled, in a dry run only decided, R_DEEPER)? */
static int decided_before(const rctx *c, const store_table *t, mrtx_bytes row, mrtx_bytes lock)
{
	for (size_t i = 0; i < c->ndecided; i++)
		if (same_row(c->decided[i].t, c->decided[i].row, t, row) &&
		    c->decided[i].lock.size == lock.size &&
		    memcmp(c->decided[i].lock.data, lock.data, lock.size) == 0)
			return 1;
	return 0;
}

/* Secondary (t,row) holds txn but its primary does not: fence P, roll back.
 * Keeps I9, I10, I13 (DESIGN §10). */
static int resolve_orphan(rctx *c, const store_table *pt, mrtx_bytes prow,
                          const store_row *pcur, const lock_rec *pl,
                          const store_table *t, mrtx_bytes row, mrtx_bytes lock,
                          const lock_rec *l, recover_decision *dec)
{
	uint8_t fence_id[LOCK_TXNID_SIZE];
	store_op op;
	int rc;

	if (pcur->has_lock && pl->state == LOCK_PREWRITTEN && takeable(c, l) &&
	    !acyclic_has(c, t, row, lock)) {
		uint64_t last_ts = 0;
		int found;

		/* (a link that cannot be read: no cycle to break here; the
		 * settling below meets that row in turn and says why) */
		if ((rc = find_cycle(c, pt, prow, pcur->lock, pl, t, row, lock, &found, &last_ts)))
			mrtx__clearerr();
		else if (found)
			return break_cycle(c, pt, prow, pcur, pl, t, row, lock, l, last_ts, dec);
	}
	if (pcur->has_lock && pl->state != LOCK_STABLE) {
		recover_decision pdec = RECOVER_NONE;

		/* P is held by another txn: settle that first, then look again.
		 * Held by a live one: this lock waits as for a live owner
		 * (RECOVER_LIVE: recover_resolve backs off). */
		if (c->depth < CHAIN_MAX) {
			c->depth++;
			rc = resolve_at(c, pt, prow, pcur->lock, &pdec);
			c->depth--;
			if (rc == R_DEEPER)
				return rc;
			if (rc == 0 && c->settled && pdec != RECOVER_NONE && pdec != RECOVER_LIVE)
				c->settled(c->settled_arg, pl->txn, pdec);
		} else if (c->o->dry_run && decided_before(c, pt, prow, pcur->lock)) {
			rc = 0; /* (as below: P's holder decided, by the loop) */
		} else {
			/* deeper than the recursion goes: the caller's loop
			 * settles P's holder first, then asks again */
			c->deep = (rtarget){ pt, prow, pcur->lock };
			return R_DEEPER;
		}
		/* (a table dropped meanwhile -- P's, or any other the settling
		 * met: decide again from the top, where P's own lookup and read
		 * tell whether P's table is gone) */
		if (rc == MRTX_ENOTABLE) {
			mrtx__clearerr();
			return R_RETRY;
		}
		if (rc == MRTX_ELOCKED)
			*dec = RECOVER_LIVE;
		if (rc == 0 && c->o->dry_run) {
			/* Nothing was written, so looking again would meet P held
			 * as before, for ever: decide this lock as if P's holder
			 * were settled, which leaves this one an orphan. */
			if (!takeable(c, l)) {
				*dec = RECOVER_LIVE;
				return MRTX_ELOCKED;
			}
			*dec = RECOVER_ORPHAN;
			return 0;
		}
		return rc ? rc : R_RETRY;
	}
	/* P not (yet) holding t is also what a reader sees while t's writer is
	 * alive and its prewrite of P is in flight: the rows of one prewrite
	 * land one by one where the store is not one environment (RADOS), and
	 * P need not be first.  Fencing P then would abort a live writer, so
	 * an orphan is taken only as a PREWRITTEN primary is: its owner dead,
	 * its lock expired, or --force.  A live writer whose prewrite of P
	 * failed rolls this row back itself (best effort: what it leaves waits
	 * for the expiry).  The heartbeat refreshes only a primary, so a
	 * prewrite of P held up for longer than the lock's TTL still loses P
	 * to a reader's fence: that writer's commit fails, nothing is torn. */
	if (!takeable(c, l)) {
		*dec = RECOVER_LIVE;
		return MRTX_ELOCKED;
	}
	*dec = RECOVER_ORPHAN;
	if (c->o->dry_run)
		return 0;
	fence_owner(c, &l->owner, lock_owner_dead(&l->owner), l->expiry_ms);
	/* Our bytes of (t,row) may be stale: the whole txn may have been settled
	 * since.  Fencing P then would only cost its readers a conflict, but
	 * look once more before writing anything. */
	{
		store_row again;

		if ((rc = read_one_lock(c->st, t, row, c->a, &again)))
			return rc;
		if (!again.has_lock || again.lock.size != lock.size ||
		    memcmp(again.lock.data, lock.data, lock.size) != 0)
			return R_RETRY;
	}
	memset(&op, 0, sizeof(op));
	op.table = pt;
	op.row = prow;
	if (pcur->has_lock)
		op.cond.lock = pcur->lock;
	else
		op.cond.absent = 1;
	/* The fence's commit_ts is at least t's: a late prewrite of P by t
	 * that names no exact lock but "no lock, or STABLE committed before my
	 * first write" (a blind prewrite, commit_plan.c plan_blind, none of
	 * whose first writes comes after t's commit_ts) fails on it as an exact one
	 * fails on the fresh id.  A P already STABLE at or above t's commit_ts
	 * (an earlier orphan of t fenced it, or a later commit) defeats every
	 * prewrite of t in the same way -- t's expected lock is older than its
	 * commit_ts -- so it is left as it is: fencing it again would change
	 * its bytes under every reader of P for nothing. */
	/* The fence is stamped by the store like a commit (at or above that
	 * floor), so its commit_ts is a timestamp of the store's own source
	 * and later blind writers, whose window starts at a value of that
	 * source, order themselves after it (DESIGN §9.1, I15). */
	op.stamp = STORE_STAMP_ONE_ROW; /* (a one-row write: no lock to push) */
	op.stamp_off = LOCK_COMMIT_TS_OFF;
	op.stamp_floor = MRTX_MAX(pcur->has_lock ? pl->commit_ts : 0, l->commit_ts);
	if (!(pcur->has_lock && pl->commit_ts >= l->commit_ts)) {
		if ((rc = lock_new_txnid(fence_id)) ||
		    (rc = lockio_stable(c->st, fence_id, op.stamp_floor, c->a, &op.new_lock)))
			return rc;
		if ((rc = cas1(c->st, &op)) == MRTX_ENOTABLE) { /* (P's table dropped meanwhile) */
			mrtx__clearerr();
			return resolve_gone(c, t, row, lock, l, dec);
		}
		if (rc)
			return rc;
		/* The fence moved P's lock, not its data: a reader settling
		 * this orphan may have read P, and must know the new bytes
		 * for its own (the store's stamp patched in: what it wrote) */
		if (c->fenced) {
			note_stamped(&op);
			c->fenced(c->fenced_arg, pt, prow, pcur->has_lock, pcur->lock, op.new_lock);
		}
	}
	memset(&op, 0, sizeof(op));
	op.table = t;
	op.row = row;
	op.cond.lock = lock;
	if ((rc = lockio_restore_prev(c->st, l, c->a, &op)))
		return rc;
	return cas1(c->st, &op);
}

/*
 * Secondary (t,row) whose primary's table is gone.  A drop settles every
 * transaction with a lock in the table before removing it, so t's primary
 * never held this transaction when the table went (its prewrite was
 * refused by the frozen table): an orphan.  Nothing can prewrite a row of
 * a removed table (a table created later under the name is another one,
 * and the transaction's prewrite is over), so no fence is needed: roll the
 * secondary back.
 */
static int resolve_gone(rctx *c, const store_table *t, mrtx_bytes row, mrtx_bytes lock,
                        const lock_rec *l, recover_decision *dec)
{
	store_op op;
	int rc;

	*dec = RECOVER_ORPHAN;
	if (c->o->dry_run)
		return 0;
	memset(&op, 0, sizeof(op));
	op.table = t;
	op.row = row;
	op.cond.lock = lock;
	if ((rc = lockio_restore_prev(c->st, l, c->a, &op)))
		return rc;
	return cas1(c->st, &op);
}

/* One decision for lock `lock` on (t,row); R_RETRY when something moved.
 * Keeps I7 (DESIGN §10). */
static int resolve_at(rctx *c, const store_table *t, mrtx_bytes row, mrtx_bytes lock,
                      recover_decision *decp)
{
	recover_decision dummy;
	recover_decision *dec = decp ? decp : &dummy;
	const store_table *pt = t;
	mrtx_bytes prow = row;
	store_row pcur;
	lock_rec l, pl;
	int rc, dead;

	*dec = RECOVER_NONE;
	if ((rc = lockio_decode(c->st, t, row, lock, c->a, &l)))
		return rc;
	if (l.state == LOCK_STABLE)
		return 0;
	if ((l.flags & LOCK_F_SECONDARY) && l.state != LOCK_PREWRITTEN)
		return mrtx__seterr(MRTX_ECORRUPT, "table '%s': a secondary lock in state %s "
		                    "(only primaries commit or abort); left for inspection",
		                    t->name, lock_state_name(l.state));
	if (l.flags & LOCK_F_SECONDARY) {
		/* (switched off: the secondary is rolled back unread, as if its
		 * primary were gone, whatever the transaction's fate) */
		if (mrtx__broken(MRTX_BREAK_PRIMARY))
			return resolve_gone(c, t, row, lock, &l, dec);
		if ((rc = lockio_ref_table(c->st, &l.primary, &pt)) == MRTX_ENOTABLE)
			return resolve_gone(c, t, row, lock, &l, dec);
		if (rc)
			return rc;
		prow = l.primary.row;
		/* (a table found by its name, dropped before its row was read:
		 * gone the same way) */
		if ((rc = read_one_lock(c->st, pt, prow, c->a, &pcur)) == MRTX_ENOTABLE) {
			mrtx__clearerr();
			return resolve_gone(c, t, row, lock, &l, dec);
		}
		if (rc)
			return rc;
		if (pcur.has_lock &&
		    (rc = lockio_decode(c->st, pt, prow, pcur.lock, c->a, &pl)))
			return rc;
		if (!pcur.has_lock || !lock_of_txn(&pl, l.txn))
			return resolve_orphan(c, pt, prow, &pcur, &pl, t, row, lock, &l, dec);
	} else {
		pcur.has_lock = 1;
		pcur.lock = lock;
		pl = l;
	}
	switch (pl.state) {
	case LOCK_COMMITTED:
		*dec = RECOVER_FORWARD;
		return c->o->dry_run ? 0 : finish(c, pt, prow, pcur.lock, &pl, 1);
	case LOCK_ABORTED:
		*dec = RECOVER_BACK;
		return c->o->dry_run ? 0 : finish(c, pt, prow, pcur.lock, &pl, 0);
	case LOCK_PREWRITTEN:
		dead = lock_owner_dead(&pl.owner);
		if (!c->o->force && !dead && pl.expiry_ms > mrtx__now_ms()) {
			*dec = RECOVER_LIVE;
			return MRTX_ELOCKED;
		}
		*dec = RECOVER_BACK;
		if (c->o->dry_run)
			return 0;
		fence_owner(c, &pl.owner, dead, pl.expiry_ms);
		/* (the primary's table dropped since: an orphan of it, as above) */
		if ((rc = abort_primary(c, pt, prow, pcur.lock, &pl, &pcur.lock)) ==
		    MRTX_ENOTABLE && (l.flags & LOCK_F_SECONDARY)) {
			mrtx__clearerr();
			return resolve_gone(c, t, row, lock, &l, dec);
		}
		if (rc)
			return rc;
		return finish(c, pt, prow, pcur.lock, &pl, 0);
	default: {
		/* P is STABLE(t): finished, so this secondary must already be settled. */
		store_row again;

		if ((rc = read_one_lock(c->st, t, row, c->a, &again)))
			return rc;
		if (again.has_lock && again.lock.size == lock.size &&
		    memcmp(again.lock.data, lock.data, lock.size) == 0)
			return mrtx__seterr(MRTX_ECORRUPT, "table '%s': secondary row still "
			                    "PREWRITTEN although its primary finished the txn",
			                    t->name);
		return R_RETRY;
	}
	}
}

/*
 * A read-only store (store_read_only) writes nothing, so a reader there
 * decides as a dry run does and, where the decision needs a write (roll
 * forward, back, fence an orphan) or another lock to be settled first,
 * treats the lock as held: it waits, as for a live owner, up to wait_ms
 * for someone else to settle it, then gives up with MRTX_ELOCKED.
 * Keeps I7, I9 (DESIGN §10).
 */
/* row for a message: printable ASCII as it is, other bytes \xNN, at
 * most 64 bytes of it ("..." after). */
static void row_name(char out[4 * 64 + 4], mrtx_bytes row)
{
	const uint8_t *b = row.data;
	size_t o = 0;

	for (size_t i = 0; i < row.size && i < 64; i++)
		if (b[i] >= 0x20 && b[i] < 0x7f && b[i] != '\\' && b[i] != '\'')
			out[o++] = (char)b[i];
		else
			o += (size_t)snprintf(out + o, 5, "\\x%02x", b[i]);
	if (row.size > 64) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
}

/* Is lock record now, found where was had been, the same transaction's
 * and still unsettled? */
static int same_txn_pending(store *st, const store_table *t, mrtx_bytes was, mrtx_bytes now)
{
	uint8_t s1, s2, id1[LOCK_TXNID_SIZE], id2[LOCK_TXNID_SIZE];

	if (lockio_peek(st, t, was, &s1, id1) || lockio_peek(st, t, now, &s2, id2)) {
		mrtx__clearerr();
		return 0;
	}
	return s2 != LOCK_STABLE && memcmp(id1, id2, sizeof(id1)) == 0;
}

int recover_resolve(store *st, const store_table *t, mrtx_bytes row, mrtx_bytes lock,
                    const recover_opts *o, recover_decision *decision)
{
	return recover_resolve_fenced(st, t, row, lock, o, decision, NULL, NULL);
}

int recover_resolve_fenced(store *st, const store_table *t, mrtx_bytes row, mrtx_bytes lock,
                           const recover_opts *o, recover_decision *decision,
                           recover_fence_fn fn, void *arg)
{
	return recover_resolve_counted(st, t, row, lock, o, decision, fn, arg, NULL, NULL);
}

/* Links handed back at most: a chain of CHAIN_MAX times as many.  Each
 * costs the loop a few passes (handed, settled, looked at again), so its
 * bound grows with them. */
#define LINKS_MAX 4096
#define PASSES_MAX (10000 + 4 * LINKS_MAX)

/* A growing array of targets in arena a (n entries used of *cap). */
static int targets_push(mrtx_arena *a, rtarget **v, size_t *n, size_t *cap, rtarget x)
{
	if (*n == *cap) {
		rtarget *w = arena_alloc(a, 2 * *cap * sizeof(*w));

		if (!w)
			return MRTX_ENOMEM;
		memcpy(w, *v, *n * sizeof(*w));
		*v = w;
		*cap *= 2;
	}
	(*v)[(*n)++] = x;
	return 0;
}

/*
 * The resolver's loop.  links[0] is the lock asked about; a chain of
 * orphans longer than the recursion follows (R_DEEPER) puts its far link
 * on top, settled first (a dry run: decided, and remembered so that the
 * link that handed it is decided as if it were settled), then popped.  A
 * link handed back twice is a loop the walk could not break -- a cycle
 * with a live lock in it -- and waits as for a live owner.
 */
int recover_resolve_counted(store *st, const store_table *t, mrtx_bytes row, mrtx_bytes lock,
                            const recover_opts *o, recover_decision *decision,
                            recover_fence_fn fn, void *arg, recover_settled_fn settled,
                            void *settled_arg)
{
	uint64_t deadline = mrtx__mono_us() + (uint64_t)o->wait_ms * 1000u, backoff = 250;
	recover_decision dec = RECOVER_NONE;
	recover_opts ro_opts = *o;
	int ro_reader = store_read_only(st) && !o->dry_run, stuck = 0;
	mrtx_arena a, keep; /* keep: the links' bytes, lists and rewritten locks */
	rtarget links0[4], done0[4], *links = links0, *done = done0;
	keyset acyclic = KEYSET_INIT; /* (rctx.acyclic, for every pass) */
	size_t nlinks = 1, caplinks = 4, ndone = 0, capdone = 4;
	int rc = 0, iter;

	ro_opts.dry_run = 1;
	arena_init(&a);
	arena_init(&keep);
	links[0] = (rtarget){ t, row, lock };
	for (iter = 0; iter < PASSES_MAX; iter++) {
		rtarget *top = &links[nlinks - 1];
		int first = nlinks == 1;
		recover_decision tdec = RECOVER_NONE;
		rctx c = { st, ro_reader ? &ro_opts : o, &a, 0, fn, arg, settled, settled_arg,
		           { NULL, { NULL, 0 }, { NULL, 0 } }, done, ndone, &acyclic };
		store_row now;

		rc = resolve_at(&c, top->t, top->row, top->lock, &tdec);
		if (first)
			dec = tdec;
		if (rc == R_DEEPER) {
			rtarget d = c.deep;
			int seen = 0;

			for (size_t i = 0; i < nlinks && !seen; i++)
				seen = same_row(links[i].t, links[i].row, d.t, d.row);
			if (seen || nlinks == LINKS_MAX) {
				dec = RECOVER_LIVE;
				rc = MRTX_ELOCKED;
				if (o->dry_run || mrtx__mono_us() >= deadline)
					break;
				nlinks = 1; /* wait, then from the top again */
				mrtx__sleep_us(backoff + mrtx__rand_below((uint32_t)backoff));
				backoff = MRTX_MIN(backoff * 2, 8000u);
			} else if (!(d.row.data = arena_dup(&keep, d.row.data,
			                                    d.row.size ? d.row.size : 1)) ||
			           !(d.lock.data = arena_dup(&keep, d.lock.data, d.lock.size)) ||
			           (rc = targets_push(&keep, &links, &nlinks, &caplinks, d))) {
				rc = MRTX_ENOMEM;
				break;
			}
			arena_free(&a);
			arena_init(&a);
			continue;
		}
		stuck = first && ro_reader && (rc == R_RETRY || (rc == 0 && dec != RECOVER_NONE));
		if (stuck)
			rc = MRTX_ELOCKED;
		if (!first && rc == 0) {
			/* a link handed back, settled (decided): back to the
			 * one that handed it */
			uint8_t state, id[LOCK_TXNID_SIZE];

			if (settled && tdec != RECOVER_NONE && tdec != RECOVER_LIVE &&
			    lockio_peek(st, top->t, top->lock, &state, id) == 0)
				settled(settled_arg, id, tdec);
			if (c.o->dry_run &&
			    (rc = targets_push(&keep, &done, &ndone, &capdone, *top)))
				break;
			nlinks--;
			arena_free(&a);
			arena_init(&a);
			continue;
		}
		if (rc != R_RETRY && rc != MRTX_ELOCKED)
			break;
		if (rc == MRTX_ELOCKED && (o->dry_run || mrtx__mono_us() >= deadline)) {
			if (!first)
				dec = RECOVER_LIVE; /* (the chain's far end is live) */
			break;
		}
		if ((rc = read_one_lock(st, top->t, top->row, &a, &now)))
			break;
		if (!now.has_lock || now.lock.size != top->lock.size ||
		    memcmp(now.lock.data, top->lock.data, top->lock.size) != 0) {
			/* The same transaction's lock, rewritten and still
			 * unsettled (a cycle broken at another row gave it a new
			 * previous lock; a heartbeat moved its expiry): settle
			 * that.  A caller reading from an older view (a
			 * transaction reading past the lock) re-reads nothing,
			 * and would find its transaction's lock still there. */
			if (now.has_lock && same_txn_pending(st, top->t, top->lock, now.lock)) {
				top->lock.data = arena_dup(&keep, now.lock.data, now.lock.size);
				if (!top->lock.data) {
					rc = MRTX_ENOMEM;
					break;
				}
				top->lock.size = now.lock.size;
			} else if (first) {
				rc = 0; /* settled by someone: the caller re-reads */
				break;
			} else {
				nlinks--; /* (a link settled by someone) */
			}
		} else if (tdec == RECOVER_LIVE || stuck) {
			mrtx__sleep_us(backoff + mrtx__rand_below((uint32_t)backoff));
			backoff = MRTX_MIN(backoff * 2, 8000u);
		}
		arena_free(&a);
		arena_init(&a);
	}
	if (iter == PASSES_MAX)
		rc = R_RETRY; /* (not the last read's 0: nothing was settled) */
	if (rc == R_RETRY)
		rc = mrtx__seterr(MRTX_ELOCKED, "table '%s': lock kept changing", t->name);
	if (rc == MRTX_ELOCKED && stuck)
		mrtx__seterr(MRTX_ELOCKED, "table '%s': row held by a transaction that must be "
		             "%s, which a read-only handle cannot do (it writes); `mrtx "
		             "recover` or any read-write reader of the row settles it", t->name,
		             dec == RECOVER_FORWARD ? "rolled forward" :
		             dec == RECOVER_NONE ? "settled" : "rolled back");
	else if (rc == MRTX_ELOCKED && dec == RECOVER_LIVE) {
		char name[4 * 64 + 4];

		row_name(name, row);
		mrtx__seterr(MRTX_ELOCKED, "table '%s': row '%s' is held by a live transaction "
		             "whose commit is under way; retry later (`mrtx locks` shows it)",
		             t->name, name);
	}
	if (decision)
		*decision = dec;
	keyset_free(&acyclic);
	arena_free(&a);
	arena_free(&keep);
	return rc;
}
