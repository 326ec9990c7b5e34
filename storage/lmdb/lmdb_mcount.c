/*
 * lmdb_mcount.c - the format record, and its tally of the other metadata
 * records (format 8).
 *
 *   0x00 "format" -> u32 LE 8, u32 LE count, u64 LE digest, seal  (format 8)
 *                    u32 LE 7, seal                                (format 7)
 *                    u32 LE format, bare                           (3 to 6, and
 *                                                                   the upgrade's
 *                                                                   marks)
 *
 * The count is the number of the other metadata records (keys that start
 * with 0x00), the digest the sum, mod 2^64, of a 64-bit mix of each one's
 * seal (the CRC32C of its key and payload, lmdb_seal.h) and key length.
 *
 * Why: metadata is read by key, and a lookup that misses means "never
 * written, use the default".  A seal catches a record whose bytes changed,
 * and the open's walk (lmdb_meta_walk) one whose key changed, but neither
 * sees a record gone whole (a leaf page's node count lowered, a slot taken
 * out) nor an older copy of a record read in its place (a branch pointer
 * sent back to a leaf as it was before the record was last overwritten,
 * its seal still its own).  A table's version policies would then read as
 * the defaults, or as they were, and `mrtx gc` would delete the versions
 * they keep.  The count sees the first, the digest the second, unless the
 * older copy is of a page whose subtree holds the format record's leaf and
 * every metadata leaf changed since: every change rewrites the format
 * record too, so such a copy's tally matches it (DESIGN §3.5).  Every walk
 * of the metadata (the open's, a table reload's, the listing of upper
 * layers' records) tallies what it meets and compares.
 *
 * Invariant (I26): in every committed state of a format-8 store, the
 * tally is that of the store's metadata records, the format record's own
 * left out.  It holds because metadata is written only through lmdb_put
 * and lmdb_del (lmdb_seal.c), which move the tally in the same LMDB
 * transaction as the record: a put takes the old record's part out (if
 * there was one) and adds the new one's, a delete takes the old one's out.
 * A store is made with the format record first (an empty tally), and
 * `mrtx upgrade` writes the tally it walked, in the write that sets the
 * format.
 */
#include "storage/lmdb/lmdb_int.h"

#include <stdint.h>

#define FMT_KEY "\0format"
#define FMT_KEY_LEN 7u

uint64_t lmdb_mtally_hash(const MDB_val *k, const MDB_val *raw)
{
	uint32_t seal = raw->mv_size >= LMDB_SEAL ?
	                mrtx__le32_get((const uint8_t *)raw->mv_data + raw->mv_size - LMDB_SEAL) : 0;

	/* (mixed: each record's part spreads over every bit of the sum, so no
	 * two changes cancel out but by chance) */
	return mrtx__mix64((uint64_t)seal << 32 | (uint32_t)k->mv_size);
}

void lmdb_mtally_add(lmdb_mtally *t, const MDB_val *k, const MDB_val *raw)
{
	t->n++;
	t->sum += lmdb_mtally_hash(k, raw);
}

int lmdb_format_get(MDB_txn *txn, MDB_dbi dbi, uint32_t *fmt, int *sealed, lmdb_mtally *tally)
{
	MDB_val k = mv(FMT_KEY, FMT_KEY_LEN), v;
	int rc = mdb_get(txn, dbi, &k, &v);

	*fmt = 0;
	*sealed = 0;
	if (rc)
		return rc;
	/* (a later format's record is sealed too, and starts with its number:
	 * its length is its own) */
	if (v.mv_size >= 4 + LMDB_SEAL) {
		if ((rc = lmdb_unseal(&k, &v)))
			return rc;
		*sealed = 1;
	} else if (v.mv_size != 4) {
		return MRTX_ECORRUPT;
	}
	*fmt = mrtx__le32_get(v.mv_data);
	return lmdb_format_parse(*fmt, *sealed, &v, tally);
}

int lmdb_format_parse(uint32_t fmt, int sealed, const MDB_val *payload, lmdb_mtally *tally)
{
	const uint8_t *p = payload->mv_data;

	if (sealed && ((fmt == FORMAT_META_SEALED && payload->mv_size != 4) ||
	               (fmt == META_FORMAT && payload->mv_size != LMDB_FORMAT_LEN)))
		return MRTX_ECORRUPT;
	if (tally && fmt == META_FORMAT && sealed) {
		tally->n = mrtx__le32_get(p + 4);
		tally->sum = mrtx__le64_get(p + 8);
	}
	return 0;
}

int lmdb_format_put(MDB_txn *txn, MDB_dbi dbi, const lmdb_mtally *t)
{
	MDB_val k = mv(FMT_KEY, FMT_KEY_LEN), v;
	uint8_t b[LMDB_FORMAT_LEN];

	mrtx__le32_put(b, META_FORMAT);
	mrtx__le32_put(b + 4, t->n);
	mrtx__le64_put(b + 8, t->sum);
	v = mv(b, sizeof(b));
	return lmdb_put(txn, dbi, &k, &v, 0);
}

int lmdb_mtally_move(MDB_txn *txn, MDB_dbi dbi, int delta, uint64_t minus, uint64_t plus)
{
	lmdb_mtally t = { 0, 0 };
	uint32_t fmt;
	int sealed, rc;

	if (delta == 0 && minus == plus)
		return 0; /* (a record written again as it was) */
	rc = lmdb_format_get(txn, dbi, &fmt, &sealed, &t);
	if (rc == MDB_NOTFOUND || (rc == 0 && (fmt != META_FORMAT || !sealed)))
		return 0; /* (being made or upgraded: tallied when the format is set) */
	if (rc == MRTX_ECORRUPT)
		return LMDB_BADFORMAT;
	if (rc)
		return rc;
	if (delta < 0 ? t.n < (uint32_t)-delta : t.n > UINT32_MAX - (uint32_t)delta)
		return LMDB_METACOUNT;
	t.n += (uint32_t)delta;
	t.sum += plus - minus;
	return lmdb_format_put(txn, dbi, &t);
}
