/*
 * fuzz_import.c - the TSV and CSV record readers of `mrtx import`
 * (tools/cli/importfmt.c) on arbitrary input; the first byte picks the
 * format.
 *
 * Properties: no crash or out-of-bounds access; 1, 0, -1 or -2 only; on -1
 * the message is NUL-terminated and names a line; every record has at
 * least one field, each inside the record's bytes; record lines never go
 * backwards; the reader frees cleanly.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli/importfmt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	import_reader r;
	unsigned long last = 0;
	char err[200];
	FILE *in;
	int rc;

	if (size == 0)
		return 0;
	if (size > 1) {
		in = fmemopen((void *)(data + 1), size - 1, "r");
	} else {
		static char none[1];

		/* (fmemopen wants a size above 0: read its one byte away) */
		if ((in = fmemopen(none, 1, "r")))
			fgetc(in);
	}
	if (!in)
		return 0;
	import_reader_init(&r, in, data[0] & 1 ? IMPORT_CSV : IMPORT_TSV);
	while ((rc = import_next(&r, err, sizeof(err))) == 1) {
		if (r.nf == 0 || r.rec_line < last || r.rec_line > r.line)
			abort();
		for (size_t i = 0; i < r.nf; i++)
			if (r.off[i] > r.len || r.flen[i] > r.len - r.off[i])
				abort();
		last = r.rec_line;
	}
	if (rc != 0 && rc != -1 && rc != -2)
		abort();
	if (rc == -1 && (!memchr(err, '\0', sizeof(err)) || strncmp(err, "line ", 5) != 0))
		abort();
	import_reader_free(&r);
	fclose(in);
	return 0;
}
