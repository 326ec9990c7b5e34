/*
 * crashrec.c - the crash recorder: a shared library loaded into a workload
 * (LD_PRELOAD, or linked before libc) that logs every write and sync of one
 * file, the store's data.mdb, to a trace (crashrec.h has the format), and
 * can make the N-th write or sync of that file fail (a failed sync, as the
 * kernel's write-back error, then fails the next sync through every other
 * descriptor of the file too).  `mrtx crashsim` builds the disk images a
 * power loss could leave from that trace.
 *
 * Interposed: open/open64/openat/openat64/creat (which descriptors are the
 * followed file, and which of them are O_DSYNC), close, write, pwrite,
 * pwrite64, writev, pwritev, pwritev64, fsync, fdatasync, msync,
 * ftruncate.  Everything else passes through.  Test-only: nothing in the
 * library or the tool depends on it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "crashrec.h"

#define MAXFD 4096
#define EXPORT __attribute__((visibility("default")))

/* fd_state[fd]: 0 not followed, else 1 | (2 if O_DSYNC) */
static unsigned char fd_state[MAXFD];
/* A failed sync is a write-back error, which Linux (4.13 on) reports once
 * to every descriptor of the file open when it happened: fd_wberr[fd] is
 * the errno its next sync returns (do_sync). */
static int fd_wberr[MAXFD];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int trace_fd = -1, inited;
static char follow[4096];

/* armed fault: kind 0 none, 1 sync, 2 write; fires on call number at */
static int fault_kind, fault_err;
static unsigned long fault_at, fault_calls;
static int fault_fired;

static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static ssize_t (*real_pwritev64)(int, const struct iovec *, int, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_msync)(void *, size_t, int);
static int (*real_ftruncate)(int, off_t);
static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real_close)(int);

#define RESOLVE(name) (real_##name = (__typeof__(real_##name))dlsym(RTLD_NEXT, #name))

static int fault_parse(const char *spec)
{
	char kind[16], what[16];
	unsigned long n;

	fault_kind = 0;
	if (!spec || !*spec)
		return 0;
	if (sscanf(spec, "%15[a-z]:%lu:%15s", kind, &n, what) != 3 || n == 0)
		return -1;
	if (strcmp(what, "EIO") == 0)
		fault_err = EIO;
	else if (strcmp(what, "ENOSPC") == 0)
		fault_err = ENOSPC;
	else if (strcmp(what, "EDQUOT") == 0)
		fault_err = EDQUOT;
	else if (strcmp(what, "short") == 0)
		fault_err = -1;
	else
		return -1;
	if (strcmp(kind, "sync") == 0 && fault_err != -1)
		fault_kind = 1;
	else if (strcmp(kind, "write") == 0)
		fault_kind = 2;
	else
		return -1;
	fault_at = n;
	fault_calls = 0;
	fault_fired = 0;
	return 0;
}

