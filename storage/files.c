/*
 * files.c - the few file-system steps the library takes outside a store's
 * own engine (a backup's staging directory and its copy), with errors
 * mapped to mrtx codes the same way everywhere.  See common.h.
 */
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int mrtx__path_join(char *out, size_t size, const char *dir, const char *name,
                    const char *who)
{
	int n = snprintf(out, size, "%s/%s", dir, name);

	if (n < 0 || (size_t)n >= size)
		return mrtx__seterr(MRTX_EINVAL, "%s: path %s/%s is too long", who, dir, name);
	return 0;
}

int mrtx__sys_err(const char *who, const char *what, const char *path, int err)
{
	int rc = err == ENOSPC || err == EDQUOT ? MRTX_EFULL :
	         err == ENOMEM ? MRTX_ENOMEM : MRTX_ESTORE;

	return mrtx__seterr(rc, "%s: %s %s: %s", who, what, path, strerror(err));
}

int mrtx__sync_dir(const char *dir, const char *who)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return mrtx__sys_err(who, "open directory", dir, errno);
	if (fsync(fd) != 0 && errno != EINVAL) /* EINVAL: not supported there */
		rc = mrtx__sys_err(who, "sync directory", dir, errno);
	close(fd);
	return rc;
}
