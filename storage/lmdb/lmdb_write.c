/*
 * lmdb_write.c - the storage seam's writes on LMDB (the layout: lmdb_read.c,
 * lmdb_cell.c): conditional writes of rows, atomic writes with range
 * checks, and group commit.
 *
 * Batched writes run every op of a call in one LMDB write transaction, so
 * a protocol phase costs one commit, and concurrent callers' requests share
 * one transaction (write_batched); unbatched stores run one write
 * transaction per op, as a distributed engine would.
 */
#include "storage/lmdb/lmdb_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "storage/keyenc.h"

/* The version op's cells are written at (store_op.ts, .stamp). */
static uint64_t op_ts(const store_op *op)
{
	return op->stamp ? op->stamped : op->ts;
}

/* Apply m to the row whose key prefix P . enc(row) is key[0..plen); the
 * rest of key (MRTX_MAX_KEY + 16 bytes) is scratch. */
static int apply_mut(MDB_cursor *cur, const store_op *op, uint8_t *key, size_t plen,
                     const store_mut *m)
{
	if (m->kind != STORE_MUT_DEL_ROW && m->fid >= op->table->nfamilies)
		return MDB_BAD_VALSIZE; /* lockio_decode refuses such redo first */
	if (m->kind != STORE_MUT_DEL_ROW && store_family_dropped(op->table, m->fid))
		return 0; /* the family was dropped: its cells went with it */
	if (m->kind == STORE_MUT_DEL_ROW)
		return lmdb_cell_del_range(cur, op->table, key, plen, -1, op_ts(op));
	if (m->kind == STORE_MUT_DEL_FAMILY)
		return lmdb_cell_del_range(cur, op->table, key, plen, m->fid, op_ts(op));
	if (m->kind == STORE_MUT_RESTORE)
		return lmdb_cell_write(cur, op->table, key, plen, m->fid, m->qual, 0, m->value,
		                       m->ts);
	return lmdb_cell_write(cur, op->table, key, plen, m->fid, m->qual,
	                       m->kind != STORE_MUT_PUT, m->value, op_ts(op));
}

/* Are op's mutations all puts, in strictly ascending key order (family,
 * then qualifier bytewise, a prefix first)?  A transaction's buffered
 * cells are; put_cells_back relies on it. */
static int puts_ascending(const store_op *op)
{
	for (size_t i = 0; i < op->nmuts; i++) {
		const store_mut *m = &op->muts[i], *p;
		size_t n;
		int c;

		if (m->kind != STORE_MUT_PUT)
			return 0;
		if (i == 0)
			continue;
		p = m - 1;
		if (p->fid < m->fid)
			continue;
		if (p->fid > m->fid)
			return 0;
		n = MRTX_MIN(p->qual.size, m->qual.size);
		c = n ? memcmp(p->qual.data, m->qual.data, n) : 0;
		if (c > 0 || (c == 0 && p->qual.size >= m->qual.size))
			return 0;
	}
	return 1;
}

/*
 * The puts of op (puts_ascending) with cur standing on the row's lock key,
 * which sorts after every cell of the row: walk back from it.  A cell the
 * store already holds is usually the key just before the one written last
 * (a row rewritten with the cells it had): it is overwritten where the
 * cursor stands (MDB_CURRENT), without the search of the page that a put
 * makes.  Any other cell is put with that search, and the walk goes on
 * from where the put left the cursor (on the new key).
 */
