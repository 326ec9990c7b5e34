/*
 * rados_split.c - splitting a tablet online (RADOS layout in rados_int.h).
 *
 * A tablet P (one object, rows [s, e)) is replaced by two new tablets L
 * [s, m) and R [m, e) with seqs never used before.  RADOS has no operation
 * over two objects, so the split is a sequence of one-object steps, each
 * idempotent, and anyone who meets a half-done split finishes it:
 *
 *   P's state key:  (absent) --freeze--> 'X' L R m   (retired, for good)
 *   L's and R's:    (no object) --birth--> 'U' --open--> (absent)
 *
 *   1. seqs     take two seqs from the meta key "seq.<table id>" (CAS).
 *   2. freeze   P: state absent -> 'X' L R m.  Every row write carries the
 *               guard "state absent" and every tablet read returns the state
 *               key, so from here on nobody changes P, and a reader of P
 *               learns to look again.                   [split.after_freeze]
 *   3. birth    L and R: exclusive create with state 'U' (EEXIST: a helper
 *               did it).  No row write lands in a 'U' tablet.
 *   4. copy     every key of P (frozen, so one state) into L or R by row,
 *               the generation key into both; each copy write is guarded by
 *               the target's state being 'U', so a late helper cannot write
 *               into a tablet that is already open.      [split.after_copy]
 *   5. publish  the table record: P's entry becomes L's and R's (CAS on the
 *               record; a record without P was published already).
 *                                                     [split.after_publish]
 *   6. open     L and R: state 'U' -> absent.  A tablet listed in the record
 *               is complete, so whoever meets it 'U' opens it.
 *   7. trim     P's rows are removed (its state key stays: a writer with an
 *               old map must keep failing there, and an object that is gone
 *               would be recreated empty by the next write's create).
 *
 * Why nothing is lost or doubled: between 2 and 5 every reader and writer of
 * P's rows fails over to rados_table_settle, which waits for the splitter a
 * while and then finishes the split itself; the copy of a frozen object is
 * the same whoever makes it; after 5 the record sends every row to L or R,
 * which hold exactly P's rows of their range.  Locks move with their rows
 * (a lock names its primary by table and row, never by object), so a
 * transaction committing across the split finds its locks where the new
 * map says.  An index declaration's generation moves too: P's generation
 * key is copied while P is frozen, and gen_spread (rados_meta.c) does not
 * bump a retired tablet but settles it and bumps L and R.
 */
#include "storage/rados/rados_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* How long a reader or writer that met a frozen tablet waits for its
 * splitter before finishing the split itself. */
#define SPLIT_WAIT_MS 1000u
/* A copy write's bounds. */
#define COPY_MAX_KEYS 1024u
#define COPY_MAX_BYTES (4u << 20)

typedef struct mark {
	uint32_t left, right;
	mrtx_bytes at; /* the split row */
} mark;

static int mark_parse(rstore *rs, const char *oid, mrtx_bytes v, mark *out)
{
	const uint8_t *p = v.data;

	if (v.size < 10 || v.size > 9 + MRTX_MAX_ROW || p[0] != RSTATE_RETIRED)
		return mrtx__seterr(MRTX_ECORRUPT, "%s: tablet %s: a malformed split mark", rs->addr,
		                    oid);
	out->left = rbe32_get(p + 1);
	out->right = rbe32_get(p + 5);
	out->at = MRTX_BYTES(p + 9, v.size - 9);
	return 0;
}

static const rtablet *map_find(const rtmap *m, const char *oid)
{
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->t[i].oid, oid) == 0)
			return &m->t[i];
	return NULL;
}

/* The state of oid (data NULL: open, or no object). */
static int state_read(rstore *rs, const char *oid, mrtx_arena *a, mrtx_bytes *st)
{
	mrtx_bytes k = MRTX_BYTES(rados_state_key, 2);
	rread r;
	int rc;

	memset(&r, 0, sizeof(r));
	r.oid = oid;
	r.keys = &k;
	r.nkeys = 1;
	*st = MRTX_BYTES(NULL, 0);
	atomic_fetch_add_explicit(&rs->read_txns, 1, memory_order_relaxed);
	if ((rc = rconn_read(rs->conn, &r, 1, a)))
		return rc == RCONN_TIMEDOUT ? MRTX_ESTORE : rc;
	if (r.nkvs)
		*st = r.kvs[0].value;
	return 0;
}

