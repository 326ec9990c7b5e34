/*
 * script.h - the line language of `mrtx txn`, parsed without a store (so it
 * can be fuzzed).
 *
 * One command per line:
 *   get TABLE ROW [FAMILY:QUALIFIER]      (without the column: the whole row)
 *   put TABLE ROW FAMILY:QUALIFIER VALUE
 *   del TABLE ROW FAMILY:QUALIFIER
 *   delrow TABLE ROW
 *   scan TABLE [START [END]] [--reverse] [--limit N] [--family F] [--prefix P]
 *        [--versions N] [--time-range TS TS]
 *   incr TABLE ROW FAMILY:QUALIFIER [DELTA]
 *   append TABLE ROW FAMILY:QUALIFIER SUFFIX
 *   check-and-put TABLE ROW FAMILY:QUALIFIER EXPECTED|--absent NEWVALUE
 *   check TABLE ROW FAMILY:QUALIFIER OP NUMBER   (OP: == != < <= > >=)
 *   check TABLE ROW FAMILY:QUALIFIER absent|present
 *   abort
 * Counters (incr, check's numbers) are decimal ASCII, an optional '-' and
 * digits, in the signed 64-bit range; a missing cell counts as 0.
 * Options are words that start with an unquoted "--": a row or value that
 * starts with "--" is written quoted ('--x') or escaped (\x2d-x).
 * Blank lines and lines whose first non-blank byte is '#' are ignored (a
 * '#' anywhere else is an ordinary byte).  A trailing '\r' is ignored.
 * Command words are case-sensitive.
 *
 * Quoting, as in a POSIX shell (tools/cli/script.c, tokenize):
 *   - Words are separated by runs of spaces and tabs.
 *   - '...': every byte up to the next ' is taken as it is; no escapes.
 *   - "...": bytes up to the next unescaped "; inside, \xNN (one byte, two
 *     hex digits), \\ (a backslash) and \" (a quote) are decoded; any
 *     other backslash is an error.
 *   - Outside quotes, \xNN, \\, \", \' and a backslash before a space or
 *     a tab stand for that byte; any other backslash is an error.
 *   - Quoted and unquoted parts that touch form one word: cf:"a b" is the
 *     word `cf:a b`, 'it'\''s' is `it's`; "" and '' are the empty word.
 *   - An unterminated quote is an error naming the column it opened at.
 * Compatibility with the first version of the language (a word starting
 * with " ran to the next " and had to end there): every line it accepted
 * keeps its meaning, except that a ' or " inside an unquoted word now
 * starts a quote: write a literal quote as \' \" or \x27 \x22.
 */
#ifndef MRTX_TOOL_SCRIPT_H
#define MRTX_TOOL_SCRIPT_H

#include <stddef.h>
#include <stdint.h>

#include "mrtx.h"

typedef enum {
	SCRIPT_NONE = 0, /* blank or comment */
	SCRIPT_GET,
	SCRIPT_PUT,
	SCRIPT_DEL,
	SCRIPT_DELROW,
	SCRIPT_SCAN,
	SCRIPT_ABORT,
	SCRIPT_INCR,
	SCRIPT_APPEND,
	SCRIPT_CHECK_AND_PUT,
	SCRIPT_CHECK
} script_op;

/* check's comparison: numeric ones, or whether the cell exists. */
typedef enum {
	SCRIPT_CMP_EQ = 1, SCRIPT_CMP_NE, SCRIPT_CMP_LT, SCRIPT_CMP_LE, SCRIPT_CMP_GT,
	SCRIPT_CMP_GE, SCRIPT_CMP_ABSENT, SCRIPT_CMP_PRESENT
} script_cmp;

typedef struct script_cmd {
	script_op op;
	const char *table;          /* NUL-terminated, no NUL inside */
	mrtx_bytes row;
	const char *family;         /* NUL-terminated, no NUL inside */
	mrtx_bytes qualifier;
	mrtx_bytes value;           /* put, append (the suffix), check-and-put (new) */
	int whole_row;              /* get without FAMILY:QUALIFIER */
	mrtx_bytes expected;        /* check-and-put, unless absent */
	int absent;                 /* check-and-put --absent: the cell must be missing */
	int64_t number;             /* incr's delta (default 1), check's operand */
	script_cmp cmp;             /* check */
	mrtx_bytes start, end;      /* scan bounds; size 0 = unbounded */
	mrtx_bytes prefix;          /* scan --prefix (size 0: none; then no bounds) */
	const char *scan_family;    /* scan --family, or NULL */
	int reverse;                /* scan --reverse */
	size_t limit;               /* scan --limit (0: none) */
	size_t versions;            /* scan --versions (0: one, no timestamps) */
	int ts_range;               /* scan --time-range: versions in [ts_lo, ts_hi) */
	uint64_t ts_lo, ts_hi;
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

/* check's test from its words after FAMILY:QUALIFIER: op (== != < <= > >=
   absent present) and num (NULL after absent and present) into out->cmp
   and out->number.  0, or -1 with a message in err. */
int script_parse_check(char *op, char *num, script_cmd *out, char *err, size_t errlen);

/* Free what script_parse_line allocated; NULL is a no-op. */
void script_cmd_free(script_cmd *c);

/* Most words a line may have (a command word and its arguments). */
#define SCRIPT_MAX_WORDS 16

/* A line split into decoded words (for commands outside the language, e.g.
   the shell's begin/commit). */
typedef struct script_words {
	size_t n;                     /* 0: a blank or comment line */
	mrtx_bytes w[SCRIPT_MAX_WORDS]; /* each followed by a NUL byte */
	char *mem;                    /* owns the words */
} script_words;

/*
 * Split line[0..len) into words by the rules above.  Returns 0 and fills
 * *out (free with script_words_free), -1 with a message in err on a syntax
 * error (including more than SCRIPT_MAX_WORDS words; *out needs no free),
 * -2 when out of memory.
 */
int script_split(const char *line, size_t len, script_words *out, char *err,
                 size_t errlen);

/* Free what script_split allocated; NULL is a no-op. */
void script_words_free(script_words *w);

/*
 * A counter's value: decimal ASCII, an optional '-' (or, when sign_plus, '+')
 * and 1 to 19 digits, within int64_t.  0 and *out, or -1 (not of that form)
 * or -2 (out of range).
 */
int script_parse_i64(const void *p, size_t n, int sign_plus, int64_t *out);

/* The usage line of the i-th command of the language ("get TABLE ROW
   FAMILY:QUALIFIER", ...), or NULL past the last. */
const char *script_usage(size_t i);

#endif
