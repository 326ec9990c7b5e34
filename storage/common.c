/*
 * common.c - error detail, allocator, arena, buffers, clocks.
 */
#include "common.h"
#include "sim_hooks.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bsd/stdlib.h>

/* ---------------------------------------------------------------- errors */

static _Thread_local char errbuf[512];

int mrtx__seterr(int rc, const char *fmt, ...)
{
	char tmp[sizeof(errbuf)];
	va_list ap;

	/* Format aside first: callers often wrap the previous detail
	 * (mrtx_errmsg()) in the new one, and errbuf may not be both. */
	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	memcpy(errbuf, tmp, sizeof(errbuf));
	return rc;
}

void mrtx__clearerr(void)
{
	errbuf[0] = '\0';
}

const char *mrtx_errmsg(void)
{
	return errbuf;
}

const char *mrtx_strerror(int rc)
{
	switch (rc) {
	case MRTX_OK: return "success";
	case MRTX_NOTFOUND: return "not found";
	case MRTX_CONFLICT: return "conflict: a concurrent transaction won, nothing was written";
	case MRTX_ELOCKED: return "row locked by a live transaction";
	case MRTX_EUNKNOWN: return "commit outcome unknown (store failed at the commit point)";
	case MRTX_EINVAL: return "invalid argument";
	case MRTX_ETOOBIG: return "key or value too big";
	case MRTX_ENOTABLE: return "no such table";
	case MRTX_ECORRUPT: return "corrupt record";
	case MRTX_ENOMEM: return "out of memory";
	case MRTX_ESTORE: return "store error";
	case MRTX_ENOFAMILY: return "no such family";
	case MRTX_ENOTSTORE: return "not an mrtx store";
	case MRTX_EFULL: return "store full";
	case MRTX_EBADTXN: return "transaction already failed";
	case MRTX_EEXIST: return "exists with another definition, or not empty";
	case MRTX_EREADONLY: return "store opened read-only";
	case MRTX_ENOTSUP: return "not supported by this store's backend";
	case MRTX_ESNAPSHOT: return "the versions this snapshot needs were collected";
	default: return "unknown error code";
	}
}

/* ------------------------------------------------------------ allocation */

static atomic_ulong alloc_count;
static atomic_ulong alloc_fail_at; /* absolute count at which to fail; 0 never */
/* Counting starts with the first mrtx__alloc_fail_at call (tests): until
 * then an allocation costs no shared read-modify-write. */
static atomic_int alloc_hooked;

static int alloc_should_fail(void)
{
	unsigned long n, at;

	if (!MRTX_UNLIKELY(atomic_load_explicit(&alloc_hooked, memory_order_relaxed)))
		return 0;
	n = atomic_fetch_add(&alloc_count, 1) + 1;
	at = atomic_load_explicit(&alloc_fail_at, memory_order_relaxed);
	return at != 0 && n == at;
}

unsigned long mrtx__alloc_fail_at(unsigned long n)
{
	unsigned long before = atomic_exchange(&alloc_count, 0);

	atomic_store(&alloc_hooked, 1);
	atomic_store(&alloc_fail_at, n);
	return before;
}

int mrtx__alloc_counting(void)
{
	return atomic_load_explicit(&alloc_hooked, memory_order_relaxed);
}

void *mrtx__malloc(size_t n)
{
	if (alloc_should_fail())
		return NULL;
	return malloc(n ? n : 1);
}

void *mrtx__calloc(size_t n, size_t size)
{
	if (alloc_should_fail())
		return NULL;
	return calloc(n ? n : 1, size ? size : 1);
}

void *mrtx__realloc(void *p, size_t n)
{
	if (alloc_should_fail())
		return NULL;
	return realloc(p, n ? n : 1);
}

void *mrtx__reallocarray(void *p, size_t n, size_t size)
{
	if (alloc_should_fail())
		return NULL;
	if (n == 0 || size == 0)
		n = size = 1;
	return reallocarray(p, n, size);
}

void mrtx__free(void *p)
{
	free(p);
}

