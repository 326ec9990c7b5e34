/*
 * rados_gc.c - `mrtx gc` on a RADOS store of format 4 (store_gc_* of
 * store.h; the versions' layout in rados_cell.c).
 *
 * A step walks the version keys (0x03 ...) of one tablet from a row on,
 * one listing at a time, and decides each cell's versions newest first,
 * as the LMDB collector does:
 *
 *   version of a cell            decision
 *   above safe                   keep (a running snapshot at or above safe
 *                                may read it)
 *   at or below safe, the i-th of the cell's versions at or below safe:
 *   a deletion                   i = 0: drop it and every older one (the
 *                                cell is absent for every snapshot left);
 *                                i > 0: keep it, drop every older one
 *   not kept by the policy       drop it and every older one
 *   (store_version_kept, rank i)
 *   otherwise                    keep; the last kept one of a cell that
 *                                lost older ones is rewritten with GONE
 *                                (not when the drop began at a deletion:
 *                                the cell was absent there)
 *
 * So every snapshot at or above safe reads what it read before the step
 * (the newest version at or below it, within the policy counted among
 * the versions at or below it: storage/versions.c's live rule).
 *
 * Whole rows only: a step ends at a row boundary after max_rows rows, or
 * at the end of a tablet.  Its removals go out as one compound write on
 * the tablet, guarded by the tablet being open (a split: settle, retry)
 * and by the tablet's collection mark (0x01 'T': safe and a step nonce,
 * rgen digits) being at or below safe (a run with a newer safe point was there: nothing to do).
 * The same write sets the mark to safe.  Readers fetch the mark beside the
 * row: a read at a timestamp below it may miss what was collected, and
 * says MRTX_ESNAPSHOT (rados_read.c) -- so a mrtx_begin_at transaction that
 * began before the safe point rose is told, never shown a wrong value.
 * Nothing else guards the removals: versions never change once written
 * (GONE aside), and a commit meanwhile only adds newer ones, which can make
 * older ones droppable but never needed again.
 *
 * Metadata: "g/safe" (u64 LE, only rises) and "g/cursor" (safe u64 LE,
 * table name length, name, done byte, row), as LMDB keeps them; an empty
 * cursor is none.
 */
#include "storage/sim_hooks.h"
#include "storage/rados/rados_int.h"
#include "storage/versions.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GC_SAFE_KEY STORE_GC_SAFE_KEY
#define GC_CURSOR_KEY "g/cursor"

const uint8_t rados_collect_key[2] = { RK_GEN_0, 'T' };

static int meta_one(rstore *rs, const char *key, mrtx_arena *a, mrtx_bytes *v)
{
	const char *keys[1] = { key };

	return rados_meta_read(rs, keys, 1, a, v);
}

int rados_store_gc_mark(store *st, uint64_t safe, int end)
{
	rstore *rs = RS(st);
	mrtx_arena a;
	int rc = 0;

	arena_init(&a);
	for (int attempt = 0; attempt < 32; attempt++) {
		const char *key = end ? GC_CURSOR_KEY : GC_SAFE_KEY;
		uint8_t nv[8];
		mrtx_bytes v;
		int applied = 0;

		if ((rc = meta_one(rs, key, &a, &v)))
			break;
		if (end) {
			if (!v.size)
				break;
			rc = rados_meta_cas(rs, key, v, MRTX_BYTES("", 0), &applied);
		} else {
			if (v.size == 8 && mrtx__le64_get(v.data) >= safe)
				break; /* only rises */
			mrtx__le64_put(nv, safe);
			rc = rados_meta_cas(rs, key, v.data ? v : MRTX_BYTES("", 0),
			                    MRTX_BYTES(nv, 8), &applied);
		}
		if (rc || applied)
			break;
		rc = mrtx__seterr(MRTX_ESTORE, "%s: the collector's record %s keeps changing",
		                  rs->addr, key);
	}
	arena_free(&a);
	return rc;
}

