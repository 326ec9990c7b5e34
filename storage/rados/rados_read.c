/*
 * rados_read.c - the storage seam's reads on RADOS (layout in rados_int.h;
 * writes: rados_write.c), and the keys and lock values both use.
 *
 * A row's lock and cells come from one read op on its tablet object, so
 * they are one state of the row.  A forward scan reads a page of a
 * tablet's lock keys and, in the same op, the cell keys from the same
 * place on (rows order their cells as their locks): each row whose cells
 * all lie inside the page is complete from that one op.  The rows the page
 * cut are read again by a compound op of their lock keys and the cells
 * from the first of them on, and a row wider than a page by itself
 * (rowread_take).  Reverse scans list the descending row markers, then read
 * each row's lock and cells in one op per row; lock-only scans stop after
 * the listing.  Many rows' reads (store_read_locks) go out at once (aio):
 * one round trip, whatever their number.
 */
#include "storage/rados/rados_int.h"
#include "storage/versions.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------- keys */

size_t rados_group_by_oid(const char *const *oids, size_t n, size_t *grp, size_t *order,
                          size_t *start, size_t *count)
{
	size_t ng = 0;

	for (size_t i = 0; i < n; i++) {
		size_t g = 0;

		while (g < ng && strcmp(oids[order[g]], oids[i]) != 0)
			g++; /* order[g]: the first op of group g, for now */
		if (g == ng) {
			order[ng] = i;
			count[ng++] = 0;
		}
		grp[i] = g;
		count[g]++;
	}
	for (size_t g = 0; g < ng; g++)
		start[g] = g ? start[g - 1] + count[g - 1] : 0;
	for (size_t g = 0; g < ng; g++)
		count[g] = 0;
	for (size_t i = 0; i < n; i++)
		order[start[grp[i]] + count[grp[i]]++] = i;
	return ng;
}

size_t rados_lock_key(uint8_t *buf, mrtx_bytes row)
{
	buf[0] = RK_LOCK;
	return 1 + rkey_put(buf + 1, row.data, row.size);
}

size_t rados_push_key(uint8_t *buf, mrtx_bytes row)
{
	buf[0] = RK_PUSH;
	return 1 + rkey_put(buf + 1, row.data, row.size);
}

size_t rados_onepc_row_key(uint8_t *buf, mrtx_bytes row)
{
	buf[0] = RK_ONEPC;
	return 1 + rkey_put(buf + 1, row.data, row.size);
}

size_t rados_desc_key(uint8_t *buf, mrtx_bytes row)
{
	buf[0] = RK_DESC;
	return 1 + rkey_put_desc(buf + 1, row.data, row.size);
}

size_t rados_cell_prefix(uint8_t *buf, mrtx_bytes row)
{
	buf[0] = RK_CELL;
	return 1 + rkey_put(buf + 1, row.data, row.size);
}

static int read_err(rstore *rs, int rc)
{
	if (rc == RCONN_TIMEDOUT)
		return mrtx__seterr(MRTX_ESTORE, "%s: %s", rs->addr, mrtx_errmsg());
	return rc;
}

/*
 * A tablet read asks for the state key beside what it wants (it sorts
 * before every row key, so it comes back first when present).  Take it
 * out of r->kvs: RMOVED when a split retired the tablet (its rows may be
 * elsewhere now), else 0 (open, or filled by a split and listed in the map
 * we read it from: complete).
 */
static int state_take(rread *r)
{
	if (r->nkvs && r->kvs[0].key.size == 2 && memcmp(r->kvs[0].key.data, rados_state_key, 2) == 0) {
		/* (retired by a split, or closed by a drop or truncate: the
		 * record says where the rows are now) */
		int retired = r->kvs[0].value.size &&
		              (*(const uint8_t *)r->kvs[0].value.data == RSTATE_RETIRED ||
		               *(const uint8_t *)r->kvs[0].value.data == RSTATE_DROPPED);

		r->kvs++;
		r->nkvs--;
		if (retired)
			return RMOVED;
	}
	return 0;
}

/* ---------------------------------------------------------------- cells */

/*
 * A row's read for reading with rconn_read: the lock key, and the cells f
 * asks for.  The buffers (keys, gets) live in `a`.
 */
typedef struct rowread rowread;
/* Gather a row's cell versions into rr->vs (rados_cell.c); rowread_done
 * chooses what the read shows. */
static int take_vers(rstore *rs, const store_table *t, const store_filter *f, size_t plen,
                     const rkv *kv, size_t n, mrtx_arena *a, rowread *rr);

struct rowread {
	uint8_t *lk, *cp, *first; /* lock key, cell prefix (+ family), first cell key */
	size_t lkn, cpn, firstn;
	mrtx_bytes keys[5]; /* the state key, the lock key, the collection
	                       mark, the one-phase mark, the row's own */
	rget get;
	int want_cells;
	store_ver *vs;         /* the versions read, chosen at the end */
	size_t nvs, vcap;
	size_t rowp;           /* the row's cell prefix: 0x03 . rkey(row) */
	uint64_t collected;    /* the tablet's collection mark (rados_gc.c) */
	uint64_t onepc;        /* its one-phase mark (store_seen) */
	uint64_t tag;          /* the row's last atomic commit (store_seen) */
	uint8_t *tk;           /* its key */
	size_t tkn;
	mrtx_bytes markraw;    /* ... as stored: its safe point and step nonce */
};

