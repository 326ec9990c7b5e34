/*
 * lmdb_unsettled.c - the count of unsettled lock records (format 5).
 *
 * A lock record is settled when the layer above's order key for it
 * (store_opts.lock_order) starts with 0: a STABLE record with no flags.
 * Any other record -- PREWRITTEN, or a STABLE one still flagged -- is
 * unsettled: a reader that meets it must look at it (its transaction may
 * have committed below the reader's snapshot, or be rolled back).  The
 * store keeps how many it holds:
 *
 *      0x00 "unsettled" -> u64 LE
 *
 * and every write transaction keeps the count exact: each op notes whether
 * the record it replaces was unsettled and whether the one it writes is
 * (lmdb_write.c op_check / op_write), a drop or truncate subtracts the
 * unsettled records it deletes (lmdb_ddl.c), and just before the commit
 * the change is put (lmdb_unsettled_finish).  One LMDB transaction holds
 * both, so a crash cannot part them.  The count then rides into the
 * timestamp ring (lmdb_ts_record): a view whose write transaction left
 * the count at 0 holds no unsettled record at all (lmdb_rtxn.settled),
 * and a point read in it need not read the row's lock record to know that
 * no transaction is half-way through the row (lmdb_read.c read_cell_exact,
 * DESIGN §9).  The count not known (no key: a store upgraded by hand; an
 * entry no longer in the ring) counts as unsettled: reads then read locks.
 *
 *   txn begin:  w_uns = uns_val if the last txn was ours (uns_at + 1),
 *               else read from the store when first needed; w_udelta = 0
 *   each op:    w_udelta += unsettled(new) - unsettled(old)
 *   commit:     w_udelta != 0: put w_uns + w_udelta;  ring: count != 0
 *   committed:  uns_at = the txn's id, uns_val = its count
 *
 * Every writer of a format-5 store keeps the count (older releases refuse
 * the format), `mrtx check` recounts the records and compares, and `mrtx
 * upgrade` of a format-5 store counts them anew (a repair).
 */
#include "storage/lmdb/lmdb_int.h"

#define UNS_KEY "\0unsettled"
#define UNS_KEY_LEN 10u

/* Is lock unsettled by classifier order (NULL: every record is)? */
static int unsettled_by(lmdb_lock_order_fn order, const void *lock, size_t size)
{
	uint8_t key[STORE_ORDER_SIZE];

	if (!order)
		return 1;
	order(lock, size, key);
	return key[0] != 0;
}

int lmdb_lock_unsettled(const store *st, const void *lock, size_t size)
{
	return unsettled_by(st->lock_order, lock, size);
}

/* Is (k, v) a lock key (P . enc(row) . 0xFF) holding an unsettled record? */
static int record_unsettled_by(lmdb_lock_order_fn order, const MDB_val *k, const MDB_val *v)
{
	uint8_t row[MRTX_MAX_KEY];
	size_t used;

	if (k->mv_size <= TPFX + 1 || k->mv_size - TPFX > sizeof(row) ||
	    ((const uint8_t *)k->mv_data)[k->mv_size - 1] != 0xFFu ||
	    keyenc_get(row, (const uint8_t *)k->mv_data + TPFX, k->mv_size - TPFX, &used) ==
	            (size_t)-1 || TPFX + used + 1 != k->mv_size)
		return 0;
	return unsettled_by(order, v->mv_data, v->mv_size);
}

int lmdb_record_unsettled(const store *st, const MDB_val *k, const MDB_val *v)
{
	return record_unsettled_by(st->lock_order, k, v);
}

