/*
 * histcheck.c - the list-append history checker (see histcheck.h).
 *
 * Steps of hc_check:
 *   1 index every append by (key, value); a pair appended twice is a duplicate
 *   2 walk every list (final lists, committed reads): duplicates, garbage,
 *     positions in the final list, which unknown transactions are visible
 *   3 per append: lost (committed, missing), G1a (failed, present), torn
 *   4 per committed read: G1a, incompatible order, G1b, wr and rw edges
 *   5 ww edges from each final list
 *   6 strongly connected components (Tarjan, iterative); for each edge inside
 *     one, a breadth-first search for the shortest way back classifies the
 *     cycle: G0 (ww only), G1c (ww+wr), G-single (one rw), G2 (more rw)
 * The graph search only runs inside non-trivial components, so a clean
 * history costs one linear pass.
 */
#include "histcheck.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HC_MAX_SHOWN 8       /* detailed anomalies kept per type */
#define HC_MAX_SEARCHES 4096 /* cycle searches before giving up on a class */

enum { E_WW = 1, E_WR = 2, E_RW = 4 };

typedef struct hmop {
	uint8_t kind;   /* 0 read, 1 append */
	uint32_t key;
	uint64_t value; /* append */
	size_t lo, n;   /* read: the list in h->vals */
	long txn;
	long next;      /* next mop of the same transaction, -1 */
} hmop;

typedef struct htxn {
	uint64_t id;
	int status;
	long head, tail; /* mops */
} htxn;

typedef struct hfinal {
	uint32_t key;
	size_t lo, n;
} hfinal;

struct hc_history {
	htxn *txns;
	size_t ntxns, ctxns;
	hmop *mops;
	size_t nmops, cmops;
	uint64_t *vals;
	size_t nvals, cvals;
	hfinal *finals;
	size_t nfinals, cfinals;
};

/* ------------------------------------------------------------ helpers */

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 16;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	if (!(q = realloc(*p, n * elem)))
		return -1;
	*p = q;
	*cap = n;
	return 0;
}

/* (key, value) -> index: open addressing, linear probing. */
typedef struct hslot {
	uint64_t v;
	uint32_t k;
	uint32_t used;
	size_t data;
} hslot;

typedef struct hmap {
	hslot *s;
	size_t cap, n;
} hmap;

