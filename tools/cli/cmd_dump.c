/*
 * cmd_dump.c - `mrtx dump` and `mrtx load`: one table to and from the
 * text format of dumpfmt.h, through the public API (so on every backend).
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
 *
 * load reads a dump and puts its cells, committing every --batch N rows
 * (default 1000, and at most LOAD_BATCH_BYTES of data a transaction, cut
 * at row boundaries; 0: the whole load in one transaction).  A batch is
 * parsed in full before it is written (the last one once the input ends
 * right after "end"), so a bad line leaves nothing of its batch written; earlier batches stay committed (the message says which
 * lines), and since a load only puts cells, running it again after a fix
 * is safe.  The table is created from the header's families when missing;
 * an existing table must have every family of the header.
 */
#include "cmds.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dumpfmt.h"
#include "util.h"

#define LOAD_BATCH_ROWS 1000
#define LOAD_BATCH_BYTES ((size_t)16 << 20)
#define SCAN_LOCKED_RETRIES 200 /* each waits lock_wait_ms (50 ms) */

/* fn return values of ours for mrtx_run (positive: never mrtx codes) */
enum { DUMP_EIO = 1, DUMP_EFAMILY = 2 };

/* ------------------------------------------------------------------ dump */

typedef struct dump_ctx {
	const char *table;
	const char *const *fams;
	size_t nf;
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
	fprintf(c->out, "%s %d\ntable ", DUMP_MAGIC, DUMP_VERSION);
	dump_put_field(c->out, c->table, strlen(c->table));
	putc('\n', c->out);
	for (size_t i = 0; i < c->nf; i++) {
		fputs("family ", c->out);
		dump_put_field(c->out, c->fams[i], strlen(c->fams[i]));
		putc('\n', c->out);
	}
	fputs("cells\n", c->out);
	memset(&spec, 0, sizeof(spec));
	spec.table = c->table;
	if ((rc = mrtx_scan_open(txn, &spec, &s)))
		return rc;
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
		dump_put_cell(c->out, &cell);
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
	size_t n = path ? strlen(path) + 8 : strlen(dir && *dir ? dir : "/tmp") + 24;
	char *name = malloc(n);
	FILE *f;
	int fd;

	*tmpname = NULL;
	if (!name) {
		tool_err(cmd, "out of memory");
		return NULL;
	}
	if (path)
		snprintf(name, n, "%s.XXXXXX", path);
	else
		snprintf(name, n, "%s/mrtx-dump.XXXXXX", dir && *dir ? dir : "/tmp");
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
	static const char usage[] = "mrtx dump STORE TABLE [FILE]";
	char **pos = argv + 1, *tmpname = NULL;
	const char *file;
	int npos, help, rc;
	mrtx_db *db = NULL;
	dump_ctx c;

	if ((rc = args_parse(argv[0], usage, argc, argv, NULL, pos, &npos, &help)))
		return rc;
	if (help)
		HELP(usage, "Write every cell of TABLE to FILE (default, or \"-\": standard output)\n"
		     "in the dump format (mrtx(1) DUMP FORMAT): a header naming the format\n"
		     "version, the table and its families, one line per cell with every\n"
		     "field escaped so that any bytes round-trip, and an end line with the\n"
		     "number of cells.  The table is read in one transaction: a consistent\n"
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
	if (c.out)
		fclose(c.out);
	if (tmpname) {
		unlink(tmpname);
		free(tmpname);
	}
	mrtx_close(db);
	return rc;
}

/* ------------------------------------------------------------------ load */

typedef struct lcell {
	size_t row, rlen, q, qlen, v, vlen; /* offsets into batch.mem */
	size_t fam;                         /* index into the header's families */
	unsigned long line;
} lcell;

typedef struct batch {
	const char *table;
	char **fams;
	lcell *c;
	size_t n, cap;
	char *mem;
	size_t used, memcap;
	size_t rows;          /* rows (runs of cells of one row) in the batch */
	size_t failed;        /* the cell whose put failed, or SIZE_MAX */
} batch;

typedef struct load_state {
	const char *cmd;
	const char *store;    /* opened (made if missing) once the header is good */
	mrtx_db *db;
	batch b;
	size_t nfams, batch_rows;
	unsigned long long cells, rows;
	unsigned long txns;   /* committed transactions (batches) */
	unsigned long first_line, committed_to; /* their first and last cell lines */
	unsigned long long committed_rows;
} load_state;

static int load_fn(mrtx_txn *txn, void *p)
{
	batch *b = p;
	int rc;

	b->failed = SIZE_MAX;
	for (size_t i = 0; i < b->n; i++) {
		const lcell *c = &b->c[i];

		rc = mrtx_put(txn, b->table, MRTX_BYTES(b->mem + c->row, c->rlen), b->fams[c->fam],
		              MRTX_BYTES(b->mem + c->q, c->qlen), MRTX_BYTES(b->mem + c->v, c->vlen));
		if (rc) {
			b->failed = i;
			return rc;
		}
	}
	return 0;
}

/* "one N" or "many N-M" into buf (a range of batches, rows, lines). */
static void span(char *buf, size_t n, const char *one, const char *many,
                 unsigned long long a, unsigned long long b)
{
	if (a == b)
		snprintf(buf, n, "%s %llu", one, a);
	else
		snprintf(buf, n, "%s %llu-%llu", many, a, b);
}

/* "batches 1-7 (rows 1-7000, lines 5-7004) committed", or "no batch was
 * committed". */
static void committed_batches(const load_state *s, char *buf, size_t n)
{
	char b[64], r[64], l[64];

	if (s->txns == 0) {
		snprintf(buf, n, "no batch was committed");
		return;
	}
	span(b, sizeof(b), "batch", "batches", 1, s->txns);
	span(r, sizeof(r), "row", "rows", 1, s->committed_rows);
	span(l, sizeof(l), "line", "lines", s->first_line, s->committed_to);
	snprintf(buf, n, "%s (%s, %s) committed", b, r, l);
}

/* "batch 8 (rows 7001-8000, lines 7005-8004)": the batch being read or
 * written (it holds a cell). */
static void this_batch(const load_state *s, char *buf, size_t n)
{
	char r[64], l[64];

	span(r, sizeof(r), "row", "rows", s->committed_rows + 1,
	     s->committed_rows + s->b.rows);
	span(l, sizeof(l), "line", "lines", s->b.c[0].line, s->b.c[s->b.n - 1].line);
	snprintf(buf, n, "batch %lu (%s, %s)", s->txns + 1, r, l);
}

/* After a bad line: which batches were committed, and that the one being
 * read was not written ("nothing was written" when none was). */
static void committed_note(const load_state *s, char *buf, size_t n)
{
	char done[200], cur[160];

	if (s->txns == 0) {
		snprintf(buf, n, "nothing was written");
		return;
	}
	committed_batches(s, done, sizeof(done));
	if (s->b.n == 0) {
		snprintf(buf, n, "%s", done);
		return;
	}
	this_batch(s, cur, sizeof(cur));
	snprintf(buf, n, "%s; %s not written", done, cur);
}

/*
 * Commit the batch.  When that fails, say exactly which batches are in:
 * those committed before it, and it not at all (mrtx_run failed before
 * or at the commit, which then wrote nothing) -- or, with MRTX_EUNKNOWN,
 * maybe (the commit's store write failed in a way that may have applied
 * it).
 */
static int load_flush(load_state *s)
{
	batch *b = &s->b;
	char done[200], cur[160];
	const char *msg;
	int rc;

	if (b->n == 0)
		return 0;
	if ((rc = mrtx_run(s->db, load_fn, b, 0))) {
		msg = tool_errmsg(rc);
		committed_batches(s, done, sizeof(done));
		this_batch(s, cur, sizeof(cur));
		if (b->failed != SIZE_MAX)
			tool_err(s->cmd, "line %lu: %s; %s; %s not written", b->c[b->failed].line, msg,
			         done, cur);
		else if (rc == MRTX_EUNKNOWN)
			tool_err(s->cmd, "%s; %s may or may not have committed: %s (loading the dump "
			         "again is safe)", done, cur, msg);
		else
			tool_err(s->cmd, "%s; %s not written: %s", done, cur, msg);
		return EXIT_FAIL;
	}
	if (s->txns++ == 0)
		s->first_line = b->c[0].line;
	s->committed_to = b->c[b->n - 1].line;
	s->committed_rows += b->rows;
	b->n = 0;
	b->used = 0;
	b->rows = 0;
	return 0;
}

static int mem_add(batch *b, const void *p, size_t n, size_t *off)
{
	if (b->memcap - b->used < n) {
		size_t cap = b->memcap ? b->memcap : 65536;
		char *m;

		while (cap - b->used < n) {
			if (cap > SIZE_MAX / 2)
				return -1;
			cap *= 2;
		}
		if (!(m = realloc(b->mem, cap)))
			return -1;
		b->mem = m;
		b->memcap = cap;
	}
	if (n)
		memcpy(b->mem + b->used, p, n);
	*off = b->used;
	b->used += n;
	return 0;
}

static int load_cell(load_state *s, const dump_line *l, size_t fam, unsigned long line)
{
	batch *b = &s->b;
	int new_row = 1;
	lcell c;
	int rc;

	if (b->n) {
		const lcell *last = &b->c[b->n - 1];

		new_row = last->rlen != l->row.size ||
		          memcmp(b->mem + last->row, l->row.data, l->row.size) != 0;
	}
	if (new_row && b->n && s->batch_rows &&
	    (b->rows >= s->batch_rows || b->used >= LOAD_BATCH_BYTES) && (rc = load_flush(s)))
		return rc;
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 1024;
		lcell *p = reallocarray(b->c, cap, sizeof(*p));

		if (!p)
			goto nomem;
		b->c = p;
		b->cap = cap;
	}
	memset(&c, 0, sizeof(c));
	c.fam = fam;
	c.line = line;
	if (mem_add(b, l->row.data, l->row.size, &c.row) ||
	    mem_add(b, l->qualifier.data, l->qualifier.size, &c.q) ||
	    mem_add(b, l->value.data, l->value.size, &c.v))
		goto nomem;
	c.rlen = l->row.size;
	c.qlen = l->qualifier.size;
	c.vlen = l->value.size;
	b->c[b->n++] = c;
	if (new_row) {
		b->rows++;
		s->rows++;
	}
	s->cells++;
	return 0;
nomem:
	tool_err(s->cmd, "line %lu: out of memory", line);
	return EXIT_FAIL;
}

