/*
 * rados_write.c - the storage seam's writes on RADOS (layout in
 * rados_int.h; reads: rados_read.c), and readers' pushes (store_push).
 *
 * store_write_rows groups the ops by tablet and sends one compound write
 * per tablet, all at once: create (idempotent), the gen guard, one
 * omap_cmp guard per row on its lock key, then each row's mutations in
 * order and its new lock.  A false guard cancels the whole compound op;
 * the rows whose own guard held are then sent again alone, so ops stay
 * independent as the seam promises.
 */
#include "storage/rados/rados_int.h"
#include "storage/versions.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const uint8_t rados_onepc_key[2] = { RK_GEN_0, 'W' }; /* (after the state key) */

uint64_t rados_mark_value(mrtx_bytes v)
{
	uint64_t m = 0;

	for (size_t b = 0; b < v.size && b < 8; b++)
		m = m << 7 | (((const uint8_t *)v.data)[b] & 0x7f);
	return m;
}

/* A librados result as an op result: EUNKNOWN when it may have applied. */
static int op_result(int r)
{
	if (r == 0)
		return 0;
	if (r == -ETIMEDOUT || r == -ESHUTDOWN || r == -ECONNRESET || r == -EIO)
		return MRTX_EUNKNOWN;
	if (r == -ENOSPC || r == -EDQUOT)
		return MRTX_EFULL;
	if (r == -EMSGSIZE || r == -E2BIG || r == -EFBIG)
		return MRTX_ETOOBIG;
	return MRTX_ESTORE;
}

/* --------------------------------------------------------------- writes */

/* One compound write on one tablet: the ops it carries. */
typedef struct rgroup {
	const char *oid;
	size_t *idx; /* indexes into the caller's ops */
	size_t n;
	int gen_guard;
	uint64_t gen_of;
	uint8_t gen[8];
	int gen_prval;
	int state_prval; /* the tablet-state guard's */
	int acquire;     /* every op takes a new lock: guarded by the freeze
	                    mark's absence (rados_ddl.c) */
	int frz_prval;
	int *prval; /* per op's lock guard */
	int *prval2; /* per op's guard that its lock is still what pre read */
	int *prval3; /* per op's guard that no reader pushed the row above its
	                stamp (oracle-stamped ops: pushed()) */
	const store_row *pre; /* per op (caller's index), the row's
	                         live cells read first (rados_vmut_needs_pre) */
	int atomic;         /* store_write_atomic's: check_only ops, no push
	                       marks, the one-phase mark guarded and raised */
	uint8_t mark[8];    /* ... to this stamp (rgen digits) */
	int mark_prval;
	rados_write_op_t wop;
	rados_completion_t comp;
	int result;
} rgroup;

/* Is op a commit point stamped by the oracle, which readers may push
 * (store_push)?  One-row commits are one write: no lock to meet. */
static int pushed(const store_op *op)
{
	return op->stamp && op->stamp != STORE_STAMP_ONE_ROW && op->stamped;
}