static uint64_t mix(uint32_t k, uint64_t v)
{
	uint64_t x = v ^ ((uint64_t)k * 0x9e3779b97f4a7c15ull);

	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static int hmap_init(hmap *m, size_t expect)
{
	m->cap = 64;
	while (m->cap < expect * 2 + 1)
		m->cap *= 2;
	m->n = 0;
	return (m->s = calloc(m->cap, sizeof(*m->s))) ? 0 : -1;
}

/* The slot of (k, v); with insert, claims an empty one (data = SIZE_MAX). */
static hslot *hmap_get(hmap *m, uint32_t k, uint64_t v, int insert)
{
	size_t i = (size_t)mix(k, v) & (m->cap - 1);

	for (;; i = (i + 1) & (m->cap - 1)) {
		hslot *s = &m->s[i];

		if (!s->used) {
			if (!insert || m->n * 2 + 2 > m->cap)
				return NULL; /* sized up front: never full when inserting */
			s->used = 1;
			s->k = k;
			s->v = v;
			s->data = SIZE_MAX;
			m->n++;
			return s;
		}
		if (s->k == k && s->v == v)
			return s;
	}
}

/* ------------------------------------------------------------ building */

hc_history *hc_new(void)
{
	return calloc(1, sizeof(hc_history));
}

void hc_free(hc_history *h)
{
	if (!h)
		return;
	free(h->txns);
	free(h->mops);
	free(h->vals);
	free(h->finals);
	free(h);
}

long hc_add_txn(hc_history *h, uint64_t id, int status)
{
	if (grow((void **)&h->txns, &h->ctxns, h->ntxns + 1, sizeof(*h->txns)))
		return -1;
	h->txns[h->ntxns] = (htxn){ id, status, -1, -1 };
	return (long)h->ntxns++;
}

static int push_vals(hc_history *h, const uint64_t *list, size_t n, size_t *lo)
{
	if (grow((void **)&h->vals, &h->cvals, h->nvals + n + 1, sizeof(*h->vals)))
		return -1;
	*lo = h->nvals;
	if (n)
		memcpy(h->vals + h->nvals, list, n * sizeof(*list));
	h->nvals += n;
	return 0;
}

static int add_mop(hc_history *h, long txn, const hmop *m)
{
	htxn *t;

	if (txn < 0 || (size_t)txn >= h->ntxns)
		return -1;
	if (grow((void **)&h->mops, &h->cmops, h->nmops + 1, sizeof(*h->mops)))
		return -1;
	t = &h->txns[txn];
	h->mops[h->nmops] = *m;
	h->mops[h->nmops].txn = txn;
	h->mops[h->nmops].next = -1;
	if (t->tail >= 0)
		h->mops[t->tail].next = (long)h->nmops;
	else
		t->head = (long)h->nmops;
	t->tail = (long)h->nmops++;
	return 0;
}

int hc_add_append(hc_history *h, long txn, uint32_t key, uint64_t value)
{
	hmop m = { 1, key, value, 0, 0, 0, 0 };

	return add_mop(h, txn, &m);
}

int hc_add_read(hc_history *h, long txn, uint32_t key, const uint64_t *list, size_t n)
{
	hmop m = { 0, key, 0, 0, n, 0, 0 };

	if (push_vals(h, list, n, &m.lo))
		return -1;
	return add_mop(h, txn, &m);
}

int hc_set_final(hc_history *h, uint32_t key, const uint64_t *list, size_t n)
{
	hfinal f = { key, 0, n };

	for (size_t i = 0; i < h->nfinals; i++)
		if (h->finals[i].key == key)
			return push_vals(h, list, n, &h->finals[i].lo) ? -1 :
			       (h->finals[i].n = n, 0);
	if (push_vals(h, list, n, &f.lo) ||
	    grow((void **)&h->finals, &h->cfinals, h->nfinals + 1, sizeof(*h->finals)))
		return -1;
	h->finals[h->nfinals++] = f;
	return 0;
}

/* ------------------------------------------------------------ report */

const char *hc_anomaly_name(int type)
{
	static const char *const names[HC_A__COUNT] = {
		[HC_G0] = "G0", [HC_G1A] = "G1a", [HC_G1B] = "G1b", [HC_G1C] = "G1c",
		[HC_GSINGLE] = "G-single", [HC_G2] = "G2", [HC_LOST] = "lost",
		[HC_DUPLICATE] = "duplicate", [HC_TORN] = "torn", [HC_GARBAGE] = "garbage",
		[HC_INCOMPATIBLE] = "incompatible-order",
	};

	return type >= 0 && type < HC_A__COUNT ? names[type] : "?";
}

void hc_report_free(hc_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nanomalies; i++)
		free(r->anomalies[i].text);
	free(r->anomalies);
	memset(r, 0, sizeof(*r));
}

typedef struct ctx {
	const hc_history *h;
	hc_report *r;
	int oom;
	int mode;        /* enum hc_mode */
	const char *ro;  /* per txn: appends nothing (a read-only transaction) */
} ctx;

static void anomaly(ctx *c, int type, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void anomaly(ctx *c, int type, const char *fmt, ...)
{
	hc_report *r = c->r;
	size_t cap;
	va_list ap;
	char *text;

	r->counts[type]++;
	r->total++;
	if (r->counts[type] > HC_MAX_SHOWN)
		return;
	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) < 0)
		text = NULL;
	va_end(ap);
	cap = r->nanomalies;
	if (!text || grow((void **)&r->anomalies, &cap, r->nanomalies + 1,
	                  sizeof(*r->anomalies))) {
		free(text);
		c->oom = 1;
		return;
	}
	/* cap starts at the length, so grow() reallocates to fit one more */
	r->anomalies[r->nanomalies].type = type;
	r->anomalies[r->nanomalies++].text = text;
}

