/*
 * util.h - what every `mrtx` subcommand shares: the byte escaping of
 * arguments and output, option parsing, error printing, a JSON string
 * writer, and opening a store.
 *
 * Escaping (arguments, script tokens, and all output):
 *   \xNN  one byte, NN two hex digits (either case)
 *   \\    one backslash
 * Any other backslash sequence in input is an error.  Output escapes every
 * byte below 0x20 or above 0x7e, and the backslash, so any byte string
 * round-trips through the shell; where a field is followed by another on
 * the same line (scan rows, lock listings) a space is escaped as \x20 too.
 *
 * JSON output carries byte strings in that escaped form (so it is always
 * plain ASCII and valid JSON); decode the JSON, then the escapes.
 */
#ifndef MRTX_TOOL_UTIL_H
#define MRTX_TOOL_UTIL_H

#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "mrtx.h"

/* Exit codes. */
/* EXIT_CHECK: a condition of check, check-and-put did not hold (nothing
   written). */
enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_CHECK = 3 };

/* ---- escaping ---- */

/* The value of one hex digit (either case), or -1. */
static inline int tool_hexval(int c)
{
	static const char digits[] = "0123456789abcdef";
	const char *p = c > 0 && c < 128 ? strchr(digits, tolower(c)) : NULL;

	return p && *p ? (int)(p - digits) : -1;
}

#define ESC_SPACE 0x1 /* also escape ' ' (the field separator) */

/*
 * Decode escapes of s[0..len) in place (the result is never longer).
 * Returns 0 and sets *outlen, or -1 with a message in err.
 */
int unescape_inplace(char *s, size_t len, size_t *outlen, char *err, size_t errlen);
/* Write p[0..n) escaped to f. */
void print_escaped(FILE *f, const void *p, size_t n, unsigned flags);
/* Escaped form as a malloc'd NUL-terminated string (NULL on ENOMEM). */
char *escape_dup(const void *p, size_t n, unsigned flags);

/*
 * The first row after every row that starts with p[0..n): p with its
 * trailing 0xff bytes cut and its last byte raised by one, written to out
 * (room for n bytes).  Returns its size; 0 when every byte is 0xff (no row
 * follows: unbounded).
 */
static inline size_t prefix_end(const void *p, size_t n, unsigned char *out)
{
	const unsigned char *s = p;

	while (n && s[n - 1] == 0xff)
		n--;
	if (n) {
		memcpy(out, s, n);
		out[n - 1]++;
	}
	return n;
}

/* ---- JSON ---- */

/* Write s[0..n) as a JSON string literal (s must be ASCII, e.g. escaped). */
void json_str(FILE *f, const char *s, size_t n);
/* Write bytes as a JSON string of their escaped form. */
void json_bytes(FILE *f, const void *p, size_t n);

/* ---- output of a transaction that may be retried ---- */

/* What one attempt printed, kept in memory and shown only once the
 * transaction committed (a retried attempt starts over). */
typedef struct memout {
	FILE *f;
	char *buf;
	size_t len;
} memout;

/* Start an attempt, dropping what an earlier one wrote: the stream, or
 * NULL when out of memory. */
FILE *memout_restart(memout *m);
/* End: close the stream, write what it holds to out if ok, free it all. */
void memout_finish(memout *m, int ok, FILE *out);

/* ---- errors ---- */

/* "mrtx: CMD: message\n" on stderr. */
void tool_err(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The detail of mrtx error rc for a user: mrtx_errmsg() without the names
   of library functions and types in it ("mrtx_begin_at: " wherever a part
   starts, " (mrtx_options.map_size)") and without a step said twice
   ("commit: commit: "), or mrtx_strerror(rc) when there is no detail.
   Valid until the next call of the thread. */
const char *tool_errmsg(int rc);
/* "mrtx: CMD: [STEP: ]<tool_errmsg(rc)>"; returns EXIT_FAIL. */
int tool_fail(const char *cmd, const char *step, int rc);
/* What the tool adds to the message of mrtx error rc ("" or " (...)"): how
   to grow a full map (MRTX_EFULL whose message, mrtx_errmsg(), names the
   map; not a full disk), why a handle is read-only (MRTX_EREADONLY), where
   a table's families are shown (MRTX_EEXIST), that --at can be left out
   (a timestamp past the newest commit).  A static string. */
const char *tool_hint(int rc);
/* Print a usage error and the command's usage line; returns EXIT_USAGE. */
int tool_usage_err(const char *cmd, const char *usage, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- arguments ---- */

/* In a subcommand: print "usage: USAGE", a blank line and TEXT on stdout,
 * then return EXIT_OK (the answer to --help). */
#define HELP(usage, text)                                  \
	do {                                                   \
		printf("usage: %s\n\n%s", usage, text);            \
		return EXIT_OK;                                    \
	} while (0)

typedef struct tool_opt {
	const char *name;   /* long name without "--" */
	int has_arg;
	const char **value; /* has_arg: receives the argument */
	int *flag;          /* !has_arg: set to 1 */
} tool_opt;

/*
 * Parse argv[1..argc) (argv[0] is the subcommand).  Options are long only
 * ("--name", "--name=value", "--name value"); "-h"/"--help" set *help;
 * "--" ends options; anything else, including "-" and "-5", is positional.
 * Positionals are compacted to pos[0..*npos) (pos may be argv + 1).
 * Returns 0, or EXIT_USAGE after printing the error.
 */
int args_parse(const char *cmd, const char *usage, int argc, char **argv,
               const tool_opt *opts, char **pos, int *npos, int *help);

/*
 * A byte-string argument, unescaped in place.  Returns 0 or EXIT_USAGE
 * (message printed, naming `what`).
 */
int arg_bytes(const char *cmd, const char *what, char *arg, mrtx_bytes *out);
/* A name (table, family): unescaped, no NUL byte, not empty. */
int arg_name(const char *cmd, const char *what, char *arg);
/* "FAMILY:QUALIFIER" split at the first ':' and unescaped, in place. */
int arg_column(const char *cmd, char *arg, const char **family, mrtx_bytes *qual);
/* A non-negative decimal integer. */
int arg_size(const char *cmd, const char *what, const char *arg, size_t *out);

/* ---- store ---- */

/*
 * The options every later tool_open passes to mrtx_open (copied; initially
 * MRTX_OPTIONS_INIT), and whether it commits in two phases (txn_test.h).
 * main sets them from the global options (globals.h: map size, read-only,
 * --two-phase).
 */
void tool_open_options(const mrtx_options *o, int two_phase);

/*
 * Open the store at path, with the options of tool_open_options.  A path that is not a directory is refused ("is not a
 * directory").  Unless create, the directory must already hold a store (so
 * a typo or an empty directory does not become an empty store).
 * Returns 0 or EXIT_FAIL (message printed).
 */
int tool_open(const char *cmd, const char *path, int create, mrtx_db **out);

/* A list of table names (names_list), each malloc'd. */
typedef struct name_list {
	char **v;
	size_t n, cap;
} name_list;
/* Every table's name, in name order, into *out (names_free it).  0 or an
 * mrtx error (*out empty). */
int names_list(mrtx_db *db, name_list *out);
void names_free(name_list *l);

/* A loose "is the process's stdout/stderr a terminal" for progress lines. */
int tool_stderr_tty(void);

#endif
