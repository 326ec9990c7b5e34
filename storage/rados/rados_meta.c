/*
 * rados_meta.c - a RADOS store's metadata (rados_int.h has the layout):
 * opening and creating the store, tables and their tablets, the opaque
 * metadata records of store_meta_*, and the index-declaration generation
 * that every tablet carries.
 *
 * Every change to NAME.meta is one compound op guarded by omap_cmp on what
 * it replaces, so concurrent creators (processes on any host) never
 * overwrite each other: the loser re-reads and finds the winner's record.
 */
#include "storage/sim_hooks.h"
#include "storage/rados/rados_int.h"
#include "storage/backend.h"
#include "storage/versions.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/rand.h>

const uint8_t rados_gen_key[2] = { RK_GEN_0, 'G' };
const uint8_t rados_state_key[2] = { RK_GEN_0, 'S' };

int rados_fault(rstore *rs, const char *step, int write)
{
	int err = store__fault_hit(write);

	if (err == 0 || err == STORE_FAULT_APPLIED)
		return err;
	/* the LMDB codes tests inject (MDB_MAP_FULL) mean "no room" here too */
	return mrtx__seterr(err == -30792 || err == ENOSPC ? MRTX_EFULL : MRTX_ESTORE,
	                    "store %s: %s: injected fault (%d)", rs->addr, step, err);
}

/* ---------------------------------------------------------- meta object */

/* Read the values of keys from NAME.meta (missing keys: size 0, data NULL). */
static int meta_read(rstore *rs, const char *const *keys, size_t n, mrtx_arena *a,
                     mrtx_bytes *vals, int *exists)
{
	mrtx_bytes kb[8];
	rread r;
	int rc;

	memset(&r, 0, sizeof(r));
	for (size_t i = 0; i < n; i++) {
		kb[i] = MRTX_CSTR(keys[i]);
		vals[i] = MRTX_BYTES(NULL, 0);
	}
	r.oid = rs->meta_oid;
	r.keys = kb;
	r.nkeys = n;
	atomic_fetch_add_explicit(&rs->read_txns, 1, memory_order_relaxed);
	if ((rc = rconn_read(rs->conn, &r, 1, a)))
		return rc == RCONN_TIMEDOUT ? MRTX_ESTORE : rc;
	*exists = r.result != -ENOENT;
	for (size_t j = 0; j < r.nkvs; j++)
		for (size_t i = 0; i < n; i++)
			if (r.kvs[j].key.size == kb[i].size &&
			    memcmp(r.kvs[j].key.data, kb[i].data, kb[i].size) == 0)
				vals[i] = r.kvs[j].value;
	return 0;
}

/* One guarded write of NAME.meta; *applied is 0 when a guard was false. */
static int meta_write(rstore *rs, rguard *g, size_t ng, const rkv *sets, size_t ns,
                      int *applied)
{
	return rados_meta_write(rs, g, ng, sets, ns, NULL, 0, applied);
}

int rados_meta_write(rstore *rs, rguard *g, size_t ng, const rkv *sets, size_t ns,
                     const mrtx_bytes *rms, size_t nrms, int *applied)
{
	rwrite w;
	int rc;

	memset(&w, 0, sizeof(w));
	w.oid = rs->meta_oid;
	w.create = 1;
	w.guards = g;
	w.nguards = ng;
	w.sets = sets;
	w.nsets = ns;
	w.rms = rms;
	w.nrms = nrms;
	atomic_fetch_add_explicit(&rs->write_txns, 1, memory_order_relaxed);
	if ((rc = rconn_write(rs->conn, &w, 1)))
		return rc == RCONN_TIMEDOUT ? MRTX_ESTORE : rc;
	*applied = w.result == 0;
	return 0;
}

static rguard guard_eq(const char *key, mrtx_bytes v)
{
	rguard g = { MRTX_CSTR(key), v, LIBRADOS_CMPXATTR_OP_EQ, 0 };

	return g;
}

/* Create the store's metadata (create > 0; 0: not asked to, -1: asked not
 * to), or find it made by someone else; *format
 * gets its format record's digit.  A store of an older format, or one
 * whose upgrade was cut short, is refused unless for the upgrade. */
static int meta_init(rstore *rs, int upgrade, int create, char *format)
{
	static const char *const keys[] = { "format", "id" };
	mrtx_arena a;
	mrtx_bytes v[2];
	int rc, exists, applied = 0;

	arena_init(&a);
	for (int attempt = 0; attempt < 3; attempt++) {
		uint8_t id[16], zero8[8] = { 0 }, one4[4] = { 0, 0, 0, 1 };

		if ((rc = meta_read(rs, keys, 2, &a, v, &exists)))
			break;
		if (v[0].data) {
			char f = v[0].size == 1 ? *(const char *)v[0].data : 0;

			if ((f < RFORMAT_OLDEST[0] || f > RFORMAT_VERSIONS[0]) &&
			    f != RFORMAT_UPGRADING[0]) {
				rc = mrtx__seterr(MRTX_ENOTSTORE, "%s: not an mrtx RADOS store of format "
				                  RFORMAT_OLDEST " to " RFORMAT_VERSIONS " (object %s holds "
				                  "something else)", rs->addr, rs->meta_oid);
				break;
			}
			if (v[1].size != 16) {
				rc = mrtx__seterr(MRTX_ENOTSTORE, "%s: object %s holds no store id: not "
				                  "an mrtx store", rs->addr, rs->meta_oid);
				break;
			}
			/* older layouts are converted by `mrtx upgrade` (rados_upgrade.c),
			 * which alone opens them */
			if (f != RFORMAT_VERSIONS[0] && !upgrade) {
				const char fs[2] = { f, 0 };

				rc = mrtx__seterr(MRTX_ENOTSTORE, "%s: layout format %s; this mrtx reads "
				                  "format " RFORMAT_VERSIONS " (cells with versions): run "
				                  "`mrtx upgrade %s`, which converts it in place",
				                  rs->addr, f == RFORMAT_UPGRADING[0] ?
				                  "\"U\" (an upgrade to " RFORMAT_VERSIONS " was interrupted)" :
				                  fs, rs->addr);
				break;
			}
			*format = f;
			memcpy(rs->id, v[1].data, 16);
			break;
		}
		if (upgrade) {
			rc = mrtx__seterr(MRTX_ENOTSTORE, "%s: no mrtx store here to upgrade", rs->addr);
			break;
		}
		if (rs->head.read_only || create <= 0) {
			/* creating the metadata is a write; and a store is made
			 * only where the caller asked (a mistyped address must not
			 * become an empty store) */
			const char *why = rs->head.read_only ? "a read-only open creates nothing" :
			                  create < 0 ? "this open was asked not to create one" :
			                  "check the address, or create the store: `mrtx "
			                  "create-table`, or mrtx_options.create = "
			                  "MRTX_CREATE_IF_MISSING";

			if (exists)
				rc = mrtx__seterr(MRTX_ENOTSTORE, "%s: object %s holds no mrtx store "
				                  "metadata (%s)", rs->addr, rs->meta_oid, why);
			else
				rc = mrtx__seterr(MRTX_ENOTSTORE, "%s: no mrtx store here (%s)",
				                  rs->addr, why);
			break;
		}
		if (exists && attempt == 0) {
			/* an object without our format record: not ours unless empty */
			static const char *const any[] = { "t/", "gen" };
			mrtx_bytes w[2];

			if ((rc = meta_read(rs, any, 2, &a, w, &exists)))
				break;
			if (w[1].data) {
				rc = mrtx__seterr(MRTX_ENOTSTORE, "%s: object %s is not an mrtx store",
				                  rs->addr, rs->meta_oid);
				break;
			}
		}
		if (!mrtx__sim_random(id, sizeof(id)) && RAND_bytes(id, sizeof(id)) != 1) {
			rc = mrtx__seterr(MRTX_ESTORE, "%s: no random bytes for the store id", rs->addr);
			break;
		}
		{
			rguard g = guard_eq("format", MRTX_BYTES("", 0));
			rkv sets[4] = {
				{ MRTX_CSTR("format"), MRTX_CSTR(RFORMAT_VERSIONS) },
				{ MRTX_CSTR("id"), MRTX_BYTES(id, 16) },
				{ MRTX_CSTR("gen"), MRTX_BYTES(zero8, 8) },
				{ MRTX_CSTR("next"), MRTX_BYTES(one4, 4) },
			};

			if ((rc = meta_write(rs, &g, 1, sets, 4, &applied)))
				break;
		}
		/* applied or not, the next read finds a format record */
	}
	if (rc == 0 && !v[0].data && !applied)
		rc = mrtx__seterr(MRTX_ESTORE, "%s: could not create the store metadata", rs->addr);
	arena_free(&a);
	return rc;
}

