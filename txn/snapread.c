/*
 * snapread.c - a transaction's reads from one view of the store (DESIGN §9).
 *
 * On a store that offers views (LMDB: one read transaction held open,
 * store_view_open), the first read of a transaction opens its view and
 * every later read -- gets, scans, index lookups -- comes from it, so the
 * transaction sees the store as of one instant and never a torn state.
 * A lock of another transaction in that image is decided from the image
 * alone, without waiting and without writing:
 *
 *   lock in the view                          the row reads as       observed lock
 *   none, STABLE                              its cells              as read
 *   primary COMMITTED                         its cells (the commit  STABLE(txn, ts):
 *                                             point wrote them)      what release leaves
 *   primary PREWRITTEN / ABORTED              its cells (pending)    what abort restores
 *   secondary PREWRITTEN, its primary in the  cells + the lock's     STABLE(txn, ts):
 *     view COMMITTED for the same txn         redo (rolled forward   what roll-forward
 *                                             in the view)           leaves
 *   secondary PREWRITTEN, primary STABLE      -- impossible: a primary is released only
 *     for the same txn                           after its secondaries (ECORRUPT)
 *   secondary PREWRITTEN, primary anything    its cells (pending)    what abort restores
 *     else (PREWRITTEN, ABORTED, another
 *     txn's, none, its table gone)
 *
 * "Pending" means not committed in the view.  Such a transaction commits,
 * if ever, after the view opened -- but a two-phase commit validates its
 * reads before its commit point (DESIGN §5.2), so it may be serialized
 * before a commit the view does show.  A read-only transaction therefore
 * skips validation at commit only if it met no pending lock
 * (txn->must_validate); one-phase commits (LMDB's default) never leave a
 * lock to meet, and a crashed writer's locks are settled as they are met.
 *
 * Meeting a pending lock:
 *
 *   first read of the transaction ──► recover_resolve, waiting for a live
 *   (nothing read from the view yet)    owner up to lock_wait_ms (as before
 *                                       views); lock gone: a new view, read
 *                                       again; still live: MRTX_ELOCKED
 *                                       (the snapshot is not fixed yet)
 *   any later read, or a scan ───────► settle it if its owner is dead or it
 *                                       expired (no wait), read past it as
 *                                       "pending", must_validate = 1
 *
 * A lock committed in the view is settled the same quiet way (a crashed
 * committer's is rolled forward) and needs no validation.
 *
 * Stores without views (RADOS) read each row fresh, as txn_read_row does.
 */
#include "txn_int.h"
#include "../storage/store_test.h"
#include "tail.h"
#include "storage/breaks.h"

#include <string.h>

/*
 * Live snapshots and the collectors (RADOS, DESIGN §9.6, I19).  A
 * commit's trim and `mrtx gc` keep every version above their safe point,
 * which stays at or below every running snapshot: this handle's own
 * (db->snaps.list), and every other handle's, registered in the store's
 * registry by the very write that reserved its timestamp
 * (store_ts_snapshot) with a lease of one lag, renewed by its reads every
 * quarter lag (a duration on this handle's monotonic clock: no clock is
 * compared with a timestamp).  So a snapshot that reads at least every
 * three quarters of the lag keeps its versions however long it runs and
 * however far the oracle runs ahead of any clock, and a crashed process
 * pins nothing for longer than the lag.
 */
static uint64_t lag_us(void)
{
	long long l = atomic_load(&store__trim_lag_us);

	return l > 0 ? (uint64_t)l : 1;
}

static uint64_t local_oldest(mrtx_db *db, int pending);

/* In this handle's live set (snap_mu held): an entry (ts, pending), put
 * to `to` -- or removed, when to.ts is 0. */
static void snap_replace(mrtx_db *db, uint64_t ts, int pending, struct txn_snap to)
{
	for (size_t i = 0; i < db->snaps.n; i++)
		if (db->snaps.list[i].ts == ts && db->snaps.list[i].pending == pending) {
			db->snaps.list[i] = to.ts ? to : db->snaps.list[--db->snaps.n];
			return;
		}
}

/* Remove one entry ts from this handle's live set. */
static void snap_remove(mrtx_db *db, uint64_t ts)
{
	pthread_mutex_lock(&db->snaps.mu);
	snap_replace(db, ts, 0, (struct txn_snap){ 0, 0 });
	pthread_mutex_unlock(&db->snaps.mu);
}

