/*
 * cmd_admin.c - lock inspection and recovery: locks, lock, recover, stats.
 *
 * These read the lock family below the transaction API (txn/admin.h gives
 * the store; lockcf/ decodes; recovery/ resolves), always in batches of
 * rows from one snapshot each, so they work on stores of any size and never
 * hold an LMDB read transaction for long.
 */
#include "cmds.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "txn/admin.h"
#include "util.h"

/* ------------------------------------------------------------- walking */

typedef int (*row_fn)(const store_table *t, const store_row *r, mrtx_arena *a,
                      void *payload);

struct row_walk {
	row_fn fn;
	void *payload;
};

static int row_visit(const store_table *t, store_row *rows, size_t n, mrtx_arena *a,
                     void *payload)
{
	struct row_walk *w = payload;
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = w->fn(t, &rows[i], a, w->payload);
	return rc;
}

/* Every row with a lock record of t, in batches (lock_only: no cells). */
static int walk_table(store *st, const store_table *t, int lock_only, row_fn fn,
                      void *payload)
{
	store_filter f = STORE_FILTER_ALL;
	struct row_walk w = { fn, payload };

	f.lock_only = lock_only;
	return store_walk(st, t, &f, lock_only ? 1024 : 256, row_visit, &w);
}

static long long ms_since_commit(const lock_rec *r, uint64_t now_ms)
{
	/* commit_ts is the writer's wall clock (us) when it began committing. */
	return (long long)now_ms - (long long)(r->commit_ts / 1000u);
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
static void json_lock_common(FILE *f, const store_table *t, mrtx_bytes row,
                             const lock_rec *r, uint64_t now)
{
	char hex[33];
	int secondary = (r->flags & LOCK_F_SECONDARY) != 0;
	int dead = lock_owner_dead(&r->owner);

	lock_txnid_hex(r->txn, hex);
	fputs("\"table\":", f);
	json_str(f, t->name, strlen(t->name));
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
		json_ref(f, name_bytes(t->name), row);
	fprintf(f, ",\"secondaries\":%zu,\"age_ms\":%lld,\"expires_in_ms\":%lld,"
	        "\"expired\":%s,\"owner_pid\":%u,\"owner_alive\":%s,\"stale\":%s",
	        secondary ? (size_t)0 : r->nsecondaries, ms_since_commit(r, now),
	        (long long)r->expiry_ms - (long long)now, r->expiry_ms <= now ? "true" : "false",
	        (unsigned)r->owner.pid, dead ? "false" : "true",
	        dead || r->expiry_ms <= now ? "true" : "false");
}

/* ---------------------------------------------------------------- locks */

typedef struct locks_ctx {
	store *st;
	int json, state; /* state -1: any non-STABLE */
	unsigned long shown, bad;
	uint64_t now;
} locks_ctx;

static int locks_row(const store_table *t, const store_row *row, mrtx_arena *a, void *p)
{
	locks_ctx *c = p;
	char *tname, *rname, *pname = NULL;
	char hex[33], age[24], expires[24];
	lock_rec r;

	if (lockio_decode(c->st, t, row->row, row->lock, a, &r)) {
		char *e = escape_dup(row->row.data, row->row.size, 0);

		tool_err("locks", "table '%s' row '%s': %s", t->name, e ? e : "?", mrtx_errmsg());
		free(e);
		c->bad++;
		return 0;
	}
	if (r.state == LOCK_STABLE || (c->state >= 0 && r.state != c->state))
		return 0;
	if (c->json) {
		fputs(c->shown ? ",\n{" : "\n{", stdout);
		json_lock_common(stdout, t, row->row, &r, c->now);
		putchar('}');
		c->shown++;
		return 0;
	}
	if (c->shown++ == 0)
		printf("%-10s %-16s %-10s %-32s %-9s %-20s %4s %8s %8s %7s %s\n", "TABLE", "ROW",
		       "STATE", "TXN", "ROLE", "PRIMARY", "SECS", "AGE", "EXPIRES", "PID",
		       "ALIVE");
	lock_txnid_hex(r.txn, hex);
	tname = escape_dup(t->name, strlen(t->name), ESC_SPACE);
	rname = escape_dup(row->row.data, row->row.size, ESC_SPACE);
	if (r.flags & LOCK_F_SECONDARY) {
		char *pt = escape_dup(r.primary.table.data, r.primary.table.size, ESC_SPACE);
		char *pr = escape_dup(r.primary.row.data, r.primary.row.size, ESC_SPACE);

		if (pt && pr && (pname = malloc(strlen(pt) + strlen(pr) + 2)))
			sprintf(pname, "%s/%s", pt, pr);
		free(pt);
		free(pr);
	}
	snprintf(age, sizeof(age), "%.1fs", (double)ms_since_commit(&r, c->now) / 1000.0);
	snprintf(expires, sizeof(expires), "%.1fs",
	         ((double)r.expiry_ms - (double)c->now) / 1000.0);
	if (!tname || !rname || ((r.flags & LOCK_F_SECONDARY) && !pname)) {
		free(tname);
		free(rname);
		free(pname);
		return MRTX_ENOMEM;
	}
	printf("%-10s %-16s %-10s %-32s %-9s %-20s %4zu %8s %8s %7u %s\n", tname, rname,
	       lock_state_name(r.state), hex, r.flags & LOCK_F_SECONDARY ? "secondary" : "primary",
	       pname ? pname : "-", r.flags & LOCK_F_SECONDARY ? (size_t)0 : r.nsecondaries,
	       age, expires, (unsigned)r.owner.pid,
	       lock_owner_dead(&r.owner) ? "dead" : "alive");
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
	const store_table **tables = NULL;
	char **pos = argv + 1;
	locks_ctx c;
	size_t nt = 0;
	mrtx_db *db;

	if ((rc = args_parse(argv[0], usage, argc, argv, opts, pos, &npos, &help)))
		return rc;
	if (help)
		HELP(usage, "List every non-STABLE lock: table, row, state, txn id, role, the\n"
		     "primary's table/row (secondaries), number of secondaries (primaries),\n"
		     "age, time to expiry (negative: expired), owner pid and liveness.\n"
		     "--state is PREWRITTEN, COMMITTED or ABORTED.  --json prints an array of\n"
		     "objects (table, row, state, txn, commit_ts, role, primary{table,row},\n"
		     "secondaries, age_ms, expires_in_ms, expired, owner_pid, owner_alive,\n"
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
	c.st = mrtx__db_store(db);
	c.now = mrtx__now_ms();
	if (table) {
		const store_table *t;

		if ((rc = store_table_find(c.st, table, &t))) {
			rc = tool_fail(argv[0], NULL, rc);
			goto out;
		}
	}
	if ((rc = store_tables_list(c.st, &tables, &nt))) {
		rc = tool_fail(argv[0], NULL, rc);
		goto out;
	}
	if (json)
		putchar('[');
	for (size_t i = 0; i < nt && rc == 0; i++)
		if (!table || strcmp(table, tables[i]->name) == 0)
			rc = walk_table(c.st, tables[i], 1, locks_row, &c);
	if (json)
		puts(c.shown ? "\n]" : "]");
	if (rc)
		rc = tool_fail(argv[0], NULL, rc);
	if (rc == 0 && c.bad)
		rc = EXIT_FAIL;
out:
	mrtx__free(tables);
	mrtx_close(db);
	return rc;
}

/* ----------------------------------------------------------------- lock */

static const char *mut_kind(uint8_t k)
{
	switch (k) {
	case STORE_MUT_PUT: return "put";
	case STORE_MUT_DEL_CELL: return "del";
	case STORE_MUT_DEL_FAMILY: return "delfamily";
	case STORE_MUT_DEL_ROW: return "delrow";
	default: return "?";
	}
}

static const char *fam_name(const store_table *t, uint8_t fid, char buf[8])
{
	if (fid < t->nfamilies)
		return t->families[fid];
	snprintf(buf, 8, "#%u", (unsigned)fid);
	return buf;
}

static void lock_json(const store_table *t, mrtx_bytes row, const lock_rec *r, uint64_t now)
{
	char hex[33], fb[8];

	putchar('{');
	json_lock_common(stdout, t, row, r, now);
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
			const store_mut *m = &r->redo[i];
			const char *fam = fam_name(t, m->fid, fb);

			printf("%s{\"kind\":\"%s\"", i ? "," : "", mut_kind(m->kind));
			if (m->kind != STORE_MUT_DEL_ROW) {
				fputs(",\"family\":", stdout);
				json_str(stdout, fam, strlen(fam));
			}
			if (m->kind == STORE_MUT_PUT || m->kind == STORE_MUT_DEL_CELL) {
				fputs(",\"qualifier\":", stdout);
				json_bytes(stdout, m->qual.data, m->qual.size);
			}
			if (m->kind == STORE_MUT_PUT) {
				fputs(",\"value\":", stdout);
				json_bytes(stdout, m->value.data, m->value.size);
			}
			putchar('}');
		}
		putchar(']');
	}
	puts("}");
}

