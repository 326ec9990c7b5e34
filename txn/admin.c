/*
 * admin.c - the tool's narrow way below the public API (admin.h): each call
 * takes a handle, finds its store here, and reports in lockcf/ and
 * recovery/ terms, so the tools never hold a store of their own.
 */
#include "txn_int.h"
#include "admin.h"
#include "index.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ recovery */

int admin_recover(mrtx_db *db, const recover_opts *o, recover_stats *stats,
                  recover_progress_fn progress, void *payload)
{
	return recover_sweep(db->st, o, stats, progress, payload);
}

/* -------------------------------------------------------------- checks */

struct check_relay {
	admin_issue_fn fn;
	check_progress_fn progress;
	void *payload;
};

static int relay_issue(const check_issue *is, void *payload)
{
	struct check_relay *c = payload;
	admin_issue out;

	if (!c->fn)
		return 0;
	out.severity = is->severity;
	out.kind = is->kind;
	out.table = is->table->name;
	out.row = is->row;
	memcpy(out.txn, is->txn, sizeof(out.txn));
	out.detail = is->detail;
	return c->fn(&out, c->payload);
}

static void relay_progress(const check_stats *s, void *payload)
{
	struct check_relay *c = payload;

	c->progress(s, c->payload);
}

/* One damaged index declaration: CHECK_CORRUPT, kind "index". */
static int index_issue(check_stats *stats, admin_issue_fn fn, void *payload, const idx_decl *d,
                       const char *detail)
{
	admin_issue out;

	stats->corrupt++;
	if (!fn)
		return 0;
	memset(&out, 0, sizeof(out));
	out.severity = CHECK_CORRUPT;
	out.kind = "index";
	out.table = d->table;
	out.row = MRTX_BYTES(NULL, 0);
	out.detail = detail;
	return fn(&out, payload);
}

/* What is wrong with declaration d (a table or family it names that the
 * store has not), into detail; 0 when nothing. */
static int decl_wrong(mrtx_db *db, const idx_decl *d, char *detail, size_t n)
{
	const store_table *t;
	uint8_t fid;

	if (store_table_find(db->st, d->table, &t))
		snprintf(detail, n, "index '%s' names source table '%s', which the store has not: "
		         "its declaration is damaged", d->name, d->table);
	else if (store_family_find(db->st, t, d->family, &fid))
		snprintf(detail, n, "index '%s' names family '%s', which table '%s' has not: its "
		         "declaration is damaged", d->name, d->family, d->table);
	else if (store_table_find(db->st, d->index_table, &t))
		snprintf(detail, n, "index '%s' names index table '%s', which the store has not: "
		         "its declaration is damaged", d->name, d->index_table);
	else
		return 0;
	mrtx__clearerr();
	return 1;
}

/*
 * Every index declaration names a source table with the family it
 * indexes, and an index table, that exist: a declaration is written only
 * once both tables are there, and neither can be dropped while it stands
 * (index_create.c, ddl.c).  One that names another table (a damaged
 * record) leaves the real source table's writes unindexed.  A drop of
 * the index removes its declaration before its table, so a miss is
 * looked at again with the declarations read anew: reported only if the
 * declaration is still there, still wrong.
 */
static int check_indexes(mrtx_db *db, check_stats *stats, admin_issue_fn fn, void *payload)
{
	struct index_set set, again;
	mrtx_arena a, b;
	int rc;

	arena_init(&a);
	if ((rc = idx_load_set(db->st, &a, &set, NULL))) {
		arena_free(&a);
		return rc;
	}
	for (size_t i = 0; i < set.n && rc == 0; i++) {
		char detail[3 * MRTX_MAX_NAME + 160];
		int still = 0;

		if (!decl_wrong(db, &set.d[i], detail, sizeof(detail)))
			continue;
		arena_init(&b);
		if ((rc = idx_load_set(db->st, &b, &again, NULL)) == 0)
			for (size_t j = 0; j < again.n && !still; j++)
				still = strcmp(again.d[j].name, set.d[i].name) == 0 &&
				        decl_wrong(db, &again.d[j], detail, sizeof(detail));
		if (rc == 0 && still)
			rc = index_issue(stats, fn, payload, &set.d[i], detail);
		arena_free(&b);
	}
	arena_free(&a);
	return rc;
}

int admin_check(mrtx_db *db, check_stats *stats, admin_issue_fn fn,
                check_progress_fn progress, void *payload)
{
	struct check_relay c = { fn, progress, payload };
	int rc;

	/* a view as reads take it first: what makes them refuse the store
	 * (a lock file publishing a transaction past the newest commit, a
	 * damaged timestamp page) fails the check too */
	if (store_has(db->st, STORE_CAP_VIEWS)) {
		store_view *v;

		if ((rc = store_view_open(db->st, &v)))
			return rc;
		store_view_close(db->st, v);
	}
	rc = check_store_progress(db->st, stats, relay_issue, progress ? relay_progress : NULL,
	                          &c);
	return rc ? rc : check_indexes(db, stats, fn, payload);
}

