/*
 * cmd_dump.c - `mrtx dump`: one table to the text format of dumpfmt.h,
 * through the public API (so on every backend); `mrtx load` is cmd_load.c.
 *
 * dump reads the whole table in ONE transaction (mrtx_run), so what it
 * writes is a consistent snapshot; a retried attempt must not have written
 * anything, so the text goes to a temporary file first: next to FILE,
 * renamed over it once the transaction committed, or in $TMPDIR, copied to
 * standard output then.  The transaction keeps every cell it read until it
 * commits (the library validates the scan there): memory grows with the
 * table (its data plus some 200 bytes a row).  Writes to the table while
 * it is read make the commit conflict and the dump start over (up to 10
 * attempts).
 */
#include "cmds.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dumpfmt.h"
#include "txn/admin.h"
#include "util.h"

#define SCAN_LOCKED_RETRIES 200 /* each waits lock_wait_ms (50 ms) */

/* fn return values of ours for mrtx_run (positive: never mrtx codes) */
enum { DUMP_EIO = 1, DUMP_EFAMILY = 2 };

/* ------------------------------------------------------------------ dump */

typedef struct dump_ctx {
	const char *table;
	const char *const *fams;
	mrtx_family_spec *pol; /* each family's policy */
	size_t nf;
	int versions;          /* --versions: every version, with its timestamp */
	int v2;                /* a policy other than 1:0:0, or versions */
	FILE *out;
	unsigned long long cells;
	char badfam[MRTX_MAX_NAME + 1];
} dump_ctx;

static int out_reset(FILE *f)
{
	if (fflush(f) != 0 || ftruncate(fileno(f), 0) != 0)
		return -1;
	rewind(f);
	return 0;
}

static int fam_known(const dump_ctx *c, const char *family)
{
	for (size_t i = 0; i < c->nf; i++)
		if (strcmp(c->fams[i], family) == 0)
			return 1;
	return 0;
}

static int dump_fn(mrtx_txn *txn, void *p)
{
	dump_ctx *c = p;
	mrtx_scan_spec spec;
	mrtx_scanner *s;
	mrtx_cell cell;
	int rc, locked = 0;

	if (out_reset(c->out))
		return DUMP_EIO;
	c->cells = 0;
	/* version 1 when it says everything: older readers read it */
	fprintf(c->out, "%s %d\ntable ", DUMP_MAGIC, c->v2 ? 2 : 1);
	dump_put_field(c->out, c->table, strlen(c->table));
	putc('\n', c->out);
	for (size_t i = 0; i < c->nf; i++)
		dump_put_family(c->out, c->fams[i], c->v2 ? &c->pol[i] : NULL);
	fputs(c->versions ? "versions\ncells\n" : "cells\n", c->out);
	memset(&spec, 0, sizeof(spec));
	spec.table = c->table;
	if ((rc = mrtx_scan_open(txn, &spec, &s)))
		return rc;
	if (c->versions && (rc = mrtx_scan_versions(s, UINT32_MAX))) {
		mrtx_scan_close(s);
		return rc;
	}
	for (;;) {
		rc = mrtx_scan_next(s, &cell);
		if (rc == MRTX_ELOCKED && locked++ < SCAN_LOCKED_RETRIES)
			continue; /* the scanner retries the row; the dump goes on */
		if (rc)
			break;
		if (!fam_known(c, cell.family)) {
			snprintf(c->badfam, sizeof(c->badfam), "%s", cell.family);
			rc = DUMP_EFAMILY;
			break;
		}
		dump_put_cell(c->out, &cell, c->versions ? mrtx_scan_ts(s) : 0);
		c->cells++;
		if (ferror(c->out)) {
			rc = DUMP_EIO;
			break;
		}
	}
	mrtx_scan_close(s);
	if (rc != MRTX_NOTFOUND)
		return rc;
	fprintf(c->out, "end %llu\n", c->cells);
	return fflush(c->out) != 0 || ferror(c->out) ? DUMP_EIO : 0;
}

/* A temporary file: next to path (path given) or in $TMPDIR (unlinked). */
static FILE *temp_open(const char *cmd, const char *path, char **tmpname)
{
	const char *dir = getenv("TMPDIR");
	/* beside path, or in the temporary directory: base . suffix, sized
	 * from both (no formatting, so nothing for a compiler to guess) */
	const char *base = path ? path : dir && *dir ? dir : "/tmp";
	const char *suffix = path ? ".XXXXXX" : "/mrtx-dump.XXXXXX";
	size_t nb = strlen(base), ns = strlen(suffix);
	char *name = malloc(nb + ns + 1);
	FILE *f;
	int fd;

	*tmpname = NULL;
	if (!name) {
		tool_err(cmd, "out of memory");
		return NULL;
	}
	memcpy(name, base, nb);
	memcpy(name + nb, suffix, ns + 1);
	if ((fd = mkstemp(name)) < 0) {
		if (path)
			tool_err(cmd, "cannot write %s (a dump goes to a temporary file beside it "
			         "first): %s", path, strerror(errno));
		else
			tool_err(cmd, "cannot create a temporary file %s: %s", name, strerror(errno));
		free(name);
		return NULL;
	}
	if (path) {
		struct stat sb;
		mode_t um = umask(0);

		umask(um);
		/* the mode a shell redirection would give, or the file's own */
		if (fchmod(fd, stat(path, &sb) == 0 ? sb.st_mode & 07777 : 0666 & ~um) != 0) {
			tool_err(cmd, "%s: %s", name, strerror(errno));
			close(fd);
			unlink(name);
			free(name);
			return NULL;
		}
	} else {
		unlink(name);
	}
	if (!(f = fdopen(fd, "w+"))) {
		tool_err(cmd, "%s: %s", name, strerror(errno));
		close(fd);
		if (path)
			unlink(name);
		free(name);
		return NULL;
	}
	if (path)
		*tmpname = name;
	else
		free(name);
	return f;
}