static void lock_text(const store_table *t, mrtx_bytes row, const lock_rec *r, uint64_t now)
{
	char hex[33], fb[8];

	lock_txnid_hex(r->txn, hex);
	printf("table:       %s\nrow:         ", t->name);
	print_escaped(stdout, row.data, row.size, 0);
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
	printf("age:         %.3fs\nexpires in:  %.3fs\nowner:       pid %u (%s), start "
	       "time %llu\n", (double)ms_since_commit(r, now) / 1000.0,
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
		const store_mut *m = &r->redo[i];

		printf("  %s", mut_kind(m->kind));
		if (m->kind != STORE_MUT_DEL_ROW)
			printf(" %s", fam_name(t, m->fid, fb));
		if (m->kind == STORE_MUT_PUT || m->kind == STORE_MUT_DEL_CELL) {
			putchar(':');
			print_escaped(stdout, m->qual.data, m->qual.size, ESC_SPACE);
		}
		if (m->kind == STORE_MUT_PUT) {
			putchar(' ');
			print_escaped(stdout, m->value.data, m->value.size, 0);
		}
		putchar('\n');
	}
}

int cmd_lock(int argc, char **argv)
{
	static const char usage[] = "mrtx lock STORE TABLE ROW [--json]";
	int json = 0, npos, help, rc;
	const tool_opt opts[] = { { "json", 0, NULL, &json }, { NULL, 0, NULL, NULL } };
	char **pos = argv + 1;
	const store_table *t;
	store_rowref ref;
	store_row cur;
	mrtx_arena a;
	lock_rec r;
	mrtx_db *db;
	store *st;

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
	    (rc = arg_bytes(argv[0], "row", pos[2], &ref.row)))
		return rc;
	if ((rc = tool_open(argv[0], pos[0], 0, &db)))
		return rc;
	st = mrtx__db_store(db);
	arena_init(&a);
	if ((rc = store_table_find(st, pos[1], &t))) {
		rc = tool_fail(argv[0], NULL, rc);
		goto out;
	}
	ref.table = t;
	if ((rc = store_read_locks(st, &ref, 1, &a, &cur)) ||
	    (cur.has_lock && (rc = lockio_decode(st, t, ref.row, cur.lock, &a, &r)))) {
		rc = tool_fail(argv[0], NULL, rc);
		goto out;
	}
	if (!cur.has_lock) {
		tool_err(argv[0], "row has no lock record (never written by a transaction)");
		rc = EXIT_FAIL;
		goto out;
	}
	if (json)
		lock_json(t, ref.row, &r, mrtx__now_ms());
	else
		lock_text(t, ref.row, &r, mrtx__now_ms());
