/*
 * model_world.h - the state of a tests/model/test_model.c run: the open model
 * transactions, the committed model, counters; and the operations shared by
 * test_model.c (transactions, reads, writes, the oracle) and model_world.c
 * (reopen, index and table declarations, a full map, a stalled writer,
 * comparing the whole store with the model).
 */
#ifndef MRTX_MODEL_WORLD_H
#define MRTX_MODEL_WORLD_H

#include "model_ref.h"

typedef struct mt {
	mrtx_txn *h;
	int id, doomed, snap; /* snap: indexes declared at the first write, -1 none yet */
	int scanfail;         /* a scan of it failed and was read on */
	long begin_event;
	mop *ops;
	size_t nops, cops;
	obs *ob;
	size_t nob, cob;
	/* The committed state when the transaction's first store read was
	 * made: its snapshot on a store with views (LMDB), where a read-only
	 * transaction is serialized there, not at its commit. */
	cellv sdata;
	int snidx, shave;
} mt;

#define MAP_SMALL (8u << 20) /* the map until op_fill */

struct world {
	mrtx_db *db;
	char *path;
	unsigned long seed;
	cellv data;        /* committed data cells (tables 0..2) */
	cell recent[16];   /* cells written by the latest commits */
	int nrecent;
	int exists[NTAB], nidx, ibroken[NIDX];
	long events;       /* committed writing transactions and index declarations */
	long op, nops;
	mt *open[4]; /* up to 3, and verify_all's */
	int nopen, next_id, nverify, filled;
	long n_full, n_stall, n_locked;
	long n_commit, n_ok, n_conflict, n_get, n_scan, n_iscan, n_put, n_probe, n_reopen, n_run;
	long viol, cat_seen[32];
	char kinds[64][41]; /* violations reported in full, by their start */
	int nkinds;
	int stop, trace;
	char ring[48][200];
	int ringpos;
};
extern struct world W;

struct hitctx {
	obs *o;
	size_t stop;
	int bad;
};

/* test_model.c */
void view_of(cellv *out, const mt *t, size_t k); /* committed + t's first k writes */
void mt_reset(mt *t);
void mt_free(mt *t);
void check_lifetimes(const mt *t);
void got_conflict(mt *t, const char *what);
void committed(mt *t, const char *what); /* check its observations, apply it */
void drop_txn(int i);
void op_commit(int i);
mt *op_begin(void);
void op_write(mt *t, int kind);
int hit_cb(const mrtx_index_hit *h, void *p);

/* model_world.c */
void verify_all(const char *why);
void op_reopen(void);
void op_fill(void);
void op_stall(void);
void op_create_index(int d);
void op_create_table(void);

#endif