static int rowread_init(rowread *rr, mrtx_bytes row, const store_filter *f, mrtx_arena *a)
{
	memset(rr, 0, sizeof(*rr));
	if (!(rr->lk = arena_alloc(a, RCELL_MAX)) || !(rr->cp = arena_alloc(a, RCELL_MAX)) ||
	    !(rr->tk = arena_alloc(a, RCELL_MAX)))
		return MRTX_ENOMEM;
	rr->tkn = rados_onepc_row_key(rr->tk, row);
	rr->lkn = rados_lock_key(rr->lk, row);
	rr->cpn = rr->rowp = rados_cell_prefix(rr->cp, row);
	rr->keys[0] = MRTX_BYTES(rados_state_key, 2);
	rr->keys[1] = MRTX_BYTES(rr->lk, rr->lkn);
	rr->want_cells = !(f && f->lock_only);
	rr->keys[2] = MRTX_BYTES(rados_collect_key, 2); /* (read beside, rowread_op) */
	rr->keys[3] = MRTX_BYTES(rados_onepc_key, 2);
	rr->keys[4] = MRTX_BYTES(rr->tk, rr->tkn);
	if (!rr->want_cells)
		return 0;
	if (f && f->family >= 0) {
		/* a cell's versions share its prefix; a range starts after the
		 * qualifier's rkey less its terminator, below all its versions */
		rr->cp[rr->cpn++] = (uint8_t)(f->family + 1);
		if (f->qual_exact) {
			rr->cpn += rkey_put(rr->cp + rr->cpn, f->qs.data, f->qs.size);
		} else if (f->qs.size) {
			if (!(rr->first = arena_alloc(a, rr->cpn + 2 * f->qs.size + 2)))
				return MRTX_ENOMEM;
			memcpy(rr->first, rr->cp, rr->cpn);
			rr->firstn = rr->cpn + rkey_put(rr->first + rr->cpn, f->qs.data, f->qs.size) - 2;
			rr->get.start_after = MRTX_BYTES(rr->first, rr->firstn);
		}
	}
	rr->get.prefix = MRTX_BYTES(rr->cp, rr->cpn);
	rr->get.max = RLIST_MAX;
	return 0;
}

static void rowread_op(rowread *rr, const char *oid, const store_filter *f, rread *r)
{
	memset(r, 0, sizeof(*r));
	r->oid = oid;
	r->keys = rr->keys;
	r->nkeys = 2;
	if (f && f->at)
		r->nkeys = f->seen ? 5 : 3; /* the collection mark (and the
		                               one-phase marks) too */
	if (!rr->want_cells)
		return;
	r->gets = &rr->get;
	r->ngets = 1;
}

int rados_lock_value(const rstore *rs, mrtx_bytes rec, mrtx_arena *a, mrtx_bytes *out)
{
	uint8_t *p;

	if (!(p = arena_alloc(a, STORE_ORDER_SIZE + rec.size)))
		return MRTX_ENOMEM;
	rs->lock_order(rec.data, rec.size, p); /* set for writing (rados_store_open) */
	if (rec.size)
		memcpy(p + STORE_ORDER_SIZE, rec.data, rec.size);
	*out = MRTX_BYTES(p, STORE_ORDER_SIZE + rec.size);
	return 0;
}

int rados_lock_record(const rstore *rs, const char *oid, mrtx_bytes v, mrtx_bytes *out)
{
	if (v.size < STORE_ORDER_SIZE)
		return mrtx__seterr(MRTX_ECORRUPT, "%s: a lock value of %zu bytes in %s (lock "
		                    "values start with a %u-byte order key)", rs->addr, v.size, oid,
		                    STORE_ORDER_SIZE);
	*out = MRTX_BYTES((const uint8_t *)v.data + STORE_ORDER_SIZE, v.size - STORE_ORDER_SIZE);
	return 0;
}

static const store_filter all_cells = STORE_FILTER_ALL;

/* The qualifier of the last version taken (its size 0 and data NULL: none). */
static mrtx_bytes last_qual(const rowread *rr)
{
	return rr->nvs ? rr->vs[rr->nvs - 1].qual : MRTX_BYTES(NULL, 0);
}

/* The read is complete: choose what it shows from the versions. */
static int rowread_done(rstore *rs, const store_table *t, rowread *rr, const store_filter *f,
                        mrtx_arena *a, store_row *out)
{
	if (!rr->want_cells)
		return 0;
	if (!f)
		f = &all_cells;
	if (f->at && f->at < rr->collected)
		return mrtx__seterr(MRTX_ESNAPSHOT, "%s: table '%s': versions at or below %llu "
		                    "were collected here (`mrtx gc`, a commit's trim, or a "
		                    "truncate), above the read's timestamp %llu",
		                    rs->addr, t->name, (unsigned long long)rr->collected,
		                    (unsigned long long)f->at);
	return store_versions_select(t, f, rr->vs, rr->nvs, a, out);
}

/* Fill out from a finished read (and read on while the row has more cells
 * than one listing returns, checking its lock stays the same). */