/* "T<hi>.<lo>" into buf */
static const char *tname(const ctx *c, long t, char *buf, size_t n)
{
	uint64_t id = c->h->txns[t].id;

	snprintf(buf, n, "T%u.%u", (unsigned)(id >> 32), (unsigned)(id & 0xffffffffu));
	return buf;
}

static void vname(uint64_t v, char *buf, size_t n)
{
	snprintf(buf, n, "%u.%u", (unsigned)(v >> 32), (unsigned)(v & 0xffffffffu));
}

/* ------------------------------------------------------------ graph */

typedef struct edge {
	uint32_t from, to;
	uint32_t key;
	uint8_t type;
} edge;

typedef struct graph {
	edge *e;
	size_t n, cap;
	size_t *off;     /* CSR: edges of node u are e[off[u] .. off[u+1]) after sort */
	long *scc;       /* component id of each node */
	long *scc_size;
} graph;

static void add_edge(ctx *c, graph *g, long from, long to, uint32_t key, int type)
{
	if (from == to)
		return;
	if (grow((void **)&g->e, &g->cap, g->n + 1, sizeof(*g->e))) {
		c->oom = 1;
		return;
	}
	g->e[g->n++] = (edge){ (uint32_t)from, (uint32_t)to, key, (uint8_t)type };
	c->r->edges[type == E_WW ? 0 : type == E_WR ? 1 : 2]++;
}

static int edge_cmp(const void *a, const void *b)
{
	const edge *x = a, *y = b;

	return x->from != y->from ? (x->from < y->from ? -1 : 1) : 0;
}

/* Tarjan's algorithm without recursion (histories have 10^5+ nodes). */
static int tarjan(graph *g, size_t nv)
{
	long *idx = malloc(nv * sizeof(long)), *low = malloc(nv * sizeof(long));
	long *stack = malloc(nv * sizeof(long)), *cs = malloc(nv * sizeof(long));
	size_t *ce = malloc(nv * sizeof(size_t));
	char *on = calloc(nv, 1);
	long next = 0, ncomp = 0, sp = 0, csp = 0;
	int rc = -1;

	if (!idx || !low || !stack || !cs || !ce || !on)
		goto done;
	for (size_t i = 0; i < nv; i++)
		idx[i] = -1;
	for (size_t root = 0; root < nv; root++) {
		if (idx[root] >= 0)
			continue;
		cs[csp] = (long)root;
		ce[csp++] = g->off[root];
		idx[root] = low[root] = next++;
		stack[sp++] = (long)root;
		on[root] = 1;
		while (csp) {
			long u = cs[csp - 1];

			if (ce[csp - 1] < g->off[u + 1]) {
				long v = g->e[ce[csp - 1]++].to;

				if (idx[v] < 0) {
					idx[v] = low[v] = next++;
					stack[sp++] = v;
					on[v] = 1;
					cs[csp] = v;
					ce[csp++] = g->off[v];
				} else if (on[v] && idx[v] < low[u]) {
					low[u] = idx[v];
				}
				continue;
			}
			if (low[u] == idx[u]) {
				long w, size = 0;

				do {
					w = stack[--sp];
					on[w] = 0;
					g->scc[w] = ncomp;
					size++;
				} while (w != u);
				g->scc_size[ncomp++] = size;
			}
			csp--;
			if (csp && low[u] < low[cs[csp - 1]])
				low[cs[csp - 1]] = low[u];
		}
	}
	rc = 0;
done:
	free(idx); free(low); free(stack); free(cs); free(ce); free(on);
	return rc;
}

/*
 * Shortest path src -> dst over edges of types in mask, inside src's
 * component.  Fills path[] with edge indexes in order; returns its length,
 * 0 when there is none, -1 on allocation failure.
 */
/* A shortest path src -> dst over edges of the types in mask, inside src's
 * component, through no vertex skip marks (skip may be NULL). */
