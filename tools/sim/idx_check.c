/*
 * idx_check.c - the index workload's checks (idx.h): the index against
 * table p, the versions read from table v, and the final check.
 */
#include "idx_int.h"

#include "storage/rados/rados_store.h"
#include "txn/admin_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------ index against table */

typedef struct ent {
	char row[16], val[16], n[32];
} ent;

typedef struct coll {
	ent *e;
	int n, max, bad;
	const char *want; /* a lookup's value (NULL: a whole scan) */
	int by_n;         /* the table's rows as entries of by_n, not by_owner */
} coll;

static int coll_hit(const mrtx_index_hit *h, void *arg)
{
	coll *c = arg;
	ent *e;

	if (c->n >= c->max) {
		c->bad = 1;
		return 0;
	}
	e = &c->e[c->n++];
	memset(e, 0, sizeof(*e));
	idx_copy_str(e->row, sizeof(e->row), h->row, &c->bad);
	idx_copy_str(e->val, sizeof(e->val), h->value, &c->bad);
	for (size_t i = 0; i < h->ncells; i++)
		if (h->cells[i].qualifier.size == 1 && *(const char *)h->cells[i].qualifier.data == 'n')
			idx_copy_str(e->n, sizeof(e->n), h->cells[i].value, &c->bad);
	return 0;
}

static int ent_cmp(const void *a, const void *b)
{
	const ent *x = a, *y = b;
	int c = strcmp(x->val, y->val);

	return c ? c : strcmp(x->row, y->row);
}

/* p's rows holding an owner (want: that owner), as entries of by_owner
 * would be (by_n: as entries of by_n, the value n and no copy).  A row
 * without the value is skipped (none should exist). */
static int scan_base(mrtx_txn *t, coll *c)
{
	mrtx_scan_spec sp = { 0 };
	mrtx_scanner *s;
	mrtx_cell cell;
	ent cur;
	int rc, have = 0;

	sp.table = "p";
	sp.family = "f";
	memset(&cur, 0, sizeof(cur));
	if ((rc = mrtx_scan_open(t, &sp, &s)))
		return rc;
	for (;;) {
		char row[16];

		rc = mrtx_scan_next(s, &cell);
		if (rc == MRTX_OK)
			idx_copy_str(row, sizeof(row), cell.row, &c->bad);
		if (have && (rc != MRTX_OK || strcmp(row, cur.row))) {
			if (c->by_n) {
				memcpy(cur.val, cur.n, sizeof(cur.val));
				cur.val[sizeof(cur.val) - 1] = '\0';
				cur.n[0] = '\0';
			}
			if (cur.val[0] && (!c->want || !strcmp(c->want, cur.val))) {
				if (c->n < c->max)
					c->e[c->n++] = cur;
				else
					c->bad = 1;
			}
			have = 0;
		}
		if (rc != MRTX_OK)
			break;
		if (!have) {
			memset(&cur, 0, sizeof(cur));
			snprintf(cur.row, sizeof(cur.row), "%s", row);
			have = 1;
		}
		if (cell.qualifier.size == 5 && !memcmp(cell.qualifier.data, "owner", 5))
			idx_copy_str(cur.val, sizeof(cur.val), cell.value, &c->bad);
		else if (cell.qualifier.size == 1 && *(const char *)cell.qualifier.data == 'n')
			idx_copy_str(cur.n, sizeof(cur.n), cell.value, &c->bad);
	}
	mrtx_scan_close(s);
	return rc == MRTX_NOTFOUND ? MRTX_OK : rc;
}

