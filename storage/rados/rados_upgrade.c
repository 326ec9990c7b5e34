/*
 * rados_upgrade.c - `mrtx upgrade rados://...`: a RADOS store of layout
 * format 1, 2 or 3 converted to format 4 in place (store_upgrade; DESIGN
 * §9, the layouts in rados_int.h and rados_cell.c).
 *
 * What changes.  A cell  0x03 . rkey(row) . fid+1 . rqual(q) -> value
 * becomes the version  0x03 . rkey(row) . fid+1 . rkey(q) . vt(ts) ->
 * GONE | value, ts being the commit that wrote it, which its row's STABLE
 * lock names (a row without a lock, which no release writes, gets ts 1).
 * Lock values of formats 1 and 2 gain their order key in front (format 3
 * has it).  Every tablet gets the collection mark at M, the upgrade's
 * timestamp, above every converted version: the old formats kept no older
 * versions and deleted cells left no trace, so a read at a snapshot below
 * M says MRTX_ESNAPSHOT.  The oracle NAME.ts is raised above M, so every
 * snapshot taken afterwards reads above the marks.
 *
 *   step     what it writes                           a crash leaves
 *   check    nothing: every tablet open, every lock   the old store
 *            STABLE, every cell key within format 4's
 *            rule (store_check_key)
 *   mark     NAME.meta: format "U" (nothing opens it   the old store, or "U"
 *            but the upgrade) and "upgrade" =          with its record: the
 *            from | 'c' | M (u64 LE)                   next run resumes
 *   convert  per tablet, batches of up to UP_ROWS      the tablet's progress
 *            rows: one compound op converts them and   key says where the
 *            sets the progress key 0x01 'V' ("r" .     next batch starts
 *            the last row's lock key; "d" and the
 *            mark with the last batch), guarded by
 *            the key's value (EQ: a batch applies
 *            once) and the tablet being open
 *   clean    "upgrade" phase 'x'; each tablet's 'V'    "U", phase 'x': the
 *            removed (splits refuse unknown keys);     next run cleans again
 *            NAME.ts raised above M
 *   finish   format "4", g/safe M, "upgrade" removed   the new store
 *
 * No client may use the store meanwhile: this release's refuse it from the
 * first write on ("U"), and the check refuses rows locked by transactions
 * in flight, but a client of an earlier release that has it open writes
 * the old layout.  Stop them first, as for any upgrade.
 */
#include "storage/sim_hooks.h"
#include "storage/keyenc.h"
#include "storage/rados/rados_int.h"
#include "storage/versions.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

/* the formats converted: 1 (before splits), 2 (lock values of the record
 * alone), 3 (lock values after their order key; cells of one version) */
#define RFORMAT_NOSPLIT "1"
#define RFORMAT_ORDERED "3"

#define UP_KEY "upgrade"
#define UP_REC_SIZE 10u
#define UP_ROWS 256u
/* a batch ends at the first row boundary past these (a single row above
 * them is one batch: the OSD's write limit, 90 MB by default, bounds it) */
#define UP_CELLS 1024u
#define UP_BYTES ((size_t)4 << 20)
#define UP_TIMEOUTS 8
/* an old row key's rkey: rows were at most MRTX_MAX_KEY bytes before
 * format 4 (store_check_key tells which rows fit format 4) */
#define OLD_RKEY_MAX (2u * MRTX_MAX_KEY + 2u)

static const uint8_t progress_key[2] = { RK_GEN_0, 'V' };

typedef struct upcheck upcheck;

typedef struct up {
	rstore *rs;
	store_upgrade_ts_fn row_ts;
	char from;     /* '1', '2' or '3' */
	uint64_t mark; /* M */
	uint64_t cells;
	int timeouts;  /* writes whose outcome was unknown */
	upcheck *check; /* what the check pass gathers */
} up;

static int io_err(up *u, int rc)
{
	return rc == RCONN_TIMEDOUT ? mrtx__seterr(MRTX_ESTORE, "upgrade %s: %s", u->rs->addr,
	                                           mrtx_errmsg()) : rc;
}