/*
 * A reservation under way stands in the handle's live set (db->snaps.list) as
 * its floor: a value of the oracle the handle knew before the reservation
 * began, below the timestamp it will get.  So a collector of this handle,
 * which takes the set's minimum instead of the handle's own registry
 * record, never passes a snapshot between the write that reserves it and
 * its entry below -- the window in which only the registry knew it.
 */
typedef struct snap_pending {
	mrtx_db *db;
	uint64_t floor;
} snap_pending;

/* Keeps I19 (DESIGN §10). */
static int snap_room(snap_pending *p)
{
	mrtx_db *db = p->db;
	int rc = 0;

	pthread_mutex_lock(&db->snaps.mu);
	if (db->snaps.n == db->snaps.cap) {
		size_t nc = db->snaps.cap ? db->snaps.cap * 2 : 8;
		struct txn_snap *n = mrtx__reallocarray(db->snaps.list, nc, sizeof(*n));

		if (n) {
			db->snaps.list = n;
			db->snaps.cap = nc;
		} else {
			rc = mrtx__seterr(MRTX_ENOMEM, "out of memory taking a snapshot");
		}
	}
	if (rc == 0)
		db->snaps.list[db->snaps.n++] = (struct txn_snap){ p->floor, 1 };
	pthread_mutex_unlock(&db->snaps.mu);
	return rc;
}

/* A pending reservation ends: its floor is replaced by its snapshot ts
 * (ts 0: it failed, and the floor is removed). */
static void snap_enter(void *arg, uint64_t ts)
{
	snap_pending *p = arg;
	mrtx_db *db = p->db;

	pthread_mutex_lock(&db->snaps.mu);
	snap_replace(db, p->floor, 1, (struct txn_snap){ ts, 0 });
	pthread_mutex_unlock(&db->snaps.mu);
}

/* (the registry record a reservation writes: the handle's entered
 * snapshots; those under way are in that reservation's batch, whose
 * timestamps the record also covers, or reserved after it, above it) */
static uint64_t oldest_of(void *arg)
{
	return local_oldest(((snap_pending *)arg)->db, 0);
}

/*
 * A live snapshot's timestamp, registered by the write that reserves it,
 * and entered in the handle's live set by that write's batch, before any
 * later reservation of the handle reads the set: every reservation writes
 * the handle's one record as the set's minimum, and a snapshot entered
 * only once its thread ran again could be left above a record another
 * thread's reservation wrote meanwhile.
 */
static int snap_take(mrtx_txn *txn, uint64_t *ts)
{
	mrtx_db *db = txn->db;
	store *st = db->st;
	snap_pending p = { db, 0 };
	store_snap_set set = { oldest_of, snap_enter, &p };
	int rc;

	if (store_ts_known(st, &p.floor))
		mrtx__clearerr(); /* (floor 0: this handle collects nothing meanwhile) */
	if ((rc = snap_room(&p)))
		return rc;
	/* (switched off: no fresh reservation, the value this handle last
	 * knew -- a snapshot that may miss commits that returned before it) */
	if (mrtx__broken(MRTX_BREAK_SNAPSHOT) && p.floor) {
		*ts = p.floor;
		snap_enter(&p, *ts);
	} else if ((rc = store_ts_snapshot(st, &set, store_now_us(st) + lag_us(), ts))) {
		snap_enter(&p, 0);
		return rc;
	}
	if ((rc = FAILPOINT(FP_SNAP_AFTER_RESERVE))) {
		snap_remove(db, *ts);
		*ts = 0;
		return rc;
	}
	atomic_store(&db->snaps.pub_us, mrtx__mono_us());
	return 0;
}

void txn_snap_end(mrtx_txn *txn)
{
	snap_remove(txn->db, txn->snap_ts);
}

/* The oldest of this handle's live snapshots; pending: with the floors of
 * reservations under way (a collector of this handle). */
static uint64_t local_oldest(mrtx_db *db, int pending)
{
	uint64_t o = UINT64_MAX;

	pthread_mutex_lock(&db->snaps.mu);
	for (size_t i = 0; i < db->snaps.n; i++)
		if (pending || !db->snaps.list[i].pending)
			o = MRTX_MIN(o, db->snaps.list[i].ts);
	pthread_mutex_unlock(&db->snaps.mu);
	return o;
}

