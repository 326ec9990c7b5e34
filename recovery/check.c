/*
 * check.c - see check.h.  Reads only; never writes the store.
 *
 * Cost: linear in the number of lock records.  A transaction's primary
 * lists every secondary, so reading and decoding the primary again for each
 * secondary met would make a transaction of n rows cost n^2.  Instead the
 * walk remembers, per transaction, the primary it saw holding the txn
 * (table, row, state) and the rows that primary lists (`known`, a keyset):
 *
 *   P . txn . len . table . row   -> the primary's state
 *   S . txn . len . table . row   -> listed as a secondary
 *
 * A PREWRITTEN secondary whose primary was seen non-STABLE holding the txn
 * and listing it is consistent: the primary keeps the txn, and its list,
 * until every secondary is settled (recovery.c's invariant), so that earlier
 * sighting is still true while the secondary is PREWRITTEN.  Only that
 * clean verdict uses remembered state; every finding is still made from one
 * snapshot of the pair (store_read_locks), as before, so a concurrent commit
 * never looks like damage.  Each primary is read for a secondary at most
 * once per transaction (then remembered) and decoded once in the walk.
 */
#include "check.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "keyset.h"

typedef struct cctx {
	store *st;
	check_stats *stats;
	check_issue_fn fn;
	check_progress_fn progress;
	void *payload;
	mrtx_arena *a;
	uint64_t now_ms;
	keyset known; /* see the top of the file */
} cctx;

/* The first key part: kind, txn id, and the table name's length. */
static mrtx_bytes known_head(uint8_t head[2 + LOCK_TXNID_SIZE], char kind,
                             const uint8_t *txn, size_t table_len)
{
	head[0] = (uint8_t)kind;
	memcpy(head + 1, txn, LOCK_TXNID_SIZE);
	head[1 + LOCK_TXNID_SIZE] = (uint8_t)table_len; /* names are <= 64 bytes */
	return MRTX_BYTES(head, 2 + LOCK_TXNID_SIZE);
}