char *mrtx__strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = mrtx__malloc(n);

	if (d)
		memcpy(d, s, n);
	return d;
}

/* ----------------------------------------------------------------- arena */

#define ARENA_FIRST 4096u

atomic_int mrtx__arena_exact_on; /* test hook: one chunk per allocation */

void mrtx__arena_exact(int on)
{
	atomic_store(&mrtx__arena_exact_on, on);
}

void arena_init(mrtx_arena *a)
{
	memset(a, 0, sizeof(*a));
}

void arena_init_buf(mrtx_arena *a, void *buf, size_t size)
{
	mrtx_arena_chunk *c = buf;

	memset(a, 0, sizeof(*a));
	if (size <= sizeof(*c))
		return;
	c->next = NULL;
	c->cap = size - sizeof(*c);
	a->head = a->borrowed = c;
	a->cap = c->cap;
	a->total = c->cap;
}

void arena_free(mrtx_arena *a)
{
	mrtx_arena_chunk *c = a->head, *next;

	for (; c; c = next) {
		next = c->next;
		if (c != a->borrowed)
			mrtx__free(c);
	}
	memset(a, 0, sizeof(*a));
}

void *arena_alloc_slow(mrtx_arena *a, size_t n)
{
	size_t need = (n + 7u) & ~(size_t)7u;
	mrtx_arena_chunk *c;
	size_t cap;

	if (need < n) {
		mrtx__seterr(MRTX_ENOMEM, "arena: size overflow");
		return NULL;
	}
	if (a->head && a->cap - a->used >= need && !MRTX_UNLIKELY(mrtx__arena_exact_on)) {
		void *p = a->head->mem + a->used;

		a->used += need;
		return p;
	}
	/* Chunks double up to 1 MiB; a big request gets a chunk of its own. */
	cap = a->head ? MRTX_MIN(a->cap * 2, (size_t)1 << 20) : ARENA_FIRST;
	if (mrtx__arena_exact_on)
		cap = need;
	if (cap < need)
		cap = need;
	if (cap > SIZE_MAX - sizeof(*c) ||
	    !(c = mrtx__malloc(sizeof(*c) + cap))) {
		mrtx__seterr(MRTX_ENOMEM, "out of memory (arena chunk of %zu bytes)", cap);
		return NULL;
	}
	c->cap = cap;
	if (a->head && need > a->cap - a->used && cap == need && a->used < a->cap / 2) {
		/* Keep filling the current chunk: put the big one behind it. */
		c->next = a->head->next;
		a->head->next = c;
		a->total += cap;
		return c->mem;
	}
	c->next = a->head;
	a->head = c;
	a->cap = cap;
	a->used = need;
	a->total += cap;
	return c->mem;
}

/* ---------------------------------------------------------------- buffer */

int buf_reserve(mrtx_buf *b, size_t more)
{
	size_t want, cap;
	uint8_t *d;

	if (more > SIZE_MAX - b->size)
		return mrtx__seterr(MRTX_ENOMEM, "buffer size overflow");
	want = b->size + more;
	if (want <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < want)
		cap = cap > SIZE_MAX / 2 ? want : cap * 2;
	if (!(d = mrtx__realloc(b->data, cap)))
		return mrtx__seterr(MRTX_ENOMEM, "out of memory (buffer of %zu bytes)", cap);
	b->data = d;
	b->cap = cap;
	return 0;
}

int buf_put(mrtx_buf *b, const void *p, size_t n)
{
	int rc = buf_reserve(b, n);

	if (rc)
		return rc;
	if (n)
		memcpy(b->data + b->size, p, n);
	b->size += n;
	return 0;
}

void buf_free(mrtx_buf *b)
{
	mrtx__free(b->data);
	b->data = NULL;
	b->size = b->cap = 0;
}

/* ---------------------------------------------------------------- clocks */

/* Test hooks (common.h): a frozen wall clock, and a step added to it. */
_Atomic unsigned long long mrtx__clock_frozen_us;
_Atomic long long mrtx__clock_step_us;