/* One guarded write: state of oid `expect` (size 0: absent) -> `to` (data
 * NULL: removed).  *applied: whether the guard held. */
static int state_cas(rstore *rs, const char *oid, mrtx_bytes expect, mrtx_bytes to, int create,
                     int *applied)
{
	rguard g = { MRTX_BYTES(rados_state_key, 2), expect, LIBRADOS_CMPXATTR_OP_EQ, 0 };
	rkv set = { MRTX_BYTES(rados_state_key, 2), to };
	mrtx_bytes rm = MRTX_BYTES(rados_state_key, 2);
	rwrite w;
	int rc;

	memset(&w, 0, sizeof(w));
	w.oid = oid;
	w.create = create;
	w.guards = &g;
	w.nguards = 1;
	if (to.data) {
		w.sets = &set;
		w.nsets = 1;
	} else {
		w.rms = &rm;
		w.nrms = 1;
	}
	atomic_fetch_add_explicit(&rs->write_txns, 1, memory_order_relaxed);
	if ((rc = rconn_write(rs->conn, &w, 1)))
		return rc == RCONN_TIMEDOUT ? MRTX_ESTORE : rc;
	*applied = w.result == 0;
	return 0;
}

/* Step 1: two seqs no tablet of t ever had. */
static int seqs_take(rstore *rs, const store_table *t, uint32_t *left)
{
	char key[32], rkey[MRTX_MAX_NAME + 3];
	mrtx_arena a;
	int rc = 0;

	snprintf(key, sizeof(key), "seq.%x", t->id);
	snprintf(rkey, sizeof(rkey), "t/%s", t->name);
	arena_init(&a);
	for (int attempt = 0; attempt < 32; attempt++) {
		const char *keys[2] = { key, rkey };
		mrtx_bytes v[2];
		uint32_t next = 0;
		uint8_t n4[4];
		int applied;

		if ((rc = rados_meta_read(rs, keys, 2, &a, v)))
			break;
		if (v[0].size == 4) {
			next = rbe32_get(v[0].data);
		} else if (v[0].data) {
			rc = mrtx__seterr(MRTX_ECORRUPT, "%s: table '%s': a malformed seq record",
			                  rs->addr, t->name);
			break;
		} else {
			/* no split yet: the record is the one made at creation */
			rtmap *m;

			if (!v[1].data || v[1].size < 4 ||
			    rbe32_get(v[1].data) != ((rtable *)t->be)->id) {
				/* dropped, or truncated (the name names a new table) */
				rc = rados_table_closed(rs, t, v[1]);
				break;
			}
			if ((rc = rados_map_parse(rs, t->name, v[1], &m)))
				break;
			for (size_t i = 0; i < m->n; i++)
				next = MRTX_MAX(next, m->t[i].seq + 1);
			mrtx__free(m);
		}
		if (next > UINT32_MAX - 2) {
			rc = mrtx__seterr(MRTX_ETOOBIG, "%s: table '%s' has split too often", rs->addr,
			                  t->name);
			break;
		}
		rbe32_put(n4, next + 2);
		if ((rc = rados_meta_cas(rs, key, v[0], MRTX_BYTES(n4, 4), &applied)))
			break;
		if (applied) {
			*left = next;
			break;
		}
		rc = MRTX_CONFLICT;
	}
	if (rc == MRTX_CONFLICT)
		rc = mrtx__seterr(MRTX_ESTORE, "%s: table '%s': seqs keep being taken", rs->addr,
		                  t->name);
	arena_free(&a);
	return rc;
}