/* ----------------------------------------------------------- open/close */

/*
 * librados draws its client's messenger nonce from a thread-local random
 * engine that is seeded once per thread: a child forked from a process
 * that had used librados in the same thread would draw the very nonce its
 * parent (and every sibling) drew, and clients with one address reset each
 * other's sessions (operations stall for seconds, or time out).  Each
 * connection is therefore made in a thread of its own, whose engine is
 * seeded afresh.
 */
struct connect_job {
	const raddr *ra;
	rconn *conn;
	int rc;
	char err[512];
};

static void *connect_thread(void *arg)
{
	struct connect_job *j = arg;

	j->rc = rconn_open(&j->conn, j->ra, NULL);
	if (j->rc)
		snprintf(j->err, sizeof(j->err), "%s", mrtx_errmsg());
	return NULL;
}

static int connect_fresh(const raddr *ra, rconn **out)
{
	struct connect_job j = { ra, NULL, 0, "" };
	pthread_t th;

	if (pthread_create(&th, NULL, connect_thread, &j) != 0)
		return mrtx__seterr(MRTX_ENOMEM, "cannot start a thread to connect to RADOS");
	pthread_join(th, NULL);
	if (j.rc)
		return mrtx__seterr(j.rc, "%s", j.err);
	*out = j.conn;
	return 0;
}

int rados_store_open_any(store **out, const char *addr, const store_opts *o, int upgrade,
                         char *format)
{
	rstore *rs;
	raddr ra;
	int rc;

	*out = NULL;
	*format = 0;
	/* RADOS writes are replicated before they are acknowledged: durability,
	 * map size and file mode have no meaning here */
	if ((rc = raddr_parse(&ra, addr)))
		return rc;
	if (!(rs = mrtx__calloc(1, sizeof(*rs))) || !(rs->addr = mrtx__strdup(addr)) ||
	    !(rs->name = mrtx__strdup(ra.name))) {
		if (rs)
			mrtx__free(rs->addr);
		mrtx__free(rs);
		raddr_free(&ra);
		return mrtx__seterr(MRTX_ENOMEM, "out of memory opening %s", addr);
	}
	rs->head.be = &rados_backend;
	rs->head.read_only = o && o->read_only;
	rs->unbatched = o && o->unbatched;
	rs->lock_order = o ? o->lock_order : NULL;
	pthread_mutex_init(&rs->mu, NULL);
	pthread_mutex_init(&rs->ts_mu, NULL);
	pthread_cond_init(&rs->ts_cv, NULL);

	rs->ts_tail = &rs->ts_queue;
	snprintf(rs->meta_oid, sizeof(rs->meta_oid), "%s.meta", ra.name);
	snprintf(rs->ts_oid, sizeof(rs->ts_oid), "%s.ts", ra.name);
	/* (the registry shares the oracle's object: rados_snaps.c) */
	snprintf(rs->snaps_oid, sizeof(rs->snaps_oid), "%s.ts", ra.name);
	rs->split_rows = ra.has_split_rows ? ra.split_rows : RADDR_DEFAULT_SPLIT_ROWS;
	rc = connect_fresh(&ra, &rs->conn);
	raddr_free(&ra);
	if (rc == 0)
		rc = meta_init(rs, upgrade, !o || o->create == MRTX_CREATE_DEFAULT ? 0 :
		                            o->create == MRTX_CREATE_NEVER ? -1 : 1, format);
	rs->head.caps = STORE_CAP_ORACLE | STORE_CAP_REMOTE | STORE_CAP_COND | STORE_CAP_VERSIONS |
	                STORE_CAP_SCHEMA | STORE_CAP_RESTORE;
	/* every writer must derive the same order keys, or its exact-value
	 * guards would never match another client's values */
	/* a writer's client address, for fencing it should its process die */
	if (rc == 0 && !upgrade && !rs->head.read_only && o && o->has_owner)
		rc = rados_fence_register(rs, o->owner);
	if (rc == 0 && !rs->lock_order && !rs->head.read_only)
		rc = mrtx__seterr(MRTX_EINVAL, "%s: a format " RFORMAT_VERSIONS " store opened for "
		                  "writing needs store_opts.lock_order", addr);
	if (rc) {
		rados_store_close((store *)rs);
		return rc;
	}
	*out = (store *)rs;
	return 0;
}

int rados_store_open(store **out, const char *addr, const store_opts *o)
{
	char format;

	return rados_store_open_any(out, addr, o, 0, &format);
}

static void map_free(rtmap *m)
{
	while (m) {
		rtmap *o = m->older;

		mrtx__free(m);
		m = o;
	}
}

static void table_free(store_table *t)
{
	if (!t)
		return;
	if (t->be) {
		rtable *rt = t->be;

		map_free(atomic_load(&rt->map));
		while (rt->added) {
			struct rfam *f = rt->added;

			rt->added = f->next;
			mrtx__free(f);
		}
	}
	mrtx__free(t->be);
	store_table_free_policies(t);
	mrtx__free(t);
}

