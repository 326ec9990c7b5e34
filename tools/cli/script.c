/*
 * script.c - see script.h.  Pure: no store, no I/O.
 */
#include "script.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define MAX_TOKENS SCRIPT_MAX_WORDS

typedef struct tok {
	char *p;
	size_t n;
	int opt; /* begins with an unquoted "--": an option word */
} tok;

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/*
 * Decode the backslash escape at mem[*i] into mem[*o], advancing both
 * (*o <= *i always, so decoding is in place).  In double quotes only \\,
 * \" and \xNN are escapes; outside quotes also \', backslash-space and
 * backslash-tab.
 */
static int escape(char *mem, size_t len, size_t *i, size_t *o, int dquoted, char *err,
                  size_t errlen)
{
	size_t at = *i;
	char c = at + 1 < len ? mem[at + 1] : '\0';

	if (at + 1 < len && (c == '\\' || c == '"' ||
	                     (!dquoted && (c == '\'' || c == ' ' || c == '\t')))) {
		mem[(*o)++] = c;
		*i += 2;
		return 0;
	}
	if (at + 3 < len && c == 'x' && tool_hexval((unsigned char)mem[at + 2]) >= 0 && tool_hexval((unsigned char)mem[at + 3]) >= 0) {
		mem[(*o)++] = (char)(tool_hexval((unsigned char)mem[at + 2]) * 16 + tool_hexval((unsigned char)mem[at + 3]));
		*i += 4;
		return 0;
	}
	if (dquoted)
		snprintf(err, errlen, "bad escape at column %zu (in double quotes: \\xNN, "
		         "\\\\ or \\\")", at + 1);
	else
		snprintf(err, errlen, "bad escape at column %zu (use \\xNN, \\\\, \\\", "
		         "\\' or backslash-space)", at + 1);
	return -1;
}

/*
 * Split mem[0..len) into words, in place (each word NUL-terminated after
 * its bytes); -1 with err on bad syntax.  The rules are in script.h.
 */
static int tokenize(char *mem, size_t len, tok *toks, size_t *ntok, char *err, size_t errlen)
{
	size_t i = 0, n = 0;

	for (;;) {
		size_t o, start;

		while (i < len && is_blank(mem[i]))
			i++;
		if (i == len)
			break;
		if (n == MAX_TOKENS) {
			snprintf(err, errlen, "too many arguments (quote one that holds blanks)");
			return -1;
		}
		start = o = i;
		toks[n].opt = i + 1 < len && mem[i] == '-' && mem[i + 1] == '-';
		while (i < len && !is_blank(mem[i])) {
			size_t open = i;

			if (mem[i] == '\'') {
				for (i++; i < len && mem[i] != '\''; i++)
					mem[o++] = mem[i];
				if (i == len) {
					snprintf(err, errlen, "unterminated single quote (opened at "
					         "column %zu)", open + 1);
					return -1;
				}
				i++;
			} else if (mem[i] == '"') {
				for (i++; i < len && mem[i] != '"';)
					if (mem[i] != '\\')
						mem[o++] = mem[i++];
					else if (escape(mem, len, &i, &o, 1, err, errlen))
						return -1;
				if (i == len) {
					snprintf(err, errlen, "unterminated double quote (opened at "
					         "column %zu)", open + 1);
					return -1;
				}
				i++;
			} else if (mem[i] == '\\') {
				if (escape(mem, len, &i, &o, 0, err, errlen))
					return -1;
			} else {
				mem[o++] = mem[i++];
			}
		}
		toks[n].p = mem + start;
		toks[n].n = o - start;
		if (i < len)
			i++; /* the blank ending the word: o < i from here on */
		mem[o] = '\0'; /* o <= len: mem has len + 1 bytes */
		n++;
	}
	*ntok = n;
	return 0;
}