static int rowread_take(rstore *rs, const store_table *t, rowread *rr, rread *r,
                        mrtx_bytes row, const store_filter *f, mrtx_arena *a, store_row *out)
{
	int rc;

	for (int attempt = 0;; attempt++) {
		if ((rc = state_take(r)))
			return rc;
		out->row = row;
		out->has_lock = 0;
		out->lock = MRTX_BYTES(NULL, 0);
		out->cells = NULL;
		out->ncells = 0;
		out->vmax = 0;
		rr->nvs = 0;
		rr->collected = 0;
		rr->onepc = 0;
		rr->tag = 0;
		rr->markraw = MRTX_BYTES(NULL, 0);
		for (size_t i = 0; i < r->nkvs; i++) {
			const rkv *kv = &r->kvs[i];

			if (kv->key.size == 2 && memcmp(kv->key.data, rados_onepc_key, 2) == 0) {
				rr->onepc = rados_mark_value(kv->value);
			} else if (kv->key.size == rr->tkn && memcmp(kv->key.data, rr->tk, rr->tkn) == 0) {
				rr->tag = rados_mark_value(kv->value);
			} else if (kv->key.size == 2 &&
			           memcmp(kv->key.data, rados_collect_key, 2) == 0) {
				rr->markraw = kv->value;
				for (size_t b = 0; b < kv->value.size && b < 8; b++)
					rr->collected = rr->collected << 7 |
					                (((const uint8_t *)kv->value.data)[b] & 0x7f);
			} else if (kv->key.size == rr->lkn && memcmp(kv->key.data, rr->lk, rr->lkn) == 0) {
				out->has_lock = 1;
				if ((rc = rados_lock_record(rs, r->oid, kv->value, &out->lock)))
					return rc;
			} else if ((rc = take_vers(rs, t, f, rr->rowp, kv, 1, a, rr))) {
				return rc;
			}
		}
		if (!r->ngets)
			return rowread_done(rs, t, rr, f, a, out);
		if ((rc = take_vers(rs, t, f, rr->rowp, rr->get.kvs, rr->get.nkvs, a, rr)))
			return rc;
		{
			mrtx_bytes lq = last_qual(rr);

			if (!rr->get.more || !rr->get.nkvs ||
			    (f && f->family >= 0 && f->qe.size && lq.data &&
			     cmp_bytes(lq.data, lq.size, f->qe.data, f->qe.size) >= 0))
				return rowread_done(rs, t, rr, f, a, out);
		}
		/* More cells than one listing: read on, the lock read again beside. */
		{
			mrtx_bytes lock0 = out->lock;
			int had = out->has_lock;

			for (;;) {
				rread r2;

				mrtx_bytes l2 = MRTX_BYTES(NULL, 0), m2 = MRTX_BYTES(NULL, 0);
				int had2 = 0;

				memset(&r2, 0, sizeof(r2));
				rr->get.start_after = rr->get.kvs[rr->get.nkvs - 1].key;
				r2.oid = r->oid;
				r2.keys = rr->keys;
				r2.nkeys = f && f->at ? 3 : 2; /* (and the mark) */
				r2.gets = &rr->get;
				r2.ngets = 1;
				atomic_fetch_add_explicit(&rs->read_txns, 1, memory_order_relaxed);
				if ((rc = rconn_read(rs->conn, &r2, 1, a)))
					return read_err(rs, rc);
				if ((rc = state_take(&r2)))
					return rc;
				for (size_t i = 0; i < r2.nkvs; i++) {
					if (r2.kvs[i].key.size == 2 &&
					    memcmp(r2.kvs[i].key.data, rados_collect_key, 2) == 0) {
						m2 = r2.kvs[i].value;
					} else {
						had2 = 1;
						if ((rc = rados_lock_record(rs, r->oid, r2.kvs[i].value, &l2)))
							return rc;
					}
				}
				/* the row changed meanwhile (a commit moves its lock, a
				 * collection step its tablet's mark): read it again whole */
				if (had2 != had ||
				    (had && cmp_bytes(l2.data, l2.size, lock0.data, lock0.size) != 0) ||
				    cmp_bytes(m2.data, m2.size, rr->markraw.data, rr->markraw.size) != 0)
					break;
				if ((rc = take_vers(rs, t, f, rr->rowp, rr->get.kvs, rr->get.nkvs, a,
				                    rr)))
					return rc;
				if (!rr->get.more || !rr->get.nkvs)
					return rowread_done(rs, t, rr, f, a, out);
			}
		}
		if (attempt >= 16)
			return mrtx__seterr(MRTX_ELOCKED, "%s: table '%s': a wide row keeps changing "
			                    "while it is read", rs->addr, t->name);
		/* start over */
		rowread_init(rr, row, f, a);
		rowread_op(rr, r->oid, f, r);
		atomic_fetch_add_explicit(&rs->read_txns, 1, memory_order_relaxed);
		if ((rc = rconn_read(rs->conn, r, 1, a)))
			return read_err(rs, rc);
	}
}

static int take_vers(rstore *rs, const store_table *t, const store_filter *f, size_t plen,
                     const rkv *kv, size_t n, mrtx_arena *a, rowread *rr)
{
	for (size_t i = 0; i < n; i++) {
		const uint8_t *k = kv[i].key.data;
		store_ver x;
		uint8_t *q;

		if (!(q = arena_alloc(a, kv[i].key.size)))
			return MRTX_ENOMEM;
		if (rados_vcell_parse(k, kv[i].key.size, plen, t->nfamilies, q, &x) ||
		    kv[i].value.size < 1)
			return mrtx__seterr(MRTX_ECORRUPT, "%s: table '%s': a malformed cell version "
			                    "key or value", rs->addr, t->name);
		if (f && f->family >= 0) {
			if (x.fid != (uint8_t)f->family)
				continue;
			if (f->qual_exact && cmp_bytes(x.qual.data, x.qual.size, f->qs.data,
			                               f->qs.size) != 0)
				continue;
			if (!f->qual_exact && f->qe.size &&
			    cmp_bytes(x.qual.data, x.qual.size, f->qe.data, f->qe.size) >= 0)
				break;
			if (!f->qual_exact && f->qs.size &&
			    cmp_bytes(x.qual.data, x.qual.size, f->qs.data, f->qs.size) < 0)
				continue;
		}
		x.flags = ((const uint8_t *)kv[i].value.data)[0];
		x.value = MRTX_BYTES((const uint8_t *)kv[i].value.data + 1, kv[i].value.size - 1);
		if (!(rr->vs = store_arr_grow(a, rr->vs, rr->nvs, &rr->vcap, sizeof(*rr->vs))))
			return MRTX_ENOMEM;
		rr->vs[rr->nvs++] = x;
	}
	return 0;
}

/* ------------------------------------------- what a snapshot reader saw */

/* One read of a row at a timestamp: the tablet it came from (in map) and
 * the tablet's one-phase mark beside it. */
typedef struct rseen_read {
	const store_table *t;
	const rtmap *map;
	const rtablet *tb;
	uint64_t mark, tag; /* the tablet's one-phase mark, the row's */
	const store_row *row;
} rseen_read;

/* The tablet's range [*lo, *hi) (hi NULL: to the end). */
static void tablet_range(const rtmap *m, const rtablet *tb, mrtx_bytes *lo, mrtx_bytes *hi)
{
	size_t i = (size_t)(tb - m->t);

	*lo = tb->start;
	*hi = i + 1 < m->n ? m->t[i + 1].start : MRTX_BYTES(NULL, 0);
}

static int seen_overlaps(const store_seen_range *e, mrtx_bytes lo, mrtx_bytes hi)
{
	/* [e.lo, e.hi) and [lo, hi) meet unless one ends at or before the
	 * other starts */
	if (e->hi && cmp_bytes(e->hi, e->hin, lo.data, lo.size) <= 0)
		return 0;
	return !(hi.data && cmp_bytes(hi.data, hi.size, e->lo, e->lon) <= 0);
}