/* The lock record in a stored lock value of the old format. */
static int old_lock(const up *u, const char *oid, mrtx_bytes v, mrtx_bytes *rec)
{
	if (u->from != RFORMAT_ORDERED[0]) {
		*rec = v;
		return 0;
	}
	if (v.size < STORE_ORDER_SIZE)
		return mrtx__seterr(MRTX_ECORRUPT, "upgrade %s: a lock value of %zu bytes in %s",
		                    u->rs->addr, v.size, oid);
	*rec = MRTX_BYTES((const uint8_t *)v.data + STORE_ORDER_SIZE, v.size - STORE_ORDER_SIZE);
	return 0;
}

/* An old cell key: its row's rkey is k[1 .. 1 + *rk), its family byte
 * (fid + 1) k[1 + *rk], its qualifier decoded into qb (*ql bytes, at most
 * MRTX_MAX_KEY; qb has room for the key's size; the row into rb when rb).
 * -1 when malformed or over the limits. */
static int old_cell(const store_table *t, mrtx_bytes key, size_t *rk, uint8_t *rb, size_t *rl,
                    uint8_t *qb, size_t *ql)
{
	const uint8_t *k = key.data;
	uint8_t scratch[OLD_RKEY_MAX];
	size_t used, n;

	if (key.size < 4 || k[0] != RK_CELL)
		return -1;
	/* (rb, when given, has OLD_RKEY_MAX bytes: decoding never grows) */
	n = rkey_get(rb ? rb : scratch, k + 1, MRTX_MIN(key.size - 1, (size_t)OLD_RKEY_MAX),
	             &used);
	if (n == RKEY_BAD || n == 0 || n > MRTX_MAX_KEY || 1 + used >= key.size ||
	    k[1 + used] == 0 || (size_t)(k[1 + used] - 1) >= t->nfamilies)
		return -1;
	*ql = rqual_get(qb, k + 2 + used, key.size - 2 - used);
	if (*ql == RKEY_BAD || *ql > MRTX_MAX_KEY)
		return -1;
	*rk = used;
	if (rl)
		*rl = n;
	return 0;
}

/* Read up to max keys of oid with prefix tag after `after` (one listing),
 * and the tablet's state, progress and collection-mark keys beside. */
static int list_keys(up *u, const char *oid, uint8_t tag, mrtx_bytes after, uint64_t max,
                     rread *rd, rget *g, mrtx_arena *a)
{
	static const mrtx_bytes keys[3] = { { rados_state_key, 2 }, { progress_key, 2 },
		                                    { rados_collect_key, 2 } };
	static uint8_t tags[4] = { 0, 1, 2, 3 };
	int rc;

	memset(rd, 0, sizeof(*rd));
	memset(g, 0, sizeof(*g));
	g->prefix = MRTX_BYTES(&tags[tag], 1);
	g->start_after = after;
	g->max = max;
	rd->oid = oid;
	rd->gets = g;
	rd->ngets = max ? 1 : 0; /* (max 0: the two keys alone) */
	rd->keys = keys;
	rd->nkeys = 3;
	atomic_fetch_add_explicit(&u->rs->read_txns, 1, memory_order_relaxed);
	if ((rc = rconn_read(u->rs->conn, rd, 1, a)))
		return io_err(u, rc);
	if (rd->result && rd->result != -ENOENT)
		return mrtx__seterr(MRTX_ESTORE, "upgrade %s: reading %s: %s", u->rs->addr, oid,
		                    strerror(-rd->result));
	return 0;
}

/* The value of key k among a read's exact keys (NULL data: absent). */
static mrtx_bytes found(const rread *rd, const uint8_t *k)
{
	for (size_t i = 0; i < rd->nkvs; i++)
		if (rd->kvs[i].key.size == 2 && memcmp(rd->kvs[i].key.data, k, 2) == 0)
			return rd->kvs[i].value;
	return MRTX_BYTES(NULL, 0);
}

static int not_open(up *u, const store_table *t, const rtablet *tb, mrtx_bytes state)
{
	return mrtx__seterr(MRTX_ELOCKED, "upgrade %s: table '%s': tablet %s is in the middle of "
	                    "a split (state '%c'); nothing was changed: let the mrtx that wrote "
	                    "the store finish it (any read of the table does), then upgrade",
	                    u->rs->addr, t->name, tb->oid, state.size ?
	                    *(const char *)state.data : '?');
}