static int name_tok(const tok *t, const char *what, const char **out, char *err, size_t errlen)
{
	if (t->n == 0 || memchr(t->p, '\0', t->n)) {
		snprintf(err, errlen, "%s must be a non-empty name without NUL bytes", what);
		return -1;
	}
	*out = t->p;
	return 0;
}

static int row_tok(const tok *t, mrtx_bytes *out, char *err, size_t errlen)
{
	if (t->n == 0) {
		snprintf(err, errlen, "row must not be empty");
		return -1;
	}
	*out = MRTX_BYTES(t->p, t->n);
	return 0;
}

/* FAMILY:QUALIFIER, split at the first ':' of the decoded token. */
static int column_tok(tok *t, const char **family, mrtx_bytes *qual, char *err, size_t errlen)
{
	char *colon = memchr(t->p, ':', t->n);
	tok f;

	if (!colon) {
		int n = (int)(t->n > 64 ? 64 : t->n);

		snprintf(err, errlen, "column '%.*s' is not FAMILY:QUALIFIER (%.*s: is that family "
		         "with the empty qualifier)", n, t->p, n, t->p);
		return -1;
	}
	f.p = t->p;
	f.n = (size_t)(colon - t->p);
	*colon = '\0';
	*qual = MRTX_BYTES(colon + 1, t->n - f.n - 1);
	return name_tok(&f, "family", family, err, errlen);
}

