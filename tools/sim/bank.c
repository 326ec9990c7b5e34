/*
 * bank.c - the bank workload and its checker (bank.h).
 */
#include "bank.h"
#include "work.h"

#include "mrtx.h"
#include "storage/sim/simrados.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define START_BALANCE 100
#define SLOTS 2  /* claimable slots in table u */
#define PAIRS 4  /* on-call pairs in table w */

/*
 * Each account's value is "BALANCE VERSION"; a transfer raises both rows'
 * versions by one.  maxver[i] is the highest version of account i that a
 * transfer whose commit returned OK wrote: a snapshot begun after that
 * return must read at least it (real-time order, DESIGN I17).  One client
 * runs at a time (sched.h), so the array needs no lock.
 */
typedef struct bank {
	work w; /* cfg, addr and res */
	long *maxver;
	int claims; /* claim ops run, for the trace */
} bank;

static const char *const fam[1] = { "f" };

/* Account i lives in table a (even i) or b (odd i). */
static const char *acct_table(int i)
{
	return i % 2 ? "b" : "a";
}

static void acct_row(int i, char row[16])
{
	snprintf(row, 16, "acct%03d", i);
}

static int get_balance(mrtx_txn *t, int i, long *out, long *ver)
{
	char row[16], buf[48], *e;
	mrtx_bytes v;
	int rc;

	acct_row(i, row);
	if ((rc = mrtx_get(t, acct_table(i), MRTX_CSTR(row), "f", MRTX_CSTR("bal"), &v)))
		return rc;
	if (v.size == 0 || v.size >= sizeof(buf))
		return MRTX_ECORRUPT;
	memcpy(buf, v.data, v.size);
	buf[v.size] = '\0';
	*out = strtol(buf, &e, 10);
	*ver = strtol(e, NULL, 10);
	return MRTX_OK;
}

static int put_balance(mrtx_txn *t, int i, long bal, long ver)
{
	char row[16], buf[48];

	acct_row(i, row);
	snprintf(buf, sizeof(buf), "%ld %ld", bal, ver);
	return mrtx_put(t, acct_table(i), MRTX_CSTR(row), "f", MRTX_CSTR("bal"), MRTX_CSTR(buf));
}

/* ------------------------------------------------------------ clients */

typedef struct transfer {
	int from, to;
	long amount;
	long vfrom, vto; /* the versions the last attempt wrote */
	int notfound;    /* an account read as missing */
} transfer;

static int transfer_fn(mrtx_txn *t, void *arg)
{
	transfer *x = arg;
	long a, c, va, vc;
	int rc;

	if ((rc = get_balance(t, x->from, &a, &va)) || (rc = get_balance(t, x->to, &c, &vc))) {
		x->notfound |= rc == MRTX_NOTFOUND;
		if (!sim_dead())
			sim_trace("transfer read %s", mrtx_strerror(rc));
		return rc;
	}
	sim_trace("transfer ts %llu read %ld %ld", (unsigned long long)mrtx_txn_snapshot_ts(t), a,
	          c);
	x->vfrom = va + 1;
	x->vto = vc + 1;
	if ((rc = put_balance(t, x->from, a - x->amount, x->vfrom)))
		return rc;
	return put_balance(t, x->to, c + x->amount, x->vto);
}

static void do_transfer(bank *b, mrtx_db *db)
{
	transfer x;
	int rc;

	x.from = (int)sim_rand((uint64_t)b->w.cfg->accounts);
	x.to = (x.from + 1 + (int)sim_rand((uint64_t)b->w.cfg->accounts - 1)) % b->w.cfg->accounts;
	x.amount = 1 + (long)sim_rand(20);
	x.notfound = 0;
	sim_trace("transfer %d->%d %ld", x.from, x.to, x.amount);
	rc = mrtx_run(db, transfer_fn, &x, 10);
	if (sim_dead())
		return;
	sim_trace("transfer %s", mrtx_strerror(rc));
	if (x.notfound)
		work_anomaly(&b->w, "transfer %d->%d: an account read as missing", x.from, x.to);
	if (!work_allowed(rc, 1))
		work_anomaly(&b->w, "transfer: mrtx_run returned %s (%s)", mrtx_strerror(rc),
		             mrtx_errmsg());
	if (rc == MRTX_OK) {
		b->maxver[x.from] = x.vfrom > b->maxver[x.from] ? x.vfrom : b->maxver[x.from];
		b->maxver[x.to] = x.vto > b->maxver[x.to] ? x.vto : b->maxver[x.to];
	}
	work_count(&b->w, rc);
}