int rados_store_gc_cursor(store *st, uint64_t *safe, char *table, uint8_t *row, size_t *rowlen,
                          int *table_done)
{
	rstore *rs = RS(st);
	const uint8_t *p;
	mrtx_arena a;
	mrtx_bytes v;
	size_t nl;
	int rc;

	arena_init(&a);
	if ((rc = meta_one(rs, GC_CURSOR_KEY, &a, &v)))
		goto done;
	rc = MRTX_NOTFOUND;
	if (!v.size)
		goto done;
	p = v.data;
	nl = v.size > 8 ? p[8] : 0;
	if (v.size < 10 || nl == 0 || nl > MRTX_MAX_NAME || v.size < 10 + nl ||
	    v.size - 10 - nl > MRTX_MAX_KEY) {
		rc = mrtx__seterr(MRTX_ECORRUPT, "%s: the collector's cursor is malformed", rs->addr);
		goto done;
	}
	*safe = mrtx__le64_get(p);
	memcpy(table, p + 9, nl);
	table[nl] = 0;
	*table_done = p[9 + nl] != 0;
	*rowlen = v.size - 10 - nl;
	if (*rowlen)
		memcpy(row, p + 10 + nl, *rowlen);
	rc = 0;
done:
	arena_free(&a);
	return rc;
}

static int cursor_put(rstore *rs, uint64_t safe, const store_table *t, int done,
                      const uint8_t *row, size_t rowlen)
{
	size_t nl = strlen(t->name);
	uint8_t buf[8 + 1 + MRTX_MAX_NAME + 1 + MRTX_MAX_KEY];
	rkv set;
	mrtx_arena a;
	mrtx_bytes old;
	int rc, applied = 0;

	mrtx__le64_put(buf, safe);
	buf[8] = (uint8_t)nl;
	memcpy(buf + 9, t->name, nl);
	buf[9 + nl] = (uint8_t)!!done;
	if (rowlen)
		memcpy(buf + 10 + nl, row, rowlen);
	set = (rkv){ MRTX_CSTR(GC_CURSOR_KEY), MRTX_BYTES(buf, 10 + nl + rowlen) };
	/* (one writer at a time is the common case; a race is settled by the
	 * next read of the cursor, either value being a valid place) */
	arena_init(&a);
	if ((rc = meta_one(rs, GC_CURSOR_KEY, &a, &old)) == 0)
		rc = rados_meta_cas(rs, GC_CURSOR_KEY, old.data ? old : MRTX_BYTES("", 0),
		                    set.value, &applied);
	arena_free(&a);
	return rc;
}

/* What one step gathers for its tablet's write. */
typedef struct gcw {
	mrtx_bytes *rms;
	size_t nrms, crms;
	rkv *sets;
	size_t nsets, csets;
} gcw;

static int gc_rm(gcw *w, mrtx_arena *a, mrtx_bytes key)
{
	if (!(w->rms = store_arr_grow(a, w->rms, w->nrms, &w->crms, sizeof(*w->rms))))
		return MRTX_ENOMEM;
	w->rms[w->nrms++] = key;
	return 0;
}

static int gc_gone(gcw *w, mrtx_arena *a, mrtx_bytes key, mrtx_bytes value)
{
	uint8_t *v = arena_dup(a, value.data, value.size);

	if (!v || !(w->sets = store_arr_grow(a, w->sets, w->nsets, &w->csets, sizeof(*w->sets))))
		return MRTX_ENOMEM;
	v[0] |= CELL_GONE;
	w->sets[w->nsets++] = (rkv){ key, MRTX_BYTES(v, value.size) };
	return 0;
}

/* One cell's versions as a step meets them, newest first. */
typedef struct gcell {
	int any;
	uint8_t fid;
	mrtx_bytes qual;      /* in the arena */
	size_t i;             /* versions met */
	int dropping;
	int absent;           /* the drop began at a deletion */
	size_t dropped;
	mrtx_bytes last_key, last_val; /* the last kept version */
} gcell;

