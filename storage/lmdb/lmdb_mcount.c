/*
 * lmdb_mcount.c - the format record, and its count of the other metadata
 * records (format 8).
 *
 *   0x00 "format" -> u32 LE format, u32 LE count, seal      (format 8)
 *                    u32 LE format, seal                    (format 7)
 *                    u32 LE format, bare                    (3 to 6, and
 *                                                            the upgrade's
 *                                                            marks)
 *
 * Why a count: metadata is read by key, and a lookup that misses means
 * "never written, use the default".  A seal (lmdb_seal.h) catches a record
 * whose bytes changed, and the open's walk (lmdb_meta_walk) one whose key
 * changed, but neither sees a record that is gone whole: a leaf page whose
 * node count was lowered, or a node slot sent past the record.  A table's
 * version policies would then read as the defaults, and `mrtx gc` would
 * delete the versions they keep.  So the format record counts every other
 * metadata record, and every walk of the metadata (the open's, a table
 * reload's, the listing of upper layers' records) counts what it meets
 * and compares.
 *
 * Invariant: in every committed state of a format-8 store, the count is
 * the number of keys that start with 0x00, less the format record's own.
 * It holds because metadata is written only through lmdb_put and lmdb_del
 * (lmdb_seal.c), which move the count in the same LMDB transaction as the
 * record: a put that adds a key raises it, a delete that removes one
 * lowers it, and an overwrite leaves it.  A store is made with the format
 * record first (count 0), and `mrtx upgrade` writes the count it walked,
 * in the write that sets the format.
 */
#include "storage/lmdb/lmdb_int.h"

#include <stdint.h>

#define FMT_KEY "\0format"
#define FMT_KEY_LEN 7u

int lmdb_format_get(MDB_txn *txn, MDB_dbi dbi, uint32_t *fmt, int *sealed, uint32_t *count)
{
	MDB_val k = mv(FMT_KEY, FMT_KEY_LEN), v;
	int rc = mdb_get(txn, dbi, &k, &v);

	*fmt = 0;
	*sealed = 0;
	if (count)
		*count = UINT32_MAX;
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
	if (*sealed && ((*fmt == FORMAT_META_SEALED && v.mv_size != 4) ||
	                (*fmt == META_FORMAT && v.mv_size != 8)))
		return MRTX_ECORRUPT;
	if (count && *fmt == META_FORMAT)
		*count = mrtx__le32_get((const uint8_t *)v.mv_data + 4);
	return 0;
}

int lmdb_format_put(MDB_txn *txn, MDB_dbi dbi, uint32_t n)
{
	MDB_val k = mv(FMT_KEY, FMT_KEY_LEN), v;
	uint8_t b[8];

	mrtx__le32_put(b, META_FORMAT);
	mrtx__le32_put(b + 4, n);
	v = mv(b, sizeof(b));
	return lmdb_put(txn, dbi, &k, &v, 0);
}

int lmdb_mcount_add(MDB_txn *txn, MDB_dbi dbi, int delta)
{
	uint32_t fmt, n;
	int sealed, rc = lmdb_format_get(txn, dbi, &fmt, &sealed, &n);

	if (rc == MDB_NOTFOUND || (rc == 0 && fmt != META_FORMAT))
		return 0; /* (being made or upgraded: counted when the format is set) */
	if (rc == MRTX_ECORRUPT)
		return LMDB_METACOUNT;
	if (rc)
		return rc;
	if (delta < 0 ? n < (uint32_t)-delta : n > UINT32_MAX - (uint32_t)delta)
		return LMDB_METACOUNT;
	return lmdb_format_put(txn, dbi, n + (uint32_t)delta);
}
