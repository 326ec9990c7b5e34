/*
 * rados_ddl.c - changing existing tables on RADOS (DESIGN §3.4): adding a
 * family, freezing a table, and closing it for a drop or a truncate.
 *
 * RADOS applies nothing across objects, so a drop or truncate is a chain
 * of one-object steps around one atomic switch of the table's record in
 * NAME.meta.  The meta record "f/<table>" (u64 BE token | u8 phase | u32
 * BE table id) says who runs it and how far it got:
 *
 *   freeze  f/<t> absent -> {token, 'F', id}; then every tablet gets the
 *           freeze mark 0x01 'F' = token.  Every row write that takes a
 *           new lock is guarded by the mark's absence (rados_write.c), so
 *           from here on no new lock appears, while writes on locks
 *           already there (commit points, roll forward/back, release)
 *           still apply.  Reads go on.               (store_table_freeze)
 *   settle  the layer above settles every lock in the table (txn/ddl.c).
 *   close   f/<t> phase 'F' -> 'C'; then every tablet's state goes from
 *           absent to 'D' + token: from here on no write at all lands in
 *           it (every row write is guarded by "state absent"), and a read
 *           that meets it waits for the switch (rados_split.c's settle).
 *   switch  one guarded write of NAME.meta, the drop's or truncate's
 *           atomic point: drop removes t/<t>, p/<t> and f/<t>; truncate
 *           gives t/<t> a new table id with fresh tablets (same starts),
 *           made beforehand -- the id taken from the counter first, on its
 *           own, so no other table can own them -- with the
 *           index-declaration generation and a
 *           collection mark at a timestamp Ts taken after the close, so a
 *           read at a snapshot below Ts gets MRTX_ESNAPSHOT instead of an
 *           empty table.  Both record the old record as z/<old id>.
 *   clear   the closed tablets' rows are removed (their state stays: a
 *           late writer with an old map keeps failing there) and z/<id>
 *           is removed.  A clear cut short is finished by the next drop or
 *           truncate of any table (sweep_garbage).   (store_table_clear)
 *
 * Failpoints: ddl.after_close (every tablet closed, the record not yet
 * switched), ddl.after_switch (switched, the old tablets not yet cleared).
 *
 * A table object whose tablet it met closed learns of the switch from the
 * record (rados_table_closed): gone (MRTX_ENOTABLE) or another table under
 * the name (truncated: MRTX_CONFLICT, so mrtx_run retries with the new
 * one); the object is then GONE and the next lookup loads the new record.
 *
 * Crashes: a drop or truncate that dies before its close leaves the table
 * frozen (reads work, new locks conflict) and one that dies after it leaves
 * the table closed (reads wait, then MRTX_ELOCKED); running drop or
 * truncate again takes the record over with a new token and finishes from
 * where it was (a closed table needs no settling: its locks were settled
 * before the close).
 */
#include "storage/sim_hooks.h"
#include "storage/rados/rados_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <openssl/rand.h>

const uint8_t rados_freeze_key[2] = { RK_GEN_0, 'F' };

#define DREC_SIZE 13u
#define PHASE_FROZEN 'F'
#define PHASE_CLOSING 'C'

typedef struct drec {
	uint64_t token;
	uint8_t phase;
	uint32_t id;
} drec;

static int drec_parse(mrtx_bytes v, drec *d)
{
	const uint8_t *p = v.data;

	if (v.size != DREC_SIZE || (p[8] != PHASE_FROZEN && p[8] != PHASE_CLOSING))
		return -1;
	d->token = rbe64_get(p);
	d->phase = p[8];
	d->id = rbe32_get(p + 9);
	return 0;
}

static mrtx_bytes drec_put(uint8_t *buf, const drec *d)
{
	rbe64_put(buf, d->token);
	buf[8] = d->phase;
	rbe32_put(buf + 9, d->id);
	return MRTX_BYTES(buf, DREC_SIZE);
}

static uint32_t id_of(const store_table *t)
{
	return ((const rtable *)t->be)->id;
}

static int rec_is(mrtx_bytes rec, const store_table *t)
{
	return rec.data && rec.size >= 4 && rbe32_get(rec.data) == id_of(t);
}

