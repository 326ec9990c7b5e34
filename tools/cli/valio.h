/*
 * valio.h - values in and out of `mrtx get/put/scan`: reading a value from
 * a file or standard input, writing raw bytes, and the lossless JSON form of
 * a byte string used by `get --json` and `scan --json`:
 *
 *   valid UTF-8     a JSON string of that text (every byte string that is
 *                   valid UTF-8, NUL and control characters included; those
 *                   are written as \uXXXX escapes)
 *   anything else   {"base64": "<standard base64, padded>"}
 *
 * Decoding: a string is its UTF-8 encoding, an object the base64 decoding
 * of its "base64" member.  "Valid UTF-8" is the strict definition (no
 * overlong forms, no surrogates, nothing above U+10FFFF), so encoding the
 * decoded text again gives the original bytes.
 */
#ifndef MRTX_TOOL_VALIO_H
#define MRTX_TOOL_VALIO_H

#include <stddef.h>
#include <stdio.h>

/*
 * Read all of path ("-": standard input) into a malloc'd buffer (*out,
 * freed by the caller; non-NULL on success even when empty).  More than
 * MRTX_MAX_VALUE bytes is refused without reading further.  Returns 0, or
 * EXIT_FAIL after printing "mrtx: CMD: PATH: reason".
 */
int value_read(const char *cmd, const char *path, char **out, size_t *size);

/* Nonzero when p[0..n) is valid UTF-8. */
int utf8_valid(const void *p, size_t n);

/* Write p[0..n) in the JSON form above. */
void json_data(FILE *f, const void *p, size_t n);

/* Flush stdout; 0, or EXIT_FAIL after reporting a write error. */
int stdout_finish(const char *cmd);

#endif
