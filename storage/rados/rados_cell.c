/*
 * rados_cell.c - cell versions in a RADOS store of layout format 4
 * (DESIGN §9; the layout in rados_int.h).
 *
 * Every version of a cell is its own omap key, newest first:
 *
 *   0x03 . rkey(row) . fid+1 . rkey(qualifier) . vt(ts)  ->  u8 flags | value
 *
 * vt(ts) is ~ts in nine 7-bit digits, each plus one (no 0x00: librados
 * takes listing bounds as C strings), so a cell's versions are adjacent
 * and sort newest first, and rkey's terminator keeps cells in qualifier
 * order.  ts is the commit timestamp (store_op.ts / .stamp).  A write adds
 * keys and never reads first, except where a whole row or family is
 * deleted (below), whatever the family's policy:
 *
 *   mutation        what the write does
 *   put v at ts     set vt(ts) = v
 *   delete cell     set vt(ts) = DELETED (a tombstone)
 *   delete family   DELETED for each live cell of the family,
 *   delete row      read just before (pre, rados_vmut_needs_pre)
 *
 * Older versions stay until a collection step drops them (rados_gc.c): a
 * commit's trim of the rows it wrote (txn/txn.c, store_trim_row) or
 * `mrtx gc`.  A step keeps every version above its safe point and, at or
 * below it, what the family's policy keeps -- so a running snapshot at or
 * above the safe point reads its versions, one-version families included
 * (DESIGN §9).  Reads choose by the policy rule every backend shares
 * (storage/versions.c), so nothing past the policy shows before
 * collection.  A write does not drop a one-version family's older keys
 * itself: a snapshot of a running transaction would then have nothing to
 * read below a newer write.
 */
#include "storage/rados/rados_int.h"
#include "storage/versions.h"

#include <string.h>

void rados_vt_put(uint8_t *p, uint64_t ts)
{
	uint64_t inv = ((UINT64_C(1) << 63) - 1) - (ts & ((UINT64_C(1) << 63) - 1));

	for (int i = RVT_SIZE - 1; i >= 0; i--, inv >>= 7)
		p[i] = (uint8_t)((inv & 0x7f) + 1);
}

int rados_vt_get(const uint8_t *p, uint64_t *ts)
{
	uint64_t inv = 0;

	for (unsigned i = 0; i < RVT_SIZE; i++) {
		if (p[i] < 1 || p[i] > 0x80)
			return -1;
		inv = inv << 7 | (uint64_t)(p[i] - 1);
	}
	if (inv >> 63)
		return -1;
	*ts = ((UINT64_C(1) << 63) - 1) - inv;
	return 0;
}

size_t rados_vcell_prefix(uint8_t *out, const uint8_t *cp, size_t cpn, uint8_t fid,
                          mrtx_bytes q)
{
	memcpy(out, cp, cpn);
	out[cpn] = (uint8_t)(fid + 1);
	return cpn + 1 + rkey_put(out + cpn + 1, q.data, q.size);
}

int rados_vcell_parse(const uint8_t *k, size_t klen, size_t plen, size_t nfamilies,
                      uint8_t *qbuf, store_ver *out)
{
	size_t used, ql;

	if (klen < plen + 1 + 2 + RVT_SIZE || k[plen] == 0 || (size_t)(k[plen] - 1) >= nfamilies)
		return -1;
	ql = rkey_get(qbuf, k + plen + 1, klen - plen - 1 - RVT_SIZE, &used);
	if (ql == RKEY_BAD || used != klen - plen - 1 - RVT_SIZE ||
	    rados_vt_get(k + klen - RVT_SIZE, &out->ts))
		return -1;
	out->fid = (uint8_t)(k[plen] - 1);
	out->qual = MRTX_BYTES(qbuf, ql);
	return 0;
}

/* Set the version at ts of the cell whose key prefix is kb[0..kn). */
static int set_version(rados_write_op_t w, uint8_t *kb, size_t kn, uint64_t ts, uint8_t flags,
                       mrtx_bytes value, mrtx_arena *a)
{
	size_t vl = 1 + value.size;
	uint8_t *v = arena_alloc(a, vl);
	const char *k = (const char *)kb, *vp;
	size_t klen = kn + RVT_SIZE;

	if (!v)
		return MRTX_ENOMEM;
	rados_vt_put(kb + kn, ts);
	v[0] = flags;
	if (value.size)
		memcpy(v + 1, value.data, value.size);
	vp = (const char *)v;
	rados_write_op_omap_set2(w, &k, &vp, &klen, &vl, 1);
	return 0;
}

/* Delete family fid of the row (cell prefix cp) at ts; pre: the row's live
 * cells, read just before. */
static int del_family(rados_write_op_t w, const uint8_t *cp, size_t cpn, uint8_t fid,
                      const store_row *pre, uint64_t ts, uint8_t *kb, mrtx_arena *a)
{
	int rc;

	for (size_t i = 0; pre && i < pre->ncells; i++)
		if (pre->cells[i].fid == fid &&
		    (rc = set_version(w, kb, rados_vcell_prefix(kb, cp, cpn, fid, pre->cells[i].qual),
		                      ts, CELL_DELETED, MRTX_BYTES(NULL, 0), a)))
			return rc;
	return 0;
}

int rados_vmut_needs_pre(const store_mut *m)
{
	return m->kind == STORE_MUT_DEL_FAMILY || m->kind == STORE_MUT_DEL_ROW;
}

int rados_vmut_add(const store_table *t, rados_write_op_t w, const uint8_t *cp, size_t cpn,
                   const store_mut *m, uint64_t ts, const store_row *pre, uint8_t *kb,
                   mrtx_arena *a)
{
	size_t kn;
	int rc;

	if (ts == 0 || ts >= (uint64_t)1 << 63)
		/* (every writer of cells passes its commit's timestamp: a version
		 * at 0 would sort below the one it replaces) */
		return mrtx__seterr(MRTX_EINVAL, "table '%s': a write of cells without a commit "
		                    "timestamp", t->name);
	switch (m->kind) {
	case STORE_MUT_PUT:
		kn = rados_vcell_prefix(kb, cp, cpn, m->fid, m->qual);
		return set_version(w, kb, kn, ts, 0, m->value, a);
	case STORE_MUT_DEL_CELL:
		kn = rados_vcell_prefix(kb, cp, cpn, m->fid, m->qual);
		return set_version(w, kb, kn, ts, CELL_DELETED, MRTX_BYTES(NULL, 0), a);
	case STORE_MUT_DEL_FAMILY:
		return del_family(w, cp, cpn, m->fid, pre, ts, kb, a);
	case STORE_MUT_DEL_ROW:
		for (size_t f = 0; f < t->nfamilies; f++)
			if ((rc = del_family(w, cp, cpn, (uint8_t)f, pre, ts, kb, a)))
				return rc;
		break;
	case STORE_MUT_RESTORE: /* (at its own timestamp: rados_write.c checked
	                         * the cell holds no version) */
		if (m->ts == 0 || m->ts >= (uint64_t)1 << 63)
			return mrtx__seterr(MRTX_EINVAL, "table '%s': a restored version without a "
			                    "timestamp", t->name);
		kn = rados_vcell_prefix(kb, cp, cpn, m->fid, m->qual);
		return set_version(w, kb, kn, m->ts, 0, m->value, a);
	}
	return 0;
}