int rados_table_closed(rstore *rs, const store_table *t, mrtx_bytes rec)
{
	store_table *w = (store_table *)(uintptr_t)t;

	if (rec_is(rec, t))
		return mrtx__seterr(MRTX_ELOCKED, "%s: table '%s' is being dropped or truncated: "
		                    "try again when that has finished (one cut short is finished "
		                    "by running the drop or truncate again)", rs->addr, t->name);
	atomic_store_explicit(&w->state, STORE_T_GONE, memory_order_release);
	if (!rec.data)
		return mrtx__seterr(MRTX_ENOTABLE, "table '%s' was dropped", t->name);
	return mrtx__seterr(MRTX_CONFLICT, "table '%s' was truncated while this call ran: "
	                    "run the transaction again", t->name);
}

int rados_tablet_dropped(rstore *rs, const char *oid, int *dropped)
{
	const mrtx_bytes sk = MRTX_BYTES(rados_state_key, 2);
	mrtx_arena a;
	rread r;
	int rc;

	*dropped = 0;
	arena_init(&a);
	memset(&r, 0, sizeof(r));
	r.oid = oid;
	r.keys = &sk;
	r.nkeys = 1;
	atomic_fetch_add_explicit(&rs->read_txns, 1, memory_order_relaxed);
	if ((rc = rconn_read(rs->conn, &r, 1, &a)) == RCONN_TIMEDOUT)
		rc = MRTX_ESTORE;
	if (rc == 0 && r.nkvs && r.kvs[0].value.size &&
	    *(const uint8_t *)r.kvs[0].value.data == RSTATE_DROPPED)
		*dropped = 1;
	arena_free(&a);
	return rc;
}

/* The meta keys of table name: t/, p/, f/ (each MRTX_MAX_NAME + 3 bytes). */
static void keys_of(const char *name, char *tk, char *pk, char *dk)
{
	snprintf(tk, MRTX_MAX_NAME + 3, "t/%s", name);
	snprintf(pk, MRTX_MAX_NAME + 3, "p/%s", name);
	snprintf(dk, MRTX_MAX_NAME + 3, "f/%s", name);
}

static rguard guard_eq(const char *key, mrtx_bytes v)
{
	rguard g = { MRTX_CSTR(key), v.data ? v : MRTX_BYTES("", 0), LIBRADOS_CMPXATTR_OP_EQ, 0 };

	return g;
}

void rados_table_open_keys(const store_table *t, char *tk, char *dk)
{
	char pk[MRTX_MAX_NAME + 3];

	keys_of(t->name, tk, pk, dk);
}

int rados_table_open_guard(rstore *rs, const store_table *t, const char *tk, const char *dk,
                           mrtx_bytes rec, mrtx_bytes dv, rguard g[2])
{
	drec d;

	if (!rec_is(rec, t))
		return rados_table_closed(rs, t, rec); /* (MRTX_ENOTABLE or MRTX_CONFLICT) */
	if (dv.data && drec_parse(dv, &d))
		return mrtx__seterr(MRTX_ECORRUPT, "%s: the drop record of table '%s' is malformed",
		                    rs->addr, t->name);
	if (dv.data && d.id == id_of(t))
		return mrtx__seterr(MRTX_ELOCKED, "%s: table '%s' is being dropped or truncated: "
		                    "try again when that has finished (one cut short is finished "
		                    "by running the drop or truncate again)", rs->addr, t->name);
	g[0] = guard_eq(tk, rec);
	g[1] = guard_eq(dk, dv);
	return 0;
}

/* --------------------------------------------------------------- family */

/* t's families from its record rec, added to the object when new. */
static int families_take(rstore *rs, const store_table *t, mrtx_bytes rec)
{
	store_table *w = (store_table *)(uintptr_t)t;
	rtable *rt = t->be;
	const uint8_t *p = rec.data;
	size_t at = rados_record_tablets_at(rec), nf, have = atomic_load(&t->nfamilies), off = 5;
	char **fams = (char **)(uintptr_t)t->families;

	if (at == 0)
		return mrtx__seterr(MRTX_ECORRUPT, "%s: the record of table '%s' is malformed",
		                    rs->addr, t->name);
	nf = p[4];
	if (nf < have)
		return mrtx__seterr(MRTX_ECORRUPT, "%s: table '%s' lost families", rs->addr,
		                    t->name);
	for (size_t i = 0; i < nf; i++) {
		size_t len = p[off];

		if (i >= have) {
			struct rfam *f = mrtx__malloc(sizeof(*f) + len + 1);

			if (!f)
				return mrtx__seterr(MRTX_ENOMEM, "out of memory loading table '%s'",
				                    t->name);
			memcpy(f->name, p + off + 1, len);
			f->name[len] = '\0';
			rados_tables_lock(rs);
			f->next = rt->added;
			rt->added = f;
			fams[i] = f->name;
			/* published before the count that covers it */
			atomic_store(&w->nfamilies, i + 1);
			rados_tables_unlock(rs);
		}
		off += 1 + len;
	}
	return 0;
}

