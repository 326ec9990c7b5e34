/*
 * common.h - helpers every layer uses: error recording, the one swappable
 * allocator, a per-transaction arena, clocks, and failpoints.
 *
 * Lives in storage/ because storage is the bottom layer; nothing here knows
 * about LMDB, locks or transactions.
 */
#ifndef MRTX_COMMON_H
#define MRTX_COMMON_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <sys/types.h>

#include "mrtx.h"

#if defined(__GNUC__)
#define MRTX_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define MRTX_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define MRTX_LIKELY(x) __builtin_expect(!!(x), 1)
#else
#define MRTX_LIKELY(x) (x)
#define MRTX_PRINTF(a, b)
#define MRTX_UNLIKELY(x) (x)
#endif

/* Record this thread's error detail and return rc (so `return seterr(...)`). */
int mrtx__seterr(int rc, const char *fmt, ...) MRTX_PRINTF(2, 3);
/* Clear the detail (start of a public call that may succeed). */
void mrtx__clearerr(void);
/* Is rc one of the MRTX_* codes (include/mrtx.h), not an LMDB or errno one? */
static inline int mrtx__is_code(int rc)
{
	return rc >= MRTX_NOTFOUND && rc <= MRTX_ESNAPSHOT;
}

/* ---- files (files.c); who prefixes the messages ---- */
/* dir/name into out[size]; MRTX_EINVAL if it does not fit. */
int mrtx__path_join(char *out, size_t size, const char *dir, const char *name,
                    const char *who);
/* errno err of step `what` on path: MRTX_EFULL (ENOSPC, EDQUOT),
 * MRTX_ENOMEM or MRTX_ESTORE, with the detail set. */
int mrtx__sys_err(const char *who, const char *what, const char *path, int err);
/* fsync a directory, so a rename or a new file in it is durable. */
int mrtx__sync_dir(const char *dir, const char *who);

/* ---- allocation: every allocation of the library goes through these ---- */
void *mrtx__malloc(size_t n);
void *mrtx__calloc(size_t n, size_t size);
void *mrtx__realloc(void *p, size_t n);
void *mrtx__reallocarray(void *p, size_t n, size_t size);
void mrtx__free(void *p);
char *mrtx__strdup(const char *s);
/* Test hook: make the n-th allocation from now fail (0 = never); returns
 * the number of allocations made since the last call (allocations are
 * counted only once this has been called: production pays nothing). */
unsigned long mrtx__alloc_fail_at(unsigned long n);
/* Is that hook counting?  Then caches that would skip an allocation step
 * aside, so every allocation site stays reachable by the hook. */
int mrtx__alloc_counting(void);

/* ---- arena: bump allocator freed as a whole ---- */
typedef struct mrtx_arena_chunk mrtx_arena_chunk;
struct mrtx_arena_chunk {
	mrtx_arena_chunk *next;
	size_t cap;
	_Alignas(16) uint8_t mem[];
};
typedef struct mrtx_arena {
	mrtx_arena_chunk *head;
	mrtx_arena_chunk *borrowed; /* caller's first chunk: never freed */
	size_t used;   /* bytes used in head */
	size_t cap;    /* capacity of head */
	size_t total;  /* bytes of every chunk, for accounting */
} mrtx_arena;

void arena_init(mrtx_arena *a);
void arena_free(mrtx_arena *a);
/* Start with the caller's buffer (16-aligned, outliving the arena) as the
 * first chunk: small arenas then never call the allocator. */
void arena_init_buf(mrtx_arena *a, void *buf, size_t size);
/* Test hook: nonzero makes every arena_alloc take a chunk of its own from
 * mrtx__malloc, so mrtx__alloc_fail_at reaches every arena allocation site. */
void mrtx__arena_exact(int on);
extern atomic_int mrtx__arena_exact_on;
/* arena_alloc's path that takes a new chunk. */
void *arena_alloc_slow(mrtx_arena *a, size_t n);

/* 8-aligned; NULL on allocation failure (error recorded).  The common case
 * (room in the current chunk) is inline: reads allocate several times each. */
