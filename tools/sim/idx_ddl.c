/*
 * idx_ddl.c - the reindex workload's own part (idx.h): a second index,
 * by_n on p's column n (index table pn, no clustered copy), that two
 * clients drop (mrtx_drop_index) and declare again (mrtx_create_index, with
 * its backfill) while the others write p; its checks, and its final check.
 *
 * What the checker knows of by_n: nready is 1 from the return of a
 * create that no drop overlapped until the next drop begins; ndrops counts
 * the drops begun, nlive those not returned (a drop whose client died
 * stays: its held writes may still land).  A read transaction that began while nready was 1 and
 * committed must find by_n equal to p's column n (mrtx_create_index: once
 * the backfill has ended, data and index never disagree).  A drop begun
 * since allows the answers of a dropped index (MRTX_EINVAL: no such index;
 * MRTX_ENOTABLE: its table gone); so does a check begun while nready was 0.
 */
#include "idx_int.h"

#include "mrtx.h"

#include <stdio.h>
#include <string.h>

static void by_n_spec(mrtx_index_spec *s)
{
	memset(s, 0, sizeof(*s));
	s->version = MRTX_INDEX_SPEC_VERSION;
	s->name = IDX_BY_N;
	s->table = "p";
	s->family = "f";
	s->qualifier = MRTX_CSTR("n");
	s->index_table = IDX_BY_N_TABLE;
}

int idx_create_by_n(mrtx_db *db)
{
	mrtx_index_spec s;

	by_n_spec(&s);
	return mrtx_create_index(db, &s);
}

/* Is rc an answer mrtx_create_index or mrtx_drop_index may give under
 * the simulated faults and the other client's DDL? */
static int ddl_allowed(int rc, int drop)
{
	/* (a create's backfill is transactions: a commit's outcome unknown) */
	if (work_allowed(rc, !drop) && rc != MRTX_EBADTXN && rc != MRTX_ESNAPSHOT)
		return 1;
	/* a drop of a dropped index; a create whose table a drop took */
	return drop ? rc == MRTX_EINVAL : rc == MRTX_ENOTABLE;
}

void idx_do_reindex(ix *x, mrtx_db *db)
{
	int drop = (int)sim_rand(3) ? x->nready : !x->nready, rc, live0 = x->nlive;
	unsigned long d0 = x->ndrops;

	sim_trace("%s by_n", drop ? "drop" : "create");
	if (drop) {
		x->nready = 0;
		x->ndrops++;
		x->nlive++;
		rc = mrtx_drop_index(db, IDX_BY_N);
	} else {
		rc = idx_create_by_n(db);
	}
	if (sim_dead())
		return;
	x->nlive -= drop;
	sim_trace("%s by_n %s", drop ? "drop" : "create", mrtx_strerror(rc));
	/* (a drop begun before the create, in flight, may retire it after) */
	if (!drop && rc == MRTX_OK && x->ndrops == d0 && !live0)
		x->nready = 1;
	if (!ddl_allowed(rc, drop))
		work_anomaly(&x->w, "%s: %s (%s)", drop ? "mrtx_drop_index" : "mrtx_create_index",
		             mrtx_strerror(rc), mrtx_errmsg());
	work_count(&x->w, rc);
}

void idx_do_n_check(ix *x, mrtx_db *db)
{
	int ready = x->nready, rc;
	unsigned long d0 = x->ndrops;
	const char *call;
	char msg[200];

	sim_trace("by_n check (%s)", ready ? "ready" : "not ready");
	rc = idx_check_txn(x, db, 0, IDX_BY_N, NULL, msg, sizeof(msg), &call);
	if (sim_dead())
		return;
	sim_trace("by_n check %s", mrtx_strerror(rc));
	ready = ready && x->ndrops == d0;
	if (rc == MRTX_OK && msg[0] && ready)
		work_anomaly(&x->w, "by_n check: %s", msg);
	else if (rc == MRTX_NOTFOUND ||
	         !(work_allowed(rc, 0) ||
	           (!ready && (rc == MRTX_EINVAL || rc == MRTX_ENOTABLE))))
		work_anomaly(&x->w, "by_n check: %s returned %s (%s)", call, mrtx_strerror(rc),
		             mrtx_errmsg());
	work_count(&x->w, rc);
}

/* Retry a call while it meets a lock or a conflict; its last answer. */
static int final_call(ix *x, mrtx_db *db, int drop, const char **call)
{
	int rc = MRTX_OK;

	*call = drop ? "mrtx_drop_index" : "mrtx_create_index";
	for (int tries = 0; tries < 10; tries++) {
		rc = drop ? mrtx_drop_index(db, IDX_BY_N) : idx_create_by_n(db);
		sim_trace("final: %s %s", *call, mrtx_strerror(rc));
		if (rc != MRTX_ELOCKED && rc != MRTX_CONFLICT)
			break;
	}
	(void)x;
	return rc;
}

/* One read-write transaction renumbering one of p's rows (or none). */
static int renumber(mrtx_txn *t, void *arg)
{
	mrtx_scan_spec sp = { 0 };
	mrtx_scanner *s;
	mrtx_cell c;
	int rc;

	(void)arg;
	sp.table = "p";
	sp.family = "f";
	if ((rc = mrtx_scan_open(t, &sp, &s)))
		return rc;
	rc = mrtx_scan_next(s, &c);
	if (rc == MRTX_OK)
		rc = mrtx_put(t, "p", c.row, "f", MRTX_CSTR("n"), MRTX_CSTR("n.final"));
	mrtx_scan_close(s);
	return rc == MRTX_NOTFOUND ? MRTX_OK : rc;
}

void idx_reindex_final(ix *x, mrtx_db *db)
{
	const char *call = "";
	char msg[200];
	int rc;

	/* whatever the clients left half done, one create makes it whole */
	if ((rc = final_call(x, db, 0, &call)) == MRTX_OK) {
		rc = idx_check_final(x, db, IDX_BY_N, msg, sizeof(msg), &call);
		if (rc == MRTX_OK && msg[0]) {
			work_anomaly(&x->w, "final by_n: %s", msg);
			return;
		}
	}
	/* then a drop takes the index and its table, and p stays writable */
	if (rc == MRTX_OK)
		rc = final_call(x, db, 1, &call);
	if (rc) {
		work_anomaly(&x->w, "final by_n: %s returned %s (%s)", call, mrtx_strerror(rc),
		             mrtx_errmsg());
		return;
	}
	if ((rc = mrtx_drop_index(db, IDX_BY_N)) != MRTX_EINVAL)
		work_anomaly(&x->w, "final by_n: a second mrtx_drop_index returned %s (%s)",
		             mrtx_strerror(rc), mrtx_errmsg());
	if ((rc = mrtx_drop_table(db, IDX_BY_N_TABLE)) != MRTX_ENOTABLE)
		work_anomaly(&x->w, "final by_n: the dropped index's table: mrtx_drop_table "
		             "returned %s (%s)", mrtx_strerror(rc), mrtx_errmsg());
	if ((rc = mrtx_run(db, renumber, NULL, 10)))
		work_anomaly(&x->w, "final by_n: a write of p after the drop returned %s (%s)",
		             mrtx_strerror(rc), mrtx_errmsg());
}