static long bfs(const graph *g, size_t nv, long src, long dst, int mask, const char *skip,
                size_t *path, size_t *via, long *queue, long *seen, long stamp)
{
	long qh = 0, qt = 0, len = 0;

	(void)nv;
	queue[qt++] = src;
	seen[src] = stamp;
	while (qh < qt) {
		long u = queue[qh++];

		for (size_t i = g->off[u]; i < g->off[u + 1]; i++) {
			long v = g->e[i].to;

			if (!(g->e[i].type & mask) || seen[v] == stamp || g->scc[v] != g->scc[src] ||
			    (skip && skip[v]))
				continue;
			seen[v] = stamp;
			via[v] = i;
			if (v == dst) {
				for (long x = dst; x != src; x = g->e[via[x]].from)
					len++;
				for (long x = dst, k = len; x != src; x = g->e[via[x]].from)
					path[--k] = via[x];
				return len;
			}
			queue[qt++] = v;
		}
	}
	return 0;
}

static void report_cycle(ctx *c, const graph *g, int type, size_t first, const size_t *path,
                         long len)
{
	static const char *const ename[5] = { "", "ww", "wr", "", "rw" };
	size_t cap = 256 + (size_t)(len + 1) * 64, used = 0;
	char *buf = malloc(cap), nb[40];
	long nrw = 0;

	if (!buf) {
		c->oom = 1;
		return;
	}
	used += (size_t)snprintf(buf, cap, "%s", tname(c, g->e[first].from, nb, sizeof(nb)));
	for (long i = -1; i < len; i++) {
		const edge *e = &g->e[i < 0 ? first : path[i]];

		nrw += e->type == E_RW;
		used += (size_t)snprintf(buf + used, cap - used, " -%s(k%u)-> %s", ename[e->type],
		                         e->key, tname(c, e->to, nb, sizeof(nb)));
	}
	anomaly(c, type, "%s cycle of %ld transactions (%ld rw edges): %s", hc_anomaly_name(type),
	        len + 1, nrw, buf);
	free(buf);
}

static int find_cycles(ctx *c, graph *g, size_t nv)
{
	size_t *path = malloc((nv + 1) * sizeof(size_t)), *via = malloc(nv * sizeof(size_t));
	long *queue = malloc(nv * sizeof(long)), *seen = malloc(nv * sizeof(long));
	long stamp = 0, searches = 0;
	int found[HC_A__COUNT] = { 0 }, rc = -1;

	if (!path || !via || !queue || !seen)
		goto done;
	for (size_t i = 0; i < nv; i++)
		seen[i] = -1;
	for (size_t i = 0; i < g->n && searches < HC_MAX_SEARCHES; i++) {
		const edge *e = &g->e[i];
		long len;

		if (g->scc[e->from] != g->scc[e->to] || g->scc_size[g->scc[e->from]] < 2)
			continue;
		if (found[HC_G0] && found[HC_G1C] && found[HC_GSINGLE] &&
		    (found[HC_G2] || c->mode == HC_SNAPSHOT))
			break;
		searches++;
		if (e->type == E_WW && !found[HC_G0]) {
			len = bfs(g, nv, e->to, e->from, E_WW, NULL, path, via, queue, seen, ++stamp);
			if (len > 0)
				found[HC_G0] = 1, report_cycle(c, g, HC_G0, i, path, len);
		} else if (e->type == E_WR && !found[HC_G1C]) {
			len = bfs(g, nv, e->to, e->from, E_WW | E_WR, NULL, path, via, queue, seen,
			          ++stamp);
			if (len > 0)
				found[HC_G1C] = 1, report_cycle(c, g, HC_G1C, i, path, len);
		} else if (e->type == E_RW && (!found[HC_GSINGLE] || !found[HC_G2])) {
			/* G2 is what snapshot isolation allows: not looked for at all
			 * (HC_SNAPSHOT), or only among transactions that write
			 * (HC_SNAPSHOT_READONLY: those stay serializable) */
			const char *skip = c->mode == HC_SNAPSHOT_READONLY ? c->ro : NULL;
			int g2 = c->mode == HC_SERIALIZABLE ||
			         (c->mode == HC_SNAPSHOT_READONLY && !c->ro[e->from] && !c->ro[e->to]);

			len = bfs(g, nv, e->to, e->from, E_WW | E_WR, NULL, path, via, queue, seen,
			          ++stamp);
			if (len > 0 && !found[HC_GSINGLE])
				found[HC_GSINGLE] = 1, report_cycle(c, g, HC_GSINGLE, i, path, len);
			if (len == 0 && g2 && !found[HC_G2] &&
			    (len = bfs(g, nv, e->to, e->from, E_WW | E_WR | E_RW, skip, path, via, queue,
			               seen, ++stamp)) > 0)
				found[HC_G2] = 1, report_cycle(c, g, HC_G2, i, path, len);
		}
	}
	rc = 0;
done:
	free(path); free(via); free(queue); free(seen);
	return rc;
}

