/*
 * cmd_admin.c - lock inspection and recovery: locks, lock, recover, stats.
 *
 * These read the lock family below the transaction API (txn/admin.h: its
 * records decoded by lockcf/, settled by recovery/), always in batches of
 * rows from one snapshot each, so they work on stores of any size and never
 * hold an LMDB read transaction for long.
 */
#include "cmds.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "txn/admin.h"
#include "util.h"

/* ------------------------------------------------------------- tables */

/* ------------------------------------------------------------- locks */

static long long ms_since_commit(const lock_rec *r, uint64_t now_ms)
{
	/* commit_ts is the commit's timestamp, microseconds of the wall clock */
	return (long long)now_ms - (long long)(r->commit_ts / 1000u);
}

/* Does r's commit_ts tell a time?  A PREWRITTEN record's is provisional
 * (the commit point stamps the real one), often the timestamp of an
 * older commit. */
static int has_age(const lock_rec *r)
{
	return r->state != LOCK_PREWRITTEN && r->commit_ts != 0;
}

static void print_ref(FILE *f, mrtx_bytes table, mrtx_bytes row)
{
	print_escaped(f, table.data, table.size, ESC_SPACE);
	putc('/', f);
	print_escaped(f, row.data, row.size, ESC_SPACE);
}

static void json_ref(FILE *f, mrtx_bytes table, mrtx_bytes row)
{
	fputs("{\"table\":", f);
	json_bytes(f, table.data, table.size);
	fputs(",\"row\":", f);
	json_bytes(f, row.data, row.size);
	putc('}', f);
}

static mrtx_bytes name_bytes(const char *s)
{
	return MRTX_BYTES(s, strlen(s));
}

/* The fields `locks` and `lock` share, as JSON members (no braces). */
static void json_lock_common(FILE *f, const char *table, mrtx_bytes row,
                             const lock_rec *r, uint64_t now)
{
	char hex[33];
	int secondary = (r->flags & LOCK_F_SECONDARY) != 0;
	int dead = lock_owner_dead(&r->owner);

	lock_txnid_hex(r->txn, hex);
	fputs("\"table\":", f);
	json_str(f, table, strlen(table));
	fputs(",\"row\":", f);
	json_bytes(f, row.data, row.size);
	fprintf(f, ",\"state\":\"%s\",\"txn\":\"%s\",\"commit_ts\":%llu", lock_state_name(r->state),
	        hex, (unsigned long long)r->commit_ts);
	if (r->state == LOCK_STABLE)
		return;
	fprintf(f, ",\"role\":\"%s\",\"primary\":", secondary ? "secondary" : "primary");
	if (secondary)
		json_ref(f, r->primary.table, r->primary.row);
	else
		json_ref(f, name_bytes(table), row);
	fprintf(f, ",\"secondaries\":%zu,\"age_ms\":", secondary ? (size_t)0 : r->nsecondaries);
	if (has_age(r))
		fprintf(f, "%lld", ms_since_commit(r, now));
	else
		fputs("null", f);
	fprintf(f, ",\"expires_in_ms\":%lld,"
	        "\"expired\":%s,\"owner_pid\":%u,\"owner_alive\":%s,\"stale\":%s",
	        (long long)r->expiry_ms - (long long)now, r->expiry_ms <= now ? "true" : "false",
	        (unsigned)r->owner.pid, dead ? "false" : "true",
	        dead || r->expiry_ms <= now ? "true" : "false");
}

/* ---------------------------------------------------------------- locks */

typedef struct locks_ctx {
	int json, state; /* state -1: any non-STABLE */
	unsigned long shown, bad;
	uint64_t now;
} locks_ctx;

