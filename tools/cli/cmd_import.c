/*
 * cmd_import.c - `mrtx import`: the rows of a TSV or CSV file (importfmt.h)
 * put into a table, committed every --batch N rows.
 *
 * The mapping: one record is one row.  The field at --row-column N
 * (1-based, default 1) is the row key; every other field is the value of
 * the cell its column names, FAMILY:QUALIFIER, from the header line (the
 * first record) or from --columns.  A column named "-" is skipped, and so
 * is an empty field (no cell is written for it) unless --empty writes an
 * empty value.  Every field (header and data) is decoded with the tool's
 * byte escapes (\xNN, \\) unless --no-escapes, so any bytes can be
 * imported: a TSV field holds a tab as \x09 and a line break as \x0a.
 */
#include "cmds.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "importfmt.h"
#include "util.h"

#define IMPORT_BATCH_ROWS 1000
#define IMPORT_BATCH_BYTES ((size_t)16 << 20)

typedef struct icol {
	char *family;            /* NULL: skipped (or the row column) */
	mrtx_bytes qual;         /* owned by the column (malloc'd) */
} icol;

typedef struct icell {
	size_t row, rlen, v, vlen; /* offsets into mem */
	size_t col;
} icell;

typedef struct import_state {
	const char *cmd;
	const char *table;
	mrtx_db *db;
	icol *cols;
	size_t ncols, rowcol;
	int escapes, empty;
	size_t batch_rows;
	/* the batch */
	icell *c;
	size_t n, cap;
	char *mem;
	size_t used, memcap;
	size_t rows;              /* rows in the batch */
	unsigned long first, last; /* its first and last record's lines */
	size_t failed;            /* the cell whose put failed, or SIZE_MAX */
	/* what is committed */
	unsigned long txns;
	unsigned long long done_rows, done_cells, cells;
	unsigned long done_first, done_line; /* the first and last line committed */
	/* progress */
	int progress;
	long long size;           /* of a regular input file, else -1 */
	FILE *in;
} import_state;

static int import_fn(mrtx_txn *txn, void *p)
{
	import_state *s = p;
	int rc;

	s->failed = SIZE_MAX;
	for (size_t i = 0; i < s->n; i++) {
		const icell *c = &s->c[i];
		const icol *col = &s->cols[c->col];

		if ((rc = mrtx_put(txn, s->table, MRTX_BYTES(s->mem + c->row, c->rlen), col->family,
		                   col->qual, MRTX_BYTES(s->mem + c->v, c->vlen)))) {
			s->failed = i;
			return rc;
		}
	}
	return 0;
}

/* "rows 1-3000 (lines 2-3001) committed in 3 transactions", or "nothing
 * was written". */
static void committed(const import_state *s, char *buf, size_t n)
{
	if (s->txns == 0)
		snprintf(buf, n, "nothing was written");
	else
		snprintf(buf, n, "rows 1-%llu (lines %lu-%lu) committed in %lu transaction%s",
		         s->done_rows, s->done_first, s->done_line, s->txns, s->txns == 1 ? "" : "s");
}

static void progress_clear(import_state *s)
{
	if (s->progress)
		fputs("\r\033[K", stderr);
}

static void progress_show(import_state *s)
{
	long long pos;

	if (!s->progress)
		return;
	pos = s->size > 0 ? (long long)ftello(s->in) : -1;
	if (pos >= 0)
		fprintf(stderr, "\r\033[Kmrtx: import: %llu rows committed, %lld%%", s->done_rows,
		        pos * 100 / s->size);
	else
		fprintf(stderr, "\r\033[Kmrtx: import: %llu rows committed", s->done_rows);
	fflush(stderr);
}

static int flush_batch(import_state *s)
{
	char done[160];
	int rc;

	if (s->n == 0)
		return 0;
	if ((rc = mrtx_run(s->db, import_fn, s, 0))) {
		const char *msg = tool_errmsg(rc);

		progress_clear(s);
		committed(s, done, sizeof(done));
		if (rc == MRTX_EUNKNOWN)
			tool_err(s->cmd, "%s; lines %lu-%lu may or may not have committed: %s (running "
			         "the import again is safe)", done, s->first, s->last, msg);
		else if (s->failed != SIZE_MAX)
			tool_err(s->cmd, "lines %lu-%lu: %s; %s; lines %lu-%lu not written", s->first,
			         s->last, msg, done, s->first, s->last);
		else
			tool_err(s->cmd, "%s; lines %lu-%lu not written: %s", done, s->first, s->last,
			         msg);
		return EXIT_FAIL;
	}
	if (s->txns++ == 0)
		s->done_first = s->first;
	s->done_rows += s->rows;
	s->done_cells += s->n;
	s->done_line = s->last;
	s->n = s->used = s->rows = 0;
	progress_show(s);
	return 0;
}