/* Step 3: L and R exist in state 'U' (or later). */
static int birth(rstore *rs, const char *const oids[2])
{
	static const uint8_t u = RSTATE_UNBORN;
	rados_write_op_t ops[2] = { NULL, NULL };
	int res[2] = { 0, 0 }, rc = 0;

	for (int i = 0; i < 2; i++) {
		const char *k = (const char *)rados_state_key, *v = (const char *)&u;
		size_t kl = 2, vl = 1;

		if (!(ops[i] = rados_create_write_op())) {
			rc = mrtx__seterr(MRTX_ENOMEM, "out of memory splitting a tablet");
			goto done;
		}
		rados_write_op_create(ops[i], LIBRADOS_CREATE_EXCLUSIVE, NULL);
		rados_write_op_omap_set2(ops[i], &k, &v, &kl, &vl, 1);
	}
	atomic_fetch_add_explicit(&rs->write_txns, 2, memory_order_relaxed);
	rc = rconn_write_ops(rs->conn, ops, oids, res, 2);
	if (rc == 0 || rc == MRTX_ESTORE || rc == RCONN_TIMEDOUT) {
		/* EEXIST: made by a helper, perhaps opened since: the copy's
		 * guard tells */
		rc = 0;
		for (int i = 0; i < 2 && rc == 0; i++)
			if (res[i] && res[i] != -EEXIST)
				rc = rconn_error(rs->conn, res[i], "split: create tablet", oids[i]);
	}
done:
	for (int i = 0; i < 2; i++)
		if (ops[i])
			rados_release_write_op(ops[i]);
	return rc == RCONN_TIMEDOUT ? MRTX_ESTORE : rc;
}

/* The row a key of a tablet belongs to, into buf; *is_row: 0 the gen key,
 * the collection mark, the one-phase mark or a drop's freeze mark (copied
 * to both sides: a tablet split out of a frozen one is frozen too), 1 a
 * row key. */
static int key_row(rstore *rs, const char *oid, mrtx_bytes k, uint8_t *buf, mrtx_bytes *row,
                   int *is_row)
{
	const uint8_t *p = k.data;
	size_t len = RKEY_BAD, used;

	*is_row = 0;
	if (k.size == 2 && (memcmp(p, rados_gen_key, 2) == 0 ||
	                    memcmp(p, rados_collect_key, 2) == 0 ||
	                    memcmp(p, rados_onepc_key, 2) == 0 ||
	                    memcmp(p, rados_freeze_key, 2) == 0))
		return 0;
	if (k.size >= 2) {
		if (p[0] == RK_LOCK || p[0] == RK_CELL || p[0] == RK_PUSH || p[0] == RK_ONEPC)
			len = rkey_get(buf, p + 1, k.size - 1, &used);
		else if (p[0] == RK_DESC)
			len = rkey_get_desc(buf, p + 1, k.size - 1, &used);
	}
	if (len == RKEY_BAD)
		return mrtx__seterr(MRTX_ECORRUPT, "%s: tablet %s: an unknown key", rs->addr, oid);
	*row = MRTX_BYTES(buf, len);
	*is_row = 1;
	return 0;
}

/* One copy write per side of what was gathered; *opened: a side was open
 * already (then someone finished the copy and published). */
static int copy_flush(rstore *rs, const char *const oids[2], rkv *const kv[2], size_t n[2],
                      int *opened)
{
	static const uint8_t u = RSTATE_UNBORN;
	rguard g[2];
	rwrite w[2];
	size_t nw = 0;
	int rc;

	for (int s = 0; s < 2; s++) {
		if (!n[s])
			continue;
		g[nw] = (rguard){ MRTX_BYTES(rados_state_key, 2), MRTX_BYTES(&u, 1),
		                  LIBRADOS_CMPXATTR_OP_EQ, 0 };
		memset(&w[nw], 0, sizeof(w[nw]));
		w[nw].oid = oids[s];
		w[nw].guards = &g[nw];
		w[nw].nguards = 1;
		w[nw].sets = kv[s];
		w[nw].nsets = n[s];
		nw++;
	}
	if (nw == 0)
		return 0;
	atomic_fetch_add_explicit(&rs->write_txns, nw, memory_order_relaxed);
	rc = rconn_write(rs->conn, w, nw);
	if (rc == RCONN_TIMEDOUT)
		return MRTX_ESTORE;
	if (rc == MRTX_CONFLICT)
		rc = 0;
	for (size_t i = 0; i < nw; i++)
		if (w[i].result == -ECANCELED)
			*opened = 1;
	n[0] = n[1] = 0;
	return rc;
}