/* On a read of a live snapshot: renew the handle's record when a quarter
 * of its lease has passed (monotonic: a duration).
 * Keeps I19 (DESIGN §10). */
static void snap_keepalive(mrtx_txn *txn)
{
	mrtx_db *db = txn->db;
	uint64_t mono = mrtx__mono_us(), o;

	if (mono < atomic_load(&db->snaps.pub_us) + lag_us() / 4)
		return;
	o = local_oldest(db, 0);
	if (o == UINT64_MAX)
		return;
	atomic_store(&db->snaps.pub_us, mono);
	/* (best effort: a failed renewal is tried again a quarter lag on) */
	if (store_snap_publish(db->st, o, store_now_us(db->st) + lag_us()))
		mrtx__clearerr();
}

uint64_t txn_safe_bound(mrtx_db *db, int fresh)
{
	uint64_t reg = atomic_load(&db->snaps.reg_oldest), mono = mrtx__mono_us();

	if (fresh || mono >= atomic_load(&db->snaps.reg_at_us) + lag_us() / 4) {
		/* (the registry and the oracle, read together: a snapshot
		 * reserved after this read is above the bound it gives, so the
		 * bound stays good while it is cached) */
		if (store_snap_oldest(db->st, store_now_us(db->st), &reg) == 0) {
			atomic_store(&db->snaps.reg_oldest, reg);
			atomic_store(&db->snaps.reg_at_us, mono);
		} else {
			mrtx__clearerr();
			reg = 0; /* unknown: collect nothing */
		}
	}
	return MRTX_MIN(reg, local_oldest(db, 1));
}

/* The transaction's view, opened by its first read.  *out is NULL on a
 * store without views.
 * Keeps I18 (DESIGN §10). */
int txn_view_get(mrtx_txn *txn, store_view **out)
{
	int rc;

	if (!txn->view && !txn->no_view) {
		store *st = txn->db->st;

		/* (a past snapshot needs its view's timestamp) */
		rc = txn->at ? store_view_open_ts(st, &txn->view) : store_view_open(st, &txn->view);
		if (rc && rc != MRTX_ENOTSUP)
			return rc;
		if (rc == 0) {
			txn->snap_ts = store_view_ts(st, txn->view);
		} else {
			/* No view (RADOS): a store that keeps versions reads every
			 * row at one timestamp from its oracle, taken now -- every
			 * commit that returned before is at or below it, every
			 * commit point not yet stamped lands above (DESIGN
			 * §9.1, I17).  Not for a past snapshot (its own).  A
			 * read-only handle cannot raise the oracle: it reads the
			 * oracle's stored value instead (store_ts_now), which
			 * every commit that returned before is at or below and
			 * every two-phase commit stamped at or below had its
			 * locks in place for -- the same two facts a reservation
			 * gives.  It cannot register the snapshot either, so a
			 * collector may pass it: its reads then fail with
			 * MRTX_ESNAPSHOT, never a newer value (DESIGN §9.4). */
			if (!txn->at && store_has(st, STORE_CAP_VERSIONS)) {
				uint64_t ts;

				if (store_read_only(st))
					rc = store_ts_now(st, &ts);
				else
					rc = snap_take(txn, &ts);
				if (rc)
					return rc;
				/* (0: nothing was ever stamped; a filter at 0 reads
				 * the newest, so such a read stays optimistic) */
				txn->snap_ts = ts;
				txn->snap_live = ts != 0;
			}
			txn->no_view = 1;
		}
	}
	if (txn->snap_live)
		snap_keepalive(txn);
	*out = txn->view;
	return 0;
}

void txn_view_close(mrtx_txn *txn)
{
	if (txn->view) {
		store_view_close(txn->db->st, txn->view);
		txn->view = NULL;
	}
}

static int cell_cmp(uint8_t fa, mrtx_bytes qa, uint8_t fb, mrtx_bytes qb)
{
	if (fa != fb)
		return fa < fb ? -1 : 1;
	return bytes_cmp(qa, qb);
}

/* Would a read with filter f return the cell (fid, q)?  (read_cells' rule:
 * the qualifier bounds apply inside the filter's family.) */