static int locks_row(const admin_lock *l, void *p)
{
	locks_ctx *c = p;
	char *tname, *rname, *pname = NULL;
	char hex[33], age[24], expires[24];
	const lock_rec *rec = l->rec;

	if (!rec) { /* (admin_locks reports every record, even one that does not decode) */
		char *e = escape_dup(l->row.data, l->row.size, 0);

		tool_err("locks", "table '%s' row '%s': %s", l->table, e ? e : "?", tool_errmsg(MRTX_ECORRUPT));
		free(e);
		c->bad++;
		return 0;
	}
	if (rec->state == LOCK_STABLE || (c->state >= 0 && rec->state != c->state))
		return 0;
	if (c->json) {
		fputs(c->shown ? ",\n{" : "\n{", stdout);
		json_lock_common(stdout, l->table, l->row, rec, c->now);
		putchar('}');
		c->shown++;
		return 0;
	}
	if (c->shown++ == 0)
		printf("%-10s %-16s %-10s %-32s %-9s %-20s %4s %8s %8s %7s %s\n", "TABLE", "ROW",
		       "STATE", "TXN", "ROLE", "PRIMARY", "SECS", "AGE", "EXPIRES", "PID",
		       "ALIVE");
	lock_txnid_hex(rec->txn, hex);
	tname = escape_dup(l->table, strlen(l->table), ESC_SPACE);
	rname = escape_dup(l->row.data, l->row.size, ESC_SPACE);
	if (rec->flags & LOCK_F_SECONDARY) {
		char *pt = escape_dup(rec->primary.table.data, rec->primary.table.size, ESC_SPACE);
		char *pr = escape_dup(rec->primary.row.data, rec->primary.row.size, ESC_SPACE);

		if (pt && pr && (pname = malloc(strlen(pt) + strlen(pr) + 2)))
			sprintf(pname, "%s/%s", pt, pr);
		free(pt);
		free(pr);
	}
	if (has_age(rec))
		snprintf(age, sizeof(age), "%.1fs", (double)ms_since_commit(rec, c->now) / 1000.0);
	else
		snprintf(age, sizeof(age), "-");
	snprintf(expires, sizeof(expires), "%.1fs",
	         ((double)rec->expiry_ms - (double)c->now) / 1000.0);
	if (!tname || !rname || ((rec->flags & LOCK_F_SECONDARY) && !pname)) {
		free(tname);
		free(rname);
		free(pname);
		return MRTX_ENOMEM;
	}
	printf("%-10s %-16s %-10s %-32s %-9s %-20s %4zu %8s %8s %7u %s\n", tname, rname,
	       lock_state_name(rec->state), hex,
	       rec->flags & LOCK_F_SECONDARY ? "secondary" : "primary", pname ? pname : "-",
	       rec->flags & LOCK_F_SECONDARY ? (size_t)0 : rec->nsecondaries,
	       age, expires, (unsigned)rec->owner.pid,
	       lock_owner_dead(&rec->owner) ? "dead" : "alive");
	free(tname);
	free(rname);
	free(pname);
	return 0;
}

static int parse_state(const char *s)
{
	static const char *const names[] = { "STABLE", "PREWRITTEN", "COMMITTED", "ABORTED" };

	for (int i = 1; i < 4; i++)
		if (strcasecmp(s, names[i]) == 0)
			return i;
	return -1;
}

