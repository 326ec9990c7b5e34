/*
 * cmd_check.c - `mrtx check STORE [--strict] [--json]`: verify the lock
 * family (recovery/check.h says what is checked and why); `mrtx check
 * STORE --deep [--json]`: verify an LMDB store's file page by page without
 * opening it (admin_check_file; storage/lmdb/lmdb_deep.c says what).
 *
 * Exit 1 when a finding is CORRUPT (a state the protocol cannot produce),
 * and with --strict also when one is RESOLVABLE (stale locks and orphans a
 * crashed writer left, which `mrtx recover` settles).  Without --strict a
 * store with pending recovery passes: it is consistent, only not yet tidy.
 * --deep exits 1 on any damage, and says what of the store can still be
 * read; on a RADOS store (no file) it is a usage error, exit 2.
 */
#include "cmds.h"

#include <stdlib.h>
#include <string.h>

#include "txn/admin.h"
#include "util.h"

typedef struct check_out {
	int json;
	unsigned long n;
	int shown; /* a progress line is on stderr */
} check_out;

static void on_progress(const check_stats *s, void *payload)
{
	check_out *o = payload;

	if (!o->shown && s->locks < 1000)
		return; /* small stores finish before a progress line helps */
	fprintf(stderr, "\rmrtx: check: %lu lock records, %lu corrupt, %lu resolvable",
	        s->locks, s->corrupt, s->resolvable);
	o->shown = 1;
}

static int on_issue(const admin_issue *is, void *payload)
{
	check_out *o = payload;
	const char *sev = is->severity == CHECK_CORRUPT ? "corrupt" : "resolvable";
	char hex[33];

	lock_txnid_hex(is->txn, hex);
	if (o->shown) { /* findings go to stdout: end the progress line first */
		fputc('\n', stderr);
		o->shown = 0;
	}
	if (o->json) {
		printf("%s\n{\"severity\":\"%s\",\"kind\":\"%s\",\"table\":", o->n ? "," : "",
		       sev, is->kind);
		json_str(stdout, is->table, strlen(is->table));
		fputs(",\"row\":", stdout);
		json_bytes(stdout, is->row.data, is->row.size);
		printf(",\"txn\":\"%s\",\"detail\":", hex);
		json_str(stdout, is->detail, strlen(is->detail));
		putchar('}');
	} else {
		printf("%s %s: ", is->severity == CHECK_CORRUPT ? "CORRUPT" : "RESOLVABLE",
		       is->kind);
		print_escaped(stdout, is->table, strlen(is->table), ESC_SPACE);
		putchar('/');
		print_escaped(stdout, is->row.data, is->row.size, ESC_SPACE);
		printf(" txn %s: %s\n", hex, is->detail);
	}
	o->n++;
	return 0;
}

/* ---------------------------------------------------------------- --deep */

typedef struct deep_out {
	int json;
	unsigned long n;
	char **readable, **damaged; /* table names, escaped */
	size_t nr, nd, cap_r, cap_d;
	int oom;
} deep_out;

static int on_damage(const admin_damage *d, void *payload)
{
	deep_out *o = payload;

	if (o->json) {
		printf("%s\n{\"page\":", o->n ? "," : "");
		if (d->page == ADMIN_NO_PAGE)
			fputs("null", stdout);
		else
			printf("%llu", (unsigned long long)d->page);
		fputs(",\"key\":", stdout);
		if (d->key.size)
			json_bytes(stdout, d->key.data, d->key.size);
		else
			fputs("null", stdout);
		fputs(",\"what\":", stdout);
		json_str(stdout, d->what, strlen(d->what));
		putchar('}');
	} else {
		fputs("DAMAGE ", stdout);
		if (d->page == ADMIN_NO_PAGE)
			fputs("data.mdb", stdout);
		else
			printf("page %llu", (unsigned long long)d->page);
		if (d->key.size) {
			fputs(" key ", stdout);
			print_escaped(stdout, d->key.data, d->key.size, ESC_SPACE);
		}
		printf(": %s\n", d->what);
	}
	o->n++;
	return 0;
}

static void on_table(const char *name, int damaged, void *payload)
{
	deep_out *o = payload;
	char ***list = damaged ? &o->damaged : &o->readable;
	size_t *n = damaged ? &o->nd : &o->nr, *cap = damaged ? &o->cap_d : &o->cap_r;
	char *e = escape_dup(name, strlen(name), ESC_SPACE);

	if (e && *n == *cap) {
		size_t c = *cap ? 2 * *cap : 8;
		char **g = realloc(*list, c * sizeof(*g));

		if (!g) {
			free(e);
			e = NULL;
		} else {
			*list = g;
			*cap = c;
		}
	}
	if (!e) {
		o->oom = 1;
		return;
	}
	(*list)[(*n)++] = e;
}

