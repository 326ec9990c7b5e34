/*
 * fuzz_deep.c - the deep check of an LMDB store's file (check_file,
 * storage/lmdb/lmdb_deep*.c) on arbitrary bytes as data.mdb.
 *
 * Properties: the check never crashes, hangs or reads out of bounds, and
 * completes (a file of any bytes is damage to report, not an error); and
 * a file it finds sound is one the open's own check (lmdb_file.c) accepts.
 * The seed corpus holds small real stores.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recovery/check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One directory for every input, removed at exit. */
static char dir[4096], file[4096 + 16];

static void cleanup(void)
{
	unlink(file);
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	store_file_stats s;
	int fd, rc;

	if (!dir[0]) {
		const char *base = getenv("TMPDIR");

		snprintf(dir, sizeof(dir), "%s/mrtx-fuzz-deep-XXXXXX", base && *base ? base : "/tmp");
		if (!mkdtemp(dir))
			abort();
		snprintf(file, sizeof(file), "%s/data.mdb", dir);
		atexit(cleanup);
	}
	if ((fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0 ||
	    write(fd, data, size) != (ssize_t)size || close(fd) != 0)
		abort();
	rc = check_file(dir, NULL, NULL, NULL, &s);
	if (rc != MRTX_OK) {
		fprintf(stderr, "check_file: %d %s\n", rc, mrtx_errmsg());
		abort();
	}
	if (!s.damage && !s.opens) {
		fprintf(stderr, "sound to the deep check, refused by the open's\n");
		abort();
	}
	return 0;
}