static inline void *arena_alloc(mrtx_arena *a, size_t n)
{
	size_t need = (n + 7u) & ~(size_t)7u;

	if (a->head && need >= n && a->cap - a->used >= need &&
	    !MRTX_UNLIKELY(atomic_load_explicit(&mrtx__arena_exact_on, memory_order_relaxed))) {
		void *p = a->head->mem + a->used;

		a->used += need;
		return p;
	}
	return arena_alloc_slow(a, n);
}

/* Copy n bytes (n may be 0: returns a valid non-NULL pointer). */
static inline void *arena_dup(mrtx_arena *a, const void *p, size_t n)
{
	void *d = arena_alloc(a, n ? n : 1);

	if (d && n)
		memcpy(d, p, n);
	return d;
}

/* ---- growable byte buffer (malloc-backed) ---- */
typedef struct mrtx_buf {
	uint8_t *data;
	size_t size, cap;
} mrtx_buf;

#define MRTX_BUF_INIT { NULL, 0, 0 }
int buf_reserve(mrtx_buf *b, size_t more);
int buf_put(mrtx_buf *b, const void *p, size_t n);
void buf_free(mrtx_buf *b);

/* ---- clocks ---- */
uint64_t mrtx__now_us(void);   /* wall clock, microseconds */
/* Test hooks of the wall clock (never the monotonic one): while
 * mrtx__clock_frozen_us is nonzero mrtx__now_us returns it; the step is
 * added (negative: the clock stepped back).  The wall clock seeds the
 * stores' timestamp sources and measures durations; no order is decided
 * by it (DESIGN §9.1), which the tests check with these. */
extern _Atomic unsigned long long mrtx__clock_frozen_us;
extern _Atomic long long mrtx__clock_step_us;
uint64_t mrtx__now_ms(void);   /* wall clock, milliseconds */
uint64_t mrtx__mono_us(void);  /* monotonic */
/* mrtx__mono_us time us as a timespec (a CLOCK_MONOTONIC deadline) */
struct timespec mrtx__mono_timespec(uint64_t us);
void mrtx__sleep_us(uint64_t us);
/* uniformly random in [0, n) (not for secrets) */
uint32_t mrtx__rand_below(uint32_t n);
/* The value of one hex digit (either case), or -1. */
static inline int mrtx__hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}
/* Read up to cap bytes of a small file (/proc); length, or -errno. */
ssize_t mrtx__read_small(const char *path, char *buf, size_t cap);
/* Process pid's state (field 3 of /proc/PID/stat) and start time (field
 * 22, clock ticks since boot): 0, or a negative errno (-ENOENT: no such
 * process; -EINVAL: a line that does not parse). */
int mrtx__proc_stat(long pid, char *state, uint64_t *start);
/* This boot's id (/proc/sys/kernel/random/boot_id, 16 bytes); all zeros
 * when unknown. */
void mrtx__boot_id(uint8_t out[16]);

/* ---- failpoints (DESIGN §7) ---- */
typedef enum {
	FP_COMMIT_AFTER_PREWRITE,
	FP_COMMIT_AFTER_VALIDATE,
	FP_COMMIT_AFTER_POINT,
	FP_COMMIT_AFTER_SECONDARIES,
	FP_STORE_AFTER_ROW_WRITE,
	FP_RECOVER_AFTER_ABORT,
	FP_RECOVER_AFTER_FORWARD,
	FP_SPLIT_AFTER_FREEZE, /* RADOS: a tablet split's steps (rados_split.c) */
	FP_SPLIT_AFTER_COPY,
	FP_SPLIT_AFTER_PUBLISH,
	FP_UPGRADE_AFTER_BATCH, /* mrtx upgrade: after each batch it converted */
	FP_STORE_AFTER_STAMP,   /* RADOS: a commit point stamped, not yet sent */
	FP_SNAP_AFTER_RESERVE,  /* RADOS: a snapshot's timestamp reserved, its
	                           first read not yet sent */
	FP_TS_BEFORE_ENTER,     /* RADOS: a batch with snapshots reserved, not
	                           yet entered in their handles' sets */
	FP_DDL_AFTER_CLOSE,     /* RADOS: a drop or truncate closed every tablet,
	                           the record not yet switched (rados_ddl.c) */
	FP_DDL_AFTER_SWITCH,    /* RADOS: ... switched, the old tablets not yet
	                           cleared */
	FP_INDEX_AFTER_RETIRE,  /* mrtx_drop_index: the declaration removed, the
	                           index table not yet dropped */
	FP_INDEX_BEFORE_DECLARE, /* mrtx_create_index: the tables' roles checked,
	                           the declaration not yet written */
	FP_DDL_AFTER_CLEAR,     /* mrtx_drop_table: the table gone, the records
	                           of index drops naming it not yet removed */
	FP_SCAN_AFTER_PAGE,     /* RADOS: a scan read a page of locks and cells
	                           that cut rows; they are not yet read again */
	FP__COUNT
} mrtx_fp;