static int put_cells_back(MDB_cursor *cur, const store_op *op, uint8_t *key, size_t plen)
{
	for (size_t i = op->nmuts; i-- > 0;) {
		const store_mut *m = &op->muts[i];
		size_t klen = plen + 1 + m->qual.size;
		MDB_val k, ck, cv;
		int rc, here;

		if (m->fid >= op->table->nfamilies || klen > MRTX_MAX_KEY)
			return MDB_BAD_VALSIZE; /* as apply_mut */
		key[plen] = m->fid;
		if (m->qual.size)
			memcpy(key + plen + 1, m->qual.data, m->qual.size);
		k = mv(key, klen);
		rc = mdb_cursor_get(cur, &ck, &cv, MDB_PREV); /* (its key and size only) */
		if (rc && rc != MDB_NOTFOUND)
			return rc;
		here = rc == 0 && ck.mv_size == klen && memcmp(ck.mv_data, key, klen) == 0;
		if (here && store_table_policy(op->table, m->fid).max_versions == 1 &&
		    cv.mv_size >= CELL_HDR && ((const uint8_t *)cv.mv_data)[8] & CELL_GONE) {
			/* overwrite the one version kept (lmdb_cell.c), where the cursor
			 * stands (GONE: no history behind it, which a larger policy
			 * before mrtx_alter_family may have left) */
			_Alignas(8) uint8_t buf[512];
			uint8_t *d = CELL_HDR + m->value.size + LMDB_SEAL <= sizeof(buf) ? buf :
			             mrtx__malloc(CELL_HDR + m->value.size + LMDB_SEAL);

			/* (a copy, not MDB_RESERVE: see put_lock) */
			if (!d)
				return ENOMEM;
			lmdb_cell_hdr(d, op_ts(op), CELL_GONE);
			if (m->value.size)
				memcpy(d + CELL_HDR, m->value.data, m->value.size);
			rc = lmdb_cput_sealed(cur, &k, d, CELL_HDR + m->value.size, MDB_CURRENT);
			if (d != buf)
				mrtx__free(d);
			if (rc)
				return rc;
			continue;
		}
		if ((rc = lmdb_cell_write(cur, op->table, key, plen, m->fid, m->qual, 0, m->value,
		                          op_ts(op))))
			return rc;
	}
	return 0;
}

/*
 * Ops run inside the write transaction of cursor cur, in two steps:
 * op_check evaluates the condition (sets op->result on failure, *pass),
 * op_write applies the op.  A nonzero return is an LMDB error that breaks
 * the transaction.  One cursor serves the whole op: after the lock lookup
 * it stands on the row's page, where LMDB finds the cells without
 * descending from the root again.
 */
typedef struct wctx {
	store *st;
	MDB_cursor *cur;
	/* the op whose lock key the cursor stands on, from op_check; NULL
	 * once anything may have moved it */
	const store_op *at_lock;
} wctx;

/* Keeps I3 (DESIGN §10). */
static int op_check(wctx *w, store_op *op, int *pass)
{
	uint8_t lk[MRTX_MAX_KEY + 1];
	MDB_cursor *cur = w->cur;
	size_t plen;
	MDB_val k, v;
	int rc, match;

	*pass = 0;
	if (!lmdb_row_fits(op->row, 1))
		return MDB_BAD_VALSIZE;
	/* the table is still this one, and not frozen for an acquisition */
	if ((rc = lmdb_table_wcheck(w->st, cur, op))) {
		if (rc != MRTX_ENOTABLE && rc != MRTX_CONFLICT)
			return rc;
		op->result = rc;
		return 0;
	}
	if (op->check_gen) {
		uint64_t gen;

		if ((rc = lmdb_wgen(w->st, cur, &gen)))
			return rc;
		if (gen != op->gen) {
			op->result = STORE_GEN_CHANGED;
			return 0;
		}
	}
	plen = tkey_put(lk, op->table, op->row);
	lk[plen] = LOCK_TAG;
	k = mv(lk, plen + 1);
	rc = lmdb_cget(cur, &k, &v, MDB_SET);
	if (rc && rc != MDB_NOTFOUND)
		return rc;
	if (op->cond.kind == STORE_IF_BELOW)
		match = op->cond.pred(rc == 0 ? v.mv_data : NULL, rc == 0 ? v.mv_size : 0,
		                      op->cond.arg);
	else if (op->cond.absent)
		match = rc == MDB_NOTFOUND;
	else
		match = rc == 0 && v.mv_size == op->cond.lock.size &&
		        memcmp(v.mv_data, op->cond.lock.data, v.mv_size) == 0;
	if (!match)
		op->result = MRTX_CONFLICT;
	else /* (for op_write's count of unsettled records) */
		op->was_unsettled = rc == 0 && lmdb_lock_unsettled(w->st, v.mv_data, v.mv_size);
	if (match && op->nmuts && op->muts[0].kind == STORE_MUT_RESTORE) {
		/* a restore: into a cell without any version */
		int have, e;

		if ((e = lmdb_cell_exists(cur, op->table, op->row, op->muts[0].fid,
		                          op->muts[0].qual, &have)))
			return e;
		if (have) {
			op->result = MRTX_EEXIST;
			match = 0;
		}
		rc = MDB_NOTFOUND; /* (the cursor left the lock) */
	}
	*pass = match;
	w->at_lock = rc == 0 ? op : NULL;
	return 0;
}