static int in_filter(const store_filter *f, uint8_t fid, mrtx_bytes q)
{
	if (!f)
		return 1;
	if (f->lock_only)
		return 0;
	if (f->family < 0)
		return 1;
	if (fid != f->family)
		return 0;
	if (f->qual_exact)
		return bytes_cmp(q, f->qs) == 0;
	return (!f->qs.size || bytes_cmp(q, f->qs) >= 0) &&
	       (!f->qe.size || bytes_cmp(q, f->qe) < 0);
}

/* The row's cells with a redo list applied, as rolling forward would
 * leave them, cut by the read's filter; cells stay in (family, qualifier)
 * order. */
static int apply_redo(mrtx_txn *txn, const store_table *t, store_row *sr,
                      const store_filter *f, const store_mut *redo, size_t nredo, uint64_t ts)
{
	int vers = f && f->versions > 1; /* a cell's versions are adjacent, newest first */

	store_cell *c = arena_alloc(&txn->arena, (sr->ncells + nredo + 1) * sizeof(*c));
	size_t n = sr->ncells;

	if (!c)
		return MRTX_ENOMEM;
	if (n)
		memcpy(c, sr->cells, n * sizeof(*c));
	for (size_t m = 0; m < nredo; m++) {
		const store_mut *u = &redo[m];
		size_t i = 0, k = 0;

		switch (u->kind) {
		case STORE_MUT_DEL_ROW:
			n = 0;
			break;
		case STORE_MUT_DEL_FAMILY:
			for (i = 0; i < n; i++)
				if (c[i].fid != u->fid)
					c[k++] = c[i];
			n = k;
			break;
		case STORE_MUT_DEL_CELL:
		case STORE_MUT_PUT:
			while (i < n && cell_cmp(c[i].fid, c[i].qual, u->fid, u->qual) < 0)
				i++;
			if (vers) {
				/* the group becomes the redo's version (a put) followed
				 * by the newest of the old ones, up to f->versions; a
				 * delete empties it */
				size_t e = i, keep, put = u->kind == STORE_MUT_PUT &&
				                          in_filter(f, u->fid, u->qual);

				while (e < n && cell_cmp(c[e].fid, c[e].qual, u->fid, u->qual) == 0)
					e++;
				keep = put ? MRTX_MIN(e - i, (size_t)f->versions - 1) : 0;
				memmove(&c[i + keep + put], &c[e], (n - e) * sizeof(*c));
				if (put) {
					memmove(&c[i + 1], &c[i], keep * sizeof(*c));
					c[i] = (store_cell){ u->fid, u->qual, u->value, ts };
				}
				n = n - (e - i) + keep + put;
				break;
			}
			if (i < n && cell_cmp(c[i].fid, c[i].qual, u->fid, u->qual) == 0) {
				if (u->kind == STORE_MUT_PUT) {
					c[i].value = u->value;
					c[i].ts = ts;
					break;
				}
				memmove(&c[i], &c[i + 1], (n - i - 1) * sizeof(*c));
				n--;
				break;
			}
			if (u->kind == STORE_MUT_PUT && in_filter(f, u->fid, u->qual)) {
				memmove(&c[i + 1], &c[i], (n - i) * sizeof(*c));
				c[i] = (store_cell){ u->fid, u->qual, u->value, ts };
				n++;
			}
			break;
		default:
			return mrtx__seterr(MRTX_ECORRUPT, "table '%s': a lock's redo list holds a "
			                    "mutation of unknown kind %u", t->name, u->kind);
		}
	}
	sr->cells = c;
	sr->ncells = n;
	return 0;
}

/* sr's lock becomes STABLE(l's txn, l's commit_ts): what settling a
 * committed transaction leaves on the row. */
static int as_committed(mrtx_txn *txn, store_row *sr, const lock_rec *l)
{
	return lockio_stable(txn->db->st, l->txn, l->commit_ts, &txn->arena, &sr->lock);
}

/* sr's lock becomes what aborting l restores (a STABLE record, or none:
 * then the row was not a row, and has no cells). */