static void names_print(FILE *f, char **names, size_t n, int json)
{
	for (size_t i = 0; i < n; i++) {
		if (json) {
			fputs(i ? "," : "", f);
			json_str(f, names[i], strlen(names[i]));
		} else {
			fprintf(f, " %s", names[i]);
		}
	}
}

/* What to do about the damage: only what works on a store so damaged
 * (a dump reads only the pages of its table's keys; a write could reuse a
 * page the damaged free list hands out). */
static const char *deep_advice(const admin_file_stats *s, const deep_out *o)
{
	if (!s->damage)
		return "";
	if (!s->opens)
		return "mrtx cannot open this store (its meta pages or its length are damaged): "
		       "restore it from a backup";
	if (s->meta_damaged)
		return "the store's metadata records are damaged: restore it from a backup";
	if (!o->nr)
		return "every table holds damage: restore the store from a backup";
	return "copy out each readable table with `mrtx --read-only dump STORE TABLE FILE` "
	       "and `mrtx load NEWSTORE TABLE FILE`, or restore the store from a backup; "
	       "do not write to this store (a damaged page may be handed out again)";
}

static int check_deep(const char *cmd, const char *path, int json)
{
	admin_file_stats s;
	deep_out o;
	const char *advice;
	int rc;

	memset(&o, 0, sizeof(o));
	o.json = json;
	if (json)
		fputs("{\"damage\":[", stdout);
	rc = admin_check_file(path, on_damage, on_table, &o, &s);
	if (rc || o.oom) { /* (o.oom: a table's name lost, its lists would be short) */
		if (json)
			puts("]}");
		if (rc)
			rc = tool_fail(cmd, "deep", rc);
		else
			tool_err(cmd, "deep: out of memory listing the tables");
		rc = EXIT_FAIL;
		goto out;
	}
	advice = deep_advice(&s, &o);
	if (json) {
		printf("%s],\"ok\":%s,\"deep\":true,\"bytes\":%llu,\"page_size\":%u,\"meta\":",
		       o.n ? "\n" : "", s.damage ? "false" : "true",
		       (unsigned long long)s.file_bytes, (unsigned)s.page_size);
		if (s.meta < 0)
			fputs("null", stdout);
		else
			printf("%d", s.meta);
		printf(",\"newest\":%s,\"txnid\":%llu,\"pages\":%llu,\"walked\":%llu,"
		       "\"free_pages\":%llu,\"leaked\":%llu,\"depth\":%u,\"entries\":%llu,"
		       "\"meta_records\":%llu,\"tables\":%llu,\"lock_records\":%llu,\"cells\":%llu,"
		       "\"history\":%llu,\"damage_count\":%llu,\"unreported\":%llu,\"opens\":%s,"
		       "\"metadata_damaged\":%s,\"free_list_damaged\":%s,\"readable_tables\":[",
		       s.newest ? "true" : "false", (unsigned long long)s.txnid,
		       (unsigned long long)s.pages, (unsigned long long)s.walked,
		       (unsigned long long)s.free_pages, (unsigned long long)s.leaked, s.depth,
		       (unsigned long long)s.entries, (unsigned long long)s.meta_records,
		       (unsigned long long)s.tables, (unsigned long long)s.locks,
		       (unsigned long long)s.cells, (unsigned long long)s.history,
		       (unsigned long long)s.damage, (unsigned long long)s.unreported,
		       s.opens ? "true" : "false", s.meta_damaged ? "true" : "false",
		       s.free_damaged ? "true" : "false");
		names_print(stdout, o.readable, o.nr, 1);
		fputs("],\"damaged_tables\":[", stdout);
		names_print(stdout, o.damaged, o.nd, 1);
		fputs("],\"advice\":", stdout);
		json_str(stdout, advice, strlen(advice));
		puts("}");
	} else {
		if (s.meta >= 0)
			printf("meta page %d (LMDB transaction %llu%s), %llu pages of %u bytes: %llu "
			       "walked, %llu entries in %u levels (%llu tables, %llu lock records, "
			       "%llu cells, %llu history), %llu free, %llu leaked: %llu damage\n",
			       s.meta, (unsigned long long)s.txnid,
			       s.newest ? ", the newest" : ", the older: the newest is damaged",
			       (unsigned long long)s.pages, (unsigned)s.page_size,
			       (unsigned long long)s.walked, (unsigned long long)s.entries, s.depth,
			       (unsigned long long)s.tables, (unsigned long long)s.locks,
			       (unsigned long long)s.cells, (unsigned long long)s.history,
			       (unsigned long long)s.free_pages, (unsigned long long)s.leaked,
			       (unsigned long long)s.damage);
		else
			printf("no meta page to walk from, %llu bytes: %llu damage\n",
			       (unsigned long long)s.file_bytes, (unsigned long long)s.damage);
		if (s.unreported)
			printf("(%llu more damage not listed)\n", (unsigned long long)s.unreported);
		puts(s.damage ? "FAILED" : "ok");
		if (s.damage && s.opens && !s.meta_damaged) {
			if (o.nr) {
				fputs("readable tables (the damage does not reach them):", stdout);
				names_print(stdout, o.readable, o.nr, 0);
				putchar('\n');
			}
			if (o.nd) {
				fputs("damaged tables:", stdout);
				names_print(stdout, o.damaged, o.nd, 0);
				putchar('\n');
			}
		}
	}
	rc = EXIT_OK;
	if (s.damage) {
		tool_err(cmd, "%llu damage in %s/data.mdb: %s", (unsigned long long)s.damage, path,
		         advice);
		rc = EXIT_FAIL;
	}
out:
	for (size_t i = 0; i < o.nr; i++)
		free(o.readable[i]);
	for (size_t i = 0; i < o.nd; i++)
		free(o.damaged[i]);
	free(o.readable);
	free(o.damaged);
	return rc;
}

