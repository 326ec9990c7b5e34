/*
 * ddl.c - the DDL workload and its checks (ddl.h).
 */
#include "ddl.h"
#include "work.h"

#include "mrtx.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FINAL_TRIES 20
#define MAXFAM 6 /* families a run adds to d */

enum { T_OPEN, T_OK, T_FAILED, T_UNKNOWN };

/* A token: the transaction that wrote it, and when its commit returned. */
typedef struct tok {
	int status;
	uint64_t ret; /* T_OK: sim_now() when mrtx_commit returned */
} tok;

/* A DDL call that returned MRTX_OK: when it began and returned. */
typedef struct span {
	uint64_t begin, end;
} span;

/* One client runs at a time (sched.h): nothing here needs a lock. */
typedef struct dd {
	work w;
	tok *tok;          /* by token number, 1.. */
	size_t ntok, captok;
	span *trunc;       /* truncates of d that returned MRTX_OK */
	size_t ntrunc;
	span *drop;        /* drops of e that returned MRTX_OK */
	size_t ndrop;
	uint64_t trunc_seen; /* 1 + sim_now() when the first truncate of d began */
	int nfam;          /* families g0.. asked for on d so far */
	uint64_t fam_ok[MAXFAM]; /* 1 + sim_now() when mrtx_add_family of g<k> returned
	                          * MRTX_OK (0: not yet) */
	int fam_tried[MAXFAM];   /* a call for g<k> failed before */
	int fam_busy[MAXFAM];    /* a call for g<k> is under way */
} dd;

/* What one reading transaction saw of pair i (0: absent). */
typedef struct seen {
	uint64_t a, z, x, e;
	int e_read;
} seen;

static const char *const fam[1] = { "f" };

static int add_span(span **v, size_t *n, uint64_t b, uint64_t e)
{
	span *q = realloc(*v, (*n + 1) * sizeof(*q));

	if (!q)
		return -1;
	q[*n] = (span){ b, e };
	*v = q;
	++*n;
	return 0;
}

static uint64_t new_tok(dd *d)
{
	if (d->ntok + 1 >= d->captok) {
		size_t cap = d->captok ? 2 * d->captok : 256;
		tok *q = realloc(d->tok, cap * sizeof(*q));

		if (!q)
			return 0;
		memset(q + d->captok, 0, (cap - d->captok) * sizeof(*q));
		d->tok = q;
		d->captok = cap;
	}
	d->tok[++d->ntok] = (tok){ T_OPEN, 0 };
	return d->ntok;
}

static void row_of(char c, int i, char row[16])
{
	snprintf(row, 16, "%c%02d", c, i);
}

/* Read table/row's token into *v (0: absent).  MRTX_ECORRUPT (no message)
 * for a value that is no token. */
static int get_tok(mrtx_txn *t, const char *table, const char *row, uint64_t *v)
{
	mrtx_bytes b;
	char buf[24];
	char *e;
	int rc;

	*v = 0;
	if ((rc = mrtx_get(t, table, MRTX_CSTR(row), "f", MRTX_CSTR("v"), &b)))
		return rc == MRTX_NOTFOUND ? MRTX_OK : rc;
	if (b.size < 2 || b.size >= sizeof(buf) || ((const char *)b.data)[0] != 't')
		return MRTX_ECORRUPT;
	memcpy(buf, b.data, b.size);
	buf[b.size] = '\0';
	*v = strtoull(buf + 1, &e, 10);
	return *e || *v == 0 ? MRTX_ECORRUPT : MRTX_OK;
}

static int put_tok(mrtx_txn *t, const char *table, const char *row, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "t%" PRIu64, v);
	return mrtx_put(t, table, MRTX_CSTR(row), "f", MRTX_CSTR("v"), MRTX_CSTR(buf));
}

/* ------------------------------------------------------------- checks */

/* Did a wipe in spans[0..n) begin after token v's commit returned and
 * return before began? */