int idx_vs_base(ix *x, mrtx_txn *t, const char *index, const char *want, char *msg,
                size_t msz, const char **call)
{
	int max = 4 * x->keys + 16, rc, over[NOWN] = { 0 }, by_n = !strcmp(index, IDX_BY_N);
	coll a = { NULL, 0, max, 0, want, by_n }, b = { NULL, 0, max, 0, want, by_n };

	msg[0] = '\0';
	a.e = calloc((size_t)max, sizeof(ent));
	b.e = calloc((size_t)max, sizeof(ent));
	if (!a.e || !b.e) {
		rc = MRTX_ENOMEM;
		*call = "calloc";
		goto out;
	}
	*call = want ? "mrtx_index_lookup" : "mrtx_index_scan";
	rc = want ? mrtx_index_lookup(t, index, MRTX_CSTR(want), coll_hit, &a)
	          : mrtx_index_scan(t, index, MRTX_BYTES(NULL, 0), MRTX_BYTES(NULL, 0), 0, 0,
	                            coll_hit, &a);
	if (rc)
		goto out;
	*call = "scan of p";
	if ((rc = scan_base(t, &b)))
		goto out;
	qsort(b.e, (size_t)b.n, sizeof(ent), ent_cmp);
	if (a.bad || b.bad) {
		snprintf(msg, msz, "malformed or too many entries (index %d, table %d)", a.n, b.n);
		goto out;
	}
	for (int i = 0; i < a.n || i < b.n; i++) {
		const ent *p = i < a.n ? &a.e[i] : NULL, *q = i < b.n ? &b.e[i] : NULL;

		if (p && want && strcmp(p->val, want)) {
			snprintf(msg, msz, "lookup of %s returned an entry of %s (row %s)", want, p->val,
			         p->row);
			goto out;
		}
		if (!p || !q || strcmp(p->row, q->row) || strcmp(p->val, q->val)) {
			snprintf(msg, msz, "%s entry %s=%s where the table has %s=%s (%s)", index,
			         p ? p->row : "(none)", p ? p->val : "", q ? q->row : "(none)",
			         q ? q->val : "", want ? want : "whole index");
			goto out;
		}
		if (strcmp(p->n, q->n)) {
			snprintf(msg, msz, "index entry %s=%s copies n %s, the row holds %s", p->row,
			         p->val, p->n, q->n);
			goto out;
		}
		if (p->val[0] == 'o' && p->val[1] >= '0' && p->val[1] < '0' + NOWN &&
		    ++over[p->val[1] - '0'] == x->cap + 1) {
			snprintf(msg, msz, "owner %s holds more than %d rows", p->val, x->cap);
			goto out;
		}
	}
	sim_trace("%s %s: %d entries agree", index, want ? want : "all", a.n);
out:
	free(a.e);
	free(b.e);
	return rc;
}

int idx_check_txn(ix *x, mrtx_db *db, uint64_t at, const char *index, const char *want,
                  char *msg, size_t msz, const char **call)
{
	mrtx_txn *t;
	int rc;

	msg[0] = '\0';
	*call = at ? "mrtx_begin_at" : "mrtx_begin";
	if ((rc = at ? mrtx_begin_at(db, at, &t) : mrtx_begin(db, &t)))
		return rc;
	if ((rc = idx_vs_base(x, t, index, want, msg, msz, call))) {
		mrtx_abort(t);
		return rc;
	}
	if ((rc = mrtx_commit(t)))
		*call = "mrtx_commit";
	return rc;
}

int idx_check_final(ix *x, mrtx_db *db, const char *index, char *msg, size_t msz,
                    const char **call)
{
	int rc = MRTX_OK;

	for (int tries = 0; tries < 10; tries++)
		if ((rc = idx_check_txn(x, db, 0, index, NULL, msg, msz, call)) != MRTX_ELOCKED &&
		    rc != MRTX_CONFLICT)
			break;
	return rc;
}

void idx_do_index_check(ix *x, mrtx_db *db)
{
	char want[8], msg[200];
	const char *call;
	uint64_t at = 0;
	int rc, all = (int)sim_rand(3) == 0;

	snprintf(want, sizeof(want), "o%d", (int)sim_rand(NOWN));
	if (x->nlog && sim_rand(3) == 0)
		at = x->log[sim_rand((uint64_t)x->nlog)] - sim_rand(2);
	sim_trace("index check %s at %llu", all ? "all" : want, (unsigned long long)at);
	rc = idx_check_txn(x, db, at, "by_owner", all ? NULL : want, msg, sizeof(msg), &call);
	if (sim_dead())
		return;
	sim_trace("index check %s", mrtx_strerror(rc));
	if (rc == MRTX_OK && msg[0])
		work_anomaly(&x->w, "index check%s: %s", at ? " (past snapshot)" : "", msg);
	else if (rc == MRTX_NOTFOUND || !work_allowed(rc, 0))
		work_anomaly(&x->w, "index check: %s returned %s (%s)", call, mrtx_strerror(rc),
		             mrtx_errmsg());
	work_count(&x->w, rc);
}