int rados_store_add_family(store *st, const store_table *t, const char *family)
{
	rstore *rs = RS(st);
	char tk[MRTX_MAX_NAME + 3], pk[MRTX_MAX_NAME + 3], dk[MRTX_MAX_NAME + 3];
	mrtx_arena a;
	int rc = 0;

	keys_of(t->name, tk, pk, dk);
	arena_init(&a);
	for (int attempt = 0; attempt < 20; attempt++) {
		const char *keys[2] = { tk, dk };
		mrtx_bytes v[2];
		const uint8_t *p;
		size_t at, fl = strlen(family), off = 5;
		uint8_t *nrec;
		int applied;

		if ((rc = rados_meta_read(rs, keys, 2, &a, v)))
			break;
		if (!rec_is(v[0], t)) {
			rc = rados_table_closed(rs, t, v[0]);
			rc = rc == MRTX_CONFLICT ?
			     mrtx__seterr(MRTX_ENOTABLE, "table '%s' was truncated since it was "
			                  "looked up: look it up again", t->name) : rc;
			break;
		}
		if (v[1].data) {
			rc = mrtx__seterr(MRTX_ELOCKED, "table '%s' is being dropped or truncated",
			                  t->name);
			break;
		}
		if (!(at = rados_record_tablets_at(v[0]))) {
			rc = mrtx__seterr(MRTX_ECORRUPT, "%s: the record of table '%s' is malformed",
			                  rs->addr, t->name);
			break;
		}
		p = v[0].data;
		for (size_t i = 0; i < p[4]; i++) {
			if (p[off] == fl && memcmp(p + off + 1, family, fl) == 0) {
				rc = families_take(rs, t, v[0]);
				rc = rc ? rc : mrtx__seterr(MRTX_EEXIST, "table '%s' already has "
				                            "family '%s'", t->name, family);
				goto out;
			}
			off += 1 + p[off];
		}
		if (p[4] >= MRTX_MAX_FAMILIES) {
			rc = mrtx__seterr(MRTX_ETOOBIG, "table '%s' has the maximum of %u families",
			                  t->name, (unsigned)MRTX_MAX_FAMILIES);
			break;
		}
		/* the record with the family appended to the family list */
		if (!(nrec = arena_alloc(&a, v[0].size + 1 + fl))) {
			rc = MRTX_ENOMEM;
			break;
		}
		memcpy(nrec, p, at);
		nrec[4] = (uint8_t)(p[4] + 1);
		nrec[at] = (uint8_t)fl;
		memcpy(nrec + at + 1, family, fl);
		memcpy(nrec + at + 1 + fl, p + at, v[0].size - at);
		{
			rguard g[2] = { guard_eq(tk, v[0]), guard_eq(dk, MRTX_BYTES(NULL, 0)) };
			rkv set = { MRTX_CSTR(tk), MRTX_BYTES(nrec, v[0].size + 1 + fl) };

			if ((rc = rados_meta_write(rs, g, 2, &set, 1, NULL, 0, &applied)))
				break;
		}
		if (applied) {
			rc = families_take(rs, t, MRTX_BYTES(nrec, v[0].size + 1 + fl));
			break;
		}
	}
out:
	arena_free(&a);
	return rc;
}

int rados_store_table_refresh(store *st)
{
	rstore *rs = RS(st);
	int rc = 0;

	for (size_t i = 0;; i++) {
		store_table *t;
		mrtx_bytes rec;
		mrtx_arena a;

		rados_tables_lock(rs);
		t = i < rs->ntables ? rs->tables[i] : NULL;
		rados_tables_unlock(rs);
		if (!t || rc)
			break;
		if (atomic_load(&t->state) == STORE_T_GONE)
			continue;
		arena_init(&a);
		if ((rc = rados_table_record(rs, t, &a, &rec)) == 0) {
			if (!rec_is(rec, t))
				atomic_store(&t->state, STORE_T_GONE);
			else if ((rc = families_take(rs, t, rec)) == 0)
				rc = rados_table_policies_reload(rs, t);
		}
		arena_free(&a);
	}
	return rc;
}

/* ------------------------------------------------------- tablet writes */