static int outlived(const dd *d, const span *s, size_t n, uint64_t v, uint64_t began)
{
	if (v == 0 || v > d->ntok || d->tok[v].status != T_OK)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (d->tok[v].ret < s[i].begin && s[i].end < began)
			return 1;
	return 0;
}

static int failed_tok(const dd *d, uint64_t v)
{
	return v && (v > d->ntok || d->tok[v].status == T_FAILED);
}

/* The checks of one committed read of every pair, begun at began. */
static void check_read(dd *d, const char *who, const seen *s, uint64_t began)
{
	for (int i = 0; i < d->w.cfg->accounts; i++) {
		const seen *p = &s[i];

		if (p->a != p->z) {
			work_anomaly(&d->w, "%s: pair %d read a=t%" PRIu64 " z=t%" PRIu64
			             " (a commit or a truncate seen in part)", who, i, p->a, p->z);
			return;
		}
		if (p->a && p->a != p->x) {
			work_anomaly(&d->w, "%s: pair %d read d=t%" PRIu64 " x=t%" PRIu64
			             " (two tables committed apart)", who, i, p->a, p->x);
			return;
		}
		if (!p->a && p->x && !d->trunc_seen) {
			work_anomaly(&d->w, "%s: pair %d read d absent, x=t%" PRIu64
			             " and no truncate began", who, i, p->x);
			return;
		}
		if (failed_tok(d, p->a) || failed_tok(d, p->x) || (p->e_read && failed_tok(d, p->e))) {
			work_anomaly(&d->w, "%s: pair %d read a token of a commit that failed "
			             "(d t%" PRIu64 ", x t%" PRIu64 ", e t%" PRIu64 ")", who, i,
			             p->a, p->x, p->e);
			return;
		}
		if (outlived(d, d->trunc, d->ntrunc, p->a, began)) {
			work_anomaly(&d->w, "%s: pair %d read t%" PRIu64 " in d, committed before "
			             "a truncate that returned before the read began", who, i, p->a);
			return;
		}
		if (p->e_read && outlived(d, d->drop, d->ndrop, p->e, began)) {
			work_anomaly(&d->w, "%s: pair %d read t%" PRIu64 " in e, committed before "
			             "a drop of e that returned before the read began", who, i, p->e);
			return;
		}
	}
}

/* ------------------------------------------------------------- clients */

/* Read every pair in one transaction into s (e: unless it is missing). */
static int read_all(dd *d, mrtx_db *db, seen *s, const char **call)
{
	char row[16];
	mrtx_txn *t;
	int rc, have_e = 1;

	*call = "mrtx_begin";
	if ((rc = mrtx_begin(db, &t)))
		return rc;
	for (int i = 0; i < d->w.cfg->accounts && !rc; i++) {
		memset(&s[i], 0, sizeof(s[i]));
		*call = "mrtx_get of d";
		row_of('a', i, row);
		if ((rc = get_tok(t, "d", row, &s[i].a)))
			break;
		row_of('z', i, row);
		if ((rc = get_tok(t, "d", row, &s[i].z)))
			break;
		*call = "mrtx_get of x";
		row_of('x', i, row);
		if ((rc = get_tok(t, "x", row, &s[i].x)))
			break;
		if (have_e) {
			*call = "mrtx_get of e";
			row_of('e', i, row);
			rc = get_tok(t, "e", row, &s[i].e);
			if (rc == MRTX_ENOTABLE) {
				have_e = 0;
				rc = MRTX_OK;
			}
			s[i].e_read = have_e;
		}
	}
	if (rc) {
		mrtx_abort(t);
		return rc;
	}
	*call = "mrtx_commit";
	return mrtx_commit(t);
}