/* The store, and the target table: created from the header, or checked
 * against it. */
static int load_table(load_state *s, const char *dump_table)
{
	const char *const *tf;
	size_t ntf;
	int rc;

	if ((rc = tool_open(s->cmd, s->store, 1, &s->db)))
		return rc;
	rc = mrtx_table_families(s->db, s->b.table, &tf, &ntf);

	if (rc == MRTX_ENOTABLE) {
		if ((rc = mrtx_create_table(s->db, s->b.table, (const char *const *)s->b.fams,
		                            s->nfams)))
			return tool_fail(s->cmd, "create table", rc);
		return 0;
	}
	if (rc)
		return tool_fail(s->cmd, NULL, rc);
	for (size_t i = 0; i < s->nfams; i++) {
		size_t j = 0;

		while (j < ntf && strcmp(tf[j], s->b.fams[i]) != 0)
			j++;
		if (j == ntf) {
			char *have = NULL;
			size_t len = 0;
			FILE *m = open_memstream(&have, &len);

			for (size_t k = 0; m && k < ntf; k++)
				fprintf(m, "%s%s", k ? " " : "", tf[k]);
			if (m)
				fclose(m);
			tool_err(s->cmd, "table '%s' has no family '%s' of the dump (of table '%s'); "
			         "its families are: %s; nothing was written (mrtx add-family STORE "
			         "%s %s adds it, or load into a new table)", s->b.table,
			         s->b.fams[i], dump_table, have ? have : "?", s->b.table,
			         s->b.fams[i]);
			free(have);
			return EXIT_FAIL;
		}
	}
	return 0;
}

