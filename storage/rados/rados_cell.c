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
 * a key and never reads first, except where a family keeps several
 * versions and the whole row or family is deleted (below):
 *
 *   mutation      one-version family                several versions
 *   put v at ts   set vt(ts); drop every older one  set vt(ts)
 *   delete cell   drop every version                set vt(ts) = DELETED
 *   delete family drop the family's keys            DELETED for each live
 *   delete row    drop each such family's keys      cell, read before (pre)
 *
 * A one-version family therefore keeps no tombstone and no older version:
 * a read at a past timestamp cannot tell what such a cell held once its
 * row was written since.  It says so (MRTX_ESNAPSHOT, rados_vrow_check)
 * when the row's lock -- STABLE, whose order key carries its commit
 * timestamp -- is newer than the read's timestamp.  Families that keep
 * several versions are read by the policy rule every backend shares
 * (storage/versions.c), so none past it shows before `mrtx gc` removes it
 * (rados_gc.c).
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

/* Drop the keys [lo, the end of prefix pfx). */
static void drop_from(rados_write_op_t w, const uint8_t *lo, size_t lon, const uint8_t *pfx,
                      size_t pn, uint8_t *ke)
{
	size_t en = rados_prefix_end(ke, pfx, pn);

	rados_write_op_omap_rm_range2(w, (const char *)lo, lon, (const char *)ke, en);
}

static int one_version(const store_table *t, uint8_t fid)
{
	store_policy p = store_table_policy(t, fid);

	return p.max_versions <= 1;
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

/* Delete one cell at ts (its key prefix in kb[0..kn)). */
static int del_cell(const store_table *t, rados_write_op_t w, uint8_t fid, uint8_t *kb,
                    size_t kn, uint64_t ts, uint8_t *ke, mrtx_arena *a)
{
	if (!one_version(t, fid))
		return set_version(w, kb, kn, ts, CELL_DELETED, MRTX_BYTES(NULL, 0), a);
	drop_from(w, kb, kn, kb, kn, ke);
	return 0;
}

/* Delete family fid of the row (cell prefix cp) at ts; pre: the row's live
 * cells, read before (needed only for a family that keeps versions). */
static int del_family(const store_table *t, rados_write_op_t w, const uint8_t *cp,
                      size_t cpn, uint8_t fid, const store_row *pre, uint64_t ts,
                      uint8_t *kb, uint8_t *ke, mrtx_arena *a)
{
	int rc;

	if (one_version(t, fid)) {
		memcpy(kb, cp, cpn);
		kb[cpn] = (uint8_t)(fid + 1);
		drop_from(w, kb, cpn + 1, kb, cpn + 1, ke);
		return 0;
	}
	for (size_t i = 0; pre && i < pre->ncells; i++)
		if (pre->cells[i].fid == fid &&
		    (rc = set_version(w, kb, rados_vcell_prefix(kb, cp, cpn, fid, pre->cells[i].qual),
		                      ts, CELL_DELETED, MRTX_BYTES(NULL, 0), a)))
			return rc;
	return 0;
}

int rados_vmut_needs_pre(const store_table *t, const store_mut *m)
{
	if (m->kind == STORE_MUT_DEL_FAMILY)
		return !one_version(t, m->fid);
	if (m->kind == STORE_MUT_DEL_ROW)
		for (size_t f = 0; f < t->nfamilies; f++)
			if (!one_version(t, (uint8_t)f))
				return 1;
	return 0;
}

int rados_vmut_add(const store_table *t, rados_write_op_t w, const uint8_t *cp, size_t cpn,
                   const store_mut *m, uint64_t ts, const store_row *pre, uint8_t *kb,
                   uint8_t *ke, mrtx_arena *a)
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
		if ((rc = set_version(w, kb, kn, ts, 0, m->value, a)))
			return rc;
		if (one_version(t, m->fid)) {
			uint8_t *lo = arena_alloc(a, kn + RVT_SIZE);

			if (!lo)
				return MRTX_ENOMEM;
			memcpy(lo, kb, kn);
			rados_vt_put(lo + kn, ts - 1); /* every version older than ts */
			drop_from(w, lo, kn + RVT_SIZE, kb, kn, ke);
		}
		break;
	case STORE_MUT_DEL_CELL:
		kn = rados_vcell_prefix(kb, cp, cpn, m->fid, m->qual);
		return del_cell(t, w, m->fid, kb, kn, ts, ke, a);
	case STORE_MUT_DEL_FAMILY:
		return del_family(t, w, cp, cpn, m->fid, pre, ts, kb, ke, a);
	case STORE_MUT_DEL_ROW:
		for (size_t f = 0; f < t->nfamilies; f++)
			if ((rc = del_family(t, w, cp, cpn, (uint8_t)f, pre, ts, kb, ke, a)))
				return rc;
		break;
	}
	return 0;
}

/* Does f read any family of t that keeps one version? */
static int reads_one_version(const store_table *t, const store_filter *f)
{
	if (f->family >= 0)
		return one_version(t, (uint8_t)f->family);
	for (size_t fid = 0; fid < t->nfamilies; fid++)
		if (one_version(t, (uint8_t)fid))
			return 1;
	return 0;
}

int rados_vrow_check(const rstore *rs, const store_table *t, const store_filter *f,
                     int has_lock, mrtx_bytes stored)
{
	const uint8_t *p = stored.data;
	uint64_t ts = 0;

	if (!f->at || !has_lock || f->lock_only || !reads_one_version(t, f))
		return 0;
	if (stored.size < STORE_ORDER_SIZE || p[0] != 0)
		return 0; /* not STABLE: the caller resolves it and reads again */
	for (unsigned i = 1; i < STORE_ORDER_SIZE; i++)
		ts = ts << 7 | (p[i] & 0x7f);
	if (ts <= f->at)
		return 0;
	return mrtx__seterr(MRTX_ESNAPSHOT, "%s: table '%s': a row was written at %llu, after "
	                    "timestamp %llu, and a family read keeps one version (what it held "
	                    "then is gone)", rs->addr, t->name, (unsigned long long)ts,
	                    (unsigned long long)f->at);
}