/* Build g's compound op from ops[g->idx[...]]. */
static int group_build(const rstore *rs, rgroup *g, store_op *ops, mrtx_arena *a)
{
	uint8_t *lk = arena_alloc(a, RCELL_MAX), *dk = arena_alloc(a, RCELL_MAX),
	        *cp = arena_alloc(a, RCELL_MAX), *kb = arena_alloc(a, RCELL_MAX);

	if (!lk || !dk || !cp || !kb || !(g->wop = rados_create_write_op()))
		return MRTX_ENOMEM;
	rados_write_op_create(g->wop, LIBRADOS_CREATE_IDEMPOTENT, NULL);
	/* first: the tablet is open (not retired by a split, nor still being
	 * filled by one) */
	rados_write_op_omap_cmp2(g->wop, (const char *)rados_state_key, LIBRADOS_CMPXATTR_OP_EQ, "",
	                         2, 0, &g->state_prval);
	/* a drop or truncate has frozen the table: no new lock (DESIGN §3.4) */
	if (g->acquire)
		rados_write_op_omap_cmp2(g->wop, (const char *)rados_freeze_key,
		                         LIBRADOS_CMPXATTR_OP_EQ, "", 2, 0, &g->frz_prval);
	if (g->gen_guard)
		rados_write_op_omap_cmp2(g->wop, (const char *)rados_gen_key,
		                         LIBRADOS_CMPXATTR_OP_LT, (const char *)g->gen, 2, 8,
		                         &g->gen_prval);
	if (g->atomic) /* no atomic commit stamped later has landed here */
		rados_write_op_omap_cmp2(g->wop, (const char *)rados_onepc_key,
		                         LIBRADOS_CMPXATTR_OP_LT, (const char *)g->mark, 2, 8,
		                         &g->mark_prval);
	for (size_t j = 0; j < g->n; j++) {
		const store_op *op = &ops[g->idx[j]];
		size_t lkn = rados_lock_key(lk, op->row);
		mrtx_bytes expect = MRTX_BYTES("", 0);
		int cmp = LIBRADOS_CMPXATTR_OP_EQ;

		if (op->cond.kind == STORE_IF_BELOW) {
			/* no lock (the empty value), or one whose order key is below */
			expect = op->cond.below;
			cmp = LIBRADOS_CMPXATTR_OP_LT;
		} else if (!op->cond.absent && rados_lock_value(rs, op->cond.lock, a, &expect)) {
			return MRTX_ENOMEM;
		}
		rados_write_op_omap_cmp2(g->wop, (const char *)lk, cmp,
		                         expect.data ? expect.data : "", lkn, expect.size,
		                         &g->prval[j]);
		if (!g->atomic && pushed(op)) {
			/* a commit point: no reader at a snapshot at or above its
			 * stamp met the lock and read past it (store_push) */
			uint8_t *pk = arena_alloc(a, 1 + rkey_size(op->row.data, op->row.size)),
			        *lim = arena_alloc(a, 8);

			if (!pk || !lim)
				return MRTX_ENOMEM;
			rgen_put(lim, op->stamped + 1);
			rados_write_op_omap_cmp2(g->wop, (const char *)pk, LIBRADOS_CMPXATTR_OP_LT,
			                         (const char *)lim, rados_push_key(pk, op->row), 8,
			                         &g->prval3[j]);
		}
		if (g->pre && g->pre[g->idx[j]].row.data) {
			/* the row's cells were read first (a deletion writes a
			 * tombstone per live cell): its lock must still be the one
			 * read beside them, or a commit that landed in between
			 * (one a `below` guard lets through) could keep a cell */
			const store_row *pr = &g->pre[g->idx[j]];
			mrtx_bytes was = MRTX_BYTES("", 0);

			if (pr->has_lock && rados_lock_value(rs, pr->lock, a, &was))
				return MRTX_ENOMEM;
			rados_write_op_omap_cmp2(g->wop, (const char *)lk, LIBRADOS_CMPXATTR_OP_EQ,
			                         was.data ? was.data : "", lkn, was.size,
			                         &g->prval2[j]);
		}
	}
	for (size_t j = 0; j < g->n; j++) {
		const store_op *op = &ops[g->idx[j]];
		size_t lkn = rados_lock_key(lk, op->row), dkn = rados_desc_key(dk, op->row),
		       cpn = rados_cell_prefix(cp, op->row);
		const char *keys[2] = { (const char *)lk, (const char *)dk };
		size_t kl[2] = { lkn, dkn };

		if (op->check_only)
			continue;
		if (g->atomic) { /* the row's last atomic commit: this one */
			const char *tk[1] = { (const char *)kb }, *tv[1] = { (const char *)g->mark };
			size_t tkl[1] = { rados_onepc_row_key(kb, op->row) }, tvl[1] = { 8 };

			rados_write_op_omap_set2(g->wop, tk, tv, tkl, tvl, 1);
		}
		for (size_t m = 0; m < op->nmuts; m++) {
			int rc = rados_vmut_add(op->table, g->wop, cp, cpn, &op->muts[m],
			                        op->stamp ? op->stamped : op->ts,
			                        g->pre ? &g->pre[g->idx[j]] : NULL, kb, a);

			if (rc)
				return rc;
		}
		if (!g->atomic && pushed(op)) { /* (its reader's mark is spent) */
			const char *pk[1] = { (const char *)kb };
			size_t pkl[1] = { rados_push_key(kb, op->row) };

			rados_write_op_omap_rm_keys2(g->wop, pk, pkl, 1);
		}
		if (op->delete_lock) {
			rados_write_op_omap_rm_keys2(g->wop, keys, kl, 2);
		} else {
			mrtx_bytes nl;
			const char *vals[2];
			size_t vl[2];

			if (rados_lock_value(rs, op->new_lock, a, &nl))
				return MRTX_ENOMEM;
			vals[0] = nl.data;
			vals[1] = "";
			vl[0] = nl.size;
			vl[1] = 0;
			rados_write_op_omap_set2(g->wop, keys, vals, kl, vl, 2);
		}
	}
	if (g->atomic) {
		const char *mk[1] = { (const char *)rados_onepc_key }, *mv[1] = { (const char *)g->mark };
		size_t mkl[1] = { 2 }, mvl[1] = { 8 };

		rados_write_op_omap_set2(g->wop, mk, mv, mkl, mvl, 1);
	}
	return 0;
}

/*
 * Send groups g[0..ng) at once and set each op's result.  Ops of a group
 * cancelled by another op's guard go to *retry (they are sent again alone).
 */