out:
	arena_free(&a);
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
		     "forward, the others back.  Live transactions are skipped (--force\n"
		     "treats them as abandoned: only when their writers are known gone).\n"
		     "--dry-run decides and reports without writing.  Prints the number of\n"
		     "transactions rolled forward, rolled back and skipped as live; exit 1\n"
		     "if some lock could not be resolved.\n");
	if (npos != 1)
		return tool_usage_err(argv[0], usage, "expected STORE");
	if ((rc = tool_open(argv[0], pos[0], 0, &db)))
		return rc;
	memset(&ro, 0, sizeof(ro));
	ro.wait_ms = 0; /* never wait for a live writer: report it */
	ro.force = force;
	ro.dry_run = dry;
	rc = recover_sweep(mrtx__db_store(db), &ro, &s,
	                   tool_stderr_tty() ? recover_progress : NULL, &shown);
	if (shown)
		fputc('\n', stderr);
	if (rc) {
		rc = tool_fail(argv[0], NULL, rc);
		goto out;
	}
	if (json)
		printf("{\"dry_run\":%s,\"locks_seen\":%lu,\"rolled_forward\":%lu,"
		       "\"rolled_back\":%lu,\"skipped_live\":%lu,\"errors\":%lu}\n",
		       dry ? "true" : "false", s.locks_seen, s.forwarded, s.rolled_back,
		       s.skipped_live, s.errors);
	else
		printf("%s%lu stale locks met (locks settled with their transaction are not "
		       "met again)\n%s%lu transactions rolled forward\n%s%lu transactions "
		       "rolled back\n%lu transactions skipped (live owner)\n%lu errors\n",
		       dry ? "dry run: " : "", s.locks_seen,
		       dry ? "would have " : "", s.forwarded, dry ? "would have " : "",
		       s.rolled_back, s.skipped_live, s.errors);
	if (s.errors) {
		tool_err(argv[0], "%lu locks could not be resolved (see `mrtx check`)", s.errors);
		rc = EXIT_FAIL;
	}
out:
	mrtx_close(db);
	return rc;
}