void rados_store_close(store *st)
{
	rstore *rs = RS(st);

	if (rs->conn)
		rados_fence_unregister(rs);
	rconn_close(rs->conn);
	for (size_t i = 0; i < rs->ntables; i++)
		table_free(rs->tables[i]);
	mrtx__free(rs->tables);
	pthread_mutex_destroy(&rs->mu);
	pthread_mutex_destroy(&rs->ts_mu);
	pthread_cond_destroy(&rs->ts_cv);
	mrtx__free(rs->addr);
	mrtx__free(rs->name);
	mrtx__free(rs);
}

const char *rados_store_path(const store *st)
{
	return RSC(st)->addr;
}


size_t rados_store_tablets(store *st, const store_table *t)
{
	(void)st;
	return rados_map(t)->n;
}

unsigned long rados_store_splits(store *st)
{
	return atomic_load(&RS(st)->splits);
}

const uint8_t *rados_store_id(const store *st)
{
	return RSC(st)->id;
}

void rados_store_counters_get(store *st, store_counters *out)
{
	rstore *rs = RS(st);

	out->write_calls = atomic_load(&rs->write_calls);
	out->write_txns = atomic_load(&rs->write_txns);
	out->read_txns = atomic_load(&rs->read_txns);
}

int rados_store_get_info(store *st, store_info *out)
{
	(void)st;
	memset(out, 0, sizeof(*out)); /* no map, page or reader table on RADOS */
	return 0;
}

/* --------------------------------------------------------------- tables */

size_t rados_record_tablets_at(mrtx_bytes rec)
{
	const uint8_t *p = rec.data;
	size_t at = 5;

	if (rec.size < 5)
		return 0;
	for (size_t i = 0, nf = p[4]; i < nf; i++) {
		if (at >= rec.size || p[at] == 0 || rec.size - at - 1 < p[at])
			return 0;
		at += 1 + p[at];
	}
	return at + 4 <= rec.size ? at : 0;
}

int rados_map_parse(rstore *rs, const char *name, mrtx_bytes rec, rtmap **out)
{
	size_t at = rados_record_tablets_at(rec);
	const uint8_t *p, *end = (const uint8_t *)rec.data + rec.size;
	uint8_t *mem;
	uint32_t id, nt;
	rtmap *m;

	if (at == 0)
		goto bad;
	p = (const uint8_t *)rec.data;
	id = rbe32_get(p);
	p += at;
	nt = rbe32_get(p);
	p += 4;
	if (nt == 0 || nt > (size_t)(end - p) / 6 + 1)
		goto bad;
	if (!(m = mrtx__calloc(1, sizeof(*m) + nt * sizeof(m->t[0]) + (size_t)(end - p))))
		return mrtx__seterr(MRTX_ENOMEM, "out of memory reading table '%s'", name);
	mem = (uint8_t *)&m->t[nt];
	m->n = nt;
	for (uint32_t i = 0; i < nt; i++) {
		rtablet *tb = &m->t[i];
		size_t len;

		if (end - p < 6)
			goto bad_free;
		tb->seq = rbe32_get(p);
		len = (size_t)p[4] << 8 | p[5];
		p += 6;
		if ((size_t)(end - p) < len || len > MRTX_MAX_ROW || (i == 0) != (len == 0))
			goto bad_free;
		tb->start = MRTX_BYTES(len ? memcpy(mem, p, len) : mem, len);
		mem += len;
		p += len;
		if (i && cmp_bytes(tb->start.data, len, m->t[i - 1].start.data,
		                   m->t[i - 1].start.size) <= 0)
			goto bad_free;
		for (uint32_t j = 0; j < i; j++)
			if (m->t[j].seq == tb->seq)
				goto bad_free;
		rados_tablet_oid(rs, id, tb->seq, tb->oid);
	}
	if (p != end)
		goto bad_free;
	*out = m;
	return 0;
bad_free:
	mrtx__free(m);
bad:
	return mrtx__seterr(MRTX_ECORRUPT, "%s: the record of table '%s' is malformed", rs->addr,
	                    name);
}

/*
 * The table record's bytes (rados_int.h) into a new store_table; the
 * strings live in the same allocation as the table, the tablets in a map.
 */
static int table_parse(rstore *rs, const char *name, mrtx_bytes v, store_table **out)
{
	const uint8_t *p = v.data;
	store_table *t = NULL;
	rtable *rt = NULL;
	size_t nf, need;
	uint8_t *mem;
	char **fams;
	rtmap *m;
	int rc;

	if ((rc = rados_map_parse(rs, name, v, &m)))
		return rc;
	nf = p[4];
	/* (room for every family a table may grow to: store_add_family) */
	need = sizeof(*t) + strlen(name) + 1 + MRTX_MAX_FAMILIES * sizeof(char *) + v.size + 8;
	if (!(t = mrtx__calloc(1, need)) || !(rt = mrtx__calloc(1, sizeof(*rt)))) {
		mrtx__free(t);
		mrtx__free(m);
		return mrtx__seterr(MRTX_ENOMEM, "out of memory reading table '%s'", name);
	}
	t->be = rt;
	atomic_init(&rt->map, m);
	fams = (char **)(t + 1);
	mem = (uint8_t *)(fams + MRTX_MAX_FAMILIES);
	t->name = memcpy(mem, name, strlen(name) + 1);
	mem += strlen(name) + 1;
	t->nfamilies = nf;
	t->families = (const char *const *)fams;
	t->id = rt->id = rbe32_get(p);
	t->ident = rt->id;
	p += 5;
	for (size_t i = 0; i < nf; i++) {
		size_t len = *p++; /* checked by rados_map_parse */

		fams[i] = memcpy(mem, p, len);
		fams[i][len] = 0;
		mem += len + 1;
		p += len;
	}
	*out = t;
	return 0;
}

int rados_table_record(rstore *rs, const store_table *t, mrtx_arena *a, mrtx_bytes *v)
{
	char key[MRTX_MAX_NAME + 3];
	const char *keys[1] = { key };
	int exists;

	snprintf(key, sizeof(key), "t/%s", t->name);
	return meta_read(rs, keys, 1, a, v, &exists);
}

/*
 * rs->mu, which rados_store_table_find holds across the store reads of a
 * table's first load.  In a simulation those reads yield, and the handle's
 * tail thread (a task of the same client) may then want the mutex to
 * reload a map: it must yield until the load is done, not block the only
 * thread allowed to run.
 */
static void rs_lock(rstore *rs)
{
	if (MRTX_UNLIKELY(mrtx__sim_on())) {
		while (pthread_mutex_trylock(&rs->mu) == EBUSY)
			mrtx__sleep_us(100);
		return;
	}
	pthread_mutex_lock(&rs->mu);
}