/* ------------------------------------------------------------ check */

typedef struct state {
	hmap writers;   /* (key, value) -> append mop */
	hmap finals;    /* (key, 0) -> final index */
	long *pos;      /* per mop: position in its key's final list, -1 */
	size_t *stamp;  /* per mop: last list that contained it (duplicates) */
	char *seen;     /* per txn: one of its appends is visible somewhere */
	char *in_graph; /* per txn */
} hstate;

static const hfinal *final_of(hstate *s, const hc_history *h, uint32_t key)
{
	hslot *sl = hmap_get(&s->finals, key, 0, 0);

	return sl ? &h->finals[sl->data] : NULL;
}

/* Step 2 for one list (final lists have is_final; reads do not). */
static void walk_list(ctx *c, hstate *s, uint32_t key, const uint64_t *v, size_t n,
                      size_t list_id, int is_final, long reader)
{
	char nb[40], vb[40];

	for (size_t i = 0; i < n; i++) {
		hslot *w = hmap_get(&s->writers, key, v[i], 0);

		vname(v[i], vb, sizeof(vb));
		if (!w) {
			if (is_final)
				anomaly(c, HC_GARBAGE, "final list of k%u holds %s, which no transaction "
				        "appended", key, vb);
			else
				anomaly(c, HC_GARBAGE, "%s read %s in k%u, which no transaction appended",
				        tname(c, reader, nb, sizeof(nb)), vb, key);
			continue;
		}
		if (s->stamp[w->data] == list_id + 1) {
			if (is_final)
				anomaly(c, HC_DUPLICATE, "final list of k%u holds %s twice", key, vb);
			else
				anomaly(c, HC_DUPLICATE, "%s read %s twice in k%u",
				        tname(c, reader, nb, sizeof(nb)), vb, key);
			continue;
		}
		s->stamp[w->data] = list_id + 1;
		s->seen[c->h->mops[w->data].txn] = 1;
		if (is_final)
			s->pos[w->data] = (long)i;
	}
}