/* Sum every account in one read-only transaction: MRTX_OK and *sum, or
 * the first failure.  *call names the call that failed.  *stale is the
 * first account read below a version whose commit returned before the
 * transaction began (-1: none). */
static int sum_all(bank *b, mrtx_db *db, long *sum, const char **call, int *stale)
{
	long bal, ver, need[1000];
	mrtx_txn *t;
	int rc;

	*sum = 0;
	*stale = -1;
	memcpy(need, b->maxver, (size_t)b->w.cfg->accounts * sizeof(long));
	*call = "mrtx_begin";
	if ((rc = mrtx_begin(db, &t)))
		return rc;
	*call = "mrtx_get";
	for (int i = 0; i < b->w.cfg->accounts; i++) {
		if ((rc = get_balance(t, i, &bal, &ver))) {
			mrtx_abort(t);
			return rc;
		}
		*sum += bal;
		if (ver < need[i] && *stale < 0)
			*stale = i;
		if (!sim_dead())
			sim_trace("read acct%03d = %ld at ts %llu", i, bal,
			          (unsigned long long)mrtx_txn_snapshot_ts(t));
	}
	*call = "mrtx_commit";
	return mrtx_commit(t);
}

static void do_audit(bank *b, mrtx_db *db)
{
	long total = (long)b->w.cfg->accounts * START_BALANCE, sum;
	const char *call;
	int rc, stale;

	sim_trace("audit");
	rc = sum_all(b, db, &sum, &call, &stale);
	if (sim_dead())
		return;
	sim_trace("audit %s sum %ld", mrtx_strerror(rc), sum);
	if (rc == MRTX_OK && sum != total)
		work_anomaly(&b->w, "audit: committed a sum of %ld, not %ld", sum, total);
	else if (rc == MRTX_OK && stale >= 0)
		work_anomaly(&b->w,
		             "audit: its snapshot missed a transfer of account %d whose commit "
		             "returned before it began", stale);
	else if (rc == MRTX_NOTFOUND)
		work_anomaly(&b->w, "audit: an account read as missing");
	else if (!work_allowed(rc, 0))
		work_anomaly(&b->w, "audit: %s returned %s (%s)", call, mrtx_strerror(rc),
		             mrtx_errmsg());
	b->w.res->committed += rc == MRTX_OK;
	b->w.res->failed += rc != MRTX_OK;
}

/* ---------------------------------------------------------- claims
 *
 * A claim scans slot s's rows in table u: none, it inserts one; one, it
 * deletes it every other time.  With scanned ranges validated a slot never
 * holds two rows, however claims interleave; a committed claim that saw
 * two is a phantom that got through. */

typedef struct claim {
	int slot, client, n;
	int seen; /* rows the last attempt found in the slot */
} claim;

static int claim_fn(mrtx_txn *t, void *arg)
{
	claim *c = arg;
	char lo[16], hi[16], row[32];
	mrtx_scan_spec sp = { 0 };
	mrtx_scanner *s;
	mrtx_cell cell;
	int rc;

	snprintf(lo, sizeof(lo), "s%02d-", c->slot);
	snprintf(hi, sizeof(hi), "s%02d.", c->slot); /* ('.' follows '-') */
	sp.table = "u";
	sp.start = MRTX_CSTR(lo);
	sp.end = MRTX_CSTR(hi);
	if ((rc = mrtx_scan_open(t, &sp, &s)))
		return rc;
	c->seen = 0;
	while ((rc = mrtx_scan_next(s, &cell)) == MRTX_OK) {
		if (c->seen++ == 0) {
			snprintf(row, sizeof(row), "%.*s", (int)cell.row.size,
			         (const char *)cell.row.data);
		}
	}
	mrtx_scan_close(s);
	if (rc != MRTX_NOTFOUND)
		return rc;
	if (c->seen == 1 && c->n % 2)
		return mrtx_delete_row(t, "u", MRTX_CSTR(row));
	if (c->seen)
		return 0;
	snprintf(row, sizeof(row), "s%02d-c%d-%d", c->slot, c->client, c->n);
	return mrtx_put(t, "u", MRTX_CSTR(row), "f", MRTX_CSTR("q"), MRTX_CSTR("1"));
}