/* Step 4: every key of the frozen parent into L (rows below at) or R. */
static int copy(rstore *rs, const char *poid, const char *const oids[2], mrtx_bytes at)
{
	mrtx_bytes after = MRTX_BYTES(NULL, 0);
	rkv *kv[2];
	size_t n[2] = { 0, 0 }, bytes = 0;
	uint8_t *buf;
	mrtx_arena a, keep;
	int rc = 0, more = 1, opened = 0;

	arena_init(&a);
	arena_init(&keep);
	kv[0] = arena_alloc(&keep, COPY_MAX_KEYS * sizeof(rkv));
	kv[1] = arena_alloc(&keep, COPY_MAX_KEYS * sizeof(rkv));
	buf = arena_alloc(&keep, RCELL_MAX);
	if (!kv[0] || !kv[1] || !buf)
		rc = mrtx__seterr(MRTX_ENOMEM, "out of memory splitting a tablet");
	while (rc == 0 && more && !opened) {
		rget g;
		rread r;

		memset(&g, 0, sizeof(g));
		memset(&r, 0, sizeof(r));
		g.start_after = after;
		g.max = RLIST_MAX;
		r.oid = poid;
		r.gets = &g;
		r.ngets = 1;
		atomic_fetch_add_explicit(&rs->read_txns, 1, memory_order_relaxed);
		if ((rc = rconn_read(rs->conn, &r, 1, &a))) {
			rc = rc == RCONN_TIMEDOUT ? MRTX_ESTORE : rc;
			break;
		}
		for (size_t i = 0; i < g.nkvs && rc == 0 && !opened; i++) {
			const rkv *e = &g.kvs[i];
			mrtx_bytes row = { NULL, 0 }; /* (set when is_row) */
			int is_row;

			if (e->key.size == 2 && memcmp(e->key.data, rados_state_key, 2) == 0)
				continue;
			if ((rc = key_row(rs, poid, e->key, buf, &row, &is_row)))
				break;
			if (n[0] == COPY_MAX_KEYS || n[1] == COPY_MAX_KEYS || bytes >= COPY_MAX_BYTES) {
				if ((rc = copy_flush(rs, oids, kv, n, &opened)))
					break;
				bytes = 0;
			}
			for (int s = 0; s < 2; s++)
				if (is_row ? (cmp_bytes(row.data, row.size, at.data, at.size) >= 0) == s : 1)
					kv[s][n[s]++] = *e;
			bytes += e->key.size + e->value.size;
		}
		more = g.more && g.nkvs;
		if (rc || opened)
			break;
		if (more) {
			/* the pairs gathered point into `a`: send them before it is reused */
			uint8_t *k;

			if ((rc = copy_flush(rs, oids, kv, n, &opened)))
				break;
			bytes = 0;
			if (!(k = arena_alloc(&keep, g.kvs[g.nkvs - 1].key.size))) {
				rc = mrtx__seterr(MRTX_ENOMEM, "out of memory splitting a tablet");
				break;
			}
			memcpy(k, g.kvs[g.nkvs - 1].key.data, g.kvs[g.nkvs - 1].key.size);
			after = MRTX_BYTES(k, g.kvs[g.nkvs - 1].key.size);
			arena_free(&a);
			arena_init(&a);
		}
	}
	if (rc == 0 && !opened)
		rc = copy_flush(rs, oids, kv, n, &opened);
	arena_free(&a);
	arena_free(&keep);
	return rc;
}