static int seen_same(const store_seen_range *e, mrtx_bytes lo, mrtx_bytes hi)
{
	return cmp_bytes(e->lo, e->lon, lo.data, lo.size) == 0 && !e->hi == !hi.data &&
	       (!hi.data || cmp_bytes(e->hi, e->hin, hi.data, hi.size) == 0);
}

static uint8_t *dup_bytes(mrtx_bytes b)
{
	uint8_t *p = mrtx__malloc(b.size ? b.size : 1);

	if (p && b.size)
		memcpy(p, b.data, b.size);
	return p;
}

/*
 * A snapshot reader's check of an atomic commit it may have read half of
 * (store_seen, DESIGN §5.3).  Atomic commits of a tablet land in the order
 * of their stamps (their guard: the one-phase mark below the stamp), so
 * the lowest mark a reader met in a range is the state it first read
 * there, and a commit that landed later is stamped above it.  Each row
 * keeps the stamp of the last atomic commit that wrote it (its tag): a tag
 * above that lowest mark is a commit that landed since the first read, and
 * when it is at or below the snapshot, the first read may have shown its
 * other rows without it.  A tag above the snapshot may hide an earlier
 * such commit of the row: then a version read above the lowest mark (and
 * at or below the snapshot) counts as one.  A row whose last atomic
 * commit landed before the first read is never judged: no later one wrote
 * it.  The reads of one call go out together, so their lowest marks are
 * taken before any row is judged.  Splits copy the marks and tags, so a
 * range read before a split judges the rows of its children too.
 */
static int seen_note(const store_filter *f, const rseen_read *v, size_t n)
{
	store_seen *s = f ? f->seen : NULL;

	if (!s || !f->at)
		return 0;
	for (size_t i = 0; i < n; i++) {
		mrtx_bytes lo, hi;
		store_seen_range *e = NULL;

		tablet_range(v[i].map, v[i].tb, &lo, &hi);
		for (size_t k = 0; k < s->n && !e; k++)
			if (s->v[k].table == v[i].t && seen_same(&s->v[k], lo, hi))
				e = &s->v[k];
		if (e) {
			e->mark = MRTX_MIN(e->mark, v[i].mark);
			continue;
		}
		if (s->n == s->cap) {
			size_t cap = s->cap ? 2 * s->cap : 8;
			store_seen_range *nv = mrtx__reallocarray(s->v, cap, sizeof(*nv));

			if (!nv)
				return mrtx__seterr(MRTX_ENOMEM, "out of memory");
			s->v = nv;
			s->cap = cap;
		}
		e = &s->v[s->n];
		memset(e, 0, sizeof(*e));
		e->table = v[i].t;
		e->mark = v[i].mark;
		e->lon = lo.size;
		if (!(e->lo = dup_bytes(lo)) || (hi.data && !(e->hi = dup_bytes(hi)))) {
			mrtx__free(e->lo);
			return mrtx__seterr(MRTX_ENOMEM, "out of memory");
		}
		e->hin = hi.size;
		s->n++;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t vmax = v[i].row->vmax, tag = v[i].tag;
		mrtx_bytes lo, hi;

		if (!tag)
			continue; /* (no atomic commit ever wrote the row) */
		tablet_range(v[i].map, v[i].tb, &lo, &hi);
		for (size_t k = 0; k < s->n; k++) {
			const store_seen_range *e = &s->v[k];

			if (e->table != v[i].t || tag <= e->mark || !seen_overlaps(e, lo, hi))
				continue;
			/* the row's last atomic commit landed after the first
			 * read of the range: late when stamped at or below the
			 * snapshot; when above, an earlier one may have been, and
			 * the version read tells (conservatively) */
			if (tag <= f->at || (vmax && vmax > e->mark && vmax <= f->at))
				s->late = 1;
		}
	}
	return 0;
}

int rados_moved(rstore *rs, const store_table *t, const char *oid, int attempt)
{
	if (attempt + 1 >= RMOVED_TRIES)
		return mrtx__seterr(MRTX_ESTORE, "%s: table '%s': its tablets keep being split "
		                    "under this call", rs->addr, t->name);
	return rados_table_settle(rs, t, oid);
}

int rados_store_read_row(store *st, const store_table *t, mrtx_bytes row,
                         const store_filter *f, mrtx_arena *a, store_row *out)
{
	rstore *rs = RS(st);
	rowread rr;
	rread r;
	int rc;

	if ((rc = STORE_FAULT_R(rs, "read row")))
		return rc;
	for (int attempt = 0;; attempt++) {
		if ((rc = rowread_init(&rr, row, f, a)))
			return rc;
		const rtmap *map = rados_map(t);
		const rtablet *tb = rados_tablet_in(map, row);

		rowread_op(&rr, tb->oid, f, &r);
		atomic_fetch_add_explicit(&rs->read_txns, 1, memory_order_relaxed);
		if ((rc = rconn_read(rs->conn, &r, 1, a)))
			return read_err(rs, rc);
		if ((rc = rowread_take(rs, t, &rr, &r, row, f, a, out)) == 0) {
			rseen_read sr = { t, map, tb, rr.onepc, rr.tag, out };

			return seen_note(f, &sr, 1);
		}
		if (rc != RMOVED || (rc = rados_moved(rs, t, r.oid, attempt)))
			return rc;
	}
}

/* Read rows' locks (lock_only) or locks and cells, all at once, with the
 * tablets of map (RMOVED, *moved_oid set, when one was retired). */