typedef enum { L_MAGIC, L_TABLE, L_FAMILIES, L_CELLS, L_DONE } lphase;

/* Read and load the dump from in; EXIT_* (messages printed). */
static int load_stream(load_state *s, FILE *in)
{
	char *line = NULL, err[160], note[400], *dump_table = NULL;
	size_t cap = 0;
	unsigned long lineno = 0;
	lphase ph = L_MAGIC;
	ssize_t len;
	dump_line l;
	int rc = 0;

	while (rc == 0 && (len = getline(&line, &cap, in)) > 0) {
		lineno++;
		if (line[len - 1] != '\n') {
			committed_note(s, note, sizeof(note));
			tool_err(s->cmd, "line %lu: no newline at its end (a truncated dump?); %s",
			         lineno, note);
			rc = EXIT_FAIL;
			break;
		}
		if (ph == L_DONE) {
			committed_note(s, note, sizeof(note));
			tool_err(s->cmd, "line %lu: data after the 'end' line; %s", lineno, note);
			rc = EXIT_FAIL;
			break;
		}
		if (dump_parse_line(line, (size_t)len - 1, ph == L_CELLS, &l, err, sizeof(err))) {
			if (ph == L_MAGIC)
				tool_err(s->cmd, "line 1: not an mrtx dump (it starts with '%s %d')",
				         DUMP_MAGIC, DUMP_VERSION);
			else {
				committed_note(s, note, sizeof(note));
				tool_err(s->cmd, "line %lu: %s; %s", lineno, err, note);
			}
			rc = EXIT_FAIL;
			break;
		}
		switch (ph) {
		case L_MAGIC:
			if (l.kind != DUMP_LINE_MAGIC) {
				tool_err(s->cmd, "line 1: not an mrtx dump (it starts with '%s %d')",
				         DUMP_MAGIC, DUMP_VERSION);
				rc = EXIT_FAIL;
			} else if (l.number != DUMP_VERSION) {
				tool_err(s->cmd, "line 1: dump format version %llu; this mrtx reads "
				         "version %d", l.number, DUMP_VERSION);
				rc = EXIT_FAIL;
			}
			ph = L_TABLE;
			break;
		case L_TABLE:
			if (l.kind != DUMP_LINE_TABLE) {
				tool_err(s->cmd, "line %lu: expected 'table NAME'", lineno);
				rc = EXIT_FAIL;
			} else if (!(dump_table = strdup(l.name))) {
				tool_err(s->cmd, "out of memory");
				rc = EXIT_FAIL;
			}
			ph = L_FAMILIES;
			break;
		case L_FAMILIES:
			if (l.kind == DUMP_LINE_CELLS) {
				if (s->nfams == 0) {
					tool_err(s->cmd, "line %lu: the header declares no family", lineno);
					rc = EXIT_FAIL;
				} else {
					rc = load_table(s, dump_table);
				}
				ph = L_CELLS;
				break;
			}
			if (l.kind != DUMP_LINE_FAMILY) {
				tool_err(s->cmd, "line %lu: expected 'family NAME' or 'cells'", lineno);
				rc = EXIT_FAIL;
				break;
			}
			for (size_t i = 0; i < s->nfams; i++)
				if (strcmp(s->b.fams[i], l.name) == 0) {
					tool_err(s->cmd, "line %lu: family '%s' declared twice", lineno,
					         l.name);
					rc = EXIT_FAIL;
				}
			if (rc)
				break;
			if (s->nfams == MRTX_MAX_FAMILIES) {
				tool_err(s->cmd, "line %lu: more than %u families", lineno,
				         MRTX_MAX_FAMILIES);
				rc = EXIT_FAIL;
			} else if (!(s->b.fams[s->nfams] = strdup(l.name))) {
				tool_err(s->cmd, "out of memory");
				rc = EXIT_FAIL;
			} else {
				s->nfams++;
			}
			break;
		case L_CELLS:
			if (l.kind == DUMP_LINE_END) {
				if (l.number != s->cells) {
					committed_note(s, note, sizeof(note));
					tool_err(s->cmd, "line %lu: 'end %llu', but %llu cell lines were read "
					         "(a damaged dump?); %s", lineno, l.number, s->cells, note);
					rc = EXIT_FAIL;
				}
				ph = L_DONE; /* the last batch is written at the end of input */
				break;
			}
			{
				size_t f = 0;

				while (f < s->nfams && strcmp(s->b.fams[f], l.family) != 0)
					f++;
				if (f == s->nfams) {
					committed_note(s, note, sizeof(note));
					tool_err(s->cmd, "line %lu: family '%s' is not in the header; %s",
					         lineno, l.family, note);
					rc = EXIT_FAIL;
					break;
				}
				rc = load_cell(s, &l, f, lineno);
			}
			break;
		case L_DONE:
			break;
		}
	}
	if (rc == 0 && ferror(in)) {
		tool_err(s->cmd, "reading the dump: %s", strerror(errno));
		rc = EXIT_FAIL;
	} else if (rc == 0 && ph == L_DONE) {
		rc = load_flush(s); /* nothing follows "end": the last batch is good */
	} else if (rc == 0 && ph != L_DONE) {
		committed_note(s, note, sizeof(note));
		if (lineno == 0)
			tool_err(s->cmd, "the input is empty (not an mrtx dump)");
		else
			tool_err(s->cmd, "the input stops at line %lu, before the 'end' line (a "
			         "truncated dump?); %s", lineno, note);
		rc = EXIT_FAIL;
	}
	free(dump_table);
	free(line);
	return rc;
}

