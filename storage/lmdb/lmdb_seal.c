/*
 * lmdb_seal.c - seal records on the way in, check them on the way out
 * (lmdb_seal.h; formats 7 and 8).
 *
 * Why a checksum above LMDB: LMDB keeps no checksum of its pages, so a
 * flipped byte inside a value, a version header, a lock record or a
 * table's version policy reads as data (and a policy read wrong lets the
 * collector delete what it should keep).  The seal covers the key too, so
 * a damaged key in a leaf (a record that moved to another row, another
 * table, another version, out of the metadata) is caught where it is
 * read, not only when it breaks the key order.  CRC32C catches every
 * burst of up to 32 bits and every odd number of flipped bits.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "storage/common.h"
#include "storage/crc32c.h"
#include "storage/lmdb/lmdb_int.h"
#include "storage/lmdb/lmdb_seal.h"
#include "storage/lmdb/lmdb_span.h"

#define BOUNCE 512u /* payloads up to this size are sealed on the stack */

uint32_t lmdb_seal_of(const MDB_val *k, const void *p, size_t n)
{
	return mrtx__crc32c2(k->mv_data, k->mv_size, p, n);
}

static void seal_put(uint8_t *at, uint32_t c)
{
	for (unsigned i = 0; i < LMDB_SEAL; i++)
		at[i] = (uint8_t)(c >> (8 * i));
}

int lmdb_unseal(const MDB_val *k, MDB_val *v)
{
	const uint8_t *p = v->mv_data;
	size_t n;
	uint32_t c = 0;

	if (v->mv_size < LMDB_SEAL)
		return LMDB_BADSUM;
	/* (a damaged size would send the CRC past the file: I27, lmdb_span.h) */
	if (!lmdb_span_rec(k, v))
		return LMDB_BADSPAN;
	n = v->mv_size - LMDB_SEAL;
	for (unsigned i = 0; i < LMDB_SEAL; i++)
		c |= (uint32_t)p[n + i] << (8 * i);
	if (c != lmdb_seal_of(k, p, n))
		return LMDB_BADSUM;
	v->mv_size = n;
	return 0;
}

/* Keeps I20 (DESIGN §10). */
int lmdb_cget(MDB_cursor *cur, MDB_val *k, MDB_val *v, MDB_cursor_op op)
{
	int rc = mdb_cursor_get(cur, k, v, op);

	if (rc == 0 && v)
		rc = lmdb_unseal(k, v);
	return rc;
}

/* Keeps I20 (DESIGN §10). */
int lmdb_get(MDB_txn *txn, MDB_dbi dbi, MDB_val *k, MDB_val *v)
{
	int rc = mdb_get(txn, dbi, k, v);

	if (rc == 0)
		rc = lmdb_unseal(k, v);
	return rc;
}

/* Keeps I20 (DESIGN §10). */
int lmdb_cput_sealed(MDB_cursor *cur, MDB_val *k, uint8_t *buf, size_t n, unsigned flags)
{
	MDB_val v = { n + LMDB_SEAL, buf };

	seal_put(buf + n, lmdb_seal_of(k, buf, n));
	return mdb_cursor_put(cur, k, &v, flags);
}

/* A copy of payload v with room for its seal: buf when it fits, else
 * allocated (*heap).  NULL: out of memory. */
static uint8_t *bounce(const MDB_val *v, uint8_t *buf, uint8_t **heap)
{
	uint8_t *d = buf;

	*heap = NULL;
	if (v->mv_size > BOUNCE - LMDB_SEAL && !(d = *heap = mrtx__malloc(v->mv_size + LMDB_SEAL)))
		return NULL;
	if (v->mv_size)
		memcpy(d, v->mv_data, v->mv_size);
	return d;
}

/* Keeps I20 (DESIGN §10). */
int lmdb_cput(MDB_cursor *cur, MDB_val *k, MDB_val *v, unsigned flags)
{
	_Alignas(8) uint8_t buf[BOUNCE];
	uint8_t *d, *heap;
	int rc;

	if (!(d = bounce(v, buf, &heap)))
		return ENOMEM;
	rc = lmdb_cput_sealed(cur, k, d, v->mv_size, flags);
	mrtx__free(heap);
	return rc;
}