static int read_many(rstore *rs, const rtmap *map, const store_table *const *ts,
                     const mrtx_bytes *rows, size_t n, const store_filter *f, mrtx_arena *a,
                     store_row *out, const char **moved_oid)
{
	rowread *rr;
	rread *r;
	int rc;

	if (n == 0)
		return 0;
	if (!(rr = arena_alloc(a, n * sizeof(*rr))) || !(r = arena_alloc(a, n * sizeof(*r))))
		return MRTX_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if ((rc = rowread_init(&rr[i], rows[i], f, a)))
			return rc;
		rowread_op(&rr[i], rados_tablet_in(map, rows[i])->oid, f, &r[i]);
	}
	atomic_fetch_add_explicit(&rs->read_txns, n, memory_order_relaxed);
	if ((rc = rconn_read(rs->conn, r, n, a)))
		return read_err(rs, rc);
	for (size_t i = 0; i < n; i++)
		if ((rc = rowread_take(rs, ts[i], &rr[i], &r[i], rows[i], f, a, &out[i]))) {
			if (rc == RMOVED)
				*moved_oid = r[i].oid;
			return rc;
		}
	if (f && f->seen && f->at) {
		rseen_read *sv = arena_alloc(a, n * sizeof(*sv));

		if (!sv)
			return MRTX_ENOMEM;
		for (size_t i = 0; i < n; i++)
			sv[i] = (rseen_read){ ts[i], map, rados_tablet_in(map, rows[i]), rr[i].onepc,
			                      rr[i].tag, &out[i] };
		return seen_note(f, sv, n);
	}
	return 0;
}

