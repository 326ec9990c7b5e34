/*
 * dumpfmt.h - the text format of `mrtx dump` and `mrtx load`, versions 1
 * and 2, parsed without a store (so it can be tested and fuzzed alone).
 *
 * A dump is one table.  Every line ends with a newline (0x0a; a reader
 * also takes CR LF, since a raw CR is never part of a field), and the
 * lines come in this order:
 *
 *   mrtx-dump V                    the format and its version (1 or 2)
 *   table NAME                     the dumped table
 *   family NAME [POLICY]           one line per family, in the table's order
 *   versions                       (version 2, optional) cell lines carry TS
 *   cells                          end of the header
 *   ROW FAMILY:QUALIFIER VALUE     one line per cell: rows in row order, the
 *   ...                            cells of a row in family, qualifier order
 *   end N                          N = the number of cell lines, in decimal
 *
 * Version 2 adds what version 1 cannot say; a writer uses version 1 when
 * it has none of it, so that older readers read it:
 *  - POLICY, the family's version policy as create-table writes it:
 *    VERSIONS:MIN_VERSIONS:TTL_MS (decimal; VERSIONS at least 1, MIN at
 *    most VERSIONS, TTL_MS 0 for none).  A family line without one keeps
 *    1:0:0;
 *  - after "versions", every cell line is ROW FAMILY:QUALIFIER TS VALUE:
 *    one line per version a read shows, TS its commit timestamp (decimal,
 *    1 .. 2^63-1), the versions of a cell on consecutive lines, newest
 *    first (timestamps strictly decreasing).  N counts these lines.
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
 * "mrtx-dump 3"), a header line out of place, an unknown keyword, a
 * version 2 line in a version 1 dump, a raw byte outside 0x20..0x7e (a
 * CR inside a line, say), a bad escape, a bad POLICY or TS, a cell line
 * without exactly three fields (four after "versions") or without ':' in
 * the second, a family the header does not declare, a last line without
 * its newline, input that stops before "end", an "end" count that differs
 * from the cell lines read, and anything after "end".
 */
#ifndef MRTX_TOOL_DUMPFMT_H
#define MRTX_TOOL_DUMPFMT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mrtx.h"

#define DUMP_MAGIC "mrtx-dump"
#define DUMP_VERSION 2 /* the newest; 1 is read too */

/* Write p[0..n) escaped as a field (see above) to f. */
void dump_put_field(FILE *f, const void *p, size_t n);
/* Write one cell line (with its newline) to f; ts 0: without a TS field
 * (a dump without "versions"). */
void dump_put_cell(FILE *f, const mrtx_cell *c, uint64_t ts);
/* Write "family NAME" (with POLICY unless p is NULL) and its newline. */
void dump_put_family(FILE *f, const char *name, const mrtx_family_spec *p);

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
	DUMP_LINE_VERSIONS,
	DUMP_LINE_CELLS,
	DUMP_LINE_CELL,      /* .row, .family, .qualifier, .value, .ts */
	DUMP_LINE_END        /* .number */
} dump_line_kind;

typedef struct dump_line {
	dump_line_kind kind;
	const char *name;        /* NUL-terminated, in the line's buffer */
	unsigned long long number;
	mrtx_bytes row;          /* in the line's buffer */
	const char *family;      /* NUL-terminated, in the line's buffer */
	mrtx_bytes qualifier, value;
	uint64_t ts;             /* a cell line after "versions"; else 0 */
	int has_policy;          /* a family line with POLICY: .policy */
	mrtx_family_spec policy; /* (.name unset) */
} dump_line;

/*
 * Parse line[0..len) (without its newline; line[len] must be writable: a
 * name may be NUL-terminated there), decoding in place, as a line
 * expected in this position: in_cells = 0 for a header line (the magic
 * line, table, family, versions or cells), 1 after "cells" (a cell line,
 * or end), 2 after "cells" of a dump with "versions" (a cell line with
 * TS, or end).  Whether the line's version allows it is the caller's.
 * Returns 0 and fills *out (pointing into line), or -1 with a message.
 */
int dump_parse_line(char *line, size_t len, int in_cells, dump_line *out, char *err,
                    size_t errlen);

#endif