static void do_read(dd *d, mrtx_db *db, int ci)
{
	seen *s = calloc((size_t)d->w.cfg->accounts, sizeof(*s));
	uint64_t began = sim_now();
	const char *call;
	char who[32];
	int rc;

	if (!s) {
		work_anomaly(&d->w, "out of memory");
		return;
	}
	rc = read_all(d, db, s, &call);
	if (sim_dead())
		goto out;
	sim_trace("read %s", mrtx_strerror(rc));
	snprintf(who, sizeof(who), "read of c%d", ci);
	if (rc == MRTX_OK)
		check_read(d, who, s, began);
	else if (rc == MRTX_ECORRUPT || !work_allowed(rc, 0))
		work_anomaly(&d->w, "%s: %s returned %s (%s)", who, call, mrtx_strerror(rc),
		             mrtx_errmsg());
	work_count(&d->w, rc);
out:
	free(s);
}

static void do_write(dd *d, mrtx_db *db)
{
	int i = (int)sim_rand((uint64_t)d->w.cfg->accounts), rmw = (int)sim_rand(2);
	int with_e = sim_rand(3) == 0, touched_e = 0, rc;
	uint64_t v = new_tok(d), old, began = 1 + sim_now();
	const char *call = "mrtx_begin";
	mrtx_txn *t = NULL;
	char row[16];

	if (!v) {
		work_anomaly(&d->w, "out of memory");
		return;
	}
	sim_trace("write t%" PRIu64 " pair %d%s%s", v, i, rmw ? " read first" : "",
	          with_e ? " and e" : "");
	rc = mrtx_begin(db, &t);
	if (sim_dead())
		return; /* (the token stays open: unknown) */
	if (rc == MRTX_OK && rmw) {
		call = "mrtx_get of d";
		row_of('a', i, row);
		rc = get_tok(t, "d", row, &old);
	}
	if (rc == MRTX_OK) {
		call = "mrtx_put";
		row_of('a', i, row);
		if ((rc = put_tok(t, "d", row, v)) == MRTX_OK) {
			row_of('z', i, row);
			if ((rc = put_tok(t, "d", row, v)) == MRTX_OK) {
				row_of('x', i, row);
				rc = put_tok(t, "x", row, v);
			}
		}
	}
	if (rc == MRTX_OK && d->nfam && sim_rand(3) == 0) {
		/* a family added before this transaction began is there, through
		 * every truncate since (they keep the families) */
		int k = (int)sim_rand(MAXFAM);
		char fam_k[8];

		snprintf(fam_k, sizeof(fam_k), "g%d", k);
		row_of('a', i, row);
		call = "mrtx_put of an added family";
		rc = mrtx_put(t, "d", MRTX_CSTR(row), fam_k, MRTX_CSTR("v"), MRTX_CSTR("1"));
		if (rc == MRTX_ENOFAMILY && (!d->fam_ok[k] || d->fam_ok[k] > began))
			rc = MRTX_OK; /* (not known added yet: the put left the
			               * transaction as it was) */
	}
	if (rc == MRTX_OK && with_e) {
		row_of('e', i, row);
		rc = put_tok(t, "e", row, v);
		touched_e = rc == MRTX_OK;
		if (rc == MRTX_ENOTABLE) /* (e is dropped: the call left the
		                          * transaction as it was) */
			rc = MRTX_OK;
	}
	if (sim_dead()) {
		mrtx_abort(t);
		return;
	}
	if (rc) {
		mrtx_abort(t);
		d->tok[v].status = T_FAILED;
		if (rc == MRTX_ECORRUPT || !work_allowed(rc, 0))
			work_anomaly(&d->w, "write t%" PRIu64 ": %s returned %s (%s)", v, call,
			             mrtx_strerror(rc), mrtx_errmsg());
		work_count(&d->w, rc);
		return;
	}
	rc = mrtx_commit(t);
	if (sim_dead())
		return;
	sim_trace("write t%" PRIu64 " %s", v, mrtx_strerror(rc));
	if (rc == MRTX_OK) {
		d->tok[v] = (tok){ T_OK, sim_now() };
	} else if (rc == MRTX_EUNKNOWN) {
		d->tok[v].status = T_UNKNOWN;
	} else if (work_allowed(rc, 1) || (rc == MRTX_ENOTABLE && touched_e)) {
		d->tok[v].status = T_FAILED;
	} else {
		d->tok[v].status = T_UNKNOWN;
		work_anomaly(&d->w, "write t%" PRIu64 ": mrtx_commit returned %s (%s)", v,
		             mrtx_strerror(rc), mrtx_errmsg());
	}
	work_count(&d->w, rc);
}

