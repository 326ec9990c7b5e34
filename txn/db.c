/*
 * db.c - opening stores and managing tables through the public API.
 */
#include "txn_int.h"
#include "admin_test.h"
#include "heartbeat.h"
#include "tail.h"
#include "txn_test.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* MRTX_TWO_PHASE=1 (or yes/true/on) in the environment: as the two_phase
 * knob, for crash tests of programs whose code is fixed (mrtx.h). */
static int env_two_phase(int *on)
{
	static const char *const yes[] = { "1", "yes", "true", "on" };
	static const char *const no[] = { "", "0", "no", "false", "off" };
	const char *v = getenv("MRTX_TWO_PHASE");

	*on = 0;
	if (!v)
		return 0;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!strcasecmp(v, yes[i]))
			return *on = 1, 0;
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (!strcasecmp(v, no[i]))
			return 0;
	return mrtx__seterr(MRTX_EINVAL, "MRTX_TWO_PHASE='%s' is not 1/yes/true/on or "
	                    "0/no/false/off", v);
}

/* The layout of options versions 1 to 3 (mrtx.h): each ends earlier. */
typedef struct options_v3 {
	int version, durability;
	size_t map_size;
	unsigned file_mode;
	uint32_t lock_ttl_ms, lock_wait_ms;
	int unbatched;  /* version 1 ends here */
	int read_only;  /* version 2 ends here */
	int two_phase;
} options_v3;

/* opts read in its version's layout into o and k. */
static int options_read(const mrtx_options *opts, mrtx_options *o, mrtx__knobs *k)
{
	options_v3 v = { 0 };

	if (!opts)
		return 0;
	if (opts->version == MRTX_OPTIONS_VERSION) {
		*o = *opts;
		return 0;
	}
	if (opts->version == 4) { /* the same fields up to create */
		memcpy(o, opts, offsetof(mrtx_options, create));
		o->version = MRTX_OPTIONS_VERSION;
		o->create = MRTX_CREATE_IF_MISSING; /* (as those releases did) */
		return 0;
	}
	if (opts->version < 1 || opts->version > 3)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_open: options version %d; this mrtx "
		                    "knows 1 to %d (use MRTX_OPTIONS_INIT)", opts->version,
		                    MRTX_OPTIONS_VERSION);
	memcpy(&v, opts, opts->version == 1 ? offsetof(options_v3, read_only) :
	                 opts->version == 2 ? offsetof(options_v3, two_phase) : sizeof(v));
	o->durability = v.durability;
	o->map_size = v.map_size;
	o->file_mode = v.file_mode;
	o->lock_ttl_ms = v.lock_ttl_ms;
	o->lock_wait_ms = v.lock_wait_ms;
	o->read_only = v.read_only;
	o->create = MRTX_CREATE_IF_MISSING; /* (as those releases did) */
	k->unbatched |= v.unbatched;
	k->two_phase |= v.two_phase;
	return 0;
}

int mrtx_open(mrtx_db **out, const char *path, const mrtx_options *opts)
{
	return mrtx__open_knobs(out, path, opts, NULL);
}

int mrtx__open_knobs(mrtx_db **out, const char *path, const mrtx_options *opts,
                     const mrtx__knobs *knobs)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	mrtx__knobs k = knobs ? *knobs : (mrtx__knobs){ 0, 0, 0 };
	store_opts so = { 0 };
	mrtx_db *db;
	int rc, env_2pc;

	mrtx__clearerr();
	if (!out || !path)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_open: out and path are required");
	if (!*path)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_open: the store's path is empty: give a "
		                    "directory, or rados://POOL/NAME");
	*out = NULL;
	if ((rc = options_read(opts, &o, &k)))
		return rc;
	if (o.durability < MRTX_SYNC || o.durability > MRTX_NOSYNC)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_open: durability %d is not one of "
		                    "MRTX_SYNC, MRTX_NOMETASYNC, MRTX_NOSYNC", o.durability);
	if (o.create < MRTX_CREATE_DEFAULT || o.create > MRTX_CREATE_IF_MISSING)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_open: create %d is not one of "
		                    "MRTX_CREATE_DEFAULT, MRTX_CREATE_NEVER, MRTX_CREATE_IF_MISSING",
		                    o.create);
	if (o.file_mode & ~0777u)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_open: file_mode %o has bits outside 0777",
		                    o.file_mode);
	if ((rc = mrtx__fp_from_env()))
		return mrtx__seterr(rc, "MRTX_FAILPOINTS: %s", mrtx__fp_env_error());
	if ((rc = env_two_phase(&env_2pc)))
		return rc;
	if (!(db = mrtx__calloc(1, sizeof(*db))))
		return mrtx__seterr(MRTX_ENOMEM, "out of memory opening %s", path);
	so.durability = o.durability;
	so.map_size = o.map_size;
	so.file_mode = o.file_mode;
	so.unbatched = k.unbatched;
	so.read_only = o.read_only != 0;
	so.create = o.create;
	so.lock_order = lock_order_key;
	lock_owner_put(lock_self_owner(), so.owner); /* (fencing: rados_fence.c) */
	so.has_owner = 1;
	if ((rc = store_open(&db->st, path, &so))) {
		mrtx__free(db);
		return rc;
	}
	pthread_mutex_init(&db->idx_mu, NULL);
	pthread_mutex_init(&db->snaps.mu, NULL);
	hb_init(db);
	{
		static _Atomic uint64_t serials;

		db->serial = atomic_fetch_add(&serials, 1) + 1;
	}
	db->two_phase = k.two_phase != 0 || env_2pc;
	db->no_threads = k.no_threads != 0;
	db->lock_ttl_ms = o.lock_ttl_ms ? o.lock_ttl_ms : 5000;
	db->lock_wait_ms = o.lock_wait_ms ? o.lock_wait_ms : 50;
	*out = db;
	return 0;
}