/* Step 4 for one committed read. */
static void check_read(ctx *c, hstate *s, graph *g, long reader, const hmop *m)
{
	const hc_history *h = c->h;
	const uint64_t *v = h->vals + m->lo;
	const hfinal *f = final_of(s, h, m->key);
	size_t flen = f ? f->n : 0;
	char nb[40], wb[40], vb[40];
	int bad = 0;

	for (size_t i = 0; i < m->n; i++) {
		hslot *w = hmap_get(&s->writers, m->key, v[i], 0);
		long wt;

		if (!w) {
			bad = 1;
			continue;
		}
		wt = h->mops[w->data].txn;
		if (h->txns[wt].status == HC_FAIL) {
			vname(v[i], vb, sizeof(vb));
			anomaly(c, HC_G1A, "aborted read: %s read %s in k%u, appended by %s which "
			        "failed", tname(c, reader, nb, sizeof(nb)), vb, m->key,
			        tname(c, wt, wb, sizeof(wb)));
			bad = 1;
		} else if (s->pos[w->data] != (long)i && !bad) {
			anomaly(c, HC_INCOMPATIBLE, "%s read k%u as a list that is not a prefix of "
			        "its final list (element %zu)", tname(c, reader, nb, sizeof(nb)),
			        m->key, i);
			bad = 1;
		}
	}
	if (bad)
		return;
	if (m->n) {
		hslot *w = hmap_get(&s->writers, m->key, v[m->n - 1], 0);
		const hmop *wm = &h->mops[w->data];

		for (long x = wm->next; x >= 0; x = h->mops[x].next)
			if (h->mops[x].kind == 1 && h->mops[x].key == m->key) {
				vname(v[m->n - 1], vb, sizeof(vb));
				anomaly(c, HC_G1B, "intermediate read: %s read k%u ending at %s, but %s "
				        "appended to k%u again after it", tname(c, reader, nb, sizeof(nb)),
				        m->key, vb, tname(c, wm->txn, wb, sizeof(wb)), m->key);
				break;
			}
		if (s->in_graph[wm->txn])
			add_edge(c, g, wm->txn, reader, m->key, E_WR);
	}
	if (m->n < flen) {
		hslot *w = hmap_get(&s->writers, m->key, h->vals[f->lo + m->n], 0);

		if (w && s->in_graph[h->mops[w->data].txn])
			add_edge(c, g, reader, h->mops[w->data].txn, m->key, E_RW);
	}
}

/* Step 3 for one transaction. */
static void check_appends(ctx *c, hstate *s, long t)
{
	const hc_history *h = c->h;
	const htxn *x = &h->txns[t];
	size_t total = 0, present = 0;
	char nb[40], vb[40];

	for (long i = x->head; i >= 0; i = h->mops[i].next) {
		const hmop *m = &h->mops[i];

		if (m->kind != 1)
			continue;
		total++;
		present += s->pos[i] >= 0;
		vname(m->value, vb, sizeof(vb));
		if (x->status == HC_OK && s->pos[i] < 0)
			anomaly(c, HC_LOST, "lost append: committed %s appended %s to k%u; the final "
			        "list lacks it", tname(c, t, nb, sizeof(nb)), vb, m->key);
		else if (x->status == HC_FAIL && s->pos[i] >= 0)
			anomaly(c, HC_G1A, "aborted write: failed %s appended %s to k%u and the final "
			        "list holds it", tname(c, t, nb, sizeof(nb)), vb, m->key);
	}
	if (x->status == HC_UNKNOWN && s->seen[t] && present < total) {
		if (present)
			anomaly(c, HC_TORN, "torn transaction: unknown %s has %zu of its %zu appends "
			        "in the final lists", tname(c, t, nb, sizeof(nb)), present, total);
		else
			anomaly(c, HC_LOST, "lost append: unknown %s was read by a committed "
			        "transaction but none of its appends is in the final lists",
			        tname(c, t, nb, sizeof(nb)));
	}
}

int hc_check(const hc_history *h, hc_report *out)
{
	return hc_check_mode(h, HC_SERIALIZABLE, out);
}