void rados_tables_lock(rstore *rs)
{
	rs_lock(rs);
}

void rados_tables_unlock(rstore *rs)
{
	pthread_mutex_unlock(&rs->mu);
}

/* The cached object of name, if another table than id, is GONE (the name
 * was dropped or truncated, and made again, through another handle). */
static void table_forget_other(rstore *rs, const char *name, uint32_t id)
{
	rs_lock(rs);
	for (size_t i = 0; i < rs->ntables; i++) {
		store_table *t = rs->tables[i];

		if (strcmp(t->name, name) == 0 && ((rtable *)t->be)->id != id)
			atomic_store_explicit(&t->state, STORE_T_GONE, memory_order_release);
	}
	pthread_mutex_unlock(&rs->mu);
}

int rados_table_reload(rstore *rs, const store_table *t)
{
	rtable *rt = t->be;
	mrtx_bytes v;
	mrtx_arena a;
	rtmap *m;
	int rc;

	arena_init(&a);
	rc = rados_table_record(rs, t, &a, &v);
	if (rc == 0 && (!v.data || v.size < 4 || rbe32_get(v.data) != rt->id))
		rc = rados_table_closed(rs, t, v); /* dropped, or truncated */
	if (rc == 0 && (rc = rados_map_parse(rs, t->name, v, &m)) == 0) {
		rtmap *cur;

		/* splits only add tablets: the map with more is the newer (a
		 * slower reload of an older record must not undo a newer one) */
		rs_lock(rs);
		cur = atomic_load(&rt->map);
		if (m->n > cur->n) {
			m->older = cur;
			atomic_store_explicit(&rt->map, m, memory_order_release);
		} else {
			mrtx__free(m);
		}
		pthread_mutex_unlock(&rs->mu);
	}
	arena_free(&a);
	return rc;
}

int rados_meta_read(rstore *rs, const char *const *keys, size_t n, mrtx_arena *a,
                    mrtx_bytes *vals)
{
	int exists;

	return meta_read(rs, keys, n, a, vals, &exists);
}

int rados_meta_cas(rstore *rs, const char *key, mrtx_bytes expect, mrtx_bytes value,
                   int *applied)
{
	rguard g = guard_eq(key, expect);
	rkv set = { MRTX_CSTR(key), value };

	return meta_write(rs, &g, 1, &set, 1, applied);
}

/* The live table object of that name (a dropped or truncated one stays
 * cached, GONE, until close: pointers to it never dangle). */
static store_table *table_cached(rstore *rs, const char *name)
{
	for (size_t i = 0; i < rs->ntables; i++)
		if (strcmp(rs->tables[i]->name, name) == 0 &&
		    atomic_load_explicit(&rs->tables[i]->state, memory_order_acquire) !=
		    STORE_T_GONE)
			return rs->tables[i];
	return NULL;
}

/* Add t to the cache (rs->mu held); tables are never removed while open. */
static int table_publish(rstore *rs, store_table *t)
{
	if (rs->ntables == rs->ctables) {
		size_t nc = rs->ctables ? rs->ctables * 2 : 16;
		store_table **nt = mrtx__reallocarray(rs->tables, nc, sizeof(*nt));

		if (!nt) {
			table_free(t);
			return mrtx__seterr(MRTX_ENOMEM, "out of memory adding a table");
		}
		rs->tables = nt;
		rs->ctables = nc;
	}
	rs->tables[rs->ntables++] = t;
	return 0;
}

/* Read table name's record into the cache (rs->mu held). */
static int table_load(rstore *rs, const char *name, store_table **out)
{
	char key[MRTX_MAX_NAME + 3], pkey[MRTX_MAX_NAME + 3];
	const char *keys[2] = { key, pkey };
	mrtx_bytes v[2];
	mrtx_arena a;
	int rc, exists;

	snprintf(key, sizeof(key), "t/%s", name);
	snprintf(pkey, sizeof(pkey), "p/%s", name);
	arena_init(&a);
	rc = meta_read(rs, keys, 2, &a, v, &exists);
	if (rc == 0 && !v[0].data)
		rc = mrtx__seterr(MRTX_ENOTABLE, "no table '%.64s' in %s", name, rs->addr);
	if (rc == 0 && (rc = table_parse(rs, name, v[0], out)) == 0) {
		if (v[1].data) {
			store_polset *pol;

			if ((rc = store_policies_parse(v[1], &pol)) == MRTX_ENOMEM)
				rc = mrtx__seterr(MRTX_ENOMEM, "out of memory loading table '%s'", name);
			else if (rc)
				rc = mrtx__seterr(MRTX_ECORRUPT, "%s: the version policies of table '%s' "
				                  "are malformed", rs->addr, name);
			if (rc) {
				table_free(*out);
				*out = NULL;
			} else {
				store_policies_publish(*out, pol);
			}
		}
		if (rc == 0)
			rc = table_publish(rs, *out);
	}
	arena_free(&a);
	return rc;
}

int rados_store_table_find(store *st, const char *name, const store_table **out)
{
	rstore *rs = RS(st);
	store_table *t;
	int rc = 0;

	if (!name)
		return mrtx__seterr(MRTX_EINVAL, "table name is NULL");
	rs_lock(rs);
	if (!(t = table_cached(rs, name)))
		rc = strlen(name) > MRTX_MAX_NAME ?
		     mrtx__seterr(MRTX_ENOTABLE, "no table '%.64s...' in %s", name, rs->addr) :
		     table_load(rs, name, &t);
	pthread_mutex_unlock(&rs->mu);
	if (rc == 0)
		*out = t;
	return rc;
}

static int list_names(const char *key, mrtx_bytes value, void *payload);

struct name_list {
	char (*names)[MRTX_MAX_NAME + 1];
	size_t n, cap;
	rstore *rs;
};

int rados_store_tables_list(store *st, const store_table ***out, size_t *count)
{
	struct name_list nl = { NULL, 0, 0, RS(st) };
	const store_table **arr = NULL;
	mrtx_arena a;
	size_t n = 0;
	int rc;

	arena_init(&a);
	rc = rados_store_meta_list(st, "t/", &a, list_names, &nl, NULL);
	if (rc == 0 && !(arr = mrtx__calloc(nl.n ? nl.n : 1, sizeof(*arr))))
		rc = mrtx__seterr(MRTX_ENOMEM, "out of memory listing tables");
	for (size_t i = 0; rc == 0 && i < nl.n; i++)
		if ((rc = rados_store_table_find(st, nl.names[i], &arr[n])) == 0)
			n++;
		else if (rc == MRTX_ENOTABLE) /* (dropped since the listing) */
			rc = 0;
	arena_free(&a);
	mrtx__free(nl.names);
	if (rc) {
		mrtx__free(arr);
		return rc;
	}
	mrtx__clearerr();
	*out = arr;
	*count = n;
	return 0;
}