int cmd_locks(int argc, char **argv)
{
	static const char usage[] = "mrtx locks STORE [--table T] [--state S] [--json]";
	const char *table = NULL, *state = NULL;
	int json = 0, npos, help, rc;
	const tool_opt opts[] = { { "table", 1, &table, NULL }, { "state", 1, &state, NULL },
	                          { "json", 0, NULL, &json }, { NULL, 0, NULL, NULL } };
	char **pos = argv + 1;
	name_list tables = { NULL, 0, 0 };
	locks_ctx c;
	mrtx_db *db;

	if ((rc = args_parse(argv[0], usage, argc, argv, opts, pos, &npos, &help)))
		return rc;
	if (help)
		HELP(usage, "List every non-STABLE lock: table, row, state, txn id, role, the\n"
		     "primary's table/row (secondaries), number of secondaries (primaries),\n"
		     "age since the commit point (- while PREWRITTEN: not yet stamped),\n"
		     "time to expiry (negative: expired), owner pid and liveness.\n"
		     "--table T lists only table T's locks and --state S only the locks in\n"
		     "state S, PREWRITTEN, COMMITTED or ABORTED (default: every table and\n"
		     "every state but STABLE).  --json prints an array of\n"
		     "objects (table, row, state, txn, commit_ts, role, primary{table,row},\n"
		     "secondaries, age_ms (null while PREWRITTEN), expires_in_ms, expired,\n"
		     "owner_pid, owner_alive,\n"
		     "stale); byte strings are in the escaped form.\n");
	if (npos != 1)
		return tool_usage_err(argv[0], usage, "expected STORE");
	memset(&c, 0, sizeof(c));
	c.json = json;
	c.state = -1;
	if (state && (c.state = parse_state(state)) < 0)
		return tool_usage_err(argv[0], usage, "--state must be PREWRITTEN, COMMITTED or "
		                      "ABORTED");
	if ((rc = tool_open(argv[0], pos[0], 0, &db)))
		return rc;
	c.now = admin_now_ms();
	if (table) { /* (a table that is not there is an error before any output) */
		const char *const *fams;
		size_t nf;

		if ((rc = mrtx_table_families(db, table, &fams, &nf))) {
			rc = tool_fail(argv[0], NULL, rc);
			goto out;
		}
	}
	if ((rc = names_list(db, &tables))) {
		rc = tool_fail(argv[0], NULL, rc);
		goto out;
	}
	if (json)
		putchar('[');
	for (size_t i = 0; i < tables.n && rc == 0; i++)
		if (!table || strcmp(table, tables.v[i]) == 0)
			rc = admin_locks(db, tables.v[i], locks_row, &c);
	if (json)
		puts(c.shown ? "\n]" : "]");
	if (rc)
		rc = tool_fail(argv[0], NULL, rc);
	if (rc == 0 && c.bad)
		rc = EXIT_FAIL;
out:
	names_free(&tables);
	mrtx_close(db);
	return rc;
}

/* ----------------------------------------------------------------- lock */

static const char *mut_kind(uint8_t k)
{
	switch (k) {
	case ADMIN_MUT_PUT: return "put";
	case ADMIN_MUT_DEL_CELL: return "del";
	case ADMIN_MUT_DEL_FAMILY: return "delfamily";
	case ADMIN_MUT_DEL_ROW: return "delrow";
	default: return "?";
	}
}

static const char *fam_name(const admin_lock *l, uint8_t fid, char buf[8])
{
	if (fid < l->nfamilies)
		return l->families[fid];
	snprintf(buf, 8, "#%u", (unsigned)fid);
	return buf;
}

static void lock_json(const admin_lock *l, uint64_t now)
{
	const lock_rec *r = l->rec;
	char hex[33], fb[8];

	putchar('{');
	json_lock_common(stdout, l->table, l->row, r, now);
	if (r->state != LOCK_STABLE) {
		lock_txnid_hex(r->prev_txn, hex);
		printf(",\"expiry_ms\":%llu,\"owner_start_time\":%llu,\"prev\":",
		       (unsigned long long)r->expiry_ms, (unsigned long long)r->owner.start_time);
		if (r->flags & LOCK_F_PREV_ABSENT)
			fputs("null", stdout);
		else
			printf("{\"txn\":\"%s\",\"commit_ts\":%llu,\"unread\":%s}", hex,
			       (unsigned long long)r->prev_commit_ts,
			       lock_prev_unread(r) ? "true" : "false");
		fputs(",\"secondary_rows\":[", stdout);
		for (size_t i = 0; i < r->nsecondaries; i++) {
			if (i)
				putchar(',');
			json_ref(stdout, r->secondaries[i].table, r->secondaries[i].row);
		}
		fputs("],\"redo\":[", stdout);
		for (size_t i = 0; i < r->nredo; i++) {
			const admin_mut *m = &r->redo[i];
			const char *fam = fam_name(l, m->fid, fb);

			printf("%s{\"kind\":\"%s\"", i ? "," : "", mut_kind(m->kind));
			if (m->kind != ADMIN_MUT_DEL_ROW) {
				fputs(",\"family\":", stdout);
				json_str(stdout, fam, strlen(fam));
			}
			if (m->kind == ADMIN_MUT_PUT || m->kind == ADMIN_MUT_DEL_CELL) {
				fputs(",\"qualifier\":", stdout);
				json_bytes(stdout, m->qual.data, m->qual.size);
			}
			if (m->kind == ADMIN_MUT_PUT) {
				fputs(",\"value\":", stdout);
				json_bytes(stdout, m->value.data, m->value.size);
			}
			putchar('}');
		}
		putchar(']');
	}
	puts("}");
}