void mrtx_close(mrtx_db *db)
{
	if (!db)
		return;
	hb_shutdown(db);
	store_close(db->st);
	idx_snap_release(db->idx);
	pthread_mutex_destroy(&db->idx_mu);
	pthread_mutex_destroy(&db->snaps.mu);
	mrtx__free(db->snaps.list);
	pthread_mutex_destroy(&db->hb.mu);
	pthread_cond_destroy(&db->hb.cv);
	mrtx__free(db);
}

int mrtx_flush(mrtx_db *db)
{
	mrtx__clearerr();
	if (!db)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_flush: db is NULL");
	tail_flush(db);
	return MRTX_OK;
}

int mrtx_create_table(mrtx_db *db, const char *table, const char *const *families,
                      size_t nfamilies)
{
	return mrtx_create_table_split(db, table, families, nfamilies, NULL, 0);
}

int mrtx_create_table2(mrtx_db *db, const char *table, const mrtx_family_spec *families,
                       size_t n)
{
	const char *names[MRTX_MAX_FAMILIES];
	store_policy pol[MRTX_MAX_FAMILIES];

	mrtx__clearerr();
	if (!db || !families || n == 0)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_create_table2: db and families are required");
	if (store_read_only(db->st))
		return mrtx__seterr(MRTX_EREADONLY, "mrtx_create_table2: store %s is open "
		                    "read-only", store_path(db->st));
	if (n > MRTX_MAX_FAMILIES)
		return mrtx__seterr(MRTX_ETOOBIG, "mrtx_create_table2: %zu families; the limit is "
		                    "%u", n, MRTX_MAX_FAMILIES);
	for (size_t i = 0; i < n; i++) {
		const mrtx_family_spec *f = &families[i];

		names[i] = f->name;
		pol[i].max_versions = f->max_versions ? f->max_versions : 1;
		pol[i].min_versions = f->min_versions;
		pol[i].ttl_ms = f->ttl_ms;
		if (pol[i].min_versions > pol[i].max_versions)
			return mrtx__seterr(MRTX_EINVAL, "mrtx_create_table2: family '%.64s' would "
			                    "keep at least %u versions (its minimum) but at most %u "
			                    "(its maximum): give a minimum at most the maximum",
			                    f->name ? f->name : "(null)", pol[i].min_versions,
			                    pol[i].max_versions);
		if (pol[i].ttl_ms > UINT64_MAX / 1000u / 2)
			return mrtx__seterr(MRTX_EINVAL, "mrtx_create_table2: family '%.64s': a TTL "
			                    "of %llu ms is out of range (at most %llu)",
			                    f->name ? f->name : "(null)",
			                    (unsigned long long)pol[i].ttl_ms,
			                    (unsigned long long)(UINT64_MAX / 1000u / 2));
	}
	return store_create_table(db->st, table, names, n, pol, NULL, 0);
}

int mrtx_create_table_split(mrtx_db *db, const char *table, const char *const *families,
                            size_t nfamilies, const mrtx_bytes *splits, size_t nsplits)
{
	mrtx__clearerr();
	if (!db)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_create_table: db is NULL");
	if (store_read_only(db->st))
		return mrtx__seterr(MRTX_EREADONLY, "mrtx_create_table: store %s is open "
		                    "read-only", store_path(db->st));
	if (nsplits && !splits)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_create_table_split: splits is NULL");
	if (nsplits > MRTX_MAX_SPLITS)
		return mrtx__seterr(MRTX_ETOOBIG, "mrtx_create_table_split: %zu split rows; the "
		                    "limit is %u", nsplits, MRTX_MAX_SPLITS);
	for (size_t i = 0; i < nsplits; i++) {
		if (!splits[i].size || !splits[i].data)
			return mrtx__seterr(MRTX_EINVAL, "mrtx_create_table_split: split row %zu is "
			                    "empty", i);
		if (splits[i].size > MRTX_MAX_ROW)
			return mrtx__seterr(MRTX_ETOOBIG, "mrtx_create_table_split: split row %zu "
			                    "has %zu bytes; the limit is %u", i, splits[i].size,
			                    MRTX_MAX_ROW);
		if (i && bytes_cmp(splits[i - 1], splits[i]) >= 0)
			return mrtx__seterr(MRTX_EINVAL, "mrtx_create_table_split: split rows must "
			                    "be strictly increasing (row %zu is not)", i);
	}
	return store_create_table(db->st, table, families, nfamilies, NULL, splits, nsplits);
}

int mrtx_table_families(mrtx_db *db, const char *table, const char *const **out,
                        size_t *count)
{
	const store_table *t;
	int rc;

	mrtx__clearerr();
	if (!out || !count || !db || !table)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_table_families: NULL argument");
	if ((rc = store_table_refresh(db->st)) || (rc = store_table_find(db->st, table, &t)))
		return rc;
	store_table_live(t, out, count); /* (without dropped families) */
	return 0;
}

int mrtx_tables(mrtx_db *db, int (*fn)(const char *table, void *payload), void *payload)
{
	const store_table **tables;
	size_t n;
	int rc;

	mrtx__clearerr();
	if (!db || !fn)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_tables: NULL argument");
	if ((rc = store_tables_list(db->st, &tables, &n)))
		return rc;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = fn(tables[i]->name, payload);
	mrtx__free(tables);
	return rc;
}

store *mrtx__db_store(mrtx_db *db)
{
	return db->st;
}