int lmdb_unsettled_count(MDB_cursor *cur, lmdb_lock_order_fn order, uint64_t *n)
{
	uint8_t first[TPFX] = { KP_FIRST >> 8, KP_FIRST & 0xFF };
	MDB_val k = mv(first, TPFX), v;
	int rc;

	*n = 0;
	for (rc = lmdb_cget(cur, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = lmdb_cget(cur, &k, &v, MDB_NEXT))
		*n += (uint64_t)record_unsettled_by(order, &k, &v);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

void lmdb_unsettled_begin(store *st)
{
	st->w_uns_ok = st->uns_at && st->uns_at + 1 == st->w_id && st->uns_val >= 0;
	st->w_uns = st->uns_val;
	st->w_udelta = 0;
}

int lmdb_unsettled_read(MDB_txn *txn, MDB_dbi dbi, int64_t *out)
{
	MDB_val k = mv(UNS_KEY, UNS_KEY_LEN), v;
	uint64_t x;
	int rc;

	*out = -1;
	if ((rc = lmdb_get(txn, dbi, &k, &v)) == MDB_NOTFOUND)
		return 0;
	if (rc)
		return rc;
	if (v.mv_size != 8)
		return 0; /* (malformed: not known) */
	x = mrtx__le64_get(v.mv_data);
	*out = x > (uint64_t)INT64_MAX ? -1 : (int64_t)x;
	return 0;
}

int lmdb_unsettled_put(MDB_txn *txn, MDB_dbi dbi, uint64_t n)
{
	MDB_val k = mv(UNS_KEY, UNS_KEY_LEN), v;
	uint8_t b[8];

	mrtx__le64_put(b, n);
	v = mv(b, 8);
	return lmdb_put(txn, dbi, &k, &v, 0);
}

/* Keeps I22 (DESIGN §10). */
int lmdb_unsettled_finish(store *st, MDB_txn *txn, int *unsettled)
{
	int rc;

	*unsettled = 1;
	if (!st->w_uns_ok) {
		if ((rc = lmdb_unsettled_read(txn, st->dbi, &st->w_uns)))
			return rc;
		st->w_uns_ok = 1;
	}
	if (st->w_uns < 0)
		return 0; /* not known: stays so (mrtx check says it) */
	if (st->w_udelta) {
		int64_t n = st->w_uns + st->w_udelta;

		/* below 0 only if a writer missed a record: the count is not
		 * known from now on (its key goes), every reader reads locks, and
		 * `mrtx check` says so until `mrtx upgrade` counts anew */
		if (n < 0) {
			MDB_val k = mv(UNS_KEY, UNS_KEY_LEN);

			if ((rc = lmdb_del(txn, st->dbi, &k)) && rc != MDB_NOTFOUND)
				return rc;
			st->w_uns = -1;
			return 0;
		}
		if ((rc = lmdb_unsettled_put(txn, st->dbi, (uint64_t)n)))
			return rc;
		st->w_uns = n;
		st->w_udelta = 0;
	}
	*unsettled = st->w_uns != 0;
	return 0;
}

void lmdb_unsettled_committed(store *st)
{
	st->uns_at = st->w_id;
	st->uns_val = st->w_uns_ok ? st->w_uns : -1;
}

int lmdb_store_unsettled_verify(store *st)
{
	lmdb_rtxn rt;
	int64_t stored = -1;
	uint64_t n = 0;
	int rc;

	if ((rc = lmdb_rtxn_begin(st, &rt)))
		return rc;
	rc = lmdb_unsettled_read(rt.txn, st->dbi, &stored);
	if (rc == 0)
		rc = lmdb_unsettled_count(rt.cur, st->lock_order, &n);
	lmdb_rtxn_end(st, &rt);
	if (rc)
		return lmdb_err(st, rc, "count unsettled lock records");
	if (stored < 0)
		return mrtx__seterr(MRTX_ECORRUPT, "store %s: the count of unsettled lock records "
		                    "is missing or malformed (it holds %llu); `mrtx upgrade %s` "
		                    "counts them anew", st->path, (unsigned long long)n, st->path);
	if ((uint64_t)stored != n)
		return mrtx__seterr(MRTX_ECORRUPT, "store %s: the count of unsettled lock records "
		                    "says %lld, the store holds %llu; `mrtx upgrade %s` counts "
		                    "them anew", st->path, (long long)stored,
		                    (unsigned long long)n, st->path);
	return 0;
}