static void do_claim(bank *b, mrtx_db *db, int client)
{
	claim c = { (int)sim_rand(SLOTS), client, b->claims++, 0 };
	int rc;

	sim_trace("claim %d", c.slot);
	rc = mrtx_run(db, claim_fn, &c, 10);
	if (sim_dead())
		return;
	sim_trace("claim %s saw %d", mrtx_strerror(rc), c.seen);
	if (rc == MRTX_OK && c.seen > 1)
		work_anomaly(&b->w, "claim: a committed claim saw slot %d hold %d rows (a phantom)",
		             c.slot, c.seen);
	if (!work_allowed(rc, 1))
		work_anomaly(&b->w, "claim: mrtx_run returned %s (%s)", mrtx_strerror(rc),
		             mrtx_errmsg());
	work_count(&b->w, rc);
}

/* -------------------------------------------------------- on call
 *
 * Pair k is two rows of table w, "k.0" and "k.1", each 1 (on call) or 0.
 * Going off call reads both and writes one, only when the other is on
 * call: with the rows read validated at commit, never both go off (a
 * write skew otherwise).  Going on call writes a 1 unread. */

typedef struct oncall {
	int pair, side;
	int both_off; /* the last attempt read both sides off */
} oncall;

static int side_get(mrtx_txn *t, int pair, int side, int *on)
{
	char row[16];
	mrtx_bytes v;
	int rc;

	snprintf(row, sizeof(row), "%d.%d", pair, side);
	rc = mrtx_get(t, "w", MRTX_CSTR(row), "f", MRTX_CSTR("q"), &v);
	*on = rc == MRTX_OK && v.size == 1 && *(const char *)v.data == '1';
	return rc;
}

static int side_put(mrtx_txn *t, int pair, int side, const char *val)
{
	char row[16];

	snprintf(row, sizeof(row), "%d.%d", pair, side);
	return mrtx_put(t, "w", MRTX_CSTR(row), "f", MRTX_CSTR("q"), MRTX_CSTR(val));
}

static int off_fn(mrtx_txn *t, void *arg)
{
	oncall *o = arg;
	int me, other, rc;

	if ((rc = side_get(t, o->pair, o->side, &me)) ||
	    (rc = side_get(t, o->pair, !o->side, &other)))
		return rc;
	o->both_off = !me && !other;
	if (me && other)
		return side_put(t, o->pair, o->side, "0");
	return 0;
}

static int on_fn(mrtx_txn *t, void *arg)
{
	oncall *o = arg;

	return side_put(t, o->pair, o->side, "1");
}

static void do_oncall(bank *b, mrtx_db *db, int off)
{
	oncall o = { (int)sim_rand(PAIRS), (int)sim_rand(2), 0 };
	int rc;

	sim_trace("%s call %d.%d", off ? "off" : "on", o.pair, o.side);
	rc = mrtx_run(db, off ? off_fn : on_fn, &o, 10);
	if (sim_dead())
		return;
	sim_trace("call %s", mrtx_strerror(rc));
	if (!work_allowed(rc, 1))
		work_anomaly(&b->w, "on call: mrtx_run returned %s (%s)", mrtx_strerror(rc),
		             mrtx_errmsg());
	if (rc == MRTX_OK && o.both_off)
		work_anomaly(&b->w,
		             "on call: a committed transaction saw both sides of pair %d off "
		             "(a write skew)", o.pair);
	work_count(&b->w, rc);
}

/* Every slot holds at most one row. */
static void check_claims(bank *b, mrtx_db *db)
{
	int count[SLOTS] = { 0 }, rc;
	mrtx_scan_spec sp = { 0 };
	mrtx_scanner *s;
	mrtx_cell cell;
	mrtx_txn *t = NULL;

	sp.table = "u";
	if ((rc = mrtx_begin(db, &t)) || (rc = mrtx_scan_open(t, &sp, &s))) {
		if (t)
			mrtx_abort(t);
		work_anomaly(&b->w, "final: scanning the claims returned %s (%s)",
		             mrtx_strerror(rc), mrtx_errmsg());
		return;
	}
	while ((rc = mrtx_scan_next(s, &cell)) == MRTX_OK) {
		int slot;

		if (cell.row.size >= 3 && sscanf((const char *)cell.row.data + 1, "%2d", &slot) == 1 &&
		    slot >= 0 && slot < SLOTS)
			count[slot]++;
	}
	mrtx_scan_close(s);
	mrtx_abort(t);
	if (rc != MRTX_NOTFOUND)
		work_anomaly(&b->w, "final: scanning the claims returned %s (%s)",
		             mrtx_strerror(rc), mrtx_errmsg());
	for (int i = 0; i < SLOTS; i++)
		if (count[i] > 1) {
			work_anomaly(&b->w, "claim: slot %d was claimed %d times (a phantom)", i,
			             count[i]);
			break;
		}
}