static int groups_run(rstore *rs, rgroup *g, size_t ng, store_op *ops, mrtx_arena *a,
                      size_t *retry, size_t *nretry)
{
	int rc = 0;

	for (size_t i = 0; i < ng; i++) {
		int r;

		g[i].comp = NULL;
		if ((rc = group_build(rs, &g[i], ops, a)))
			break;
		if ((r = rados_aio_create_completion2(NULL, NULL, &g[i].comp)) < 0) {
			g[i].comp = NULL;
			rc = mrtx__seterr(MRTX_ENOMEM, "rados: no completion: %s", strerror(-r));
			break;
		}
		r = rados_aio_write_op_operate(g[i].wop, rconn_ioctx(rs->conn), g[i].comp, g[i].oid,
		                               NULL, LIBRADOS_OPERATION_NOFLAG);
		if (r < 0) {
			rados_aio_release(g[i].comp);
			g[i].comp = NULL;
			g[i].result = r;
		}
	}
	atomic_fetch_add_explicit(&rs->write_txns, ng, memory_order_relaxed);
	for (size_t i = 0; i < ng; i++) {
		if (g[i].comp) {
			rados_aio_wait_for_complete(g[i].comp);
			g[i].result = rados_aio_get_return_value(g[i].comp);
			rados_aio_release(g[i].comp);
		} else if (rc && !g[i].result) {
			g[i].result = -ENOMEM; /* never sent */
		}
		if (g[i].wop)
			rados_release_write_op(g[i].wop);
		g[i].wop = NULL;
	}
	for (size_t i = 0; i < ng; i++) {
		int gr = g[i].result;

		for (size_t j = 0; j < g[i].n; j++) {
			store_op *op = &ops[g[i].idx[j]];

			if (gr == 0)
				op->result = 0;
			else if (gr != -ECANCELED)
				/* (never sent: the reason it was not, MRTX_ENOMEM or a
				 * refused write, MRTX_EINVAL) */
				op->result = g[i].result == -ENOMEM && !g[i].comp ?
				             (rc == MRTX_EINVAL ? MRTX_EINVAL : MRTX_ENOMEM) :
				             op_result(gr);
			else if (g[i].state_prval == -ECANCELED)
				op->result = RMOVED; /* nothing applied: settle, send again */
			else if (g[i].acquire && g[i].frz_prval == -ECANCELED)
				op->result = mrtx__seterr(MRTX_CONFLICT, "table '%s' is being dropped or "
				                          "truncated: no new lock may be taken in it",
				                          op->table->name);
			else if (g[i].gen_guard && g[i].gen_prval == -ECANCELED)
				op->result = STORE_GEN_CHANGED;
			else if (g[i].prval[j] == -ECANCELED || g[i].prval2[j] == -ECANCELED)
				op->result = MRTX_CONFLICT;
			else if (g[i].prval3[j] == -ECANCELED)
				op->result = RPUSHED; /* stamped again, sent again */
			else if (g[i].n == 1)
				op->result = MRTX_CONFLICT; /* its only guard */
			else
				retry[(*nretry)++] = g[i].idx[j];
		}
		if (gr && gr != -ECANCELED && rc == 0)
			rc = rconn_error(rs->conn, gr, "write rows", g[i].oid);
	}
	if (rc == RCONN_TIMEDOUT)
		rc = mrtx__seterr(MRTX_ESTORE, "%s", mrtx_errmsg());
	return rc;
}

/* Write ops[idx[0..n)], grouped by tablet when `group` (else one each). */
static int write_some(rstore *rs, store_op *ops, const store_row *pre, const size_t *idx,
                      size_t n, int group, mrtx_arena *a, size_t *retry, size_t *nretry)
{
	rgroup *g = arena_alloc(a, n * sizeof(*g));
	size_t ng = 0;

	if (!g)
		return MRTX_ENOMEM;
	for (size_t k = 0; k < n; k++) {
		store_op *op = &ops[idx[k]];
		const char *oid = rados_tablet_of(op->table, op->row)->oid;
		rgroup *gr = NULL;

		if (group)
			for (size_t i = 0; i < ng; i++)
				if (strcmp(g[i].oid, oid) == 0 && g[i].gen_guard == op->check_gen &&
				    (!op->check_gen || g[i].gen_of == op->gen) &&
				    g[i].acquire == !!op->acquire) {
					gr = &g[i];
					break;
				}
		if (!gr) {
			gr = &g[ng++];
			memset(gr, 0, sizeof(*gr));
			gr->oid = oid;
			if (!(gr->idx = arena_alloc(a, n * sizeof(*gr->idx))) ||
			    !(gr->prval = arena_alloc(a, n * sizeof(*gr->prval))) ||
			    !(gr->prval2 = arena_alloc(a, n * sizeof(*gr->prval2))) ||
			    !(gr->prval3 = arena_alloc(a, n * sizeof(*gr->prval3))))
				return MRTX_ENOMEM;
			gr->gen_guard = op->check_gen;
			gr->gen_of = op->gen;
			gr->acquire = !!op->acquire;
			gr->pre = pre;
			if (op->check_gen)
				rgen_put(gr->gen, op->gen + 1); /* stored < gen + 1 */
		}
		gr->prval[gr->n] = 0;
		gr->prval2[gr->n] = 0;
		gr->prval3[gr->n] = 0;
		gr->idx[gr->n++] = idx[k];
	}
	return groups_run(rs, g, ng, ops, a, retry, nretry);
}

/* Rows created in a tablet may have grown it past the bound: each such
 * tablet is offered to the split policy once. */
static void split_candidates(rstore *rs, store_op *ops, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *oid;
		int seen = 0;

		if (ops[i].result != 0 || !ops[i].cond.absent || ops[i].delete_lock)
			continue;
		oid = rados_tablet_of(ops[i].table, ops[i].row)->oid;
		for (size_t j = 0; j < i && !seen; j++)
			seen = ops[j].result == 0 && ops[j].cond.absent && !ops[j].delete_lock &&
			       strcmp(rados_tablet_of(ops[j].table, ops[j].row)->oid, oid) == 0;
		if (!seen)
			rados_split_maybe(rs, ops[i].table, oid);
	}
}