/* ------------------------------------------------------ table v reads */

static vknown *known(ix *x, int r, long seq)
{
	return seq >= 0 && seq < x->maxseq ? &x->known[(size_t)r * (size_t)x->maxseq + (size_t)seq]
	                                   : NULL;
}

/* Record what a version is (from a commit or a read); an anomaly when
 * something else was recorded. */
void idx_learn(ix *x, int r, long seq, uint64_t ts, const char *val, const char *how)
{
	vknown *k = known(x, r, seq);

	if (!k) {
		work_anomaly(&x->w, "v%d: sequence %ld out of range (%s)", r, seq, how);
		return;
	}
	if (!k->ts) {
		k->ts = ts;
		k->when = ++x->events;
		snprintf(k->val, sizeof(k->val), "%s", val);
	} else if (k->ts != ts || strcmp(k->val, val)) {
		work_anomaly(&x->w,
		             "v%d: %s shows version %ld as '%s' at %llu, recorded as '%s' at %llu",
		             r, how, seq, val, (unsigned long long)ts, k->val,
		             (unsigned long long)k->ts);
	}
}

typedef struct vread {
	int row, rc;
	size_t n;
	uint64_t ts[8];
	char val[8][48];
} vread;

/* Judge a v row's versions read at snapshot `at`.  A version learnt
 * before the read began (events at most `before`: its commit returned, or
 * a read saw it landed) and stamped at or below `at` must be seen; one in
 * flight then may be missed (mrtx_get: a snapshot sees every commit that
 * returned before it began; §9.4-9.5: a one-row commit stamped below it
 * can land after its first read).  Live: need is the highest sequence
 * whose commit returned before it began; -1 past. */
static void judge(ix *x, const vread *v, uint64_t at, long need, unsigned long before)
{
	long s0 = -1;

	if (v->n == 0 || v->n > IDX_MAXV) {
		work_anomaly(&x->w, "v%d at %llu: %zu versions read", v->row,
		             (unsigned long long)at, v->n);
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		long seq = strtol(v->val[i], NULL, 10);

		if (v->ts[i] > at || (i && (seq != s0 - (long)i || v->ts[i] >= v->ts[i - 1]))) {
			work_anomaly(&x->w,
			             "v%d at %llu: version %zu is '%s' at %llu after '%s' at %llu",
			             v->row, (unsigned long long)at, i, v->val[i],
			             (unsigned long long)v->ts[i], i ? v->val[i - 1] : "",
			             (unsigned long long)(i ? v->ts[i - 1] : 0));
			return;
		}
		if (!i)
			s0 = seq;
		idx_learn(x, v->row, seq, v->ts[i], v->val[i], need >= 0 ? "a snapshot" : "a past snapshot");
	}
	for (long k = s0 + 1; k < x->maxseq; k++) {
		const vknown *kn = known(x, v->row, k);

		if (kn->ts && kn->ts <= at && kn->when <= before) {
			work_anomaly(&x->w,
			             "v%d at %llu: read version %ld, missing version %ld committed at %llu",
			             v->row, (unsigned long long)at, s0, k,
			             (unsigned long long)kn->ts);
			return;
		}
	}
	if (need >= 0 && s0 < need)
		work_anomaly(&x->w,
		             "v%d at %llu: read version %ld, but version %ld returned before the "
		             "snapshot began", v->row, (unsigned long long)at, s0, need);
	else if (need >= 0 && (long)v->n != (s0 + 1 < IDX_MAXV ? s0 + 1 : IDX_MAXV))
		work_anomaly(&x->w,
		             "v%d at %llu: %zu versions below version %ld, the family keeps %d",
		             v->row, (unsigned long long)at, v->n, s0, IDX_MAXV);
}

/* Read nrows v rows from `first` in one read-only transaction (at 0: a
 * live snapshot).  Returns the first failure; the reads in r[]. */
