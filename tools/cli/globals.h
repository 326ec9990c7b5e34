/*
 * globals.h - the options of `mrtx` itself, before the subcommand:
 *
 *   mrtx [--map-size SIZE] [--read-only] [--two-phase] SUBCOMMAND STORE ...
 *
 * and their environment variables MRTX_MAP_SIZE, MRTX_READ_ONLY and
 * MRTX_TWO_PHASE (a flag wins over its variable).  They shape how tool_open (util.h) opens the
 * store, so every subcommand that opens a STORE honours them; chaos,
 * crashsim and bench make and write stores of their own: they refuse the
 * flags and ignore the variables.
 */
#ifndef MRTX_TOOL_GLOBALS_H
#define MRTX_TOOL_GLOBALS_H

#include <stddef.h>

#include "mrtx.h"

/*
 * Parse the global options at argv[1..]; *sub receives the index of the
 * subcommand (or of --help / --version, or argc when nothing follows).
 * Returns 0, or EXIT_USAGE after printing the error.
 */
int globals_parse(int argc, char **argv, int *sub);

/*
 * Settle the options for subcommand `cmd`: read the environment (a bad
 * value is a usage error) and hand the result to tool_open_options (util.h)
 * or, for a subcommand that opens no STORE (own_stores), refuse any flag.
 * Returns 0 or EXIT_USAGE (printed).
 */
int globals_for(const char *cmd, int own_stores);

/*
 * A size: decimal bytes, optionally followed by K, M, G or T (either
 * case; powers of 1024).  0 and values that overflow size_t are refused.
 * Returns 0, or -1.
 */
int globals_parse_size(const char *s, size_t *out);

#endif
