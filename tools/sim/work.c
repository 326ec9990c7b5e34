/*
 * work.c - what every workload shares (work.h).
 */
#include "work.h"
#include "storage/sim/simrados.h"

#include "txn/admin.h"
#include "txn/txn_test.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void work_anomaly(work *w, const char *fmt, ...)
                  {
                  char msg[256];
                  va_list ap;
                  
                  va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sim_trace("ANOMALY %s", msg);
	if (w->res->anomalies++ == 0)
		snprintf(w->res->first, sizeof(w->res->first), "%s", msg);
}

int work_allowed(int rc, int commit)
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

void work_count(work *w, int rc)
{
	w->res->committed += rc == MRTX_OK;
	w->res->unknown += rc == MRTX_EUNKNOWN;
	w->res->failed += rc != MRTX_OK && rc != MRTX_EUNKNOWN;
}

int work_open_db(const work *w, mrtx_db **db)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	/* threads in clients only: setup and the final check run outside */
	mrtx__knobs k = { 0, 0, !(w->cfg->threads && sim_in_client()) };

	o.durability = MRTX_NOSYNC;
	o.lock_ttl_ms = WORK_LOCK_TTL_MS;
	o.create = MRTX_CREATE_IF_MISSING; /* (each seed's own store) */
	return mrtx__open_knobs(db, w->addr, &o, &k);
}

int work_client_open(work *w, mrtx_db **db)
{
	int rc = MRTX_ESTORE;

	*db = NULL;
	for (int tries = 0; tries < 5 && rc; tries++) {
		rc = work_open_db(w, db);
		if (sim_dead())
			return 1;
		sim_trace("open %s", mrtx_strerror(rc));
		if (rc && rc != MRTX_ESTORE)
			work_anomaly(w, "mrtx_open returned %s (%s)", mrtx_strerror(rc),
			             mrtx_errmsg());
	}
	return rc;
}

int work_final_open(work *w, mrtx_db **db)
{
	int rc = work_open_db(w, db);

	if (rc)
		work_anomaly(w, "final: mrtx_open returned %s (%s)", mrtx_strerror(rc),
		             mrtx_errmsg());
	return rc;
}

/* Count (and trace) a lock record that is not STABLE. */
static int count_lock(const admin_lock *l, void *arg)
{
	unsigned long *n = arg;

	if (l->rec && l->rec->state == LOCK_STABLE)
		return 0;
	++*n;
	sim_trace("left: %s row %.*s state %d%s", l->table, (int)l->row.size,
	          (const char *)l->row.data, l->rec ? l->rec->state : -1,
	          l->rec && (l->rec->flags & LOCK_F_SECONDARY) ? " secondary" : "");
	return 0;
}

void work_sweep(work *w, mrtx_db *db, const char *const *tables, int n)
{
	recover_opts ro = { 1000, 0, 0 };
	recover_stats rs;
	unsigned long left = 0;
	int rc;

	memset(&rs, 0, sizeof(rs));
	if ((rc = admin_recover(db, &ro, &rs, NULL, NULL)))
		work_anomaly(w, "final: the recovery sweep returned %s (%s)", mrtx_strerror(rc),
		             mrtx_errmsg());
	sim_trace("sweep seen %lu forwarded %lu rolled back %lu live %lu errors %lu%s%s",
	          rs.locks_seen, rs.forwarded, rs.rolled_back, rs.skipped_live, rs.errors,
	          rs.errors ? ": " : "", rs.errors ? mrtx_errmsg() : "");
	rc = MRTX_OK; /* (the locks are counted whatever the sweep did) */
	for (int i = 0; i < n && !rc; i++)
		rc = admin_locks(db, tables[i], count_lock, &left);
	if (rc)
		work_anomaly(w, "final: listing the locks returned %s (%s)", mrtx_strerror(rc),
		             mrtx_errmsg());
	else if (left)
		work_anomaly(w, "final: %lu lock record(s) left unsettled after the sweep", left);
}

void work_addr(work *w, const char *name, unsigned split_rows)
{
	if (split_rows)
		snprintf(w->addr, sizeof(w->addr), "rados://mrtx/%s?split_rows=%u", name,
		         split_rows);
	else
		snprintf(w->addr, sizeof(w->addr), "rados://mrtx/%s", name);
}

void work_run(work *w, uint64_t seed, const work_ops *ops, void *arg)
{
	const bank_cfg *cfg = w->cfg;
	int rc;

	simr_reset();
	(void)simr_pool_create("mrtx");
	sim_start(seed, &cfg->faults, cfg->clients, cfg->trace);
	if ((rc = ops->setup(arg)) != MRTX_OK) {
		work_anomaly(w, "setup: %s (%s)", mrtx_strerror(rc), mrtx_errmsg());
	} else {
		sim_run(ops->client, arg);
		if (ops->ended)
			ops->ended(arg);
		/* every lock a dead or timed-out client left is past its expiry */
		sim_settle(2ull * WORK_LOCK_TTL_MS * 1000u + 1000000u);
		ops->final(arg);
	}
	w->res->hash = sim_finish();
	for (int k = 0; k < SIM_NFAULTS; k++)
		w->res->faults[k] = sim_faults_seen(k);
}