static int as_pending(mrtx_txn *txn, store_row *sr, const lock_rec *l)
{
	store_op op;
	int rc;

	memset(&op, 0, sizeof(op));
	if ((rc = lockio_restore_prev(txn->db->st, l, &txn->arena, &op)))
		return rc;
	if (op.delete_lock) {
		sr->has_lock = 0;
		sr->lock = MRTX_BYTES(NULL, 0);
		sr->cells = NULL;
		sr->ncells = 0;
	} else {
		sr->lock = op.new_lock;
	}
	return 0;
}

/*
 * Reading past a live writer (RADOS, DESIGN §9).  Without
 * views, a read at a snapshot T (the live one, or mrtx_begin_at's) that
 * meets a PREWRITTEN lock of a
 * live two-phase commit X would wait for X (it might commit at or below
 * T).  Instead the reader pushes X's primary: store_push sets the row's
 * push mark to T + 1 if the primary is still exactly the PREWRITTEN lock
 * read, and X's commit point, guarded by "no mark above my stamp", is then
 * stamped again above T.  So X commits above T or not at all, and the read
 * takes the row as X's abort would leave it (as_pending): its versions at
 * T are what the store returned, since X's writes live in its locks until
 * its commit point.
 *
 *   lock met                            what the reader does
 *   PREWRITTEN primary, owner live,     push it; read past
 *     unexpired
 *   PREWRITTEN secondary, its primary   push the primary; read past
 *     PREWRITTEN for the same txn, live
 *     and unexpired (a secondary's own
 *     expiry is never refreshed)
 *   PREWRITTEN secondary, its primary   read past, no push, once the row,
 *     without the txn's lock (prewrite    read again after the primary, is
 *     under way, or the txn finished     unchanged (else read it again): the
 *     meanwhile), owner live, the         commit is stamped after that
 *     secondary unexpired                 prewrite lands, above a snapshot
 *                                         taken before this read
 *   anything else (a decided primary,   settle it as before (recover_resolve:
 *     a dead or expired owner, ...)       roll forward or back, no wait)
 *   the lock changed meanwhile          read the row again
 * Keeps I21 (DESIGN §10).
 */
int txn_push_past(mrtx_txn *txn, const store_table *t, uint64_t at, store_row *sr)
{
	store *st = txn->db->st;
	const store_table *pt = t;
	mrtx_bytes prow = sr->row, plock = sr->lock;
	lock_rec l, pl;
	int rc;

	if (store_read_only(st) || !at)
		return 1;
	if ((rc = lockio_decode(st, t, sr->row, sr->lock, &txn->arena, &l)))
		return rc;
	/* (a secondary's own expiry is never refreshed: the primary's is) */
	if (l.state != LOCK_PREWRITTEN || lock_owner_dead(&l.owner) ||
	    (!(l.flags & LOCK_F_SECONDARY) && l.expiry_ms <= mrtx__now_ms()))
		return 1;
	if (l.flags & LOCK_F_SECONDARY) {
		store_row p;

		/* (the primary's table dropped, known here or met by the read:
		 * recovery settles an orphan of a dropped table) */
		if ((rc = lockio_ref_table(st, &l.primary, &pt)) == 0)
			rc = store_read_locks(st, &(store_rowref){ pt, l.primary.row }, 1,
			                      &txn->arena, &p);
		if (rc == MRTX_ENOTABLE) {
			mrtx__clearerr();
			return 1;
		}
		if (rc)
			return rc;
		if (p.has_lock &&
		    (rc = lockio_decode(st, pt, l.primary.row, p.lock, &txn->arena, &pl)))
			return rc;
		if (!p.has_lock || memcmp(pl.txn, l.txn, LOCK_TXNID_SIZE) != 0) {
			store_row again;

			/* the primary does not hold the writer's lock.  Either its
			 * prewrite is under way (or the writer is rolling back): the
			 * commit's timestamp, taken after that prewrite lands, is
			 * above this snapshot, taken before this read -- read past.
			 * Or, between our read of this row and of the primary, the
			 * writer committed (maybe at or below the snapshot), this
			 * row was settled and the primary released (and maybe
			 * locked again since): our image of the row is stale.  A
			 * primary leaves the writer's lock only after every
			 * secondary is settled (I8), and a settled row never holds
			 * that PREWRITTEN lock again, so the row still holding it,
			 * read after the primary, rules the second case out; a
			 * changed row is read again (MRTX_CONFLICT, txn_read_row).
			 * An orphan past its own expiry is settled instead (recovery
			 * judges an orphan by it). */
			if (l.expiry_ms <= mrtx__now_ms())
				return 1;
			if ((rc = store_read_locks(st, &(store_rowref){ t, sr->row }, 1, &txn->arena,
			                           &again)))
				return rc;
			if (!again.has_lock || bytes_cmp(again.lock, sr->lock) != 0)
				return MRTX_CONFLICT;
			return as_pending(txn, sr, &l);
		}
		if (pl.state != LOCK_PREWRITTEN || lock_owner_dead(&pl.owner) ||
		    pl.expiry_ms <= mrtx__now_ms())
			return 1; /* decided, or abandoned: settle it */
		prow = l.primary.row;
		plock = p.lock;
	}
	if ((rc = store_push(st, pt, prow, plock, at + 1)) == MRTX_ENOTABLE) {
		mrtx__clearerr();
		return 1; /* (dropped since: as above) */
	}
	if (rc)
		return rc;
	return as_pending(txn, sr, &l);
}

