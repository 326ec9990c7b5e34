/*
 * bank.c - the bank workload and its checker (bank.h).
 */
#include "bank.h"

#include "mrtx.h"
#include "storage/sim/simrados.h"
#include "txn/admin.h"
#include "txn/txn_test.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define START_BALANCE 100
#define LOCK_TTL_MS 5000

typedef struct bank {
	const bank_cfg *cfg;
	char addr[128];
	bank_result *res;
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

static void anomaly(bank *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void anomaly(bank *b, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sim_trace("ANOMALY %s", msg);
	if (b->res->anomalies++ == 0)
		snprintf(b->res->first, sizeof(b->res->first), "%s", msg);
}

/* Is rc one mrtx.h allows from this call under the simulated faults?
 * Timeouts surface as MRTX_ESTORE (before the commit point) or
 * MRTX_EUNKNOWN (at it). */
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

static int open_db(bank *b, mrtx_db **db)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	mrtx__knobs k = { 0, 0, 1 };

	o.durability = MRTX_NOSYNC;
	o.lock_ttl_ms = LOCK_TTL_MS;
	return mrtx__open_knobs(db, b->addr, &o, &k);
}

static int get_balance(mrtx_txn *t, int i, long *out)
{
	char row[16], buf[32];
	mrtx_bytes v;
	int rc;

	acct_row(i, row);
	if ((rc = mrtx_get(t, acct_table(i), MRTX_CSTR(row), "f", MRTX_CSTR("bal"), &v)))
		return rc;
	if (v.size == 0 || v.size >= sizeof(buf))
		return MRTX_ECORRUPT;
	memcpy(buf, v.data, v.size);
	buf[v.size] = '\0';
	*out = strtol(buf, NULL, 10);
	return MRTX_OK;
}

static int put_balance(mrtx_txn *t, int i, long bal)
{
	char row[16], buf[32];

	acct_row(i, row);
	snprintf(buf, sizeof(buf), "%ld", bal);
	return mrtx_put(t, acct_table(i), MRTX_CSTR(row), "f", MRTX_CSTR("bal"), MRTX_CSTR(buf));
}

/* ------------------------------------------------------------ clients */

typedef struct transfer {
	int from, to;
	long amount;
	int notfound; /* an account read as missing */
} transfer;

static int transfer_fn(mrtx_txn *t, void *arg)
{
	transfer *x = arg;
	long a, c;
	int rc;

	if ((rc = get_balance(t, x->from, &a)) || (rc = get_balance(t, x->to, &c))) {
		x->notfound |= rc == MRTX_NOTFOUND;
		if (!sim_dead())
			sim_trace("transfer read %s", mrtx_strerror(rc));
		return rc;
	}
	sim_trace("transfer ts %llu read %ld %ld", (unsigned long long)mrtx_txn_snapshot_ts(t), a,
	          c);
	if ((rc = put_balance(t, x->from, a - x->amount)))
		return rc;
	return put_balance(t, x->to, c + x->amount);
}

static void do_transfer(bank *b, mrtx_db *db)
{
	transfer x;
	int rc;

	x.from = (int)sim_rand((uint64_t)b->cfg->accounts);
	x.to = (x.from + 1 + (int)sim_rand((uint64_t)b->cfg->accounts - 1)) % b->cfg->accounts;
	x.amount = 1 + (long)sim_rand(20);
	x.notfound = 0;
	sim_trace("transfer %d->%d %ld", x.from, x.to, x.amount);
	rc = mrtx_run(db, transfer_fn, &x, 10);
	if (sim_dead())
		return;
	sim_trace("transfer %s", mrtx_strerror(rc));
	if (x.notfound)
		anomaly(b, "transfer %d->%d: an account read as missing", x.from, x.to);
	if (!allowed(rc, 1))
		anomaly(b, "transfer: mrtx_run returned %s (%s)", mrtx_strerror(rc), mrtx_errmsg());
	b->res->committed += rc == MRTX_OK;
	b->res->unknown += rc == MRTX_EUNKNOWN;
	b->res->failed += rc != MRTX_OK && rc != MRTX_EUNKNOWN;
}

/* Sum every account in one read-only transaction: MRTX_OK and *sum, or
 * the first failure.  *call names the call that failed. */
static int sum_all(bank *b, mrtx_db *db, long *sum, const char **call)
{
	mrtx_txn *t;
	long bal;
	int rc;

	*sum = 0;
	*call = "mrtx_begin";
	if ((rc = mrtx_begin(db, &t)))
		return rc;
	*call = "mrtx_get";
	for (int i = 0; i < b->cfg->accounts; i++) {
		if ((rc = get_balance(t, i, &bal))) {
			mrtx_abort(t);
			return rc;
		}
		*sum += bal;
		if (!sim_dead())
			sim_trace("read acct%03d = %ld at ts %llu", i, bal,
			          (unsigned long long)mrtx_txn_snapshot_ts(t));
	}
	*call = "mrtx_commit";
	return mrtx_commit(t);
}

static void do_audit(bank *b, mrtx_db *db)
{
	long total = (long)b->cfg->accounts * START_BALANCE, sum;
	const char *call;
	int rc;

	sim_trace("audit");
	rc = sum_all(b, db, &sum, &call);
	if (sim_dead())
		return;
	sim_trace("audit %s sum %ld", mrtx_strerror(rc), sum);
	if (rc == MRTX_OK && sum != total)
		anomaly(b, "audit: committed a sum of %ld, not %ld", sum, total);
	else if (rc == MRTX_NOTFOUND)
		anomaly(b, "audit: an account read as missing");
	else if (!allowed(rc, 0))
		anomaly(b, "audit: %s returned %s (%s)", call, mrtx_strerror(rc), mrtx_errmsg());
	b->res->committed += rc == MRTX_OK;
	b->res->failed += rc != MRTX_OK;
}

static void client_body(int ci, void *arg)
{
	bank *b = arg;
	mrtx_db *db = NULL;
	int rc = MRTX_ESTORE;

	(void)ci;
	for (int tries = 0; tries < 5 && rc; tries++) {
		rc = open_db(b, &db);
		if (sim_dead())
			return;
		sim_trace("open %s", mrtx_strerror(rc));
		if (rc && rc != MRTX_ESTORE)
			anomaly(b, "mrtx_open returned %s (%s)", mrtx_strerror(rc), mrtx_errmsg());
	}
	if (rc)
		return;
	for (int n = 0; n < b->cfg->txns && !sim_dead(); n++) {
		if (sim_rand(5) == 0)
			do_audit(b, db);
		else
			do_transfer(b, db);
	}
	mrtx_close(db);
}

/* ------------------------------------------------------ setup and end */

static int setup(bank *b)
{
	mrtx_db *db;
	int k = b->cfg->accounts, rc;
	char mid[16];
	mrtx_bytes split;

	if ((rc = open_db(b, &db)))
		return rc;
	acct_row(k / 2, mid);
	split = MRTX_CSTR(mid);
	if ((rc = mrtx_create_table_split(db, "a", fam, 1, &split, 1)) ||
	    (rc = mrtx_create_table_split(db, "b", fam, 1, &split, 1)))
		goto done;
	for (int i = 0; i < k && !rc; i += 8) {
		mrtx_txn *t;

		if ((rc = mrtx_begin(db, &t)))
			break;
		for (int j = i; j < k && j < i + 8 && !rc; j++)
			rc = put_balance(t, j, START_BALANCE);
		rc = rc ? (mrtx_abort(t), rc) : mrtx_commit(t);
	}
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

static void final_check(bank *b)
{
	long total = (long)b->cfg->accounts * START_BALANCE, sum = 0;
	recover_opts ro = { 1000, 0, 0 };
	recover_stats rs;
	unsigned long left = 0;
	const char *call = "";
	mrtx_db *db;
	int rc;

	if ((rc = open_db(b, &db))) {
		anomaly(b, "final: mrtx_open returned %s (%s)", mrtx_strerror(rc), mrtx_errmsg());
		return;
	}
	for (int tries = 0; tries < 20; tries++)
		if ((rc = sum_all(b, db, &sum, &call)) != MRTX_ELOCKED && rc != MRTX_CONFLICT)
			break;
	sim_trace("final sum %s %ld", mrtx_strerror(rc), sum);
	if (rc)
		anomaly(b, "final: %s returned %s (%s)", call, mrtx_strerror(rc), mrtx_errmsg());
	else if (sum != total)
		anomaly(b, "final: the accounts sum to %ld, not %ld", sum, total);
	memset(&rs, 0, sizeof(rs));
	if ((rc = admin_recover(db, &ro, &rs, NULL, NULL)))
		anomaly(b, "final: the recovery sweep returned %s (%s)", mrtx_strerror(rc),
		        mrtx_errmsg());
	sim_trace("sweep seen %lu forwarded %lu rolled back %lu live %lu errors %lu",
	          rs.locks_seen, rs.forwarded, rs.rolled_back, rs.skipped_live, rs.errors);
	if ((rc = admin_locks(db, "a", count_lock, &left)) ||
	    (rc = admin_locks(db, "b", count_lock, &left)))
		anomaly(b, "final: listing the locks returned %s (%s)", mrtx_strerror(rc),
		        mrtx_errmsg());
	else if (left)
		anomaly(b, "final: %lu lock record(s) left unsettled after the sweep", left);
	if ((rc = sum_all(b, db, &sum, &call)) || sum != total)
		anomaly(b, "final: after the sweep %s returned %s, sum %ld", call, mrtx_strerror(rc),
		        sum);
	mrtx_close(db);
}

unsigned long bank_run(uint64_t seed, const bank_cfg *cfg, bank_result *out)
{
	bank b;
	int rc;

	memset(out, 0, sizeof(*out));
	b.cfg = cfg;
	b.res = out;
	if (cfg->split_rows)
		snprintf(b.addr, sizeof(b.addr), "rados://mrtx/bank?split_rows=%u", cfg->split_rows);
	else
		snprintf(b.addr, sizeof(b.addr), "rados://mrtx/bank");
	simr_reset();
	(void)simr_pool_create("mrtx");
	sim_start(seed, &cfg->faults, cfg->clients, cfg->trace);
	if ((rc = setup(&b)) != MRTX_OK) {
		anomaly(&b, "setup: %s (%s)", mrtx_strerror(rc), mrtx_errmsg());
	} else {
		sim_run(client_body, &b);
		/* every lock a dead or timed-out client left is past its expiry */
		sim_settle(2ull * LOCK_TTL_MS * 1000u + 1000000u);
		final_check(&b);
	}
	out->hash = sim_finish();
	for (int k = 0; k < SIM_NFAULTS; k++)
		out->faults[k] = sim_faults_seen(k);
	return out->anomalies;
}