/* Step 5: P's entry in the record becomes L's and R's. */
static int publish(rstore *rs, const store_table *t, uint32_t pseq, const mark *mk)
{
	char key[MRTX_MAX_NAME + 3];
	mrtx_arena a;
	int rc = 0;

	snprintf(key, sizeof(key), "t/%s", t->name);
	arena_init(&a);
	for (int attempt = 0; attempt < 32; attempt++) {
		mrtx_bytes v;
		mrtx_buf b = MRTX_BUF_INIT;
		const uint8_t *p, *end;
		size_t at;
		uint32_t nt;
		int found = 0, applied;

		if ((rc = rados_table_record(rs, t, &a, &v)))
			break;
		if (!v.data || v.size < 4 || rbe32_get(v.data) != ((rtable *)t->be)->id) {
			/* dropped, or truncated (the name names a new table) */
			rc = rados_table_closed(rs, t, v);
			break;
		}
		if (!(at = rados_record_tablets_at(v))) {
			rc = mrtx__seterr(MRTX_ECORRUPT, "%s: the record of table '%s' is malformed",
			                  rs->addr, t->name);
			break;
		}
		p = (const uint8_t *)v.data + at;
		end = (const uint8_t *)v.data + v.size;
		nt = rbe32_get(p);
		p += 4;
		rc = buf_put(&b, v.data, at + 4);
		for (uint32_t i = 0; rc == 0 && i < nt; i++) {
			uint8_t e[6];
			size_t len;

			if (end - p < 6 || (size_t)(end - p - 6) < (len = (size_t)p[4] << 8 | p[5])) {
				rc = mrtx__seterr(MRTX_ECORRUPT, "%s: the record of table '%s' is malformed",
				                  rs->addr, t->name);
				break;
			}
			if (rbe32_get(p) != pseq) {
				rc = buf_put(&b, p, 6 + len);
			} else {
				found = 1;
				rbe32_put(e, mk->left);
				e[4] = p[4];
				e[5] = p[5];
				if ((rc = buf_put(&b, e, 6)) == 0 && len)
					rc = buf_put(&b, p + 6, len);
				rbe32_put(e, mk->right);
				e[4] = (uint8_t)(mk->at.size >> 8);
				e[5] = (uint8_t)mk->at.size;
				if (rc == 0 && (rc = buf_put(&b, e, 6)) == 0)
					rc = buf_put(&b, mk->at.data, mk->at.size);
			}
			p += 6 + len;
		}
		if (rc == 0 && !found) {
			buf_free(&b);
			break; /* published already */
		}
		if (rc == 0) {
			rbe32_put(b.data + at, nt + 1);
			rc = rados_meta_cas(rs, key, v, MRTX_BYTES(b.data, b.size), &applied);
		}
		buf_free(&b);
		if (rc || applied)
			break;
		rc = MRTX_CONFLICT; /* another split of this table: read again */
	}
	if (rc == MRTX_CONFLICT)
		rc = mrtx__seterr(MRTX_ESTORE, "%s: table '%s': its record keeps changing", rs->addr,
		                  t->name);
	arena_free(&a);
	return rc;
}

/* Steps 3 to 7 of the split that retired P (mark mk). */
static int finish(rstore *rs, const store_table *t, const char *poid, uint32_t pseq,
                  const mark *mk)
{
	static const uint8_t u = RSTATE_UNBORN;
	char lo[ROID_MAX], ro[ROID_MAX];
	const char *const oids[2] = { lo, ro };
	int rc, applied;

	rados_tablet_oid(rs, t->id, mk->left, lo);
	rados_tablet_oid(rs, t->id, mk->right, ro);
	if ((rc = birth(rs, oids)) || (rc = copy(rs, poid, oids, mk->at)))
		return rc;
	if ((rc = FAILPOINT(FP_SPLIT_AFTER_COPY)) || (rc = publish(rs, t, pseq, mk)) ||
	    (rc = FAILPOINT(FP_SPLIT_AFTER_PUBLISH)))
		return rc;
	for (int i = 0; i < 2; i++)
		if ((rc = state_cas(rs, oids[i], MRTX_BYTES(&u, 1), MRTX_BYTES(NULL, 0), 0, &applied)))
			return rc;
	/* trim: the parent keeps its mark (and generation), nothing else */
	{
		static const uint8_t lo_k[1] = { RK_LOCK }, hi_k[1] = { RK_ONEPC + 1 };
		rados_write_op_t op = rados_create_write_op();
		mrtx_arena a;
		mrtx_bytes st;
		int res = 0, prval = 0;

		if (!op)
			return mrtx__seterr(MRTX_ENOMEM, "out of memory splitting a tablet");
		arena_init(&a);
		rc = state_read(rs, poid, &a, &st);
		if (rc == 0 && st.data) {
			rados_write_op_omap_cmp2(op, (const char *)rados_state_key, LIBRADOS_CMPXATTR_OP_EQ,
			                         st.data, 2, st.size, &prval);
			rados_write_op_omap_rm_range2(op, (const char *)lo_k, 1, (const char *)hi_k, 1);
			atomic_fetch_add_explicit(&rs->write_txns, 1, memory_order_relaxed);
			(void)rconn_write_ops(rs->conn, &op, &poid, &res, 1);
		}
		/* best effort: a retired tablet's rows are never read again */
		rc = 0;
		rados_release_write_op(op);
		arena_free(&a);
	}
	if (rc == 0)
		atomic_fetch_add_explicit(&rs->splits, 1, memory_order_relaxed);
	return rc ? rc : rados_table_reload(rs, t);
}

