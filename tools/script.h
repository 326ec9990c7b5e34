/*
 * script.h - the line language of `mrtx txn`, parsed without a store (so it
 * can be fuzzed).
 *
 * One command per line:
 *   get TABLE ROW FAMILY:QUALIFIER
 *   put TABLE ROW FAMILY:QUALIFIER VALUE
 *   del TABLE ROW FAMILY:QUALIFIER
 *   delrow TABLE ROW
 *   scan TABLE [START [END]]
 *   abort
 * Blank lines and lines whose first non-blank byte is '#' are ignored.
 * Tokens are separated by spaces or tabs.  A token that starts with '"' runs
 * to the next '"' (which must be followed by a blank or the end of the line)
 * and may hold blanks; "" is the empty string.  Inside and outside quotes
 * the escapes \xNN and \\ are decoded (write a quote inside quotes as \x22).
 * A trailing '\r' is ignored.  Command words are case-sensitive.
 */
#ifndef MRTX_TOOL_SCRIPT_H
#define MRTX_TOOL_SCRIPT_H

#include <stddef.h>

#include "mrtx.h"

typedef enum {
	SCRIPT_NONE = 0, /* blank or comment */
	SCRIPT_GET,
	SCRIPT_PUT,
	SCRIPT_DEL,
	SCRIPT_DELROW,
	SCRIPT_SCAN,
	SCRIPT_ABORT
} script_op;

typedef struct script_cmd {
	script_op op;
	const char *table;          /* NUL-terminated, no NUL inside */
	mrtx_bytes row;
	const char *family;         /* NUL-terminated, no NUL inside */
	mrtx_bytes qualifier;
	mrtx_bytes value;
	mrtx_bytes start, end;      /* scan bounds; size 0 = unbounded */
	char *mem;                  /* owns every pointer above */
} script_cmd;

/*
 * Parse line[0..len) (it need not be NUL-terminated and may hold NUL
 * bytes).  On success returns 0 and fills *out (free with script_cmd_free,
 * also after SCRIPT_NONE).  On a syntax error returns -1 with a message in
 * err (NUL-terminated, truncated to errlen) and *out needs no free.  Returns
 * -2 when out of memory.
 */
int script_parse_line(const char *line, size_t len, script_cmd *out, char *err,
                      size_t errlen);

/* Free what script_parse_line allocated; NULL is a no-op. */
void script_cmd_free(script_cmd *c);

#endif
