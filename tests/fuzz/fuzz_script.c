/*
 * fuzz_script.c - the line parser of `mrtx txn` and `mrtx shell` (tools/cli/script.c) on arbitrary
 * lines (not NUL-terminated, may hold NUL bytes).
 *
 * Properties: no crash or out-of-bounds access; 0, -1 or -2 only; on -1 the
 * message is NUL-terminated within errlen; on success every field is
 * consistent with the command (names NUL-terminated without inner NUL,
 * byte strings readable) and the command frees cleanly.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli/script.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile size_t sink;

static void touch(mrtx_bytes b)
{
	if (b.size && !b.data)
		abort();
	for (size_t i = 0; i < b.size; i++)
		sink += ((const uint8_t *)b.data)[i];
}

static void name_ok(const char *s)
{
	if (!s)
		abort();
	sink += strlen(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line = malloc(size ? size : 1), err[64];
	script_cmd cmd;
	int rc;

	if (!line)
		abort();
	if (size)
		memcpy(line, data, size); /* exactly size bytes: ASan sees overreads */
	memset(err, 'X', sizeof(err));
	rc = script_parse_line(line, size, &cmd, err, sizeof(err));
	if (rc == -1) {
		if (!memchr(err, '\0', sizeof(err)) || err[0] == '\0')
			abort(); /* an error must say something, NUL-terminated */
	} else if (rc == 0) {
		switch (cmd.op) {
		case SCRIPT_PUT:
		case SCRIPT_APPEND:
		case SCRIPT_CHECK_AND_PUT:
			touch(cmd.value);
			touch(cmd.expected);
			/* fall through */
		case SCRIPT_INCR:
		case SCRIPT_CHECK:
		case SCRIPT_DEL:
			name_ok(cmd.family);
			touch(cmd.qualifier);
			/* fall through */
		case SCRIPT_DELROW:
			name_ok(cmd.table);
			touch(cmd.row);
			break;
		case SCRIPT_GET:
			name_ok(cmd.table);
			touch(cmd.row);
			if (!cmd.whole_row) {
				name_ok(cmd.family);
				touch(cmd.qualifier);
			} else if (cmd.family) {
				abort(); /* a whole-row get names no column */
			}
			break;
		case SCRIPT_SCAN:
			name_ok(cmd.table);
			touch(cmd.start);
			touch(cmd.end);
			touch(cmd.prefix);
			if (cmd.scan_family)
				name_ok(cmd.scan_family);
			if (cmd.prefix.size && (cmd.start.size || cmd.end.size))
				abort(); /* --prefix replaces the bounds */
			break;
		case SCRIPT_NONE:
		case SCRIPT_ABORT:
			break;
		default:
			abort();
		}
		script_cmd_free(&cmd);
	} else if (rc != -2) {
		abort();
	}
	free(line);
	return 0;
}