static int read_locks_once(rstore *rs, const store_rowref *refs, size_t n, mrtx_arena *a,
                           store_row *out, size_t *moved_ref)
{
	const char **oids;
	size_t *grp, *order, *start, *count, ng;
	mrtx_bytes *keys, *kof;
	rread *r;
	int rc;

	oids = arena_alloc(a, n * sizeof(*oids));
	grp = arena_alloc(a, 4 * n * sizeof(*grp));
	keys = arena_alloc(a, 2 * n * sizeof(*keys));
	kof = arena_alloc(a, n * sizeof(*kof));
	r = arena_alloc(a, n * sizeof(*r));
	if (!oids || !grp || !keys || !kof || !r)
		return MRTX_ENOMEM;
	order = grp + n;
	start = order + n;
	count = start + n;
	for (size_t i = 0; i < n; i++) {
		uint8_t *k = arena_alloc(a, 1 + RKEY_MAX);

		if (!k)
			return MRTX_ENOMEM;
		kof[i] = MRTX_BYTES(k, rados_lock_key(k, refs[i].row));
		oids[i] = rados_tablet_of(refs[i].table, refs[i].row)->oid;
	}
	ng = rados_group_by_oid(oids, n, grp, order, start, count);
	/* group g's keys: the state key, then its rows' lock keys */
	for (size_t g = 0; g < ng; g++) {
		keys[start[g] + g] = MRTX_BYTES(rados_state_key, 2);
		for (size_t j = 0; j < count[g]; j++)
			keys[start[g] + g + 1 + j] = kof[order[start[g] + j]];
		memset(&r[g], 0, sizeof(r[g]));
		r[g].oid = oids[order[start[g]]];
		r[g].keys = &keys[start[g] + g];
		r[g].nkeys = count[g] + 1;
	}
	atomic_fetch_add_explicit(&rs->read_txns, ng, memory_order_relaxed);
	if ((rc = rconn_read(rs->conn, r, ng, a)))
		return read_err(rs, rc);
	for (size_t g = 0; g < ng; g++)
		if (state_take(&r[g])) {
			*moved_ref = order[start[g]];
			return RMOVED;
		}
	for (size_t i = 0; i < n; i++) {
		const rread *g = &r[grp[i]];
		size_t lo = 0, hi = g->nkvs; /* the keys found, in key order */

		out[i] = (store_row){ refs[i].row, 0, { NULL, 0 }, NULL, 0, 0, 0 };
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			int c = cmp_bytes(g->kvs[mid].key.data, g->kvs[mid].key.size, kof[i].data,
			                  kof[i].size);

			if (c == 0) {
				out[i].has_lock = 1;
				if ((rc = rados_lock_record(rs, g->oid, g->kvs[mid].value, &out[i].lock)))
					return rc;
				break;
			}
			if (c < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
	}
	return 0;
}

/*
 * Locks only: the rows of one tablet share one read op (their lock keys,
 * omap_get_vals_by_keys), so a commit's or a validation's lock reads cost
 * one op per tablet, as its writes do, whatever the number of rows.
 */
int rados_store_read_locks(store *st, const store_rowref *refs, size_t n, mrtx_arena *a,
                           store_row *out)
{
	rstore *rs = RS(st);
	int rc;

	if ((rc = STORE_FAULT_R(rs, "read locks")))
		return rc;
	if (n == 0)
		return 0;
	for (int attempt = 0;; attempt++) {
		size_t m = 0;
		const store_table *t;

		if ((rc = read_locks_once(rs, refs, n, a, out, &m)) != RMOVED)
			return rc;
		t = refs[m].table;
		if ((rc = rados_moved(rs, t, rados_tablet_of(t, refs[m].row)->oid, attempt)))
			return rc;
	}
}

/* ---------------------------------------------------------------- scans */

static int row_in(const store_range *r, mrtx_bytes row, int *past)
{
	*past = store_range_past(r, row);
	return !*past && !store_range_before(r, row);
}

/* The safe point in a stored collection mark (rgen digits). */
static uint64_t mark_point(mrtx_bytes v)
{
	uint64_t c = 0;

	for (size_t b = 0; b < v.size && b < 8; b++)
		c = c << 7 | (((const uint8_t *)v.data)[b] & 0x7f);
	return c;
}

static int has_prefix(mrtx_bytes k, const uint8_t *p, size_t pn)
{
	return k.size >= pn && memcmp(k.data, p, pn) == 0;
}

/* How many cell keys a page listing rows rows asks for: the cells per
 * row seen last (a hint; 4 before any), plus a quarter of a cell a row
 * and 8 of slack, within 16 .. the OSD's bound. */
static uint64_t page_cells(rstore *rs, size_t rows)
{
	unsigned cpr16 = atomic_load_explicit(&rs->scan_cpr16, memory_order_relaxed);
	uint64_t want;

	if (!cpr16)
		cpr16 = 4 * 16;
	want = (uint64_t)rows * cpr16 / 16 + rows / 4 + 8;
	return MRTX_MIN(MRTX_MAX(want, (uint64_t)16), (uint64_t)RLIST_MAX);
}

/*
 * rows[from..to), listed in order in one tablet with their locks, take
 * their cells from cell keys kv[0..nkv) that one read op returned beside
 * those locks (more: the listing stopped at its max, so keys past the
 * last may exist).  A row is complete when a key past its cells came back
 * or the listing ended; completeness runs in row order, so the complete
 * rows are rows[from..from+*done).  collected: the tablet's collection
 * mark in the same op.
 */
static int page_take(rstore *rs, const store_table *t, const store_filter *f,
                     uint64_t collected, const rkv *kv, size_t nkv, int more, store_row *rows,
                     size_t from, size_t to, mrtx_arena *a, size_t *done)
{
	uint8_t *cp = arena_alloc(a, RCELL_MAX);
	size_t i, j = 0, used = 0;
	int rc;

	if (!cp)
		return MRTX_ENOMEM;
	for (i = from; i < to; i++) {
		size_t cpn = rados_cell_prefix(cp, rows[i].row), j0;
		rowread rr;

		while (j < nkv && cmp_bytes(kv[j].key.data, kv[j].key.size, cp, cpn) < 0)
			j++; /* (cells of a row not listed: a lock gone since) */
		j0 = j;
		while (j < nkv && has_prefix(kv[j].key, cp, cpn))
			j++;
		if (more && j == nkv)
			break; /* the listing ended inside or before its cells */
		memset(&rr, 0, sizeof(rr));
		rr.want_cells = 1;
		rr.collected = collected;
		rows[i].cells = NULL;
		rows[i].ncells = 0;
		rows[i].vmax = 0;
		if ((rc = take_vers(rs, t, f, cpn, kv + j0, j - j0, a, &rr)) ||
		    (rc = rowread_done(rs, t, &rr, f, a, &rows[i])))
			return rc;
		used += j - j0;
	}
	*done = i - from;
	if (*done)
		atomic_store_explicit(&rs->scan_cpr16,
		                      (unsigned)MRTX_MAX((size_t)1, MRTX_MIN(used * 16 / *done,
		                                                             (size_t)RLIST_MAX * 16)),
		                      memory_order_relaxed);
	return 0;
}

/*
 * The rows[from..to) of tablet tb a page cut: each one's lock and cells
 * again, from one op per page (their lock keys, and the cells from the
 * first row's on); a row with more cells than a page alone is read by
 * itself (rowread_take, which reads on).  A row whose lock is gone is left
 * with has_lock 0.  RMOVED when a split retired the tablet meanwhile.
 */
static int page_rest(rstore *rs, const store_table *t, const rtablet *tb,
                     const store_filter *f, store_row *rows, size_t from, size_t to,
                     mrtx_arena *a)
{
	while (from < to) {
		/* as many rows as a page of cells is likely to hold, and one */
		unsigned cpr16 = atomic_load_explicit(&rs->scan_cpr16, memory_order_relaxed);
		size_t fit = (size_t)RLIST_MAX * 16 / (cpr16 ? cpr16 : 4 * 16) + 1;
		size_t m = MRTX_MIN(to - from, MRTX_MIN(fit, (size_t)RLIST_MAX)), nk = 0, done = 0,
		       li = 0;
		mrtx_bytes *keys = arena_alloc(a, (m + 2) * sizeof(*keys));
		uint8_t *cp = arena_alloc(a, RCELL_MAX);
		uint64_t collected = 0;
		rget g;
		rread rd;
		int rc;

		if (!keys || !cp)
			return MRTX_ENOMEM;
		keys[nk++] = MRTX_BYTES(rados_state_key, 2);
		keys[nk++] = MRTX_BYTES(rados_collect_key, 2);
		for (size_t i = 0; i < m; i++) {
			uint8_t *k = arena_alloc(a, 1 + RKEY_MAX);

			if (!k)
				return MRTX_ENOMEM;
			keys[nk++] = MRTX_BYTES(k, rados_lock_key(k, rows[from + i].row));
		}
		memset(&g, 0, sizeof(g));
		memset(&rd, 0, sizeof(rd));
		g.prefix = MRTX_BYTES(cp, 1);
		/* (a row's cells all sort after its cell prefix) */
		g.start_after = MRTX_BYTES(cp, rados_cell_prefix(cp, rows[from].row));
		g.max = page_cells(rs, m);
		rd.oid = tb->oid;
		rd.gets = &g;
		rd.ngets = 1;
		rd.keys = keys;
		rd.nkeys = nk;
		atomic_fetch_add_explicit(&rs->read_txns, 1, memory_order_relaxed);
		if ((rc = rconn_read(rs->conn, &rd, 1, a)))
			return read_err(rs, rc);
		if ((rc = state_take(&rd)))
			return rc;
		/* the keys found come back in key order: the mark, then the
		 * locks in row order */
		for (size_t i = 0; i < rd.nkvs; i++)
			if (rd.kvs[i].key.size == 2 &&
			    memcmp(rd.kvs[i].key.data, rados_collect_key, 2) == 0)
				collected = mark_point(rd.kvs[i].value);
		for (size_t i = 0; i < m; i++) {
			const mrtx_bytes *lk = &keys[2 + i];
			store_row *o = &rows[from + i];

			while (li < rd.nkvs && cmp_bytes(rd.kvs[li].key.data, rd.kvs[li].key.size,
			                                 lk->data, lk->size) < 0)
				li++;
			o->has_lock = 0;
			o->lock = MRTX_BYTES(NULL, 0);
			if (li < rd.nkvs && cmp_bytes(rd.kvs[li].key.data, rd.kvs[li].key.size,
			                              lk->data, lk->size) == 0) {
				o->has_lock = 1;
				if ((rc = rados_lock_record(rs, tb->oid, rd.kvs[li].value, &o->lock)))
					return rc;
			}
		}
		if ((rc = page_take(rs, t, f, collected, g.kvs, g.nkvs, g.more, rows, from,
		                    from + m, a, &done)))
			return rc;
		if (!done) {
			/* the first row alone fills a page */
			rowread rr;
			rread r1;

			if ((rc = rowread_init(&rr, rows[from].row, f, a)))
				return rc;
			rowread_op(&rr, tb->oid, f, &r1);
			atomic_fetch_add_explicit(&rs->read_txns, 1, memory_order_relaxed);
			if ((rc = rconn_read(rs->conn, &r1, 1, a)))
				return read_err(rs, rc);
			if ((rc = rowread_take(rs, t, &rr, &r1, rows[from].row, f, a, &rows[from])))
				return rc;
			done = 1;
		}
		from += done;
	}
	return 0;
}

/*
 * The cell listing that starts where a lock listing from after starts:
 * 0x03 . after[1..], and past the row's own cells (. 0xFF, above every
 * fid+1 byte) when after is a row's whole lock key, not the prefix of one
 * (scan_once); into buf (RCELL_MAX bytes).
 */
static int page_cells_after(mrtx_bytes after, mrtx_arena *a, mrtx_bytes *out)
{
	uint8_t *buf, *tmp;
	size_t used, n;

	*out = after;
	if (!after.size)
		return 0;
	if (!(buf = arena_alloc(a, after.size + 1)) || !(tmp = arena_alloc(a, after.size)))
		return MRTX_ENOMEM;
	buf[0] = RK_CELL;
	memcpy(buf + 1, (const uint8_t *)after.data + 1, after.size - 1);
	n = after.size;
	if (rkey_get(tmp, (const uint8_t *)after.data + 1, after.size - 1, &used) != RKEY_BAD &&
	    used == after.size - 1)
		buf[n++] = 0xFF;
	*out = MRTX_BYTES(buf, n);
	return 0;
}

/*
 * List rows of one tablet in scan order into rows[*n..limit), from after
 * `after` (a key in the listing's key space, size 0 = the start).  Forward
 * lists the lock keys (and their values), reverse the descending markers.
 * With `page` (forward), the same op lists the cells from the same place
 * on, and the rows listed below index `need` get their cells here
 * (page_take; the rows the page cut, page_rest).
 */
static int list_rows(rstore *rs, const store_table *t, const rtablet *tb, int reverse,
                     const store_range *r, const store_filter *f, mrtx_bytes *after,
                     size_t limit, int page, size_t need, mrtx_arena *a, store_row *rows,
                     size_t *n, int *tablet_more, int *done)
{
	static const uint8_t pfx_lock[1] = { RK_LOCK }, pfx_desc[1] = { RK_DESC },
	                     pfx_cell[1] = { RK_CELL };
	/* the state, and the collection mark: a read below it finds no row
	 * it could trust to be absent (versions collected, or a truncate's
	 * fresh tablet: rados_ddl.c) */
	const mrtx_bytes sk[2] = { MRTX_BYTES(rados_state_key, 2),
	                           MRTX_BYTES(rados_collect_key, 2) };
	rget g[2];
	rread rd;
	size_t n0 = *n;
	uint64_t collected = 0;
	int rc;

	memset(g, 0, sizeof(g));
	memset(&rd, 0, sizeof(rd));
	g[0].prefix = MRTX_BYTES(reverse ? pfx_desc : pfx_lock, 1);
	g[0].start_after = *after;
	g[0].max = MRTX_MIN(limit - *n, (size_t)RLIST_MAX);
	rd.oid = tb->oid;
	rd.gets = g;
	rd.ngets = 1;
	rd.keys = sk;
	rd.nkeys = 2;
	if (page) {
		if ((rc = page_cells_after(*after, a, &g[1].start_after)))
			return rc;
		g[1].prefix = MRTX_BYTES(pfx_cell, 1);
		g[1].max = page_cells(rs, (size_t)g[0].max);
		rd.ngets = 2;
	}
	atomic_fetch_add_explicit(&rs->read_txns, 1, memory_order_relaxed);
	if ((rc = rconn_read(rs->conn, &rd, 1, a)))
		return read_err(rs, rc);
	if ((rc = state_take(&rd)))
		return rc;
	if (rd.nkvs)
		collected = mark_point(rd.kvs[0].value);
	if (rd.nkvs && f && f->at) {
		if (f->at < collected)
			return mrtx__seterr(MRTX_ESNAPSHOT, "%s: table '%s': versions at or below "
			                    "%llu were collected or truncated here, above the read's "
			                    "timestamp %llu", rs->addr, t->name,
			                    (unsigned long long)collected, (unsigned long long)f->at);
	}
	*tablet_more = g[0].more && g[0].nkvs;
	for (size_t i = 0; i < g[0].nkvs; i++) {
		const rkv *kv = &g[0].kvs[i];
		uint8_t *buf = arena_alloc(a, kv->key.size);
		size_t used, len;
		mrtx_bytes row;
		int past;

		if (!buf)
			return MRTX_ENOMEM;
		len = reverse ? rkey_get_desc(buf, (const uint8_t *)kv->key.data + 1, kv->key.size - 1,
		                              &used) :
		                rkey_get(buf, (const uint8_t *)kv->key.data + 1, kv->key.size - 1, &used);
		if (len == RKEY_BAD || used != kv->key.size - 1)
			return mrtx__seterr(MRTX_ECORRUPT, "%s: table '%s': a malformed row key in %s",
			                    rs->addr, t->name, tb->oid);
		row = MRTX_BYTES(buf, len);
		*after = kv->key;
		if (!row_in(r, row, &past)) {
			/* forward: past hi ends the scan; reverse: below lo does */
			if (reverse ? !past : past) {
				*done = 1;
				break;
			}
			continue;
		}
		rows[*n].row = row;
		rows[*n].has_lock = !reverse;
		rows[*n].lock = MRTX_BYTES(NULL, 0);
		if (!reverse && (rc = rados_lock_record(rs, tb->oid, kv->value, &rows[*n].lock)))
			return rc;
		rows[*n].cells = NULL;
		rows[*n].ncells = 0;
		rows[*n].vmax = 0;
		(*n)++;
		if (*n == limit) {
			*tablet_more = 1;
			break;
		}
	}
	if (page && n0 < MRTX_MIN(*n, need)) {
		size_t to = MRTX_MIN(*n, need), took = 0;

		if ((rc = page_take(rs, t, f, collected, g[1].kvs, g[1].nkvs, g[1].more, rows, n0, to,
		                    a, &took)))
			return rc;
		if (n0 + took < to) {
			if ((rc = FAILPOINT(FP_SCAN_AFTER_PAGE)))
				return rc;
			return page_rest(rs, t, tb, f, rows, n0 + took, to, a);
		}
	}
	return 0;
}

/*
 * One scan with the tablets of map rt; RMOVED (*moved_oid set) when it met
 * a tablet a split retired.
 */
static int scan_once(rstore *rs, const rtmap *rt, const store_table *t, const store_range *r,
                     int reverse, const store_filter *f, size_t max_rows, mrtx_arena *a,
                     store_row **rows_out, size_t *nrows, int *more, const char **moved_oid)
{
	size_t cap = max_rows ? max_rows : 256, n = 0, ti;
	store_row *rows;
	mrtx_bytes after;
	store_range rest;
	uint8_t *kb;
	/* forward scans of cells take them with the listing (list_rows) */
	int rc, done, page = !reverse && !(f && f->lock_only);

	if (!(rows = arena_alloc(a, (cap + 1) * sizeof(*rows))) || !(kb = arena_alloc(a, RCELL_MAX)))
		return MRTX_ENOMEM;
again:
	after = MRTX_BYTES(NULL, 0);
	done = 0;
	/* the first tablet in scan order and where in it to start */
	if (!reverse) {
		ti = r->lo.size ? (size_t)(rados_tablet_in(rt, r->lo) - rt->t) : 0;
		if (r->lo.size) {
			size_t k = rados_lock_key(kb, r->lo);

			/* start_after excludes the key given: lo's own lock key when lo
			 * is excluded, else that key less its last byte, a prefix of it
			 * below which no other row's lock key sorts */
			after = MRTX_BYTES(kb, r->lo_excl ? k : k - 1);
		}
	} else {
		ti = r->hi.size ? (size_t)(rados_tablet_in(rt, r->hi) - rt->t) : rt->n - 1;
		if (r->hi.size)
			after = MRTX_BYTES(kb, rados_desc_key(kb, r->hi));
	}
	for (;;) {
		int tmore = 0;
		size_t limit = max_rows ? max_rows + 1 : cap + 1;

		if ((rc = list_rows(rs, t, &rt->t[ti], reverse, r, f, &after, limit, page,
		                    max_rows ? max_rows : SIZE_MAX, a, rows, &n, &tmore, &done))) {
			if (rc == RMOVED)
				*moved_oid = rt->t[ti].oid;
			return rc;
		}
		if (done)
			break;
		if (max_rows && n > max_rows) {
			n = max_rows;
			*more = 1;
			break;
		}
		if (!max_rows && n > cap) {
			/* no limit: grow and go on */
			store_row *nr = arena_alloc(a, (2 * cap + 1) * sizeof(*nr));

			if (!nr)
				return MRTX_ENOMEM;
			memcpy(nr, rows, n * sizeof(*nr));
			rows = nr;
			cap *= 2;
		}
		if (tmore)
			continue;
		if (reverse ? ti == 0 : ti + 1 == rt->n)
			break;
		/* the next tablet in scan order holds no row of the range */
		if (!reverse && r->hi.size &&
		    cmp_bytes(rt->t[ti + 1].start.data, rt->t[ti + 1].start.size,
		              r->hi.data, r->hi.size) >= 0)
			break;
		if (reverse && r->lo.size &&
		    cmp_bytes(rt->t[ti].start.data, rt->t[ti].start.size,
		              r->lo.data, r->lo.size) <= 0)
			break;
		ti = reverse ? ti - 1 : ti + 1;
		after = MRTX_BYTES(NULL, 0);
	}
	/* Each row's lock and cells from one read (reverse rows need the lock;
	 * forward ones have them from list_rows). */
	if (n && (reverse || !(f && f->lock_only))) {
		store_row *full = rows;
		size_t k = 0;

		if (reverse) {
			const store_table **ts = arena_alloc(a, n * sizeof(*ts));
			mrtx_bytes *keys = arena_alloc(a, n * sizeof(*keys));

			if (!ts || !keys || !(full = arena_alloc(a, n * sizeof(*full))))
				return MRTX_ENOMEM;
			for (size_t i = 0; i < n; i++) {
				ts[i] = t;
				keys[i] = rows[i].row;
			}
			if ((rc = read_many(rs, rt, ts, keys, n, f, a, full, moved_oid)))
				return rc;
		}
		/* a row whose lock vanished meanwhile (a rolled-back insert) is gone */
		for (size_t i = 0; i < n; i++)
			if (full[i].has_lock)
				rows[k++] = full[i];
		if (k == 0 && *more) {
			/* every row listed vanished: an empty batch would read as the
			 * end of the range, so list on after the last of them */
			rest = *r;
			if (!reverse) {
				rest.lo = rows[n - 1].row;
				rest.lo_excl = 1;
			} else {
				rest.hi = rows[n - 1].row;
			}
			r = &rest;
			n = 0;
			*more = 0;
			goto again;
		}
		n = k;
	}
	*rows_out = rows;
	*nrows = n;
	return 0;
}

int rados_store_scan_rows(store *st, const store_table *t, const store_range *r, int reverse,
                          const store_filter *f, size_t max_rows, mrtx_arena *a,
                          store_row **rows_out, size_t *nrows, int *more)
{
	rstore *rs = RS(st);
	int rc;

	*rows_out = NULL;
	*nrows = 0;
	*more = 0;
	if ((rc = STORE_FAULT_R(rs, "scan")))
		return rc;
	for (int attempt = 0;; attempt++) {
		const char *oid = NULL;

		*more = 0;
		rc = scan_once(rs, rados_map(t), t, r, reverse, f, max_rows, a, rows_out, nrows, more,
		               &oid);
		if (rc != RMOVED || (rc = rados_moved(rs, t, oid, attempt)))
			return rc;
	}
}