/* Put op's new lock at key k (flags: mdb_cursor_put's), its timestamp
 * patched in when the op is stamped (store_op.stamp; taken now unless an
 * atomic request took it for all its ops). */
static int put_lock(wctx *w, store_op *op, MDB_val *k, unsigned flags)
{
	_Alignas(8) uint8_t buf[256];
	MDB_val v = mv(op->new_lock.data, op->new_lock.size);
	uint8_t *d;
	int rc;

	if (!op->stamp)
		return lmdb_cput(w->cur, k, &v, flags);
	if (op->stamp_off > op->new_lock.size || op->new_lock.size - op->stamp_off < 8)
		return MDB_BAD_VALSIZE;
	/* (patched in a copy, not with MDB_RESERVE: LMDB before 0.9.28 takes
	 * MDB_CURRENT only alone, and would search the tree again) */
	d = op->new_lock.size + LMDB_SEAL <= sizeof(buf) ? buf :
	    mrtx__malloc(op->new_lock.size + LMDB_SEAL);
	if (!d)
		return ENOMEM;
	memcpy(d, op->new_lock.data, op->new_lock.size);
	for (unsigned i = 0; i < 8; i++)
		d[op->stamp_off + i] = (uint8_t)(op->stamped >> (8 * i));
	rc = lmdb_cput_sealed(w->cur, k, d, op->new_lock.size, flags);
	if (d != buf)
		mrtx__free(d);
	return rc;
}

/* op replaced the record op_check met (was_unsettled; none: 0) with
 * new_lock: the change in the count of unsettled records.  (A stamp patches
 * only the commit_ts, which does not decide settledness.)
 * Keeps I22 (DESIGN §10). */
static void note_unsettled(wctx *w, const store_op *op)
{
	w->st->w_udelta += lmdb_lock_unsettled(w->st, op->new_lock.data, op->new_lock.size) -
	                   op->was_unsettled;
}

static int op_write(wctx *w, store_op *op)
{
	uint8_t key[MRTX_MAX_KEY + 16], lk[MRTX_MAX_KEY + 1];
	MDB_cursor *cur = w->cur;
	size_t plen = tkey_put(key, op->table, op->row);
	MDB_val k, v;
	int rc, in_place;

	if (op->stamp && !op->stamped) /* (apply_op and apply_atomic stamp first) */
		return MDB_BAD_TXN;
	memcpy(lk, key, plen);
	lk[plen] = LOCK_TAG;
	k = mv(lk, plen + 1);
	in_place = w->at_lock == op && !op->delete_lock;
	w->at_lock = NULL;
	if (in_place) {
		/* the condition left the cursor on this lock: replace it there,
		 * without a search, before the cells move the cursor */
		if ((rc = put_lock(w, op, &k, MDB_CURRENT)))
			return rc;
		w->st->w_dirty = 1;
		note_unsettled(w, op);
		if (puts_ascending(op) && !lmdb_writes_dropped(op))
			return put_cells_back(cur, op, key, plen);
	}
	for (size_t i = 0; i < op->nmuts; i++)
		if ((rc = apply_mut(cur, op, key, plen, &op->muts[i])))
			return rc;
	if (in_place)
		return 0;
	if (op->delete_lock) {
		rc = lmdb_cget(cur, &k, &v, MDB_SET);
		if (rc == 0) {
			int was = lmdb_lock_unsettled(w->st, v.mv_data, v.mv_size);

			if ((rc = mdb_cursor_del(cur, 0)) == 0) {
				w->st->w_dirty = 1;
				w->st->w_udelta -= was;
			}
		}
		rc = rc == MDB_NOTFOUND ? 0 : rc;
	} else if ((rc = put_lock(w, op, &k, 0)) == 0) {
		w->st->w_dirty = 1;
		note_unsettled(w, op);
	}
	/* w_dirty: this LMDB txn surely changes the file, so its commit takes
	 * its txn id (lmdb_commit); an op that changed nothing does not say so */
	return rc;
}