/* Truncate d (drop 0) or drop e (drop 1); a call that returned MRTX_OK is
 * recorded with when it began and returned. */
static void do_wipe(dd *d, mrtx_db *db, int drop)
{
	const char *what = drop ? "drop e" : "truncate d";
	uint64_t b = sim_now();
	int rc;

	if (!drop && !d->trunc_seen)
		d->trunc_seen = 1 + b;
	sim_trace("%s", what);
	rc = drop ? mrtx_drop_table(db, "e") : mrtx_truncate_table(db, "d");
	if (sim_dead())
		return;
	sim_trace("%s %s", what, mrtx_strerror(rc));
	if (rc == MRTX_OK && (drop ? add_span(&d->drop, &d->ndrop, b, sim_now())
	                           : add_span(&d->trunc, &d->ntrunc, b, sim_now())))
		work_anomaly(&d->w, "out of memory");
	/* (e may be dropped already; d never is) */
	if (rc != MRTX_OK && rc != MRTX_ELOCKED && rc != MRTX_CONFLICT && rc != MRTX_ESTORE &&
	    !(drop && rc == MRTX_ENOTABLE))
		work_anomaly(&d->w, "%s: %s (%s)", what, mrtx_strerror(rc), mrtx_errmsg());
}

static void do_add_family(dd *d, mrtx_db *db)
{
	char name[8];
	int k = 0, rc;

	/* the first family not added yet that no other call is adding */
	while (k < MAXFAM && (d->fam_ok[k] || d->fam_busy[k]))
		k++;
	if (k == MAXFAM)
		return;
	if (k + 1 > d->nfam)
		d->nfam = k + 1;
	snprintf(name, sizeof(name), "g%d", k);
	sim_trace("add family %s", name);
	d->fam_busy[k] = 1;
	rc = mrtx_add_family(db, "d", name);
	if (sim_dead())
		return; /* (busy for good: the call's outcome is unknown) */
	d->fam_busy[k] = 0;
	sim_trace("add family %s %s", name, mrtx_strerror(rc));
	if (rc == MRTX_OK || (rc == MRTX_EEXIST && d->fam_tried[k]))
		d->fam_ok[k] = 1 + sim_now(); /* (EEXIST: an earlier failed call's) */
	else if (rc == MRTX_ELOCKED || rc == MRTX_ENOTABLE || rc == MRTX_CONFLICT ||
	         rc == MRTX_ESTORE)
		d->fam_tried[k] = 1; /* (asked again later: it may have been added) */
	else
		work_anomaly(&d->w, "mrtx_add_family returned %s (%s)", mrtx_strerror(rc),
		             mrtx_errmsg());
}

static void do_create(dd *d, mrtx_db *db)
{
	int rc;

	sim_trace("create e");
	rc = mrtx_create_table(db, "e", fam, 1);
	if (sim_dead())
		return;
	sim_trace("create e %s", mrtx_strerror(rc));
	if (rc != MRTX_OK && rc != MRTX_ESTORE)
		work_anomaly(&d->w, "mrtx_create_table returned %s (%s)", mrtx_strerror(rc),
		             mrtx_errmsg());
}

