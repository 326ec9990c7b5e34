/*
 * simrados_int.h - what the files of the simulated RADOS cluster share:
 * its types and the functions and state one file defines for another.
 * The model is described at the top of simrados.c.
 *
 *   simrados_store.c    byte strings, omaps, pools and their objects
 *   simrados_op.c       write and read ops: their steps, checked and run
 *   simrados.c          the cluster's state, the held queue, the control
 *                       API (simrados.h), submission, completions,
 *                       rados_remove
 *   simrados_handles.c  cluster and pool handles, building write and read
 *                       ops, omap iterators, object listing
 */
#ifndef MRTX_SIMRADOS_INT_H
#define MRTX_SIMRADOS_INT_H

#include "storage/sim/simrados.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define SIMR_MAX_OMAP_ENTRIES 1024 /* osd_max_omap_entries_per_request */

/* ------------------------------------------------------------- strings */

typedef struct sbuf {
	char *p;
	size_t n;
} sbuf;

typedef struct skv {
	sbuf k, v;
} skv;

/* ---------------------------------------------------------------- omap */

typedef struct omap {
	skv *a;
	size_t n, cap;
} omap;

/* --------------------------------------------------- pools and objects */

typedef struct sobj {
	char *name;
	omap m;
} sobj;

typedef struct spool {
	uint64_t id;
	char *name;
	sobj **o; /* sorted by strcmp of name */
	size_t n, cap;
} spool;

/* ------------------------------------------------------ ops and handles */

enum { ST_CREATE, ST_CMP, ST_SET, ST_RMKEYS, ST_RMRANGE, ST_EXEC, ST_REMOVE, ST_GETVALS,
       ST_GETKEYS };

typedef struct siter {
	skv *a;
	size_t n, pos;
} siter;

typedef struct sstep {
	int kind;
	int excl;           /* ST_CREATE */
	uint8_t cmp;        /* ST_CMP */
	sbuf key, val;      /* ST_CMP; ST_RMRANGE's begin and end */
	skv *kv;            /* ST_SET, ST_RMKEYS, ST_GETKEYS (keys only) */
	size_t nkv;
	int *prval;         /* ST_CMP, ST_EXEC, ST_GET* */
	sbuf after, prefix; /* ST_GETVALS, as C strings */
	uint64_t max;
	siter *it;          /* ST_GET*: owned by the caller */
	unsigned char *pmore;
} sstep;

typedef struct sop {
	sstep *s;
	size_t n, cap;
	int oom; /* a step could not be recorded: the op fails with -ENOMEM */
} sop;

typedef struct sclient {
	uint64_t id;
	int connected;
	char mon_host[256];
} sclient;

typedef struct sio {
	uint64_t client, pool_id;
	char *pool;
} sio;

typedef struct scomp scomp;

/* An op in flight: a held write (a private copy of its op) or a held read
 * (the caller's op, borrowed: its outputs are the caller's, so the read is
 * dropped as soon as its caller stops waiting for it). */
typedef struct pend {
	uint64_t id, client, pool_id;
	char *pool, *oid;
	sop *op;
	int read;
	simr_fate fate;   /* as chosen at submission */
	scomp *comp;      /* NULL once its caller gave up */
	struct pend *next;
} pend;

struct scomp {
	int done, ret;
	pend *p;
};

typedef struct slist {
	char **names;
	size_t n, pos;
} slist;

/* simrados_store.c */
int simr__sbuf_set(sbuf *b, const char *p, size_t n);
int simr__kcmp(const sbuf *a, const sbuf *b);
size_t simr__omap_bound(const omap *m, const char *k, size_t kn, int after);
const skv *simr__omap_find(const omap *m, const char *k, size_t kn);
int simr__omap_set(omap *m, const sbuf *k, const sbuf *v);
void simr__omap_cut(omap *m, size_t from, size_t to);
void simr__omap_free(omap *m);
sobj *simr__obj_find(const spool *p, const char *name);
sobj *simr__obj_add(spool *p, const char *name);
void simr__obj_remove(spool *p, const char *name);

/* simrados_op.c */
void simr__sop_free(sop *o);
sstep *simr__sop_add(sop *o, int kind);
sop *simr__sop_dup(const sop *o);
int simr__write_apply(spool *p, const char *oid, const sop *op, int reply);
int simr__read_apply(spool *p, const char *oid, const sop *op);

/* simrados.c: the one lock over the whole cluster, and what it guards */
extern pthread_mutex_t simr__mu;
extern uint64_t simr__next_client_id;
spool *simr__pool_by_name(const char *name);
spool *simr__pool_by_id(uint64_t id);

#endif