static const struct {
	const char *word;
	script_op op;
	size_t min, max; /* arguments after the word (options and theirs included) */
	const char *usage;
} commands[] = {
	{ "get", SCRIPT_GET, 2, 3, "get TABLE ROW [FAMILY:QUALIFIER]" },
	{ "put", SCRIPT_PUT, 4, 4, "put TABLE ROW FAMILY:QUALIFIER VALUE" },
	{ "del", SCRIPT_DEL, 3, 3, "del TABLE ROW FAMILY:QUALIFIER" },
	{ "delrow", SCRIPT_DELROW, 2, 2, "delrow TABLE ROW" },
	{ "scan", SCRIPT_SCAN, 1, SCRIPT_MAX_WORDS - 1,
	  "scan TABLE [START [END]] [--reverse] [--limit N] [--family F] [--prefix P] "
	  "[--versions N] [--time-range START END]" },
	{ "incr", SCRIPT_INCR, 3, 4, "incr TABLE ROW FAMILY:QUALIFIER [DELTA]" },
	{ "append", SCRIPT_APPEND, 4, 4, "append TABLE ROW FAMILY:QUALIFIER SUFFIX" },
	{ "check-and-put", SCRIPT_CHECK_AND_PUT, 5, 5,
	  "check-and-put TABLE ROW FAMILY:QUALIFIER EXPECTED|--absent NEWVALUE" },
	{ "check", SCRIPT_CHECK, 4, 5,
	  "check TABLE ROW FAMILY:QUALIFIER OP NUMBER | absent | present" },
	{ "abort", SCRIPT_ABORT, 0, 0, "abort" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

int script_parse_i64(const void *p, size_t n, int sign_plus, int64_t *out)
{
	const unsigned char *s = p;
	uint64_t v = 0, lim;
	size_t i = 0, j;
	int neg = 0;

	if (n && (s[0] == '-' || (sign_plus && s[0] == '+'))) {
		neg = s[0] == '-';
		i = 1;
	}
	if (i == n)
		return -1;
	for (j = i; j < n; j++)
		if (s[j] < '0' || s[j] > '9')
			return -1;
	while (i + 1 < n && s[i] == '0')
		i++; /* leading zeros */
	if (n - i > 19)
		return -2;
	lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; i < n; i++)
		v = v * 10 + (uint64_t)(s[i] - '0'); /* 19 digits fit in uint64_t */
	if (v > lim)
		return -2;
	*out = neg ? (v == lim ? INT64_MIN : -(int64_t)v) : (int64_t)v;
	return 0;
}

/* A word that must not be an option (check-and-put's EXPECTED: only
   --absent is one there). */
static int plain_tok(const tok *t, const char *what, char *err, size_t errlen)
{
	if (!t->opt)
		return 0;
	snprintf(err, errlen, "%s: unexpected option %.*s (a %s starting with -- is "
	         "written quoted, '--x', or as \\x2d-x)", what, (int)(t->n > 40 ? 40 : t->n),
	         t->p, what);
	return -1;
}

static int number_tok(const tok *t, const char *what, int64_t *out, char *err,
                      size_t errlen)
{
	int rc = script_parse_i64(t->p, t->n, 1, out);

	if (rc == 0)
		return 0;
	snprintf(err, errlen, "%s '%.*s' %s", what, (int)(t->n > 40 ? 40 : t->n), t->p,
	         rc == -2 ? "is outside the signed 64-bit range" :
	                    "is not a decimal integer (e.g. 10 or -10)");
	return -1;
}

/* scan TABLE [START [END]] [--reverse] [--limit N] [--family F] [--prefix P]
 *      [--versions N] [--time-range START END] */
static int scan_args(tok *a, size_t n, script_cmd *out, char *err, size_t errlen)
{
	size_t npos = 0, i;
	int have_prefix = 0;

	for (i = 1; i < n; i++) {
		const char *w = a[i].p;

		if (memchr(w, '\0', a[i].n))
			w = ""; /* no option holds a NUL */
		if (!a[i].opt) {
			if (npos == 2) {
				snprintf(err, errlen, "scan takes at most START and END (usage: %s)",
				         commands[4].usage);
				return -1;
			}
			if (npos++ == 0)
				out->start = MRTX_BYTES(a[i].p, a[i].n);
			else
				out->end = MRTX_BYTES(a[i].p, a[i].n);
			continue;
		}
		if (strcmp(w, "--reverse") == 0) {
			out->reverse = 1;
			continue;
		}
		if (strcmp(w, "--time-range") == 0) {
			int64_t lo, hi;

			if (i + 2 >= n) {
				snprintf(err, errlen, "scan: --time-range needs START and END");
				return -1;
			}
			if (number_tok(&a[i + 1], "scan --time-range START", &lo, err, errlen) ||
			    number_tok(&a[i + 2], "scan --time-range END", &hi, err, errlen))
				return -1;
			if (lo < 0 || hi <= lo) {
				snprintf(err, errlen, "scan --time-range: START 0 or more and END above "
				         "it (the range is [START, END))");
				return -1;
			}
			out->ts_range = 1;
			out->ts_lo = (uint64_t)lo;
			out->ts_hi = (uint64_t)hi;
			i += 2;
			continue;
		}
		if (strcmp(w, "--limit") != 0 && strcmp(w, "--family") != 0 &&
		    strcmp(w, "--prefix") != 0 && strcmp(w, "--versions") != 0) {
			snprintf(err, errlen, "scan: unknown option %.*s (expected --reverse, "
			         "--limit N, --family F, --prefix P, --versions N or --time-range "
			         "START END)", (int)(a[i].n > 40 ? 40 : a[i].n), w);
			return -1;
		}
		if (i + 1 == n) {
			snprintf(err, errlen, "scan: %s needs a value", w);
			return -1;
		}
		i++;
		if (strcmp(w, "--limit") == 0) {
			int64_t v;

			if (script_parse_i64(a[i].p, a[i].n, 1, &v) || v < 0) {
				snprintf(err, errlen, "scan --limit '%.*s' is not a count of rows "
				         "(a decimal number, 0 or more; 0 is no limit)",
				         (int)(a[i].n > 40 ? 40 : a[i].n), a[i].p);
				return -1;
			}
			out->limit = (size_t)v;
		} else if (strcmp(w, "--versions") == 0) {
			int64_t v;

			if (number_tok(&a[i], "scan --versions", &v, err, errlen))
				return -1;
			if (v < 1 || v > UINT32_MAX) {
				snprintf(err, errlen, "scan --versions: 1 to 4294967295");
				return -1;
			}
			out->versions = (size_t)v;
		} else if (strcmp(w, "--family") == 0) {
			if (name_tok(&a[i], "scan --family", &out->scan_family, err, errlen))
				return -1;
		} else {
			if (a[i].n == 0) {
				snprintf(err, errlen, "scan --prefix: the prefix must not be empty");
				return -1;
			}
			have_prefix = 1;
			out->prefix = MRTX_BYTES(a[i].p, a[i].n);
		}
	}
	if (have_prefix && npos) {
		snprintf(err, errlen, "scan: --prefix replaces START and END");
		return -1;
	}
	return 0;
}

/* check ... OP NUMBER | absent | present: w[0..n) after the column. */
static int check_args(tok *w, size_t n, script_cmd *out, char *err, size_t errlen)
{
	static const struct {
		const char *op;
		script_cmp cmp;
	} ops[] = {
		{ "==", SCRIPT_CMP_EQ }, { "!=", SCRIPT_CMP_NE }, { "<", SCRIPT_CMP_LT },
		{ "<=", SCRIPT_CMP_LE }, { ">", SCRIPT_CMP_GT }, { ">=", SCRIPT_CMP_GE },
		{ "absent", SCRIPT_CMP_ABSENT }, { "present", SCRIPT_CMP_PRESENT },
	};
	size_t i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (strlen(ops[i].op) == w[0].n && memcmp(ops[i].op, w[0].p, w[0].n) == 0)
			break;
	if (i == sizeof(ops) / sizeof(ops[0])) {
		snprintf(err, errlen, "check: unknown test '%.*s' (expected ==, !=, <, <=, >, >= "
		         "and a number, or absent or present)", (int)(w[0].n > 40 ? 40 : w[0].n),
		         w[0].p);
		return -1;
	}
	out->cmp = ops[i].cmp;
	if ((out->cmp == SCRIPT_CMP_ABSENT || out->cmp == SCRIPT_CMP_PRESENT) != (n == 1)) {
		snprintf(err, errlen, n == 1 ? "check: %s needs a number after it" :
		         "check: %s takes nothing after it", ops[i].op);
		return -1;
	}
	return n == 2 ? number_tok(&w[1], "check: NUMBER", &out->number, err, errlen) : 0;
}

int script_parse_check(char *op, char *num, script_cmd *out, char *err, size_t errlen)
{
	tok w[2] = { { op, strlen(op), 0 }, { num, num ? strlen(num) : 0, 0 } };

	return check_args(w, num ? 2 : 1, out, err, errlen);
}

/*
 * The common front: copy line (less a trailing '\r') and split it.  0 with
 * *ntok == 0 for a blank or comment line; -1 with err; -2 out of memory.
 * *mem is set (and owned by the caller) only on 0.
 */
static int split(const char *line, size_t len, char **mem, tok *toks, size_t *ntok,
                 char *err, size_t errlen)
{
	size_t i = 0;
	char *m;

	*mem = NULL;
	*ntok = 0;
	if (errlen)
		err[0] = '\0';
	if (len && line[len - 1] == '\r')
		len--;
	if (!(m = malloc(len + 1)))
		return -2;
	memcpy(m, line, len);
	m[len] = '\0';
	while (i < len && is_blank(m[i]))
		i++;
	if (i < len && m[i] != '#' && tokenize(m, len, toks, ntok, err, errlen)) {
		free(m);
		return -1;
	}
	*mem = m;
	return 0;
}

int script_split(const char *line, size_t len, script_words *out, char *err, size_t errlen)
{
	tok toks[MAX_TOKENS];
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = split(line, len, &out->mem, toks, &out->n, err, errlen)))
		return rc;
	for (size_t i = 0; i < out->n; i++)
		out->w[i] = MRTX_BYTES(toks[i].p, toks[i].n);
	return 0;
}