static int mem_add(import_state *s, const void *p, size_t n, size_t *off)
{
	if (s->memcap - s->used < n) {
		size_t cap = s->memcap ? s->memcap : 65536;
		char *m;

		while (cap - s->used < n) {
			if (cap > SIZE_MAX / 2)
				return -1;
			cap *= 2;
		}
		if (!(m = realloc(s->mem, cap)))
			return -1;
		s->mem = m;
		s->memcap = cap;
	}
	if (n)
		memcpy(s->mem + s->used, p, n);
	*off = s->used;
	s->used += n;
	return 0;
}

/* Decode field i of r in place (escapes), into *out. */
static int field(import_state *s, import_reader *r, size_t i, mrtx_bytes *out, char *err,
                 size_t errlen)
{
	char *p = r->buf + r->off[i];
	size_t n = r->flen[i];
	char why[120];

	if (s->escapes && unescape_inplace(p, n, &n, why, sizeof(why))) {
		snprintf(err, errlen, "line %lu, field %zu: %s; --no-escapes takes backslashes as "
		         "they are", r->rec_line, i + 1, why);
		return -1;
	}
	*out = MRTX_BYTES(p, n);
	return 0;
}

/* Column i named by text: "-" or FAMILY:QUALIFIER of the table. */
static int column_set(import_state *s, size_t i, mrtx_bytes text, const char *const *fams,
                      size_t nfams, const char *where)
{
	const char *colon = memchr(text.data, ':', text.size);
	size_t fl;

	if (i == s->rowcol)
		return 0;
	if (text.size == 1 && *(const char *)text.data == '-')
		return 0;
	fl = colon ? (size_t)(colon - (const char *)text.data) : 0;
	if (!colon || fl == 0 || memchr(text.data, '\0', fl)) {
		char *e = escape_dup(text.data, text.size, 0);

		tool_err(s->cmd, "%s, column %zu: '%s' is not FAMILY:QUALIFIER (or - to skip the "
		         "column); nothing was written", where, i + 1, e ? e : "?");
		free(e);
		return EXIT_USAGE;
	}
	for (size_t f = 0; f < nfams; f++)
		if (strlen(fams[f]) == fl && memcmp(fams[f], text.data, fl) == 0) {
			size_t ql = text.size - fl - 1;

			if (!(s->cols[i].family = strdup(fams[f])) ||
			    !(s->cols[i].qual.data = malloc(ql ? ql : 1))) {
				tool_err(s->cmd, "out of memory");
				return EXIT_FAIL;
			}
			memcpy((char *)s->cols[i].qual.data, colon + 1, ql);
			s->cols[i].qual.size = ql;
			return 0;
		}
	tool_err(s->cmd, "%s, column %zu: table '%s' has no family '%.*s' (see mrtx describe); "
	         "nothing was written", where, i + 1, s->table, (int)fl, (const char *)text.data);
	return EXIT_FAIL;
}

/* The columns from the header record (r) or from --columns (list). */
static int columns_setup(import_state *s, import_reader *r, char *list, char *err,
                         size_t errlen)
{
	const char *const *fams;
	size_t nfams, n;
	int rc;

	if ((rc = mrtx_table_families(s->db, s->table, &fams, &nfams)))
		return tool_fail(s->cmd, NULL, rc);
	if (list) {
		n = 1;
		for (const char *p = list; *p; p++)
			n += *p == ',';
	} else {
		n = r->nf;
	}
	if (s->rowcol >= n) {
		tool_err(s->cmd, "--row-column %zu: the %s has only %zu column%s; nothing was "
		         "written", s->rowcol + 1, list ? "--columns list" : "header", n,
		         n == 1 ? "" : "s");
		return EXIT_USAGE;
	}
	if (!(s->cols = calloc(n, sizeof(*s->cols)))) {
		tool_err(s->cmd, "out of memory");
		return EXIT_FAIL;
	}
	s->ncols = n;
	for (size_t i = 0; i < n; i++) {
		mrtx_bytes text;

		if (list) {
			char *comma = strchr(list, ',');
			size_t len;

			if (comma)
				*comma = '\0';
			if (unescape_inplace(list, strlen(list), &len, err, errlen)) {
				tool_err(s->cmd, "--columns, column %zu: %s", i + 1, err);
				return EXIT_USAGE;
			}
			text = MRTX_BYTES(list, len);
			if ((rc = column_set(s, i, text, fams, nfams, "--columns")))
				return rc;
			list = comma ? comma + 1 : list + strlen(list);
		} else {
			char where[48];

			if (field(s, r, i, &text, err, errlen)) {
				tool_err(s->cmd, "%s; nothing was written", err);
				return EXIT_FAIL;
			}
			snprintf(where, sizeof(where), "line %lu (the header)", r->rec_line);
			if ((rc = column_set(s, i, text, fams, nfams, where)))
				return rc;
		}
	}
	return 0;
}