/*
 * Decide a row read from the view whose lock is not STABLE (the table at
 * the top).  *pending is set when its transaction is not committed in the
 * view; *raw then keeps the lock as stored (to resolve).
 * Keeps I18 (DESIGN §10).
 */
static int decide(mrtx_txn *txn, store_view *v, const store_table *t, const store_filter *f,
                  store_row *sr, int *pending, mrtx_bytes *raw, lock_rec *l)
{
	store *st = txn->db->st;
	const store_table *pt;
	store_row p;
	lock_rec pl;
	int rc;

	*pending = 0;
	*raw = sr->lock;
	if ((rc = lockio_decode(st, t, sr->row, sr->lock, &txn->arena, l)))
		return rc;
	if (!(l->flags & LOCK_F_SECONDARY)) {
		if (l->state == LOCK_COMMITTED)
			return as_committed(txn, sr, l);
		*pending = 1;
		return as_pending(txn, sr, l);
	}
	if (l->state != LOCK_PREWRITTEN)
		return mrtx__seterr(MRTX_ECORRUPT, "table '%s': a secondary lock in state %s",
		                    t->name, lock_state_name(l->state));
	rc = lockio_ref_table(st, &l->primary, &pt);
	if (rc == MRTX_ENOTABLE) {
		*pending = 1;
		return as_pending(txn, sr, l);
	}
	if (rc == 0)
		rc = store_read_locks_in(st, v, &(store_rowref){ pt, l->primary.row }, 1, &txn->arena,
		                         &p);
	if (rc == STORE_NOT_IN_VIEW) { /* its table is newer than the view */
		*pending = 1;
		return as_pending(txn, sr, l);
	}
	if (rc)
		return rc;
	if (p.has_lock) {
		if ((rc = lockio_decode(st, pt, l->primary.row, p.lock, &txn->arena, &pl)))
			return rc;
		if (memcmp(pl.txn, l->txn, LOCK_TXNID_SIZE) == 0) {
			if (pl.state == LOCK_COMMITTED) {
				/* (at a past snapshot: only a commit at or below it) */
				if (txn->at && pl.commit_ts > txn->at) {
					*pending = 1;
					return as_pending(txn, sr, l);
				}
				if ((rc = apply_redo(txn, t, sr, f, l->redo, l->nredo, pl.commit_ts)))
					return rc;
				/* (the primary's commit_ts: the store stamps the
				 * commit point, after the secondaries' prewrite) */
				return as_committed(txn, sr, &pl);
			}
			if (pl.state == LOCK_STABLE)
				return mrtx__seterr(MRTX_ECORRUPT, "table '%s': a secondary lock whose "
				                    "primary was released by its own transaction "
				                    "(damaged store?)", t->name);
		}
	}
	*pending = 1;
	return as_pending(txn, sr, l);
}

/* A lock the view decided: settle it if its owner is dead or it expired
 * (a crashed writer's: readers still clean up after writers, DESIGN §6),
 * never wait; the read stands either way.  A pending one makes a
 * read-only commit validate. */