/* Remember primary (table, row) holding r's txn in r's state, and its list. */
static int remember_primary(cctx *c, mrtx_bytes table, mrtx_bytes row, const lock_rec *r)
{
	uint8_t head[2 + LOCK_TXNID_SIZE];
	int rc;

	if (r->state == LOCK_STABLE || (r->flags & LOCK_F_SECONDARY))
		return 0;
	rc = keyset_add(&c->known, known_head(head, 'P', r->txn, table.size), table, row,
	                r->state);
	if (rc)
		return rc == 1 ? 0 : rc; /* known already: so is its list */
	for (size_t i = 0; i < r->nsecondaries; i++) {
		const lock_ref *s = &r->secondaries[i];

		rc = keyset_add(&c->known, known_head(head, 'S', r->txn, s->table.size),
		                s->table, s->row, 1);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* 1 if secondary (t, row) of r's txn is known to be listed by its primary. */
static int known_listed(cctx *c, const store_table *t, mrtx_bytes row, const lock_rec *r)
{
	uint8_t head[2 + LOCK_TXNID_SIZE];
	mrtx_bytes name = MRTX_BYTES(t->name, strlen(t->name));
	uint32_t state;

	if (!keyset_get(&c->known, known_head(head, 'P', r->txn, r->primary.table.size),
	                r->primary.table, r->primary.row, &state) ||
	    state == LOCK_STABLE)
		return 0;
	return keyset_get(&c->known, known_head(head, 'S', r->txn, name.size), name, row,
	                  NULL);
}

static int report(cctx *c, check_severity sev, const char *kind, const store_table *t,
                  mrtx_bytes row, const uint8_t *txn, const char *fmt, ...)
	MRTX_PRINTF(7, 8);

static int report(cctx *c, check_severity sev, const char *kind, const store_table *t,
                  mrtx_bytes row, const uint8_t *txn, const char *fmt, ...)
{
	char detail[512];
	check_issue is;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	memset(&is, 0, sizeof(is));
	is.severity = sev;
	is.kind = kind;
	is.table = t;
	is.row = row;
	if (txn)
		memcpy(is.txn, txn, LOCK_TXNID_SIZE);
	is.detail = detail;
	if (sev == CHECK_CORRUPT)
		c->stats->corrupt++;
	else
		c->stats->resolvable++;
	return c->fn ? c->fn(&is, c->payload) : 0;
}

/* Decode and check the tag: 0, or 1 when the record is not usable. */
static int decode_quiet(store *st, mrtx_bytes in, mrtx_arena *a, lock_rec *out)
{
	if (lock_decode(out, in, a))
		return 1;
	return memcmp(out->tag, store_id(st), LOCK_TAG_SIZE) != 0;
}

static int same_bytes(mrtx_bytes x, mrtx_bytes y)
{
	return x.size == y.size && (x.size == 0 || memcmp(x.data, y.data, x.size) == 0);
}

static int ref_is(const lock_ref *r, const store_table *t, mrtx_bytes row)
{
	return same_bytes(r->table, MRTX_BYTES(t->name, strlen(t->name))) &&
	       same_bytes(r->row, row);
}

static int is_live(cctx *c, const lock_rec *r)
{
	return !lock_owner_dead(&r->owner) && r->expiry_ms > c->now_ms;
}

/* A pointer's table, or 1 after reporting missing-table. */
static int ref_table(cctx *c, const store_table *t, mrtx_bytes row, const lock_rec *r,
                     const lock_ref *ref, const char *what, const store_table **out)
{
	int rc = lockio_ref_table(c->st, ref, out);

	/* A table that does not exist was dropped (or the record is damaged).
	 * A drop settles every transaction with a lock in the table first
	 * (DESIGN §3.4), so a primary's listed secondary there is settled, and
	 * a secondary pointing there is an orphan that recovery rolls back. */
	if (rc == MRTX_ENOTABLE && r->flags & LOCK_F_SECONDARY) {
		rc = report(c, CHECK_RESOLVABLE, "missing-table", t, row, r->txn,
		            "its %s names table '%.*s', which does not exist (dropped)", what,
		            (int)MRTX_MIN(ref->table.size, 64), (const char *)ref->table.data);
		return rc ? rc : 1;
	}
	if (rc == MRTX_ENOTABLE)
		return 1;
	if (rc == MRTX_ECORRUPT) {
		/* a pointer no table can answer (a name no table can have, or on
		 * a store without drop a table that is not there): a finding
		 * like the others, not the end of the check */
		char why[256];

		snprintf(why, sizeof(why), "%s", mrtx_errmsg());
		rc = report(c, CHECK_CORRUPT, "missing-table", t, row, r->txn, "its %s: %s",
		            what, why);
		return rc ? rc : 1;
	}
	return rc;
}

static int check_secondary(cctx *c, const store_table *t, mrtx_bytes row, mrtx_bytes lock,
                           const lock_rec *r)
{
	store_rowref refs[2];
	store_row cur[2];
	const store_table *pt;
	lock_rec pl;
	int rc;

	if (r->state != LOCK_PREWRITTEN)
		return report(c, CHECK_CORRUPT, "bad-state", t, row, r->txn,
		              "secondary lock in state %s (only a primary commits or aborts)",
		              lock_state_name(r->state));
	if (known_listed(c, t, row, r))
		return 0; /* see the top of the file */
	if ((rc = ref_table(c, t, row, r, &r->primary, "primary pointer", &pt)))
		return rc == 1 ? 0 : rc;
	refs[0] = (store_rowref){ t, row };
	refs[1] = (store_rowref){ pt, r->primary.row };
	if ((rc = store_read_locks(c->st, refs, 2, c->a, cur)))
		return rc;
	if (!cur[0].has_lock || !same_bytes(cur[0].lock, lock))
		return 0; /* settled meanwhile */
	if (!cur[1].has_lock || (decode_quiet(c->st, cur[1].lock, c->a, &pl) == 0 &&
	                         !lock_of_txn(&pl, r->txn))) {
		if (is_live(c, r)) {
			c->stats->live++;
			return 0;
		}
		return report(c, CHECK_RESOLVABLE, "orphan", t, row, r->txn,
		              "PREWRITTEN secondary whose primary (table '%s') does not hold its "
		              "txn: resolvable by recover", pt->name);
	}
	if (decode_quiet(c->st, cur[1].lock, c->a, &pl))
		return 0; /* reported when the walk reaches the primary */
	if ((rc = remember_primary(c, r->primary.table, r->primary.row, &pl)))
		return rc;
	if (pl.state == LOCK_STABLE)
		return report(c, CHECK_CORRUPT, "dangling", t, row, r->txn,
		              "PREWRITTEN secondary whose primary (table '%s') is STABLE holding "
		              "the same txn", pt->name);
	if (pl.flags & LOCK_F_SECONDARY)
		return report(c, CHECK_CORRUPT, "bad-pointer", t, row, r->txn,
		              "its primary (table '%s') holds the txn as a secondary", pt->name);
	for (size_t i = 0; i < pl.nsecondaries; i++)
		if (ref_is(&pl.secondaries[i], t, row))
			return 0;
	return report(c, CHECK_CORRUPT, "not-listed", t, row, r->txn,
	              "its primary (table '%s', %s) holds the txn but does not list it",
	              pt->name, lock_state_name(pl.state));
}

static int check_primary(cctx *c, const store_table *t, mrtx_bytes row, mrtx_bytes lock,
                         const lock_rec *r)
{
	size_t n = r->nsecondaries, k = 1;
	store_rowref *refs;
	size_t *which;
	store_row *cur;
	int rc;

	if ((rc = remember_primary(c, MRTX_BYTES(t->name, strlen(t->name)), row, r)))
		return rc;
	if (is_live(c, r)) {
		c->stats->live++;
	} else if ((rc = report(c, CHECK_RESOLVABLE, "stale", t, row, r->txn,
	                        "%s primary of a txn whose owner (pid %u) is %s: resolvable "
	                        "by recover", lock_state_name(r->state), (unsigned)r->owner.pid,
	                        lock_owner_dead(&r->owner) ? "dead" : "past its lock expiry"))) {
		return rc;
	}
	refs = arena_alloc(c->a, (n + 1) * sizeof(*refs));
	which = arena_alloc(c->a, (n + 1) * sizeof(*which));
	cur = arena_alloc(c->a, (n + 1) * sizeof(*cur));
	if (!refs || !which || !cur)
		return MRTX_ENOMEM;
	refs[0] = (store_rowref){ t, row };
	for (size_t i = 0; i < n; i++) {
		const store_table *s;

		rc = ref_table(c, t, row, r, &r->secondaries[i], "secondaries list", &s);
		if (rc == 1)
			continue;
		if (rc)
			return rc;
		which[k] = i;
		refs[k++] = (store_rowref){ s, r->secondaries[i].row };
	}
	if ((rc = store_read_locks(c->st, refs, k, c->a, cur)))
		return rc;
	if (!cur[0].has_lock || !same_bytes(cur[0].lock, lock))
		return 0;
	for (size_t j = 1; j < k; j++) {
		lock_rec sr;

		if (!cur[j].has_lock || decode_quiet(c->st, cur[j].lock, c->a, &sr) ||
		    !lock_of_txn(&sr, r->txn) || sr.state == LOCK_STABLE)
			continue; /* not prewritten yet, settled, or reported on its own */
		if (!(sr.flags & LOCK_F_SECONDARY) || !ref_is(&sr.primary, t, row)) {
			rc = report(c, CHECK_CORRUPT, "bad-pointer", t, row, r->txn,
			            "listed secondary #%zu (table '%s') holds the txn but does not "
			            "point back at this primary", which[j], refs[j].table->name);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static int check_lock(cctx *c, const store_table *t, const store_row *row)
{
	lock_rec r;
	int rc;

	c->stats->locks++;
	if ((rc = lock_decode(&r, row->lock, c->a)))
		return report(c, CHECK_CORRUPT, "undecodable", t, row->row, NULL, "%s",
		              mrtx_errmsg());
	if (memcmp(r.tag, store_id(c->st), LOCK_TAG_SIZE) != 0)
		return report(c, CHECK_CORRUPT, "foreign-tag", t, row->row, r.txn,
		              "lock record's store tag is not this store's");
	if (r.state < 4)
		c->stats->by_state[r.state]++;
	if (r.state == LOCK_STABLE)
		return 0;
	if (r.flags & LOCK_F_SECONDARY)
		return check_secondary(c, t, row->row, row->lock, &r);
	return check_primary(c, t, row->row, row->lock, &r);
}

static int check_visit(const store_table *t, store_row *rows, size_t n, mrtx_arena *a,
                       void *payload)
{
	cctx *c = payload;
	int rc = 0;

	c->a = a;
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = check_lock(c, t, &rows[i]);
	c->a = NULL;
	if (c->progress)
		c->progress(c->stats, c->payload);
	return rc;
}

static int check_table(cctx *c, const store_table *t)
{
	store_filter f = STORE_FILTER_ALL;

	f.lock_only = 1;
	return store_walk(c->st, t, &f, 512, check_visit, c);
}

int check_store(store *st, check_stats *stats, check_issue_fn fn, void *payload)
{
	return check_store_progress(st, stats, fn, NULL, payload);
}

int check_store_progress(store *st, check_stats *stats, check_issue_fn fn,
                         check_progress_fn progress, void *payload)
{
	const store_table **tables = NULL;
	size_t nt = 0;
	cctx c;
	int rc;

	memset(stats, 0, sizeof(*stats));
	memset(&c, 0, sizeof(c));
	c.st = st;
	c.stats = stats;
	c.fn = fn;
	c.progress = progress;
	c.payload = payload;
	c.now_ms = mrtx__now_ms();
	if ((rc = store_tables_list(st, &tables, &nt)))
		return rc;
	stats->tables = nt;
	for (size_t i = 0; i < nt && rc == 0; i++)
		rc = check_table(&c, tables[i]);
	/* the store's count of unsettled records is exact (LMDB) */
	if (rc == 0)
		rc = store_unsettled_verify(st);
	mrtx__free(tables);
	keyset_free(&c.known);
	return rc;
}
