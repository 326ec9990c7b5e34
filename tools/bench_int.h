/* bench_int.h - pieces of `mrtx bench` shared by its files. */
#ifndef MRTX_TOOL_BENCH_INT_H
#define MRTX_TOOL_BENCH_INT_H

#include <lmdb.h>

#include "bench.h"
#include "mrtx.h"

typedef struct bcfg {
	const char *dir;
	int quick, json;
	double phase_s; /* seconds per phase */
	int rounds;
	int seq;        /* fresh store counter */
} bcfg;

typedef struct bres {
	const char *name, *mode;
	double mrtx_ops, base_ops, target;
	int has_base, threads, procs;
	const char *unit;
} bres;

typedef struct fixture {
	mrtx_db *db;
	MDB_env *env;
	MDB_dbi dbi;
	char *mdir, *ldir;
	void *ext; /* the RADOS bench's own state (bench_rados.c) */
} fixture;

typedef int (*op_fn)(fixture *f, unsigned *seed, long i);

double now_s(void);
void die(const char *step, const char *msg) __attribute__((noreturn));
char *fresh_dir(bcfg *c, const char *kind);
unsigned env_flags(int durability);
void fixture_open(bcfg *c, fixture *f, int durability);
void fixture_close(fixture *f);
int mrtx_put_row(mrtx_db *db, const char *row, int cells);
void alternate(bcfg *c, fixture *f, op_fn m, op_fn b, bres *r);
int op_single_mrtx(fixture *f, unsigned *seed, long i);
int op_single_lmdb(fixture *f, unsigned *seed, long i);
int op_get_mrtx(fixture *f, unsigned *seed, long i);
int op_get_lmdb(fixture *f, unsigned *seed, long i);
double run_threads(fixture *f, int use_mrtx, int nthreads, double secs);
/* `mrtx bench rados://...`: returns the exit status. */
int bench_rados(bcfg *c, const char *uri, const char *only);
double run_procs(fixture *f, int use_mrtx, int durability, int nprocs, double secs);

#endif
