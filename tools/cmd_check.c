/*
 * cmd_check.c - `mrtx check STORE [--strict] [--json]`: verify the lock
 * family (recovery/check.h says what is checked and why).
 *
 * Exit 1 when a finding is CORRUPT (a state the protocol cannot produce),
 * and with --strict also when one is RESOLVABLE (stale locks and orphans a
 * crashed writer left, which `mrtx recover` settles).  Without --strict a
 * store with pending recovery passes: it is consistent, only not yet tidy.
 */
#include "cmds.h"

#include <string.h>

#include "recovery/check.h"
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

static int on_issue(const check_issue *is, void *payload)
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
		json_str(stdout, is->table->name, strlen(is->table->name));
		fputs(",\"row\":", stdout);
		json_bytes(stdout, is->row.data, is->row.size);
		printf(",\"txn\":\"%s\",\"detail\":", hex);
		json_str(stdout, is->detail, strlen(is->detail));
		putchar('}');
	} else {
		printf("%s %s: ", is->severity == CHECK_CORRUPT ? "CORRUPT" : "RESOLVABLE",
		       is->kind);
		print_escaped(stdout, is->table->name, strlen(is->table->name), ESC_SPACE);
		putchar('/');
		print_escaped(stdout, is->row.data, is->row.size, ESC_SPACE);
		printf(" txn %s: %s\n", hex, is->detail);
	}
	o->n++;
	return 0;
}

int cmd_check(int argc, char **argv)
{
	static const char usage[] = "mrtx check STORE [--strict] [--json]";
	int json = 0, strict = 0, npos, help, rc, ok;
	const tool_opt opts[] = { { "json", 0, NULL, &json }, { "strict", 0, NULL, &strict },
	                          { NULL, 0, NULL, NULL } };
	char **pos = argv + 1;
	check_stats s;
	check_out o;
	mrtx_db *db;

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
		       "passes --strict.\n", usage);
		return EXIT_OK;
	}
	if (npos != 1)
		return tool_usage_err(argv[0], usage, "expected STORE");
	if ((rc = tool_open(argv[0], pos[0], 0, &db)))
		return rc;
	memset(&o, 0, sizeof(o));
	o.json = json;
	if (json)
		fputs("{\"issues\":[", stdout);
	rc = check_store_progress(mrtx__db_store(db), &s, on_issue,
	                          tool_stderr_tty() ? on_progress : NULL, &o);
	if (o.shown)
		fputc('\n', stderr);
	if (rc) {
		if (json)
			puts("]}");
		rc = tool_fail(argv[0], NULL, rc);
		goto out;
	}
	ok = s.corrupt == 0 && (!strict || s.resolvable == 0);
	if (json) {
		printf("%s],\"ok\":%s,\"strict\":%s,\"tables\":%lu,\"lock_records\":%lu,"
		       "\"locks\":{\"STABLE\":%lu,\"PREWRITTEN\":%lu,\"COMMITTED\":%lu,"
		       "\"ABORTED\":%lu},\"live\":%lu,\"corrupt\":%lu,\"resolvable\":%lu}\n",
		       o.n ? "\n" : "", ok ? "true" : "false", strict ? "true" : "false",
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
		tool_err(argv[0], "%lu corrupt, %lu resolvable findings%s", s.corrupt,
		         s.resolvable, strict ? " (--strict)" : "");
		rc = EXIT_FAIL;
	}
out:
	mrtx_close(db);
	return rc;
}
