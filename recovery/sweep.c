/*
 * sweep.c - `mrtx recover`: resolve every non-STABLE lock of every table.
 *
 * The lock family is scanned in batches.  Abandoned primaries met in one
 * batch are settled together, with the same conditional transitions the
 * single-lock path uses (recovery.c), only batched:
 *
 *   1 abort:    every stale PREWRITTEN primary -> ABORTED          one write call
 *   2 settle:   every secondary of every primary, forward or back  one read + one write
 *               (then re-read: a primary whose secondaries are not
 *               all settled is not released here)
 *   3 release:  every settled primary -> STABLE                    one write call
 *
 * so a batch of up to SWEEP_BATCH transactions costs a handful of store
 * calls instead of several per transaction.  Everything else -- a
 * secondary whose primary was not in the batch, a lock that moved, a live
 * owner, a dry run -- goes through recover_resolve, the path readers use.
 * Each write is conditional on the exact bytes read, so the sweep may race
 * with readers, other sweeps and the original writers.
 *
 * A dry run writes nothing, so every lock stays to be looked at, and every
 * secondary's decision would read and decode its primary (which lists all
 * n rows): n^2 for one transaction of n rows.  The dry run therefore
 * remembers each transaction's decision (`decided`, by txn id) once made at
 * its primary or at a first secondary, and counts later locks of that
 * transaction without reading anything: linear, like the real sweep.
 */
#include "recovery.h"

#include <stdlib.h>
#include <string.h>

#include "keyset.h"

#define SWEEP_BATCH 1024

typedef struct seen_txn {
	uint8_t txn[LOCK_TXNID_SIZE];
	uint8_t decision;
} seen_txn;

typedef struct prim {
	const store_table *t;
	mrtx_bytes row, lock;
	lock_rec rec;
	int fwd;   /* roll forward (COMMITTED) or back */
	int ok;    /* still on the batched path */
} prim;

typedef struct sweep {
	store *st;
	const recover_opts *o;
	recover_stats *stats;
	mrtx_buf seen;
	mrtx_arena *a;
	keyset decided; /* dry run: txn id -> recover_decision */
	int note_failed; /* a decision could not be noted (out of memory) */
} sweep;

static int note(sweep *w, const uint8_t txn[LOCK_TXNID_SIZE], recover_decision dec)
{
	seen_txn s;

	if (dec == RECOVER_NONE)
		return 0;
	memcpy(s.txn, txn, sizeof(s.txn));
	s.decision = (uint8_t)dec;
	return buf_put(&w->seen, &s, sizeof(s));
}

/* recover_settled_fn: a transaction the single path settled on the way. */
static void noted(void *arg, const uint8_t txn[LOCK_TXNID_SIZE], recover_decision dec)
{
	sweep *w = arg;
	mrtx_bytes none = { NULL, 0 };

	if (note(w, txn, dec))
		w->note_failed = 1;
	/* (a dry run decides each transaction once: the rest of a chain its
	 * locks meet later is not walked again) */
	if (w->o->dry_run &&
	    keyset_add(&w->decided, MRTX_BYTES(txn, LOCK_TXNID_SIZE), none, none, dec) < 0)
		w->note_failed = 1;
}

/* The single path, counting what it settles on the way. */
static int resolve(sweep *w, const store_table *t, mrtx_bytes row, mrtx_bytes lock,
                   recover_decision *dec)
{
	int rc = recover_resolve_counted(w->st, t, row, lock, w->o, dec, NULL, NULL, noted, w);

	if ((rc == 0 || rc == MRTX_ELOCKED) && w->note_failed)
		return MRTX_ENOMEM;
	return rc;
}

/* Step 1: PREWRITTEN primaries that are stale -> ABORTED (one call). */
static int batch_abort(sweep *w, prim *p, size_t n)
{
	store_op *ops = arena_alloc(w->a, MRTX_MAX(n, 1) * sizeof(*ops));
	size_t *idx = arena_alloc(w->a, MRTX_MAX(n, 1) * sizeof(*idx)), k = 0;
	uint64_t now = mrtx__now_ms();
	int rc;

	if (!ops || !idx)
		return MRTX_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		lock_rec ab;

		if (!p[i].ok || p[i].rec.state != LOCK_PREWRITTEN)
			continue;
		if (!w->o->force && p[i].rec.expiry_ms > now && !lock_owner_dead(&p[i].rec.owner)) {
			p[i].ok = 0; /* live: the single path decides (and counts) it */
			continue;
		}
		ab = p[i].rec;
		ab.state = LOCK_ABORTED;
		ab.nredo = 0;
		memset(&ops[k], 0, sizeof(ops[k]));
		ops[k].table = p[i].t;
		ops[k].row = p[i].row;
		ops[k].cond.lock = p[i].lock;
		if ((rc = lock_encode(&ab, w->a, &ops[k].new_lock)))
			return rc;
		idx[k++] = i;
	}
	if (k == 0)
		return 0;
	if ((rc = lockio_write_rows(w->st, ops, k)))
		return rc;
	for (size_t j = 0; j < k; j++) {
		prim *x = &p[idx[j]];

		if (ops[j].result != 0) {
			x->ok = 0;
			continue;
		}
		x->lock = ops[j].new_lock;
		x->rec.state = LOCK_ABORTED;
		x->rec.nredo = 0;
	}
	return FAILPOINT(FP_RECOVER_AFTER_ABORT);
}