/*
 * One write per tablet of t's current map: guards g (built per tablet by
 * fn), sets/rms likewise; a tablet whose state guard (always g[0]) failed
 * because a split retired it is settled and the round is run again with
 * the new map.  fn returns the number of guards it set.  *failed gets how
 * many writes failed another guard (their results are left to fn's
 * caller through `res`, one per tablet, of the last round).
 */
typedef size_t (*tw_fn)(void *arg, const rtablet *tb, rguard *g, rkv *sets, size_t *nsets,
                        mrtx_bytes *rms, size_t *nrms, int *create);

static int tablets_write(rstore *rs, const store_table *t, tw_fn fn, void *arg,
                         int accept_dropped, size_t *failed)
{
	int rc = 0;

	for (int attempt = 0; attempt < RMOVED_TRIES; attempt++) {
		const rtmap *m = rados_map(t);
		rwrite *w = mrtx__calloc(m->n, sizeof(*w));
		rguard *g = mrtx__calloc(4 * m->n, sizeof(*g));
		rkv *sets = mrtx__calloc(4 * m->n, sizeof(*sets));
		mrtx_bytes *rms = mrtx__calloc(4 * m->n, sizeof(*rms));
		const char *moved = NULL;

		*failed = 0;
		if (!w || !g || !sets || !rms) {
			rc = mrtx__seterr(MRTX_ENOMEM, "out of memory changing table '%s'", t->name);
		} else {
			for (size_t i = 0; i < m->n; i++) {
				size_t ns = 0, nr = 0;
				int create = 1;

				w[i].oid = m->t[i].oid;
				w[i].nguards = fn(arg, &m->t[i], &g[4 * i], &sets[4 * i], &ns, &rms[4 * i],
				                  &nr, &create);
				w[i].guards = &g[4 * i];
				w[i].sets = &sets[4 * i];
				w[i].nsets = ns;
				w[i].rms = &rms[4 * i];
				w[i].nrms = nr;
				w[i].create = create;
			}
			atomic_fetch_add_explicit(&rs->write_txns, m->n, memory_order_relaxed);
			rc = rconn_write(rs->conn, w, m->n);
			if (rc == RCONN_TIMEDOUT)
				rc = MRTX_ESTORE;
			if (rc == MRTX_CONFLICT)
				rc = 0;
			for (size_t i = 0; rc == 0 && i < m->n && !moved; i++) {
				if (w[i].result != -ECANCELED)
					continue;
				if (g[4 * i].result == -ECANCELED) {
					/* not open: retired by a split (settle it), or
					 * closed (by this drop, or one before) */
					int dropped;

					if ((rc = rados_tablet_dropped(rs, m->t[i].oid, &dropped)) == 0) {
						if (!dropped)
							moved = m->t[i].oid;
						else if (!accept_dropped)
							(*failed)++;
					}
				} else {
					(*failed)++;
				}
			}
		}
		mrtx__free(w);
		mrtx__free(g);
		mrtx__free(sets);
		mrtx__free(rms);
		if (rc || !moved)
			return rc;
		if ((rc = rados_table_settle(rs, t, moved)))
			return rc;
	}
	return mrtx__seterr(MRTX_ESTORE, "%s: the tablets of table '%s' keep being split",
	                    rs->addr, t->name);
}

static const mrtx_bytes STATE_OPEN = { "", 0 };

typedef struct frz {
	uint8_t tok[8];
	int on;
} frz;

/* freeze: open -> mark = token; thaw: mark = token -> no mark */
static size_t freeze_fn(void *arg, const rtablet *tb, rguard *g, rkv *sets, size_t *nsets,
                        mrtx_bytes *rms, size_t *nrms, int *create)
{
	frz *f = arg;

	(void)tb;
	g[0] = (rguard){ MRTX_BYTES(rados_state_key, 2), STATE_OPEN, LIBRADOS_CMPXATTR_OP_EQ, 0 };
	if (f->on) {
		sets[(*nsets)++] = (rkv){ MRTX_BYTES(rados_freeze_key, 2), MRTX_BYTES(f->tok, 8) };
		return 1;
	}
	*create = 0;
	g[1] = (rguard){ MRTX_BYTES(rados_freeze_key, 2), MRTX_BYTES(f->tok, 8),
	                 LIBRADOS_CMPXATTR_OP_EQ, 0 };
	rms[(*nrms)++] = MRTX_BYTES(rados_freeze_key, 2);
	return 2;
}

typedef struct cls {
	uint8_t st[9];
} cls;