int admin_check_file(const char *path, int (*damage)(const admin_damage *d, void *payload),
                     void (*table)(const char *name, int damaged, void *payload),
                     void *payload, admin_file_stats *stats)
{
	return check_file(path, damage, table, payload, stats);
}

/* --------------------------------------------------------- lock records */

struct lock_walk {
	store *st;
	admin_lock_fn fn;
	void *payload;
};

static void lock_view(admin_lock *l, const store_table *t, mrtx_bytes row)
{
	memset(l, 0, sizeof(*l));
	l->table = t->name;
	l->families = t->families;
	l->nfamilies = t->nfamilies;
	l->row = row;
}

static int lock_visit(const store_table *t, store_row *rows, size_t n, mrtx_arena *a,
                      void *payload)
{
	struct lock_walk *w = payload;
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < n; i++) {
		admin_lock l;
		lock_rec r;

		lock_view(&l, t, rows[i].row);
		if ((l.rc = lockio_decode(w->st, t, rows[i].row, rows[i].lock, a, &r)) == 0)
			l.rec = &r;
		rc = w->fn(&l, w->payload);
	}
	return rc;
}

int admin_locks(mrtx_db *db, const char *table, admin_lock_fn fn, void *payload)
{
	store_filter f = STORE_FILTER_ALL;
	struct lock_walk w = { db ? db->st : NULL, fn, payload };
	const store_table *t;
	int rc;

	if (!db || !table || !fn)
		return mrtx__seterr(MRTX_EINVAL, "admin_locks: NULL argument");
	if ((rc = store_table_find(db->st, table, &t)))
		return rc;
	f.lock_only = 1;
	return store_walk(db->st, t, &f, 1024, lock_visit, &w);
}

int admin_row_lock(mrtx_db *db, const char *table, mrtx_bytes row, admin_lock_fn fn,
                   void *payload)
{
	store_rowref ref;
	store_row cur;
	mrtx_arena a;
	admin_lock l;
	lock_rec r;
	int rc;

	if (!db || !table || !fn)
		return mrtx__seterr(MRTX_EINVAL, "admin_row_lock: NULL argument");
	if ((rc = store_table_find(db->st, table, &ref.table)))
		return rc;
	ref.row = row;
	arena_init(&a);
	if ((rc = store_read_locks(db->st, &ref, 1, &a, &cur)) ||
	    (cur.has_lock && (rc = lockio_decode(db->st, ref.table, row, cur.lock, &a, &r))))
		goto done;
	lock_view(&l, ref.table, row);
	l.rec = cur.has_lock ? &r : NULL;
	rc = fn(&l, payload);
done:
	arena_free(&a);
	return rc;
}

uint64_t admin_now_ms(void)
{
	return mrtx__now_ms();
}

/* ------------------------------------------------------------- figures */

static int count_visit(const store_table *t, store_row *rows, size_t n, mrtx_arena *a,
                       void *payload)
{
	admin_row_counts *c = payload;

	(void)t;
	(void)a;
	for (size_t i = 0; i < n; i++) {
		const store_row *row = &rows[i];
		uint8_t state, txn[LOCK_TXNID_SIZE];

		c->lock_records += row->has_lock;
		c->rows += row->ncells > 0;
		c->cells += row->ncells;
		if (row->has_lock)
			c->by_state[lock_peek(row->lock, &state, txn) || state > 3 ? 4 : state]++;
	}
	return 0;
}

int admin_count_rows(mrtx_db *db, const char *table, admin_row_counts *out)
{
	store_filter f = STORE_FILTER_ALL;
	admin_row_counts c;
	const store_table *t;
	int rc;

	if (!db || !table || !out)
		return mrtx__seterr(MRTX_EINVAL, "admin_count_rows: NULL argument");
	if ((rc = store_table_find(db->st, table, &t)))
		return rc;
	memset(&c, 0, sizeof(c));
	if ((rc = store_walk(db->st, t, &f, 256, count_visit, &c)))
		return rc;
	*out = c;
	return 0;
}

int admin_family_policy(mrtx_db *db, const char *table, size_t i, mrtx_family_spec *out)
{
	const store_table *t;
	store_policy pol;
	int rc;

	if (!db || !table || !out)
		return mrtx__seterr(MRTX_EINVAL, "admin_family_policy: NULL argument");
	if ((rc = store_table_refresh(db->st)) || (rc = store_table_find(db->st, table, &t)))
		return rc;
	{
		/* i counts the families mrtx_table_families lists (no dropped
		 * one): the id of the i-th */
		size_t n = t->nfamilies, fid, seen = 0;

		for (fid = 0; fid < n; fid++)
			if (!store_family_dropped(t, (unsigned)fid) && seen++ == i)
				break;
		if (fid == n)
			return mrtx__seterr(MRTX_EINVAL, "table '%s' has %zu families, not %zu",
			                    table, seen, i + 1);
		i = fid;
	}
	pol = store_table_policy(t, (unsigned)i);
	out->name = t->families[i];
	out->max_versions = pol.max_versions ? pol.max_versions : 1;
	out->min_versions = pol.min_versions;
	out->ttl_ms = pol.ttl_ms;
	return 0;
}