/* ------------------------------------------------------------- check */

struct upcheck {
	uint64_t maxts;
	size_t pending, toolong, cells;
};

static int check_tablet(up *u, const store_table *t, const rtablet *tb)
{
	upcheck *c = u->check;

	for (uint8_t tag = RK_LOCK; tag <= RK_CELL; tag++) {
		mrtx_bytes after = MRTX_BYTES(NULL, 0);
		uint8_t last[RCELL_MAX];

		for (;;) {
			mrtx_arena a;
			rread rd;
			rget g;
			int rc;

			arena_init(&a);
			if ((rc = list_keys(u, tb->oid, tag, after, RLIST_MAX, &rd, &g, &a))) {
				arena_free(&a);
				return rc;
			}
			if (found(&rd, rados_state_key).data) {
				rc = not_open(u, t, tb, found(&rd, rados_state_key));
			} else if (found(&rd, progress_key).data) {
				rc = mrtx__seterr(MRTX_ECORRUPT, "upgrade %s: tablet %s has an upgrade's "
				                  "progress key, but the store's format says no upgrade "
				                  "began", u->rs->addr, tb->oid);
			}
			for (size_t i = 0; rc == 0 && i < g.nkvs; i++) {
				uint8_t qb[RCELL_MAX], rb[OLD_RKEY_MAX];
				mrtx_bytes rec = MRTX_BYTES(NULL, 0);
				size_t rk, rl, ql;
				uint64_t ts = 0;
				int st;

				if (tag == RK_LOCK) {
					if ((rc = old_lock(u, tb->oid, g.kvs[i].value, &rec)))
						break;
					if ((st = u->row_ts(rec.data, rec.size, &ts)) < 0)
						rc = mrtx__seterr(MRTX_ECORRUPT, "upgrade %s: a malformed lock "
						                  "record in %s", u->rs->addr, tb->oid);
					c->pending += st > 0;
					c->maxts = MRTX_MAX(c->maxts, ts);
				} else if (g.kvs[i].key.size > RCELL_MAX ||
				           old_cell(t, g.kvs[i].key, &rk, rb, &rl, qb, &ql)) {
					rc = mrtx__seterr(MRTX_ECORRUPT, "upgrade %s: table '%s': a malformed "
					                  "cell key in %s", u->rs->addr, t->name, tb->oid);
				} else {
					c->cells++;
					c->toolong += store_check_key(t, MRTX_BYTES(rb, rl), ql) != 0;
				}
			}
			if (rc == 0 && g.nkvs) {
				mrtx_bytes k = g.kvs[g.nkvs - 1].key;

				memcpy(last, k.data, MRTX_MIN(k.size, sizeof(last)));
				after = MRTX_BYTES(last, MRTX_MIN(k.size, sizeof(last)));
			}
			arena_free(&a);
			if (rc)
				return rc;
			if (!(g.more && g.nkvs))
				break;
		}
	}
	return 0;
}

/* ----------------------------------------------------------- convert */

/* What one batch gathers for its write. */
typedef struct upw {
	rkv *sets;
	size_t nsets, csets;
	mrtx_bytes *rms;
	size_t nrms, crms;
	size_t bytes;
} upw;

static int upw_set(upw *w, mrtx_arena *a, mrtx_bytes k, mrtx_bytes v)
{
	if (!(w->sets = store_arr_grow(a, w->sets, w->nsets, &w->csets, sizeof(*w->sets))))
		return MRTX_ENOMEM;
	w->sets[w->nsets++] = (rkv){ k, v };
	w->bytes += k.size + v.size;
	return 0;
}

/* A lock of the batch: its record, which must be STABLE (a transaction
 * that began meanwhile is refused: a client still uses the store), and
 * its commit timestamp. */
