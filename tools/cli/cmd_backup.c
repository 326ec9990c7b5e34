/*
 * cmd_backup.c - `mrtx backup STORE DEST`: mrtx_backup, a consistent copy
 * of a live LMDB store with every transaction in flight settled in it.
 */
#include "cmds.h"

#include "util.h"
#include "valio.h"

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

/* `mrtx upgrade STORE`: mrtx_upgrade, an LMDB store of format 3 to 7 or a
 * RADOS store of layout format 1-3 to this mrtx's format in place (crash
 * safe: run it again to resume). */
int cmd_upgrade(int argc, char **argv)
{
	static const char usage[] = "mrtx upgrade STORE";
	char **pos = argv + 1;
	int npos, help, rc;
	uint64_t cells = 0;

	if ((rc = args_parse(argv[0], usage, argc, argv, NULL, pos, &npos, &help)))
		return rc;
	if (help) {
		printf("usage: %s\n\n"
		       "Convert the store STORE, written by an older mrtx (LMDB store format 3\n"
		       "to 7, RADOS layout format 1 to 3), to this mrtx's format (LMDB 8, RADOS\n"
		       "4), in place.  From before cell versions, every cell gets the version of\n"
		       "the commit that wrote it; every LMDB record gets its checksum, a store\n"
		       "of format 4 its count of unsettled locks, and the format record the\n"
		       "count and digest of the metadata records.  No other process may\n"
		       "have the store open.  Crash\n"
		       "safe: it converts in batches, each recording where the next starts,\n"
		       "under a format nothing else opens; run it again after a crash and it\n"
		       "resumes.  A store of this format is left as it is.  Records are sealed\n"
		       "as they are found: run `mrtx check --deep STORE` first.\n", usage);
		return EXIT_OK;
	}
	if (npos != 1)
		return tool_usage_err(argv[0], usage, "expected STORE");
	if ((rc = mrtx_upgrade(pos[0], &cells)))
		return tool_fail(argv[0], NULL, rc);
	/* (the formats this mrtx writes: RADOS layout 4, LMDB store 8) */
	printf("%s: format %d (%llu %s converted)\n", pos[0],
	       strncmp(pos[0], "rados://", 8) == 0 ? 4 : 8, (unsigned long long)cells,
	       strncmp(pos[0], "rados://", 8) == 0 ? "cells" : "records");
	return EXIT_OK;
}

/* `mrtx gc STORE [--keep MS]`: mrtx_gc. */
int cmd_gc(int argc, char **argv)
{
	static const char usage[] = "mrtx gc STORE [--keep MS]";
	const char *keep = NULL;
	const tool_opt opts[] = { { "keep", 1, &keep, NULL }, { NULL, 0, NULL, NULL } };
	char **pos = argv + 1;
	int npos, help, rc;
	size_t keep_ms = 0;
	uint64_t n = 0;
	mrtx_db *db;

	if ((rc = args_parse(argv[0], usage, argc, argv, opts, pos, &npos, &help)))
		return rc;
	if (help) {
		printf("usage: %s\n\n"
		       "Collect old versions in the store STORE: drop what the families'\n"
		       "policies (create-table FAMILY:VERSIONS[:MIN[:TTL_MS]]) no longer keep,\n"
		       "and deleted cells deleted before the safe point: the store's newest\n"
		       "commit timestamp, less --keep MS milliseconds (default 0).  Reads at\n"
		       "snapshots below the safe point (get/scan --at) are refused from then\n"
		       "on.  Runs beside other processes; a run cut short resumes next time.\n"
		       "RADOS: never above a running transaction's snapshot the store's\n"
		       "registry lists (those older than 2.5 s that keep reading); give\n"
		       "--keep 5000 or more to spare younger ones too.\n"
		       "Prints the number of versions removed.\n", usage);
		return EXIT_OK;
	}
	if (npos != 1)
		return tool_usage_err(argv[0], usage, "expected STORE");
	if (keep && (rc = arg_size(argv[0], "--keep", keep, &keep_ms)))
		return rc;
	if ((rc = tool_open(argv[0], pos[0], 0, &db)))
		return rc;
	if ((rc = mrtx_gc(db, keep_ms, &n)))
		rc = tool_fail(argv[0], NULL, rc);
	else
		printf("%llu\n", (unsigned long long)n);
	mrtx_close(db);
	return rc ? rc : stdout_finish(argv[0]);
}
