/*
 * replay.c - a main() for the fuzz targets in ordinary builds: runs
 * LLVMFuzzerTestOneInput on every file of the directories (or files) given,
 * so every corpus file - including each crash ever found, kept as
 * corpus/<target>/crash-* - is a regression test under ctest, with any
 * compiler and sanitizer.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		perror(path);
		return 1;
	}
	/* Exactly n bytes, so ASan catches a read past the input. */
	if (!(buf = malloc(n ? (size_t)n : 1)) || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		perror(path);
		return 1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long files = 0;
	int bad = 0;

	for (int i = 1; i < argc; i++) {
		struct stat sb;
		DIR *d;
		struct dirent *e;

		if (stat(argv[i], &sb) != 0) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(sb.st_mode)) {
			bad |= run_file(argv[i]);
			files++;
			continue;
		}
		if (!(d = opendir(argv[i]))) {
			perror(argv[i]);
			return 1;
		}
		while ((e = readdir(d))) {
			char p[4096];

			if (e->d_name[0] == '.')
				continue;
			snprintf(p, sizeof(p), "%s/%s", argv[i], e->d_name);
			bad |= run_file(p);
			files++;
		}
		closedir(d);
	}
	printf("replayed %lu inputs\n", files);
	return bad || files == 0;
}