static void lock_text(const admin_lock *l, uint64_t now)
{
	const lock_rec *r = l->rec;
	char hex[33], fb[8];

	lock_txnid_hex(r->txn, hex);
	printf("table:       %s\nrow:         ", l->table);
	print_escaped(stdout, l->row.data, l->row.size, 0);
	printf("\nstate:       %s\ntxn:         %s\ncommit_ts:   %llu\n",
	       lock_state_name(r->state), hex, (unsigned long long)r->commit_ts);
	if (r->state == LOCK_STABLE)
		return;
	printf("role:        %s\n", r->flags & LOCK_F_SECONDARY ? "secondary" : "primary");
	if (r->flags & LOCK_F_SECONDARY) {
		fputs("primary:     ", stdout);
		print_ref(stdout, r->primary.table, r->primary.row);
		putchar('\n');
	}
	if (has_age(r))
		printf("age:         %.3fs\n", (double)ms_since_commit(r, now) / 1000.0);
	else
		printf("age:         unknown (PREWRITTEN: its commit_ts is provisional)\n");
	printf("expires in:  %.3fs\nowner:       pid %u (%s), start "
	       "time %llu\n",
	       ((double)r->expiry_ms - (double)now) / 1000.0, (unsigned)r->owner.pid,
	       lock_owner_dead(&r->owner) ? "dead" : "alive",
	       (unsigned long long)r->owner.start_time);
	lock_txnid_hex(r->prev_txn, hex);
	if (r->flags & LOCK_F_PREV_ABSENT)
		puts("on abort:    no lock (row was never written)");
	else if (lock_prev_unread(r))
		printf("on abort:    STABLE txn %s commit_ts %llu (written blind: the lock it "
		       "replaced was not read; it committed at or before this)\n", hex,
		       (unsigned long long)r->prev_commit_ts);
	else
		printf("on abort:    STABLE txn %s commit_ts %llu\n", hex,
		       (unsigned long long)r->prev_commit_ts);
	if (!(r->flags & LOCK_F_SECONDARY)) {
		printf("secondaries: %zu\n", r->nsecondaries);
		for (size_t i = 0; i < r->nsecondaries; i++) {
			fputs("  ", stdout);
			print_ref(stdout, r->secondaries[i].table, r->secondaries[i].row);
			putchar('\n');
		}
	}
	printf("redo:        %zu\n", r->nredo);
	for (size_t i = 0; i < r->nredo; i++) {
		const admin_mut *m = &r->redo[i];

		printf("  %s", mut_kind(m->kind));
		if (m->kind != ADMIN_MUT_DEL_ROW)
			printf(" %s", fam_name(l, m->fid, fb));
		if (m->kind == ADMIN_MUT_PUT || m->kind == ADMIN_MUT_DEL_CELL) {
			putchar(':');
			print_escaped(stdout, m->qual.data, m->qual.size, ESC_SPACE);
		}
		if (m->kind == ADMIN_MUT_PUT) {
			putchar(' ');
			print_escaped(stdout, m->value.data, m->value.size, 0);
		}
		putchar('\n');
	}
}

typedef struct lock_shown {
	int json;
	int none; /* the row has no lock record */
} lock_shown;

static int lock_show(const admin_lock *l, void *payload)
{
	lock_shown *s = payload;

	if (!l->rec)
		s->none = 1;
	else if (s->json)
		lock_json(l, admin_now_ms());
	else
		lock_text(l, admin_now_ms());
	return 0;
}