/* Is k a metadata record's key that the format record tallies (every one
 * but its own)? */
static int counted(const MDB_val *k)
{
	return k->mv_size && ((const uint8_t *)k->mv_data)[0] == 0 &&
	       !(k->mv_size == 7 && memcmp(k->mv_data, "\0format", 7) == 0);
}

/* The part in the tally of the stored record raw at k, which is about to
 * go: its seal checked first (a damaged seal taken out would leave the
 * digest wrong for good, sound as the records then are).  0,
 * LMDB_BADSUM or LMDB_BADSPAN. */
static int old_part(const MDB_val *k, const MDB_val *raw, uint64_t *minus)
{
	MDB_val chk = *raw;
	int rc = lmdb_unseal(k, &chk);

	if (rc)
		return rc;
	*minus = lmdb_mtally_hash(k, raw);
	return 0;
}

/* Keeps I20 (DESIGN §10). */
int lmdb_put(MDB_txn *txn, MDB_dbi dbi, MDB_val *k, MDB_val *v, unsigned flags)
{
	_Alignas(8) uint8_t buf[BOUNCE];
	uint8_t *d, *heap;
	MDB_val sv;
	int rc;

	if (counted(k) && (flags & ~(unsigned)MDB_NOOVERWRITE))
		return EINVAL; /* (MDB_APPEND's KEYEXIST hands back no old record) */
	if (!(d = bounce(v, buf, &heap)))
		return ENOMEM;
	seal_put(d + v->mv_size, lmdb_seal_of(k, d, v->mv_size));
	sv = (MDB_val){ v->mv_size + LMDB_SEAL, d };
	if (counted(k)) {
		/* the format record's tally follows (lmdb_mcount.c): a record new
		 * to the store is added, one replaced swapped for its successor */
		uint64_t plus = lmdb_mtally_hash(k, &sv);

		rc = mdb_put(txn, dbi, k, &sv, flags | MDB_NOOVERWRITE);
		if (rc == 0) {
			rc = lmdb_mtally_move(txn, dbi, 1, 0, plus);
		} else if (rc == MDB_KEYEXIST && !(flags & MDB_NOOVERWRITE)) {
			uint64_t minus;

			if ((rc = old_part(k, &sv, &minus)) == 0) { /* (sv: the old one) */
				sv = (MDB_val){ v->mv_size + LMDB_SEAL, d };
				if ((rc = mdb_put(txn, dbi, k, &sv, flags)) == 0)
					rc = lmdb_mtally_move(txn, dbi, 0, minus, plus);
			}
		}
	} else {
		rc = mdb_put(txn, dbi, k, &sv, flags);
	}
	mrtx__free(heap);
	return rc;
}

int lmdb_del(MDB_txn *txn, MDB_dbi dbi, MDB_val *k)
{
	MDB_cursor *cur;
	MDB_val key = *k, old;
	uint64_t minus;
	int rc;

	if (!counted(k))
		return mdb_del(txn, dbi, k, NULL);
	/* (one search: the record read and deleted where the cursor stands) */
	if ((rc = mdb_cursor_open(txn, dbi, &cur)))
		return rc;
	if ((rc = mdb_cursor_get(cur, &key, &old, MDB_SET)) == 0 &&
	    (rc = old_part(k, &old, &minus)) == 0)
		rc = mdb_cursor_del(cur, 0);
	mdb_cursor_close(cur);
	return rc ? rc : lmdb_mtally_move(txn, dbi, -1, minus, 0);
}

int lmdb_cput_reserve(MDB_cursor *cur, MDB_val *k, MDB_val *v, size_t n, unsigned flags)
{
	v->mv_size = n + LMDB_SEAL;
	v->mv_data = NULL;
	return mdb_cursor_put(cur, k, v, flags | MDB_RESERVE);
}

/* Keeps I20 (DESIGN §10). */
void lmdb_seal_reserved(const MDB_val *k, const MDB_val *v)
{
	size_t n;

	n = v->mv_size - LMDB_SEAL;
	seal_put((uint8_t *)v->mv_data + n, lmdb_seal_of(k, v->mv_data, n));
}
