/*
 * dumpfmt.h - the text format of `mrtx dump` and `mrtx load`, version 1,
 * parsed without a store (so it can be tested and fuzzed alone).
 *
 * A dump is one table.  Every line ends with a newline (0x0a), and the
 * lines come in this order:
 *
 *   mrtx-dump 1                    the format and its version
 *   table NAME                     the dumped table
 *   family NAME                    one line per family, in the table's order
 *   cells                          end of the header
 *   ROW FAMILY:QUALIFIER VALUE     one line per cell: rows in row order, the
 *   ...                            cells of a row in family, qualifier order
 *   end N                          N = the number of cell lines, in decimal
 *
 * Fields (NAME, ROW, FAMILY, QUALIFIER, VALUE) are escaped: every byte
 * outside 0x21..0x7e (so the space, control bytes, 0x7f..0xff) is written
 * \xNN (two lowercase hex digits; a reader takes either case) and the
 * backslash as \\; every other byte stands for itself.  A field is thus a
 * run of printable ASCII without spaces, a line has exactly the single
 * spaces shown, and any byte string round-trips.  An empty QUALIFIER or
 * VALUE is an empty field (a cell line may end with its separating
 * space); a ROW is never empty.  FAMILY is the text before the first ':'
 * of its field (a family name never holds one).
 *
 * A reader rejects, naming the line: another first line (another version:
 * "mrtx-dump 2"), a header line out of place, an unknown keyword, a raw
 * byte outside 0x20..0x7e (a CR of CRLF line ends, say), a bad escape, a
 * cell line without exactly three fields or without ':' in the second, a
 * family the header does not declare, a last line without its newline,
 * input that stops before "end", an "end" count that differs from the cell
 * lines read, and anything after "end".
 */
#ifndef MRTX_TOOL_DUMPFMT_H
#define MRTX_TOOL_DUMPFMT_H

#include <stddef.h>
#include <stdio.h>

#include "mrtx.h"

#define DUMP_MAGIC "mrtx-dump"
#define DUMP_VERSION 1

/* Write p[0..n) escaped as a field (see above) to f. */
void dump_put_field(FILE *f, const void *p, size_t n);
/* Write one cell line (with its newline) to f. */
void dump_put_cell(FILE *f, const mrtx_cell *c);

/*
 * Decode the field s[0..n) in place (the result is never longer) into
 * *outn bytes at s.  Returns 0, or -1 with a message in err.
 */
int dump_field_decode(char *s, size_t n, size_t *outn, char *err, size_t errlen);

/* A decoded name field (table, family): no NUL byte, not empty; then
 * NUL-terminated in place.  Returns 0, or -1 with a message in err. */
int dump_name_decode(char *s, size_t n, char *err, size_t errlen);

typedef enum {
	DUMP_LINE_MAGIC = 1, /* "mrtx-dump V": version in .number */
	DUMP_LINE_TABLE,     /* .name */
	DUMP_LINE_FAMILY,    /* .name */
	DUMP_LINE_CELLS,
	DUMP_LINE_CELL,      /* .row, .family, .qualifier, .value */
	DUMP_LINE_END        /* .number */
} dump_line_kind;

typedef struct dump_line {
	dump_line_kind kind;
	const char *name;        /* NUL-terminated, in the line's buffer */
	unsigned long long number;
	mrtx_bytes row;          /* in the line's buffer */
	const char *family;      /* NUL-terminated, in the line's buffer */
	mrtx_bytes qualifier, value;
} dump_line;

/*
 * Parse line[0..len) (without its newline; line[len] must be writable: a
 * name may be NUL-terminated there), decoding in place, as a line
 * expected in this position: in_cells = 0 for a header line (the magic
 * line, table, family or cells), 1 after "cells" (a cell line, or end).
 * Returns 0 and fills *out (pointing into line), or -1 with a message.
 */
int dump_parse_line(char *line, size_t len, int in_cells, dump_line *out, char *err,
                    size_t errlen);

#endif