static int list_names(const char *key, mrtx_bytes value, void *payload)
{
	struct name_list *nl = payload;
	size_t len;

	if (nl->n == nl->cap) {
		size_t nc = nl->cap ? nl->cap * 2 : 16;
		void *p = mrtx__reallocarray(nl->names, nc, sizeof(*nl->names));

		if (!p)
			return mrtx__seterr(MRTX_ENOMEM, "out of memory listing tables");
		nl->names = p;
		nl->cap = nc;
	}
	len = strlen(key + 2);
	if (len > MRTX_MAX_NAME)
		return mrtx__seterr(MRTX_ECORRUPT, "store metadata: a name of %zu bytes (at most "
		                    "%u)", len, (unsigned)MRTX_MAX_NAME);
	memcpy(nl->names[nl->n++], key + 2, len + 1);
	if (value.size >= 4)
		table_forget_other(nl->rs, key + 2, rbe32_get(value.data));
	return 0;
}

/* The table record (rados_int.h) less its id, into b (id bytes zeroed);
 * *fam_end: where the family list ends. */
static int record_build(mrtx_buf *b, const char *const *families, size_t nfamilies,
                        const mrtx_bytes *splits, size_t nsplits, size_t *fam_end)
{
	uint8_t hdr[5] = { 0, 0, 0, 0, (uint8_t)nfamilies }, n4[4], t6[6];
	int rc = buf_put(b, hdr, 5);

	for (size_t i = 0; rc == 0 && i < nfamilies; i++) {
		uint8_t fl = (uint8_t)strlen(families[i]);

		if ((rc = buf_put(b, &fl, 1)) == 0)
			rc = buf_put(b, families[i], fl);
	}
	*fam_end = b->size;
	rbe32_put(n4, (uint32_t)(nsplits + 1));
	if (rc == 0)
		rc = buf_put(b, n4, 4);
	/* tablet 1 starts at the empty row; tablet i + 2 at split row i */
	for (size_t i = 0; rc == 0 && i <= nsplits; i++) {
		mrtx_bytes start = i ? splits[i - 1] : MRTX_BYTES("", 0);

		rbe32_put(t6, (uint32_t)(i + 1));
		t6[4] = (uint8_t)(start.size >> 8);
		t6[5] = (uint8_t)start.size;
		if ((rc = buf_put(b, t6, 6)) == 0 && start.size)
			rc = buf_put(b, start.data, start.size);
	}
	return rc ? mrtx__seterr(MRTX_ENOMEM, "out of memory building a table record") : 0;
}

static int count_one(const char *key, mrtx_bytes value, void *payload)
{
	(void)key;
	(void)value;
	++*(size_t *)payload;
	return 0;
}

int rados_store_create_table(store *st, const char *name, const char *const *families,
                             size_t nfamilies, const store_policy *pol, const mrtx_bytes *splits,
                             size_t nsplits)
{
	static const char *const next_key[] = { "next", "gen" };
	uint8_t pbuf[MRTX_MAX_FAMILIES * STORE_POL_SIZE];
	size_t plen = pol ? nfamilies * STORE_POL_SIZE : 0;
	rstore *rs = RS(st);
	mrtx_buf rec = MRTX_BUF_INIT;
	size_t fam_end;
	char key[MRTX_MAX_NAME + 3], pkey[MRTX_MAX_NAME + 3], nkey[MRTX_MAX_NAME + 3];
	mrtx_arena a;
	int rc;

	if ((rc = store_check_table_spec(name, families, nfamilies)))
		return rc;
	if ((rc = record_build(&rec, families, nfamilies, splits, nsplits, &fam_end))) {
		buf_free(&rec);
		return rc;
	}
	for (size_t i = 0; pol && i < nfamilies; i++)
		store_policy_put(pbuf + i * STORE_POL_SIZE, &pol[i]);
	snprintf(key, sizeof(key), "t/%s", name);
	snprintf(pkey, sizeof(pkey), "p/%s", name);
	snprintf(nkey, sizeof(nkey), RADOS_DROPPED_PREFIX "%s", name);
	arena_init(&a);
	for (int attempt = 0; attempt < 20; attempt++) {
		const char *keys[5] = { next_key[0], next_key[1], key, pkey, nkey };
		mrtx_bytes v[5];
		uint32_t id;
		uint8_t nid[4];
		int exists, applied;

		if ((rc = meta_read(rs, keys, 5, &a, v, &exists)))
			break;
		if (v[2].data) {
			if (v[2].size >= 4)
				table_forget_other(rs, name, rbe32_get(v[2].data));
			/* exists: the same families and policies make create idempotent */
			rc = v[2].size >= fam_end &&
			     memcmp((const uint8_t *)v[2].data + 4, rec.data + 4, fam_end - 4) == 0 ?
			     (v[3].size == plen && (!plen || memcmp(v[3].data, pbuf, plen) == 0) ? 0 :
			      mrtx__seterr(MRTX_EEXIST, "table '%s' exists with other version "
			                   "policies", name)) :
			     mrtx__seterr(MRTX_EEXIST, "table '%s' exists with different "
			                  "families", name);
			break;
		}
		if (v[0].size != 4) {
			rc = mrtx__seterr(MRTX_ECORRUPT, "%s: the next-table record is missing or "
			                  "malformed", rs->addr);
			break;
		}
		id = rbe32_get(v[0].data);
		/* ids are never reused (a stale handle of a dropped or truncated
		 * table must not reach a new one's tablets), so past
		 * MRTX_MAX_TABLES ids the live tables are counted */
		if (id == UINT32_MAX) {
			rc = mrtx__seterr(MRTX_ETOOBIG, "store %s has handed out every table id "
			                  "(tables created, dropped and truncated over its life)",
			                  rs->addr);
			break;
		}
		if (id > MRTX_MAX_TABLES) {
			size_t live = 0;

			if ((rc = rados_store_meta_list(st, "t/", &a, count_one, &live, NULL)))
				break;
			if (live >= MRTX_MAX_TABLES) {
				rc = mrtx__seterr(MRTX_ETOOBIG, "store %s has the maximum of %u tables",
				                  rs->addr, MRTX_MAX_TABLES);
				break;
			}
		}
		rbe32_put(rec.data, id);
		rbe32_put(nid, id + 1);
		if (v[4].size == 8) {
			/* The name held a table, dropped at the timestamp the record
			 * n/<name> keeps: the new table's tablets are made first,
			 * each with a collection mark there, so that a read at a
			 * snapshot from before the drop gets MRTX_ESNAPSHOT, never
			 * the new table's emptiness in place of the old rows (as a
			 * truncate's, rados_ddl.c).  Its id is spent first, on its
			 * own, so that no other table can take it; a creator that
			 * then loses the race for the name leaves its tablets to
			 * nobody (empty objects). */
			uint64_t gen = v[1].size == 8 ? rbe64_get(v[1].data) : 0;
			rtmap *m = NULL;

			if ((rc = rados_meta_cas(rs, "next", v[0], MRTX_BYTES(nid, 4), &applied)))
				break;
			if (!applied)
				continue;
			rc = rados_map_parse(rs, name, MRTX_BYTES(rec.data, rec.size), &m);
			if (rc == 0)
				rc = rados_tablets_make(rs, m, id, gen, rbe64_get(v[4].data));
			mrtx__free(m);
			if (rc)
				break;
			{
				rguard g[2] = { guard_eq(key, MRTX_BYTES("", 0)), guard_eq(nkey, v[4]) };
				rkv sets[2] = { { MRTX_CSTR(key), MRTX_BYTES(rec.data, rec.size) },
				                { MRTX_CSTR(pkey), MRTX_BYTES(pbuf, plen) } };
				mrtx_bytes rm = MRTX_CSTR(nkey);

				if ((rc = rados_meta_write(rs, g, 2, sets, plen ? 2 : 1, &rm, 1,
				                           &applied)))
					break;
			}
		} else {
			/* (a name never dropped: tablets are made by their first
			 * writes; the policies, when any, in the same write as the
			 * record) */
			rguard g[3] = { guard_eq("next", v[0]), guard_eq(key, MRTX_BYTES("", 0)),
			                guard_eq(nkey, MRTX_BYTES("", 0)) };
			rkv sets[3] = { { MRTX_CSTR("next"), MRTX_BYTES(nid, 4) },
			                { MRTX_CSTR(key), MRTX_BYTES(rec.data, rec.size) },
			                { MRTX_CSTR(pkey), MRTX_BYTES(pbuf, plen) } };

			if ((rc = meta_write(rs, g, 3, sets, plen ? 3 : 2, &applied)))
				break;
		}
		if (applied) {
			table_forget_other(rs, name, id);
			break;
		}
		/* another creator won a race: read again */
	}
	arena_free(&a);
	buf_free(&rec);
	if (rc == 0) {
		const store_table *t;

		/* (the table as it is now, cached; dropped already by another
		 * handle: the create took effect, and the drop after it) */
		if ((rc = rados_store_table_find(st, name, &t)) == MRTX_ENOTABLE) {
			mrtx__clearerr();
			rc = 0;
		}
	}
	return rc;
}