int cmd_lock(int argc, char **argv)
{
	static const char usage[] = "mrtx lock STORE TABLE ROW [--json]";
	int json = 0, npos, help, rc;
	const tool_opt opts[] = { { "json", 0, NULL, &json }, { NULL, 0, NULL, NULL } };
	char **pos = argv + 1;
	lock_shown shown = { 0, 0 };
	mrtx_bytes row;
	mrtx_db *db;

	if ((rc = args_parse(argv[0], usage, argc, argv, opts, pos, &npos, &help)))
		return rc;
	if (help)
		HELP(usage, "Decode one row's lock record in full: state, txn, commit_ts, role,\n"
		     "primary or secondaries, owner, expiry, the STABLE lock an abort\n"
		     "restores, and the redo mutations a commit applies.  A row without a\n"
		     "lock record (never written) is an error.\n");
	if (npos != 3)
		return tool_usage_err(argv[0], usage, "expected STORE, TABLE and ROW");
	if ((rc = arg_name(argv[0], "table", pos[1])) ||
	    (rc = arg_bytes(argv[0], "row", pos[2], &row)))
		return rc;
	if ((rc = tool_open(argv[0], pos[0], 0, &db)))
		return rc;
	shown.json = json;
	if ((rc = admin_row_lock(db, pos[1], row, lock_show, &shown))) {
		rc = tool_fail(argv[0], NULL, rc);
	} else if (shown.none) {
		char *e = escape_dup(row.data, row.size, 0);

		tool_err(argv[0], "%s/%s has no lock record: the row was never written (`mrtx "
		         "get` and `mrtx scan` show what the table holds)", pos[1], e ? e : pos[2]);
		free(e);
		rc = EXIT_FAIL;
	}
	mrtx_close(db);
	return rc;
}

/* -------------------------------------------------------------- recover */

static void recover_progress(const recover_stats *s, void *payload)
{
	int *shown = payload;

	if (!*shown && s->locks_seen < 1000)
		return; /* small stores finish before a progress line helps */
	fprintf(stderr, "\rmrtx: recover: %lu locks met: %lu txns forward, %lu back, "
	        "%lu live, %lu errors", s->locks_seen, s->forwarded, s->rolled_back, s->skipped_live,
	        s->errors);
	*shown = 1;
}

int cmd_recover(int argc, char **argv)
{
	static const char usage[] = "mrtx recover STORE [--dry-run] [--force] [--json]";
	int json = 0, dry = 0, force = 0, npos, help, rc, shown = 0;
	const tool_opt opts[] = { { "dry-run", 0, NULL, &dry }, { "force", 0, NULL, &force },
	                          { "json", 0, NULL, &json }, { NULL, 0, NULL, NULL } };
	char **pos = argv + 1;
	recover_opts ro;
	recover_stats s;
	mrtx_db *db;

	if ((rc = args_parse(argv[0], usage, argc, argv, opts, pos, &npos, &help)))
		return rc;
	if (help)
		HELP(usage, "Resolve every stale lock (owner dead or lock expired) with the\n"
		     "recovery readers use: transactions past their commit point are rolled\n"
		     "forward, the others back.  Live transactions (owner alive and lock\n"
		     "not expired) are skipped; --force settles them too, as abandoned:\n"
		     "give it only when their writers are known gone.  --dry-run decides\n"
		     "and reports without writing.  By default both are off.  Prints the\n"
		     "unsettled locks met and the number of transactions rolled forward,\n"
		     "rolled back and skipped as live; exit 1 if some lock could not be\n"
		     "resolved.\n");
	if (npos != 1)
		return tool_usage_err(argv[0], usage, "expected STORE");
	if ((rc = tool_open(argv[0], pos[0], 0, &db)))
		return rc;
	memset(&ro, 0, sizeof(ro));
	ro.wait_ms = 0; /* never wait for a live writer: report it */
	ro.force = force;
	ro.dry_run = dry;
	rc = admin_recover(db, &ro, &s, tool_stderr_tty() ? recover_progress : NULL, &shown);
	if (shown)
		fputc('\n', stderr);
	if (rc) {
		rc = tool_fail(argv[0], NULL, rc);
		goto out;
	}
	if (json)
		printf("{\"dry_run\":%s,\"locks_seen\":%lu,\"rolled_forward\":%lu,"
		       "\"rolled_back\":%lu,\"skipped_live\":%lu,\"errors\":%lu,"
		       "\"fenced\":%lu,\"fence_denied\":%lu}\n",
		       dry ? "true" : "false", s.locks_seen, s.forwarded, s.rolled_back,
		       s.skipped_live, s.errors, s.fenced, s.fence_denied);
	else
		printf("%s%lu unsettled locks met (locks settled with their transaction are "
		       "not met again)\n%s%lu transactions rolled forward\n%s%lu transactions "
		       "rolled back\n%lu transactions skipped as live (owner alive, lock not "
		       "expired; --force settles them too)\n%lu errors\n",
		       dry ? "dry run: " : "", s.locks_seen,
		       dry ? "would have " : "", s.forwarded, dry ? "would have " : "",
		       s.rolled_back, s.skipped_live, s.errors);
	if (!json && s.fenced)
		printf("%lu clients of dead processes fenced first (OSD blocklist)\n", s.fenced);
	if (!json && s.fence_denied)
		printf("%lu clients of dead processes not fenced: this key may not blocklist "
		       "(it needs the mon capability for `osd blocklist`)\n", s.fence_denied);
	if (s.errors) {
		tool_err(argv[0], "%lu locks could not be resolved (see `mrtx check`)", s.errors);
		rc = EXIT_FAIL;
	}
out:
	mrtx_close(db);
	return rc;
}

