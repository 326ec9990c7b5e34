/*
 * cmd_ddl.c - add-family, drop-table, truncate: a table's schema and its
 * whole data, through mrtx_add_family, mrtx_drop_table and
 * mrtx_truncate_table, on either backend.  None of them creates a store.
 */
#include "cmds.h"

#include <stdlib.h>
#include <string.h>

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
		     "cannot be removed again (drop or truncate the table instead).\n");
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