static int apply_op(wctx *w, store_op *op)
{
	int rc, pass;

	/* The stamp first: a raise of the ceiling writes, and op_check leaves
	 * the cursor on the lock for op_write (a stamp whose op then fails its
	 * condition is simply never used). */
	if (op->stamp && (rc = lmdb_ts_stamp(w->st, mdb_cursor_txn(w->cur), op->stamp_floor,
	                                     &op->stamped)))
		return rc;
	if ((rc = op_check(w, op, &pass)) || !pass)
		return rc;
	if ((rc = op_write(w, op)) == 0)
		op->result = 0;
	return rc;
}

/*
 * A range check (store_rcheck) inside the write transaction: walk the
 * table's lock keys in the range, jumping from a row's first cell to its
 * lock key, and compare them with the expected rows and locks.
 * Keeps I11 (DESIGN §10).
 */
static int check_range(wctx *w, store_rcheck *c)
{
	uint8_t kb[MRTX_MAX_KEY + 1], rowbuf[MRTX_MAX_KEY + 1];
	const store_table *t = c->table;
	const store_range *r = &c->range;
	MDB_val k, v;
	size_t j = 0;
	int rc;

	c->result = MRTX_CONFLICT;
	if (r->lo.size) {
		k = lmdb_bound_key(kb, t, r->lo);
	} else {
		kb[0] = (uint8_t)(LT(t)->kp >> 8);
		kb[1] = (uint8_t)LT(t)->kp;
		k = mv(kb, TPFX);
	}
	rc = lmdb_cget(w->cur, &k, &v, MDB_SET_RANGE);
	while (rc == 0) {
		mrtx_bytes row;
		int is_lock;

		if (!tkey_is(t, k.mv_data, k.mv_size))
			break;
		if (lmdb_key_row(&k, rowbuf, &row, &is_lock))
			return MRTX_ECORRUPT;
		if (store_range_past(r, row))
			break;
		if (store_range_before(r, row)) {
			rc = lmdb_step_row(w->cur, t, row, 0, &k, &v);
			continue;
		}
		if (!is_lock) {
			size_t n = TPFX + keyenc_size(row.data, row.size);

			memcpy(kb, k.mv_data, n);
			kb[n] = LOCK_TAG;
			k = mv(kb, n + 1);
			rc = lmdb_cget(w->cur, &k, &v, MDB_SET_RANGE);
			if (rc || !(k.mv_size == n + 1 && memcmp(k.mv_data, kb, n + 1) == 0))
				continue; /* no lock: not a row; k is the next row's first key */
		}
		if (j == c->n ||
		    cmp_bytes(row.data, row.size, c->rows[j].data, c->rows[j].size) != 0 ||
		    v.mv_size != c->locks[j].size ||
		    memcmp(v.mv_data, c->locks[j].data, v.mv_size) != 0)
			return 0; /* a row not expected, or another lock */
		j++;
		rc = lmdb_step_row(w->cur, t, row, 0, &k, &v); /* (past its history too) */
	}
	if (rc && rc != MDB_NOTFOUND)
		return rc;
	if (j == c->n)
		c->result = 0;
	return 0;
}

/* An atomic request (store_write_atomic): every condition, then every
 * write or none.
 * Keeps I12 (DESIGN §10). */
