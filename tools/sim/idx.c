/*
 * idx.c - the index workload and its checker (idx.h).
 */
#include "idx.h"

#include "mrtx.h"
#include "storage/rados/rados_store.h"
#include "storage/sim/simrados.h"
#include "txn/admin.h"
#include "txn/admin_test.h"
#include "txn/txn_test.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOCK_TTL_MS 5000
#define NOWN 4     /* owners o0..o3 */
#define VROWS 4    /* rows of table v */
#define IDX_MAXV 4 /* versions v's family keeps */
#define MAXLOG 4096

static const char *const fam_f[1] = { "f" };

/* One recorded version of a v row: its commit timestamp and value (ts 0:
 * not known yet). */
typedef struct vknown {
	uint64_t ts;
	unsigned long when; /* the checker's event count when it was learnt */
	char val[48];
} vknown;

typedef struct ix {
	const bank_cfg *cfg;
	char addr[128];
	bank_result *res;
	int keys;             /* row keys r000.. of p */
	int cap;              /* most rows an owner may hold */
	int maxseq;           /* sequence numbers per v row the arrays hold */
	vknown *known;        /* [VROWS][maxseq] */
	long okseq[VROWS];    /* highest sequence whose commit returned OK */
	uint64_t log[MAXLOG]; /* commit timestamps learnt, for past snapshots */
	int nlog;
	unsigned long splits; /* splits the clients' handles finished */
	int ops;              /* a counter for unique values */
	unsigned long events; /* versions learnt so far */
} ix;

typedef struct ent {
	char row[16], val[16], n[32];
} ent;

static void anomaly(ix *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void anomaly(ix *x, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sim_trace("ANOMALY %s", msg);
	if (x->res->anomalies++ == 0)
		snprintf(x->res->first, sizeof(x->res->first), "%s", msg);
}

/* As bank.c: the codes mrtx.h allows under the simulated faults. */
static int allowed(int rc, int commit)
{
	switch (rc) {
	case MRTX_OK:
	case MRTX_CONFLICT:
	case MRTX_ELOCKED:
	case MRTX_ESTORE:
	case MRTX_EBADTXN:
	case MRTX_ESNAPSHOT:
		return 1;
	case MRTX_EUNKNOWN:
		return commit;
	default:
		return 0;
	}
}

static void count(ix *x, int rc)
{
	x->res->committed += rc == MRTX_OK;
	x->res->unknown += rc == MRTX_EUNKNOWN;
	x->res->failed += rc != MRTX_OK && rc != MRTX_EUNKNOWN;
}

static int open_db(ix *x, mrtx_db **db)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	/* threads in clients only: setup and the final check run outside */
	mrtx__knobs k = { 0, 0, !(x->cfg->threads && sim_in_client()) };

	o.durability = MRTX_NOSYNC;
	o.lock_ttl_ms = LOCK_TTL_MS;
	return mrtx__open_knobs(db, x->addr, &o, &k);
}

static void copy_str(char *dst, size_t cap, mrtx_bytes b, int *bad)
{
	if (b.size >= cap) {
		*bad = 1;
		b.size = cap - 1;
	}
	memcpy(dst, b.data, b.size);
	dst[b.size] = '\0';
}

static void log_ts(ix *x, uint64_t ts)
{
	if (ts && x->nlog < MAXLOG)
		x->log[x->nlog++] = ts;
}

/* ------------------------------------------------------------ table p */

static void prow(int i, char row[16])
{
	snprintf(row, 16, "r%03d", i);
}

static int get_owner(mrtx_txn *t, const char *row, char owner[16])
{
	mrtx_bytes v;
	int rc, bad = 0;

	if ((rc = mrtx_get(t, "p", MRTX_CSTR(row), "f", MRTX_CSTR("owner"), &v)))
		return rc;
	copy_str(owner, 16, v, &bad);
	return MRTX_OK;
}

static int count_hit(const mrtx_index_hit *h, void *arg)
{
	(void)h;
	++*(int *)arg;
	return 0;
}

typedef struct pop {
	ix *x;
	int kind; /* 0 move, 1 insert, 2 delete, 3 renumber */
	int key, client, n;
	char owner[16];
	int seen; /* rows the last attempt's lookup found under owner */
} pop;

