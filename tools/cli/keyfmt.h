/*
 * keyfmt.h - `--key FORMAT`: rows as composite keys (mrtx_key_*).
 *
 * FORMAT names the key's parts in order, comma-separated, with the type
 * names of the key builders: bytes (or str), u32, u64, i32, i64, rts,
 * fixedN and hashN (N bytes wide; hash 1..32), salt.  Example: u64,str.
 *
 * Output: a row is printed by mrtx_key_format, e.g. (42, "alice"); a row
 * that does not split into those parts is printed escaped instead (and
 * counted, so the command can say so).
 *
 * Input: a row is written as its parts, comma-separated, optionally in
 * parentheses, so mrtx_key_format's output can be pasted back:
 *   bytes        "quoted" or bare text; \xNN and \\ escapes in both; bare
 *                text ends at the next ',' and loses surrounding blanks
 *   u32 u64      decimal
 *   i32 i64      decimal, optionally negative
 *   rts          the timestamp, decimal, optionally after "ts "
 *   salt         the bucket 0..255, optionally after "salt "
 *   fixedN hashN 2N hex digits, optionally after "0x" (the bytes as they
 *                are: a hash is given as printed, not recomputed)
 * Blanks around parts are ignored.
 */
#ifndef MRTX_TOOL_KEYFMT_H
#define MRTX_TOOL_KEYFMT_H

#include <stdio.h>

#include "mrtx.h"

#define KEYFMT_MAX_PARTS 64

typedef struct keyfmt {
	mrtx_key_part parts[KEYFMT_MAX_PARTS]; /* type and width of each part */
	size_t n;
	const char *text;                      /* FORMAT as given (borrowed) */
} keyfmt;

/* Parse FORMAT.  Returns 0, or EXIT_USAGE after printing the error. */
int keyfmt_parse(const char *cmd, const char *text, keyfmt *out);

/*
 * Build the row key written as text (see above) into k.  With prefix_ok
 * the leading parts alone are accepted (a scan bound); otherwise every
 * part must be given.  Returns 0; EXIT_USAGE (syntax, naming `what`);
 * EXIT_FAIL (the key is longer than MRTX_MAX_KEY); messages printed.
 */
int keyfmt_build(const char *cmd, const char *what, const keyfmt *f, const char *text,
                 int prefix_ok, mrtx_key *k);

/*
 * Split row into f's parts: parts[0..f->n) get the values, buf (at least
 * row.size bytes) the decoded byte strings.  Returns 0, or nonzero when the
 * row does not have that form.
 */
int keyfmt_split(const keyfmt *f, mrtx_bytes row, mrtx_key_part *parts, uint8_t *buf,
                 size_t bufsize);

/*
 * Print row as f's parts (mrtx_key_format's text), or escaped (flags as
 * print_escaped) when it does not split.  Returns 0 when printed as a key,
 * 1 when printed escaped.
 */
int keyfmt_print(FILE *out, const keyfmt *f, mrtx_bytes row, unsigned flags);

/*
 * Write row's parts as a JSON array (bytes in valio.h's form, integers,
 * timestamps and salts as numbers, fixed and hash parts as hex strings),
 * or null when it does not split.  Returns 0, or 1 for null.
 */
int keyfmt_json(FILE *out, const keyfmt *f, mrtx_bytes row);

#endif