/*
 * Step 2: settle every secondary of the primaries still ok, in one read and
 * one write; then re-read and drop (from the batch path) any primary with a
 * secondary still holding its txn.
 */
static int batch_settle(sweep *w, prim *p, size_t n)
{
	size_t total = 0, k = 0, nops = 0;
	store_rowref *refs;
	store_row *cur;
	size_t *owner;
	store_op *ops;
	int rc, any_fwd = 0;

	for (size_t i = 0; i < n; i++)
		if (p[i].ok)
			total += p[i].rec.nsecondaries;
	if (total == 0)
		return 0;
	refs = arena_alloc(w->a, total * sizeof(*refs));
	cur = arena_alloc(w->a, total * sizeof(*cur));
	owner = arena_alloc(w->a, total * sizeof(*owner));
	ops = arena_alloc(w->a, total * sizeof(*ops));
	if (!refs || !cur || !owner || !ops)
		return MRTX_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!p[i].ok)
			continue;
		for (size_t s = 0; s < p[i].rec.nsecondaries; s++) {
			/* in a dropped table: settled (recovery.c, settle_secondaries) */
			if ((rc = lockio_ref_table(w->st, &p[i].rec.secondaries[s], &refs[k].table)) ==
			    MRTX_ENOTABLE) {
				total--;
				continue;
			}
			if (rc)
				return rc;
			refs[k].row = p[i].rec.secondaries[s].row;
			owner[k++] = i;
		}
	}
	for (int round = 0; round < 2; round++) {
		if ((rc = store_read_locks(w->st, refs, total, w->a, cur)) == MRTX_ELOCKED)
			goto single;
		if (rc)
			return rc;
		nops = 0;
		for (size_t j = 0; j < total; j++) {
			prim *x = &p[owner[j]];
			store_op *op = &ops[nops];
			lock_rec sr;

			if (!x->ok || !cur[j].has_lock)
				continue;
			if ((rc = lockio_decode(w->st, refs[j].table, refs[j].row, cur[j].lock, w->a,
			                        &sr)))
				return rc;
			if (sr.state != LOCK_PREWRITTEN || !lock_of_txn(&sr, x->rec.txn))
				continue;
			if (round == 1) {
				x->ok = 0; /* not settled: leave it to the single path */
				continue;
			}
			memset(op, 0, sizeof(*op));
			op->table = refs[j].table;
			op->row = refs[j].row;
			op->cond.lock = cur[j].lock;
			if (x->fwd) {
				/* (the primary's commit_ts, as recovery.c) */
				rc = lockio_stable(w->st, sr.txn, x->rec.commit_ts, w->a,
				                   &op->new_lock);
				op->muts = sr.redo;
				op->nmuts = sr.nredo;
				op->ts = x->rec.commit_ts;
				any_fwd = 1;
			} else {
				rc = lockio_restore_prev(w->st, &sr, w->a, op);
			}
			if (rc)
				return rc;
			nops++;
		}
		if (round == 0 && nops && (rc = lockio_write_rows(w->st, ops, nops)) == MRTX_ELOCKED)
			goto single;
		if (rc)
			return rc;
		if (round == 0 && nops == 0)
			break;
	}
	return any_fwd ? FAILPOINT(FP_RECOVER_AFTER_FORWARD) : 0;
single:
	/* a table of a secondary held up (closed by an unfinished drop, say):
	 * the single path settles each primary on its own, and says which */
	mrtx__clearerr();
	for (size_t i = 0; i < n; i++)
		p[i].ok = 0;
	return any_fwd ? FAILPOINT(FP_RECOVER_AFTER_FORWARD) : 0;
}