static int batch_lock(up *u, const rtablet *tb, mrtx_bytes v, mrtx_bytes *rec, uint64_t *ts)
{
	int rc, st;

	if ((rc = old_lock(u, tb->oid, v, rec)))
		return rc;
	if ((st = u->row_ts(rec->data, rec->size, ts)) < 0)
		return mrtx__seterr(MRTX_ECORRUPT, "upgrade %s: a malformed lock record in %s",
		                    u->rs->addr, tb->oid);
	if (st > 0)
		return mrtx__seterr(MRTX_ELOCKED, "upgrade %s: a row of tablet %s was locked by a "
		                    "transaction after the upgrade began: a client of an earlier "
		                    "release still uses the store.  Stop every client and run the "
		                    "upgrade again; a transaction such a client left in flight "
		                    "keeps the upgrade from finishing (DESIGN §9)",
		                    u->rs->addr, tb->oid);
	return 0;
}

/*
 * One batch of tablet tb: the rows after the progress key, up to UP_ROWS
 * locks and, after the first whole row, UP_CELLS cells or UP_BYTES bytes
 * (whole rows only: the progress key names the last row done).  *done
 * when the tablet is converted.
 */
static int convert_batch(up *u, const store_table *t, const rtablet *tb, int *done,
                         mrtx_arena *a)
{
	uint8_t cstart[RCELL_MAX], cend[RCELL_MAX], tmp[RCELL_MAX], *pv, mark[16];
	mrtx_bytes prog, after = MRTX_BYTES(NULL, 0), cafter = MRTX_BYTES(NULL, 0),
	           bound = MRTX_BYTES(NULL, 0), cur = MRTX_BYTES(NULL, 0);
	size_t cendn = 0, li = 0, nlocks, nconv, ncells = 0, converted = 0;
	rkv *locks;
	rguard gd[3];
	rwrite w;
	rread rd;
	rget g;
	upw bw;
	int rc, last, fresh;

	*done = 0;
	memset(&bw, 0, sizeof(bw));
	if ((rc = list_keys(u, tb->oid, RK_LOCK, after, 0, &rd, &g, a)))
		return rc;
	if (rd.result == -ENOENT) {
		*done = 1; /* no object: nothing was ever written there */
		return 0;
	}
	if (found(&rd, rados_state_key).data)
		return not_open(u, t, tb, found(&rd, rados_state_key));
	prog = found(&rd, progress_key);
	fresh = !prog.data;
	if ((prog.data && prog.size == 1 && *(const uint8_t *)prog.data == 'd') ||
	    (fresh && found(&rd, rados_collect_key).data)) {
		/* done (an old format has no collection mark: a tablet with one
		 * and no progress key was converted and cleaned already, by an
		 * upgrade run beside this one) */
		*done = 1;
		return 0;
	}
	if (prog.data) {
		if (prog.size < 4 || *(const uint8_t *)prog.data != 'r')
			return mrtx__seterr(MRTX_ECORRUPT, "upgrade %s: tablet %s: a malformed "
			                    "progress key", u->rs->addr, tb->oid);
		after = MRTX_BYTES((const uint8_t *)prog.data + 1, prog.size - 1);
		/* the cells after the last row done: 0x03 . its rkey, ended */
		memcpy(tmp, after.data, MRTX_MIN(after.size, sizeof(tmp)));
		tmp[0] = RK_CELL;
		cafter = MRTX_BYTES(cstart, keyenc_prefix_end(cstart, tmp,
		                                             MRTX_MIN(after.size, sizeof(tmp))));
	}
	if ((rc = list_keys(u, tb->oid, RK_LOCK, after, UP_ROWS, &rd, &g, a)))
		return rc;
	locks = g.kvs;
	nlocks = g.nkvs;
	last = !(g.more && g.nkvs);
	if (!last) {
		/* this batch's cells end with its last row's */
		mrtx_bytes lk = locks[nlocks - 1].key;

		memcpy(tmp, lk.data, MRTX_MIN(lk.size, sizeof(tmp)));
		tmp[0] = RK_CELL;
		cendn = keyenc_prefix_end(cend, tmp, MRTX_MIN(lk.size, sizeof(tmp)));
	}
	/* the cells of the batch's rows: from after the last row done, up to
	 * the end of this batch's last row (the last batch: to the end), or
	 * to the end of the row at which the caps were reached */
	for (int more = 1; more;) {
		rread cr;
		rget cg;

		if ((rc = list_keys(u, tb->oid, RK_CELL, cafter, RLIST_MAX, &cr, &cg, a)))
			return rc;
		more = cg.more && cg.nkvs;
		for (size_t i = 0; i < cg.nkvs; i++) {
			mrtx_bytes k = cg.kvs[i].key, v = cg.kvs[i].value;
			uint8_t *qb, *kb, *nv, rb[OLD_RKEY_MAX];
			size_t rk, rl, ql, kn;
			uint64_t ts = 1;

			if (cendn && cmp_bytes(k.data, k.size, cend, cendn) >= 0) {
				more = 0;
				break;
			}
			if (k.size > RCELL_MAX - RVT_SIZE || !(qb = arena_alloc(a, k.size + 1)) ||
			    old_cell(t, k, &rk, rb, &rl, qb, &ql) ||
			    store_check_key(t, MRTX_BYTES(rb, rl), ql))
				/* (the check pass refused keys over format 4's rule) */
				return k.size <= RCELL_MAX - RVT_SIZE && !qb ? MRTX_ENOMEM :
				       mrtx__seterr(MRTX_ECORRUPT, "upgrade %s: table '%s': a "
				                    "malformed cell key in %s", u->rs->addr, t->name,
				                    tb->oid);
			if (!cur.data || cur.size != rk || memcmp(cur.data, (const uint8_t *)k.data + 1,
			                                          rk) != 0) {
				/* a new row: stop before it once past the caps */
				if (cur.data && (ncells >= UP_CELLS || bw.bytes >= UP_BYTES)) {
					bound = cur;
					more = 0;
					break;
				}
				cur = MRTX_BYTES((const uint8_t *)k.data + 1, rk);
			}
			/* its row's lock: both lists are in row order (rkey's) */
			while (li < nlocks && cmp_bytes((const uint8_t *)locks[li].key.data + 1,
			                                locks[li].key.size - 1,
			                                (const uint8_t *)k.data + 1, rk) < 0)
				li++;
			if (li < nlocks && locks[li].key.size - 1 == rk &&
			    memcmp((const uint8_t *)locks[li].key.data + 1,
			           (const uint8_t *)k.data + 1, rk) == 0) {
				mrtx_bytes rec = MRTX_BYTES(NULL, 0);

				if ((rc = batch_lock(u, tb, locks[li].value, &rec, &ts)))
					return rc;
				ts = MRTX_MAX(ts, 1);
			}
			if (ts >= (uint64_t)1 << 63)
				return mrtx__seterr(MRTX_ECORRUPT, "upgrade %s: a lock in %s names commit "
				                    "timestamp %llu, out of range", u->rs->addr, tb->oid,
				                    (unsigned long long)ts);
			if (!(kb = arena_alloc(a, RCELL_MAX)) || !(nv = arena_alloc(a, 1 + v.size)))
				return MRTX_ENOMEM;
			kn = rados_vcell_prefix(kb, k.data, 1 + rk,
			                        (uint8_t)(((const uint8_t *)k.data)[1 + rk] - 1),
			                        MRTX_BYTES(qb, ql));
			rados_vt_put(kb + kn, ts);
			nv[0] = CELL_GONE; /* nothing older was kept */
			if (v.size)
				memcpy(nv + 1, v.data, v.size);
			if ((rc = upw_set(&bw, a, MRTX_BYTES(kb, kn + RVT_SIZE),
			                  MRTX_BYTES(nv, 1 + v.size))) ||
			    !(bw.rms = store_arr_grow(a, bw.rms, bw.nrms, &bw.crms, sizeof(*bw.rms))))
				return rc ? rc : MRTX_ENOMEM;
			bw.rms[bw.nrms++] = k;
			ncells++;
			cafter = k;
		}
	}
	/* the locks of the rows done: checked STABLE, formats 1 and 2 given
	 * their order key; capped: only up to the bound row */
	nconv = nlocks;
	if (bound.data) {
		last = 0;
		for (nconv = 0; nconv < nlocks &&
		     cmp_bytes((const uint8_t *)locks[nconv].key.data + 1, locks[nconv].key.size - 1,
		               bound.data, bound.size) <= 0; nconv++)
			;
	}
	for (size_t i = 0; i < nconv; i++) {
		mrtx_bytes rec = MRTX_BYTES(NULL, 0), v;
		uint64_t ts;

		if ((rc = batch_lock(u, tb, locks[i].value, &rec, &ts)))
			return rc;
		if (u->from == RFORMAT_ORDERED[0])
			continue;
		/* (the order key: lock_order, given to the open) */
		if ((rc = rados_lock_value(u->rs, rec, a, &v)) ||
		    (rc = upw_set(&bw, a, locks[i].key, v)))
			return rc;
	}
	/* progress, and the mark with the last batch */
	if (last) {
		uint64_t nonce = mrtx__now_us() ^ ((uint64_t)getpid() << 40);

		rgen_put(mark, u->mark);
		(void)mrtx__sim_random(&nonce, sizeof(nonce)); /* replayable in the simulator */
		rgen_put(mark + 8, nonce & RGEN_MAX);
		if ((rc = upw_set(&bw, a, MRTX_BYTES(progress_key, 2), MRTX_BYTES("d", 1))) ||
		    (rc = upw_set(&bw, a, MRTX_BYTES(rados_collect_key, 2), MRTX_BYTES(mark, 16))))
			return rc;
	} else {
		/* the last row done: the bound, or the batch's last lock's row */
		mrtx_bytes rk = bound.data ? bound :
		                MRTX_BYTES((const uint8_t *)locks[nlocks - 1].key.data + 1,
		                           locks[nlocks - 1].key.size - 1);

		if (!(pv = arena_alloc(a, 2 + rk.size)))
			return MRTX_ENOMEM;
		pv[0] = 'r';
		pv[1] = RK_LOCK;
		memcpy(pv + 2, rk.data, rk.size);
		if ((rc = upw_set(&bw, a, MRTX_BYTES(progress_key, 2), MRTX_BYTES(pv, 2 + rk.size))))
			return rc;
	}
	converted = bw.nrms;
	gd[0] = (rguard){ MRTX_BYTES(progress_key, 2), prog.data ? prog : MRTX_BYTES("", 0),
	                  LIBRADOS_CMPXATTR_OP_EQ, 0 };
	gd[1] = (rguard){ MRTX_BYTES(rados_state_key, 2), MRTX_BYTES("", 0),
	                  LIBRADOS_CMPXATTR_OP_EQ, 0 };
	/* (a first batch: no collection mark either, as in every old tablet) */
	gd[2] = (rguard){ MRTX_BYTES(rados_collect_key, 2), MRTX_BYTES("", 0),
	                  LIBRADOS_CMPXATTR_OP_EQ, 0 };
	memset(&w, 0, sizeof(w));
	w.oid = tb->oid;
	w.guards = gd;
	w.nguards = fresh ? 3 : 2;
	w.sets = bw.sets;
	w.nsets = bw.nsets;
	w.rms = bw.rms;
	w.nrms = bw.nrms;
	atomic_fetch_add_explicit(&u->rs->write_txns, 1, memory_order_relaxed);
	rc = rconn_write(u->rs->conn, &w, 1);
	if (rc == RCONN_TIMEDOUT && ++u->timeouts < UP_TIMEOUTS)
		return 0; /* applied or not: the progress key says, read again */
	if (rc)
		return rc == RCONN_TIMEDOUT ? mrtx__seterr(MRTX_ESTORE, "upgrade %s: writes to %s "
		                                           "keep timing out; run the upgrade again",
		                                           u->rs->addr, tb->oid) : rc;
	if (w.result == -ECANCELED) {
		if (gd[1].result == -ECANCELED)
			return not_open(u, t, tb, MRTX_BYTES("?", 1));
		return 0; /* another upgrade moved the progress key: read again */
	}
	if (w.result)
		return mrtx__seterr(MRTX_ESTORE, "upgrade %s: converting in %s: %s", u->rs->addr,
		                    tb->oid, strerror(-w.result));
	u->cells += converted;
	*done = last;
	return FAILPOINT(FP_UPGRADE_AFTER_BATCH);
}