/* close: open -> 'D' + token */
static size_t close_fn(void *arg, const rtablet *tb, rguard *g, rkv *sets, size_t *nsets,
                       mrtx_bytes *rms, size_t *nrms, int *create)
{
	cls *c = arg;

	(void)tb;
	(void)rms;
	(void)nrms;
	(void)create;
	g[0] = (rguard){ MRTX_BYTES(rados_state_key, 2), STATE_OPEN, LIBRADOS_CMPXATTR_OP_EQ, 0 };
	sets[(*nsets)++] = (rkv){ MRTX_BYTES(rados_state_key, 2), MRTX_BYTES(c->st, 9) };
	return 1;
}

/* ------------------------------------------------------ freeze, clear */

static int new_token(rstore *rs, uint64_t *tok)
{
	uint8_t b[8];

	do {
		if (!mrtx__sim_random(b, sizeof(b)) && RAND_bytes(b, sizeof(b)) != 1)
			return mrtx__seterr(MRTX_ESTORE, "%s: no random bytes for a token", rs->addr);
		*tok = rbe64_get(b);
	} while (*tok == 0);
	return 0;
}

int rados_store_table_held(store *st, const store_table *t, int *held)
{
	rstore *rs = RS(st);
	char tk[MRTX_MAX_NAME + 3], pk[MRTX_MAX_NAME + 3], dk[MRTX_MAX_NAME + 3];
	const char *keys[2];
	mrtx_bytes v[2];
	mrtx_arena a;
	drec d;
	int rc;

	*held = 0;
	keys_of(t->name, tk, pk, dk);
	keys[0] = tk;
	keys[1] = dk;
	arena_init(&a);
	/* the record still t's (not switched) and its drop record t's */
	if ((rc = rados_meta_read(rs, keys, 2, &a, v)) == 0 && rec_is(v[0], t) && v[1].data &&
	    drec_parse(v[1], &d) == 0 && d.id == id_of(t))
		*held = d.phase == PHASE_CLOSING ? STORE_HELD_CLOSED : STORE_HELD_FROZEN;
	arena_free(&a);
	return rc;
}

int rados_store_table_freeze(store *st, const store_table *t, int on, uint64_t *token)
{
	rstore *rs = RS(st);
	char tk[MRTX_MAX_NAME + 3], pk[MRTX_MAX_NAME + 3], dk[MRTX_MAX_NAME + 3];
	mrtx_arena a;
	int rc = 0;

	keys_of(t->name, tk, pk, dk);
	arena_init(&a);
	for (int attempt = 0; attempt < 20; attempt++) {
		const char *keys[2] = { tk, dk };
		mrtx_bytes v[2];
		uint8_t nb[DREC_SIZE];
		drec d = { 0, 0, 0 }, nd = { 0, 0, 0 };
		int has = 0, applied;

		if ((rc = rados_meta_read(rs, keys, 2, &a, v)))
			break;
		if (!rec_is(v[0], t)) {
			rc = on ? rados_table_closed(rs, t, v[0]) : 0;
			break;
		}
		if (v[1].data) {
			if (drec_parse(v[1], &d)) {
				rc = mrtx__seterr(MRTX_ECORRUPT, "%s: the drop record of table '%s' is "
				                  "malformed", rs->addr, t->name);
				break;
			}
			has = d.id == id_of(t);
		}
		if (!on) {
			/* lift our own mark, before the close only */
			size_t failed;
			frz f = { { 0 }, 0 };

			if (!has || d.token != *token || d.phase != PHASE_FROZEN)
				break;
			rbe64_put(f.tok, *token);
			if ((rc = tablets_write(rs, t, freeze_fn, &f, 1, &failed)))
				break;
			if (failed) {
				/* a mark not ours stays (an earlier owner's, taken
				 * over): so does the record, which says so, and the
				 * next drop or truncate finishes or lifts it */
				rc = mrtx__seterr(MRTX_ESTORE, "%s: table '%s': %zu tablets kept a freeze "
				                  "mark not this call's", rs->addr, t->name, failed);
				break;
			}
			{
				rguard g = guard_eq(dk, v[1]);
				mrtx_bytes rm = MRTX_CSTR(dk);

				rc = rados_meta_write(rs, &g, 1, NULL, 0, &rm, 1, &applied);
			}
			break;
		}
		nd.phase = has ? d.phase : PHASE_FROZEN;
		nd.id = id_of(t);
		if ((rc = new_token(rs, &nd.token)))
			break;
		{
			rguard g[2] = { guard_eq(tk, v[0]), guard_eq(dk, v[1]) };
			rkv set = { MRTX_CSTR(dk), drec_put(nb, &nd) };

			if ((rc = rados_meta_write(rs, g, 2, &set, 1, NULL, 0, &applied)))
				break;
		}
		if (!applied)
			continue;
		*token = nd.token;
		if (nd.phase == PHASE_CLOSING) {
			rc = STORE_FREEZE_CLOSED; /* settled before its close */
			break;
		}
		{
			frz f = { { 0 }, 1 };
			size_t failed;

			rbe64_put(f.tok, nd.token);
			rc = tablets_write(rs, t, freeze_fn, &f, 0, &failed);
			if (rc == 0 && failed)
				rc = mrtx__seterr(MRTX_ESTORE, "%s: table '%s': %zu tablets could not "
				                  "be frozen", rs->addr, t->name, failed);
		}
		break;
	}
	arena_free(&a);
	return rc;
}