static int apply_atomic(wctx *w, wreq *q)
{
	int rc, pass, all = 1;

	for (size_t i = 0; i < q->n; i++) {
		q->ops[i].result = 0;
		if ((rc = op_check(w, &q->ops[i], &pass)))
			return rc;
		all &= pass;
	}
	for (size_t i = 0; i < q->nchecks; i++) {
		if ((rc = check_range(w, &q->checks[i])))
			return rc;
		all &= q->checks[i].result == 0;
	}
	if (!all)
		return 0;
	{
		uint64_t floor = 0;
		int any = 0;

		for (size_t i = 0; i < q->n; i++)
			if (q->ops[i].stamp && !q->ops[i].check_only) {
				any = 1;
				floor = MRTX_MAX(floor, q->ops[i].stamp_floor);
			}
		if (any && (rc = lmdb_ts_stamp(w->st, mdb_cursor_txn(w->cur), floor, &floor)))
			return rc;
		for (size_t i = 0; i < q->n; i++)
			if (q->ops[i].stamp && !q->ops[i].check_only)
				q->ops[i].stamped = floor;
	}
	w->at_lock = NULL; /* later checks moved the cursor */
	for (size_t i = 0; i < q->n; i++)
		if (!q->ops[i].check_only && (rc = op_write(w, &q->ops[i])))
			return rc;
	q->applied = 1;
	return 0;
}

static int apply_req(wctx *w, wreq *q)
{
	int rc;

	q->applied = 0;
	for (size_t i = 0; i < q->n; i++)
		q->ops[i].stamped = 0; /* (a retry takes a new one) */
	if (q->atomic)
		return apply_atomic(w, q);
	for (size_t i = 0; i < q->n; i++)
		if ((rc = apply_op(w, &q->ops[i])))
			return rc;
	return 0;
}

static void req_results(wreq *q, int rc)
{
	q->applied = 0;
	for (size_t i = 0; i < q->n; i++)
		q->ops[i].result = rc;
}

/* The transaction's commit failed: maybe applied (LMDB may have written
 * the meta page before failing its write or sync), so no applied op may
 * be reported as surely not applied; a failed condition applied nothing. */
static void req_unknown(wreq *q, int rc)
{
	q->rc = rc;
	if (q->atomic && !q->applied)
		return;
	for (size_t i = 0; i < q->n; i++)
		if (q->ops[i].result == 0)
			q->ops[i].result = MRTX_EUNKNOWN;
}

/* An mdb_txn_commit error that surely wrote no meta page: the map or the
 * transaction's page list filled while LMDB was still allocating pages
 * (its free list), before any page reached the file; or a system error
 * that did not set the latch -- a failed write of its pages, such as a
 * full disk's, which LMDB reports before it syncs them or writes the
 * meta page (lmdb_commit_nowait).  Any other may have written the meta
 * page.  (The latch may also come from another thread's failed sync
 * meanwhile: then this says "maybe", which is never wrong.) */
static int commit_surely_failed(store *st, int lmdb_rc, int before)
{
	/* (before: the count of unsettled records failed to go in -- its
	 * seal, the tally, a damaged page -- and mdb_txn_commit never ran) */
	return before || lmdb_rc == MDB_MAP_FULL || lmdb_rc == MDB_TXN_FULL ||
	       (lmdb_rc > 0 && !lmdb_io_failed(st));
}

/* Run one request in its own write transaction; *need: as
 * lmdb_commit_nowait's (the caller makes it durable). */