/* One pass over ops[idx[0..nidx)]: batched by tablet, or one row per call. */
static int write_pass(rstore *rs, store_op *ops, const store_row *pre, size_t *idx, size_t nidx,
                      mrtx_arena *a)
{
	size_t *retry = arena_alloc(a, (nidx ? nidx : 1) * sizeof(*retry)), nretry = 0, none = 0;
	int rc = 0;

	if (!retry)
		return MRTX_ENOMEM;
	if (!rs->unbatched) {
		rc = write_some(rs, ops, pre, idx, nidx, 1, a, retry, &nretry);
		if (rc == 0 && nretry)
			rc = write_some(rs, ops, pre, retry, nretry, 0, a, idx, &none);
		return rc;
	}
	/* one row per store call, in order, as the crash tests want */
	for (size_t k = 0; k < nidx; k++) {
		int r = write_some(rs, ops, pre, &idx[k], 1, 0, a, retry, &none), fp;

		if (r == 0 && ops[idx[k]].result == 0 && (fp = FAILPOINT(FP_STORE_AFTER_ROW_WRITE))) {
			ops[idx[k]].result = MRTX_EUNKNOWN; /* applied, reported failed */
			r = fp;
		}
		if (r && !rc)
			rc = r;
	}
	return rc;
}

/*
 * The ops that met a moved tablet: settle each table once, and give their
 * indexes back in idx (*nidx of them).  Nonzero when the table cannot be
 * settled (the ops keep a result that says so).
 */
static int write_settle(rstore *rs, store_op *ops, size_t n, size_t *idx, size_t *nidx,
                        int attempt)
{
	size_t k = 0;
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		int seen = 0;

		if (ops[i].result != RMOVED)
			continue;
		for (size_t j = 0; j < k && !seen; j++)
			seen = ops[idx[j]].table == ops[i].table;
		idx[k++] = i;
		if (!seen && rc == 0)
			rc = rados_moved(rs, ops[i].table, rados_tablet_of(ops[i].table, ops[i].row)->oid,
			           attempt);
	}
	*nidx = k;
	if (rc)
		for (size_t j = 0; j < k; j++)
			ops[idx[j]].result = rc;
	return rc;
}

/*
 * Before a write is sent: each op asking for a stamp (a commit
 * point, store_op.stamp) gets its timestamp from the oracle (rados_ts.c)
 * now -- after every lock of its transaction is in place, so that a
 * reader whose snapshot is at or above it meets those locks -- written
 * into its new lock and used for its cells; the rows whose mutations
 * delete a family that keeps versions are read first, for the cells to
 * mark deleted (*pre, per op; NULL when none is).  Errors: nothing sent.
 * The stamped lock lives in `a`: orig[] keeps each op's new_lock, which
 * the caller puts back before `a` is freed.
 * Keeps I13 (DESIGN §10).
 */
static int pre_read(store *st, store_op *ops, size_t n, mrtx_arena *a, store_row **pre);

static int versions_prepare(rstore *rs, store *st, store_op *ops, size_t n, mrtx_arena *a,
                            store_row **pre, mrtx_bytes *orig)
{
	int rc;

	*pre = NULL;
	for (size_t i = 0; i < n; i++)
		orig[i] = ops[i].new_lock;
	for (size_t i = 0; i < n; i++) {
		store_op *op = &ops[i];
		uint64_t ts;
		uint8_t *nl;

		op->stamped = 0;
		if (!op->stamp)
			continue;
		if (op->delete_lock || op->new_lock.size < op->stamp_off + 8u)
			return mrtx__seterr(MRTX_EINVAL, "%s: a stamped write without room for its "
			                    "timestamp in its lock", rs->addr);
		/* (every stamp, a one-row commit's too, is the oracle's: a
		 * snapshot taken after the commit returns is above it -- DESIGN
		 * §9.1, I17) */
		if ((rc = rados_store_ts_next(st, op->stamp_floor, &ts)))
			return rc;
		if (!(nl = arena_dup(a, op->new_lock.data, op->new_lock.size)))
			return MRTX_ENOMEM;
		for (unsigned b = 0; b < 8; b++) /* (u64 LE, as LMDB stamps it) */
			nl[op->stamp_off + b] = (uint8_t)(ts >> (8 * b));
		op->new_lock = MRTX_BYTES(nl, op->new_lock.size);
		op->stamped = ts;
		if ((rc = FAILPOINT(FP_STORE_AFTER_STAMP)))
			return rc;
	}
	return pre_read(st, ops, n, a, pre);
}

/* The rows of ops whose mutations delete a family that keeps versions,
 * read first for the cells to mark deleted (*pre, per op; NULL when none
 * is). */
static int pre_read(store *st, store_op *ops, size_t n, mrtx_arena *a, store_row **pre)
{
	int rc;

	*pre = NULL;
	for (size_t i = 0; i < n; i++) {
		store_filter f = STORE_FILTER_ALL;
		int need = 0;

		for (size_t m = 0; m < ops[i].nmuts && !need; m++)
			need = rados_vmut_needs_pre(&ops[i].muts[m]);
		if (!need)
			continue;
		if (!*pre) {
			if (!(*pre = arena_alloc(a, n * sizeof(**pre))))
				return MRTX_ENOMEM;
			memset(*pre, 0, n * sizeof(**pre));
		}
		if ((rc = rados_store_read_row(st, ops[i].table, ops[i].row, &f, a, &(*pre)[i])))
			return rc;
	}
	return 0;
}