static int convert_tablet(up *u, const store_table *t, const rtablet *tb)
{
	int rc, done = 0;

	while (!done) {
		mrtx_arena a;

		arena_init(&a);
		rc = convert_batch(u, t, tb, &done, &a);
		arena_free(&a);
		if (rc)
			return rc;
	}
	return 0;
}

/* The clean step on one tablet: its progress key removed. */
static int clean_tablet(up *u, const store_table *t, const rtablet *tb)
{
	const mrtx_bytes rm = MRTX_BYTES(progress_key, 2);
	mrtx_arena a;
	rread rd;
	rget g;
	rwrite w;
	int rc;

	(void)t;
	arena_init(&a);
	rc = list_keys(u, tb->oid, RK_LOCK, MRTX_BYTES(NULL, 0), 0, &rd, &g, &a);
	if (rc == 0 && found(&rd, progress_key).data) {
		memset(&w, 0, sizeof(w));
		w.oid = tb->oid;
		w.rms = &rm;
		w.nrms = 1;
		atomic_fetch_add_explicit(&u->rs->write_txns, 1, memory_order_relaxed);
		if ((rc = rconn_write(u->rs->conn, &w, 1)))
			rc = io_err(u, rc);
		else if (w.result)
			rc = mrtx__seterr(MRTX_ESTORE, "upgrade %s: cleaning %s: %s", u->rs->addr,
			                  tb->oid, strerror(-w.result));
	}
	arena_free(&a);
	return rc;
}