/* The tablets of a garbage record z/<id> (an old table record): their rows
 * removed, their state kept; then the record. */
static int garbage_one(const char *key, mrtx_bytes value, void *payload)
{
	rstore *rs = payload;
	rtmap *m;
	rwrite *w;
	int rc, applied;
	/* (every row key: locks, cells, markers, push marks, one-phase tags) */
	static const uint8_t lo[1] = { RK_LOCK }, hi[1] = { RK_ONEPC + 1 };

	if ((rc = rados_map_parse(rs, key, value, &m)))
		return rc;
	if (!(w = mrtx__calloc(m->n, sizeof(*w)))) {
		mrtx__free(m);
		return mrtx__seterr(MRTX_ENOMEM, "out of memory clearing a dropped table");
	}
	for (size_t i = 0; i < m->n; i++) {
		w[i].oid = m->t[i].oid;
		w[i].rm_from = MRTX_BYTES(lo, 1);
		w[i].rm_to = MRTX_BYTES(hi, 1);
	}
	atomic_fetch_add_explicit(&rs->write_txns, m->n, memory_order_relaxed);
	rc = rconn_write(rs->conn, w, m->n);
	if (rc == MRTX_ESTORE) { /* (an object never made: nothing to clear) */
		rc = 0;
		for (size_t i = 0; i < m->n; i++)
			if (w[i].result && w[i].result != -ENOENT)
				rc = rconn_error(rs->conn, w[i].result, "clear a closed tablet", w[i].oid);
	}
	if (rc == RCONN_TIMEDOUT)
		rc = MRTX_ESTORE;
	mrtx__free(w);
	mrtx__free(m);
	if (rc == 0) {
		rguard g = guard_eq(key, value);
		mrtx_bytes rm = MRTX_CSTR(key);

		rc = rados_meta_write(rs, &g, 1, NULL, 0, &rm, 1, &applied);
	}
	return rc;
}

/* Clear what every finished drop or truncate left (z/ records). */
static int sweep_garbage(rstore *rs)
{
	mrtx_arena a;
	int rc;

	arena_init(&a);
	rc = rados_store_meta_list((store *)rs, "z/", &a, garbage_one, rs, NULL);
	arena_free(&a);
	return rc;
}

/* Make the tablets 1..m->n of table id, empty but for the collection
 * mark ts (a read at a snapshot below it gets MRTX_ESNAPSHOT: the table
 * the name held before, if any, is not there to read) and, when not 0,
 * index-declaration generation gen.  A truncate's new table and a new
 * table both get theirs before their record is written. */