static int pop_fn(mrtx_txn *t, void *arg)
{
	pop *p = arg;
	char row[16], cur[16], n[32];
	int rc;

	prow(p->key, row);
	p->seen = -1;
	rc = get_owner(t, row, cur);
	if (rc && rc != MRTX_NOTFOUND)
		return rc;
	if ((rc == MRTX_NOTFOUND) != (p->kind == 1))
		return 0; /* nothing to move, delete or renumber; or present */
	snprintf(n, sizeof(n), "n%d.%d", p->client, p->n);
	if (p->kind == 2)
		return mrtx_delete_row(t, "p", MRTX_CSTR(row));
	if (p->kind == 3)
		return mrtx_put(t, "p", MRTX_CSTR(row), "f", MRTX_CSTR("n"), MRTX_CSTR(n));
	if (p->kind == 0 && !strcmp(cur, p->owner))
		return 0;
	p->seen = 0;
	if ((rc = mrtx_index_lookup(t, "by_owner", MRTX_CSTR(p->owner), count_hit, &p->seen)))
		return rc;
	if (p->seen >= p->x->cap)
		return 0;
	if (p->kind == 1 &&
	    (rc = mrtx_put(t, "p", MRTX_CSTR(row), "f", MRTX_CSTR("n"), MRTX_CSTR(n))))
		return rc;
	return mrtx_put(t, "p", MRTX_CSTR(row), "f", MRTX_CSTR("owner"), MRTX_CSTR(p->owner));
}

static void do_pop(ix *x, mrtx_db *db, int client, int kind)
{
	static const char *const names[4] = { "move", "insert", "delete", "renumber" };
	pop p;
	int rc;

	memset(&p, 0, sizeof(p));
	p.x = x;
	p.kind = kind;
	p.key = (int)sim_rand((uint64_t)x->keys);
	p.client = client;
	p.n = x->ops++;
	snprintf(p.owner, sizeof(p.owner), "o%d", (int)sim_rand(NOWN));
	sim_trace("%s r%03d %s", names[kind], p.key, kind < 2 ? p.owner : "");
	rc = mrtx_run(db, pop_fn, &p, 10);
	if (sim_dead())
		return;
	sim_trace("%s %s saw %d", names[kind], mrtx_strerror(rc), p.seen);
	if (!allowed(rc, 1))
		anomaly(x, "%s: mrtx_run returned %s (%s)", names[kind], mrtx_strerror(rc),
		        mrtx_errmsg());
	if (rc == MRTX_OK && p.seen > x->cap)
		anomaly(x, "%s: a committed lookup of %s found %d rows, over the cap %d", names[kind],
		        p.owner, p.seen, x->cap);
	count(x, rc);
}

/* ------------------------------------------------ index against table */

typedef struct coll {
	ent *e;
	int n, max, bad;
	const char *want; /* a lookup's value (NULL: a whole scan) */
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
	copy_str(e->row, sizeof(e->row), h->row, &c->bad);
	copy_str(e->val, sizeof(e->val), h->value, &c->bad);
	for (size_t i = 0; i < h->ncells; i++)
		if (h->cells[i].qualifier.size == 1 && *(const char *)h->cells[i].qualifier.data == 'n')
			copy_str(e->n, sizeof(e->n), h->cells[i].value, &c->bad);
	return 0;
}

static int ent_cmp(const void *a, const void *b)
{
	const ent *x = a, *y = b;
	int c = strcmp(x->val, y->val);

	return c ? c : strcmp(x->row, y->row);
}

/* p's rows holding an owner (want: that owner), as index entries would be.
 * A row without an owner is skipped (none should exist). */
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
			copy_str(row, sizeof(row), cell.row, &c->bad);
		if (have && (rc != MRTX_OK || strcmp(row, cur.row))) {
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
			copy_str(cur.val, sizeof(cur.val), cell.value, &c->bad);
		else if (cell.qualifier.size == 1 && *(const char *)cell.qualifier.data == 'n')
			copy_str(cur.n, sizeof(cur.n), cell.value, &c->bad);
	}
	mrtx_scan_close(s);
	return rc == MRTX_NOTFOUND ? MRTX_OK : rc;
}

/* In t: read the index (a lookup of want, or all of it) and p; compare.
 * *msg gets the first difference ("" when none).  Returns the first
 * failing call's code; *call names it. */
