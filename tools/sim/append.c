/*
 * append.c - the list-append workload and its checks (append.h).
 */
#include "append.h"
#include "work.h"

#include "mrtx.h"
#include "storage/sim/simrados.h"
#include "tools/harness/histcheck.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPS 4
#define FINAL_TRIES 20

/* One micro-operation of a transaction. */
typedef struct mop {
	int key;
	int append;   /* 1: append val; 0: read */
	uint64_t val; /* the value appended */
} mop;

/* A client's transaction from its plan to its outcome.  Open while it runs:
 * a client that dies leaves it open, and the run records it as unknown
 * (what a dead client's thread does later touches nothing shared). */
typedef struct pending {
	int open;
	uint32_t seq;
	int n;
	mop ops[MAX_OPS];
} pending;

/*
 * okv[k][0..nok[k]) are the values appended to key k by transactions whose
 * commit returned MRTX_OK, in the order the returns happened: a snapshot
 * taken after a return must show its value (real-time order, DESIGN I17).
 * One client runs at a time (sched.h), so nothing here needs a lock.
 */
typedef struct app {
	work w; /* cfg, addr and res */
	hc_history *h;
	pending *pend;   /* per client */
	uint32_t *seq;   /* per client: its next transaction's number */
	uint64_t **okv;  /* per key */
	size_t *nok;
	uint64_t next_val;
	uint64_t **final; /* per key: the final list */
	size_t *nfinal;
	int blind_first; /* append_blind_run */
} app;

static const char *const fam[1] = { "f" };

/* Key k lives in table a (even k) or b (odd k). */
static const char *key_table(int k)
{
	return k % 2 ? "b" : "a";
}

static void key_row(int k, char row[16])
{
	snprintf(row, 16, "key%03d", k);
}

/* ------------------------------------------------------------ lists */

/* Parse "v1,v2,..." (decimal, each > 0; "" is the empty list) into a
 * malloc'd array.  0, or -1 when unparsable or out of memory. */
static int parse_list(const char *s, size_t len, uint64_t **out, size_t *n)
{
	size_t cap = 1;

	*n = 0;
	for (size_t i = 0; i < len; i++)
		cap += s[i] == ',';
	if (!(*out = malloc(cap * sizeof(**out))))
		return -1;
	if (len == 0)
		return 0;
	for (size_t i = 0; i <= len;) {
		uint64_t v = 0;
		size_t j = i;

		while (j < len && s[j] >= '0' && s[j] <= '9' && v < UINT64_MAX / 10)
			v = v * 10 + (uint64_t)(s[j++] - '0');
		if (j == i || v == 0 || (j < len && s[j] != ','))
			return -1;
		(*out)[(*n)++] = v;
		i = j + 1;
	}
	return 0;
}

/* The list as a trace fragment: its length and as many of its last values
 * as fit. */
static void list_text(const uint64_t *l, size_t n, char *buf, size_t size)
{
	size_t i = n, used;
	int w = snprintf(buf, size, "[%zu]", n);

	used = w > 0 ? (size_t)w : 0;
	/* the longest tail that fits in size - used - 5 ("..." and NUL) */
	for (size_t room = size > used + 5 ? size - used - 5 : 0; i > 0; i--) {
		char one[24];
		size_t m = (size_t)snprintf(one, sizeof(one), " %" PRIu64, l[i - 1]);

		if (m > room)
			break;
		room -= m;
	}
	if (i > 0 && used + 4 < size)
		used += (size_t)snprintf(buf + used, size - used, " ...");
	for (; i < n && used < size; i++)
		used += (size_t)snprintf(buf + used, size - used, " %" PRIu64, l[i]);
}

/* Read key k's list: MRTX_OK and *list (malloc'd), or the failure
 * (MRTX_ECORRUPT: unparsable).  *raw receives the value as stored. */
static int get_list(mrtx_txn *t, int k, mrtx_bytes *raw, uint64_t **list, size_t *n)
{
	char row[16];
	int rc;

	*list = NULL;
	*n = 0;
	key_row(k, row);
	if ((rc = mrtx_get(t, key_table(k), MRTX_CSTR(row), "f", MRTX_CSTR("l"), raw)))
		return rc;
	if (parse_list(raw->data, raw->size, list, n)) {
		free(*list);
		*list = NULL;
		*n = 0;
		return MRTX_ECORRUPT;
	}
	return MRTX_OK;
}