int rados_tablets_make(rstore *rs, const rtmap *m, uint32_t id, uint64_t gen, uint64_t ts)
{
	uint8_t g8[8], mark[16];
	char (*oids)[ROID_MAX] = mrtx__calloc(m->n ? m->n : 1, ROID_MAX);
	rwrite *w = mrtx__calloc(m->n ? m->n : 1, sizeof(*w));
	rkv *sets = mrtx__calloc(2 * (m->n ? m->n : 1), sizeof(*sets));
	int rc;

	if (!oids || !w || !sets) {
		rc = mrtx__seterr(MRTX_ENOMEM, "out of memory making the tablets of a table");
		goto out;
	}
	rgen_put(g8, gen);
	rgen_put(mark, ts);
	rgen_put(mark + 8, 0);
	for (size_t i = 0; i < m->n; i++) {
		rados_tablet_oid(rs, id, (uint32_t)(i + 1), oids[i]);
		w[i].oid = oids[i];
		w[i].create = 1;
		sets[2 * i] = (rkv){ MRTX_BYTES(rados_collect_key, 2), MRTX_BYTES(mark, 16) };
		sets[2 * i + 1] = (rkv){ MRTX_BYTES(rados_gen_key, 2), MRTX_BYTES(g8, 8) };
		w[i].sets = &sets[2 * i];
		w[i].nsets = gen ? 2 : 1;
	}
	atomic_fetch_add_explicit(&rs->write_txns, m->n, memory_order_relaxed);
	rc = rconn_write(rs->conn, w, m->n);
	if (rc == RCONN_TIMEDOUT)
		rc = mrtx__seterr(MRTX_ESTORE, "%s: making the tablets of a table timed out",
		                  rs->addr);
	for (size_t i = 0; rc == 0 && i < m->n; i++)
		if (w[i].result)
			rc = mrtx__seterr(MRTX_ESTORE, "%s: making tablet %s: %s", rs->addr, oids[i],
			                  strerror(-w[i].result));
out:
	mrtx__free(oids);
	mrtx__free(w);
	mrtx__free(sets);
	return rc;
}

/* Truncate's new record (new id nid, tablets 1..n at the same starts) into
 * a, and its tablets made: generation gen, collection mark ts. */
static int fresh_table(rstore *rs, const store_table *t, mrtx_bytes rec, uint32_t nid,
                       uint64_t gen, uint64_t ts, mrtx_arena *a, mrtx_bytes *out)
{
	size_t at = rados_record_tablets_at(rec), size;
	rtmap *om;
	uint8_t *p;
	int rc;

	if ((rc = rados_map_parse(rs, t->name, rec, &om)))
		return rc;
	size = at + 4;
	for (size_t i = 0; i < om->n; i++)
		size += 6 + om->t[i].start.size;
	if (!(p = arena_alloc(a, size))) {
		mrtx__free(om);
		return mrtx__seterr(MRTX_ENOMEM, "out of memory truncating '%s'", t->name);
	}
	memcpy(p, rec.data, at);
	rbe32_put(p, nid);
	rbe32_put(p + at, (uint32_t)om->n);
	size = at + 4;
	for (size_t i = 0; i < om->n; i++) {
		rbe32_put(p + size, (uint32_t)(i + 1));
		p[size + 4] = (uint8_t)(om->t[i].start.size >> 8);
		p[size + 5] = (uint8_t)om->t[i].start.size;
		memcpy(p + size + 6, om->t[i].start.data, om->t[i].start.size);
		size += 6 + om->t[i].start.size;
	}
	rc = rados_tablets_make(rs, om, nid, gen, ts);
	mrtx__free(om);
	*out = MRTX_BYTES(p, size);
	return rc;
}