static int settle_quietly(mrtx_txn *txn, const store_table *t, mrtx_bytes row,
                          mrtx_bytes raw, int pending, const lock_rec *l)
{
	recover_opts ro = { 0, 0, 0 };
	int rc;

	if (pending)
		txn->must_validate = 1;
	/* a pending lock of a live writer (the usual case: a two-phase commit
	 * under way) could not be rolled back: no call (the view's bytes may be
	 * stale by now anyway).  A committed one is rolled forward whoever its
	 * owner (recovery.c). */
	if (store_read_only(txn->db->st) ||
	    (pending && !lock_owner_dead(&l->owner) && l->expiry_ms > mrtx__now_ms()))
		return 0;
	/* best effort: the read stands whatever settling it does or fails
	 * with (a live owner: ELOCKED; a store error is met again by the
	 * transaction's own writes, or by the next reader).  A fence it
	 * writes on an orphan's primary is the transaction's own, not a
	 * conflict (txn.c, txn_fences_apply). */
	rc = txn_resolve(txn, t, row, raw, &ro);
	return rc == MRTX_ENOMEM ? rc : 0;
}

int txn_snap_decide(mrtx_txn *txn, const store_table *t, const store_filter *f,
                    store_row *sr)
{
	uint8_t state, id[LOCK_TXNID_SIZE];
	mrtx_bytes raw;
	lock_rec l;
	int rc, pending;

	if (!sr->has_lock)
		return 0;
	if ((rc = lockio_peek(txn->db->st, t, sr->lock, &state, id)))
		return rc;
	if (state == LOCK_STABLE)
		return 0;
	if ((rc = decide(txn, txn->view, t, f, sr, &pending, &raw, &l)))
		return rc;
	return settle_quietly(txn, t, sr->row, raw, pending, &l);
}

int txn_read_row_snap(mrtx_txn *txn, const store_table *t, mrtx_bytes row,
                      const store_filter *f, store_row *out)
{
	recover_opts ro = { txn->db->lock_wait_ms, 0, 0 };
	store *st = txn->db->st;
	store_filter atf;
	int rc, i;

	for (i = 0; i < 64; i++) {
		uint8_t state, id[LOCK_TXNID_SIZE];
		mrtx_bytes raw;
		store_view *v;
		lock_rec l;
		int pending;

		if ((rc = txn_view_get(txn, &v)))
			return rc;
		if ((txn->at || txn->snap_live) && f != &atf) {
			atf = *f;
			atf.at = txn->at ? txn->at : txn->snap_ts;
			atf.live = txn->snap_live;
			if ((rc = txn_seen_use(txn, &atf)))
				return rc;
			f = &atf;
		}
		if (!v)
			return txn_read_row(txn, t, row, f, out);
		rc = store_read_row_in(st, v, t, row, f, &txn->arena, out);
		if (rc == STORE_NOT_IN_VIEW && txn->at)
			return mrtx__seterr(MRTX_ENOTABLE, "table '%s' did not exist at timestamp "
			                    "%llu", t->name, (unsigned long long)txn->at);
		if (rc == STORE_NOT_IN_VIEW) {
			/* a table created after the view: read it as it is now,
			 * and validate at commit */
			txn->must_validate = 1;
			return txn_read_row(txn, t, row, f, out);
		}
		if (rc)
			return rc;
		if (!out->has_lock)
			break;
		if ((rc = lockio_peek(st, t, out->lock, &state, id)))
			return rc;
		if (state == LOCK_STABLE)
			break;
		if ((rc = decide(txn, v, t, f, out, &pending, &raw, &l)))
			return rc;
		if (!pending || txn->view_used) {
			if ((rc = settle_quietly(txn, t, row, raw, pending, &l)))
				return rc;
			break;
		}
		/* Nothing read from this view yet: settle the lock as a read did
		 * before views (our own tail: wait for it), then take a new view.
		 * (Ended first: raw lives in the arena, and a settling write
		 * should not meet our own open read, lmdb_remap.) */
		txn_view_close(txn);
		if (!tail_wait(txn->db, id) &&
		    (rc = txn_resolve(txn, t, row, raw, &ro)))
			return rc; /* MRTX_ELOCKED: live past the wait, as before views */
	}
	if (i == 64) /* 64 new views, each with a new lock of another transaction */
		return mrtx__seterr(MRTX_ELOCKED, "table '%s': row keeps being locked", t->name);
	txn->view_used = 1;
	return 0;
}
