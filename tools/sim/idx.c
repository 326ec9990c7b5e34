/*
 * idx.c - the index workload (idx.h): its clients' writes to p and v,
 * collection, setup and the run; the checks are in idx_check.c.
 */
#include "idx_int.h"

#include "mrtx.h"
#include "storage/rados/rados_store.h"
#include "storage/sim/simrados.h"
#include "txn/admin_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const fam_f[1] = { "f" };

void idx_copy_str(char *dst, size_t cap, mrtx_bytes b, int *bad)
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
	idx_copy_str(owner, 16, v, &bad);
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
	if (!work_allowed(rc, 1))
		work_anomaly(&x->w, "%s: mrtx_run returned %s (%s)", names[kind], mrtx_strerror(rc),
		             mrtx_errmsg());
	if (rc == MRTX_OK && p.seen > x->cap)
		work_anomaly(&x->w, "%s: a committed lookup of %s found %d rows, over the cap %d",
		             names[kind], p.owner, p.seen, x->cap);
	work_count(&x->w, rc);
}

/* ----------------------------------------------------- table v writes */

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

			idx_copy_str(buf, sizeof(buf), v, &bad);
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
	if (!work_allowed(rc, 1) || rc == MRTX_NOTFOUND)
		work_anomaly(&x->w, "vwrite: %s (%s)", mrtx_strerror(rc), mrtx_errmsg());
	if (rc == MRTX_OK) {
		for (int i = 0; i < w.nrows; i++) {
			idx_learn(x, w.rows[i], w.seq[i], ts, w.val[i], "its commit");
			if (w.seq[i] > x->okseq[w.rows[i]])
				x->okseq[w.rows[i]] = w.seq[i];
		}
		log_ts(x, ts);
	}
	work_count(&x->w, rc);
}

/* The versions one read returned, copied out of its transaction. */
static void do_gc(ix *x, mrtx_db *db)
{
	uint64_t keep = sim_rand(2) ? 0 : 20, collected = 0;
	int rc;

	sim_trace("gc keep %llu", (unsigned long long)keep);
	rc = mrtx_gc(db, keep, &collected);
	if (sim_dead())
		return;
	sim_trace("gc %s collected %llu", mrtx_strerror(rc), (unsigned long long)collected);
	if (rc != MRTX_OK && rc != MRTX_ESTORE && rc != MRTX_ELOCKED)
		work_anomaly(&x->w, "gc: mrtx_gc returned %s (%s)", mrtx_strerror(rc),
		             mrtx_errmsg());
	work_count(&x->w, rc);
}

/* ------------------------------------------------------------ clients */

static void client_body(int ci, void *arg)
{
	ix *x = arg;
	mrtx_db *db;

	if (work_client_open(&x->w, &db))
		return;
	for (int n = 0; n < x->w.cfg->txns && !sim_dead(); n++) {
		uint64_t r;

		if (x->reindex && ci < 2 && sim_rand(8) == 0) {
			idx_do_reindex(x, db);
			continue;
		}
		if (x->reindex && sim_rand(10) == 0) {
			idx_do_n_check(x, db);
			continue;
		}
		r = sim_rand(20);
		if (r < 3)
			idx_do_index_check(x, db);
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
			idx_do_vread(x, db);
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

/* -------------------------------------------------- setup and the run */

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

	if ((rc = work_open_db(&x->w, &db)))
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
	if (rc || (rc = mrtx_create_index(db, &spec)) ||
	    (x->reindex && (rc = idx_create_by_n(db))) || (rc = mrtx_begin(db, &t)))
		goto done;
	x->nready = x->reindex;
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
			idx_learn(x, r, 0, ts, "0 setup", "setup");
done:
	mrtx_close(db);
	return rc;
}

static int setup_step(void *arg)
{
	return setup(arg);
}

static void final_step(void *arg)
{
	idx_final_check(arg);
}

static const work_ops ops = { setup_step, client_body, NULL, final_step };

static unsigned long run(uint64_t seed, const bank_cfg *cfg, bank_result *out, int reindex)
{
	ix x;

	memset(out, 0, sizeof(*out));
	memset(&x, 0, sizeof(x));
	x.w.cfg = cfg;
	x.w.res = out;
	x.reindex = reindex;
	x.keys = 3 * cfg->accounts;
	x.cap = x.keys / 6 > 2 ? x.keys / 6 : 2;
	x.maxseq = 2 * cfg->clients * cfg->txns + 2;
	if (!(x.known = calloc((size_t)VROWS * (size_t)x.maxseq, sizeof(vknown)))) {
		out->anomalies = 1;
		snprintf(out->first, sizeof(out->first), "out of memory");
		return 1;
	}
	work_addr(&x.w, reindex ? "reindex" : "idx", cfg->split_rows ? cfg->split_rows : IDX_SPLIT_ROWS);
	work_run(&x.w, seed, &ops, &x);
	free(x.known);
	return out->anomalies;
}

unsigned long index_run(uint64_t seed, const bank_cfg *cfg, bank_result *out)
{
	return run(seed, cfg, out, 0);
}

unsigned long reindex_run(uint64_t seed, const bank_cfg *cfg, bank_result *out)
{
	return run(seed, cfg, out, 1);
}