/* Tables held by a drop or truncate that has not finished (one cut short
 * included): not findings (a drop may be running), but said, each with
 * what finishes it.  JSON: ,"held":[{table, state}]. */
static int report_held(mrtx_db *db, int json)
{
	name_list tables;
	size_t shown = 0;
	int rc, held;

	if ((rc = names_list(db, &tables)))
		return rc;
	if (json)
		fputs(",\"held\":[", stdout);
	for (size_t i = 0; i < tables.n; i++) {
		if ((rc = admin_table_held(db, tables.v[i], &held)) == MRTX_ENOTABLE) {
			rc = 0; /* (dropped since the list) */
			continue;
		}
		if (rc)
			break;
		if (!held)
			continue;
		if (json) {
			fputs(shown ? ",{\"table\":" : "{\"table\":", stdout);
			json_str(stdout, tables.v[i], strlen(tables.v[i]));
			printf(",\"state\":\"%s\"}", held == ADMIN_HELD_CLOSED ? "closed" : "frozen");
		} else {
			printf("table %s is %s by a drop or truncate (of it or of a family) that has "
			       "not finished: commits that write it fail until it ends; if it was "
			       "cut short, run it again\n", tables.v[i],
			       held == ADMIN_HELD_CLOSED ? "closed" : "frozen");
		}
		shown++;
	}
	if (json)
		putchar(']');
	names_free(&tables);
	return rc;
}

