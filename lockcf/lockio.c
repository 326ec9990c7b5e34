/*
 * lockio.c - see lockio.h.
 */
#include "lockio.h"
#include "storage/breaks.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

/* Keeps I2 (DESIGN §10). */
int lockio_decode(store *st, const store_table *t, mrtx_bytes row, mrtx_bytes in,
                  mrtx_arena *a, lock_rec *out)
{
	int rc = lock_decode(out, in, a);

	if (rc)
		return mrtx__seterr(rc, "table '%s' row of %zu bytes: lock record: %s", t->name,
		                    row.size, mrtx_errmsg());
	if (memcmp(out->tag, store_id(st), LOCK_TAG_SIZE) != 0)
		return mrtx__seterr(MRTX_ECORRUPT, "table '%s': lock record belongs to another "
		                    "store (tag mismatch)", t->name);
	/* The redo is applied to this record's own row: its families must exist. */
	for (size_t i = 0; i < out->nredo; i++)
		if (out->redo[i].kind != STORE_MUT_DEL_ROW && out->redo[i].fid >= t->nfamilies) {
			/* a family added since t was loaded?  (store_add_family; a
			 * refresh that failed says nothing: its error; t replaced
			 * meanwhile, its families no longer loaded: the table's) */
			if ((rc = store_table_refresh(st)))
				return rc;
			if (out->redo[i].fid < t->nfamilies)
				continue;
			if ((rc = store_table_gone(st, t)))
				return rc;
			return mrtx__seterr(MRTX_ECORRUPT, "table '%s': lock record redo names "
			                    "family id %u of %zu", t->name, out->redo[i].fid,
			                    t->nfamilies);
		}
	return 0;
}

int lockio_peek(store *st, const store_table *t, mrtx_bytes in, uint8_t *state,
                uint8_t txn[LOCK_TXNID_SIZE])
{
	int rc = lock_peek(in, state, txn);

	if (rc)
		return mrtx__seterr(rc, "table '%s': lock record: %s", t->name, mrtx_errmsg());
	/* The tag follows u8 version, u8 state, u8 flags (lock.h). */
	if (memcmp((const uint8_t *)in.data + 3, store_id(st), LOCK_TAG_SIZE) != 0)
		return mrtx__seterr(MRTX_ECORRUPT, "table '%s': lock record belongs to another "
		                    "store (tag mismatch)", t->name);
	return 0;
}

int lockio_stable(store *st, const uint8_t txn[LOCK_TXNID_SIZE], uint64_t commit_ts,
                  mrtx_arena *a, mrtx_bytes *out)
{
	lock_rec r;

	memset(&r, 0, sizeof(r));
	r.state = LOCK_STABLE;
	memcpy(r.tag, store_id(st), LOCK_TAG_SIZE);
	memcpy(r.txn, txn, LOCK_TXNID_SIZE);
	r.commit_ts = commit_ts;
	return lock_encode(&r, a, out);
}

int lockio_restore_prev(store *st, const lock_rec *r, mrtx_arena *a, store_op *op)
{
	if (r->flags & LOCK_F_PREV_ABSENT) {
		op->delete_lock = 1;
		op->new_lock = MRTX_BYTES(NULL, 0);
		return 0;
	}
	op->delete_lock = 0;
	return lockio_stable(st, r->prev_txn, r->prev_commit_ts, a, &op->new_lock);
}

int lockio_ref_table(store *st, const lock_ref *ref, const store_table **out)
{
	char name[MRTX_MAX_NAME + 1];
	int rc;

	if (ref->table.size == 0 || ref->table.size > MRTX_MAX_NAME)
		return mrtx__seterr(MRTX_ECORRUPT, "lock record names a table of %zu bytes",
		                    ref->table.size);
	memcpy(name, ref->table.data, ref->table.size);
	name[ref->table.size] = '\0';
	if (memchr(name, '\0', ref->table.size) || store_check_name("table", name))
		return mrtx__seterr(MRTX_ECORRUPT, "lock record names a table that no table "
		                    "can be called");
	rc = store_table_find(st, name, out);
	/* Missing means dropped only where tables can be dropped (LMDB, DESIGN
	 * §3.4): recovery then treats the lock as settled or orphaned.  On a
	 * store without drop the record is damaged, and stays for inspection. */
	if (rc == MRTX_ENOTABLE && !store_has(st, STORE_CAP_SCHEMA))
		return mrtx__seterr(MRTX_ECORRUPT, "lock record names missing table '%s' "
		                    "(tables of this store cannot be dropped)", name);
	if (rc == MRTX_ENOTABLE)
		return mrtx__seterr(MRTX_ENOTABLE, "lock record names missing table '%s' "
		                    "(dropped)", name);
	return rc;
}

#ifdef MRTX_DEBUG
/* State of a lock image, or -1 if it does not decode (a test's raw bytes). */
static int image_state(mrtx_bytes b)
{
	uint8_t state, txn[LOCK_TXNID_SIZE];

	return lock_peek(b, &state, txn) ? -1 : state;
}
#endif

/* Does op take a new lock (store_op.acquire)?  From no record or a STABLE
 * one to PREWRITTEN, or a one-row commit (STABLE with mutations); a fence
 * (STABLE to STABLE, nothing applied) is not one.
 * Keeps I25 (DESIGN §10). */
static int acquires(const store_op *op)
{
	uint8_t from, to, txn[LOCK_TXNID_SIZE];

	if (!op->cond.absent && op->cond.kind != STORE_IF_BELOW &&
	    (lock_peek(op->cond.lock, &from, txn) || from != LOCK_STABLE))
		return 0;
	if (op->delete_lock || lock_peek(op->new_lock, &to, txn))
		return 0;
	return to == LOCK_PREWRITTEN || op->nmuts > 0;
}

static void check_arrows(const store_op *ops, size_t n)
{
#ifdef MRTX_DEBUG
	/* (with the commit point's guard switched off, a commit point may
	 * land on what a resolver left: the anomaly the simulator is to find,
	 * not an assertion) */
	if (mrtx__broken(MRTX_BREAK_POINT))
		return;
	for (size_t i = 0; i < n; i++) {
		if (ops[i].check_only)
			continue;
		int below = ops[i].cond.kind == STORE_IF_BELOW;
		int from = ops[i].cond.absent || below ? LOCK_STABLE :
		           image_state(ops[i].cond.lock);
		int to = ops[i].delete_lock ? 255 : image_state(ops[i].new_lock);

		assert(from >= 0 && to >= 0);
		/* a cond op (one-row commit) expects STABLE or no record */
		assert(lock_transition_ok(ops[i].cond.absent || below, (uint8_t)from, (uint8_t)to));
		assert(!below || lock_transition_ok(0, (uint8_t)from, (uint8_t)to));
	}
#else
	(void)ops;
	(void)n;
#endif
}

/* Keeps I3 (DESIGN §10). */
int lockio_write_rows(store *st, store_op *ops, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ops[i].acquire = acquires(&ops[i]);
	check_arrows(ops, n);
	return store_write_rows(st, ops, n);
}

/* Keeps I3 (DESIGN §10). */
int lockio_write_atomic(store *st, store_op *ops, size_t n, store_rcheck *checks,
                        size_t nchecks, int *applied)
{
	for (size_t i = 0; i < n; i++)
		ops[i].acquire = !ops[i].check_only && acquires(&ops[i]);
	check_arrows(ops, n);
	return store_write_atomic(st, ops, n, checks, nchecks, applied);
}