/*
 * A restore (STORE_MUT_RESTORE, mrtx_restore_versions) writes only into a
 * cell without any version: one read of the tablet lists the cell's
 * versions (at most one needed) beside the row's lock.  If the lock is
 * the op's condition, the write that follows, guarded by the same
 * condition, lands on the cell as read: any commit in between would have
 * changed the lock.  0 (go on, or not a restore), MRTX_EEXIST, MRTX_CONFLICT
 * (the lock is not the condition), or an error of the read.
 */
static int restore_check(rstore *rs, const store_op *op, mrtx_arena *a)
{
	uint8_t *lk, *cp, *vp;
	size_t lkn, cpn, vpn;
	mrtx_bytes key, rec;
	rread r;
	rget g;
	int rc, has, match;

	if (!op->nmuts || op->muts[0].kind != STORE_MUT_RESTORE)
		return 0;
	if (!(lk = arena_alloc(a, RCELL_MAX)) || !(cp = arena_alloc(a, RCELL_MAX)) ||
	    !(vp = arena_alloc(a, RCELL_MAX)))
		return MRTX_ENOMEM;
	lkn = rados_lock_key(lk, op->row);
	cpn = rados_cell_prefix(cp, op->row);
	vpn = rados_vcell_prefix(vp, cp, cpn, op->muts[0].fid, op->muts[0].qual);
	memset(&r, 0, sizeof(r));
	memset(&g, 0, sizeof(g));
	g.prefix = MRTX_BYTES(vp, vpn);
	g.max = 1;
	key = MRTX_BYTES(lk, lkn);
	r.oid = rados_tablet_of(op->table, op->row)->oid;
	r.gets = &g;
	r.ngets = 1;
	r.keys = &key;
	r.nkeys = 1;
	atomic_fetch_add_explicit(&rs->read_txns, 1, memory_order_relaxed);
	if ((rc = rconn_read(rs->conn, &r, 1, a)))
		return rc == RCONN_TIMEDOUT ? MRTX_ESTORE : rc;
	has = r.nkvs > 0;
	if (has && (rc = rados_lock_record(rs, r.oid, r.kvs[0].value, &rec)))
		return rc;
	match = op->cond.absent ? !has :
	        has && rec.size == op->cond.lock.size &&
	        memcmp(rec.data, op->cond.lock.data, rec.size) == 0;
	if (!match)
		return MRTX_CONFLICT;
	return g.nkvs ? MRTX_EEXIST : 0;
}

static int write_rows_once(store *st, store_op *ops, size_t n)
{
	rstore *rs = RS(st);
	store_row *pre;
	mrtx_bytes *orig = NULL;
	size_t *idx;
	mrtx_arena a;
	int rc, fault;

	if (n == 0)
		return 0;
	fault = store__fault_armed ? rados_fault(rs, "write rows (injected fault)", 1) : 0;
	if (fault && fault != STORE_FAULT_APPLIED) {
		for (size_t i = 0; i < n; i++)
			ops[i].result = fault;
		return fault;
	}
	atomic_fetch_add_explicit(&rs->write_calls, 1, memory_order_relaxed);
	arena_init(&a);
	rc = MRTX_ENOMEM;
	if (!(idx = arena_alloc(&a, n * sizeof(*idx))) ||
	    !(orig = arena_alloc(&a, n * sizeof(*orig))))
		goto done;
	if ((rc = versions_prepare(rs, st, ops, n, &a, &pre, orig))) {
		for (size_t i = 0; i < n; i++)
			ops[i].result = rc;
		goto done;
	}
	{
		size_t nidx = 0;

		for (size_t i = 0; i < n; i++)
			ops[i].result = MRTX_ESTORE;
		for (size_t i = 0; i < n && rc == 0; i++) {
			int r = restore_check(rs, &ops[i], &a);

			if (r == 0)
				idx[nidx++] = i;
			else if (r == MRTX_EEXIST || r == MRTX_CONFLICT)
				ops[i].result = r; /* (refused: not sent) */
			else
				rc = r; /* (nothing sent; every op stays MRTX_ESTORE) */
		}
		for (int attempt = 0; rc == 0 && nidx; attempt++) {
			rc = write_pass(rs, ops, pre, idx, nidx, &a);
			if (rc == 0 && write_settle(rs, ops, n, idx, &nidx, attempt))
				rc = ops[idx[0]].result;
		}
		for (size_t i = 0; i < n; i++)
			if (ops[i].result == RMOVED)
				ops[i].result = MRTX_ESTORE; /* not sent again: rc says why */
		if (rc == 0 && rs->split_rows)
			split_candidates(rs, ops, n);
	}
done:
	for (size_t i = 0; orig && i < n; i++) {
		ops[i].new_lock = orig[i];
		if (ops[i].result != 0)
			ops[i].stamped = 0;
	}
	arena_free(&a);
	if (fault == STORE_FAULT_APPLIED) {
		for (size_t i = 0; i < n; i++)
			if (ops[i].result == 0)
				ops[i].result = MRTX_EUNKNOWN;
		rc = mrtx__seterr(MRTX_ESTORE, "store %s: write rows: reply lost (injected fault)",
		                  rs->addr);
	}
	return rc;
}

