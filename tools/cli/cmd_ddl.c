/*
 * cmd_ddl.c - add-family, alter, drop-table, truncate: a table's schema
 * and its whole data, through mrtx_add_family, mrtx_alter_family,
 * mrtx_drop_family, mrtx_drop_table and mrtx_truncate_table (alter --drop:
 * LMDB stores; a RADOS store says it is not supported).  None of them
 * creates a store.
 */
#include "cmds.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "txn/admin.h"
#include "util.h"

int cmd_add_family(int argc, char **argv)
{
	static const char usage[] = "mrtx add-family STORE TABLE FAMILY";
	char **pos = argv + 1;
	int npos, help, rc;
	mrtx_db *db;

	if ((rc = args_parse(argv[0], usage, argc, argv, NULL, pos, &npos, &help)))
		return rc;
	if (help)
		HELP(usage, "Add the column family FAMILY to TABLE.  Its cells can be written at\n"
		     "once, by this and every other process with the store open.  A family\n"
		     "is removed with alter --drop (LMDB stores only).\n");
	if (npos != 3)
		return tool_usage_err(argv[0], usage, "expected STORE, TABLE and FAMILY");
	if ((rc = arg_name(argv[0], "table", pos[1])) ||
	    (rc = arg_name(argv[0], "family", pos[2])))
		return rc;
	if ((rc = tool_open(argv[0], pos[0], 0, &db)))
		return rc;
	if ((rc = mrtx_add_family(db, pos[1], pos[2])))
		rc = tool_fail(argv[0], NULL, rc);
	mrtx_close(db);
	return rc ? EXIT_FAIL : EXIT_OK;
}

/* --ttl: FOREVER (0), or a decimal number with an optional unit ms (the
 * default), s, m, h or d, into milliseconds. */
static int arg_ttl(const char *cmd, const char *arg, uint64_t *ms)
{
	static const struct {
		const char *unit;
		uint64_t ms;
	} units[] = { { "", 1 }, { "ms", 1 }, { "s", 1000 }, { "m", 60000 },
		      { "h", 3600000 }, { "d", 86400000 } };
	unsigned long long v;
	char *end;

	if (strcmp(arg, "FOREVER") == 0 || strcmp(arg, "forever") == 0) {
		*ms = 0;
		return 0;
	}
	errno = 0;
	if (arg[0] >= '0' && arg[0] <= '9' && (v = strtoull(arg, &end, 10), errno == 0))
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (strcmp(end, units[i].unit) == 0 && v <= UINT64_MAX / units[i].ms) {
				*ms = v * units[i].ms;
				return 0;
			}
	tool_err(cmd, "--ttl: '%s' is not a duration (a number with ms, s, m, h or d, "
	         "milliseconds without; or FOREVER)", arg);
	return EXIT_USAGE;
}

/* --versions, --min-versions: a decimal number of versions. */
static int arg_count(const char *cmd, const char *what, const char *arg, uint32_t *out)
{
	size_t v;
	int rc;

	if ((rc = arg_size(cmd, what, arg, &v)))
		return rc;
	if (v > UINT32_MAX) {
		tool_err(cmd, "%s: %zu is too many versions (at most %lu)", what, v,
		         (unsigned long)UINT32_MAX);
		return EXIT_USAGE;
	}
	*out = (uint32_t)v;
	return 0;
}