/* Append v to the list read as raw. */
static int put_appended(mrtx_txn *t, int k, mrtx_bytes raw, uint64_t v)
{
	char row[16], tail[24];
	size_t m = (size_t)snprintf(tail, sizeof(tail), "%s%" PRIu64, raw.size ? "," : "", v);
	char *buf = malloc(raw.size + m);
	int rc;

	if (!buf)
		return MRTX_ENOMEM;
	if (raw.size)
		memcpy(buf, raw.data, raw.size);
	memcpy(buf + raw.size, tail, m);
	key_row(k, row);
	rc = mrtx_put(t, key_table(k), MRTX_CSTR(row), "f", MRTX_CSTR("l"),
	              MRTX_BYTES(buf, raw.size + m));
	free(buf);
	return rc;
}

/* ------------------------------------------------------------ clients */

/* Draw a transaction: a quarter read 1-4 keys, the rest run 1-4 distinct
 * keys' micro-operations with at least one append. */
static void plan(app *a, int ci, pending *p)
{
	int k = a->w.cfg->accounts, keys[MAX_OPS], ro = sim_rand(4) == 0, must;

	p->n = 1 + (int)sim_rand((uint64_t)(k < MAX_OPS ? k : MAX_OPS));
	for (int i = 0; i < p->n; i++) {
		int again;

		do {
			keys[i] = (int)sim_rand((uint64_t)k);
			again = 0;
			for (int j = 0; j < i; j++)
				again |= keys[j] == keys[i];
		} while (again);
	}
	must = ro ? -1 : (int)sim_rand((uint64_t)p->n);
	for (int i = 0; i < p->n; i++) {
		p->ops[i].key = keys[i];
		p->ops[i].append = i == must || (!ro && sim_rand(2));
		p->ops[i].val = p->ops[i].append ? a->next_val++ : 0;
	}
	p->seq = a->seq[ci]++;
	p->open = 1;
}

/* Record a transaction that ended: its appends, and for an ok one the reads
 * it made (seen[i] for read micro-operations). */
static void record(app *a, int ci, const pending *p, int status, uint64_t *const *seen,
                   const size_t *nseen)
{
	long t = hc_add_txn(a->h, HC_ID(ci, p->seq), status);
	int bad = t < 0;

	for (int i = 0; i < p->n && !bad; i++) {
		if (p->ops[i].append)
			bad = hc_add_append(a->h, t, (uint32_t)p->ops[i].key, p->ops[i].val) != 0;
		else if (status == HC_OK && seen)
			bad = hc_add_read(a->h, t, (uint32_t)p->ops[i].key, seen[i], nseen[i]) != 0;
	}
	if (bad)
		work_anomaly(&a->w, "out of memory recording the history");
}

static int okv_add(app *a, int k, uint64_t v)
{
	uint64_t *q = realloc(a->okv[k], (a->nok[k] + 1) * sizeof(*q));

	if (!q)
		return -1;
	q[a->nok[k]++] = v;
	a->okv[k] = q;
	return 0;
}

/* append_blind_run: a cell "w" of the first appended key's row, written
 * blind before any read (the checker reads only "l"). */
static int touch_first(mrtx_txn *t, const pending *p, const char **call)
{
	char row[16];

	for (int i = 0; i < p->n; i++) {
		if (!p->ops[i].append)
			continue;
		key_row(p->ops[i].key, row);
		*call = "mrtx_put";
		return mrtx_put(t, key_table(p->ops[i].key), MRTX_CSTR(row), "f", MRTX_CSTR("w"),
		                MRTX_CSTR("1"));
	}
	return MRTX_OK;
}

