/*
 * cmd_sim.c - `mrtx sim`: run the deterministic simulator, mrtx-sim
 * (tools/sim/), a program of its own because it links the library against
 * a simulated RADOS cluster instead of librados.  It is looked for beside
 * this program first (a build tree, or the same bin directory once
 * installed), then on PATH.
 */
#include "cmds.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cmd_sim(int argc, char **argv)
{
	char self[PATH_MAX], path[PATH_MAX + 16];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	argv[0] = "mrtx-sim";
	if (n > 0) {
		char *slash;

		self[n] = '\0';
		if ((slash = strrchr(self, '/'))) {
			*slash = '\0';
			snprintf(path, sizeof(path), "%s/mrtx-sim", self);
			if (access(path, X_OK) == 0)
				execv(path, argv);
		}
	}
	execvp("mrtx-sim", argv);
	fprintf(stderr, "mrtx sim: cannot run mrtx-sim (%s): it is built with the RADOS "
	        "backend (librados-dev installed) and installed beside mrtx\n", strerror(errno));
	(void)argc;
	return 1;
}