static int write_txn(store *st, wreq *q, uint64_t *need)
{
	MDB_txn *txn;
	wctx w = { st, NULL, NULL };
	int rc, before;

	*need = 0;
	req_results(q, MRTX_ESTORE);
	if ((rc = lmdb_txn_begin(st, 0, &txn)))
		goto fail;
	if ((rc = mdb_cursor_open(txn, st->dbi, &w.cur))) {
		lmdb_wabort(st, txn);
		rc = lmdb_err(st, rc, "open cursor");
		goto fail;
	}
	mrtx__clearerr();
	if ((rc = apply_req(&w, q))) {
		lmdb_wabort(st, txn); /* closes the cursor */
		/* (MRTX codes come with their message, a stamp's say
		 * (lmdb_ts_stamp); a bare ECORRUPT is a malformed record) */
		if (rc == MRTX_ECORRUPT && !mrtx_errmsg()[0])
			rc = mrtx__seterr(rc, "store %s: the metadata generation record or a key "
			                  "is malformed", store_path(st));
		else if (!mrtx__is_code(rc))
			rc = lmdb_err(st, rc, "write row");
		goto fail;
	}
	if ((rc = lmdb_commit_nowait(st, txn, q->durable, need, &before))) {
		int raw = rc;

		rc = lmdb_err(st, rc, "commit");
		if (commit_surely_failed(st, raw, before))
			req_results(q, rc);
		else
			req_unknown(q, rc);
		return rc;
	}
	return 0;
fail:
	req_results(q, rc);
	return rc;
}

/*
 * A sync-mode group's late joiners.  A request waits for two commits: its
 * own group's, and the next one, whose data sync makes its meta page
 * durable (lmdb_durable).  Were a group written as soon as it is taken,
 * the threads a commit releases would queue while the next group is
 * already being written and join the one after: with T writer threads a
 * group would hold about T/3 requests.  So while requests of the last
 * groups are still to come back (st->returning: their threads are usually
 * a few microseconds of work away), the leader, having applied what it
 * took, waits for and takes what queues since, until LMDB_ROLL_US after
 * it began (requests still queued then go to the next leader), and
 * a group holds about T/2 (measured: 2.9 -> 4.0 requests a group with 8
 * threads).  The count is a guess -- a thread may go on to other work --
 * so a leader waits only while writers have come back within
 * LMDB_ROLL_US / 2 on average (st->ret_us; a return not measured counts
 * as slow), and the count is dropped when the time runs out or a leader
 * does not wait.  One writer thread never waits: its request takes its
 * count back before it leads.  The wait holds LMDB's writer lock, which
 * other processes may be waiting for: hence the short bound, and no wait
 * while other processes have been committing between ours (st->foreign).
 * Returns the first request taken (linked after *tail, which moves to the
 * last), or NULL when the group is done.
 */
#define LMDB_ROLL_US 150u

/* The store this thread last wrote through, and when its write returned:
 * how soon writers come back (st->ret_us) decides whether to wait. */
static _Thread_local const store *tl_store;
static _Thread_local uint64_t tl_done;

static wreq *take_more(store *st, wreq **tail, uint64_t until)
{
	wreq *got = NULL;

	pthread_mutex_lock(&st->gmu);
	while (!st->gq_head && st->returning && mrtx__mono_us() < until) {
		struct timespec ts = mrtx__mono_timespec(until);

		pthread_cond_timedwait(&st->lcv, &st->gmu, &ts);
	}
	if (mrtx__mono_us() >= until) /* (what queued goes to the next leader) */
		st->returning = 0;
	else if ((got = st->gq_head)) {
		st->gq_head = NULL;
		st->gq_tail = &st->gq_head;
		(*tail)->next = got;
		for (wreq *q = got; q; q = q->next) {
			q->taken = 1;
			st->inflight++;
			*tail = q;
		}
	}
	pthread_mutex_unlock(&st->gmu);
	return got;
}

/*
 * Group commit: every request queued while a leader runs is applied by the
 * next leader in one LMDB write transaction (one fsync for all of them).
 * Requests stay independent: each op is conditional on its own row (an
 * atomic request on all of its own), and requests are applied in queue
 * order.  If the shared transaction fails, each request is retried alone
 * so that one request's error is its own.  roll: take late joiners
 * (take_more).
 */
