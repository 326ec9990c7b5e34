/*
 * importfmt.h - reading the records of `mrtx import`: TSV (one record a
 * line, fields split at tabs) and CSV (RFC 4180: fields split at commas,
 * a field in double quotes may hold commas, line breaks and "" for one
 * quote; records end with LF or CRLF).  Parsed without a store, so it can
 * be tested and fuzzed on its own.
 *
 * A trailing CR before LF is dropped in both formats, and empty lines are
 * skipped.  Fields are returned as they are in the file; decoding escapes
 * is the caller's business.
 */
#ifndef MRTX_TOOL_IMPORTFMT_H
#define MRTX_TOOL_IMPORTFMT_H

#include <stddef.h>
#include <stdio.h>

typedef enum { IMPORT_TSV, IMPORT_CSV } import_format;

typedef struct import_reader {
	FILE *in;
	import_format fmt;
	unsigned long line;      /* the line the next record starts on, minus 1 */
	unsigned long rec_line;  /* the line the last record started on */
	char *buf;               /* the last record's field bytes */
	size_t len, cap;
	size_t *off;             /* field i is buf[off[i] .. off[i] + flen[i]) */
	size_t *flen;
	size_t nf, fcap;
} import_reader;

void import_reader_init(import_reader *r, FILE *in, import_format fmt);
void import_reader_free(import_reader *r);

/*
 * Read the next record into r (nf fields).  Returns 1 (a record), 0 (end
 * of input), -1 (malformed: err holds a message naming the line, and for
 * CSV the column), -2 (out of memory or a read error: err says which).
 */
int import_next(import_reader *r, char *err, size_t errlen);

#endif