/* Copy the spool to stdout. */
static int spool_copy(const char *cmd, FILE *spool)
{
	char buf[65536];
	size_t n;

	rewind(spool);
	while ((n = fread(buf, 1, sizeof(buf), spool)) > 0)
		if (fwrite(buf, 1, n, stdout) != n)
			break;
	if (ferror(spool) || fflush(stdout) != 0 || ferror(stdout)) {
		tool_err(cmd, "writing the dump: %s", strerror(errno));
		return EXIT_FAIL;
	}
	return 0;
}

int cmd_dump(int argc, char **argv)
{
	static const char usage[] = "mrtx dump STORE TABLE [FILE] [--versions]";
	char **pos = argv + 1, *tmpname = NULL;
	const char *file;
	int npos, help, rc, versions = 0;
	const tool_opt opts[] = { { "versions", 0, NULL, &versions }, { NULL, 0, NULL, NULL } };
	mrtx_db *db = NULL;
	dump_ctx c;

	if ((rc = args_parse(argv[0], usage, argc, argv, opts, pos, &npos, &help)))
		return rc;
	if (help)
		HELP(usage, "Write every cell of TABLE to FILE (default, or \"-\": standard output)\n"
		     "in the dump format (mrtx(1) DUMP FORMAT): a header naming the format\n"
		     "version, the table and its families with their version policies,\n"
		     "one line per cell with every field escaped so that any bytes\n"
		     "round-trip, and an end line with the number of cells.  --versions\n"
		     "writes every version of each cell a read shows, newest first, each\n"
		     "with its commit timestamp (load restores them).  The table is read in one transaction: a consistent\n"
		     "snapshot, which holds the table's data in memory until it commits and\n"
		     "starts over when a concurrent write to the table makes it conflict.\n"
		     "FILE is replaced only once the dump is complete.\n");
	if (npos < 2 || npos > 3)
		return tool_usage_err(argv[0], usage, "expected STORE, TABLE and maybe FILE");
	if ((rc = arg_name(argv[0], "table", pos[1])))
		return rc;
	file = npos == 3 && strcmp(pos[2], "-") != 0 ? pos[2] : NULL;
	memset(&c, 0, sizeof(c));
	c.table = pos[1];
	if ((rc = tool_open(argv[0], pos[0], 0, &db)))
		return rc;
	if ((rc = mrtx_table_families(db, c.table, &c.fams, &c.nf))) {
		rc = tool_fail(argv[0], NULL, rc);
		goto out;
	}
	c.versions = versions;
	c.v2 = versions;
	if (!(c.pol = calloc(c.nf, sizeof(*c.pol)))) {
		tool_err(argv[0], "out of memory");
		rc = EXIT_FAIL;
		goto out;
	}
	for (size_t i = 0; i < c.nf; i++) {
		if ((rc = admin_family_policy(db, c.table, i, &c.pol[i]))) {
			rc = tool_fail(argv[0], NULL, rc);
			goto out;
		}
		c.v2 |= c.pol[i].max_versions != 1 || c.pol[i].min_versions || c.pol[i].ttl_ms;
	}
	if (!(c.out = temp_open(argv[0], file, &tmpname))) {
		rc = EXIT_FAIL;
		goto out;
	}
	rc = mrtx_run(db, dump_fn, &c, 0);
	if (rc == DUMP_EIO) {
		tool_err(argv[0], "writing the dump: %s", strerror(errno));
		rc = EXIT_FAIL;
	} else if (rc == DUMP_EFAMILY) {
		tool_err(argv[0], "a cell of family '%s', which the table's family list lacks "
		         "(the table changed during the dump?  run it again)", c.badfam);
		rc = EXIT_FAIL;
	} else if (rc) {
		rc = tool_fail(argv[0], NULL, rc);
	} else if (!file) {
		rc = spool_copy(argv[0], c.out);
	} else if (fsync(fileno(c.out)) != 0 || rename(tmpname, file) != 0) {
		tool_err(argv[0], "%s: %s", file, strerror(errno));
		rc = EXIT_FAIL;
	} else {
		free(tmpname);
		tmpname = NULL; /* renamed: nothing to remove */
	}
out:
	free(c.pol);
	if (c.out)
		fclose(c.out);
	if (tmpname) {
		unlink(tmpname);
		free(tmpname);
	}
	mrtx_close(db);
	return rc;
}