static void write_group(store *st, wreq *head, int roll, uint64_t *need)
{
	MDB_txn *txn;
	wctx w = { st, NULL, NULL };
	int durable = 0, rc, before;
	uint64_t until = roll ? mrtx__mono_us() + LMDB_ROLL_US : 0;
	wreq *tail = head, *more;

	*need = 0;
	if (!head->next && !roll) {
		head->rc = write_txn(st, head, need);
		return;
	}
	for (wreq *r = head; r; r = r->next)
		tail = r;
	more = head;
	if ((rc = lmdb_txn_begin(st, 0, &txn)))
		goto alone;
	if ((rc = mdb_cursor_open(txn, st->dbi, &w.cur))) {
		lmdb_wabort(st, txn);
		goto alone;
	}
	do {
		for (wreq *r = more; r; r = r->next) {
			req_results(r, MRTX_ESTORE);
			durable |= r->durable;
			if ((rc = apply_req(&w, r))) {
				lmdb_wabort(st, txn);
				goto alone;
			}
		}
	} while (roll && (more = take_more(st, &tail, until)));
	if ((rc = lmdb_commit_nowait(st, txn, durable, need, &before)) == 0) {
		for (wreq *r = head; r; r = r->next)
			r->rc = 0;
		return;
	}
	{
		int raw = rc;

		rc = lmdb_err(st, rc, "commit");
		for (wreq *r = head; r; r = r->next) {
			if (commit_surely_failed(st, raw, before)) {
				r->rc = rc;
				req_results(r, rc);
			} else {
				req_unknown(r, rc);
			}
		}
	}
	return;
	/* Nothing was applied (a row write failed; LMDB aborted the
	 * transaction): each request alone, so its error is its own. */
alone:
	for (wreq *r = head; r; r = r->next) {
		uint64_t n1;

		r->rc = write_txn(st, r, &n1);
		*need = MRTX_MAX(*need, n1);
	}
}

static int write_batched(store *st, wreq *me)
{
	uint64_t need;

	pthread_mutex_lock(&st->gmu);
	*st->gq_tail = me;
	st->gq_tail = &me->next;
	if (st->returning) {
		st->returning--;
		pthread_cond_signal(&st->lcv);
	}
	if (st->durability == MRTX_SYNC) { /* how soon this thread came back
	                                     * (not known: slow) */
		uint64_t d = tl_store == st ? mrtx__mono_us() - tl_done : 10000u;

		st->ret_us = (st->ret_us * 7 + MRTX_MIN(d, 10000u)) / 8;
	}
	while (!me->done) {
		wreq *batch, *next;
		size_t mine = 0;
		int roll;

		if (st->leader || me->taken) { /* (taken: a leader has it, or
		                                  * makes it durable) */
			pthread_cond_wait(&st->gcv, &st->gmu);
			continue;
		}
		st->leader = 1;
		/* Wait for late joiners only while this process's writers come
		 * back quickly and other processes are not writing too (they
		 * would wait on the writer lock meanwhile); counts left while
		 * not waiting are stale. */
		roll = st->returning != 0 && st->ret_us < LMDB_ROLL_US / 2 &&
		       atomic_load_explicit(&st->foreign, memory_order_relaxed) < 512;
		if (!roll)
			st->returning = 0;
		batch = st->gq_head;
		st->gq_head = NULL;
		st->gq_tail = &st->gq_head;
		for (wreq *q = batch; q; q = q->next) {
			q->taken = 1;
			st->inflight++;
		}
		pthread_mutex_unlock(&st->gmu);
		write_group(st, batch, roll, &need);
		pthread_mutex_lock(&st->gmu);
		for (wreq *q = batch; q; q = q->next) /* (with take_more's) */
			mine++;
		st->leader = 0;
		pthread_cond_broadcast(&st->dcv); /* a commit: durable waiters */
		if (need) {
			/* Let the next group write while this one's commit is made
			 * durable: its sync may well do it (lmdb_durable).  Busy:
			 * requests queued, or taken by other groups still waiting
			 * (their threads' next commits come soon). */
			int busy, rc;

			busy = st->gq_head != NULL || st->inflight > mine;
			pthread_cond_broadcast(&st->gcv);
			pthread_mutex_unlock(&st->gmu);
			if ((rc = lmdb_durable(st, need, busy))) {
				rc = lmdb_err(st, rc, "sync");
				for (wreq *q = batch; q; q = q->next)
					req_unknown(q, rc);
			}
			pthread_mutex_lock(&st->gmu);
		}
		for (; batch; batch = next) {
			next = batch->next; /* a finished waiter's wreq dies with its frame */
			batch->done = 1;
			st->inflight--;
		}
		if (st->durability == MRTX_SYNC)
			st->returning += mine;
		pthread_cond_broadcast(&st->gcv);
	}
	pthread_mutex_unlock(&st->gmu);
	if (st->durability == MRTX_SYNC) {
		tl_store = st;
		tl_done = mrtx__mono_us();
	}
	return me->rc;
}