static void client_body(int ci, void *arg)
{
	bank *b = arg;
	mrtx_db *db;

	if (work_client_open(&b->w, &db))
		return;
	for (int n = 0; n < b->w.cfg->txns && !sim_dead(); n++) {
		uint64_t r = sim_rand(20);

		if (r < 4)
			do_audit(b, db);
		else if (r < 7)
			do_claim(b, db, ci);
		else if (r < 9)
			do_oncall(b, db, 1);
		else if (r < 10)
			do_oncall(b, db, 0);
		else
			do_transfer(b, db);
	}
	mrtx_close(db);
}

/* ------------------------------------------------------ setup and end */

static int setup(bank *b)
{
	mrtx_db *db;
	int k = b->w.cfg->accounts, rc;
	char mid[16];
	mrtx_bytes split;

	if ((rc = work_open_db(&b->w, &db)))
		return rc;
	acct_row(k / 2, mid);
	split = MRTX_CSTR(mid);
	if ((rc = mrtx_create_table_split(db, "a", fam, 1, &split, 1)) ||
	    (rc = mrtx_create_table_split(db, "b", fam, 1, &split, 1)) ||
	    (rc = mrtx_create_table(db, "u", fam, 1)) ||
	    (rc = mrtx_create_table(db, "w", fam, 1)))
		goto done;
	for (int i = 0; i < PAIRS && !rc; i++) {
		mrtx_txn *t;

		if ((rc = mrtx_begin(db, &t)))
			break;
		if ((rc = side_put(t, i, 0, "1")) || (rc = side_put(t, i, 1, "1")))
			mrtx_abort(t);
		else
			rc = mrtx_commit(t);
	}
	for (int i = 0; i < k && !rc; i += 8) {
		mrtx_txn *t;

		if ((rc = mrtx_begin(db, &t)))
			break;
		for (int j = i; j < k && j < i + 8 && !rc; j++)
			rc = put_balance(t, j, START_BALANCE, 0);
		rc = rc ? (mrtx_abort(t), rc) : mrtx_commit(t);
	}
done:
	mrtx_close(db);
	return rc;
}

static void final_check(bank *b)
{
	static const char *const tables[2] = { "a", "b" };
	long total = (long)b->w.cfg->accounts * START_BALANCE, sum = 0;
	const char *call = "";
	mrtx_db *db;
	int rc, stale;

	if (work_final_open(&b->w, &db))
		return;
	for (int tries = 0; tries < 20; tries++)
		if ((rc = sum_all(b, db, &sum, &call, &stale)) != MRTX_ELOCKED &&
		    rc != MRTX_CONFLICT)
			break;
	sim_trace("final sum %s %ld", mrtx_strerror(rc), sum);
	if (rc)
		work_anomaly(&b->w, "final: %s returned %s (%s)", call, mrtx_strerror(rc),
		             mrtx_errmsg());
	else if (sum != total)
		work_anomaly(&b->w, "final: the accounts sum to %ld, not %ld", sum, total);
	work_sweep(&b->w, db, tables, 2);
	check_claims(b, db);
	if ((rc = sum_all(b, db, &sum, &call, &stale)) || sum != total)
		work_anomaly(&b->w, "final: after the sweep %s returned %s, sum %ld", call,
		             mrtx_strerror(rc), sum);
	mrtx_close(db);
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

unsigned long bank_run(uint64_t seed, const bank_cfg *cfg, bank_result *out)
{
	bank b;

	memset(out, 0, sizeof(*out));
	memset(&b, 0, sizeof(b));
	b.w.cfg = cfg;
	b.w.res = out;
	if (!(b.maxver = calloc((size_t)cfg->accounts, sizeof(long)))) {
		out->anomalies = 1;
		snprintf(out->first, sizeof(out->first), "out of memory");
		return 1;
	}
	work_addr(&b.w, "bank", cfg->split_rows);
	work_run(&b.w, seed, &ops, &b);
	free(b.maxver);
	return out->anomalies;
}
