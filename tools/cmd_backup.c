/*
 * cmd_backup.c - `mrtx backup STORE DEST`: mrtx_backup, a consistent copy
 * of a live LMDB store with every transaction in flight settled in it.
 */
#include "cmds.h"

#include "util.h"

int cmd_backup(int argc, char **argv)
{
	static const char usage[] = "mrtx backup STORE DEST";
	char **pos = argv + 1;
	int npos, help, rc;
	mrtx_db *db;

	if ((rc = args_parse(argv[0], usage, argc, argv, NULL, pos, &npos, &help)))
		return rc;
	if (help) {
		printf("usage: %s\n\n"
		       "Copy the LMDB store STORE, while it is in use, into DEST (a new or\n"
		       "empty directory; nothing is overwritten): LMDB's compacting copy as\n"
		       "of one instant, in which every transaction that was committing then\n"
		       "is settled as if its writer had died (forward if past its commit\n"
		       "point, else back), so the copy has no lock left (`mrtx check --strict`\n"
		       "passes) and holds exactly the transactions committed at that instant.\n"
		       "DEST holds a store only once the backup is complete.  Not for RADOS\n"
		       "stores (use dump and load).\n", usage);
		return EXIT_OK;
	}
	if (npos != 2)
		return tool_usage_err(argv[0], usage, "expected STORE and DEST");
	if ((rc = tool_open(argv[0], pos[0], 0, &db)))
		return rc;
	if ((rc = mrtx_backup(db, pos[1])))
		rc = tool_fail(argv[0], NULL, rc);
	mrtx_close(db);
	return rc;
}