static void client_body(int ci, void *arg)
{
	dd *d = arg;
	mrtx_db *db;

	if (work_client_open(&d->w, &db))
		return;
	for (int n = 0; n < d->w.cfg->txns && !sim_dead(); n++) {
		uint64_t r = sim_rand(13);

		if (ci < 2 && r < 2)
			do_wipe(d, db, 0);
		else if (ci < 2 && r == 2)
			do_wipe(d, db, 1);
		else if (ci < 2 && r == 3)
			do_create(d, db);
		else if (ci < 2 && r == 4)
			do_add_family(d, db);
		else if (sim_rand(3) == 0)
			do_read(d, db, ci);
		else
			do_write(d, db);
	}
	mrtx_close(db);
}

/* ------------------------------------------------------ setup and end */

static int setup(dd *d)
{
	const mrtx_bytes split[1] = { MRTX_CSTR("m") };
	mrtx_db *db;
	int rc;

	if ((rc = work_open_db(&d->w, &db)))
		return rc;
	/* (e before x: a transaction's primary is its first row in table
	 * order, so once d was truncated some primaries are in e) */
	if ((rc = mrtx_create_table_split(db, "d", fam, 1, split, 1)) == MRTX_OK &&
	    (rc = mrtx_create_table(db, "e", fam, 1)) == MRTX_OK)
		rc = mrtx_create_table(db, "x", fam, 1);
	mrtx_close(db);
	return rc;
}

static void final_check(dd *d)
{
	static const char *const tables[2] = { "d", "x" };
	seen *s = calloc((size_t)d->w.cfg->accounts, sizeof(*s));
	seen *again = calloc((size_t)d->w.cfg->accounts, sizeof(*again));
	const char *call = "";
	mrtx_db *db;
	int rc = MRTX_OK;

	if (!s || !again) {
		work_anomaly(&d->w, "final: out of memory");
		goto out;
	}
	if (work_final_open(&d->w, &db))
		goto out;
	for (int tries = 0; tries < FINAL_TRIES; tries++) {
		uint64_t began = sim_now();

		rc = read_all(d, db, s, &call);
		sim_trace("final read %s", mrtx_strerror(rc));
		if (rc == MRTX_OK) {
			check_read(d, "final", s, began);
			break;
		}
		if (rc != MRTX_ELOCKED && rc != MRTX_CONFLICT)
			break;
		/* a truncate or drop stopped half way leaves its table closed:
		 * the next one finishes it (mrtx_truncate_table) */
		if (rc == MRTX_ELOCKED) {
			do_wipe(d, db, 0);
			do_wipe(d, db, 1);
		}
	}
	if (rc)
		work_anomaly(&d->w, "final: %s returned %s (%s)", call, mrtx_strerror(rc),
		             mrtx_errmsg());
	work_sweep(&d->w, db, tables, 2);
	/* the sweep changes nothing the final read settled */
	if (rc == MRTX_OK && (rc = read_all(d, db, again, &call)))
		work_anomaly(&d->w, "final: after the sweep %s returned %s (%s)", call,
		             mrtx_strerror(rc), mrtx_errmsg());
	else if (rc == MRTX_OK && memcmp(s, again, (size_t)d->w.cfg->accounts * sizeof(*s)))
		work_anomaly(&d->w, "final: a pair changed across the recovery sweep");
	mrtx_close(db);
out:
	free(s);
	free(again);
}

static int setup_step(void *arg)
{
	return setup(arg);
}

static void final_step(void *arg)
{
	final_check(arg);
}

static const work_ops ops = { setup_step, client_body, NULL, final_step };

unsigned long ddl_run(uint64_t seed, const bank_cfg *cfg, bank_result *out)
{
	dd d;

	memset(out, 0, sizeof(*out));
	memset(&d, 0, sizeof(d));
	d.w.cfg = cfg;
	d.w.res = out;
	work_addr(&d.w, "ddl", cfg->split_rows);
	work_run(&d.w, seed, &ops, &d);
	free(d.tok);
	free(d.trunc);
	free(d.drop);
	return out->anomalies;
}
