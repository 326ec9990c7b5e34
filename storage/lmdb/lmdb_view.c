/*
 * lmdb_view.c - a view of an LMDB store: one read transaction a
 * transaction keeps open for all its reads (store_view_open), pinned to
 * its snapshot timestamp and its count of unsettled locks (lmdb_ts.c), and
 * never behind a commit whose writer died before publishing it.
 */
#include "storage/lmdb/lmdb_int.h"

/*
 * Is read txn txn's snapshot the one its id names, and the newest?
 *
 * LMDB begins a read by taking the last committed id V from its lock
 * region and then reading the meta page in slot V & 1; a reader held up
 * between the two while two commits land reads the meta of V + 2 (the
 * slot's next user) under id V -- a consistent snapshot, but a newer one
 * than V, whose timestamp and count of unsettled locks (ring[V]) would
 * then be wrong for it: VIEW_INEXACT.  (Seen: views of id V holding
 * unsettled records with ring[V] settled, under `mrtx chaos
 * --unbatched`.)  The newest meta page still being V's, after the read
 * began, proves the slot was not rewritten before it was read:
 * VIEW_EXACT.
 *
 * A newest meta page of V + 1 while the id LMDB publishes to readers is
 * still V (read by renewing a second read transaction, only in that case)
 * is a writer between writing its meta page and publishing its id.  The
 * snapshot of V is sound -- V + 2 begins only after V + 1 has published --
 * but it lacks V + 1, a commit already in the file: VIEW_BEHIND.  A live
 * writer publishes a moment later (a busy store meets this often), and
 * its commit has not returned: the view may lack it.  A writer killed in
 * between leaves V + 1 unpublished until the next writer takes LMDB's
 * writer lock, whose owner-died recovery publishes the newest meta page.
 * Until then every view would miss that commit, and a transaction that
 * met its locks and validates would find them changed under it by a
 * commit that predates its view.
 * Keeps I16 (DESIGN §10).
 */
enum { VIEW_INEXACT, VIEW_EXACT, VIEW_BEHIND, VIEW_DAMAGED };

static int view_exact(store *st, MDB_txn *txn)
{
	MDB_envinfo info;
	lmdb_rtxn probe;
	uint64_t v = mdb_txn_id(txn);
	int n = atomic_load_explicit(&store__lmdb_inexact_views, memory_order_relaxed), ok;

	if (n > 0 && atomic_compare_exchange_strong(&store__lmdb_inexact_views, &n, n - 1))
		return VIEW_INEXACT; /* (test hook: as if two commits landed meanwhile) */
	if (mdb_env_info(st->env, &info) != 0 || info.me_last_txnid > v + 1)
		return VIEW_INEXACT;
	if (info.me_last_txnid == v)
		return VIEW_EXACT;
	/* A writer writes its meta page before it publishes its id, so the id
	 * published is never past the newest meta page's: one that is says
	 * the lock region is damaged, and the view holds an older commit
	 * under a newer id (the slot V & 1 is V - 2's). */
	if (info.me_last_txnid < v)
		return VIEW_DAMAGED;
	if (lmdb_rtxn_begin(st, &probe)) {
		mrtx__clearerr();
		return VIEW_INEXACT;
	}
	ok = mdb_txn_id(probe.txn) == v; /* (the id published now) */
	lmdb_rtxn_end(st, &probe);
	return ok ? VIEW_BEHIND : VIEW_INEXACT;
}

/* A view whose ring entry is missing: VIEW_DAMAGED when its id is past the
 * newest meta page's (view_exact says why that is damage), else
 * VIEW_INEXACT. */
static int view_ahead(store *st, MDB_txn *txn)
{
	MDB_envinfo info;

	if (mdb_env_info(st->env, &info) == 0 && info.me_last_txnid < mdb_txn_id(txn))
		return VIEW_DAMAGED;
	return VIEW_INEXACT;
}

/* A commit in the file that LMDB has not published (VIEW_BEHIND, a few
 * times over) whose writer is dead (lmdb_ts_writer_dead: the process that
 * recorded its ring entry is gone): take LMDB's writer lock and let it go.
 * Its lock comes back owner-died, and LMDB publishes the newest meta page
 * before granting it; nobody else holds it (a writer that took it since
 * published).  A live writer is never waited for: its commit has not
 * returned, and the view may lack it, as any reader's may.  A read-only
 * handle cannot take the lock, and keeps the older snapshot.  Returns
 * whether it took the lock. */
static int view_catch_up(store *st, uint64_t txnid)
{
	MDB_txn *w;

	if (st->head.read_only || !lmdb_ts_writer_dead(st, txnid))
		return 0;
	if (lmdb_txn_begin(st, 0, &w)) {
		mrtx__clearerr();
		return 0;
	}
	lmdb_wabort(st, w);
	return 1;
}

/* Keeps I16 (DESIGN §10). */
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
	 * (written by an mrtx older than the ring).  One behind a commit not
	 * yet published is taken again, and after a few tries, if its writer
	 * died, the writer lock is taken once to have it published
	 * (view_catch_up). */
	for (int tries = 0, inexact = 0, behind = 0;; tries++) {
		if ((rc = lmdb_rtxn_begin(st, &rt)))
			return rc;
		int ring = lmdb_ts_of_view(st, rt.txn, &ts, &settled);
		int e = ring == 0 ? view_exact(st, rt.txn) : view_ahead(st, rt.txn);

		if (e == VIEW_DAMAGED) {
			uint64_t id = mdb_txn_id(rt.txn);

			lmdb_rtxn_end(st, &rt);
			return mrtx__seterr(MRTX_ECORRUPT, "%s/lock.mdb publishes LMDB "
			                    "transaction %llu, past the newest commit in "
			                    "data.mdb: the lock file is damaged (stop every "
			                    "process using the store and remove lock.mdb; the "
			                    "next open makes it anew)", st->path,
			                    (unsigned long long)id);
		}
		if (ring == 0) {
			if (e == VIEW_EXACT || (e == VIEW_BEHIND && behind > 4))
				break;
			if (e == VIEW_BEHIND && ++behind == 4) {
				uint64_t next = mdb_txn_id(rt.txn) + 1;

				lmdb_rtxn_end(st, &rt);
				if (!view_catch_up(st, next))
					behind = 5; /* (a live writer: the next try stands) */
				continue;
			}
			/* two commits landed during each of a few tries: take
			 * the view with its timestamp unknown and its locks
			 * read (settled = 0) */
			if (e == VIEW_INEXACT && ++inexact == 8) {
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