static void init(void)
{
	const char *f, *t;

	if (__atomic_load_n(&inited, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&mu);
	if (!inited) {
		RESOLVE(write); RESOLVE(pwrite); RESOLVE(pwrite64); RESOLVE(writev);
		RESOLVE(pwritev); RESOLVE(pwritev64); RESOLVE(fsync); RESOLVE(fdatasync);
		RESOLVE(msync); RESOLVE(ftruncate); RESOLVE(open); RESOLVE(open64);
		RESOLVE(openat); RESOLVE(openat64); RESOLVE(close);
		f = getenv("MRTX_CRASHREC_FILE");
		t = getenv("MRTX_CRASHREC_TRACE");
		if (f && t && strlen(f) < sizeof(follow)) {
			strcpy(follow, f);
			trace_fd = (int)syscall(SYS_openat, AT_FDCWD, t,
			                        O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
		}
		if (fault_parse(getenv("MRTX_CRASHREC_FAULT")))
			fprintf(stderr, "crashrec: bad MRTX_CRASHREC_FAULT ignored\n");
		__atomic_store_n(&inited, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&mu);
}

/* Append one record (a single writev: atomic among O_APPEND writers). */
static void emit(int type, int flags, uint64_t off, const struct iovec *iov, int iovcnt,
                 uint64_t len)
{
	struct iovec v[1 + 64];
	crashrec_hdr h;
	int n = 1;

	if (trace_fd < 0)
		return;
	memset(&h, 0, sizeof(h));
	h.magic = CR_MAGIC;
	h.type = (uint8_t)type;
	h.flags = (uint8_t)flags;
	h.pid = (uint32_t)getpid();
	h.off = off;
	h.len = len;
	v[0].iov_base = &h;
	v[0].iov_len = sizeof(h);
	for (int i = 0; i < iovcnt && len; i++) {
		size_t take = iov[i].iov_len < len ? iov[i].iov_len : (size_t)len;

		if (n == 65) { /* too many pieces for one record: stop recording */
			syscall(SYS_close, trace_fd);
			trace_fd = -1;
			return;
		}
		v[n].iov_base = iov[i].iov_base;
		v[n++].iov_len = take;
		len -= take;
	}
	syscall(SYS_writev, trace_fd, v, n);
}

/* Is this call the armed fault?  Counts calls of `kind` on followed fds. */
static int fault_hit(int kind)
{
	int hit = 0;

	pthread_mutex_lock(&mu);
	if (fault_kind == kind && ++fault_calls == fault_at) {
		hit = fault_err;
		fault_kind = 0;
		fault_fired = 1;
	}
	pthread_mutex_unlock(&mu);
	return hit;
}

static int followed(int fd)
{
	init();
	return fd >= 0 && fd < MAXFD && fd_state[fd];
}

/* Does the followed file exist (before an open that may create it)? */
static int follow_exists(void)
{
	struct stat b;

	return follow[0] && stat(follow, &b) == 0;
}

static void opened(int fd, int flags, int existed)
{
	struct stat a, b;

	if (fd < 0 || fd >= MAXFD || !follow[0])
		return;
	fd_state[fd] = 0;
	fd_wberr[fd] = 0;
	if (fstat(fd, &a) || stat(follow, &b) || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		return;
	fd_state[fd] = (unsigned char)(1 | ((flags & (O_DSYNC | O_SYNC)) ? 2 : 0));
	emit(CR_OPEN, !existed || (flags & O_TRUNC) ? CR_CREATED : 0, 0, NULL, 0, 0);
}

/* A write of iov at off on fd, through `call`; logs what was written. */
static ssize_t do_write(int fd, const struct iovec *iov, int iovcnt, off_t off, int positional,
                        ssize_t (*call)(int, const struct iovec *, int, off_t))
{
	struct iovec half[64];
	ssize_t r;
	int f;

	if (!followed(fd))
		return call(fd, iov, iovcnt, off);
	if (!positional)
		off = lseek(fd, 0, SEEK_CUR);
	if ((f = fault_hit(2)) > 0) {
		errno = f;
		return -1;
	}
	if (f < 0 && iovcnt <= 64) { /* a short write: about half the bytes */
		size_t total = 0, want;
		int n = 0;

		for (int i = 0; i < iovcnt; i++)
			total += iov[i].iov_len;
		want = total / 2;
		for (int i = 0; i < iovcnt && want; i++) {
			half[n] = iov[i];
			if (half[n].iov_len > want)
				half[n].iov_len = want;
			want -= half[n++].iov_len;
		}
		iov = half;
		iovcnt = n;
	}
	r = call(fd, iov, iovcnt, off);
	if (r > 0)
		emit(CR_WRITE, (fd_state[fd] & 2) ? CR_DSYNC : 0, (uint64_t)off, iov, iovcnt,
		     (uint64_t)r);
	return r;
}

static ssize_t call_pwritev(int fd, const struct iovec *iov, int n, off_t off)
{
	return real_pwritev(fd, iov, n, off);
}

static ssize_t call_writev(int fd, const struct iovec *iov, int n, off_t off)
{
	(void)off;
	return real_writev(fd, iov, n);
}

static int do_sync(int fd, int (*call)(int))
{
	int r, f;

	if (!followed(fd))
		return call(fd);
	pthread_mutex_lock(&mu);
	f = fd_wberr[fd];
	fd_wberr[fd] = 0;
	pthread_mutex_unlock(&mu);
	if (f) { /* (another descriptor's sync failed since this one's) */
		errno = f;
		return -1;
	}
	if ((f = fault_hit(1)) > 0) {
		pthread_mutex_lock(&mu);
		for (int i = 0; i < MAXFD; i++)
			if (fd_state[i] && i != fd)
				fd_wberr[i] = f;
		pthread_mutex_unlock(&mu);
		errno = f;
		return -1;
	}
	if ((r = call(fd)) == 0)
		emit(CR_SYNC, 0, 0, NULL, 0, 0);
	return r;
}

/* ------------------------------------------------------------ exported */

EXPORT int crashrec_mark(const char *s);
EXPORT int crashrec_fault(const char *spec);
EXPORT int crashrec_fault_fired(void);
EXPORT void crashrec_follow(const char *path);

int crashrec_fault_fired(void)
{
	int f;

	init();
	pthread_mutex_lock(&mu);
	f = fault_fired;
	pthread_mutex_unlock(&mu);
	return f;
}

void crashrec_follow(const char *path)
{
	init();
	pthread_mutex_lock(&mu);
	snprintf(follow, sizeof(follow), "%s", path ? path : "");
	pthread_mutex_unlock(&mu);
}

int crashrec_mark(const char *s)
{
	struct iovec v = { (void *)s, strlen(s) };

	init();
	if (trace_fd < 0)
		return -1;
	emit(CR_MARK, 0, 0, &v, 1, v.iov_len);
	return 0;
}

int crashrec_fault(const char *spec)
{
	int rc;

	init();
	pthread_mutex_lock(&mu);
	rc = fault_parse(spec);
	pthread_mutex_unlock(&mu);
	return rc;
}

/* --------------------------------------------------------- interposed */

EXPORT ssize_t write(int fd, const void *buf, size_t n);
EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off);
EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off);
EXPORT ssize_t writev(int fd, const struct iovec *iov, int n);
EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off);
EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int n, off_t off);
EXPORT int fsync(int fd);
EXPORT int fdatasync(int fd);
EXPORT int msync(void *addr, size_t len, int flags);
EXPORT int ftruncate(int fd, off_t len);
EXPORT int open(const char *path, int flags, ...);
EXPORT int open64(const char *path, int flags, ...);
EXPORT int openat(int dir, const char *path, int flags, ...);
EXPORT int openat64(int dir, const char *path, int flags, ...);
EXPORT int creat(const char *path, mode_t mode);
EXPORT int close(int fd);

