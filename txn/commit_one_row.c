/*
 * commit_one_row.c - COMMIT_ONE_ROW: a transaction that writes one row and
 * read or scanned nothing else commits with one conditional write, which is
 * its own commit point (DESIGN §5.2):
 *
 *   expect(the row's lock, or the blind guard)
 *       -> STABLE(txn, ts) + the row's data ...... OK | CONFLICT | 1 (blind)
 *
 * No lock is ever PREWRITTEN: a writer that dies before the write leaves
 * nothing, one that dies after it has committed.
 */
#include "commit_int.h"

#include <stdio.h>

int commit_one_row(mrtx_txn *txn, commit_plan *p, uint64_t ts)
{
	store *st = txn->db->st;
	wrow *w = &p->w[0];
	store_op op;
	int rc;

	op_init_row(&op, w);
	if ((rc = op_guard_blind(txn, &op, w)))
		return rc;
	op_check_gen(txn, &op);
	if ((rc = lockio_stable(st, txn->id, ts, &txn->arena, &op.new_lock)))
		return rc;
	op.muts = w->redo;
	op.nmuts = w->nredo;
	op.durable = 1; /* the commit point */
	op_stamp(&op, ts);
	op.stamp = STORE_STAMP_ONE_ROW; /* (it read no other row) */
	rc = lockio_write_rows(st, &op, 1);
	if (op.result == MRTX_EUNKNOWN)
		return point_unknown("single-row commit");
	if (rc)
		return rc; /* surely not applied: nothing was written */
	if (op.result == STORE_GEN_CHANGED)
		return gen_changed(txn);
	if (op.result == MRTX_CONFLICT && w->blind)
		return 1;
	if (op.result == MRTX_CONFLICT) {
		char where[MRTX_MAX_NAME + 16];

		snprintf(where, sizeof(where), "table '%s'", w->r->t->name);
		return write_refused(txn, w->r->t, where, "the row changed or is locked by a "
		                     "concurrent transaction");
	}
	(void)stamped_ts(txn, &op, ts);
	return 0;
}