static void do_txn(app *a, mrtx_db *db, int ci)
{
	pending *p = &a->pend[ci];
	uint64_t *seen[MAX_OPS] = { NULL };
	size_t nseen[MAX_OPS] = { 0 }, need[MAX_OPS];
	const char *call = "mrtx_begin";
	mrtx_txn *t = NULL;
	char text[400];
	int rc, at = 0, status;

	plan(a, ci, p);
	{
		int w = 0;

		for (int i = 0; i < p->n; i++) {
			w += snprintf(text + w, sizeof(text) - (size_t)w, " %c%d",
			              p->ops[i].append ? 'a' : 'r', p->ops[i].key);
			if (p->ops[i].append)
				w += snprintf(text + w, sizeof(text) - (size_t)w, "=%" PRIu64,
				              p->ops[i].val);
			need[i] = a->nok[p->ops[i].key];
		}
		sim_trace("txn %d.%" PRIu32 ":%s", ci, p->seq, text);
	}
	rc = mrtx_begin(db, &t);
	if (sim_dead())
		goto dead;
	if (rc == MRTX_OK && a->blind_first)
		rc = touch_first(t, p, &call);
	if (sim_dead())
		goto dead;
	for (; rc == MRTX_OK && at < p->n; at++) {
		const mop *o = &p->ops[at];
		mrtx_bytes raw;

		call = "mrtx_get";
		rc = get_list(t, o->key, &raw, &seen[at], &nseen[at]);
		if (sim_dead())
			goto dead;
		if (rc) {
			sim_trace("%s k%d %s", o->append ? "append" : "read", o->key,
			          mrtx_strerror(rc));
			break;
		}
		list_text(seen[at], nseen[at], text, sizeof(text));
		sim_trace("%s k%d ts %llu %s", o->append ? "append" : "read", o->key,
		          (unsigned long long)mrtx_txn_snapshot_ts(t), text);
		if (o->append) {
			call = "mrtx_put";
			rc = put_appended(t, o->key, raw, o->val);
			if (sim_dead())
				goto dead;
		}
	}
	if (rc) {
		/* before the commit: nothing was written */
		mrtx_abort(t);
		t = NULL;
		if (rc == MRTX_NOTFOUND)
			work_anomaly(&a->w, "txn %d.%" PRIu32 ": key %d read as missing", ci,
			             p->seq, p->ops[at].key);
		else if (rc == MRTX_ECORRUPT)
			work_anomaly(&a->w, "txn %d.%" PRIu32 ": key %d holds an unparsable list",
			             ci, p->seq, p->ops[at].key);
		else if (!work_allowed(rc, 0))
			work_anomaly(&a->w, "txn %d.%" PRIu32 ": %s returned %s (%s)", ci, p->seq,
			             call, mrtx_strerror(rc), mrtx_errmsg());
		status = HC_FAIL;
	} else {
		call = "mrtx_commit";
		rc = mrtx_commit(t);
		t = NULL; /* (freed, whatever the result) */
		if (sim_dead())
			goto dead;
		if (!work_allowed(rc, 1))
			work_anomaly(&a->w, "txn %d.%" PRIu32 ": mrtx_commit returned %s (%s)", ci,
			             p->seq, mrtx_strerror(rc), mrtx_errmsg());
		status = rc == MRTX_OK ? HC_OK
		         : rc == MRTX_EUNKNOWN || !work_allowed(rc, 1) ? HC_UNKNOWN : HC_FAIL;
	}
	sim_trace("txn %d.%" PRIu32 " %s", ci, p->seq, mrtx_strerror(rc));
	if (status == HC_OK) {
		for (int i = 0; i < p->n; i++) {
			int k = p->ops[i].key;

			for (size_t j = 0; j < need[i]; j++) {
				size_t m = 0;

				while (m < nseen[i] && seen[i][m] != a->okv[k][j])
					m++;
				if (m == nseen[i]) {
					work_anomaly(&a->w, "txn %d.%" PRIu32
					             ": its read of key %d missed %" PRIu64
					             ", whose append's commit returned before it began",
					             ci, p->seq, k, a->okv[k][j]);
					break;
				}
			}
		}
		for (int i = 0; i < p->n; i++)
			if (p->ops[i].append && okv_add(a, p->ops[i].key, p->ops[i].val))
				work_anomaly(&a->w, "out of memory");
	}
	record(a, ci, p, status, seen, nseen);
	p->open = 0;
	a->w.res->committed += status == HC_OK;
	a->w.res->unknown += status == HC_UNKNOWN;
	a->w.res->failed += status == HC_FAIL;
dead:
	/* a dead client's pending transaction stays open (unknown); it
	 * touches nothing shared from here on */
	if (t)
		mrtx_abort(t);
	for (int i = 0; i < MAX_OPS; i++)
		free(seen[i]);
}

