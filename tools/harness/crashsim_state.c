/*
 * crashsim_state.c - the crash states of a recorded trace, and their check.
 *
 * Disk model (one file, data.mdb; the lock file is rebuilt by LMDB and is
 * not part of a crash state).  A crash "before record i" means records
 * [0, i) completed.  Let b be the last sync before i (a CR_SYNC of the file,
 * from any process or descriptor: fdatasync flushes the whole file).  Then:
 *   - every write before b is on disk, in order (the durable image);
 *   - each page written after b holds, independently, one of its versions:
 *     what it held at b, or its page-cache content after any one of the
 *     later writes to it (so any subset, in any order, of the later writes
 *     reached the disk, at page granularity);
 *   - a write through an O_DSYNC descriptor (LMDB's meta page in sync mode)
 *     was on disk when it returned: its page holds that version or a later
 *     one;
 *   - a torn page: some of its eight 512-byte sectors hold the chosen
 *     version, the others the oldest version allowed;
 *   - the file is as long as the durable image, or longer where a page
 *     beyond it reached the disk (a gap reads as zeros).
 * A sector (512 bytes) is written atomically; LMDB's meta update, 120
 * bytes inside one sector, is never torn (LMDB relies on that too).
 *
 * States: the crash points are the records after the "R" mark that write
 * or sync.  When the number of states (crash points times page-version
 * combinations, without tearing) is at most --states, all are explored;
 * otherwise --states are drawn at random (seeded; state K is a function of
 * the seed and K), tearing one chosen page in eight.
 *
 * --broken meta simulates a library that acknowledges a commit as soon as
 * its meta page is written, unsynced: each acknowledgement counts from just
 * after its process's last write before it, and CR_DSYNC is ignored.  (In
 * sync mode the library writes the meta page unsynced and acknowledges
 * only after a later sync of the file -- its own or the next writer's --
 * or, in older traces, through the O_DSYNC descriptor.)  --broken data
 * ignores every sync after the setup (the data pages a meta page points to
 * may be missing).
 *
 * States are processed in crash-point order, so the durable image only
 * moves forward (durable_to); each state's image is written to a scratch
 * directory (/dev/shm when there is one) and checked by crashsim_check.c,
 * once per distinct image (vcache).  --only K builds state K alone and
 * keeps it.
 */
#include "crashsim.h"
#include "crashsim_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "crashrec/crashrec.h"
#include "tools/cli/util.h"

#define PAGE 4096u
#define SECTOR 512u

typedef struct rec {
	uint8_t type, flags;
	uint32_t pid;
	uint64_t off, len;
	const uint8_t *data;
} rec;

/* One write's bytes within one page. */
typedef struct chunk {
	uint32_t page;
	uint16_t lo, hi; /* [lo, hi) within the page; hi <= PAGE */
	uint8_t dsync;
	const uint8_t *data;
} chunk;

typedef struct ack {
	size_t at; /* record index */
	int w;
	uint32_t k;
} ack;

typedef struct trace {
	uint8_t *map;
	size_t mapsz;
	rec *recs;
	size_t nrec, ready;
	chunk *chunks;
	size_t nchunks;
	size_t *cstart;    /* cstart[i]: first chunk of records >= i (nrec + 1 entries) */
	size_t *barrier;   /* barrier[i]: index of the last effective sync before i, + 1 */
	ack *acks;
	size_t nacks;
	size_t *cps;       /* crash points */
	size_t ncps;
	uint32_t maxpage;
	int writers, txns, unbatched;
	uint64_t seed;
} trace;

/* Per-state scratch: the pending pages and their chunk lists. */
typedef struct pend {
	uint32_t page;
	uint32_t k, m;   /* versions after the base: 1..k; at least m (dsync) */
	uint32_t v;      /* chosen */
	uint8_t torn;    /* sector mask of the new version, 0 = whole */
	size_t first;    /* chunk list: idx[first .. first + k) */
} pend;

typedef struct scratch {
	pend *pend;
	size_t npend;
	size_t *idx;      /* chunk indices grouped by page */
	uint32_t *slot;   /* page -> pend index + 1, stamped */
	uint32_t *stamp;
	uint32_t cur;
	uint8_t *img;     /* durable image */
	size_t imgsz, imgcap, applied; /* records applied to img: [0, applied) */
} scratch;

/* --------------------------------------------------------------- trace */