int admin_table_held(mrtx_db *db, const char *table, int *held)
{
	const store_table *t;
	int rc;

	if (!db || !table || !held)
		return mrtx__seterr(MRTX_EINVAL, "admin_table_held: NULL argument");
	*held = 0;
	if ((rc = store_table_find(db->st, table, &t)))
		return rc;
	return store_table_held(db->st, t, held);
}

int admin_info(mrtx_db *db, admin_store_info *out)
{
	return store_get_info(db->st, out);
}

void admin_counters_get(mrtx_db *db, admin_counters *out)
{
	store_counters_get(db->st, out);
}

int admin_ts_next(mrtx_db *db, uint64_t *out)
{
	return store_ts_next(db->st, 0, out);
}

size_t admin_txn_mem(const mrtx_txn *txn)
{
	return txn->arena.total - (txn->arena.cap - txn->arena.used);
}

/* ------------------------------------------------- abandoned transactions */

#define PLANT_BATCH 1000 /* transactions per store write */

/* The two lock records of abandoned transaction i, as ops[0..1]. */
static int plant_one(store *st, const store_table *t, const mrtx_bytes rows[2],
                     const lock_owner *owner, mrtx_bytes value, mrtx_arena *a,
                     store_op ops[2])
{
	mrtx_bytes table = MRTX_BYTES(t->name, strlen(t->name));
	store_mut *m = arena_alloc(a, sizeof(*m));
	lock_ref *refs = arena_alloc(a, 2 * sizeof(*refs));
	lock_rec pr, sr;
	int rc;

	if (!m || !refs)
		return MRTX_ENOMEM; /* (the arena recorded the detail) */
	*m = (store_mut){ STORE_MUT_PUT, 0, MRTX_CSTR("q0"), value, 0 };
	refs[0] = (lock_ref){ table, rows[0] }; /* the primary */
	refs[1] = (lock_ref){ table, rows[1] }; /* its secondary */
	memset(&pr, 0, sizeof(pr));
	pr.state = LOCK_PREWRITTEN;
	pr.flags = LOCK_F_PREV_ABSENT;
	memcpy(pr.tag, store_id(st), LOCK_TAG_SIZE);
	if ((rc = lock_new_txnid(pr.txn)))
		return rc;
	pr.commit_ts = 1;
	pr.expiry_ms = UINT64_MAX / 2;
	pr.owner = *owner;
	pr.redo = m;
	pr.nredo = 1;
	sr = pr;
	pr.secondaries = &refs[1];
	pr.nsecondaries = 1;
	sr.flags |= LOCK_F_SECONDARY;
	sr.primary = refs[0];
	memset(ops, 0, 2 * sizeof(ops[0]));
	for (int k = 0; k < 2; k++) {
		ops[k].table = t;
		ops[k].row = rows[k];
		ops[k].cond.absent = 1;
		if ((rc = lock_encode(k ? &sr : &pr, a, &ops[k].new_lock)))
			return rc;
	}
	return 0;
}

int admin_plant_abandoned(mrtx_db *db, const char *table, const mrtx_bytes *rows, size_t n,
                          const lock_owner *owner, mrtx_bytes value)
{
	const store_table *t;
	store_op *ops;
	mrtx_arena a;
	int rc;

	if (!db || !table || (n && !rows) || !owner)
		return mrtx__seterr(MRTX_EINVAL, "admin_plant_abandoned: NULL argument");
	if ((rc = store_table_find(db->st, table, &t)))
		return rc;
	if (!(ops = mrtx__calloc(2 * PLANT_BATCH, sizeof(*ops))))
		return mrtx__seterr(MRTX_ENOMEM, "admin_plant_abandoned: out of memory");
	arena_init(&a);
	for (size_t i = 0; rc == 0 && i < n;) {
		size_t k = 0;

		for (; rc == 0 && i < n && k < PLANT_BATCH; i++, k++)
			rc = plant_one(db->st, t, &rows[2 * i], owner, value, &a, &ops[2 * k]);
		if (rc == 0)
			rc = store_write_rows(db->st, ops, 2 * k);
		for (size_t j = 0; rc == 0 && j < 2 * k; j++)
			if (ops[j].result == MRTX_CONFLICT)
				rc = mrtx__seterr(MRTX_CONFLICT, "admin_plant_abandoned: table '%s': a "
				                  "row already holds a lock record", table);
		arena_free(&a);
		arena_init(&a);
	}
	arena_free(&a);
	mrtx__free(ops);
	return rc;
}