/* ------------------------------------------------------------ lookups */

const rtablet *rados_tablet_in(const rtmap *map, mrtx_bytes row)
{
	size_t lo = 0, hi = map->n; /* the answer is in [lo, hi) */

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		const rtablet *m = &map->t[mid];

		if (cmp_bytes(m->start.data, m->start.size, row.data, row.size) <= 0)
			lo = mid;
		else
			hi = mid;
	}
	return &map->t[lo];
}

const rtablet *rados_tablet_of(const store_table *t, mrtx_bytes row)
{
	return rados_tablet_in(rados_map(t), row);
}

/* ----------------------------------------------------- metadata records */

int rados_store_meta_get(store *st, const char *key, mrtx_arena *a, mrtx_bytes *out)
{
	rstore *rs = RS(st);
	const char *keys[1] = { key };
	int rc, exists;

	if ((rc = meta_read(rs, keys, 1, a, out, &exists)))
		return rc;
	if (!out->data)
		return MRTX_NOTFOUND;
	return 0;
}

/*
 * Bring every tablet of every table to generation gen (never down: the
 * guard keeps a newer value), so that a row write of a transaction that
 * took its declarations before them fails (STORE_GEN_CHANGED).  A tablet
 * a split retired is not written (its guard on the state key fails): the
 * split is settled and the spread runs again on the new tablets, which
 * carry the generation their parent had when it was frozen.
 */
static int gen_spread(rstore *rs, uint64_t gen)
{
	const store_table **tables = NULL;
	size_t nt = 0;
	int rc = 0;

	for (int attempt = 0; attempt < RMOVED_TRIES; attempt++) {
		size_t nw = 0, cap = 0;
		rwrite *w = NULL;
		rtmap **maps = NULL;
		uint8_t g8[8];
		rguard *guards = NULL;
		rkv set;
		int moved = 0;

		if ((rc = rados_store_tables_list((store *)rs, &tables, &nt)))
			return rc;
		rgen_put(g8, gen);
		set = (rkv){ MRTX_BYTES(rados_gen_key, 2), MRTX_BYTES(g8, 8) };
		maps = mrtx__calloc(nt ? nt : 1, sizeof(*maps));
		for (size_t i = 0; maps && i < nt; i++)
			cap += (maps[i] = rados_map(tables[i]))->n;
		w = mrtx__calloc(cap ? cap : 1, sizeof(*w));
		guards = mrtx__calloc(2 * (cap ? cap : 1), sizeof(*guards));
		if (!w || !guards || !maps) {
			rc = mrtx__seterr(MRTX_ENOMEM, "out of memory spreading the generation");
			goto next;
		}
		for (size_t i = 0; i < nt; i++) {
			for (size_t j = 0; j < maps[i]->n; j++, nw++) {
				rguard *g = &guards[2 * nw];

				/* open (no state), and stored < gen (omap_cmp: stored OP
				 * given; a missing key is the empty value, below any) */
				g[0] = (rguard){ MRTX_BYTES(rados_state_key, 2), MRTX_BYTES("", 0),
				                 LIBRADOS_CMPXATTR_OP_EQ, 0 };
				g[1] = (rguard){ MRTX_BYTES(rados_gen_key, 2), MRTX_BYTES(g8, 8),
				                 LIBRADOS_CMPXATTR_OP_LT, 0 };
				w[nw].oid = maps[i]->t[j].oid;
				w[nw].create = 1;
				w[nw].guards = g;
				w[nw].nguards = 2;
				w[nw].sets = &set;
				w[nw].nsets = 1;
			}
		}
		atomic_fetch_add_explicit(&rs->write_txns, nw, memory_order_relaxed);
		rc = rconn_write(rs->conn, w, nw);
		if (rc == RCONN_TIMEDOUT)
			rc = MRTX_ESTORE;
		if (rc == MRTX_CONFLICT)
			rc = 0; /* a tablet at gen or above already, or moved (below) */
		for (size_t i = 0, k = 0; rc == 0 && i < nt; i++)
			for (size_t j = 0; rc == 0 && j < maps[i]->n; j++, k++)
				if (w[k].result == -ECANCELED && guards[2 * k].result == -ECANCELED) {
					int dropped = 0;

					/* (closed by a drop or truncate: it takes no write
					 * any more, so it needs no generation) */
					if ((rc = rados_tablet_dropped(rs, maps[i]->t[j].oid, &dropped)) ||
					    dropped)
						continue;
					moved = 1;
					rc = rados_table_settle(rs, tables[i], maps[i]->t[j].oid);
					/* dropped meanwhile: it takes no write any more;
					 * truncated: its new tablets, with the next list */
					if (rc == MRTX_ENOTABLE || rc == MRTX_CONFLICT)
						rc = 0;
				}
	next:
		mrtx__free(w);
		mrtx__free(guards);
		mrtx__free(maps);
		mrtx__free(tables);
		tables = NULL;
		if (rc || !moved)
			return rc;
	}
	return mrtx__seterr(MRTX_ESTORE, "%s: tablets keep being split while an index "
	                    "declaration spreads", rs->addr);
}