extern atomic_int mrtx__fp_armed; /* any failpoint armed: the one branch */
int mrtx__fp_fire(mrtx_fp fp);      /* slow path; returns 0 or MRTX_ESTORE */
/* 0, or MRTX_ESTORE when the failpoint's action is "error"; exit/kill never return. */
#define FAILPOINT(fp) \
	(MRTX_UNLIKELY(atomic_load_explicit(&mrtx__fp_armed, memory_order_relaxed)) ? mrtx__fp_fire(fp) : 0)
/* Arm from MRTX_FAILPOINTS once per process (called by mrtx_open). */
int mrtx__fp_from_env(void);
/* Why MRTX_FAILPOINTS was refused ("" if it was not). */
const char *mrtx__fp_env_error(void);
const char *mrtx__fp_name(mrtx_fp fp);

/* splitmix64's finaliser: a bijection on 64-bit words that spreads each
 * input bit over every output bit (lock ids, the LMDB metadata digest). */
static inline uint64_t mrtx__mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Little-endian u32 (the LMDB format record). */
static inline void mrtx__le32_put(uint8_t *out, uint32_t v)
{
	for (unsigned i = 0; i < 4; i++)
		out[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t mrtx__le32_get(const void *in)
{
	const uint8_t *p = in;

	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Little-endian u64 (records: lock commit_ts, metadata values). */
static inline void mrtx__le64_put(uint8_t *out, uint64_t v)
{
	for (unsigned i = 0; i < 8; i++)
		out[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t mrtx__le64_get(const void *in)
{
	const uint8_t *p = in;
	uint64_t v = 0;

	for (unsigned i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Big-endian integers of width bytes (keys: they sort as numbers). */
static inline void mrtx__be_put(uint8_t *out, uint64_t v, size_t width)
{
	for (size_t i = 0; i < width; i++)
		out[i] = (uint8_t)(v >> (8 * (width - 1 - i)));
}

static inline uint64_t mrtx__be_get(const uint8_t *in, size_t width)
{
	uint64_t v = 0;

	for (size_t i = 0; i < width; i++)
		v = (v << 8) | in[i];
	return v;
}

#define MRTX_MIN(a, b) ((a) < (b) ? (a) : (b))
#define MRTX_MAX(a, b) ((a) > (b) ? (a) : (b))

/* The order of rows, qualifiers and keys everywhere: memcmp order, a
 * prefix first.  Rows and qualifiers are mostly short, and below 16 bytes
 * a loop beats a memcmp call. */
static inline int cmp_bytes(const void *a, size_t an, const void *b, size_t bn)
{
	const uint8_t *x = a, *y = b;
	size_t n = MRTX_MIN(an, bn);
	int c = 0;

	if (n < 16) {
		for (size_t i = 0; i < n; i++)
			if (x[i] != y[i])
				return x[i] < y[i] ? -1 : 1;
	} else {
		c = memcmp(x, y, n);
	}
	if (c)
		return c;
	return an < bn ? -1 : an > bn;
}

#endif