int cmd_check(int argc, char **argv)
{
	static const char usage[] = "mrtx check STORE [--strict | --deep] [--json]";
	int json = 0, strict = 0, deep = 0, npos, help, rc, ok;
	const tool_opt opts[] = { { "json", 0, NULL, &json }, { "strict", 0, NULL, &strict },
	                          { "deep", 0, NULL, &deep }, { NULL, 0, NULL, NULL } };
	char **pos = argv + 1;
	check_stats s;
	check_out o;
	mrtx_db *db;
	int ncell = 0;

	/* STORE TABLE ROW F:Q ...: a cell's condition, as a script's check */
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--key") == 0)
			i++;
		else if (strncmp(argv[i], "--", 2) != 0)
			ncell++;
	}
	if (ncell >= 4)
		return cmd_check_cell(argc, argv);
	if ((rc = args_parse(argv[0], usage, argc, argv, opts, pos, &npos, &help)))
		return rc;
	if (help) {
		printf("usage: %s\n\n"
		       "Verify the lock family: every record decodes and carries this store's\n"
		       "tag; every non-STABLE secondary's primary exists and either lists it\n"
		       "or no longer holds its txn; no PREWRITTEN secondary under a primary\n"
		       "that is STABLE with the same txn (dangling); listed secondaries point\n"
		       "back at their primary.  On LMDB, the store's count of unsettled lock\n"
		       "records is recounted from one snapshot: a mismatch fails the check, and\n"
		       "`mrtx upgrade STORE` counts anew.\n"
		       "Findings are CORRUPT (impossible states: exit 1) or RESOLVABLE (stale\n"
		       "locks and orphans of crashed writers, which `mrtx recover` settles:\n"
		       "reported, exit 0 unless --strict).  Transactions in flight are counted\n"
		       "as live and are not findings.  After `mrtx recover`, a healthy store\n"
		       "passes --strict.  A table frozen (on RADOS, also closed) by a drop or\n"
		       "truncate that has not finished is said, not a finding: the drop may be\n"
		       "running (--json: held, [{table, state}]).\n\n"
		       "--deep verifies an LMDB store's file instead, page by page, without\n"
		       "opening the store (so also one that mrtx refuses to open), trusting\n"
		       "nothing in it: both meta pages; every page of the main and free-list\n"
		       "B-trees (page numbers, flags, node bounds, key order within pages and\n"
		       "across the tree, separators bounding their children, no cycle, no\n"
		       "page reached twice, overflow runs inside the file); the meta page's\n"
		       "counts; every page in use or free, never both; and mrtx's records\n"
		       "(every data record's checksum, metadata, keys of known tables, cell\n"
		       "version headers, lock records that decode, a lock record after each\n"
		       "row's cells).  Each damage is\n"
		       "listed with its page, its key and what is wrong; exit 1 if any, with\n"
		       "what can still be read (tables the damage does not reach, which\n"
		       "`mrtx --read-only dump` copies out) or that a backup must be restored.\n"
		       "On a store being written, a walk that a commit overtook is made again\n"
		       "(three times at most); check a backup of a busy store instead.  Not\n"
		       "for RADOS stores (exit 2).\n\n"
		       "mrtx check STORE TABLE ROW FAMILY:QUALIFIER OP NUMBER|absent|present\n"
		       "tests a cell instead, as a txn script's check (exit 3 when the\n"
		       "condition does not hold; see its --help).\n", usage);
		return EXIT_OK;
	}
	if (npos != 1)
		return tool_usage_err(argv[0], usage, "expected STORE (or STORE TABLE ROW "
		                      "FAMILY:QUALIFIER OP NUMBER to test a cell)");
	if (deep && strict)
		return tool_usage_err(argv[0], usage, "--strict is for the lock family, not --deep");
	if (deep && strncmp(pos[0], "rados://", 8) == 0)
		return tool_usage_err(argv[0], usage, "--deep reads an LMDB store's file, and a "
		                      "RADOS store has none (run check without --deep)");
	if (deep)
		return check_deep(argv[0], pos[0], json);
	if ((rc = tool_open(argv[0], pos[0], 0, &db)))
		return rc;
	memset(&o, 0, sizeof(o));
	o.json = json;
	if (json)
		fputs("{\"issues\":[", stdout);
	rc = admin_check(db, &s, on_issue, tool_stderr_tty() ? on_progress : NULL, &o);
	if (o.shown)
		fputc('\n', stderr);
	if (rc) {
		if (json)
			puts("]}");
		rc = tool_fail(argv[0], NULL, rc);
		goto out;
	}
	ok = s.corrupt == 0 && (!strict || s.resolvable == 0);
	if (json)
		printf("%s]", o.n ? "\n" : "");
	if ((rc = report_held(db, json))) {
		if (json)
			puts("}");
		rc = tool_fail(argv[0], "tables' states", rc);
		goto out;
	}
	if (json) {
		printf(",\"ok\":%s,\"strict\":%s,\"tables\":%lu,\"lock_records\":%lu,"
		       "\"locks\":{\"STABLE\":%lu,\"PREWRITTEN\":%lu,\"COMMITTED\":%lu,"
		       "\"ABORTED\":%lu},\"live\":%lu,\"corrupt\":%lu,\"resolvable\":%lu}\n",
		       ok ? "true" : "false", strict ? "true" : "false",
		       s.tables, s.locks, s.by_state[0], s.by_state[1], s.by_state[2],
		       s.by_state[3], s.live, s.corrupt, s.resolvable);
	} else {
		printf("%lu tables, %lu lock records (%lu non-STABLE; %lu live txns or "
		       "orphans in flight): %lu corrupt, %lu resolvable by recover\n", s.tables,
		       s.locks, s.by_state[1] + s.by_state[2] + s.by_state[3], s.live, s.corrupt,
		       s.resolvable);
		puts(ok ? "ok" : "FAILED");
	}
	if (!ok) {
		if (s.corrupt && strncmp(pos[0], "rados://", 8) == 0)
			tool_err(argv[0], "%lu corrupt, %lu resolvable findings: the corrupt ones "
			         "(listed above) are damage the protocol cannot leave", s.corrupt,
			         s.resolvable);
		else if (s.corrupt)
			tool_err(argv[0], "%lu corrupt, %lu resolvable findings: the corrupt ones "
			         "(listed above) are damage the protocol cannot leave; `mrtx check "
			         "--deep %s` checks the whole file", s.corrupt, s.resolvable, pos[0]);
		else
			tool_err(argv[0], "0 corrupt, %lu resolvable findings (--strict): locks "
			         "of crashed writers, which `mrtx recover %s` settles", s.resolvable,
			         pos[0]);
		rc = EXIT_FAIL;
	}
out:
	mrtx_close(db);
	return rc;
}