/* The cell ends: its last kept version gets GONE when older ones went. */
static int cell_end(gcell *c, gcw *w, mrtx_arena *a)
{
	int rc = 0;

	if (c->any && c->dropped && !c->absent && c->last_key.size &&
	    !(((const uint8_t *)c->last_val.data)[0] & CELL_GONE))
		rc = gc_gone(w, a, c->last_key, c->last_val);
	memset(c, 0, sizeof(*c));
	return rc;
}

/* Send tablet oid's removals and marks: 0, RMOVED (split), or an error;
 * *skipped when a run with a newer safe point had been there.
 * Keeps I19 (DESIGN §10). */
static int gc_send(rstore *rs, const char *oid, gcw *w, uint64_t safe, int *skipped)
{
	uint8_t mark[16], below[8];
	static _Atomic uint64_t steps;
	rguard g[2];
	rkv *sets;
	rwrite wr;
	int rc;

	*skipped = 0;
	if (!w->nrms && !w->nsets)
		return 0;
	if (!(sets = malloc((w->nsets + 1) * sizeof(*sets))))
		return mrtx__seterr(MRTX_ENOMEM, "out of memory collecting versions");
	if (w->nsets)
		memcpy(sets, w->sets, w->nsets * sizeof(*sets));
	/* the mark: safe, then a nonce that differs from step to step, so
	 * that a reader paging through a wide row sees a step go by even
	 * within one run (rados_read.c compares it); as rgen digits, so that
	 * "stored < rgen(safe + 1)" still compares the safe points */
	rgen_put(mark, safe);
	{
		uint64_t nonce = mrtx__now_us() ^ ((uint64_t)getpid() << 40) ^
		                 atomic_fetch_add(&steps, 1);

		(void)mrtx__sim_random(&nonce, sizeof(nonce)); /* replayable in the simulator */
		rgen_put(mark + 8, nonce & RGEN_MAX);
	}
	rgen_put(below, safe + 1);
	sets[w->nsets] = (rkv){ MRTX_BYTES(rados_collect_key, 2), MRTX_BYTES(mark, 16) };
	g[0] = (rguard){ MRTX_BYTES(rados_state_key, 2), MRTX_BYTES("", 0),
	                 LIBRADOS_CMPXATTR_OP_EQ, 0 };
	g[1] = (rguard){ MRTX_BYTES(rados_collect_key, 2), MRTX_BYTES(below, 8),
	                 LIBRADOS_CMPXATTR_OP_LT, 0 };
	memset(&wr, 0, sizeof(wr));
	wr.oid = oid;
	wr.guards = g;
	wr.nguards = 2;
	wr.sets = sets;
	wr.nsets = w->nsets + 1;
	wr.rms = w->rms;
	wr.nrms = w->nrms;
	atomic_fetch_add_explicit(&rs->write_txns, 1, memory_order_relaxed);
	rc = rconn_write(rs->conn, &wr, 1);
	free(sets);
	if (rc == RCONN_TIMEDOUT)
		return mrtx__seterr(MRTX_ESTORE, "%s: %s", rs->addr, mrtx_errmsg());
	if (rc)
		return rc;
	if (wr.result == -ECANCELED) {
		if (g[0].result == -ECANCELED)
			return RMOVED;
		*skipped = 1;
		return 0;
	}
	return wr.result ? mrtx__seterr(MRTX_ESTORE, "%s: collecting in %s: %s", rs->addr, oid,
	                                strerror(-wr.result)) : 0;
}

/*
 * One step in the tablet holding row (rowlen 0: the table's first): up to
 * max_rows whole rows.  On return row/rowlen is where the next step starts
 * and *tdone says the tablet is done (the next starts at the next tablet).
 */
