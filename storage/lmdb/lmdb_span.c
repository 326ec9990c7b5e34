/*
 * lmdb_span.c - the registry of open environments' maps, and the check
 * that a record's bytes lie within the data file of their map
 * (lmdb_span.h, I27).
 *
 * The registry is a list under a mutex, changed at opens, closes and
 * remaps, each of which moves a generation by two (a remap makes it odd
 * while the map moves).  A thread's copy holds, per found map, its first
 * byte, the end of its reservation, the end of the file when the copy
 * was made, and the file's descriptor; a span is checked against the copy
 * while the generation stands.  A process with more maps than a copy
 * holds checks under the mutex.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "storage/common.h"
#include "storage/lmdb/lmdb_span.h"

#define COPY_MAX 32

static pthread_mutex_t span_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t span_once = PTHREAD_ONCE_INIT;
static lmdb_span_env *span_list;
static atomic_uint_fast64_t span_gen = 2; /* odd: a map moving */
/* The largest page of the environments registered so far (0: none yet) */
static atomic_uint span_psize;

typedef struct {
	uintptr_t lo, top, end; /* map, its reservation's end, the file's end */
	int fd;
} span_map;

static _Thread_local struct {
	uint_fast64_t gen; /* 0: never copied */
	unsigned n;
	int over; /* more maps than COPY_MAX */
	span_map m[COPY_MAX];
} copy;

/* (a child forked while another thread held the lock gets it free) */
static void fork_prepare(void)
{
	pthread_mutex_lock(&span_mu);
}

static void fork_after(void)
{
	pthread_mutex_unlock(&span_mu);
}

static void at_fork(void)
{
	(void)pthread_atfork(fork_prepare, fork_after, fork_after);
}

static uintptr_t os_page(void)
{
	long p = sysconf(_SC_PAGESIZE);

	return p > 0 ? (uintptr_t)p : 4096u;
}

/* Find e's map: the one mapping, from offset 0, of the environment's data
 * file, as long as the map (rounded up to the OS page), its inode's on the
 * device stat names or else, where that finds none, on any (a file system
 * that shows its mappings on another device).  Under span_mu, or before
 * e is listed. */
static void map_find(lmdb_span_env *e)
{
	MDB_envinfo info;
	mdb_filehandle_t fd;
	struct stat sb;
	uint64_t lo, hi, off, ino, want, pg = os_page();
	uintptr_t dev_lo = 0, dev_hi = 0, any_lo = 0, any_hi = 0;
	unsigned maj, min;
	char *line = NULL;
	size_t cap = 0;
	int on_dev = 0, on_any = 0;
	FILE *f;

	e->lo = e->top = 0;
	e->fd = -1;
	if (mdb_env_get_fd(e->env, &fd) != 0 || fstat(fd, &sb) != 0 ||
	    mdb_env_info(e->env, &info) != 0 || !(f = fopen("/proc/self/maps", "re")))
		return;
	e->fd = fd;
	want = ((uint64_t)info.me_mapsize + pg - 1) / pg * pg;
	while (getline(&line, &cap, f) > 0) {
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64 " %x:%x %" SCNu64, &lo, &hi,
		           &off, &maj, &min, &ino) != 6 ||
		    off != 0 || ino != (uint64_t)sb.st_ino || hi <= lo || hi - lo != want)
			continue;
		if (maj == major(sb.st_dev) && min == minor(sb.st_dev)) {
			on_dev++;
			dev_lo = (uintptr_t)lo;
			dev_hi = (uintptr_t)hi;
		}
		on_any++;
		any_lo = (uintptr_t)lo;
		any_hi = (uintptr_t)hi;
	}
	free(line);
	fclose(f);
	if (on_dev == 1) {
		e->lo = dev_lo;
		e->top = dev_hi;
	} else if (on_dev == 0 && on_any == 1) {
		e->lo = any_lo;
		e->top = any_hi;
	}
}

/* The end of m's file in its map: 0, or -1 (fstat failed: not judged). */
static int file_end(span_map *m)
{
	struct stat sb;
	uintptr_t pg = os_page(), len;

	if (fstat(m->fd, &sb) != 0 || sb.st_size < 0)
		return -1;
	len = ((uintptr_t)sb.st_size + pg - 1) / pg * pg;
	m->end = len < m->top - m->lo ? m->lo + len : m->top;
	return 0;
}

static int map_of(const lmdb_span_env *e, span_map *m)
{
	if (!e->lo)
		return -1;
	m->lo = e->lo;
	m->top = e->top;
	m->fd = e->fd;
	return file_end(m);
}

void lmdb_span_add(lmdb_span_env *e, MDB_env *env)
{
	MDB_stat ms;

	pthread_once(&span_once, at_fork);
	if (mdb_env_stat(env, &ms) == 0)
		for (unsigned was = atomic_load(&span_psize); ms.ms_psize > was &&
		     !atomic_compare_exchange_weak(&span_psize, &was, ms.ms_psize);)
			;
	pthread_mutex_lock(&span_mu);
	e->env = env;
	map_find(e);
	e->next = span_list;
	e->on = 1;
	span_list = e;
	atomic_fetch_add_explicit(&span_gen, 2, memory_order_release);
	pthread_mutex_unlock(&span_mu);
}