/* Run fn on every tablet of every table. */
static int each_tablet(up *u, int (*fn)(up *, const store_table *, const rtablet *))
{
	const store_table **ts;
	size_t n;
	int rc;

	if ((rc = store_tables_list((store *)u->rs, &ts, &n)))
		return rc;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const rtmap *m = rados_map(ts[i]);

		for (size_t j = 0; rc == 0 && j < m->n; j++)
			rc = fn(u, ts[i], &m->t[j]);
	}
	mrtx__free(ts);
	return rc;
}

/* ------------------------------------------------------------- meta */

/* One guarded write of NAME.meta: format == expect -> the sets, the rms. */
static int meta_step(up *u, const char *expect, const rkv *sets, size_t nsets,
                     const mrtx_bytes *rms, size_t nrms)
{
	rguard g = { MRTX_CSTR("format"), MRTX_CSTR(expect), LIBRADOS_CMPXATTR_OP_EQ, 0 };
	rwrite w;
	int rc;

	memset(&w, 0, sizeof(w));
	w.oid = u->rs->meta_oid;
	w.guards = &g;
	w.nguards = 1;
	w.sets = sets;
	w.nsets = nsets;
	w.rms = rms;
	w.nrms = nrms;
	atomic_fetch_add_explicit(&u->rs->write_txns, 1, memory_order_relaxed);
	if ((rc = rconn_write(u->rs->conn, &w, 1)))
		return io_err(u, rc);
	if (w.result == -ECANCELED)
		return mrtx__seterr(MRTX_ELOCKED, "upgrade %s: the store's format changed under the "
		                    "upgrade (another upgrade runs?)", u->rs->addr);
	if (w.result)
		return mrtx__seterr(MRTX_ESTORE, "upgrade %s: writing %s: %s", u->rs->addr,
		                    u->rs->meta_oid, strerror(-w.result));
	return 0;
}