static int index_vs_base(ix *x, mrtx_txn *t, const char *want, char *msg, size_t msz,
                         const char **call)
{
	int max = 4 * x->keys + 16, rc, over[NOWN] = { 0 };
	coll a = { NULL, 0, max, 0, want }, b = { NULL, 0, max, 0, want };

	msg[0] = '\0';
	a.e = calloc((size_t)max, sizeof(ent));
	b.e = calloc((size_t)max, sizeof(ent));
	if (!a.e || !b.e) {
		rc = MRTX_ENOMEM;
		*call = "calloc";
		goto out;
	}
	*call = want ? "mrtx_index_lookup" : "mrtx_index_scan";
	rc = want ? mrtx_index_lookup(t, "by_owner", MRTX_CSTR(want), coll_hit, &a)
	          : mrtx_index_scan(t, "by_owner", MRTX_BYTES(NULL, 0), MRTX_BYTES(NULL, 0), 0, 0,
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
			snprintf(msg, msz, "index entry %s=%s where the table has %s=%s (%s)",
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
	sim_trace("index %s: %d entries agree", want ? want : "all", a.n);
out:
	free(a.e);
	free(b.e);
	return rc;
}

static void do_index_check(ix *x, mrtx_db *db)
{
	char want[8], msg[200];
	const char *call = "mrtx_begin";
	uint64_t at = 0;
	mrtx_txn *t;
	int rc, all = (int)sim_rand(3) == 0;

	snprintf(want, sizeof(want), "o%d", (int)sim_rand(NOWN));
	msg[0] = '\0';
	if (x->nlog && sim_rand(3) == 0) {
		at = x->log[sim_rand((uint64_t)x->nlog)] - sim_rand(2);
		call = "mrtx_begin_at";
	}
	sim_trace("index check %s at %llu", all ? "all" : want, (unsigned long long)at);
	rc = at ? mrtx_begin_at(db, at, &t) : mrtx_begin(db, &t);
	if (rc == MRTX_OK) {
		rc = index_vs_base(x, t, all ? NULL : want, msg, sizeof(msg), &call);
		if (rc)
			mrtx_abort(t);
		else if ((rc = mrtx_commit(t)))
			call = "mrtx_commit";
	}
	if (sim_dead())
		return;
	sim_trace("index check %s", mrtx_strerror(rc));
	if (rc == MRTX_OK && msg[0])
		anomaly(x, "index check%s: %s", at ? " (past snapshot)" : "", msg);
	else if (rc == MRTX_NOTFOUND || !allowed(rc, 0))
		anomaly(x, "index check: %s returned %s (%s)", call, mrtx_strerror(rc), mrtx_errmsg());
	count(x, rc);
}

/* ------------------------------------------------------------ table v */

static vknown *known(ix *x, int r, long seq)
{
	return seq >= 0 && seq < x->maxseq ? &x->known[(size_t)r * (size_t)x->maxseq + (size_t)seq]
	                                   : NULL;
}

/* Record what a version is (from a commit or a read); an anomaly when
 * something else was recorded. */
static void learn(ix *x, int r, long seq, uint64_t ts, const char *val, const char *how)
{
	vknown *k = known(x, r, seq);

	if (!k) {
		anomaly(x, "v%d: sequence %ld out of range (%s)", r, seq, how);
		return;
	}
	if (!k->ts) {
		k->ts = ts;
		k->when = ++x->events;
		snprintf(k->val, sizeof(k->val), "%s", val);
	} else if (k->ts != ts || strcmp(k->val, val)) {
		anomaly(x, "v%d: %s shows version %ld as '%s' at %llu, recorded as '%s' at %llu", r,
		        how, seq, val, (unsigned long long)ts, k->val, (unsigned long long)k->ts);
	}
}

typedef struct vwrite {
	int rows[2], nrows;
	long seq[2]; /* the versions the last attempt wrote */
	char val[2][48];
} vwrite;

static int vwrite_once(mrtx_db *db, vwrite *w, int client, int n, uint64_t *ts)
{
	mrtx_txn *t;
	int rc;

	if ((rc = mrtx_begin(db, &t)))
		return rc;
	for (int i = 0; i < w->nrows; i++) {
		char row[8];
		mrtx_bytes v;

		snprintf(row, sizeof(row), "v%d", w->rows[i]);
		if ((rc = mrtx_get(t, "v", MRTX_CSTR(row), "h", MRTX_CSTR("q"), &v)))
			break;
		{
			char buf[24];
			int bad = 0;

			copy_str(buf, sizeof(buf), v, &bad);
			w->seq[i] = strtol(buf, NULL, 10) + 1;
		}
		snprintf(w->val[i], sizeof(w->val[i]), "%ld c%d.%d", w->seq[i], client, n);
		if ((rc = mrtx_put(t, "v", MRTX_CSTR(row), "h", MRTX_CSTR("q"), MRTX_CSTR(w->val[i]))))
			break;
	}
	if (rc) {
		mrtx_abort(t);
		return rc;
	}
	return mrtx_commit_ts(t, ts);
}

static void do_vwrite(ix *x, mrtx_db *db, int client)
{
	vwrite w;
	uint64_t ts = 0;
	int rc, n = x->ops++;

	memset(&w, 0, sizeof(w));
	w.rows[0] = (int)sim_rand(VROWS);
	w.nrows = 1 + (sim_rand(3) == 0);
	w.rows[1] = (w.rows[0] + 1 + (int)sim_rand(VROWS - 1)) % VROWS;
	sim_trace("vwrite v%d%s", w.rows[0], w.nrows > 1 ? " and another" : "");
	for (int a = 0; a < 4; a++) {
		rc = vwrite_once(db, &w, client, n, &ts);
		if (sim_dead())
			return;
		if (rc != MRTX_CONFLICT && rc != MRTX_ELOCKED)
			break;
	}
	sim_trace("vwrite %s ts %llu", mrtx_strerror(rc), (unsigned long long)ts);
	if (!allowed(rc, 1) || rc == MRTX_NOTFOUND)
		anomaly(x, "vwrite: %s (%s)", mrtx_strerror(rc), mrtx_errmsg());
	if (rc == MRTX_OK) {
		for (int i = 0; i < w.nrows; i++) {
			learn(x, w.rows[i], w.seq[i], ts, w.val[i], "its commit");
			if (w.seq[i] > x->okseq[w.rows[i]])
				x->okseq[w.rows[i]] = w.seq[i];
		}
		log_ts(x, ts);
	}
	count(x, rc);
}

/* The versions one read returned, copied out of its transaction. */
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
		anomaly(x, "v%d at %llu: %zu versions read", v->row, (unsigned long long)at, v->n);
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		long seq = strtol(v->val[i], NULL, 10);

		if (v->ts[i] > at || (i && (seq != s0 - (long)i || v->ts[i] >= v->ts[i - 1]))) {
			anomaly(x, "v%d at %llu: version %zu is '%s' at %llu after '%s' at %llu", v->row,
			        (unsigned long long)at, i, v->val[i], (unsigned long long)v->ts[i],
			        i ? v->val[i - 1] : "", (unsigned long long)(i ? v->ts[i - 1] : 0));
			return;
		}
		if (!i)
			s0 = seq;
		learn(x, v->row, seq, v->ts[i], v->val[i], need >= 0 ? "a snapshot" : "a past snapshot");
	}
	for (long k = s0 + 1; k < x->maxseq; k++) {
		const vknown *kn = known(x, v->row, k);

		if (kn->ts && kn->ts <= at && kn->when <= before) {
			anomaly(x, "v%d at %llu: read version %ld, missing version %ld committed at %llu",
			        v->row, (unsigned long long)at, s0, k, (unsigned long long)kn->ts);
			return;
		}
	}
	if (need >= 0 && s0 < need)
		anomaly(x, "v%d at %llu: read version %ld, but version %ld returned before the "
		        "snapshot began", v->row, (unsigned long long)at, s0, need);
	else if (need >= 0 && (long)v->n != (s0 + 1 < IDX_MAXV ? s0 + 1 : IDX_MAXV))
		anomaly(x, "v%d at %llu: %zu versions below version %ld, the family keeps %d", v->row,
		        (unsigned long long)at, v->n, s0, IDX_MAXV);
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
			copy_str(r[i].val[j], sizeof(r[i].val[j]), out[j].value, &bad);
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

static void do_vread(ix *x, mrtx_db *db)
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
	} else if (rc == MRTX_NOTFOUND || !allowed(rc, 0)) {
		anomaly(x, "vread: %s returned %s (%s)", call, mrtx_strerror(rc), mrtx_errmsg());
	}
	count(x, rc);
}