static void client_body(int ci, void *arg)
{
	app *a = arg;
	mrtx_db *db;

	if (work_client_open(&a->w, &db))
		return;
	for (int n = 0; n < a->w.cfg->txns && !sim_dead(); n++)
		do_txn(a, db, ci);
	mrtx_close(db);
}

/* ------------------------------------------------------ setup and end */

static int setup(app *a)
{
	mrtx_db *db;
	int k = a->w.cfg->accounts, rc;
	char mid[16], row[16];
	mrtx_bytes split;

	if ((rc = work_open_db(&a->w, &db)))
		return rc;
	key_row(k / 2, mid);
	split = MRTX_CSTR(mid);
	if ((rc = mrtx_create_table_split(db, "a", fam, 1, &split, 1)) ||
	    (rc = mrtx_create_table_split(db, "b", fam, 1, &split, 1)))
		goto done;
	/* every key starts as a row holding the empty list */
	for (int i = 0; i < k && !rc; i += 8) {
		mrtx_txn *t;

		if ((rc = mrtx_begin(db, &t)))
			break;
		for (int j = i; j < k && j < i + 8 && !rc; j++) {
			key_row(j, row);
			rc = mrtx_put(t, key_table(j), MRTX_CSTR(row), "f", MRTX_CSTR("l"),
			              MRTX_BYTES("", 0));
		}
		rc = rc ? (mrtx_abort(t), rc) : mrtx_commit(t);
	}
done:
	mrtx_close(db);
	return rc;
}

/* Read every key's list in one transaction into lists[] (malloc'd).
 * *call names the call that failed. */
static int read_all(app *a, mrtx_db *db, uint64_t **lists, size_t *n, const char **call)
{
	mrtx_txn *t;
	int rc = MRTX_OK;

	*call = "mrtx_begin";
	if ((rc = mrtx_begin(db, &t)))
		return rc;
	*call = "mrtx_get";
	for (int k = 0; k < a->w.cfg->accounts; k++) {
		mrtx_bytes raw;

		free(lists[k]);
		if ((rc = get_list(t, k, &raw, &lists[k], &n[k]))) {
			mrtx_abort(t);
			return rc;
		}
	}
	*call = "mrtx_commit";
	return mrtx_commit(t);
}

static void final_check(app *a)
{
	static const char *const tables[2] = { "a", "b" };
	int nk = a->w.cfg->accounts, rc;
	const char *call = "";
	uint64_t **again = calloc((size_t)nk, sizeof(*again));
	size_t *nagain = calloc((size_t)nk, sizeof(*nagain));
	mrtx_db *db;
	char text[400];

	if (!again || !nagain) {
		work_anomaly(&a->w, "final: out of memory");
		goto out;
	}
	if (work_final_open(&a->w, &db))
		goto out;
	for (int tries = 0; tries < FINAL_TRIES; tries++)
		if ((rc = read_all(a, db, a->final, a->nfinal, &call)) != MRTX_ELOCKED &&
		    rc != MRTX_CONFLICT)
			break;
	sim_trace("final read %s", mrtx_strerror(rc));
	if (rc) {
		work_anomaly(&a->w, "final: %s returned %s (%s)", call, mrtx_strerror(rc),
		             mrtx_errmsg());
	} else {
		for (int k = 0; k < nk; k++) {
			list_text(a->final[k], a->nfinal[k], text, sizeof(text));
			sim_trace("final k%d %s", k, text);
			if (hc_set_final(a->h, (uint32_t)k, a->final[k], a->nfinal[k]))
				work_anomaly(&a->w, "final: out of memory");
		}
	}
	work_sweep(&a->w, db, tables, 2);
	/* the sweep changes no list the final read settled */
	if ((rc = read_all(a, db, again, nagain, &call)))
		work_anomaly(&a->w, "final: after the sweep %s returned %s (%s)", call,
		             mrtx_strerror(rc), mrtx_errmsg());
	for (int k = 0; k < nk && !rc; k++)
		if (nagain[k] != a->nfinal[k] ||
		    (nagain[k] && memcmp(again[k], a->final[k], nagain[k] * sizeof(uint64_t)))) {
			work_anomaly(&a->w,
			             "final: key %d's list changed across the recovery sweep "
			             "(%zu values, then %zu)", k, a->nfinal[k], nagain[k]);
			break;
		}
	mrtx_close(db);
out:
	for (int k = 0; again && k < nk; k++)
		free(again[k]);
	free(again);
	free(nagain);
}