static int vread_txn(ix *x, mrtx_db *db, uint64_t at, int first, int nrows, vread *r,
                     uint64_t *snap, const char **call)
{
	mrtx_txn *t;
	int rc;

	(void)x;
	*call = at ? "mrtx_begin_at" : "mrtx_begin";
	if ((rc = at ? mrtx_begin_at(db, at, &t) : mrtx_begin(db, &t)))
		return rc;
	*call = "mrtx_get_versions";
	for (int i = 0; i < nrows && !rc; i++) {
		mrtx_version out[8];
		char row[8];

		r[i].row = (first + i) % VROWS;
		snprintf(row, sizeof(row), "v%d", r[i].row);
		rc = mrtx_get_versions(t, "v", MRTX_CSTR(row), "h", MRTX_CSTR("q"), out, 8, &r[i].n);
		for (size_t j = 0; j < r[i].n && !rc; j++) {
			int bad = 0;

			r[i].ts[j] = out[j].ts;
			idx_copy_str(r[i].val[j], sizeof(r[i].val[j]), out[j].value, &bad);
		}
	}
	*snap = mrtx_txn_snapshot_ts(t);
	if (rc) {
		mrtx_abort(t);
		return rc;
	}
	*call = "mrtx_commit";
	return mrtx_commit(t);
}

void idx_do_vread(ix *x, mrtx_db *db)
{
	long need[VROWS];
	unsigned long before = x->events;
	uint64_t at = 0, snap = 0;
	int first = (int)sim_rand(VROWS), nrows = 1 + (int)sim_rand(VROWS), rc;
	const char *call;
	vread r[VROWS];

	memset(r, 0, sizeof(r));
	memcpy(need, x->okseq, sizeof(need));
	if (x->nlog && sim_rand(2))
		at = x->log[sim_rand((uint64_t)x->nlog)] - sim_rand(2);
	sim_trace("vread %d rows from v%d at %llu", nrows, first, (unsigned long long)at);
	rc = vread_txn(x, db, at, first, nrows, r, &snap, &call);
	if (sim_dead())
		return;
	sim_trace("vread %s snapshot %llu", mrtx_strerror(rc), (unsigned long long)snap);
	if (rc == MRTX_OK) {
		for (int i = 0; i < nrows; i++)
			judge(x, &r[i], snap, at ? -1 : need[r[i].row], before);
	} else if (rc == MRTX_NOTFOUND || !work_allowed(rc, 0)) {
		work_anomaly(&x->w, "vread: %s returned %s (%s)", call, mrtx_strerror(rc),
		             mrtx_errmsg());
	}
	work_count(&x->w, rc);
}

/* -------------------------------------------------------- final check */

static size_t tablets(mrtx_db *db, const char *name)
{
	const store_table *t;
	store *st = mrtx__db_store(db);

	return store_table_find(st, name, &t) ? 0 : rados_store_tablets(st, t);
}

void idx_final_check(ix *x)
{
	static const char *const tables[3] = { "p", "pi", "v" };
	char msg[200];
	const char *call = "";
	mrtx_db *db;
	int rc;

	if (work_final_open(&x->w, &db))
		return;
	work_sweep(&x->w, db, tables, 3);
	if (x->reindex)
		idx_reindex_final(x, db);
	/* the whole index against the table, then every v row's newest */
	if ((rc = idx_check_final(x, db, "by_owner", msg, sizeof(msg), &call)))
		work_anomaly(&x->w, "final: %s returned %s (%s)", call, mrtx_strerror(rc),
		             mrtx_errmsg());
	else if (msg[0])
		work_anomaly(&x->w, "final: %s", msg);
	{
		vread r[VROWS];
		uint64_t snap = 0;

		memset(r, 0, sizeof(r));
		if ((rc = vread_txn(x, db, 0, 0, VROWS, r, &snap, &call)))
			work_anomaly(&x->w, "final: %s returned %s (%s)", call, mrtx_strerror(rc),
			             mrtx_errmsg());
		else
			for (int i = 0; i < VROWS; i++)
				judge(x, &r[i], snap, x->okseq[i], x->events);
	}
	sim_trace("splits %lu; tablets p %zu pi %zu v %zu", x->splits, tablets(db, "p"),
	          tablets(db, "pi"), tablets(db, "v"));
	mrtx_close(db);
}