static void do_gc(ix *x, mrtx_db *db)
{
	uint64_t keep = sim_rand(2) ? 0 : 20, collected = 0;
	int rc;

	sim_trace("gc keep %llu", (unsigned long long)keep);
	rc = mrtx_gc(db, keep, &collected);
	if (sim_dead())
		return;
	sim_trace("gc %s collected %llu", mrtx_strerror(rc), (unsigned long long)collected);
	if (rc != MRTX_OK && rc != MRTX_ESTORE)
		anomaly(x, "gc: mrtx_gc returned %s (%s)", mrtx_strerror(rc), mrtx_errmsg());
	count(x, rc);
}

/* ------------------------------------------------------------ clients */

static void client_body(int ci, void *arg)
{
	ix *x = arg;
	mrtx_db *db = NULL;
	int rc = MRTX_ESTORE;

	for (int tries = 0; tries < 5 && rc; tries++) {
		rc = open_db(x, &db);
		if (sim_dead())
			return;
		sim_trace("open %s", mrtx_strerror(rc));
		if (rc && rc != MRTX_ESTORE)
			anomaly(x, "mrtx_open returned %s (%s)", mrtx_strerror(rc), mrtx_errmsg());
	}
	if (rc)
		return;
	for (int n = 0; n < x->cfg->txns && !sim_dead(); n++) {
		uint64_t r = sim_rand(20);

		if (r < 3)
			do_index_check(x, db);
		else if (r < 6)
			do_pop(x, db, ci, 0);
		else if (r < 8)
			do_pop(x, db, ci, 1);
		else if (r < 10)
			do_pop(x, db, ci, 2);
		else if (r < 11)
			do_pop(x, db, ci, 3);
		else if (r < 15)
			do_vwrite(x, db, ci);
		else if (r < 19)
			do_vread(x, db);
		else
			do_gc(x, db);
	}
	if (!sim_dead()) {
		unsigned long s = rados_store_splits(mrtx__db_store(db));

		x->splits += s;
		sim_trace("splits finished %lu", s);
	}
	mrtx_close(db);
}