static int ack_cmp(const void *a, const void *b)
{
	const ack *x = a, *y = b;

	return x->at < y->at ? -1 : x->at > y->at;
}

static int trace_load(const cs_cfg *c, trace *t)
{
	struct stat sb;
	size_t cap = 0, off = 0, ccap = 0, acap = 0;
	int fd, ok = 1;

	memset(t, 0, sizeof(*t));
	if ((fd = open(c->trace, O_RDONLY)) < 0 || fstat(fd, &sb) != 0) {
		tool_err("crashsim", "%s: %s", c->trace, strerror(errno));
		return EXIT_FAIL;
	}
	t->mapsz = (size_t)sb.st_size;
	t->map = t->mapsz ? mmap(NULL, t->mapsz, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
	close(fd);
	if (t->mapsz && t->map == MAP_FAILED) {
		t->map = NULL;
		tool_err("crashsim", "mmap %s: %s", c->trace, strerror(errno));
		return EXIT_FAIL;
	}
	t->ready = SIZE_MAX;
	while (off < t->mapsz && ok) {
		crashrec_hdr h;
		rec r;

		if (t->mapsz - off < sizeof(h))
			break; /* a torn last record */
		memcpy(&h, t->map + off, sizeof(h));
		off += sizeof(h);
		if (h.magic != CR_MAGIC || h.type < CR_WRITE || h.type > CR_MARK) {
			ok = 0;
			break;
		}
		r.type = h.type;
		r.flags = h.flags;
		r.pid = h.pid;
		r.off = h.off;
		r.len = (h.type == CR_WRITE || h.type == CR_MARK) ? h.len : 0;
		if (r.len > t->mapsz - off)
			break;
		r.data = t->map + off;
		off += r.len;
		if (t->nrec == cap) {
			cap = cap ? cap * 2 : 1024;
			if (!(t->recs = realloc(t->recs, cap * sizeof(*t->recs))))
				return EXIT_FAIL;
		}
		if (r.type == CR_MARK && r.len > 0 && r.len < 64) {
			char s[64];
			int w;
			uint32_t k;
			uint64_t seed;

			memcpy(s, r.data, r.len);
			s[r.len] = 0;
			if (s[0] == 'R' && sscanf(s, "R %d %d %" SCNu64 " %d", &t->writers, &t->txns,
			                          &seed, &t->unbatched) >= 3) {
				t->ready = t->nrec;
				t->seed = seed;
			} else if (sscanf(s, "A %d %" SCNu32, &w, &k) == 2 && w >= 0 && w < CS_MAXW) {
				if (t->nacks == acap) {
					acap = acap ? acap * 2 : 256;
					if (!(t->acks = realloc(t->acks, acap * sizeof(*t->acks))))
						return EXIT_FAIL;
				}
				t->acks[t->nacks++] = (ack){ t->nrec, w, k };
				if (c->broken == CS_BROKEN_META) /* at its last write */
					for (size_t j = t->nrec; j-- > 0;)
						if (t->recs[j].type == CR_WRITE &&
						    t->recs[j].pid == h.pid) {
							t->acks[t->nacks - 1].at = j; /* (counts
							 * from the crash just after record j) */
							break;
						}
			}
		}
		if (r.type == CR_WRITE) {
			for (uint64_t p = r.off / PAGE; p * PAGE < r.off + r.len; p++) {
				uint64_t lo = p * PAGE > r.off ? p * PAGE : r.off;
				uint64_t hi = (p + 1) * PAGE < r.off + r.len ? (p + 1) * PAGE : r.off + r.len;

				if (p > UINT32_MAX / 2) {
					ok = 0;
					break;
				}
				if (t->nchunks == ccap) {
					ccap = ccap ? ccap * 2 : 4096;
					if (!(t->chunks = realloc(t->chunks, ccap * sizeof(*t->chunks))))
						return EXIT_FAIL;
				}
				t->chunks[t->nchunks++] = (chunk){ (uint32_t)p, (uint16_t)(lo - p * PAGE),
				                                   (uint16_t)(hi - p * PAGE),
				                                   (r.flags & CR_DSYNC) != 0,
				                                   r.data + (lo - r.off) };
				if (p > t->maxpage)
					t->maxpage = (uint32_t)p;
			}
		}
		t->recs[t->nrec++] = r;
	}
	if (t->nrec == 0)
		ok = 0;
	if (c->broken == CS_BROKEN_META) /* acks moved back: in order again */
		qsort(t->acks, t->nacks, sizeof(*t->acks), ack_cmp);
	if (!ok || t->ready == SIZE_MAX || t->writers < 1 || t->writers > CS_MAXW) {
		tool_err("crashsim", "%s: %s", c->trace, ok ? "no setup mark: not a complete "
		         "crashsim trace" : "malformed trace");
		return EXIT_FAIL;
	}
	if (!(t->cstart = calloc(t->nrec + 1, sizeof(size_t))) ||
	    !(t->barrier = calloc(t->nrec + 1, sizeof(size_t))) ||
	    !(t->cps = calloc(t->nrec + 1, sizeof(size_t))))
		return EXIT_FAIL;
	{
		size_t ch = 0, bar = 0;

		for (size_t i = 0; i <= t->nrec; i++) {
			t->cstart[i] = ch;
			t->barrier[i] = bar;
			if (i == t->nrec)
				break;
			if (t->recs[i].type == CR_WRITE)
				for (uint64_t p = t->recs[i].off / PAGE;
				     p * PAGE < t->recs[i].off + t->recs[i].len; p++)
					ch++;
			if (t->recs[i].type == CR_SYNC && !(t->recs[i].flags & CR_MSYNC) &&
			    (c->broken != CS_BROKEN_DATA || i < t->ready))
				bar = i + 1;
			/* a crash just after each write, sync and acknowledgement */
			if (i >= t->ready && t->recs[i].type != CR_OPEN)
				t->cps[t->ncps++] = i + 1;
		}
	}
	return 0;
}

static void trace_free(trace *t)
{
	if (t->map)
		munmap(t->map, t->mapsz);
	free(t->recs);
	free(t->chunks);
	free(t->cstart);
	free(t->barrier);
	free(t->acks);
	free(t->cps);
}

/* ----------------------------------------------------------- the states */

/* Advance the durable image to records [0, upto). */
static int durable_to(scratch *s, const trace *t, size_t upto)
{
	for (; s->applied < upto; s->applied++) {
		const rec *r = &t->recs[s->applied];
		size_t end = (size_t)(r->off + r->len);

		if (r->type == CR_TRUNC)
			end = (size_t)r->off;
		else if (r->type != CR_WRITE)
			continue;
		if (end > s->imgcap) {
			size_t ncap = s->imgcap ? s->imgcap : 65536;
			uint8_t *p;

			while (ncap < end)
				ncap *= 2;
			if (!(p = realloc(s->img, ncap)))
				return -1;
			memset(p + s->imgcap, 0, ncap - s->imgcap);
			s->img = p;
			s->imgcap = ncap;
		}
		if (r->type == CR_WRITE) {
			memcpy(s->img + r->off, r->data, r->len);
			if (end > s->imgsz)
				s->imgsz = end;
		} else {
			if (end < s->imgsz)
				memset(s->img + end, 0, s->imgsz - end);
			s->imgsz = end;
		}
	}
	return 0;
}

/* Group the chunks written after the barrier of crash point i by page. */
static void collect_pending(scratch *s, const trace *t, const cs_cfg *c, size_t i)
{
	size_t lo = t->cstart[t->barrier[i]], hi = t->cstart[i], n = 0;

	s->npend = 0;
	if (++s->cur == 0) {
		memset(s->stamp, 0, (t->maxpage + 1) * sizeof(*s->stamp));
		s->cur = 1;
	}
	for (size_t j = lo; j < hi; j++) {
		uint32_t p = t->chunks[j].page;

		if (s->stamp[p] != s->cur) {
			s->stamp[p] = s->cur;
			s->slot[p] = (uint32_t)s->npend;
			s->pend[s->npend++] = (pend){ p, 0, 0, 0, 0, 0 };
		}
		s->pend[s->slot[p]].k++;
	}
	for (size_t q = 0; q < s->npend; q++) { /* counting sort of chunk indices */
		s->pend[q].first = n;
		n += s->pend[q].k;
		s->pend[q].k = 0;
	}
	for (size_t j = lo; j < hi; j++) {
		pend *pp = &s->pend[s->slot[t->chunks[j].page]];

		s->idx[pp->first + pp->k++] = j;
		if (t->chunks[j].dsync && c->broken != CS_BROKEN_META)
			pp->m = pp->k;
	}
}

/* Page content after versions 1..v of pp, from the durable image. */
static void page_version(const scratch *s, const trace *t, const pend *pp, uint32_t v,
                         uint8_t *out, size_t *end)
{
	size_t base = (size_t)pp->page * PAGE;

	memset(out, 0, PAGE);
	if (base < s->imgsz)
		memcpy(out, s->img + base, s->imgsz - base < PAGE ? s->imgsz - base : PAGE);
	*end = 0;
	for (uint32_t j = 0; j < v; j++) {
		const chunk *ch = &t->chunks[s->idx[pp->first + j]];

		memcpy(out + ch->lo, ch->data, (size_t)(ch->hi - ch->lo));
		if (base + ch->hi > *end)
			*end = base + ch->hi;
	}
}

/* Write the state's image to dir/data.mdb (and remove any lock file). */
static int write_image(const scratch *s, const trace *t, const char *dir)
{
	char path[PATH_MAX];
	uint8_t nw[PAGE], old[PAGE];
	size_t size = s->imgsz, end, oend;
	int fd, rc = 0;

	/* what the image holds is data.mdb alone: LMDB's lock file and the
	 * timestamp page (rebuilt from the stored ceiling when missing) go,
	 * also when a directory of an earlier run with this pid was left */
	snprintf(path, sizeof(path), "%s/lock.mdb", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/ts.shm", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0)
		return -1;
	if (s->imgsz && pwrite(fd, s->img, s->imgsz, 0) != (ssize_t)s->imgsz)
		rc = -1;
	for (size_t q = 0; q < s->npend && rc == 0; q++) {
		const pend *pp = &s->pend[q];

		if (pp->v == 0)
			continue;
		page_version(s, t, pp, pp->v, nw, &end);
		if (pp->torn) {
			page_version(s, t, pp, pp->m, old, &oend);
			for (unsigned sec = 0; sec < PAGE / SECTOR; sec++)
				if (!(pp->torn & (1u << sec)))
					memcpy(nw + sec * SECTOR, old + sec * SECTOR, SECTOR);
		}
		if (end > size)
			size = end;
		if (pwrite(fd, nw, PAGE, (off_t)pp->page * PAGE) != (ssize_t)PAGE)
			rc = -1;
	}
	if (rc == 0 && ftruncate(fd, (off_t)size) != 0)
		rc = -1;
	if (close(fd) != 0)
		rc = -1;
	return rc;
}

/* ------------------------------------------------------------ explore */

/*
 * Many states are the same image: a crash point whose later writes all
 * stayed in the cache leaves what the previous one left.  An image is a
 * function of its barrier and the chunk each changed page holds (and its
 * tearing); with the acknowledged commits it needs, that decides the
 * verdict, which is checked once and counted for every such state.
 */
typedef struct vcache {
	uint64_t *keys; /* 0 = empty */
	verdict *v;
	size_t cap, n;
	unsigned long hits;
} vcache;

static uint64_t hmix(uint64_t h, uint64_t x)
{
	h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static uint64_t state_key(const scratch *s, size_t barrier, const uint32_t *need, int nw)
{
	uint64_t h = hmix(1469598103934665603ull, barrier);

	for (size_t q = 0; q < s->npend; q++) {
		const pend *pp = &s->pend[q];

		if (pp->v == 0)
			continue;
		h = hmix(h, pp->page);
		h = hmix(h, s->idx[pp->first + pp->v - 1]);
		h = hmix(h, ((uint64_t)pp->torn << 32) | pp->m);
	}
	for (int w = 0; w < nw; w++)
		h = hmix(h, need[w]);
	return h ? h : 1;
}

/* The slot of key: its verdict if cached (*found), else where it goes. */
static size_t vcache_slot(vcache *c, uint64_t key, int *found)
{
	size_t i = (size_t)(key % c->cap);

	while (c->keys[i] && c->keys[i] != key)
		i = (i + 1) % c->cap;
	*found = c->keys[i] == key;
	return i;
}

static uint64_t rng_next(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

typedef struct job {
	size_t cp;       /* crash point index into t->cps */
	unsigned long id;
	uint64_t combo;  /* exhaustive: mixed-radix choice; random: rng state */
} job;

static int job_cmp(const void *a, const void *b)
{
	const job *x = a, *y = b;

	return x->cp != y->cp ? (x->cp < y->cp ? -1 : 1) : (x->id > y->id) - (x->id < y->id);
}

/* Number of states of crash point i (saturating at cap). */
static uint64_t states_of(const scratch *s, uint64_t cap)
{
	uint64_t n = 1;

	for (size_t q = 0; q < s->npend; q++) {
		uint64_t r = s->pend[q].k - s->pend[q].m + 1;

		if (n > cap / r)
			return cap + 1;
		n *= r;
	}
	return n;
}

/* Fix the choices of the collected pending pages. */
static void choose(scratch *s, const job *j, int exhaustive, char *desc, size_t dn,
                   size_t rec_i)
{
	uint64_t x = j->combo;
	unsigned persisted = 0, torn = 0, pinned = 0;

	for (size_t q = 0; q < s->npend; q++) {
		pend *pp = &s->pend[q];
		uint32_t span = pp->k - pp->m;

		pp->torn = 0;
		if (exhaustive) {
			pp->v = pp->m + (uint32_t)(x % (span + 1));
			x /= span + 1;
		} else {
			uint64_t r = rng_next(&x);

			pp->v = pp->m + (span && (r & 1) ? 1 + (uint32_t)((r >> 1) % span) : 0);
			if (pp->v > pp->m && ((r >> 40) & 7) == 0)
				pp->torn = (uint8_t)(1 + (r >> 44) % 254);
		}
		persisted += pp->v > pp->m;
		torn += pp->torn != 0;
		pinned += pp->m > 0;
	}
	snprintf(desc, dn, "power lost after the first %zu trace records; %zu pages written since the "
	         "last sync (%u held on disk by O_DSYNC): %u more reached the disk, %u torn",
	         rec_i, s->npend, pinned, persisted, torn);
}

int cs_explore(const cs_cfg *c, cs_result *out)
{
	trace t;
	scratch s;
	vcache vc = { NULL, NULL, 0, 0, 0 };
	job *jobs = NULL;
	size_t njobs = 0;
	uint64_t total = 0;
	uint32_t need[CS_MAXW];
	char dir[PATH_MAX], pristine[PATH_MAX], desc[256];
	int rc = EXIT_FAIL, keep = c->only >= 0;

	memset(out, 0, sizeof(*out));
	memset(&s, 0, sizeof(s));
	out->first_state = -1;
	if ((rc = trace_load(c, &t)))
		return rc;
	rc = EXIT_FAIL;
	out->records = t.nrec;
	for (size_t i = 0; i < t.nrec; i++) {
		out->writes += t.recs[i].type == CR_WRITE;
		out->syncs += t.recs[i].type == CR_SYNC;
	}
	out->acks = t.nacks;
	out->unbatched = t.unbatched;
	out->crash_points = t.ncps;
	if (!(s.pend = calloc(t.nchunks + 1, sizeof(*s.pend))) ||
	    !(s.idx = calloc(t.nchunks + 1, sizeof(*s.idx))) ||
	    !(s.slot = calloc((size_t)t.maxpage + 1, sizeof(*s.slot))) ||
	    !(s.stamp = calloc((size_t)t.maxpage + 1, sizeof(*s.stamp))))
		goto done;
	/* exhaustive if every state fits in the budget */
	for (size_t q = 0; q < t.ncps && total <= c->states; q++) {
		collect_pending(&s, &t, c, t.cps[q]);
		total += states_of(&s, c->states);
	}
	out->exhaustive = total <= c->states;
	njobs = out->exhaustive ? (size_t)total : c->states;
	if (!t.ncps)
		njobs = 0;
	if (njobs && !(jobs = calloc(njobs, sizeof(*jobs)))) {
		tool_err("crashsim", "out of memory for %zu states (lower --states)", njobs);
		goto done;
	}
	if (out->exhaustive) {
		size_t n = 0;

		for (size_t q = 0; q < t.ncps; q++) {
			uint64_t k;

			collect_pending(&s, &t, c, t.cps[q]);
			k = states_of(&s, c->states);
			for (uint64_t x = 0; x < k; x++, n++)
				jobs[n] = (job){ q, (unsigned long)n, x };
		}
	} else {
		for (size_t n = 0; n < njobs; n++) {
			uint64_t x = c->seed * 0x2545f4914f6cdd1dull + n + 1;

			jobs[n].id = n;
			jobs[n].cp = (size_t)(rng_next(&x) % t.ncps);
			jobs[n].combo = rng_next(&x);
		}
		qsort(jobs, njobs, sizeof(*jobs), job_cmp);
	}
	if (keep) {
		snprintf(pristine, sizeof(pristine), "%s/state-%ld", c->dir, c->only);
		snprintf(dir, sizeof(dir), "%s/state-%ld.checked", c->dir, c->only);
		if (mkdir(pristine, 0700) != 0 && errno != EEXIST) {
			tool_err("crashsim", "mkdir %s: %s", pristine, strerror(errno));
			goto done;
		}
	} else {
		struct stat sb;

		if (stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode))
			snprintf(dir, sizeof(dir), "/dev/shm/mrtx-crashsim.%d", (int)getpid());
		else
			snprintf(dir, sizeof(dir), "%s/img.%d", c->dir, (int)getpid());
	}
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		tool_err("crashsim", "mkdir %s: %s", dir, strerror(errno));
		goto done;
	}
	vc.cap = 2 * njobs + 16;
	if (!(vc.keys = calloc(vc.cap, sizeof(*vc.keys))) ||
	    !(vc.v = calloc(vc.cap, sizeof(*vc.v)))) {
		tool_err("crashsim", "out of memory for %zu states (lower --states)", njobs);
		goto done;
	}
	for (size_t n = 0; n < njobs; n++) {
		const job *j = &jobs[n];
		size_t i = t.cps[j->cp], slot;
		uint64_t key;
		verdict v;
		int found;

		if (keep && j->id != (unsigned long)c->only)
			continue;
		if (durable_to(&s, &t, t.barrier[i]) != 0)
			goto done;
		collect_pending(&s, &t, c, i);
		choose(&s, j, out->exhaustive, desc, sizeof(desc), i);
		memset(need, 0, sizeof(need));
		{
			size_t limit = c->durability == MRTX_NOMETASYNC ? t.barrier[i] : i;

			for (size_t a = 0; a < t.nacks && t.acks[a].at < limit; a++)
				if (t.acks[a].w < t.writers && t.acks[a].k > need[t.acks[a].w])
					need[t.acks[a].w] = t.acks[a].k;
		}
		/* --only: the pristine image stays in DIR/state-K, the checks run
		 * (and recover) on a copy in DIR/state-K.checked */
		if (keep && write_image(&s, &t, pristine) != 0) {
			tool_err("crashsim", "writing the image in %s: %s", pristine, strerror(errno));
			goto done;
		}
		key = state_key(&s, t.barrier[i], need, t.writers);
		slot = vcache_slot(&vc, key, &found);
		if (found && !keep) {
			v = vc.v[slot];
			vc.hits++;
		} else {
			if (write_image(&s, &t, dir) != 0) {
				tool_err("crashsim", "writing the image in %s: %s", dir,
				         strerror(errno));
				goto done;
			}
			cs_expect ex = { t.writers, t.txns, t.seed, need };

			cs_check_image(dir, &ex, &v);
			if (vc.n < vc.cap / 2) {
				vc.keys[slot] = key;
				vc.v[slot] = v;
				vc.n++;
			}
		}
		out->states++;
		if (keep)
			printf("state %ld: %s\nimage: %s (as the crash left it), %s (after the "
			       "checks: recovered)\n", c->only, desc, pristine, dir);
		if (!v.mask)
			continue;
		out->nviolations++;
		for (int k = 0; k < CSV_NKINDS; k++)
			if (v.mask & (1u << k))
				out->violations[k]++;
		if (out->first_state < 0 || (long)j->id < out->first_state) {
			out->first_state = (long)j->id;
			out->first_kind = v.first;
			snprintf(out->first_detail, sizeof(out->first_detail), "%s", v.detail);
			snprintf(out->first_state_desc, sizeof(out->first_state_desc), "%s", desc);
		}
	}
	if (keep && out->states == 0) {
		tool_err("crashsim", "no state %ld (%zu states)", c->only, njobs);
		goto done;
	}
	out->images = out->states - vc.hits;
	rc = 0;
done:
	free(vc.keys);
	free(vc.v);
	if (!keep) {
		char p[PATH_MAX + 16];

		snprintf(p, sizeof(p), "%s/data.mdb", dir);
		unlink(p);
		snprintf(p, sizeof(p), "%s/lock.mdb", dir);
		unlink(p);
		snprintf(p, sizeof(p), "%s/ts.shm", dir);
		unlink(p);
		rmdir(dir);
	}
	free(jobs);
	free(s.pend);
	free(s.idx);
	free(s.slot);
	free(s.stamp);
	free(s.img);
	trace_free(&t);
	return rc;
}