int cmd_alter(int argc, char **argv)
{
	static const char usage[] = "mrtx alter STORE TABLE FAMILY [--versions N] "
	                            "[--min-versions N] [--ttl DURATION] [--drop]";
	const char *vers = NULL, *minv = NULL, *ttl = NULL;
	int drop = 0, npos, help, rc;
	const tool_opt opts[] = { { "versions", 1, &vers, NULL },
		                  { "min-versions", 1, &minv, NULL },
		                  { "ttl", 1, &ttl, NULL },
		                  { "drop", 0, NULL, &drop },
		                  { NULL, 0, NULL, NULL } };
	const char *const *fams;
	mrtx_family_spec f;
	char **pos = argv + 1;
	size_t nf, i;
	mrtx_db *db;

	if ((rc = args_parse(argv[0], usage, argc, argv, opts, pos, &npos, &help)))
		return rc;
	if (help)
		HELP(usage, "Change the version policy of the column family FAMILY of TABLE\n"
		     "(HBase's alter): --versions N keeps N versions of each cell (at least\n"
		     "1), --min-versions N keeps the newest N even past the TTL, --ttl\n"
		     "DURATION drops versions older than DURATION (a number with ms, s, m,\n"
		     "h or d; milliseconds without; FOREVER: none).  What is not given stays\n"
		     "as it was (see describe).  Every process with the store open follows\n"
		     "the new policy from its next read of the table (RADOS: from its next\n"
		     "write, which conflicts once).  Versions it no longer\n"
		     "keeps are hidden at once and removed by the next write of their cell\n"
		     "or by gc; versions removed before do not come back when it grows.\n"
		     "--drop removes the family: its cells, with their versions, and its\n"
		     "name (add-family may add it again, empty), with the guarantees of\n"
		     "drop-table: the table is frozen, every lock in it settled, then one\n"
		     "write removes the cells; a transaction still writing the family fails\n"
		     "with a conflict.  A table's last family cannot be dropped, nor a\n"
		     "family of a table an index uses.  --drop: LMDB stores only.\n");
	if (npos != 3)
		return tool_usage_err(argv[0], usage, "expected STORE, TABLE and FAMILY");
	if (drop && (vers || minv || ttl))
		return tool_usage_err(argv[0], usage, "--drop takes no other option");
	if (!drop && !vers && !minv && !ttl)
		return tool_usage_err(argv[0], usage, "nothing to change: give --versions, "
		                      "--min-versions or --ttl");
	if ((rc = arg_name(argv[0], "table", pos[1])) ||
	    (rc = arg_name(argv[0], "family", pos[2])))
		return rc;
	if (drop) {
		if ((rc = tool_open(argv[0], pos[0], 0, &db)))
			return rc;
		if ((rc = mrtx_drop_family(db, pos[1], pos[2])))
			rc = tool_fail(argv[0], NULL, rc);
		mrtx_close(db);
		return rc ? EXIT_FAIL : EXIT_OK;
	}
	memset(&f, 0, sizeof(f));
	if ((vers && (rc = arg_count(argv[0], "--versions", vers, &f.max_versions))) ||
	    (minv && (rc = arg_count(argv[0], "--min-versions", minv, &f.min_versions))) ||
	    (ttl && (rc = arg_ttl(argv[0], ttl, &f.ttl_ms))))
		return rc;
	if (vers && f.max_versions == 0)
		return tool_usage_err(argv[0], usage, "--versions 0: a family keeps at least one "
		                      "version of each cell");
	if ((rc = tool_open(argv[0], pos[0], 0, &db)))
		return rc;
	if ((rc = mrtx_table_families(db, pos[1], &fams, &nf)))
		goto fail;
	for (i = 0; i < nf && strcmp(fams[i], pos[2]) != 0; i++)
		;
	if (i == nf) {
		tool_err(argv[0], "table '%s' has no family '%s' (see describe)", pos[1], pos[2]);
		mrtx_close(db);
		return EXIT_FAIL;
	}
	{
		/* what is not given stays as it was */
		mrtx_family_spec cur;
		uint32_t mx = f.max_versions, mn = f.min_versions;
		uint64_t tt = f.ttl_ms;

		if ((rc = admin_family_policy(db, pos[1], i, &cur)))
			goto fail;
		f = cur;
		f.name = pos[2];
		if (vers)
			f.max_versions = mx;
		if (minv)
			f.min_versions = mn;
		if (ttl)
			f.ttl_ms = tt;
	}
	if ((rc = mrtx_alter_family(db, pos[1], &f)))
		goto fail;
	mrtx_close(db);
	return EXIT_OK;
fail:
	rc = tool_fail(argv[0], NULL, rc);
	mrtx_close(db);
	return rc;
}

/* drop-table and truncate: the same shape, the same guarantees. */
static int drop_or_truncate(int argc, char **argv, int drop)
{
	const char *usage = drop ? "mrtx drop-table STORE TABLE" : "mrtx truncate STORE TABLE";
	char **pos = argv + 1;
	int npos, help, rc;
	mrtx_db *db;

	if ((rc = args_parse(argv[0], usage, argc, argv, NULL, pos, &npos, &help)))
		return rc;
	if (help) {
		printf("usage: %s\n\n", usage);
		printf(drop ? "Drop TABLE: its rows and its name, which can then be created anew.\n"
		            : "Truncate TABLE: remove every row, keep the table and its families.\n");
		printf("Transactional with respect to running transactions: the table is\n"
		       "frozen first (commits that would write it fail with a conflict),\n"
		       "every lock in it is settled (a transaction still in flight is rolled\n"
		       "back, as by recover --force), then one write removes the rows, so no\n"
		       "reader sees part of them gone.  A table an index uses cannot be\n"
		       "dropped or truncated.  If it fails half way the table stays frozen\n"
		       "(readable, not writable) until the command is run again; on RADOS\n"
		       "one cut short after closing the table's tablets leaves it unreadable\n"
		       "until then.  There is no confirmation: the rows are gone when it\n"
		       "returns.\n");
		return EXIT_OK;
	}
	if (npos != 2)
		return tool_usage_err(argv[0], usage, "expected STORE and TABLE");
	if ((rc = arg_name(argv[0], "table", pos[1])))
		return rc;
	if ((rc = tool_open(argv[0], pos[0], 0, &db)))
		return rc;
	rc = drop ? mrtx_drop_table(db, pos[1]) : mrtx_truncate_table(db, pos[1]);
	if (rc)
		rc = tool_fail(argv[0], NULL, rc);
	mrtx_close(db);
	return rc ? EXIT_FAIL : EXIT_OK;
}

int cmd_drop_table(int argc, char **argv)
{
	return drop_or_truncate(argc, argv, 1);
}

int cmd_truncate(int argc, char **argv)
{
	return drop_or_truncate(argc, argv, 0);
}