static int gc_tablet(rstore *rs, const store_table *t, const rtmap *map, uint8_t *row,
                     size_t *rowlen, uint64_t safe, size_t max_rows, int one_row,
                     int *tdone, uint64_t *collected, mrtx_arena *a)
{
	static const uint8_t pfx[1] = { RK_CELL };
	const rtablet *tb = rados_tablet_in(map, MRTX_BYTES(row, *rowlen));
	const mrtx_bytes sk = MRTX_BYTES(rados_state_key, 2);
	uint8_t *cur = arena_alloc(a, MRTX_MAX_KEY + 1), *start = arena_alloc(a, RCELL_MAX);
	size_t curlen = 0, rows = 0;
	int have_row = 0, rc, skipped;
	uint64_t now = mrtx__now_us();
	mrtx_bytes after = MRTX_BYTES(NULL, 0);
	gcw w;
	gcell c;

	if (!cur || !start)
		return MRTX_ENOMEM;
	memset(&w, 0, sizeof(w));
	memset(&c, 0, sizeof(c));
	*tdone = 0;
	mrtx_bytes prefix = MRTX_BYTES(pfx, 1);

	if (*rowlen || one_row) {
		size_t k = rados_cell_prefix(start, MRTX_BYTES(row, *rowlen));

		after = MRTX_BYTES(start, k - 1); /* below every key of the row */
		if (one_row) /* (store_trim_row: that row's keys only) */
			prefix = MRTX_BYTES(start, k);
	}
	for (;;) {
		rget g;
		rread rd;

		memset(&g, 0, sizeof(g));
		memset(&rd, 0, sizeof(rd));
		g.prefix = prefix;
		g.start_after = after;
		g.max = RLIST_MAX;
		rd.oid = tb->oid;
		rd.gets = &g;
		rd.ngets = 1;
		rd.keys = &sk;
		rd.nkeys = 1;
		atomic_fetch_add_explicit(&rs->read_txns, 1, memory_order_relaxed);
		if ((rc = rconn_read(rs->conn, &rd, 1, a)))
			return rc == RCONN_TIMEDOUT ? mrtx__seterr(MRTX_ESTORE, "%s: %s", rs->addr,
			                                           mrtx_errmsg()) : rc;
		if (rd.nkvs && rd.kvs[0].value.size &&
		    *(const uint8_t *)rd.kvs[0].value.data == RSTATE_RETIRED)
			return RMOVED;
		for (size_t i = 0; i < g.nkvs; i++) {
			const uint8_t *k = g.kvs[i].key.data;
			size_t klen = g.kvs[i].key.size, used, rl;
			uint8_t *rb = arena_alloc(a, klen), *qb = arena_alloc(a, klen);
			store_ver x;
			store_policy p;
			int same_cell;

			if (!rb || !qb)
				return MRTX_ENOMEM;
			rl = rkey_get(rb, k + 1, klen - 1, &used);
			if (rl == RKEY_BAD || rl > MRTX_MAX_KEY ||
			    rados_vcell_parse(k, klen, 1 + used, t->nfamilies, qb, &x) ||
			    g.kvs[i].value.size < 1)
				return mrtx__seterr(MRTX_ECORRUPT, "%s: table '%s': a malformed cell "
				                    "version key in %s", rs->addr, t->name, tb->oid);
			if (!have_row || rl != curlen || memcmp(rb, cur, rl) != 0) {
				if ((rc = cell_end(&c, &w, a)))
					return rc;
				if (have_row && ++rows == max_rows) {
					/* the next step starts at this row */
					memcpy(row, rb, rl);
					*rowlen = rl;
					goto send;
				}
				memcpy(cur, rb, rl);
				curlen = rl;
				have_row = 1;
			}
			x.flags = ((const uint8_t *)g.kvs[i].value.data)[0];
			same_cell = c.any && c.fid == x.fid &&
			            cmp_bytes(c.qual.data, c.qual.size, x.qual.data, x.qual.size) == 0;
			if (!same_cell) {
				if ((rc = cell_end(&c, &w, a)))
					return rc;
				c.any = 1;
				c.fid = x.fid;
				c.qual = x.qual;
			}
			p = store_table_policy(t, x.fid);
			if (c.dropping) {
				if ((rc = gc_rm(&w, a, g.kvs[i].key)))
					return rc;
				c.dropped++;
			} else if (x.ts > safe) {
				/* a running snapshot may read it: kept, and not
				 * counted in the policy's rank (c.i) */
				c.last_key = g.kvs[i].key;
				c.last_val = g.kvs[i].value;
				after = g.kvs[i].key;
				continue;
			} else if (x.flags & CELL_DELETED && c.i == 0) {
				/* deleted for every snapshot from safe on: all of it */
				if ((rc = gc_rm(&w, a, g.kvs[i].key)))
					return rc;
				c.dropping = 1;
				c.absent = 1;
				c.dropped++;
			} else if (x.flags & CELL_DELETED) {
				/* an older deletion stays, the oldest kept, so that a
				 * snapshot between it and the next version reads absent */
				c.last_key = g.kvs[i].key;
				c.last_val = g.kvs[i].value;
				c.dropping = 1;
			} else if (!(x.flags & CELL_DELETED) &&
			           !store_version_kept(&p, c.i, x.ts, now)) {
				if ((rc = gc_rm(&w, a, g.kvs[i].key)))
					return rc;
				c.dropping = 1;
				c.absent = c.i == 0; /* (past its TTL at rank 0: absent
				                      * there for every read, as a read
				                      * at a live snapshot has it) */
				c.dropped++;
			} else {
				c.last_key = g.kvs[i].key;
				c.last_val = g.kvs[i].value;
			}
			c.i++;
			after = g.kvs[i].key;
		}
		if (!(g.more && g.nkvs))
			break;
	}
	/* the tablet is done */
	if ((rc = cell_end(&c, &w, a)))
		return rc;
	*tdone = 1;
send:
	if ((rc = gc_send(rs, tb->oid, &w, safe, &skipped)))
		return rc;
	if (!skipped)
		*collected += w.nrms;
	return 0;
}