/* The generation record v as a number that may still be raised (row writes
 * guard with gen + 1): 0, MRTX_ECORRUPT or MRTX_ESTORE. */
static int gen_take(rstore *rs, mrtx_bytes v, uint64_t *gen)
{
	if (v.size != 8)
		return mrtx__seterr(MRTX_ECORRUPT, "%s: the generation record is malformed",
		                    rs->addr);
	*gen = rbe64_get(v.data);
	if (*gen + 1 >= RGEN_MAX)
		return mrtx__seterr(MRTX_ESTORE, "%s: no more metadata generations (%" PRIu64
		                    " made)", rs->addr, *gen);
	return 0;
}

int rados_store_meta_put_new(store *st, const char *key, mrtx_bytes value,
                             const store_table *const *on, size_t non, const uint64_t *expect)
{
	static const char *const gk = "gen";
	char tk[STORE_META_ON_MAX][MRTX_MAX_NAME + 3], dk[STORE_META_ON_MAX][MRTX_MAX_NAME + 3];
	const char *keys[2 + 2 * STORE_META_ON_MAX] = { gk, key };
	rstore *rs = RS(st);
	mrtx_arena a;
	int rc;

	for (size_t i = 0; i < non; i++) {
		rados_table_open_keys(on[i], tk[i], dk[i]);
		keys[2 + 2 * i] = tk[i];
		keys[3 + 2 * i] = dk[i];
	}
	arena_init(&a);
	for (int attempt = 0; attempt < 20; attempt++) {
		mrtx_bytes v[2 + 2 * STORE_META_ON_MAX];
		uint8_t g8[8];
		uint64_t gen;
		int exists, applied;
		rguard g[2 + 2 * STORE_META_ON_MAX];

		if ((rc = meta_read(rs, keys, 2 + 2 * non, &a, v, &exists)))
			break;
		if ((rc = gen_take(rs, v[0], &gen)))
			break;
		if (v[1].data) {
			rc = v[1].size == value.size && memcmp(v[1].data, value.data, value.size) == 0 ?
			     gen_spread(rs, gen) :
			     mrtx__seterr(MRTX_EEXIST, "store %s: record '%s' exists with other "
			                  "contents", rs->addr, key);
			break;
		}
		for (size_t i = 0; i < non && rc == 0; i++)
			rc = rados_table_open_guard(rs, on[i], tk[i], dk[i], v[2 + 2 * i], v[3 + 2 * i],
			                            g + 2 + 2 * i);
		if (rc)
			break;
		/* (the write is guarded by this generation: it lands only while
		 * the metadata is still as the caller's listing saw it) */
		if (expect && gen != *expect) {
			rc = mrtx__seterr(MRTX_CONFLICT, "%s: the metadata changed since it was read",
			                  rs->addr);
			break;
		}
		rbe64_put(g8, gen + 1);
		g[0] = guard_eq(gk, v[0]);
		g[1] = guard_eq(key, MRTX_BYTES("", 0));
		{
			rkv sets[2] = { { MRTX_CSTR(gk), MRTX_BYTES(g8, 8) }, { MRTX_CSTR(key), value } };

			if ((rc = meta_write(rs, g, 2 + 2 * non, sets, 2, &applied)))
				break;
		}
		if (applied) {
			rc = gen_spread(rs, gen + 1);
			break;
		}
	}
	arena_free(&a);
	return rc;
}

int rados_store_meta_change(store *st, const char *const *del, size_t ndel,
                            const char *put_key, mrtx_bytes put_value)
{
	static const char *const gk = "gen";
	rstore *rs = RS(st);
	mrtx_bytes *rms = mrtx__calloc(ndel ? ndel : 1, sizeof(*rms));
	size_t nrm = 0;
	mrtx_arena a;
	int rc = 0;

	if (!rms)
		return mrtx__seterr(MRTX_ENOMEM, "out of memory changing metadata records");
	/* (a key both deleted and written ends written, as on LMDB: one
	 * compound op removes after it sets, so it is not removed) */
	for (size_t i = 0; i < ndel; i++)
		if (!put_key || strcmp(del[i], put_key) != 0)
			rms[nrm++] = MRTX_CSTR(del[i]);
	arena_init(&a);
	for (int attempt = 0; attempt < 20; attempt++) {
		const char *keys[1] = { gk };
		mrtx_bytes v[1];
		uint8_t g8[8];
		uint64_t gen;
		int exists, applied;
		rguard g;
		rkv sets[2];
		rwrite w;

		if ((rc = meta_read(rs, keys, 1, &a, v, &exists)))
			break;
		if ((rc = gen_take(rs, v[0], &gen)))
			break;
		rbe64_put(g8, gen + 1);
		g = guard_eq(gk, v[0]);
		sets[0] = (rkv){ MRTX_CSTR(gk), MRTX_BYTES(g8, 8) };
		sets[1] = (rkv){ MRTX_CSTR(put_key ? put_key : gk), put_value };
		memset(&w, 0, sizeof(w));
		w.oid = rs->meta_oid;
		w.create = 1;
		w.guards = &g;
		w.nguards = 1;
		w.sets = sets;
		w.nsets = put_key ? 2 : 1;
		w.rms = rms;
		w.nrms = nrm;
		atomic_fetch_add_explicit(&rs->write_txns, 1, memory_order_relaxed);
		if ((rc = rconn_write(rs->conn, &w, 1))) {
			if (rc == RCONN_TIMEDOUT)
				rc = MRTX_ESTORE;
			break;
		}
		applied = w.result == 0;
		if (applied) {
			rc = gen_spread(rs, gen + 1);
			break;
		}
	}
	arena_free(&a);
	mrtx__free(rms);
	return rc;
}