int rados_table_settle(rstore *rs, const store_table *t, const char *oid)
{
	uint64_t until = mrtx__mono_us() + SPLIT_WAIT_MS * 1000u;
	unsigned nap = 2;
	mrtx_arena a;
	int rc;

	arena_init(&a);
	for (;;) {
		mrtx_bytes rec, st;
		const rtablet *tb;
		rtmap *m = NULL;
		uint32_t pseq;
		mark mk;
		int applied;

		if ((rc = rados_table_record(rs, t, &a, &rec)))
			break;
		if (!rec.data || rec.size < 4 || rbe32_get(rec.data) != ((rtable *)t->be)->id) {
			/* dropped, or truncated (the name names a new table) */
			rc = rados_table_closed(rs, t, rec);
			break;
		}
		if ((rc = rados_map_parse(rs, t->name, rec, &m)))
			break;
		tb = map_find(m, oid);
		if (!tb || (rc = state_read(rs, oid, &a, &st)) || !st.data) {
			mrtx__free(m); /* moved on, or open after all: a new map will do */
			rc = rc ? rc : rados_table_reload(rs, t);
			break;
		}
		if (*(const uint8_t *)st.data == RSTATE_DROPPED) {
			/* a drop or truncate is closing the table: it publishes the
			 * table's new record in a moment */
			mrtx__free(m);
			if (mrtx__mono_us() < until) {
				mrtx__sleep_us(nap * 1000u);
				nap = MRTX_MIN(nap * 2, 50u);
				arena_free(&a);
				arena_init(&a);
				continue;
			}
			rc = rados_table_closed(rs, t, rec);
			break;
		}
		if (st.size == 1 && *(const uint8_t *)st.data == RSTATE_UNBORN) {
			/* listed, so complete: open it (a read-only handle only reads
			 * it, which a 'U' tablet in the record allows) */
			rc = rs->head.read_only ? 0 :
			     state_cas(rs, oid, st, MRTX_BYTES(NULL, 0), 0, &applied);
			mrtx__free(m);
			rc = rc ? rc : rados_table_reload(rs, t);
			break;
		}
		if ((rc = mark_parse(rs, oid, st, &mk))) {
			mrtx__free(m);
			break;
		}
		if (mrtx__mono_us() < until) {
			/* its splitter is probably at work: give it a moment */
			mrtx__free(m);
			mrtx__sleep_us(nap * 1000u);
			nap = MRTX_MIN(nap * 2, 50u);
			arena_free(&a);
			arena_init(&a);
			continue;
		}
		pseq = tb->seq;
		mrtx__free(m);
		rc = rs->head.read_only ?
		     mrtx__seterr(MRTX_ELOCKED, "%s: table '%s': a split of tablet %s is unfinished "
		                  "(its splitter died?); a read-write handle finishes it", rs->addr,
		                  t->name, oid) :
		     finish(rs, t, oid, pseq, &mk);
		break;
	}
	arena_free(&a);
	return rc;
}

/* Split tablet tb of t (in t's current map) at row at: steps 1 and 2, then
 * the rest.  MRTX_CONFLICT when tb was not open (someone else's split:
 * settled meanwhile). */