void lmdb_span_del(lmdb_span_env *e)
{
	pthread_mutex_lock(&span_mu);
	if (e->on) {
		for (lmdb_span_env **p = &span_list; *p; p = &(*p)->next)
			if (*p == e) {
				*p = e->next;
				break;
			}
		e->on = 0;
		atomic_fetch_add_explicit(&span_gen, 2, memory_order_release);
	}
	pthread_mutex_unlock(&span_mu);
}

int lmdb_span_set_mapsize(lmdb_span_env *e, MDB_env *env, size_t size)
{
	int rc;

	pthread_mutex_lock(&span_mu);
	atomic_fetch_add_explicit(&span_gen, 1, memory_order_seq_cst); /* odd */
	rc = mdb_env_set_mapsize(env, size);
	if (e->on)
		map_find(e);
	atomic_fetch_add_explicit(&span_gen, 1, memory_order_release); /* even */
	pthread_mutex_unlock(&span_mu);
	return rc;
}

unsigned lmdb_span_found(void)
{
	unsigned n = 0;

	pthread_mutex_lock(&span_mu);
	for (lmdb_span_env *e = span_list; e; e = e->next)
		n += e->lo != 0;
	pthread_mutex_unlock(&span_mu);
	return n;
}

/* The most a leaf node's key and inline value may hold together: under
 * half of the largest page registered (LMDB's node maximum, less its
 * header), half of 64 KiB before any is. */
static size_t node_max(void)
{
	unsigned ps = atomic_load_explicit(&span_psize, memory_order_relaxed);

	return (ps ? ps : 65536u) / 2;
}

/* 1 or 0 as lmdb_span_rec for one span, or -1: not in map m.  renew: m
 * is a copy, and a span past its end reads the file's length again (the
 * file may have grown since); else m's end was read just now. */
static int judge(span_map *m, uintptr_t a, size_t n, int renew)
{
	if (a < m->lo || a >= m->top)
		return -1;
	if (a < m->end && n <= m->end - a)
		return 1;
	if (!renew)
		return 0;
	if (file_end(m) != 0)
		return 1; /* (the length unknown: not judged) */
	return a < m->end && n <= m->end - a;
}

static int ok_locked(uintptr_t a, size_t n)
{
	int r = 1;

	pthread_mutex_lock(&span_mu);
	for (lmdb_span_env *e = span_list; e; e = e->next) {
		span_map m;

		if (a >= e->lo && a < e->top && map_of(e, &m) == 0) {
			r = judge(&m, a, n, 0) != 0;
			break;
		}
	}
	pthread_mutex_unlock(&span_mu);
	return r;
}

static void copy_renew(uint_fast64_t gen)
{
	unsigned n = 0;

	pthread_once(&span_once, at_fork);
	pthread_mutex_lock(&span_mu);
	copy.over = 0;
	for (lmdb_span_env *e = span_list; e; e = e->next) {
		if (n == COPY_MAX) {
			copy.over = 1;
			break;
		}
		if (map_of(e, &copy.m[n]) == 0)
			n++;
	}
	copy.n = n;
	/* (gen was read before the mutex: a change since moved it on, and
	 * the next check copies again) */
	copy.gen = gen;
	pthread_mutex_unlock(&span_mu);
}

/*
 * 1 when the n bytes from a lie in the OS page that holds the byte before
 * a.  LMDB hands a key back as the bytes after its node's header, whose
 * last two bytes (the key's size) it has just read: that byte was read,
 * so its page is mapped and within the file, and every byte of the page
 * can be read.  (SPAN_PAGE: the smallest OS page Linux has; a larger real
 * one only holds more.)  Needs no registry, whatever memory holds the
 * node: the map, or a write transaction's copy of a page.
 */
#define SPAN_PAGE ((uintptr_t)4096)

static inline int within_read_page(uintptr_t a, size_t n)
{
	return n > 0 && a % SPAN_PAGE != 0 && (a - 1) / SPAN_PAGE == (a + n - 1) / SPAN_PAGE;
}

int lmdb_span_rec(const MDB_val *k, const MDB_val *v)
{
	uintptr_t ka = (uintptr_t)k->mv_data, va = (uintptr_t)v->mv_data;
	uint_fast64_t gen;
	int kr = -1, vr = -1;

	/* A value that follows its key is stored in its leaf (LMDB's
	 * inline node), which LMDB keeps to under half a page: larger is a
	 * damaged size, in the map or in a write transaction's copy. */
	if (va == ka + k->mv_size) {
		size_t n = k->mv_size + v->mv_size;

		if (n > node_max())
			return 0;
		if (within_read_page(ka, n))
			return 1;
	}
	/* (the registry's generation is read only by a span the page test
	 * did not pass) */
	gen = atomic_load_explicit(&span_gen, memory_order_acquire);
	if (MRTX_UNLIKELY(gen & 1))
		return 1; /* a map moving: not judged */
	if (MRTX_UNLIKELY(copy.gen != gen))
		copy_renew(gen);
	if (MRTX_UNLIKELY(copy.over))
		return ok_locked(ka, k->mv_size) && ok_locked(va, v->mv_size);
	for (unsigned i = 0; i < copy.n; i++) {
		span_map *m = &copy.m[i];

		/* (the common case: both inside the file of one map) */
		if (ka - m->lo < m->end - m->lo && k->mv_size <= m->end - ka &&
		    va - m->lo < m->end - m->lo && v->mv_size <= m->end - va)
			return 1;
		if (kr < 0)
			kr = judge(m, ka, k->mv_size, 1);
		if (vr < 0)
			vr = judge(m, va, v->mv_size, 1);
	}
	return kr != 0 && vr != 0;
}