int hc_check_mode(const hc_history *h, int mode, hc_report *out)
{
	ctx c = { h, out, 0, mode, NULL };
	hstate s;
	graph g;
	size_t nv = h->ntxns;
	char *ro = NULL;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	memset(&s, 0, sizeof(s));
	memset(&g, 0, sizeof(g));
	out->mode = mode;
	if (mode != HC_SERIALIZABLE && mode != HC_SNAPSHOT && mode != HC_SNAPSHOT_READONLY)
		return -1;
	if (hmap_init(&s.writers, h->nmops) || hmap_init(&s.finals, h->nfinals) ||
	    !(s.pos = malloc((h->nmops + 1) * sizeof(long))) ||
	    !(s.stamp = calloc(h->nmops + 1, sizeof(size_t))) ||
	    !(s.seen = calloc(nv + 1, 1)) || !(s.in_graph = calloc(nv + 1, 1)) ||
	    !(ro = malloc(nv + 1)))
		goto done;
	for (size_t t = 0; t < nv; t++) {
		ro[t] = 1;
		for (long i = h->txns[t].head; i >= 0 && ro[t]; i = h->mops[i].next)
			ro[t] = h->mops[i].kind != 1;
	}
	c.ro = ro;
	for (size_t i = 0; i < h->nfinals; i++)
		hmap_get(&s.finals, h->finals[i].key, 0, 1)->data = i;
	/* 1: index appends */
	for (size_t i = 0; i < h->nmops; i++) {
		const hmop *m = &h->mops[i];
		hslot *w;
		char vb[40];

		s.pos[i] = -1;
		if (m->kind != 1)
			continue;
		w = hmap_get(&s.writers, m->key, m->value, 1);
		if (w->data != SIZE_MAX) {
			vname(m->value, vb, sizeof(vb));
			anomaly(&c, HC_DUPLICATE, "value %s was appended to k%u twice", vb, m->key);
			continue;
		}
		w->data = i;
	}
	/* 2: every list */
	for (size_t i = 0; i < h->nfinals; i++)
		walk_list(&c, &s, h->finals[i].key, h->vals + h->finals[i].lo, h->finals[i].n, i, 1,
		          -1);
	for (size_t i = 0; i < h->nmops; i++) {
		const hmop *m = &h->mops[i];

		if (m->kind == 0 && h->txns[m->txn].status == HC_OK)
			walk_list(&c, &s, m->key, h->vals + m->lo, m->n, h->nfinals + i, 0, m->txn);
	}
	for (size_t t = 0; t < nv; t++) {
		int st = h->txns[t].status;

		out->ok += st == HC_OK;
		out->failed += st == HC_FAIL;
		out->unknown += st == HC_UNKNOWN;
		out->unknown_visible += st == HC_UNKNOWN && s.seen[t];
		s.in_graph[t] = st == HC_OK || (st == HC_UNKNOWN && s.seen[t]);
		/* 3 */
		check_appends(&c, &s, (long)t);
	}
	/* 4: reads */
	for (size_t i = 0; i < h->nmops; i++)
		if (h->mops[i].kind == 0 && h->txns[h->mops[i].txn].status == HC_OK)
			check_read(&c, &s, &g, h->mops[i].txn, &h->mops[i]);
	/* 5: ww from the version orders */
	for (size_t i = 0; i < h->nfinals; i++) {
		const hfinal *f = &h->finals[i];
		long prev = -1;

		for (size_t j = 0; j < f->n; j++) {
			hslot *w = hmap_get(&s.writers, f->key, h->vals[f->lo + j], 0);
			long t = w ? h->mops[w->data].txn : -1;

			if (t < 0 || !s.in_graph[t])
				continue;
			if (prev >= 0)
				add_edge(&c, &g, prev, t, f->key, E_WW);
			prev = t;
		}
	}
	if (c.oom)
		goto done;
	/* 6: cycles */
	if (!(g.off = calloc(nv + 2, sizeof(size_t))) || !(g.scc = malloc((nv + 1) * sizeof(long))) ||
	    !(g.scc_size = malloc((nv + 1) * sizeof(long))))
		goto done;
	if (g.n)
		qsort(g.e, g.n, sizeof(*g.e), edge_cmp);
	for (size_t i = 0; i < g.n; i++)
		g.off[g.e[i].from + 1]++;
	for (size_t u = 0; u < nv; u++)
		g.off[u + 1] += g.off[u];
	if (nv && (tarjan(&g, nv) || find_cycles(&c, &g, nv)))
		goto done;
	rc = c.oom ? -1 : 0;
done:
	free(s.writers.s); free(s.finals.s); free(s.pos); free(s.stamp);
	free(s.seen); free(s.in_graph); free(ro);
	free(g.e); free(g.off); free(g.scc); free(g.scc_size);
	if (rc)
		hc_report_free(out);
	return rc;
}