/* Step 3: release every settled primary (one call) and record decisions. */
static int batch_release(sweep *w, prim *p, size_t n)
{
	store_op *ops = arena_alloc(w->a, MRTX_MAX(n, 1) * sizeof(*ops));
	size_t *idx = arena_alloc(w->a, MRTX_MAX(n, 1) * sizeof(*idx)), k = 0;
	int rc;

	if (!ops || !idx)
		return MRTX_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!p[i].ok)
			continue;
		memset(&ops[k], 0, sizeof(ops[k]));
		ops[k].table = p[i].t;
		ops[k].row = p[i].row;
		ops[k].cond.lock = p[i].lock;
		rc = p[i].fwd ? lockio_stable(w->st, p[i].rec.txn, p[i].rec.commit_ts, w->a,
		                              &ops[k].new_lock) :
		                lockio_restore_prev(w->st, &p[i].rec, w->a, &ops[k]);
		if (rc)
			return rc;
		idx[k++] = i;
	}
	if (k && (rc = lockio_write_rows(w->st, ops, k)))
		return rc;
	for (size_t j = 0; j < k; j++) {
		prim *x = &p[idx[j]];

		if (ops[j].result != 0) {
			x->ok = 0; /* moved under us: the single path looks again */
			continue;
		}
		if ((rc = note(w, x->rec.txn, x->fwd ? RECOVER_FORWARD : RECOVER_BACK)))
			return rc;
	}
	return 0;
}

/*
 * Dry run: decide one lock, or count it under its transaction's decision
 * if one was made already (nothing was written, so the lock is still there).
 */
static int single_dry(sweep *w, const store_table *t, const store_row *row)
{
	recover_decision dec = RECOVER_NONE;
	uint8_t state, txn[LOCK_TXNID_SIZE];
	mrtx_bytes none = { NULL, 0 };
	int rc;

	if (lockio_peek(w->st, t, row->lock, &state, txn))
		return MRTX_ECORRUPT;
	if (keyset_get(&w->decided, MRTX_BYTES(txn, sizeof(txn)), none, none, NULL))
		return 0; /* noted when it was decided */
	rc = resolve(w, t, row->row, row->lock, &dec);
	if (rc && rc != MRTX_ELOCKED)
		return rc;
	/* Every lock of a txn shares its fate: forward or back as its primary
	 * says, live while the primary is (or, when the primary does not hold
	 * it, while its owner is: the prewrite may be in flight), or orphaned
	 * (then none of its secondaries is held either). */
	if (dec != RECOVER_NONE) {
		rc = keyset_add(&w->decided, MRTX_BYTES(txn, sizeof(txn)), none, none, dec);
		if (rc < 0)
			return rc;
	}
	return note(w, txn, dec);
}

/* Resolve one lock the batch path did not settle, if it is still there. */
static int single(sweep *w, const store_table *t, const store_row *row)
{
	store_rowref ref = { t, row->row };
	recover_decision dec = RECOVER_NONE;
	uint8_t state, txn[LOCK_TXNID_SIZE], was_state, was[LOCK_TXNID_SIZE];
	store_row now;
	int rc;

	if (w->o->dry_run)
		return single_dry(w, t, row);
	if ((rc = store_read_locks(w->st, &ref, 1, w->a, &now)))
		return rc;
	if (!now.has_lock)
		return 0; /* settled with its transaction earlier in this sweep */
	if (lockio_peek(w->st, t, now.lock, &state, txn))
		return MRTX_ECORRUPT;
	/* (row->lock is not STABLE.  The lock may have changed since the scan
	 * and still be the same transaction's, to settle: a live commit's
	 * heartbeat moves its expiry, the batch path above aborts a primary
	 * before handing it here, and a cycle of orphans broken at another
	 * row rewrites this one's previous lock.) */
	if (lockio_peek(w->st, t, row->lock, &was_state, was))
		return MRTX_ECORRUPT;
	if (state == LOCK_STABLE || memcmp(txn, was, sizeof(was)) != 0)
		return 0; /* settled with its transaction earlier in this sweep */
	rc = resolve(w, t, now.row, now.lock, &dec);
	if (rc && rc != MRTX_ELOCKED)
		return rc;
	return note(w, txn, dec);
}

static int sweep_batch(sweep *w, const store_table *t, store_row *rows, size_t n)
{
	prim *p = arena_alloc(w->a, MRTX_MAX(n, 1) * sizeof(*p));
	size_t np = 0;
	int rc;

	if (!p)
		return MRTX_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint8_t state, txn[LOCK_TXNID_SIZE];
		prim *x = &p[np];

		if (lockio_peek(w->st, t, rows[i].lock, &state, txn)) {
			w->stats->errors++;
			continue;
		}
		if (state == LOCK_STABLE)
			continue;
		w->stats->locks_seen++;
		if (w->o->dry_run)
			continue;
		if (lockio_decode(w->st, t, rows[i].row, rows[i].lock, w->a, &x->rec)) {
			w->stats->errors++;
			continue;
		}
		if (x->rec.flags & LOCK_F_SECONDARY)
			continue;
		x->t = t;
		x->row = rows[i].row;
		x->lock = rows[i].lock;
		x->fwd = x->rec.state == LOCK_COMMITTED;
		x->ok = 1;
		np++;
	}
	if (np && ((rc = batch_abort(w, p, np)) || (rc = batch_settle(w, p, np)) ||
	           (rc = batch_release(w, p, np))))
		return rc;
	for (size_t i = 0; i < n; i++) {
		uint8_t state, txn[LOCK_TXNID_SIZE];

		if (lock_peek(rows[i].lock, &state, txn) || state == LOCK_STABLE)
			continue;
		rc = single(w, t, &rows[i]);
		if (rc == MRTX_ENOMEM || rc == MRTX_ESTORE || rc == MRTX_EFULL)
			return rc;
		if (rc)
			w->stats->errors++;
	}
	return 0;
}