int rados_store_gc_step(store *st, const store_table *t, uint8_t *row, size_t *rowlen,
                        uint64_t safe, size_t max_rows, int *done, uint64_t *collected)
{
	rstore *rs = RS(st);
	int rc;

	*done = 0;
	for (int attempt = 0;; attempt++) {
		const rtmap *map = rados_map(t);
		const rtablet *tb = rados_tablet_in(map, MRTX_BYTES(row, *rowlen));
		uint8_t r0[MRTX_MAX_KEY];
		size_t r0len = *rowlen;
		mrtx_arena a;
		int tdone = 0;

		memcpy(r0, row, *rowlen);
		arena_init(&a);
		rc = gc_tablet(rs, t, map, row, rowlen, safe, max_rows ? max_rows : 1, 0, &tdone,
		               collected, &a);
		arena_free(&a);
		if (rc == RMOVED) {
			memcpy(row, r0, r0len); /* the same rows again, with the new map */
			*rowlen = r0len;
			if (attempt + 1 >= RMOVED_TRIES)
				return mrtx__seterr(MRTX_ESTORE, "%s: table '%s': its tablets keep "
				                    "being split under the collector", rs->addr, t->name);
			if ((rc = rados_table_settle(rs, t, tb->oid)))
				return rc;
			continue;
		}
		if (rc)
			return rc;
		if (tdone) {
			size_t ti = (size_t)(tb - map->t);

			if (ti + 1 < map->n) {
				/* the next tablet starts at its first row */
				memcpy(row, map->t[ti + 1].start.data, map->t[ti + 1].start.size);
				*rowlen = map->t[ti + 1].start.size;
			} else {
				*done = 1;
			}
		}
		return cursor_put(rs, safe, t, *done, row, *done ? 0 : *rowlen);
	}
}

int rados_store_trim_row(store *st, const store_table *t, mrtx_bytes row, uint64_t safe)
{
	rstore *rs = RS(st);
	uint8_t r[MRTX_MAX_KEY];
	size_t rowlen = row.size;
	uint64_t collected = 0;
	mrtx_arena a;
	int rc, tdone;

	if (row.size > MRTX_MAX_KEY)
		return 0;
	if (row.size)
		memcpy(r, row.data, row.size);
	arena_init(&a);
	rc = gc_tablet(rs, t, rados_map(t), r, &rowlen, safe, 1, 1, &tdone, &collected, &a);
	arena_free(&a);
	return rc == RMOVED ? 0 : rc; /* (split meanwhile: the next trim's) */
}