int rados_store_meta_list(store *st, const char *prefix, mrtx_arena *a,
                          int (*fn)(const char *key, mrtx_bytes value, void *payload),
                          void *payload, uint64_t *gen)
{
	rstore *rs = RS(st);
	mrtx_bytes after = MRTX_BYTES(NULL, 0);
	static const uint8_t gk[] = "gen";
	int rc = 0, more = 1, first = 1;

	while (more && rc == 0) {
		rget g;
		rread r;
		mrtx_bytes keys[1] = { MRTX_BYTES(gk, 3) };

		memset(&g, 0, sizeof(g));
		memset(&r, 0, sizeof(r));
		g.start_after = after;
		g.prefix = MRTX_CSTR(prefix);
		g.max = RLIST_MAX;
		r.oid = rs->meta_oid;
		r.gets = &g;
		r.ngets = 1;
		if (first && gen) {
			r.keys = keys;
			r.nkeys = 1;
		}
		atomic_fetch_add_explicit(&rs->read_txns, 1, memory_order_relaxed);
		if ((rc = rconn_read(rs->conn, &r, 1, a)))
			return rc == RCONN_TIMEDOUT ? MRTX_ESTORE : rc;
		if (first && gen) {
			*gen = 0;
			if (r.nkvs == 1 && r.kvs[0].value.size == 8)
				*gen = rbe64_get(r.kvs[0].value.data);
		}
		first = 0;
		for (size_t i = 0; i < g.nkvs && rc == 0; i++) {
			char k[MRTX_MAX_NAME + 4];

			if (g.kvs[i].key.size >= sizeof(k))
				continue;
			memcpy(k, g.kvs[i].key.data, g.kvs[i].key.size);
			k[g.kvs[i].key.size] = 0;
			rc = fn(k, g.kvs[i].value, payload);
		}
		more = g.more && g.nkvs;
		if (g.nkvs)
			after = g.kvs[g.nkvs - 1].key;
	}
	return rc;
}

/* ------------------------------------------------------ version policies */

/* t's policies as stored now (p/<name>), published to t when they differ
 * from what it has. */
int rados_table_policies_reload(rstore *rs, const store_table *t)
{
	char pkey[MRTX_MAX_NAME + 3];
	const char *keys[1] = { pkey };
	store_polset *pol = NULL, *cur;
	mrtx_bytes v;
	mrtx_arena a;
	int rc, exists;

	snprintf(pkey, sizeof(pkey), "p/%s", t->name);
	arena_init(&a);
	if ((rc = meta_read(rs, keys, 1, &a, &v, &exists)) == 0 && v.data &&
	    (rc = store_policies_parse(v, &pol)))
		rc = rc == MRTX_ENOMEM ? rc :
		     mrtx__seterr(MRTX_ECORRUPT, "%s: the version policies of table '%s' are "
		                  "malformed", rs->addr, t->name);
	arena_free(&a);
	if (rc || !pol)
		return rc;
	rs_lock(rs);
	cur = atomic_load(&((store_table *)(uintptr_t)t)->pols);
	if (cur && cur->n == pol->n && memcmp(cur->p, pol->p, pol->n * sizeof(pol->p[0])) == 0)
		mrtx__free(pol);
	else
		store_policies_publish((store_table *)(uintptr_t)t, pol);
	pthread_mutex_unlock(&rs->mu);
	return 0;
}

/*
 * mrtx_alter_family on RADOS: one guarded write of NAME.meta replaces the
 * table's record of policies and raises the metadata generation, which is
 * then spread to every tablet (gen_spread).  A writer holding the old
 * generation fails its next row write (STORE_GEN_CHANGED: the transaction
 * conflicts), and the backend reloads that table's policies then
 * (rados_write.c), so its retry writes under the new ones.
 */
int rados_store_alter_family(store *st, const store_table *t, unsigned fid,
                             const store_policy *pol)
{
	rstore *rs = RS(st);
	char tk[MRTX_MAX_NAME + 3], pk[MRTX_MAX_NAME + 3], fk[MRTX_MAX_NAME + 3];
	mrtx_arena a;
	int rc = 0;

	snprintf(tk, sizeof(tk), "t/%s", t->name);
	snprintf(pk, sizeof(pk), "p/%s", t->name);
	snprintf(fk, sizeof(fk), "f/%s", t->name);
	arena_init(&a);
	for (int attempt = 0; attempt < 20; attempt++) {
		const char *keys[4] = { tk, pk, fk, "gen" };
		uint8_t pb[MRTX_MAX_FAMILIES * STORE_POL_SIZE], g8[8];
		mrtx_bytes v[4];
		size_t have = 0, np;
		uint64_t gen;
		int exists, applied;

		if ((rc = meta_read(rs, keys, 4, &a, v, &exists)))
			break;
		if (!v[0].data || v[0].size < 5 || rbe32_get(v[0].data) != ((rtable *)t->be)->id) {
			rc = rados_table_closed(rs, t, v[0]);
			rc = rc == MRTX_CONFLICT ?
			     mrtx__seterr(MRTX_ENOTABLE, "table '%s' was truncated since it was "
			                  "looked up: look it up again", t->name) : rc;
			break;
		}
		if (v[2].data) {
			rc = mrtx__seterr(MRTX_ELOCKED, "table '%s' is being dropped or truncated",
			                  t->name);
			break;
		}
		if (fid >= ((const uint8_t *)v[0].data)[4]) {
			rc = mrtx__seterr(MRTX_ENOFAMILY, "table '%s' has no family number %u",
			                  t->name, fid + 1);
			break;
		}
		if ((rc = gen_take(rs, v[3], &gen)))
			break;
		if (v[1].data) {
			if (v[1].size % STORE_POL_SIZE || v[1].size > sizeof(pb)) {
				rc = mrtx__seterr(MRTX_ECORRUPT, "%s: the version policies of table "
				                  "'%s' are malformed", rs->addr, t->name);
				break;
			}
			memcpy(pb, v[1].data, v[1].size);
			have = v[1].size / STORE_POL_SIZE;
		}
		/* (families past the record's end keep one version) */
		np = fid + 1 > have ? fid + 1 : have;
		for (size_t i = have; i < np; i++) {
			store_policy one = { 1, 0, 0 };

			store_policy_put(pb + i * STORE_POL_SIZE, &one);
		}
		store_policy_put(pb + fid * STORE_POL_SIZE, pol);
		rbe64_put(g8, gen + 1);
		{
			rguard g[4] = { guard_eq(tk, v[0]), guard_eq(pk, v[1].data ? v[1] :
			                MRTX_BYTES("", 0)), guard_eq(fk, MRTX_BYTES("", 0)),
			                guard_eq("gen", v[3]) };
			rkv sets[2] = { { MRTX_CSTR(pk), MRTX_BYTES(pb, np * STORE_POL_SIZE) },
			                { MRTX_CSTR("gen"), MRTX_BYTES(g8, 8) } };

			if ((rc = meta_write(rs, g, 4, sets, 2, &applied)))
				break;
		}
		if (applied) {
			if ((rc = rados_table_policies_reload(rs, t)) == 0)
				rc = gen_spread(rs, gen + 1);
			break;
		}
	}
	arena_free(&a);
	return rc;
}