/* ---------------------------------------------------------------- stats */

/* One table's counts and families. */
typedef struct tstats {
	admin_row_counts n;
	const char *const *fams;
	size_t nfams;
	int held; /* ADMIN_HELD_* or 0 */
} tstats;

static const char *held_word(int held)
{
	return held == ADMIN_HELD_CLOSED ? "closed" : held ? "frozen" : NULL;
}

static void stats_locks_json(const admin_row_counts *s)
{
	printf("{\"STABLE\":%lu,\"PREWRITTEN\":%lu,\"COMMITTED\":%lu,\"ABORTED\":%lu,"
	       "\"undecodable\":%lu}", s->by_state[0], s->by_state[1], s->by_state[2],
	       s->by_state[3], s->by_state[4]);
}

static void stats_locks_text(const admin_row_counts *s)
{
	printf("STABLE %lu, PREWRITTEN %lu, COMMITTED %lu, ABORTED %lu, undecodable %lu",
	       s->by_state[0], s->by_state[1], s->by_state[2], s->by_state[3], s->by_state[4]);
}

int cmd_stats(int argc, char **argv)
{
	static const char usage[] = "mrtx stats STORE [--json]";
	int json = 0, npos, help, rc;
	const tool_opt opts[] = { { "json", 0, NULL, &json }, { NULL, 0, NULL, NULL } };
	char **pos = argv + 1;
	name_list tables = { NULL, 0, 0 };
	admin_row_counts all;
	tstats *ts = NULL;
	admin_store_info info;
	size_t nt = 0;
	mrtx_db *db;

	if ((rc = args_parse(argv[0], usage, argc, argv, opts, pos, &npos, &help)))
		return rc;
	if (help)
		HELP(usage, "Tables with their rows (rows holding at least one cell), cells and\n"
		     "lock records by state; LMDB map size and use; reader slots (stale\n"
		     "slots of dead processes are cleared first); whether the store is open\n"
		     "read-only (--read-only), and without lock.mdb.  A table frozen (on\n"
		     "RADOS, also closed) by a drop or truncate that has not finished says\n"
		     "so (--json: held, null, \"frozen\" or \"closed\").\n");
	if (npos != 1)
		return tool_usage_err(argv[0], usage, "expected STORE");
	if ((rc = tool_open(argv[0], pos[0], 0, &db)))
		return rc;
	memset(&all, 0, sizeof(all));
	if ((rc = names_list(db, &tables)) || (rc = admin_info(db, &info)))
		goto fail;
	nt = tables.n;
	if (!(ts = calloc(nt ? nt : 1, sizeof(*ts)))) {
		rc = MRTX_ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < nt; i++) {
		if ((rc = mrtx_table_families(db, tables.v[i], &ts[i].fams, &ts[i].nfams)) ||
		    (rc = admin_count_rows(db, tables.v[i], &ts[i].n)) ||
		    (rc = admin_table_held(db, tables.v[i], &ts[i].held)))
			goto fail;
		all.lock_records += ts[i].n.lock_records;
		all.rows += ts[i].n.rows;
		all.cells += ts[i].n.cells;
		for (int k = 0; k < 5; k++)
			all.by_state[k] += ts[i].n.by_state[k];
	}
	if (json) {
		fputs("{\"tables\":[", stdout);
		for (size_t i = 0; i < nt; i++) {
			printf("%s{\"name\":", i ? "," : "");
			json_str(stdout, tables.v[i], strlen(tables.v[i]));
			fputs(",\"families\":[", stdout);
			for (size_t f = 0; f < ts[i].nfams; f++) {
				if (f)
					putchar(',');
				json_str(stdout, ts[i].fams[f], strlen(ts[i].fams[f]));
			}
			printf("],\"rows\":%lu,\"cells\":%lu,\"lock_records\":%lu,\"locks\":",
			       ts[i].n.rows, ts[i].n.cells, ts[i].n.lock_records);
			stats_locks_json(&ts[i].n);
			if (ts[i].held)
				printf(",\"held\":\"%s\"}", held_word(ts[i].held));
			else
				fputs(",\"held\":null}", stdout);
		}
		printf("],\"rows\":%lu,\"cells\":%lu,\"lock_records\":%lu,\"locks\":", all.rows,
		       all.cells, all.lock_records);
		stats_locks_json(&all);
		printf(",\"store\":\"%s\",\"read_only\":%s", info.kind,
		       info.read_only ? "true" : "false");
		if (strcmp(info.kind, "lmdb") == 0)
			printf(",\"map_size\":%zu,\"used_bytes\":%zu,\"page_size\":%zu,"
			       "\"readers\":%u,\"max_readers\":%u,\"stale_readers_cleared\":%d,"
			       "\"lockless\":%s",
			       info.map_size, info.used_bytes, info.page_size, info.num_readers,
			       info.max_readers, info.stale_readers_cleared,
			       info.lockless ? "true" : "false");
		fputs("}\n", stdout);
	} else {
		printf("tables:  %zu\n", nt);
		for (size_t i = 0; i < nt; i++) {
			printf("  %s (", tables.v[i]);
			for (size_t f = 0; f < ts[i].nfams; f++)
				printf("%s%s", f ? " " : "", ts[i].fams[f]);
			printf("): %lu rows, %lu cells, %lu lock records: ", ts[i].n.rows,
			       ts[i].n.cells, ts[i].n.lock_records);
			stats_locks_text(&ts[i].n);
			if (ts[i].held)
				printf("; %s by an unfinished drop or truncate (run it again)",
				       held_word(ts[i].held));
			putchar('\n');
		}
		printf("rows:    %lu\ncells:   %lu\nlocks:   %lu records: ", all.rows, all.cells,
		       all.lock_records);
		stats_locks_text(&all);
		printf("\nstore:   %s%s\n", info.kind,
		       !info.read_only ? "" : info.lockless ?
		       ", read-only, without lock.mdb (not writable: writers cannot see this "
		       "reader)" : ", read-only");
		if (strcmp(info.kind, "lmdb") == 0)
			printf("map:     %zu bytes, %zu used (%.1f%%), page size %zu\n"
			       "readers: %u of %u slots in use, %d stale slots cleared\n",
			       info.map_size, info.used_bytes,
			       info.map_size ? 100.0 * (double)info.used_bytes / (double)info.map_size
			                     : 0.0,
			       info.page_size, info.num_readers, info.max_readers,
			       info.stale_readers_cleared);
	}
	rc = EXIT_OK;
	goto out;
fail:
	rc = tool_fail(argv[0], NULL, rc);
out:
	free(ts);
	names_free(&tables);
	mrtx_close(db);
	return rc;
}
