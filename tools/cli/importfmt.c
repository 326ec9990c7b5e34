/*
 * importfmt.c - the TSV and CSV records of `mrtx import` (importfmt.h).
 */
#include "importfmt.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void import_reader_init(import_reader *r, FILE *in, import_format fmt)
{
	memset(r, 0, sizeof(*r));
	r->in = in;
	r->fmt = fmt;
}

void import_reader_free(import_reader *r)
{
	free(r->buf);
	free(r->off);
	free(r->flen);
	memset(r, 0, sizeof(*r));
}

static int put_byte(import_reader *r, int c)
{
	if (r->len == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 4096;
		char *b;

		if (cap < r->cap || !(b = realloc(r->buf, cap)))
			return -1;
		r->buf = b;
		r->cap = cap;
	}
	r->buf[r->len++] = (char)c;
	return 0;
}

/* Start field nf at the current end of buf. */
static int field_open(import_reader *r)
{
	if (r->nf == r->fcap) {
		size_t cap = r->fcap ? r->fcap * 2 : 16;
		size_t *o = realloc(r->off, cap * sizeof(*o)), *l;

		if (!o)
			return -1;
		r->off = o;
		if (!(l = realloc(r->flen, cap * sizeof(*l))))
			return -1;
		r->flen = l;
		r->fcap = cap;
	}
	r->off[r->nf] = r->len;
	r->flen[r->nf++] = 0;
	return 0;
}

static void field_close(import_reader *r)
{
	r->flen[r->nf - 1] = r->len - r->off[r->nf - 1];
}

static int read_failed(import_reader *r, char *err, size_t errlen)
{
	if (ferror(r->in))
		snprintf(err, errlen, "reading the input: %s", strerror(errno));
	else
		snprintf(err, errlen, "out of memory at line %lu", r->line);
	return -2;
}

static int next_tsv(import_reader *r, char *err, size_t errlen)
{
	int c;

	for (;;) {
		r->len = 0;
		r->nf = 0;
		if ((c = getc(r->in)) == EOF)
			return ferror(r->in) ? read_failed(r, err, errlen) : 0;
		r->rec_line = ++r->line;
		if (field_open(r))
			return read_failed(r, err, errlen);
		for (; c != EOF && c != '\n'; c = getc(r->in)) {
			if (c == '\t') {
				field_close(r);
				if (field_open(r))
					return read_failed(r, err, errlen);
			} else if (put_byte(r, c)) {
				return read_failed(r, err, errlen);
			}
		}
		if (ferror(r->in))
			return read_failed(r, err, errlen);
		/* a CR before the line's end is the CRLF of a DOS file */
		if (r->len > r->off[r->nf - 1] && r->buf[r->len - 1] == '\r')
			r->len--;
		field_close(r);
		if (r->nf > 1 || r->flen[0] > 0)
			return 1;
		if (c == EOF)
			return 0; /* (an empty last line) */
	}
}

/*
 * CSV, RFC 4180: a field is unquoted (no quote inside) or quoted from its
 * first byte to a closing quote that a comma, a line end or the input's
 * end follows; inside, "" is one quote, and commas and line breaks are
 * data.  Lines are counted through quoted line breaks.
 */
static int next_csv(import_reader *r, char *err, size_t errlen)
{
	int c;

	for (;;) {
		unsigned long col = 0;
		int quoted = 0, at_start = 1, after_quote = 0;
		unsigned long qline = 0, qcol = 0;

		r->len = 0;
		r->nf = 0;
		if ((c = getc(r->in)) == EOF)
			return ferror(r->in) ? read_failed(r, err, errlen) : 0;
		r->rec_line = ++r->line;
		if (field_open(r))
			return read_failed(r, err, errlen);
		for (;; c = getc(r->in)) {
			col++;
			if (c == EOF) {
				if (ferror(r->in))
					return read_failed(r, err, errlen);
				if (quoted && !after_quote) {
					snprintf(err, errlen, "line %lu, column %lu: the quoted field opened "
					         "there is never closed (the input ends inside it)", qline,
					         qcol);
					return -1;
				}
				break;
			}
			if (quoted && !after_quote) {
				if (c == '"') {
					after_quote = 1;
					continue;
				}
				if (c == '\n') {
					r->line++;
					col = 0;
				}
				if (put_byte(r, c))
					return read_failed(r, err, errlen);
				continue;
			}
			if (after_quote) {
				after_quote = 0;
				if (c == '"') { /* "" inside quotes: one quote */
					if (put_byte(r, c))
						return read_failed(r, err, errlen);
					continue;
				}
				quoted = 0;
				if (c == '\r') {
					int n = getc(r->in);

					if (n == '\n') {
						c = n;
					} else {
						if (n != EOF)
							ungetc(n, r->in);
						snprintf(err, errlen, "line %lu, column %lu: a carriage return "
						         "after a closing quote (expected a comma or a line "
						         "end)", r->line, col);
						return -1;
					}
				}
				if (c != ',' && c != '\n') {
					snprintf(err, errlen, "line %lu, column %lu: '%c' after the closing "
					         "quote of a field (a quote inside a quoted field is "
					         "written \"\")", r->line, col, c >= 0x20 && c < 0x7f ? c : '?');
					return -1;
				}
			}
			if (c == ',') {
				field_close(r);
				if (field_open(r))
					return read_failed(r, err, errlen);
				at_start = 1;
				continue;
			}
			if (c == '\n')
				break;
			if (c == '"') {
				if (!at_start) {
					snprintf(err, errlen, "line %lu, column %lu: a quote inside an "
					         "unquoted field (quote the whole field and write the quote "
					         "as \"\")", r->line, col);
					return -1;
				}
				quoted = 1;
				qline = r->line;
				qcol = col;
				at_start = 0;
				continue;
			}
			if (c == '\r') { /* CRLF ends the record; a lone CR is data */
				int n = getc(r->in);

				if (n == '\n')
					break;
				if (n != EOF)
					ungetc(n, r->in);
			}
			at_start = 0;
			if (put_byte(r, c))
				return read_failed(r, err, errlen);
		}
		field_close(r);
		if (r->nf > 1 || r->flen[0] > 0 || qline)
			return 1;
		if (c == EOF)
			return 0;
	}
}

int import_next(import_reader *r, char *err, size_t errlen)
{
	return r->fmt == IMPORT_TSV ? next_tsv(r, err, errlen) : next_csv(r, err, errlen);
}