/*
 * A commit point whose row a reader pushed above its stamp (RPUSHED: its
 * guard failed, nothing applied) is stamped again from the oracle, which
 * hands out above every snapshot it gave, and sent again: the reader read
 * past the lock, so the commit must land above its snapshot.  Readers that
 * keep pushing can starve it only for PUSH_TRIES rounds: then
 * MRTX_CONFLICT, and the transaction rolls back (txn/commit_two_phase.c rolls the
 * primary back too, on the condition that it still holds the prewrite).
 */
#define PUSH_TRIES 16

/* Ops that met a newer metadata generation: the generation moves for an
 * index declaration or a policy change (rados_store_alter_family), so the
 * tables they wrote reload their policies before the transaction's retry
 * (best effort: a failed reload leaves the old ones a while longer). */
static void gen_changed_reload(rstore *rs, const store_op *ops, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int seen = 0;

		if (ops[i].result != STORE_GEN_CHANGED)
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = ops[j].result == STORE_GEN_CHANGED && ops[j].table == ops[i].table;
		if (!seen && rados_table_policies_reload(rs, ops[i].table))
			mrtx__clearerr();
	}
}

int rados_store_write_rows(store *st, store_op *ops, size_t n)
{
	int rc = write_rows_once(st, ops, n);

	gen_changed_reload(RS(st), ops, n);

	for (int tries = 0; rc == 0 && tries < PUSH_TRIES; tries++) {
		store_op sub[16];
		size_t idx[16], k = 0;

		for (size_t i = 0; i < n && k < 16; i++)
			if (ops[i].result == RPUSHED) {
				idx[k] = i;
				sub[k++] = ops[i]; /* (the oracle's next is above the
				                      * pusher's snapshot) */
			}
		if (k == 0)
			return 0;
		rc = write_rows_once(st, sub, k);
		for (size_t j = 0; j < k; j++) {
			ops[idx[j]].result = sub[j].result;
			ops[idx[j]].stamped = sub[j].stamped;
		}
	}
	for (size_t i = 0; i < n; i++)
		if (ops[i].result == RPUSHED) {
			/* (a per-op result, as a lost guard is) */
			ops[i].result = MRTX_CONFLICT;
			ops[i].stamped = 0;
		}
	return rc;
}

int rados_store_push(store *st, const store_table *t, mrtx_bytes row, mrtx_bytes lock,
                     uint64_t ts)
{
	rstore *rs = RS(st);
	uint8_t pk[RCELL_MAX], lk[RCELL_MAX], val[8];
	mrtx_bytes stored;
	rguard g[3];
	rkv set;
	rwrite w;
	mrtx_arena a;
	int rc;

	if (ts > RGEN_MAX)
		return mrtx__seterr(MRTX_EINVAL, "push timestamp %llu is out of range",
		                    (unsigned long long)ts);
	arena_init(&a);
	if ((rc = rados_lock_value(rs, lock, &a, &stored))) {
		arena_free(&a);
		return rc;
	}
	rgen_put(val, ts);
	for (int attempt = 0;; attempt++) {
		g[0] = (rguard){ MRTX_BYTES(rados_state_key, 2), MRTX_BYTES("", 0),
		                 LIBRADOS_CMPXATTR_OP_EQ, 0 };
		g[1] = (rguard){ MRTX_BYTES(lk, rados_lock_key(lk, row)), stored,
		                 LIBRADOS_CMPXATTR_OP_EQ, 0 };
		g[2] = (rguard){ MRTX_BYTES(pk, rados_push_key(pk, row)), MRTX_BYTES(val, 8),
		                 LIBRADOS_CMPXATTR_OP_LT, 0 };
		set = (rkv){ g[2].key, MRTX_BYTES(val, 8) };
		memset(&w, 0, sizeof(w));
		w.oid = rados_tablet_of(t, row)->oid;
		w.guards = g;
		w.nguards = 3;
		w.sets = &set;
		w.nsets = 1;
		atomic_fetch_add_explicit(&rs->write_txns, 1, memory_order_relaxed);
		if ((rc = rconn_write(rs->conn, &w, 1))) {
			rc = rc == RCONN_TIMEDOUT ? mrtx__seterr(MRTX_ESTORE, "%s: %s", rs->addr,
			                                         mrtx_errmsg()) : rc;
			break;
		}
		if (w.result == -ECANCELED && g[0].result == -ECANCELED) {
			/* a split moved the row: with the table's new map */
			if (attempt + 1 >= RMOVED_TRIES) {
				rc = mrtx__seterr(MRTX_ESTORE, "%s: table '%s': its tablets keep being "
				                  "split", rs->addr, t->name);
				break;
			}
			if ((rc = rados_table_settle(rs, t, w.oid)))
				break;
			continue;
		}
		if (w.result == -ECANCELED)
			rc = g[1].result == -ECANCELED ?
			     mrtx__seterr(MRTX_CONFLICT, "table '%s': the lock to push changed", t->name) :
			     0; /* (only the mark: pushed as high already) */
		else if (w.result)
			rc = mrtx__seterr(MRTX_ESTORE, "%s: pushing a lock in %s: %s", rs->addr, w.oid,
			                  strerror(-w.result));
		break;
	}
	arena_free(&a);
	return rc;
}

