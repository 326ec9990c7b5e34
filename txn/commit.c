/*
 * commit.c - the commit pipeline (DESIGN §5); commit_int.h draws it.
 *
 *   txn_commit_run
 *     no row written ........................ commit_read_only
 *     a row written:
 *       refuse a stale snapshot, a read-only store
 *       end the view; a fresh txn id
 *       plan_build    rows, redo lists, strategy    commit_plan.c
 *       plan_blind    rows written unread           commit_plan.c
 *       loop:
 *         plan_expect   the locks to expect          commit_plan.c
 *         the strategy at plan_ts:
 *           COMMIT_ONE_ROW ..... commit_one_row.c
 *           COMMIT_ATOMIC ...... commit_atomic.c
 *           COMMIT_TWO_PHASE ... commit_two_phase.c
 *         1 (only blind guards failed, nothing left): plan_unblind, again
 *
 * A strategy runs at most twice: the second run has no blind row, so it
 * cannot return 1.
 */
#include "commit_int.h"

/*
 * A transaction that validates is serialized at its commit point, so each
 * of its reads must still hold there.  A read at a live snapshot (RADOS)
 * of a row committed above it showed the row as it was (txn_observe_at:
 * stale), and validation, which compares locks, cannot see that: the lock
 * it observed is the newer commit's.  Such a read beside reads of the
 * store as it is now (an index read current, a pending lock met) is a view
 * of no single moment, so the transaction conflicts.
 */
static int stale_validated(mrtx_txn *txn)
{
	if (!txn->snap_stale)
		return 0;
	txn->doom = MRTX_CONFLICT;
	return mrtx__seterr(MRTX_CONFLICT, "a row this transaction read at its snapshot (%llu) "
	                    "was committed by another transaction after it, and the "
	                    "transaction's other reads must be validated",
	                    (unsigned long long)txn->snap_ts);
}

/*
 * Read-only: when every read came from one view that met no pending lock
 * (snapread.c) it is a serializable snapshot, with nothing to validate;
 * otherwise validate.  Either way the commit vouches for what it read: in
 * sync mode a commit is visible a moment before it is durable (DESIGN §8),
 * so make what it could see durable first (store_sync_visible: nothing on
 * a store whose commits are durable when visible).
 */
static int commit_read_only(mrtx_txn *txn)
{
	uint64_t point;
	int rc;

	if (!txn->at && ((!txn->view && !txn->snap_live) || txn->must_validate) &&
	    ((rc = txn_scan_settle(txn)) || (rc = txn_fetch_lazy(txn)) ||
	     (rc = txn_fences_apply(txn)) || (rc = stale_validated(txn)) ||
	     (rc = txn_validate(txn))))
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

static int commit_execute(mrtx_txn *txn, commit_plan *p)
{
	uint64_t ts = plan_ts(txn, p);

	if (p->how == COMMIT_ONE_ROW)
		return commit_one_row(txn, p, ts);
	if (p->how == COMMIT_ATOMIC)
		return commit_atomic(txn, p, ts);
	return commit_two_phase(txn, p, ts);
}

int txn_commit_run(mrtx_txn *txn)
{
	commit_plan p;
	int rc;

	if (txn->nmutated == 0)
		return commit_read_only(txn); /* (a scan's deferred observations
		                                 * go to the tree if it validates) */
	if ((rc = txn_scan_settle(txn)))
		return rc;
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
	if ((rc = txn_fetch_lazy(txn)) || (rc = txn_fences_apply(txn)))
		return rc;
	txn_view_close(txn);
	if ((rc = lock_new_txnid(txn->id)))
		return rc;
	if ((rc = plan_build(txn, &p)) || (rc = plan_blind(txn, &p)))
		return rc;
	for (;;) {
		if ((rc = plan_expect(txn, &p)))
			return rc;
		if ((rc = commit_execute(txn, &p)) != 1 || p.nblind == 0)
			return rc;
		plan_unblind(&p);
	}
}