/* ------------------------------------------------------ setup and end */

static int setup(ix *x)
{
	static const mrtx_family_spec h = { "h", IDX_MAXV, 0, 0 };
	static const mrtx_column cl[1] = { { "f", { "n", 1 } } };
	mrtx_index_spec spec = { MRTX_INDEX_SPEC_VERSION, "by_owner", "p", "f",
		                 { "owner", 5 }, "pi", cl, 1 };
	mrtx_db *db;
	mrtx_txn *t;
	uint64_t ts;
	int rc;

	if ((rc = open_db(x, &db)))
		return rc;
	if ((rc = mrtx_create_table(db, "p", fam_f, 1)) || (rc = mrtx_create_table2(db, "v", &h, 1)))
		goto done;
	for (int i = 0; i < x->keys && !rc; i += 16) {
		if ((rc = mrtx_begin(db, &t)))
			break;
		for (int j = i; j < x->keys && j < i + 16 && !rc; j += 2) {
			char row[16], own[8];

			prow(j, row);
			snprintf(own, sizeof(own), "o%d", j / 2 % NOWN);
			if (!(rc = mrtx_put(t, "p", MRTX_CSTR(row), "f", MRTX_CSTR("owner"),
			                    MRTX_CSTR(own))))
				rc = mrtx_put(t, "p", MRTX_CSTR(row), "f", MRTX_CSTR("n"), MRTX_CSTR("n0"));
		}
		rc = rc ? (mrtx_abort(t), rc) : mrtx_commit(t);
	}
	/* declared after the rows: the backfill writes their entries */
	if (rc || (rc = mrtx_create_index(db, &spec)) || (rc = mrtx_begin(db, &t)))
		goto done;
	for (int r = 0; r < VROWS && !rc; r++) {
		char row[8];

		snprintf(row, sizeof(row), "v%d", r);
		rc = mrtx_put(t, "v", MRTX_CSTR(row), "h", MRTX_CSTR("q"), MRTX_CSTR("0 setup"));
	}
	if (rc) {
		mrtx_abort(t);
		goto done;
	}
	if ((rc = mrtx_commit_ts(t, &ts)) == MRTX_OK)
		for (int r = 0; r < VROWS; r++)
			learn(x, r, 0, ts, "0 setup", "setup");
done:
	mrtx_close(db);
	return rc;
}

static int count_lock(const admin_lock *l, void *arg)
{
	unsigned long *n = arg;

	*n += !l->rec || l->rec->state != LOCK_STABLE;
	return 0;
}

static size_t tablets(mrtx_db *db, const char *name)
{
	const store_table *t;
	store *st = mrtx__db_store(db);

	return store_table_find(st, name, &t) ? 0 : rados_store_tablets(st, t);
}