ssize_t write(int fd, const void *buf, size_t n)
{
	struct iovec v = { (void *)buf, n };

	if (!followed(fd))
		return real_write(fd, buf, n);
	return do_write(fd, &v, 1, 0, 0, call_writev);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	struct iovec v = { (void *)buf, n };

	if (!followed(fd))
		return real_pwrite(fd, buf, n, off);
	return do_write(fd, &v, 1, off, 1, call_pwritev);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	struct iovec v = { (void *)buf, n };

	if (!followed(fd))
		return real_pwrite64(fd, buf, n, off);
	return do_write(fd, &v, 1, off, 1, call_pwritev);
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
	return do_write(fd, iov, n, 0, 0, call_writev);
}

ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off)
{
	init();
	return do_write(fd, iov, n, off, 1, call_pwritev);
}

ssize_t pwritev64(int fd, const struct iovec *iov, int n, off_t off)
{
	if (!followed(fd))
		return real_pwritev64(fd, iov, n, off);
	return do_write(fd, iov, n, off, 1, call_pwritev);
}

int fsync(int fd)
{
	init();
	return do_sync(fd, real_fsync);
}

int fdatasync(int fd)
{
	init();
	return do_sync(fd, real_fdatasync);
}

int msync(void *addr, size_t len, int flags)
{
	int r;

	init();
	r = real_msync(addr, len, flags);
	/* Which file a mapping belongs to is not tracked: an msync is logged
	 * (LMDB calls it only with MDB_WRITEMAP, which mrtx does not use) but
	 * the simulator does not treat it as a barrier. */
	if (r == 0 && (flags & MS_SYNC) && follow[0])
		emit(CR_SYNC, CR_MSYNC, 0, NULL, 0, 0);
	return r;
}

int ftruncate(int fd, off_t len)
{
	int r;

	init();
	r = real_ftruncate(fd, len);
	if (r == 0 && followed(fd))
		emit(CR_TRUNC, 0, (uint64_t)len, NULL, 0, 0);
	return r;
}

#define OPEN_BODY(callexpr)                                         \
	mode_t mode = 0;                                            \
	int fd, existed;                                            \
	init();                                                     \
	existed = follow_exists();                                  \
	if (flags & (O_CREAT | O_TMPFILE)) {                        \
		va_list ap;                                         \
		va_start(ap, flags);                                \
		mode = (mode_t)va_arg(ap, unsigned);                \
		va_end(ap);                                         \
	}                                                           \
	fd = callexpr;                                              \
	opened(fd, flags, existed);                                 \
	return fd;

int open(const char *path, int flags, ...)
{
	OPEN_BODY(real_open(path, flags, mode))
}

int open64(const char *path, int flags, ...)
{
	OPEN_BODY(real_open64(path, flags, mode))
}

int openat(int dir, const char *path, int flags, ...)
{
	OPEN_BODY(real_openat(dir, path, flags, mode))
}

int openat64(int dir, const char *path, int flags, ...)
{
	OPEN_BODY(real_openat64(dir, path, flags, mode))
}

int creat(const char *path, mode_t mode)
{
	int flags = O_CREAT | O_WRONLY | O_TRUNC, fd;

	init();
	fd = real_open(path, flags, mode);
	opened(fd, flags, 1);
	return fd;
}

int close(int fd)
{
	init();
	if (fd >= 0 && fd < MAXFD) {
		fd_state[fd] = 0;
		fd_wberr[fd] = 0;
	}
	return real_close(fd);
}