static int record_put(up *u, const char *expect, char phase, const char *format)
{
	uint8_t rec[UP_REC_SIZE];
	rkv sets[2] = {
		{ MRTX_CSTR(UP_KEY), MRTX_BYTES(rec, UP_REC_SIZE) },
		{ MRTX_CSTR("format"), MRTX_CSTR(RFORMAT_UPGRADING) },
	};

	rec[0] = (uint8_t)u->from;
	rec[1] = (uint8_t)phase;
	mrtx__le64_put(rec + 2, u->mark);
	return meta_step(u, expect, sets, format ? 2 : 1, NULL, 0);
}

int rados_store_upgrade(const char *addr, store_upgrade_ts_fn row_ts,
                        void (*lock_order)(const void *lock, size_t size, uint8_t *out),
                        uint64_t *cells, int *was)
{
	static const char *const keys[1] = { UP_KEY };
	store_opts so = { .durability = MRTX_SYNC, .lock_order = lock_order };
	store *st = NULL;
	up u = { NULL, row_ts, 0, 0, 0, 0, NULL };
	char phase = 'c', format;
	mrtx_arena a;
	mrtx_bytes rec = MRTX_BYTES(NULL, 0);
	int rc;

	arena_init(&a);
	if ((rc = rados_store_open_any(&st, addr, &so, 1, &format)))
		goto out;
	u.rs = RS(st);
	if (format == RFORMAT_VERSIONS[0]) {
		*was = 4;
		goto out; /* nothing to do */
	}
	if (format == RFORMAT_UPGRADING[0]) {
		/* resume */
		if ((rc = rados_meta_read(u.rs, keys, 1, &a, &rec)))
			goto out;
		if (rec.size != UP_REC_SIZE ||
		    (((const char *)rec.data)[0] < RFORMAT_NOSPLIT[0] ||
		     ((const char *)rec.data)[0] > RFORMAT_ORDERED[0]) ||
		    (((const char *)rec.data)[1] != 'c' && ((const char *)rec.data)[1] != 'x')) {
			rc = mrtx__seterr(MRTX_ECORRUPT, "upgrade %s: the store is being upgraded but "
			                  "its upgrade record is %s", addr, rec.data ? "malformed" :
			                  "missing");
			goto out;
		}
		u.from = ((const char *)rec.data)[0];
		phase = ((const char *)rec.data)[1];
		u.mark = mrtx__le64_get((const uint8_t *)rec.data + 2);
	} else {
		upcheck c = { 0, 0, 0, 0 };
		char from[2] = { format, 0 };
		uint64_t now;

		u.from = format;
		u.check = &c;
		if ((rc = each_tablet(&u, check_tablet)))
			goto out;
		if (c.pending) {
			rc = mrtx__seterr(MRTX_ELOCKED, "upgrade %s: %zu row(s) are locked by "
			                  "transactions in flight; nothing was changed: settle them "
			                  "with `mrtx recover` of the mrtx that wrote the store, then "
			                  "upgrade", addr, c.pending);
			goto out;
		}
		if (c.toolong) {
			rc = mrtx__seterr(MRTX_ETOOBIG, "upgrade %s: %zu cell(s) have keys too long for "
			                  "format 4, whose versions add %u bytes (the rule is row + "
			                  "NULs in row + 16 + qualifier <= %u); nothing was changed: "
			                  "shorten or delete them with the mrtx that wrote them, then "
			                  "upgrade", addr, c.toolong, STORE_VERSION_KEY, MRTX_MAX_KEY);
			goto out;
		}
		/* M: above every converted version, the oracle and the clock */
		if ((rc = rados_store_ts_now(st, &now)))
			goto out;
		u.mark = MRTX_MAX(MRTX_MAX(c.maxts, now), mrtx__now_us()) + 1;
		if ((rc = record_put(&u, from, 'c', RFORMAT_UPGRADING)))
			goto out;
	}
	*was = u.from - '0';
	if (phase == 'c') {
		if ((rc = each_tablet(&u, convert_tablet)) ||
		    (rc = record_put(&u, RFORMAT_UPGRADING, 'x', NULL)))
			goto out;
	}
	{
		uint8_t safe[8];
		uint64_t ts;
		const mrtx_bytes rm = MRTX_CSTR(UP_KEY);
		rkv sets[2] = {
			{ MRTX_CSTR("format"), MRTX_CSTR(RFORMAT_VERSIONS) },
			{ MRTX_CSTR(STORE_GC_SAFE_KEY), MRTX_BYTES(safe, 8) },
		};

		mrtx__le64_put(safe, u.mark);
		if ((rc = each_tablet(&u, clean_tablet)) ||
		    (rc = rados_store_ts_next(st, u.mark + 1, &ts)) ||
		    (rc = meta_step(&u, RFORMAT_UPGRADING, sets, 2, &rm, 1)))
			goto out;
	}
	*cells = u.cells;
out:
	if (st)
		rados_store_close(st);
	arena_free(&a);
	return rc;
}