/* ------------------------------------------------------ one-phase commits */

/* The one tablet of the current maps holding every op's row, or NULL. */
static const char *one_tablet(store_op *ops, size_t n)
{
	const char *oid = NULL;

	for (size_t i = 0; i < n; i++) {
		const char *o = rados_tablet_of(ops[i].table, ops[i].row)->oid;

		if (i && (ops[i].table != ops[0].table || strcmp(o, oid) != 0))
			return NULL;
		oid = o;
	}
	return oid;
}

int rados_store_atomic_ok(store *st, const store_rowref *rows, size_t n, size_t nchecks)
{
	const rtablet *tb = NULL;

	(void)st;
	if (nchecks || RS(st)->unbatched)
		return 0; /* (no guard says "no new row in this range") */
	for (size_t i = 0; i < n; i++) {
		const rtablet *x = rados_tablet_of(rows[i].table, rows[i].row);

		if (i && (rows[i].table != rows[0].table || x != tb))
			return 0;
		tb = x;
	}
	return n > 0;
}

/*
 * One attempt of an atomic commit on tablet oid: stamp every written op
 * with one timestamp from the oracle (stamped before the write, as a
 * one-row commit is: a snapshot taken after the commit returns is above
 * it, I17), then one compound write: the tablet open, the gen guard, the
 * one-phase mark below the stamp, every op's lock condition; then every
 * written op's mutations and new lock, and the mark raised to the stamp.
 * Sets each op's result; returns RMOVED, RMARKED or 0 (see the results)
 * or an error (nothing sent, or the outcome unknown: results say which).
 */
static int atomic_once(rstore *rs, store *st, store_op *ops, size_t n, const char *oid,
                       mrtx_arena *a)
{
	uint64_t floor = 0, ts;
	store_row *pre = NULL;
	uint8_t *nl = NULL;
	rgroup g;
	int rc;

	memset(&g, 0, sizeof(g));
	for (size_t i = 0; i < n; i++) {
		ops[i].result = MRTX_ESTORE;
		ops[i].stamped = 0;
		if (ops[i].check_only)
			continue;
		if (!ops[i].stamp || ops[i].delete_lock ||
		    ops[i].new_lock.size < ops[i].stamp_off + 8u)
			return mrtx__seterr(MRTX_EINVAL, "%s: an atomic commit of a row without "
			                    "room for its timestamp in its lock", rs->addr);
		floor = MRTX_MAX(floor, ops[i].stamp_floor);
	}
	if ((rc = rados_store_ts_next(st, floor, &ts)))
		return rc;
	for (size_t i = 0; i < n; i++) {
		if (ops[i].check_only)
			continue;
		if (!(nl = arena_dup(a, ops[i].new_lock.data, ops[i].new_lock.size)))
			return MRTX_ENOMEM;
		for (unsigned b = 0; b < 8; b++) /* (u64 LE, as LMDB stamps it) */
			nl[ops[i].stamp_off + b] = (uint8_t)(ts >> (8 * b));
		ops[i].new_lock = MRTX_BYTES(nl, ops[i].new_lock.size);
		ops[i].stamped = ts;
	}
	if ((rc = FAILPOINT(FP_STORE_AFTER_STAMP)) || (rc = pre_read(st, ops, n, a, &pre)))
		return rc;
	g.oid = oid;
	g.n = n;
	g.atomic = 1;
	g.pre = pre;
	rgen_put(g.mark, ts);
	if (!(g.idx = arena_alloc(a, n * sizeof(*g.idx))) ||
	    !(g.prval = arena_alloc(a, n * sizeof(*g.prval))) ||
	    !(g.prval2 = arena_alloc(a, n * sizeof(*g.prval2))) ||
	    !(g.prval3 = arena_alloc(a, n * sizeof(*g.prval3))))
		return MRTX_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		g.idx[i] = i;
		g.prval[i] = g.prval2[i] = g.prval3[i] = 0;
		/* (one new lock in a frozen table refuses the whole commit) */
		g.acquire |= !!ops[i].acquire;
		if (ops[i].check_gen) {
			if (g.gen_guard && g.gen_of != ops[i].gen)
				return mrtx__seterr(MRTX_EINVAL, "%s: an atomic commit under two index "
				                    "generations", rs->addr);
			g.gen_guard = 1;
			g.gen_of = ops[i].gen;
			rgen_put(g.gen, ops[i].gen + 1); /* stored < gen + 1 */
		}
	}
	if ((rc = group_build(rs, &g, ops, a)) == 0) {
		rados_completion_t comp;
		int r = rados_aio_create_completion2(NULL, NULL, &comp);

		if (r < 0) {
			rc = mrtx__seterr(MRTX_ENOMEM, "rados: no completion: %s", strerror(-r));
		} else {
			atomic_fetch_add_explicit(&rs->write_txns, 1, memory_order_relaxed);
			r = rados_aio_write_op_operate(g.wop, rconn_ioctx(rs->conn), comp, oid, NULL,
			                               LIBRADOS_OPERATION_NOFLAG);
			if (r == 0) {
				rados_aio_wait_for_complete(comp);
				r = rados_aio_get_return_value(comp);
			}
			rados_aio_release(comp);
			g.result = r;
		}
	}
	if (g.wop)
		rados_release_write_op(g.wop);
	if (rc)
		return rc; /* (nothing sent) */
	if (g.result == 0) {
		for (size_t i = 0; i < n; i++)
			ops[i].result = 0;
		return 0;
	}
	if (g.result != -ECANCELED) {
		rc = op_result(g.result);
		for (size_t i = 0; i < n; i++)
			ops[i].result = rc;
		rc = rconn_error(rs->conn, g.result, "write rows", oid);
		return rc == RCONN_TIMEDOUT ? mrtx__seterr(MRTX_ESTORE, "%s", mrtx_errmsg()) : rc;
	}
	if (g.state_prval == -ECANCELED)
		return RMOVED;
	if (g.acquire && g.frz_prval == -ECANCELED) {
		/* a drop or truncate froze the table (rados_ddl.c) */
		for (size_t i = 0; i < n; i++)
			ops[i].result = ops[i].acquire ? MRTX_CONFLICT : 0;
		mrtx__seterr(MRTX_CONFLICT, "table '%s' is being dropped or truncated: no new "
		             "lock may be taken in it", ops[0].table->name);
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		ops[i].result = g.prval[i] == -ECANCELED || g.prval2[i] == -ECANCELED ?
		                MRTX_CONFLICT : 0;
	if (g.gen_guard && g.gen_prval == -ECANCELED) {
		for (size_t i = 0; i < n; i++)
			ops[i].result = ops[i].check_gen ? STORE_GEN_CHANGED : ops[i].result;
		gen_changed_reload(rs, ops, n);
	}
	for (size_t i = 0; i < n; i++)
		if (ops[i].result)
			return 0;
	return g.mark_prval == -ECANCELED ? RMARKED : 0;
}