static void final_check(ix *x)
{
	static const char *const tables[3] = { "p", "pi", "v" };
	recover_opts ro = { 1000, 0, 0 };
	recover_stats rs;
	unsigned long left = 0;
	char msg[200];
	const char *call = "";
	mrtx_db *db;
	int rc;

	if ((rc = open_db(x, &db))) {
		anomaly(x, "final: mrtx_open returned %s (%s)", mrtx_strerror(rc), mrtx_errmsg());
		return;
	}
	memset(&rs, 0, sizeof(rs));
	if ((rc = admin_recover(db, &ro, &rs, NULL, NULL)))
		anomaly(x, "final: the recovery sweep returned %s (%s)", mrtx_strerror(rc),
		        mrtx_errmsg());
	sim_trace("sweep seen %lu forwarded %lu rolled back %lu live %lu errors %lu",
	          rs.locks_seen, rs.forwarded, rs.rolled_back, rs.skipped_live, rs.errors);
	for (int i = 0; i < 3 && !rc; i++)
		rc = admin_locks(db, tables[i], count_lock, &left);
	if (rc)
		anomaly(x, "final: listing the locks returned %s (%s)", mrtx_strerror(rc),
		        mrtx_errmsg());
	else if (left)
		anomaly(x, "final: %lu lock record(s) left unsettled after the sweep", left);
	/* the whole index against the table, then every v row's newest */
	for (int tries = 0; tries < 10; tries++) {
		mrtx_txn *t;

		msg[0] = '\0';
		call = "mrtx_begin";
		if ((rc = mrtx_begin(db, &t)))
			continue;
		if ((rc = index_vs_base(x, t, NULL, msg, sizeof(msg), &call)))
			mrtx_abort(t);
		else
			rc = mrtx_commit(t);
		if (rc != MRTX_ELOCKED && rc != MRTX_CONFLICT)
			break;
	}
	if (rc)
		anomaly(x, "final: %s returned %s (%s)", call, mrtx_strerror(rc), mrtx_errmsg());
	else if (msg[0])
		anomaly(x, "final: %s", msg);
	{
		vread r[VROWS];
		uint64_t snap = 0;

		memset(r, 0, sizeof(r));
		if ((rc = vread_txn(x, db, 0, 0, VROWS, r, &snap, &call)))
			anomaly(x, "final: %s returned %s (%s)", call, mrtx_strerror(rc), mrtx_errmsg());
		else
			for (int i = 0; i < VROWS; i++)
				judge(x, &r[i], snap, x->okseq[i], x->events);
	}
	sim_trace("splits %lu; tablets p %zu pi %zu v %zu", x->splits, tablets(db, "p"),
	          tablets(db, "pi"), tablets(db, "v"));
	mrtx_close(db);
}

unsigned long index_run(uint64_t seed, const bank_cfg *cfg, bank_result *out)
{
	ix x;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&x, 0, sizeof(x));
	x.cfg = cfg;
	x.res = out;
	x.keys = 3 * cfg->accounts;
	x.cap = x.keys / 6 > 2 ? x.keys / 6 : 2;
	x.maxseq = 2 * cfg->clients * cfg->txns + 2;
	if (!(x.known = calloc((size_t)VROWS * (size_t)x.maxseq, sizeof(vknown)))) {
		out->anomalies = 1;
		snprintf(out->first, sizeof(out->first), "out of memory");
		return 1;
	}
	snprintf(x.addr, sizeof(x.addr), "rados://mrtx/idx?split_rows=%u",
	         cfg->split_rows ? cfg->split_rows : IDX_SPLIT_ROWS);
	simr_reset();
	(void)simr_pool_create("mrtx");
	sim_start(seed, &cfg->faults, cfg->clients, cfg->trace);
	if ((rc = setup(&x)) != MRTX_OK) {
		anomaly(&x, "setup: %s (%s)", mrtx_strerror(rc), mrtx_errmsg());
	} else {
		sim_run(client_body, &x);
		/* every lock a dead or timed-out client left is past its expiry */
		sim_settle(2ull * LOCK_TTL_MS * 1000u + 1000000u);
		final_check(&x);
	}
	out->hash = sim_finish();
	free(x.known);
	for (int k = 0; k < SIM_NFAULTS; k++)
		out->faults[k] = sim_faults_seen(k);
	return out->anomalies;
}