/* Hold the history to mrtx's promise on RADOS (chaos_check.c's mode for
 * rados:// stores): every anomaly the checker reports is one of the run. */
static void check_history(app *a)
{
	hc_report r;

	if (hc_check_mode(a->h, HC_SNAPSHOT_READONLY, &r)) {
		work_anomaly(&a->w, "history check: out of memory");
		return;
	}
	sim_trace("history: %zu ok %zu failed %zu unknown (%zu visible); edges ww %zu wr %zu "
	          "rw %zu; anomalies %zu", r.ok, r.failed, r.unknown, r.unknown_visible,
	          r.edges[0], r.edges[1], r.edges[2], r.total);
	for (size_t i = 0; i < r.nanomalies; i++)
		work_anomaly(&a->w, "%s: %s", hc_anomaly_name(r.anomalies[i].type),
		             r.anomalies[i].text);
	/* those the report only counted */
	if (r.total > r.nanomalies)
		a->w.res->anomalies += r.total - r.nanomalies;
	hc_report_free(&r);
}

static int setup_step(void *arg)
{
	return setup(arg);
}

/* the transactions of clients that died: outcome unknown */
static void ended_step(void *arg)
{
	app *a = arg;

	for (int ci = 0; ci < a->w.cfg->clients; ci++)
		if (a->pend[ci].open) {
			sim_trace("txn %d.%" PRIu32 " died", ci, a->pend[ci].seq);
			record(a, ci, &a->pend[ci], HC_UNKNOWN, NULL, NULL);
			a->w.res->unknown++;
		}
}

static void final_step(void *arg)
{
	final_check(arg);
	check_history(arg);
}

static const work_ops ops = { setup_step, client_body, ended_step, final_step };

static unsigned long run(uint64_t seed, const bank_cfg *cfg, bank_result *out,
                         int blind_first)
{
	size_t nk = (size_t)cfg->accounts, nc = (size_t)cfg->clients;
	app a;

	memset(out, 0, sizeof(*out));
	memset(&a, 0, sizeof(a));
	a.blind_first = blind_first;
	a.w.cfg = cfg;
	a.w.res = out;
	a.next_val = 1;
	a.h = hc_new();
	a.pend = calloc(nc, sizeof(*a.pend));
	a.seq = calloc(nc, sizeof(*a.seq));
	a.okv = calloc(nk, sizeof(*a.okv));
	a.nok = calloc(nk, sizeof(*a.nok));
	a.final = calloc(nk, sizeof(*a.final));
	a.nfinal = calloc(nk, sizeof(*a.nfinal));
	if (!a.h || !a.pend || !a.seq || !a.okv || !a.nok || !a.final || !a.nfinal) {
		out->anomalies = 1;
		snprintf(out->first, sizeof(out->first), "out of memory");
		goto out;
	}
	work_addr(&a.w, "append", cfg->split_rows);
	work_run(&a.w, seed, &ops, &a);
out:
	for (size_t k = 0; k < nk; k++) {
		if (a.okv)
			free(a.okv[k]);
		if (a.final)
			free(a.final[k]);
	}
	free(a.okv);
	free(a.nok);
	free(a.final);
	free(a.nfinal);
	free(a.pend);
	free(a.seq);
	hc_free(a.h);
	return out->anomalies;
}

unsigned long append_run(uint64_t seed, const bank_cfg *cfg, bank_result *out)
{
	return run(seed, cfg, out, 0);
}

unsigned long append_blind_run(uint64_t seed, const bank_cfg *cfg, bank_result *out)
{
	return run(seed, cfg, out, 1);
}