/* The simulator's seam (sim_hooks.h). */
_Atomic(const mrtx__sim_hooks *) mrtx__sim;

int mrtx__sim_random(void *out, size_t n)
{
	const mrtx__sim_hooks *h = mrtx__sim_on();

	if (MRTX_LIKELY(!h))
		return 0;
	h->random_bytes(out, n);
	return 1;
}

uint64_t mrtx__now_us(void)
{
	unsigned long long f = atomic_load_explicit(&mrtx__clock_frozen_us, memory_order_relaxed);
	long long step = atomic_load_explicit(&mrtx__clock_step_us, memory_order_relaxed);
	const mrtx__sim_hooks *h = mrtx__sim_on();
	uint64_t t = f;

	if (MRTX_UNLIKELY(h) && !f)
		t = h->now_us();
	else if (!f) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		t = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
	}
	return step >= 0 || (uint64_t)-step < t ? t + (uint64_t)step : 1;
}

uint64_t mrtx__now_ms(void)
{
	return mrtx__now_us() / 1000u;
}

uint64_t mrtx__mono_us(void)
{
	const mrtx__sim_hooks *h = mrtx__sim_on();
	struct timespec ts;

	if (MRTX_UNLIKELY(h))
		return h->mono_us();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

struct timespec mrtx__mono_timespec(uint64_t us)
{
	struct timespec ts = { (time_t)(us / 1000000u), (long)(us % 1000000u) * 1000 };

	return ts;
}

void mrtx__sleep_us(uint64_t us)
{
	struct timespec ts = mrtx__mono_timespec(us); /* (a duration: the same conversion) */

	const mrtx__sim_hooks *h = mrtx__sim_on();

	if (MRTX_UNLIKELY(h)) {
		h->sleep_us(us);
		return;
	}
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

uint32_t mrtx__rand_below(uint32_t n)
{
	const mrtx__sim_hooks *h = mrtx__sim_on();

	if (MRTX_UNLIKELY(h))
		return n ? h->rand_below(n) : 0;
	return n ? arc4random_uniform(n) : 0;
}

/* ------------------------------------------------- small system files */

/* Read up to cap bytes of a small file; length, or -errno. */
ssize_t mrtx__read_small(const char *path, char *buf, size_t cap)
{
	size_t n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int err = 0;

	if (fd < 0)
		return -errno;
	while (n < cap) {
		ssize_t k = read(fd, buf + n, cap - n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			err = errno;
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	close(fd);
	return err ? -err : (ssize_t)n;
}

int mrtx__proc_stat(long pid, char *state, uint64_t *start)
{
	char path[64], buf[4096], *p, *end;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if ((n = mrtx__read_small(path, buf, sizeof(buf) - 1)) < 0)
		return (int)n;
	buf[n] = '\0';
	if (!(p = strrchr(buf, ')')) || p[1] != ' ' || !p[2])
		return -EINVAL;
	p += 2;
	*state = *p;
	for (int field = 3; field < 22; field++) {
		if (!(p = strchr(p, ' ')))
			return -EINVAL;
		p++;
	}
	if (*p < '0' || *p > '9')
		return -EINVAL;
	errno = 0;
	*start = strtoull(p, &end, 10);
	return errno || (*end != ' ' && *end != '\n' && *end) ? -EINVAL : 0;
}

/* This boot's id (uuid text to 16 bytes); all zeros when unknown. */
void mrtx__boot_id(uint8_t out[16])
{
	char buf[64];
	uint8_t id[16] = { 0 };
	ssize_t n = mrtx__read_small("/proc/sys/kernel/random/boot_id", buf, sizeof(buf));
	size_t nib = 0;

	memset(out, 0, 16);
	for (ssize_t i = 0; i < n && buf[i] != '\n'; i++) {
		int v = mrtx__hexval(buf[i]);

		if (buf[i] == '-')
			continue;
		if (v < 0 || nib >= 32)
			return;
		id[nib / 2] |= (uint8_t)(nib % 2 ? v : v << 4);
		nib++;
	}
	if (nib == 32)
		memcpy(out, id, 16);
}