/* The injected STORE_FAULT_APPLIED: the call ran; its reply is "lost". */
static int lost_reply(store *st, store_op *ops, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ops[i].result == 0)
			ops[i].result = MRTX_EUNKNOWN;
	return mrtx__seterr(MRTX_ESTORE, "store %s: write rows: reply lost (injected fault)",
	                    store_path(st));
}

/* After a write: name a dropped table in the caller's error, and catch up
 * with a schema change a write met (lmdb_table_wcheck). */
static int write_done(store *st, store_op *ops, size_t n, int rc)
{
	if (atomic_load_explicit(&st->trefresh, memory_order_relaxed) &&
	    atomic_exchange(&st->trefresh, 0))
		lmdb_store_table_refresh(st); /* best effort: reads refresh too */
	if (rc == 0)
		for (size_t i = 0; i < n; i++)
			if (ops[i].result == MRTX_ENOTABLE)
				return mrtx__seterr(MRTX_ENOTABLE, "table '%s' was dropped",
				                    ops[i].table->name);
	return rc;
}

int lmdb_store_write_rows(store *st, store_op *ops, size_t n)
{
	int first = 0, durable = 0;

	if (n == 0)
		return 0;
	if ((first = STORE_FAULT_W(st, "write rows (injected fault)")) &&
	    first != STORE_FAULT_APPLIED) {
		for (size_t i = 0; i < n; i++)
			ops[i].result = first;
		return first;
	}
	atomic_fetch_add_explicit(&st->write_calls, 1, memory_order_relaxed);
	for (size_t i = 0; i < n; i++)
		durable |= ops[i].durable;
	if (!st->unbatched) {
		wreq me = { .ops = ops, .n = n, .durable = durable };
		int rc = write_batched(st, &me);

		return first ? lost_reply(st, ops, n) : write_done(st, ops, n, rc);
	}
	for (size_t i = 0; i < n; i++) {
		wreq one = { .ops = &ops[i], .n = 1, .durable = durable };
		uint64_t need;
		int rc = write_txn(st, &one, &need), fp;

		if (rc == 0 && (rc = lmdb_durable(st, need, 0))) {
			rc = lmdb_err(st, rc, "sync");
			req_unknown(&one, rc);
		}

		if ((fp = FAILPOINT(FP_STORE_AFTER_ROW_WRITE)) && rc == 0) {
			rc = fp; /* applied, but reported failed */
			ops[i].result = MRTX_EUNKNOWN;
		}
		if (rc && !first)
			first = rc;
	}
	return first == STORE_FAULT_APPLIED ? lost_reply(st, ops, n) :
	       write_done(st, ops, n, first);
}


int lmdb_store_write_atomic(store *st, store_op *ops, size_t n, store_rcheck *checks,
                            size_t nchecks, int *applied)
{
	wreq me = { .ops = ops, .n = n, .checks = checks, .nchecks = nchecks, .atomic = 1 };
	int first, rc;

	*applied = 0;
	for (size_t i = 0; i < n; i++)
		me.durable |= ops[i].durable;
	if ((first = STORE_FAULT_W(st, "write rows (injected fault)")) &&
	    first != STORE_FAULT_APPLIED) {
		for (size_t i = 0; i < n; i++)
			ops[i].result = first;
		return first;
	}
	atomic_fetch_add_explicit(&st->write_calls, 1, memory_order_relaxed);
	rc = write_batched(st, &me);
	*applied = me.applied && rc == 0;
	if (first) {
		*applied = 0;
		if (me.applied)
			return lost_reply(st, ops, n);
	}
	return write_done(st, ops, n, rc);
}
