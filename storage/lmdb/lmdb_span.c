/*
 * lmdb_span.c - the registry of open environments' maps, and the check
 * that a record's bytes lie within the written pages of its map
 * (lmdb_span.h, I27).
 *
 * The registry is a list under a mutex, changed at opens, closes and
 * remaps, each of which moves a generation.  A thread's copy holds, per
 * found map, its first byte, the end of its reservation and the end of
 * the pages written when the copy was made; a span is checked against
 * the copy while the generation stands.  A process with more maps than a
 * copy holds checks under the mutex.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "storage/common.h"
#include "storage/lmdb/lmdb_span.h"

#define COPY_MAX 8

static pthread_mutex_t span_mu = PTHREAD_MUTEX_INITIALIZER;
static lmdb_span_env *span_list;
static atomic_uint_fast64_t span_gen = 1;

typedef struct {
	uintptr_t lo, top, end; /* map, its reservation's end, written pages' end */
	MDB_env *env;
} span_map;

static _Thread_local struct {
	uint_fast64_t gen; /* 0: never copied */
	unsigned n;
	int over; /* more maps than COPY_MAX */
	span_map m[COPY_MAX];
} copy;

/* Find e's map: the one mapping, from offset 0, of the environment's
 * data file, as long as the map.  Under span_mu, or before e is listed. */
static void map_find(lmdb_span_env *e)
{
	MDB_envinfo info;
	mdb_filehandle_t fd;
	struct stat sb;
	unsigned long lo, hi, off, ino;
	unsigned maj, min;
	char *line = NULL;
	size_t cap = 0;
	int found = 0;
	FILE *f;

	e->lo = e->top = 0;
	if (mdb_env_get_fd(e->env, &fd) != 0 || fstat(fd, &sb) != 0 ||
	    mdb_env_info(e->env, &info) != 0 || !(f = fopen("/proc/self/maps", "re")))
		return;
	while (getline(&line, &cap, f) > 0) {
		if (sscanf(line, "%lx-%lx %*s %lx %x:%x %lu", &lo, &hi, &off, &maj, &min, &ino) != 6)
			continue;
		if (off == 0 && ino == (unsigned long)sb.st_ino && maj == major(sb.st_dev) &&
		    min == minor(sb.st_dev) && hi > lo && hi - lo == info.me_mapsize) {
			found++;
			e->lo = lo;
			e->top = hi;
		}
	}
	free(line);
	fclose(f);
	if (found != 1)
		e->lo = e->top = 0;
}

/* e's map with the end of the pages written now: 0, or -1 (not found, or
 * LMDB cannot tell: the span is then not judged). */
static int map_of(const lmdb_span_env *e, span_map *m)
{
	MDB_envinfo info;
	MDB_stat st;

	if (!e->lo || mdb_env_info(e->env, &info) != 0 || mdb_env_stat(e->env, &st) != 0)
		return -1;
	m->env = e->env;
	m->lo = e->lo;
	m->top = e->top;
	m->end = m->lo + ((uintptr_t)info.me_last_pgno + 1) * st.ms_psize;
	if (m->end > m->top || m->end < m->lo)
		m->end = m->top;
	return 0;
}

void lmdb_span_add(lmdb_span_env *e, MDB_env *env)
{
	pthread_mutex_lock(&span_mu);
	e->env = env;
	map_find(e);
	e->next = span_list;
	e->on = 1;
	span_list = e;
	atomic_fetch_add_explicit(&span_gen, 1, memory_order_release);
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
		atomic_fetch_add_explicit(&span_gen, 1, memory_order_release);
	}
	pthread_mutex_unlock(&span_mu);
}

void lmdb_span_moved(lmdb_span_env *e)
{
	pthread_mutex_lock(&span_mu);
	if (e->on) {
		map_find(e);
		atomic_fetch_add_explicit(&span_gen, 1, memory_order_release);
	}
	pthread_mutex_unlock(&span_mu);
}

/* 1 or 0 as lmdb_span_rec for one span, or -1: not in map m.  renew: m is a copy,
 * and a span past its end re-reads the end (the file may have grown
 * since); else m's end was read just now. */
static int judge(span_map *m, uintptr_t a, size_t n, int renew)
{
	MDB_envinfo info;
	MDB_stat st;

	if (a < m->lo || a >= m->top)
		return -1;
	if (a < m->end && n <= m->end - a)
		return 1;
	if (!renew)
		return 0;
	if (mdb_env_info(m->env, &info) != 0 || mdb_env_stat(m->env, &st) != 0)
		return 1; /* (LMDB cannot tell: not judged) */
	m->end = m->lo + ((uintptr_t)info.me_last_pgno + 1) * st.ms_psize;
	if (m->end > m->top || m->end < m->lo)
		m->end = m->top;
	return a < m->end && n <= m->end - a;
}

static int ok_locked(uintptr_t a, size_t n)
{
	int r = 1;

	pthread_mutex_lock(&span_mu);
	for (lmdb_span_env *e = span_list; e; e = e->next) {
		span_map m;

		if (map_of(e, &m) == 0 && (r = judge(&m, a, n, 0)) >= 0)
			break;
		r = 1;
	}
	pthread_mutex_unlock(&span_mu);
	return r;
}

static void copy_renew(uint_fast64_t gen)
{
	unsigned n = 0;

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

int lmdb_span_rec(const MDB_val *k, const MDB_val *v)
{
	uint_fast64_t gen = atomic_load_explicit(&span_gen, memory_order_acquire);
	uintptr_t ka = (uintptr_t)k->mv_data, va = (uintptr_t)v->mv_data;
	int kr = -1, vr = -1;

	if (MRTX_UNLIKELY(copy.gen != gen))
		copy_renew(gen);
	if (MRTX_UNLIKELY(copy.over))
		return ok_locked(ka, k->mv_size) && ok_locked(va, v->mv_size);
	for (unsigned i = 0; i < copy.n; i++) {
		span_map *m = &copy.m[i];

		/* (the common case: both inside the written pages of one map) */
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