/*
 * store_write_atomic on RADOS (DESIGN §5.3): a commit whose rows all live
 * in one tablet is one guarded compound write on that object.  A split
 * that retired the tablet: settle and try again, or STORE_NOT_ATOMIC when
 * the rows are in several tablets now.  An atomic commit stamped later
 * that landed first (RMARKED): stamped again (the oracle's next is above
 * the mark) and sent again, PUSH_TRIES rounds, then MRTX_CONFLICT.
 */
int rados_store_write_atomic(store *st, store_op *ops, size_t n, store_rcheck *checks,
                             size_t nchecks, int *applied)
{
	rstore *rs = RS(st);
	mrtx_bytes *orig;
	mrtx_arena a;
	int rc = 0, fault, marked = 0;

	(void)checks;
	*applied = 0;
	if (n == 0)
		return 0;
	if (nchecks)
		return STORE_NOT_ATOMIC;
	fault = store__fault_armed ? rados_fault(rs, "write rows (injected fault)", 1) : 0;
	if (fault && fault != STORE_FAULT_APPLIED) {
		for (size_t i = 0; i < n; i++)
			ops[i].result = fault;
		return fault;
	}
	atomic_fetch_add_explicit(&rs->write_calls, 1, memory_order_relaxed);
	arena_init(&a);
	if (!(orig = arena_alloc(&a, n * sizeof(*orig)))) {
		arena_free(&a);
		return MRTX_ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		orig[i] = ops[i].new_lock;
	for (int attempt = 0;; attempt++) {
		const char *oid = one_tablet(ops, n);

		if (!oid) {
			rc = STORE_NOT_ATOMIC;
			break;
		}
		rc = atomic_once(rs, st, ops, n, oid, &a);
		for (size_t i = 0; i < n; i++)
			ops[i].new_lock = orig[i];
		if (rc == RMOVED) {
			if ((rc = rados_moved(rs, ops[0].table, oid, attempt)))
				break;
			continue;
		}
		if (rc == RMARKED && ++marked < PUSH_TRIES)
			continue;
		if (rc == RMARKED) {
			for (size_t i = 0; i < n; i++)
				ops[i].result = ops[i].check_only ? 0 : MRTX_CONFLICT;
			rc = 0;
		}
		break;
	}
	if (rc == 0) {
		*applied = 1;
		for (size_t i = 0; i < n; i++)
			if (ops[i].result)
				*applied = 0;
	}
	if (rc || !*applied)
		for (size_t i = 0; i < n; i++)
			ops[i].stamped = 0;
	if (rc == STORE_NOT_ATOMIC)
		for (size_t i = 0; i < n; i++)
			ops[i].result = 0;
	arena_free(&a);
	if (rc == 0 && *applied && rs->split_rows)
		split_candidates(rs, ops, n);
	if (fault == STORE_FAULT_APPLIED) {
		for (size_t i = 0; i < n; i++)
			if (ops[i].result == 0)
				ops[i].result = MRTX_EUNKNOWN;
		*applied = 0;
		rc = mrtx__seterr(MRTX_ESTORE, "store %s: write rows: reply lost (injected fault)",
		                  rs->addr);
	}
	return rc;
}