void script_words_free(script_words *w)
{
	if (!w)
		return;
	free(w->mem);
	w->mem = NULL;
}

const char *script_usage(size_t i)
{
	return i < NCOMMANDS ? commands[i].usage : NULL;
}

int script_parse_line(const char *line, size_t len, script_cmd *out, char *err,
                      size_t errlen)
{
	tok toks[MAX_TOKENS];
	size_t ntok = 0, ci, nargs;
	char *mem;
	tok *a;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = split(line, len, &mem, toks, &ntok, err, errlen)))
		return rc;
	if (ntok == 0) {
		out->mem = mem;
		return 0;
	}
	for (ci = 0; ci < NCOMMANDS; ci++)
		if (strlen(commands[ci].word) == toks[0].n &&
		    memcmp(commands[ci].word, toks[0].p, toks[0].n) == 0)
			break;
	if (ci == NCOMMANDS) {
		snprintf(err, errlen, "unknown command '%.*s' (expected get, put, del, delrow, "
		         "scan, incr, append, check-and-put, check or abort)",
		         (int)(toks[0].n > 40 ? 40 : toks[0].n), toks[0].p);
		goto bad;
	}
	nargs = ntok - 1;
	if (nargs < commands[ci].min || nargs > commands[ci].max) {
		snprintf(err, errlen, "usage: %s", commands[ci].usage);
		goto bad;
	}
	a = toks + 1;
	out->op = commands[ci].op;
	if (out->op == SCRIPT_ABORT)
		goto done;
	/* an option where the command takes none: the same refusal for every
	 * word (scan parses its own; check-and-put's EXPECTED may be --absent) */
	for (size_t i = 0; i < nargs && out->op != SCRIPT_SCAN; i++)
		if (a[i].opt && !(out->op == SCRIPT_CHECK_AND_PUT && i == 3)) {
			snprintf(err, errlen, "%.*s: unexpected option %.*s (a word starting with "
			         "-- is written quoted, '--x', or as \\x2d-x)", (int)toks[0].n,
			         toks[0].p, (int)(a[i].n > 40 ? 40 : a[i].n), a[i].p);
			goto bad;
		}
	if (name_tok(&a[0], "table", &out->table, err, errlen))
		goto bad;
	if (out->op == SCRIPT_SCAN) {
		if (scan_args(a, nargs, out, err, errlen))
			goto bad;
		goto done;
	}
	if (row_tok(&a[1], &out->row, err, errlen))
		goto bad;
	if (out->op == SCRIPT_DELROW)
		goto done;
	if (out->op == SCRIPT_GET && nargs == 2) {
		out->whole_row = 1;
		goto done;
	}
	if (column_tok(&a[2], &out->family, &out->qualifier, err, errlen))
		goto bad;
	switch (out->op) {
	case SCRIPT_PUT:
	case SCRIPT_APPEND:
		out->value = MRTX_BYTES(a[3].p, a[3].n);
		break;
	case SCRIPT_INCR:
		out->number = 1;
		if (nargs == 4 && number_tok(&a[3], "incr: DELTA", &out->number, err, errlen))
			goto bad;
		break;
	case SCRIPT_CHECK_AND_PUT:
		if (a[3].opt && a[3].n == 8 && memcmp(a[3].p, "--absent", 8) == 0)
			out->absent = 1;
		else if (plain_tok(&a[3], "expected value", err, errlen))
			goto bad;
		else
			out->expected = MRTX_BYTES(a[3].p, a[3].n);
		out->value = MRTX_BYTES(a[4].p, a[4].n);
		break;
	case SCRIPT_CHECK:
		if (check_args(a + 3, nargs - 3, out, err, errlen))
			goto bad;
		break;
	default:
		break;
	}
done:
	out->mem = mem;
	return 0;
bad:
	free(mem);
	memset(out, 0, sizeof(*out));
	return -1;
}

void script_cmd_free(script_cmd *c)
{
	if (!c)
		return;
	free(c->mem);
	c->mem = NULL;
}