/* ---------------------------------------------------------------- stats */

typedef struct tstats {
	unsigned long lockrecs, rows, cells, by_state[5]; /* [4]: undecodable */
} tstats;

static int stats_row(const store_table *t, const store_row *row, mrtx_arena *a, void *p)
{
	tstats *s = p;
	uint8_t state, txn[LOCK_TXNID_SIZE];

	(void)t;
	(void)a;
	s->lockrecs += row->has_lock;
	s->rows += row->ncells > 0;
	s->cells += row->ncells;
	if (row->has_lock)
		s->by_state[lock_peek(row->lock, &state, txn) || state > 3 ? 4 : state]++;
	return 0;
}

static void stats_locks_json(const tstats *s)
{
	printf("{\"STABLE\":%lu,\"PREWRITTEN\":%lu,\"COMMITTED\":%lu,\"ABORTED\":%lu,"
	       "\"undecodable\":%lu}", s->by_state[0], s->by_state[1], s->by_state[2],
	       s->by_state[3], s->by_state[4]);
}

static void stats_locks_text(const tstats *s)
{
	printf("STABLE %lu, PREWRITTEN %lu, COMMITTED %lu, ABORTED %lu, undecodable %lu",
	       s->by_state[0], s->by_state[1], s->by_state[2], s->by_state[3], s->by_state[4]);
}

int cmd_stats(int argc, char **argv)
{
	static const char usage[] = "mrtx stats STORE [--json]";
	int json = 0, npos, help, rc;
	const tool_opt opts[] = { { "json", 0, NULL, &json }, { NULL, 0, NULL, NULL } };
	const store_table **tables = NULL;
	char **pos = argv + 1;
	tstats all, *ts = NULL;
	store_info info;
	size_t nt = 0;
	mrtx_db *db;
	store *st;

	if ((rc = args_parse(argv[0], usage, argc, argv, opts, pos, &npos, &help)))
		return rc;
	if (help)
		HELP(usage, "Tables with their rows (rows holding at least one cell), cells and\n"
		     "lock records by state; LMDB map size and use; reader slots (stale\n"
		     "slots of dead processes are cleared first); whether the store is open\n"
		     "read-only (--read-only), and without lock.mdb.\n");
	if (npos != 1)
		return tool_usage_err(argv[0], usage, "expected STORE");
	if ((rc = tool_open(argv[0], pos[0], 0, &db)))
		return rc;
	st = mrtx__db_store(db);
	memset(&all, 0, sizeof(all));
	if ((rc = store_tables_list(st, &tables, &nt)) || (rc = store_get_info(st, &info)))
		goto fail;
	if (!(ts = calloc(nt ? nt : 1, sizeof(*ts)))) {
		rc = MRTX_ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < nt; i++) {
		if ((rc = walk_table(st, tables[i], 0, stats_row, &ts[i])))
			goto fail;
		all.lockrecs += ts[i].lockrecs;
		all.rows += ts[i].rows;
		all.cells += ts[i].cells;
		for (int k = 0; k < 5; k++)
			all.by_state[k] += ts[i].by_state[k];
	}
	if (json) {
		fputs("{\"tables\":[", stdout);
		for (size_t i = 0; i < nt; i++) {
			printf("%s{\"name\":", i ? "," : "");
			json_str(stdout, tables[i]->name, strlen(tables[i]->name));
			fputs(",\"families\":[", stdout);
			for (size_t f = 0; f < tables[i]->nfamilies; f++) {
				if (f)
					putchar(',');
				json_str(stdout, tables[i]->families[f], strlen(tables[i]->families[f]));
			}
			printf("],\"rows\":%lu,\"cells\":%lu,\"lock_records\":%lu,\"locks\":",
			       ts[i].rows, ts[i].cells, ts[i].lockrecs);
			stats_locks_json(&ts[i]);
			putchar('}');
		}
		printf("],\"rows\":%lu,\"cells\":%lu,\"lock_records\":%lu,\"locks\":", all.rows,
		       all.cells, all.lockrecs);
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
			printf("  %s (", tables[i]->name);
			for (size_t f = 0; f < tables[i]->nfamilies; f++)
				printf("%s%s", f ? " " : "", tables[i]->families[f]);
			printf("): %lu rows, %lu cells, %lu lock records: ", ts[i].rows, ts[i].cells,
			       ts[i].lockrecs);
			stats_locks_text(&ts[i]);
			putchar('\n');
		}
		printf("rows:    %lu\ncells:   %lu\nlocks:   %lu records: ", all.rows, all.cells,
		       all.lockrecs);
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
	mrtx__free(tables);
	mrtx_close(db);
	return rc;
}