/* One data record into the batch (flushing the batch first when full). */
static int add_record(import_state *s, import_reader *r, char *err, size_t errlen)
{
	char done[160];
	mrtx_bytes row;
	size_t roff;
	int rc;

	if (s->n && (s->rows >= s->batch_rows || s->used >= IMPORT_BATCH_BYTES) &&
	    s->batch_rows && (rc = flush_batch(s)))
		return rc;
	if (r->nf != s->ncols) {
		progress_clear(s);
		committed(s, done, sizeof(done));
		tool_err(s->cmd, "line %lu: %zu field%s, but %zu columns (fields are separated by "
		         "%s); %s", r->rec_line, r->nf, r->nf == 1 ? "" : "s", s->ncols,
		         r->fmt == IMPORT_TSV ? "tabs" : "commas", done);
		return EXIT_FAIL;
	}
	if (field(s, r, s->rowcol, &row, err, errlen))
		goto bad;
	if (row.size == 0) {
		snprintf(err, errlen, "line %lu: the row key (field %zu) is empty", r->rec_line,
		         s->rowcol + 1);
		goto bad;
	}
	if (mem_add(s, row.data, row.size, &roff))
		goto nomem;
	if (s->rows++ == 0)
		s->first = r->rec_line;
	s->last = r->rec_line;
	for (size_t i = 0; i < s->ncols; i++) {
		mrtx_bytes v;
		icell c;

		if (!s->cols[i].family)
			continue;
		if (field(s, r, i, &v, err, errlen))
			goto bad;
		if (v.size == 0 && !s->empty)
			continue;
		if (s->n == s->cap) {
			size_t cap = s->cap ? s->cap * 2 : 1024;
			icell *p = reallocarray(s->c, cap, sizeof(*p));

			if (!p)
				goto nomem;
			s->c = p;
			s->cap = cap;
		}
		c.row = roff;
		c.rlen = row.size;
		c.col = i;
		c.vlen = v.size;
		if (mem_add(s, v.data, v.size, &c.v))
			goto nomem;
		s->c[s->n++] = c;
		s->cells++;
	}
	return 0;
nomem:
	snprintf(err, errlen, "line %lu: out of memory", r->rec_line);
bad:
	progress_clear(s);
	committed(s, done, sizeof(done));
	tool_err(s->cmd, "%s; %s%s", err, done,
	         s->n ? " (the rows read since were not written)" : "");
	return EXIT_FAIL;
}

static const char usage[] =
	"mrtx import STORE TABLE FILE --format tsv|csv [--row-column N] [--columns LIST]\n"
	"                   [--skip-header] [--no-escapes] [--empty] [--batch N]";

static const char help_text[] =
	"Put the rows of a TSV or CSV FILE (\"-\": standard input) into TABLE, which\n"
	"must exist.  Each record is one row: the field in column --row-column N\n"
	"(1-based, default 1) is the row key, and every other field the value of\n"
	"its column's cell.  The columns are named by the first line (the header)\n"
	"or by --columns LIST (comma-separated, one name per column, the file then\n"
	"has no header unless --skip-header drops it): FAMILY:QUALIFIER, or - to\n"
	"skip the column; the row column's name is not used.  An empty field\n"
	"writes no cell (--empty: an empty value).\n"
	"\n"
	"tsv: fields are separated by tabs, one record a line.  csv: RFC 4180,\n"
	"fields separated by commas; a field in double quotes may hold commas and\n"
	"line breaks, and \"\" stands for one quote.  Both accept LF or CRLF line\n"
	"ends and skip empty lines.  Every field, header included, is decoded with\n"
	"the tool's escapes (\\xNN one byte, \\\\ a backslash), so any bytes import\n"
	"(a tab in a TSV field is \\x09); --no-escapes takes the bytes as they are.\n"
	"\n"
	"A transaction commits every --batch N rows (default 1000, fewer when one\n"
	"would hold over 16 MiB; 0: all in one transaction).  A malformed record\n"
	"(the message gives its line) stops the import: the batches before it\n"
	"stay committed, and the message says which rows and lines they hold;\n"
	"importing the file again is safe (cells are put).  A progress line is\n"
	"shown on standard error when it is a terminal.  Writes into an index\n"
	"table are refused.\n";