static int split_at(rstore *rs, const store_table *t, const rtablet *tb, mrtx_bytes at)
{
	uint8_t mkb[9 + MRTX_MAX_ROW];
	uint32_t left = 0;
	mark mk;
	int rc, applied;

	if ((rc = seqs_take(rs, t, &left)))
		return rc;
	mkb[0] = RSTATE_RETIRED;
	rbe32_put(mkb + 1, left);
	rbe32_put(mkb + 5, left + 1);
	memcpy(mkb + 9, at.data, at.size);
	if ((rc = state_cas(rs, tb->oid, MRTX_BYTES("", 0), MRTX_BYTES(mkb, 9 + at.size), 1,
	                    &applied)))
		return rc;
	if (!applied) {
		rc = rados_table_settle(rs, t, tb->oid);
		return rc ? rc : MRTX_CONFLICT;
	}
	if ((rc = FAILPOINT(FP_SPLIT_AFTER_FREEZE)))
		return rc;
	mk.left = left;
	mk.right = left + 1;
	mk.at = at;
	return finish(rs, t, tb->oid, tb->seq, &mk);
}

int rados_store_split(store *st, const store_table *t, mrtx_bytes at)
{
	rstore *rs = RS(st);
	const rtablet *tb;

	if (at.size == 0 || at.size > MRTX_MAX_ROW || !at.data)
		return mrtx__seterr(MRTX_EINVAL, "split: the split row must be 1..%u bytes",
		                    (unsigned)MRTX_MAX_ROW);
	if (rs->head.read_only)
		return mrtx__seterr(MRTX_EREADONLY, "store %s is open read-only", rs->addr);
	tb = rados_tablet_of(t, at);
	if (cmp_bytes(tb->start.data, tb->start.size, at.data, at.size) == 0)
		return mrtx__seterr(MRTX_EEXIST, "table '%s': a tablet starts at that row already",
		                    t->name);
	return split_at(rs, t, tb, at);
}

void rados_split_maybe(rstore *rs, const store_table *t, const char *oid)
{
	static const uint8_t pfx[1] = { RK_LOCK };
	const rtmap *m = rados_map(t);
	const rtablet *tb = map_find(m, oid);
	uint8_t after[1 + RKEY_MAX], mid[1 + RKEY_MAX], row[RKEY_MAX];
	size_t count = 0, want, afterlen = 0, midlen = 0;
	mrtx_arena a;
	int more = 1;

	if (!tb || rs->head.read_only)
		return;
	/* count about one time in split_rows / 16 (at once for small bounds) */
	if (rs->split_rows > 16 && mrtx__rand_below(rs->split_rows / 16) != 0)
		return;
	want = (size_t)rs->split_rows + 1;
	arena_init(&a);
	/* one page of lock keys at a time; only the middle one is kept */
	while (more && count < want) {
		rget g;
		rread r;
		mrtx_bytes sk = MRTX_BYTES(rados_state_key, 2);

		memset(&g, 0, sizeof(g));
		memset(&r, 0, sizeof(r));
		g.prefix = MRTX_BYTES(pfx, 1);
		g.start_after = MRTX_BYTES(after, afterlen);
		g.max = MRTX_MIN(want - count, (size_t)RLIST_MAX);
		r.oid = oid;
		r.gets = &g;
		r.ngets = 1;
		r.keys = &sk;
		r.nkeys = 1;
		if (rconn_read(rs->conn, &r, 1, &a) || r.nkvs)
			goto done; /* unreadable, or not open: not ours to split */
		for (size_t i = 0; i < g.nkvs; i++, count++)
			if (count == (want - 1) / 2 && g.kvs[i].key.size <= sizeof(mid)) {
				midlen = g.kvs[i].key.size;
				memcpy(mid, g.kvs[i].key.data, midlen);
			}
		more = g.more && g.nkvs;
		if (g.nkvs) {
			afterlen = MRTX_MIN(g.kvs[g.nkvs - 1].key.size, sizeof(after));
			memcpy(after, g.kvs[g.nkvs - 1].key.data, afterlen);
		}
		arena_free(&a);
		arena_init(&a);
	}
	if (count < want || midlen < 2)
		goto done;
	{
		size_t used, len = rkey_get(row, mid + 1, midlen - 1, &used);
		mrtx_bytes at = MRTX_BYTES(row, len);

		/* the middle row is above the tablet's first row, so above its start */
		if (len != RKEY_BAD && len && cmp_bytes(at.data, at.size, tb->start.data,
		                                        tb->start.size) > 0)
			(void)split_at(rs, t, tb, at);
	}
done:
	arena_free(&a);
}