int cmd_load(int argc, char **argv)
{
	static const char usage[] = "mrtx load STORE TABLE [FILE] [--batch N]";
	const char *batch_arg = NULL;
	const tool_opt opts[] = { { "batch", 1, &batch_arg, NULL }, { NULL, 0, NULL, NULL } };
	char **pos = argv + 1;
	int npos, help, rc;
	load_state s;
	FILE *in = stdin;

	if ((rc = args_parse(argv[0], usage, argc, argv, opts, pos, &npos, &help)))
		return rc;
	if (help)
		HELP(usage, "Put the cells of a dump (FILE, default or \"-\": standard input; the\n"
		     "format of `mrtx dump`) into TABLE, which is created with the dump's\n"
		     "families if missing (the store too); an existing TABLE must have every\n"
		     "family of the dump.  TABLE need not be the dumped table.  Cells are\n"
		     "put, so other cells of TABLE stay.  A load commits every --batch N\n"
		     "rows (default 1000, fewer when a transaction would hold over 16 MiB),\n"
		     "so it is not one transaction; --batch 0 makes it one (all or nothing,\n"
		     "held in memory until it commits).  A batch is parsed in full before it\n"
		     "is written (the last one once nothing follows the end line): a bad\n"
		     "line (the message names it) leaves nothing of its batch written, and\n"
		     "earlier batches committed.  When a batch fails to commit (a full disk:\n"
		     "No space left on device), the message names the batches committed and\n"
		     "the one not written, by batch, row and line numbers (or says it may or\n"
		     "may not have committed, when the store cannot tell).  Running the load\n"
		     "again after a fix is safe.\n");
	if (npos < 2 || npos > 3)
		return tool_usage_err(argv[0], usage, "expected STORE, TABLE and maybe FILE");
	memset(&s, 0, sizeof(s));
	s.cmd = argv[0];
	s.batch_rows = LOAD_BATCH_ROWS;
	if ((rc = arg_name(argv[0], "table", pos[1])) ||
	    (batch_arg && (rc = arg_size(argv[0], "--batch", batch_arg, &s.batch_rows))))
		return rc;
	if (npos == 3 && strcmp(pos[2], "-") != 0 && !(in = fopen(pos[2], "r"))) {
		tool_err(argv[0], "%s: %s", pos[2], strerror(errno));
		return EXIT_FAIL;
	}
	if (!(s.b.fams = calloc(MRTX_MAX_FAMILIES, sizeof(char *)))) {
		tool_err(argv[0], "out of memory");
		rc = EXIT_FAIL;
		goto out;
	}
	s.b.table = pos[1];
	s.store = pos[0];
	if ((rc = load_stream(&s, in)) == 0)
		printf("%llu cells in %llu rows loaded into %s (%lu transactions)\n", s.cells,
		       s.rows, s.b.table, s.txns);
out:
	if (in != stdin)
		fclose(in);
	mrtx_close(s.db);
	if (s.b.fams)
		for (size_t i = 0; i < s.nfams; i++)
			free(s.b.fams[i]);
	free(s.b.fams);
	free(s.b.c);
	free(s.b.mem);
	return rc;
}