int cmd_import(int argc, char **argv)
{
	const char *format = NULL, *rowcol = NULL, *batch = NULL, *columns = NULL;
	int skip = 0, noesc = 0, empty = 0, npos, help, rc, got;
	const tool_opt opts[] = {
		{ "format", 1, &format, NULL },  { "row-column", 1, &rowcol, NULL },
		{ "columns", 1, &columns, NULL }, { "skip-header", 0, NULL, &skip },
		{ "no-escapes", 0, NULL, &noesc }, { "empty", 0, NULL, &empty },
		{ "batch", 1, &batch, NULL },    { NULL, 0, NULL, NULL },
	};
	const char *cmd = argv[0];
	char **pos = argv + 1, *list = NULL, err[400];
	import_reader r;
	import_state s;
	import_format fmt;
	size_t rc1 = 1;
	struct stat sb;
	FILE *in = stdin;

	if ((rc = args_parse(cmd, usage, argc, argv, opts, pos, &npos, &help)))
		return rc;
	if (help)
		HELP(usage, help_text);
	if (npos != 3)
		return tool_usage_err(cmd, usage, "expected STORE, TABLE and FILE");
	if (!format)
		return tool_usage_err(cmd, usage, "--format tsv or --format csv is required");
	if (strcmp(format, "tsv") == 0)
		fmt = IMPORT_TSV;
	else if (strcmp(format, "csv") == 0)
		fmt = IMPORT_CSV;
	else
		return tool_usage_err(cmd, usage, "--format '%s': expected tsv or csv", format);
	if (skip && !columns)
		return tool_usage_err(cmd, usage, "--skip-header goes with --columns (without it "
		                      "the first line is the header)");
	memset(&s, 0, sizeof(s));
	s.batch_rows = IMPORT_BATCH_ROWS;
	if ((rc = arg_name(cmd, "table", pos[1])) ||
	    (rowcol && (rc = arg_size(cmd, "--row-column", rowcol, &rc1))) ||
	    (batch && (rc = arg_size(cmd, "--batch", batch, &s.batch_rows))))
		return rc;
	if (rc1 == 0)
		return tool_usage_err(cmd, usage, "--row-column counts from 1");
	if (columns && !(list = strdup(columns))) {
		tool_err(cmd, "out of memory");
		return EXIT_FAIL;
	}
	s.cmd = cmd;
	s.table = pos[1];
	s.rowcol = rc1 - 1;
	s.escapes = !noesc;
	s.empty = empty;
	s.size = -1;
	if (strcmp(pos[2], "-") != 0 && !(in = fopen(pos[2], "r"))) {
		tool_err(cmd, "%s: %s", pos[2], strerror(errno));
		free(list);
		return EXIT_FAIL;
	}
	s.in = in;
	if (fstat(fileno(in), &sb) == 0 && S_ISREG(sb.st_mode))
		s.size = (long long)sb.st_size;
	import_reader_init(&r, in, fmt);
	if ((rc = tool_open(cmd, pos[0], 0, &s.db)))
		goto out;
	if ((rc = tool_refuse_index_table(cmd, s.db, s.table)))
		goto out;
	s.progress = tool_stderr_tty();
	if (!list || skip) {
		if ((got = import_next(&r, err, sizeof(err))) <= 0) {
			if (got == 0)
				tool_err(cmd, "%s is empty: no header line; nothing was written",
				         in == stdin ? "the input" : pos[2]);
			else
				tool_err(cmd, "%s; nothing was written", err);
			rc = EXIT_FAIL;
			goto out;
		}
	}
	if ((rc = columns_setup(&s, &r, list, err, sizeof(err))))
		goto out;
	while ((got = import_next(&r, err, sizeof(err))) == 1)
		if ((rc = add_record(&s, &r, err, sizeof(err))))
			goto out;
	if (got < 0) {
		char done[160];

		progress_clear(&s);
		committed(&s, done, sizeof(done));
		tool_err(cmd, "%s; %s%s", err, done,
		         s.n ? " (the rows read since were not written)" : "");
		rc = EXIT_FAIL;
		goto out;
	}
	if ((rc = flush_batch(&s)))
		goto out;
	progress_clear(&s);
	printf("%llu cells in %llu rows imported into %s (%lu transaction%s)\n", s.done_cells,
	       s.done_rows, s.table, s.txns, s.txns == 1 ? "" : "s");
	rc = fflush(stdout) || ferror(stdout) ? EXIT_FAIL : EXIT_OK;
out:
	import_reader_free(&r);
	if (in != stdin)
		fclose(in);
	mrtx_close(s.db);
	for (size_t i = 0; i < s.ncols; i++) {
		free(s.cols[i].family);
		free((void *)s.cols[i].qual.data);
	}
	free(s.cols);
	free(s.c);
	free(s.mem);
	free(list);
	return rc;
}