typedef struct sweep_walk {
	sweep *w;
	recover_progress_fn progress;
	void *payload;
} sweep_walk;

static int sweep_visit(const store_table *t, store_row *rows, size_t n, mrtx_arena *a,
                       void *payload)
{
	sweep_walk *sw = payload;
	int rc;

	sw->w->a = a;
	rc = sweep_batch(sw->w, t, rows, n);
	sw->w->a = NULL;
	if (sw->progress)
		sw->progress(sw->w->stats, sw->payload);
	return rc;
}

static int sweep_table(sweep *w, const store_table *t, recover_progress_fn progress,
                       void *payload)
{
	store_filter f = STORE_FILTER_ALL;
	sweep_walk sw = { w, progress, payload };

	f.lock_only = 1;
	return store_walk(w->st, t, &f, SWEEP_BATCH, sweep_visit, &sw);
}

/* A transaction's decisions, the one it is counted by first: settled
 * (forward, back, orphan) wins over live, met at one row and settled at
 * another in the same sweep. */
static int decision_rank(uint8_t d)
{
	return d == RECOVER_LIVE ? RECOVER_ORPHAN + 1 : d;
}

static int seen_cmp(const void *a, const void *b)
{
	const seen_txn *x = a, *y = b;
	int c = memcmp(x->txn, y->txn, LOCK_TXNID_SIZE);

	return c ? c : decision_rank(x->decision) - decision_rank(y->decision);
}

/* store_fence_dead's test: a registered owner provably dead here. */
static int owner_gone(const uint8_t *owner, void *arg)
{
	lock_owner o;

	(void)arg;
	lock_owner_get(owner, &o);
	return lock_owner_dead(&o);
}

int recover_sweep(store *st, const recover_opts *o, recover_stats *stats,
                  recover_progress_fn progress, void *payload)
{
	const store_table **tables = NULL;
	sweep w = { st, o, stats, MRTX_BUF_INIT, NULL, KEYSET_INIT, 0 };
	size_t nt = 0, ns;
	seen_txn *s;
	int rc;

	memset(stats, 0, sizeof(*stats));
	if (store_read_only(st) && !o->dry_run)
		return mrtx__seterr(MRTX_EREADONLY, "store %s is open read-only: recovery writes "
		                    "(a dry run does not)", store_path(st));
	/* First fence the clients of every registered owner that is provably
	 * gone (RADOS), so that none of their requests still on the way lands
	 * behind the sweep: each of its reads then carries the map that
	 * refuses them.  Best effort (the protocol is safe without). */
	if (!o->dry_run) {
		size_t fenced, denied;

		if (store_fence_dead(st, owner_gone, NULL, &fenced, &denied))
			mrtx__clearerr();
		stats->fenced = fenced;
		stats->fence_denied = denied;
	}
	if ((rc = store_tables_list(st, &tables, &nt)))
		return rc;
	for (size_t i = 0; i < nt && rc == 0; i++) {
		rc = sweep_table(&w, tables[i], progress, payload);
		/* a table dropped, truncated or being so (RADOS) since the
		 * listing: the others are swept all the same */
		if (rc == MRTX_ENOTABLE) {
			mrtx__clearerr();
			rc = 0;
		} else if (rc == MRTX_ELOCKED && store_has(st, STORE_CAP_REMOTE)) {
			stats->errors++;
			mrtx__clearerr();
			rc = 0;
		}
	}
	/* Count transactions, not locks: a txn's locks share one decision. */
	s = (seen_txn *)w.seen.data;
	ns = w.seen.size / sizeof(*s);
	if (ns)
		qsort(s, ns, sizeof(*s), seen_cmp);
	for (size_t i = 0; i < ns; i++) {
		if (i && memcmp(s[i].txn, s[i - 1].txn, LOCK_TXNID_SIZE) == 0)
			continue;
		switch (s[i].decision) {
		case RECOVER_FORWARD: stats->forwarded++; break;
		case RECOVER_BACK: case RECOVER_ORPHAN: stats->rolled_back++; break;
		case RECOVER_LIVE: stats->skipped_live++; break;
		default: break;
		}
	}
	buf_free(&w.seen);
	keyset_free(&w.decided);
	mrtx__free(tables);
	return rc;
}