int rados_store_table_clear(store *st, const store_table *t, int drop, uint64_t token)
{
	rstore *rs = RS(st);
	char tk[MRTX_MAX_NAME + 3], pk[MRTX_MAX_NAME + 3], dk[MRTX_MAX_NAME + 3], zk[16], sk[16],
	     nk[MRTX_MAX_NAME + 3];
	int closed = 0, rc = 0;
	mrtx_arena a;

	keys_of(t->name, tk, pk, dk);
	snprintf(nk, sizeof(nk), RADOS_DROPPED_PREFIX "%s", t->name);
	snprintf(zk, sizeof(zk), "z/%08" PRIx32, id_of(t));
	snprintf(sk, sizeof(sk), "seq.%" PRIx32, id_of(t)); /* (rados_split.c) */
	arena_init(&a);
	for (int attempt = 0; attempt < 20; attempt++) {
		const char *keys[4] = { tk, dk, "gen", "next" };
		mrtx_bytes v[4], nrec = MRTX_BYTES(NULL, 0);
		uint8_t nb[DREC_SIZE], nid4[4];
		uint64_t ts = 0, gen;
		drec d;
		int applied;

		arena_free(&a);
		arena_init(&a);
		if ((rc = rados_meta_read(rs, keys, 4, &a, v)))
			break;
		if (!v[0].data) {
			rc = rados_table_closed(rs, t, v[0]); /* dropped */
			break;
		}
		if (!rec_is(v[0], t) || !v[1].data || drec_parse(v[1], &d) || d.token != token ||
		    d.id != id_of(t)) {
			if (!rec_is(v[0], t)) /* (truncated: this object is another table's) */
				atomic_store(&((store_table *)(uintptr_t)t)->state, STORE_T_GONE);
			rc = mrtx__seterr(MRTX_ELOCKED, "table '%s': another drop or truncate ran "
			                  "meanwhile", t->name);
			break;
		}
		if (d.phase == PHASE_FROZEN) {
			rguard g = guard_eq(dk, v[1]);
			rkv set;

			d.phase = PHASE_CLOSING;
			set = (rkv){ MRTX_CSTR(dk), drec_put(nb, &d) };
			if ((rc = rados_meta_write(rs, &g, 1, &set, 1, NULL, 0, &applied)))
				break;
			continue;
		}
		if (!closed) {
			/* the map as the record has it (a split may have published
			 * since this object loaded it) */
			cls c;
			size_t failed;

			if ((rc = rados_table_reload(rs, t)))
				break;
			c.st[0] = RSTATE_DROPPED;
			rbe64_put(c.st + 1, token);
			if ((rc = tablets_write(rs, t, close_fn, &c, 1, &failed)))
				break;
			if (failed) {
				rc = mrtx__seterr(MRTX_ESTORE, "%s: table '%s': %zu tablets could not be "
				                  "closed", rs->addr, t->name, failed);
				break;
			}
			closed = 1;
			if ((rc = FAILPOINT(FP_DDL_AFTER_CLOSE)))
				break;
			continue; /* (the record as it is after the close) */
		}
		if (v[2].size != 8 || (!drop && v[3].size != 4)) {
			rc = mrtx__seterr(MRTX_ECORRUPT, "%s: the generation or next-table record is "
			                  "malformed", rs->addr);
			break;
		}
		gen = rbe64_get(v[2].data);
		if (!drop) {
			uint32_t nid = rbe32_get(v[3].data);
			int spent;

			if (nid == UINT32_MAX) {
				rc = mrtx__seterr(MRTX_ETOOBIG, "store %s has handed out every table id "
				                  "(tables created, dropped and truncated over its life)",
				                  rs->addr);
				break;
			}
			/* the new id is spent first, on its own: its tablets are made
			 * under an id no other table can take (a truncate that dies
			 * before its switch leaves them to nobody) */
			rbe32_put(nid4, nid + 1);
			if ((rc = rados_meta_cas(rs, "next", v[3], MRTX_BYTES(nid4, 4), &spent)))
				break;
			if (!spent)
				continue;
		}
		/* above every commit in the closed table: a truncate's fresh
		 * tablets are marked there, a drop leaves it for the next table
		 * of the name (n/<name>) */
		if ((rc = rados_store_ts_next(st, 0, &ts)))
			break;
		if (!drop) {
			uint32_t nid = rbe32_get(v[3].data);

			if ((rc = fresh_table(rs, t, v[0], nid, gen, ts, &a, &nrec)))
				break;
		}
		{
			rguard g[3] = { guard_eq(tk, v[0]), guard_eq(dk, v[1]), guard_eq("gen", v[2]) };
			rkv sets[3];
			mrtx_bytes rms[4];
			size_t ns = 0, nr = 0;
			uint8_t ts8[8];

			sets[ns++] = (rkv){ MRTX_CSTR(zk), v[0] };
			rms[nr++] = MRTX_CSTR(dk);
			rms[nr++] = MRTX_CSTR(sk);
			if (drop) {
				rbe64_put(ts8, ts);
				sets[ns++] = (rkv){ MRTX_CSTR(nk), MRTX_BYTES(ts8, 8) };
				rms[nr++] = MRTX_CSTR(tk);
				rms[nr++] = MRTX_CSTR(pk);
			} else {
				sets[ns++] = (rkv){ MRTX_CSTR(tk), nrec };
			}
			if ((rc = rados_meta_write(rs, g, 3, sets, ns, rms, nr, &applied)))
				break;
			if (!applied)
				continue; /* (a declaration meanwhile: the generation) */
		}
		atomic_store(&((store_table *)(uintptr_t)t)->state, STORE_T_GONE);
		if ((rc = FAILPOINT(FP_DDL_AFTER_SWITCH)) == 0 && sweep_garbage(rs))
			mrtx__clearerr(); /* (done: the rows left are the next one's to clear) */
		break;
	}
	if (rc == 0 && atomic_load(&t->state) != STORE_T_GONE)
		rc = mrtx__seterr(MRTX_ESTORE, "%s: table '%s': the record kept changing under "
		                  "the drop", rs->addr, t->name);
	arena_free(&a);
	return rc;
}
