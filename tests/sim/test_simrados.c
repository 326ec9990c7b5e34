/*
 * test_simrados.c - the simulated RADOS cluster (storage/sim/simrados.c):
 * its librados semantics checked directly, then the real RADOS backend run
 * on it through the public API, then commits whose replies are lost.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rados/librados.h>

#include "mrtx.h"
#include "storage/sim/simrados.h"
#include "storage/store_test.h"
#include "txn/txn_test.h"
#include "txn/tail.h"
#include "txn/admin.h"
#include "txn/admin_test.h"
#include "lockcf/lock.h"
#include "recovery/recovery.h"

/* ------------------------------------------------------ shared steps */

typedef struct conn {
	rados_t c;
	rados_ioctx_t io;
} conn;

static void conn_open(conn *k, const char *pool)
{
	assert_int_equal(rados_create2(&k->c, "ceph", "client.admin", 0), 0);
	assert_int_equal(rados_conf_read_file(k->c, "/nonexistent/ceph.conf"), 0);
	assert_int_equal(rados_connect(k->c), 0);
	assert_int_equal(rados_ioctx_create(k->c, pool, &k->io), 0);
}

static void conn_close(conn *k)
{
	rados_ioctx_destroy(k->io);
	rados_shutdown(k->c);
}

/* Submit op on oid and wait: its completion's value. */
static int wrun(conn *k, rados_write_op_t op, const char *oid)
{
	rados_completion_t c;
	int r;

	assert_int_equal(rados_aio_create_completion2(NULL, NULL, &c), 0);
	assert_int_equal(rados_aio_write_op_operate(op, k->io, c, oid, NULL, 0), 0);
	rados_aio_wait_for_complete(c);
	r = rados_aio_get_return_value(c);
	rados_aio_release(c);
	rados_release_write_op(op);
	return r;
}

static void set1(rados_write_op_t op, const char *key, const char *val)
{
	const char *k[1] = { key }, *v[1] = { val };
	size_t kl[1] = { strlen(key) }, vl[1] = { strlen(val) };

	rados_write_op_omap_set2(op, k, v, kl, vl, 1);
}

static int put(conn *k, const char *oid, const char *key, const char *val)
{
	rados_write_op_t op = rados_create_write_op();

	set1(op, key, val);
	return wrun(k, op, oid);
}

/* get_vals2(start_after, prefix, max) on oid: the result, the keys joined
 * by ',' into out, *more. */
static int list(conn *k, const char *oid, const char *after, const char *prefix, uint64_t max,
                char *out, size_t outsz, int *more)
{
	rados_read_op_t op = rados_create_read_op();
	rados_completion_t c;
	rados_omap_iter_t it;
	unsigned char m = 7;
	int prval = 99, r;
	char *key, *val;
	size_t kl, vl;

	rados_read_op_omap_get_vals2(op, after, prefix, max, &it, &m, &prval);
	assert_int_equal(rados_aio_create_completion2(NULL, NULL, &c), 0);
	assert_int_equal(rados_aio_read_op_operate(op, k->io, c, oid, 0), 0);
	rados_aio_wait_for_complete(c);
	r = rados_aio_get_return_value(c);
	rados_aio_release(c);
	out[0] = '\0';
	while (rados_omap_get_next2(it, &key, &val, &kl, &vl) == 0 && key) {
		if (out[0])
			strncat(out, ",", outsz - strlen(out) - 1);
		strncat(out, key, kl < outsz - strlen(out) - 1 ? kl : outsz - strlen(out) - 1);
	}
	rados_omap_get_end(it);
	rados_release_read_op(op);
	if (r == 0) {
		assert_int_equal(prval, 0);
		*more = m;
	}
	return r;
}

static int setup(void **state)
{
	(void)state;
	simr_reset();
	assert_int_equal(simr_pool_create("p"), 0);
	return 0;
}

/* --------------------------------------------------- librados level */

static void test_pool_and_connect(void **state)
{
	rados_t c;
	rados_ioctx_t io;
	char buf[64];

	(void)state;
	assert_int_equal(simr_pool_create("p"), -EEXIST);
	assert_int_equal(rados_create2(&c, "ceph", "client.admin", 0), 0);
	assert_int_equal(rados_conf_read_file(c, NULL), 0);
	assert_int_equal(rados_conf_parse_env(c, NULL), 0);
	assert_int_equal(rados_conf_get(c, "mon_host", buf, sizeof(buf)), 0);
	assert_true(buf[0] != '\0');
	assert_int_equal(rados_conf_set(c, "mon_host", "v2:10.0.0.1:3300"), 0);
	assert_int_equal(rados_conf_get(c, "mon_host", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "v2:10.0.0.1:3300");
	assert_int_equal(rados_conf_set(c, "rados_osd_op_timeout", "5"), 0);
	assert_int_equal(rados_connect(c), 0);
	assert_int_equal(rados_ioctx_create(c, "nopool", &io), -ENOENT);
	assert_int_equal(rados_ioctx_create(c, "p", &io), 0);
	rados_ioctx_destroy(io);
	rados_shutdown(c);
}

static void test_guards(void **state)
{
	rados_write_op_t op;
	int pv = 99, pv2 = 99;
	char out[256];
	int more;
	conn k;

	(void)state;
	conn_open(&k, "p");
	/* a guard on a missing object without create: -ENOENT, nothing made */
	op = rados_create_write_op();
	rados_write_op_omap_cmp2(op, "L", LIBRADOS_CMPXATTR_OP_EQ, "", 1, 0, &pv);
	set1(op, "a", "1");
	assert_int_equal(wrun(&k, op, "o"), -ENOENT);
	assert_int_equal(pv, -ENOENT);
	assert_int_equal(list(&k, "o", "", "", 100, out, sizeof(out), &more), -ENOENT);
	/* with create(IDEMPOTENT): the absent guard holds (missing = empty) */
	op = rados_create_write_op();
	rados_write_op_create(op, LIBRADOS_CREATE_IDEMPOTENT, NULL);
	rados_write_op_omap_cmp2(op, "L", LIBRADOS_CMPXATTR_OP_EQ, "", 1, 0, &pv);
	rados_write_op_omap_cmp2(op, "G", LIBRADOS_CMPXATTR_OP_LT, "\0", 1, 1, &pv2);
	set1(op, "L", "x1");
	assert_int_equal(wrun(&k, op, "o"), 0);
	assert_int_equal(pv, 0);
	assert_int_equal(pv2, 0);
	/* a false guard cancels the whole op: sets and removals unapplied */
	op = rados_create_write_op();
	rados_write_op_create(op, LIBRADOS_CREATE_IDEMPOTENT, NULL);
	rados_write_op_omap_cmp2(op, "L", LIBRADOS_CMPXATTR_OP_EQ, "x", 1, 1, &pv); /* "x1" != "x" */
	set1(op, "b", "2");
	{
		const char *rk[1] = { "L" };
		size_t rl[1] = { 1 };

		rados_write_op_omap_rm_keys2(op, rk, rl, 1);
	}
	assert_int_equal(wrun(&k, op, "o"), -ECANCELED);
	assert_int_equal(pv, -ECANCELED);
	assert_int_equal(list(&k, "o", "", "", 100, out, sizeof(out), &more), 0);
	assert_string_equal(out, "L");
	/* LT and GT compare the stored value against the given one */
	op = rados_create_write_op();
	rados_write_op_omap_cmp2(op, "L", LIBRADOS_CMPXATTR_OP_LT, "x2", 1, 2, &pv);
	rados_write_op_omap_cmp2(op, "L", LIBRADOS_CMPXATTR_OP_GT, "x", 1, 1, &pv2);
	set1(op, "b", "2");
	assert_int_equal(wrun(&k, op, "o"), 0);
	op = rados_create_write_op();
	rados_write_op_omap_cmp2(op, "L", LIBRADOS_CMPXATTR_OP_LT, "x1", 1, 2, &pv);
	assert_int_equal(wrun(&k, op, "o"), -ECANCELED);
	/* any other operator is refused */
	op = rados_create_write_op();
	rados_write_op_omap_cmp2(op, "L", LIBRADOS_CMPXATTR_OP_NE, "y", 1, 1, &pv);
	assert_int_equal(wrun(&k, op, "o"), -EINVAL);
	/* create(EXCLUSIVE) on an existing object */
	op = rados_create_write_op();
	rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE, NULL);
	set1(op, "c", "3");
	assert_int_equal(wrun(&k, op, "o"), -EEXIST);
	op = rados_create_write_op();
	rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE, NULL);
	assert_int_equal(wrun(&k, op, "o2"), 0);
	/* removals on a missing object fail; exec is not simulated */
	op = rados_create_write_op();
	rados_write_op_omap_rm_range2(op, "a", 1, "z", 1);
	assert_int_equal(wrun(&k, op, "o3"), -ENOENT);
	op = rados_create_write_op();
	rados_write_op_exec(op, "lua", "eval_bufferlist", "", 0, &pv);
	assert_int_equal(wrun(&k, op, "o"), -EOPNOTSUPP);
	assert_int_equal(list(&k, "o", "", "", 100, out, sizeof(out), &more), 0);
	assert_string_equal(out, "L,b");
	conn_close(&k);
}

static void test_order_and_paging(void **state)
{
	const char *keys[] = { "k09", "k00", "k05", "k01", "k07", "k03", "k02", "k08", "k06",
	                       "k04", "j1", "k", "k\xff", "l" };
	char out[256];
	int more;
	conn k;

	(void)state;
	conn_open(&k, "p");
	for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++)
		assert_int_equal(put(&k, "o", keys[i], "v"), 0);
	/* memcmp order, a shorter prefix first */
	assert_int_equal(list(&k, "o", "", "", 100, out, sizeof(out), &more), 0);
	assert_string_equal(out, "j1,k,k00,k01,k02,k03,k04,k05,k06,k07,k08,k09,k\xff,l");
	assert_int_equal(more, 0);
	/* pages of a prefix, more set while a matching key was left out */
	assert_int_equal(list(&k, "o", "", "k0", 4, out, sizeof(out), &more), 0);
	assert_string_equal(out, "k00,k01,k02,k03");
	assert_int_equal(more, 1);
	assert_int_equal(list(&k, "o", "k03", "k0", 4, out, sizeof(out), &more), 0);
	assert_string_equal(out, "k04,k05,k06,k07");
	assert_int_equal(more, 1);
	assert_int_equal(list(&k, "o", "k07", "k0", 4, out, sizeof(out), &more), 0);
	assert_string_equal(out, "k08,k09");
	assert_int_equal(more, 0);
	/* a page filled exactly by the last matching keys: no more */
	assert_int_equal(list(&k, "o", "k07", "k0", 2, out, sizeof(out), &more), 0);
	assert_string_equal(out, "k08,k09");
	assert_int_equal(more, 0);
	/* start_after past the prefix; max 0 */
	assert_int_equal(list(&k, "o", "k09", "", 3, out, sizeof(out), &more), 0);
	assert_string_equal(out, "k\xff,l");
	assert_int_equal(list(&k, "o", "", "k", 0, out, sizeof(out), &more), 0);
	assert_string_equal(out, "");
	assert_int_equal(more, 1);
	/* get_vals_by_keys2: the present keys, in key order */
	{
		rados_read_op_t op = rados_create_read_op();
		rados_completion_t c;
		rados_omap_iter_t it;
		const char *want[3] = { "l", "nope", "j1" };
		size_t wl[3] = { 1, 4, 2 }, kl, vl;
		char *key, *val;
		int pv = 99;

		rados_read_op_omap_get_vals_by_keys2(op, want, 3, wl, &it, &pv);
		assert_int_equal(rados_aio_create_completion2(NULL, NULL, &c), 0);
		assert_int_equal(rados_aio_read_op_operate(op, k.io, c, "o", 0), 0);
		rados_aio_wait_for_complete(c);
		assert_int_equal(rados_aio_get_return_value(c), 0);
		assert_int_equal(pv, 0);
		assert_int_equal(rados_omap_iter_size(it), 2);
		assert_int_equal(rados_omap_get_next2(it, &key, &val, &kl, &vl), 0);
		assert_int_equal(kl, 2);
		assert_memory_equal(key, "j1", 2);
		assert_int_equal(rados_omap_get_next2(it, &key, &val, &kl, &vl), 0);
		assert_memory_equal(key, "l", 1);
		assert_int_equal(rados_omap_get_next2(it, &key, &val, &kl, &vl), 0);
		assert_null(key);
		rados_omap_get_end(it);
		rados_aio_release(c);
		rados_release_read_op(op);
	}
	/* rm_range2 removes [begin, end) */
	{
		rados_write_op_t op = rados_create_write_op();

		rados_write_op_omap_rm_range2(op, "k02", 3, "k08", 3);
		assert_int_equal(wrun(&k, op, "o"), 0);
	}
	assert_int_equal(list(&k, "o", "", "k0", 100, out, sizeof(out), &more), 0);
	assert_string_equal(out, "k00,k01,k08,k09");
	/* more than 1024 keys: one read returns at most 1024 */
	{
		const char *kk[1200];
		const char *vv[1200];
		size_t kl[1200], vl[1200];
		static char names[1200][8];
		rados_write_op_t op = rados_create_write_op();
		static char big[1200 * 8];

		for (int i = 0; i < 1200; i++) {
			snprintf(names[i], sizeof(names[i]), "m%04d", i);
			kk[i] = names[i];
			kl[i] = 5;
			vv[i] = "";
			vl[i] = 0;
		}
		rados_write_op_omap_set2(op, kk, vv, kl, vl, 1200);
		assert_int_equal(wrun(&k, op, "big"), 0);
		assert_int_equal(list(&k, "big", "", "", 5000, big, sizeof(big), &more), 0);
		assert_int_equal(strlen(big), 1024 * 6 - 1);
		assert_int_equal(more, 1);
	}
	conn_close(&k);
}

static void test_remove_and_listing(void **state)
{
	rados_list_ctx_t ctx;
	const char *e;
	char seen[128] = "";
	conn k;

	(void)state;
	conn_open(&k, "p");
	assert_int_equal(put(&k, "zeta", "a", "1"), 0);
	assert_int_equal(put(&k, "alpha", "a", "1"), 0);
	assert_int_equal(put(&k, "mid", "a", "1"), 0);
	assert_int_equal(rados_remove(k.io, "mid"), 0);
	assert_int_equal(rados_remove(k.io, "mid"), -ENOENT);
	assert_int_equal(rados_nobjects_list_open(k.io, &ctx), 0);
	while (rados_nobjects_list_next(ctx, &e, NULL, NULL) == 0) {
		strcat(seen, e);
		strcat(seen, " ");
	}
	rados_nobjects_list_close(ctx);
	assert_string_equal(seen, "alpha zeta ");
	/* a removed object is gone with its omap */
	assert_int_equal(put(&k, "mid", "b", "2"), 0);
	{
		char out[64];
		int more;

		assert_int_equal(list(&k, "mid", "", "", 10, out, sizeof(out), &more), 0);
		assert_string_equal(out, "b");
	}
	conn_close(&k);
}

/* A read of key in oid submitted and left in flight. */
typedef struct rflight {
	rados_read_op_t op;
	rados_completion_t c;
	rados_omap_iter_t it;
} rflight;

static void read_send(conn *k, rflight *f, const char *oid, const char *key)
{
	f->op = rados_create_read_op();
	rados_read_op_omap_get_vals2(f->op, "", key, 1, &f->it, NULL, NULL);
	assert_int_equal(rados_aio_create_completion2(NULL, NULL, &f->c), 0);
	assert_int_equal(rados_aio_read_op_operate(f->op, k->io, f->c, oid, 0), 0);
}

/* Wait for it: its result, and the value it read into v. */
static int read_end(rflight *f, char *v, size_t vn)
{
	char *kp, *vp;
	size_t kl, vl;
	int r;

	rados_aio_wait_for_complete(f->c);
	r = rados_aio_get_return_value(f->c);
	v[0] = '\0';
	if (r == 0 && rados_omap_get_next2(f->it, &kp, &vp, &kl, &vl) == 0 && kp && vl < vn) {
		memcpy(v, vp, vl);
		v[vl] = '\0';
	}
	rados_omap_get_end(f->it);
	rados_aio_release(f->c);
	rados_release_read_op(f->op);
	return r;
}

/* The value of key in oid as one read of k sees it now ("" when absent,
 * "ERR" when the read failed). */
static const char *value_of(conn *k, const char *oid, const char *key)
{
	static char v[64];
	rflight f;

	read_send(k, &f, oid, key);
	if (read_end(&f, v, sizeof(v)))
		strcpy(v, "ERR");
	return v;
}

/* A hook that holds every write: the test releases them. */
static simr_fate hold_all(void *arg, const simr_op_info *op)
{
	(void)arg;
	return op->write ? SIMR_HOLD : SIMR_APPLY;
}

static void test_hook_hold_and_order(void **state)
{
	simr_hook h = { hold_all, NULL, NULL };
	rados_completion_t c[3];
	rados_write_op_t op[3];
	uint64_t ids[4];
	char out[64];
	int more;
	conn a, b, r;

	(void)state;
	conn_open(&a, "p");
	conn_open(&b, "p");
	conn_open(&r, "p");
	assert_int_equal(put(&a, "o", "v", "0"), 0);
	simr_set_hook(&h);
	/* a: two writes to o (v=1 then v=2); b: one (v=3) */
	for (int i = 0; i < 3; i++) {
		char val[2] = { (char)('1' + i), 0 };

		op[i] = rados_create_write_op();
		set1(op[i], "v", val);
		assert_int_equal(rados_aio_create_completion2(NULL, NULL, &c[i]), 0);
		assert_int_equal(rados_aio_write_op_operate(op[i], i < 2 ? a.io : b.io, c[i], "o",
		                                            NULL, 0), 0);
		rados_release_write_op(op[i]); /* a held op is a copy */
	}
	assert_int_equal(simr_held(ids, 4), 3);
	/* a third client's read is not behind them: nothing applied yet */
	assert_string_equal(value_of(&r, "o", "v"), "0");
	/* b's op first; then a's second, which drags a's first ahead of it */
	assert_int_equal(simr_release(ids[2], SIMR_APPLY), 0);
	assert_int_equal(simr_release(ids[1], SIMR_LOSE_REPLY), 0);
	assert_int_equal(simr_held(NULL, 0), 0);
	assert_int_equal(simr_release(ids[1], SIMR_APPLY), -ENOENT);
	for (int i = 0; i < 3; i++) {
		rados_aio_wait_for_complete(c[i]);
		assert_int_equal(rados_aio_get_return_value(c[i]), i == 1 ? -ETIMEDOUT : 0);
		rados_aio_release(c[i]);
	}
	{
		rados_read_op_t rop = rados_create_read_op();
		rados_completion_t rc;
		rados_omap_iter_t it;
		char *key, *val;
		size_t kl, vl;

		rados_read_op_omap_get_vals2(rop, "", "v", 1, &it, NULL, NULL);
		assert_int_equal(rados_aio_create_completion2(NULL, NULL, &rc), 0);
		assert_int_equal(rados_aio_read_op_operate(rop, a.io, rc, "o", 0), 0);
		rados_aio_wait_for_complete(rc);
		assert_int_equal(rados_omap_get_next2(it, &key, &val, &kl, &vl), 0);
		assert_int_equal(vl, 1);
		assert_int_equal(val[0], '2'); /* b's 3, then a's 1, then a's 2 */
		rados_omap_get_end(it);
		rados_aio_release(rc);
		rados_release_read_op(rop);
	}
	/* a held op whose waiter gives up times out, and may still apply */
	op[0] = rados_create_write_op();
	set1(op[0], "w", "late");
	assert_int_equal(wrun(&a, op[0], "o"), -ETIMEDOUT);
	assert_int_equal(simr_held(ids, 4), 1);
	assert_int_equal(list(&r, "o", "", "w", 10, out, sizeof(out), &more), 0);
	assert_string_equal(out, "");
	assert_int_equal(simr_release(ids[0], SIMR_APPLY), 0);
	assert_int_equal(list(&a, "o", "", "w", 10, out, sizeof(out), &more), 0);
	assert_string_equal(out, "w");
	/* a dropped op never applies */
	op[0] = rados_create_write_op();
	set1(op[0], "x", "1");
	{
		rados_completion_t dc;

		assert_int_equal(rados_aio_create_completion2(NULL, NULL, &dc), 0);
		assert_int_equal(rados_aio_write_op_operate(op[0], a.io, dc, "o", NULL, 0), 0);
		assert_int_equal(simr_held(ids, 4), 1);
		assert_int_equal(simr_release(ids[0], SIMR_DROP), 0);
		rados_aio_wait_for_complete(dc);
		assert_int_equal(rados_aio_get_return_value(dc), -ETIMEDOUT);
		rados_aio_release(dc);
		rados_release_write_op(op[0]);
	}
	simr_set_hook(NULL);
	assert_int_equal(list(&a, "o", "", "x", 10, out, sizeof(out), &more), 0);
	assert_string_equal(out, "");
	conn_close(&a);
	conn_close(&b);
	conn_close(&r);
}

/* ------------------------------------------------ the real backend */

#define ADDR "rados://mrtx/sim1"


/* A hook that holds every read and applies every write. */
static simr_fate hold_reads(void *arg, const simr_op_info *op)
{
	(void)arg;
	return op->write ? SIMR_APPLY : SIMR_HOLD;
}

/*
 * Held reads: a read sees the objects as they are when it is released, so
 * a read sent before another client's write can return that write (what a
 * real cluster does when the read reaches the OSD late); a client's ops on
 * one object leave in order, reads and writes alike; a held read whose
 * caller gives up is dropped, and the ops held behind it only for order
 * move on.
 */
static void test_hook_hold_reads(void **state)
{
	simr_hook hr = { hold_reads, NULL, NULL }, hw = { hold_all, NULL, NULL };
	uint64_t ids[4];
	rflight f;
	char v[16];
	conn a, b;

	(void)state;
	conn_open(&a, "p");
	conn_open(&b, "p");
	assert_int_equal(put(&a, "o", "v", "0"), 0);
	/* a read sent before b's write, released after it, returns it */
	simr_set_hook(&hr);
	read_send(&a, &f, "o", "v");
	assert_int_equal(simr_held(ids, 4), 1);
	assert_int_equal(put(&b, "o", "v", "9"), 0);
	assert_int_equal(simr_release(ids[0], SIMR_APPLY), 0);
	assert_int_equal(read_end(&f, v, sizeof(v)), 0);
	assert_string_equal(v, "9");
	/* a held read whose caller gives up times out and is gone */
	read_send(&a, &f, "o", "v");
	assert_int_equal(simr_held(ids, 4), 1);
	assert_int_equal(read_end(&f, v, sizeof(v)), -ETIMEDOUT);
	assert_int_equal(simr_held(NULL, 0), 0);
	assert_int_equal(simr_release(ids[0], SIMR_APPLY), -ENOENT);
	/* a's read waits behind a's held write; b's read does not */
	simr_set_hook(&hw);
	{
		rados_write_op_t op = rados_create_write_op();
		rados_completion_t wc;

		set1(op, "v", "5");
		assert_int_equal(rados_aio_create_completion2(NULL, NULL, &wc), 0);
		assert_int_equal(rados_aio_write_op_operate(op, a.io, wc, "o", NULL, 0), 0);
		rados_release_write_op(op);
		read_send(&a, &f, "o", "v");
		assert_int_equal(simr_held(ids, 4), 2);
		assert_string_equal(value_of(&b, "o", "v"), "9");
		assert_int_equal(simr_release(ids[0], SIMR_APPLY), 0); /* the read follows */
		assert_int_equal(simr_held(NULL, 0), 0);
		assert_int_equal(read_end(&f, v, sizeof(v)), 0);
		assert_string_equal(v, "5");
		rados_aio_wait_for_complete(wc);
		assert_int_equal(rados_aio_get_return_value(wc), 0);
		rados_aio_release(wc);
	}
	/* a write behind a held read of its client moves on when the read is
	 * given up */
	simr_set_hook(&hr);
	{
		rados_write_op_t op = rados_create_write_op();
		rados_completion_t wc;

		read_send(&a, &f, "o", "v");
		set1(op, "v", "7");
		assert_int_equal(rados_aio_create_completion2(NULL, NULL, &wc), 0);
		assert_int_equal(rados_aio_write_op_operate(op, a.io, wc, "o", NULL, 0), 0);
		rados_release_write_op(op);
		assert_int_equal(simr_held(NULL, 0), 2);
		assert_int_equal(read_end(&f, v, sizeof(v)), -ETIMEDOUT);
		assert_int_equal(simr_held(NULL, 0), 0);
		rados_aio_wait_for_complete(wc);
		assert_int_equal(rados_aio_get_return_value(wc), 0);
		rados_aio_release(wc);
	}
	simr_set_hook(NULL);
	assert_string_equal(value_of(&b, "o", "v"), "7");
	conn_close(&a);
	conn_close(&b);
}
static mrtx_db *open_db(const char *addr)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	mrtx_db *db = NULL;

	o.durability = MRTX_NOSYNC;
	o.create = MRTX_CREATE_IF_MISSING;
	/* no heartbeat or tail thread: every write comes from the calling
	 * thread, in an order the machine's speed does not change */
	if (mrtx__open_knobs(&db, addr, &o, &(mrtx__knobs){ 0, 0, 1 }) != MRTX_OK) {
		fprintf(stderr, "mrtx_open(%s): %s\n", addr, mrtx_errmsg());
		return NULL;
	}
	return db;
}

static int setup_store(void **state)
{
	(void)state;
	simr_reset();
	assert_int_equal(simr_pool_create("mrtx"), 0);
	return 0;
}

static int get_str(mrtx_db *db, const char *row, char *out, size_t n)
{
	mrtx_txn *t;
	mrtx_bytes v;
	int rc;

	if ((rc = mrtx_begin(db, &t)))
		return rc;
	rc = mrtx_get(t, "t", MRTX_CSTR(row), "f", MRTX_CSTR("q"), &v);
	if (rc == MRTX_OK)
		snprintf(out, n, "%.*s", (int)v.size, (const char *)v.data);
	mrtx_abort(t);
	return rc;
}

static int put3(mrtx_db *db, const char *val)
{
	static const char *rows[3] = { "r1", "r2", "r3" };
	mrtx_txn *t;
	int rc;

	if ((rc = mrtx_begin(db, &t)))
		return rc;
	for (int i = 0; i < 3; i++)
		if ((rc = mrtx_put(t, "t", MRTX_CSTR(rows[i]), "f", MRTX_CSTR("q"), MRTX_CSTR(val)))) {
			mrtx_abort(t);
			return rc;
		}
	return mrtx_commit(t);
}

static void test_store_on_sim(void **state)
{
	const char *fam[1] = { "f" };
	mrtx_db *db, *db2;
	mrtx_txn *t1, *t2;
	mrtx_scanner *sc;
	mrtx_scan_spec spec = { 0 };
	mrtx_cell cell;
	mrtx_bytes v;
	char buf[32];
	int n = 0, rc;

	(void)state;
	/* no pool: the backend says so */
	{
		mrtx_db *none = NULL;
		mrtx_options o = MRTX_OPTIONS_INIT;

		assert_int_not_equal(mrtx_open(&none, "rados://nopool/x", &o), MRTX_OK);
	}
	assert_non_null(db = open_db(ADDR));
	assert_int_equal(mrtx_create_table(db, "t", fam, 1), MRTX_OK);
	assert_int_equal(put3(db, "one"), MRTX_OK);
	assert_int_equal(get_str(db, "r2", buf, sizeof(buf)), MRTX_OK);
	assert_string_equal(buf, "one");
	/* a scan sees the three rows in order */
	assert_int_equal(mrtx_begin(db, &t1), MRTX_OK);
	spec.table = "t";
	assert_int_equal(mrtx_scan_open(t1, &spec, &sc), MRTX_OK);
	while ((rc = mrtx_scan_next(sc, &cell)) == MRTX_OK) {
		char want[3] = { 'r', (char)('1' + n), 0 };

		assert_int_equal(cell.row.size, 2);
		assert_memory_equal(cell.row.data, want, 2);
		assert_int_equal(cell.value.size, 3);
		n++;
	}
	assert_int_equal(rc, MRTX_NOTFOUND);
	assert_int_equal(n, 3);
	mrtx_scan_close(sc);
	mrtx_abort(t1);
	/* a second handle sees the commit; two read-modify-writes of one row
	 * from two handles: the second to commit conflicts */
	assert_non_null(db2 = open_db(ADDR));
	assert_int_equal(get_str(db2, "r3", buf, sizeof(buf)), MRTX_OK);
	assert_string_equal(buf, "one");
	assert_int_equal(mrtx_begin(db, &t1), MRTX_OK);
	assert_int_equal(mrtx_begin(db2, &t2), MRTX_OK);
	assert_int_equal(mrtx_get(t1, "t", MRTX_CSTR("r1"), "f", MRTX_CSTR("q"), &v), MRTX_OK);
	assert_int_equal(mrtx_get(t2, "t", MRTX_CSTR("r1"), "f", MRTX_CSTR("q"), &v), MRTX_OK);
	assert_int_equal(mrtx_put(t1, "t", MRTX_CSTR("r1"), "f", MRTX_CSTR("q"), MRTX_CSTR("a")),
	                 MRTX_OK);
	assert_int_equal(mrtx_put(t2, "t", MRTX_CSTR("r1"), "f", MRTX_CSTR("q"), MRTX_CSTR("b")),
	                 MRTX_OK);
	assert_int_equal(mrtx_commit(t1), MRTX_OK);
	assert_int_equal(mrtx_commit(t2), MRTX_CONFLICT);
	assert_int_equal(get_str(db2, "r1", buf, sizeof(buf)), MRTX_OK);
	assert_string_equal(buf, "a");
	mrtx_close(db2);
	mrtx_close(db);
}

/* ------------------------------------------------------ dropping an index */

static int count_idx(const mrtx_index_spec *s, void *payload)
{
	(void)s;
	++*(int *)payload;
	return 0;
}

static int count_hit(const mrtx_index_hit *h, void *payload)
{
	(void)h;
	++*(int *)payload;
	return 0;
}

static int lookup_n(mrtx_db *db, const char *value, int *n)
{
	mrtx_txn *t;
	int rc;

	*n = 0;
	if ((rc = mrtx_begin(db, &t)))
		return rc;
	rc = mrtx_index_lookup(t, "by_q", MRTX_CSTR(value), count_hit, n);
	mrtx_abort(t);
	return rc;
}

/* mrtx_drop_index on RADOS: the declaration goes in one metadata write
 * (the generation spreads to the tablets, so a handle holding the old
 * declarations conflicts once), then the index table is dropped; the
 * source table is then free to drop. */
static void test_drop_index_on_sim(void **state)
{
	const char *fam[1] = { "f" };
	mrtx_index_spec s = { MRTX_INDEX_SPEC_VERSION, "by_q", "t", "f", { "q", 1 }, "t_by_q",
		              NULL, 0 };
	mrtx_db *db, *db2;
	int n = 0;

	(void)state;
	assert_non_null(db = open_db(ADDR));
	assert_int_equal(mrtx_create_table(db, "t", fam, 1), MRTX_OK);
	assert_int_equal(mrtx_create_index(db, &s), MRTX_OK);
	assert_non_null(db2 = open_db(ADDR));
	assert_int_equal(put3(db2, "one"), MRTX_OK); /* db2 caches the declaration */
	assert_int_equal(lookup_n(db, "one", &n), MRTX_OK);
	assert_int_equal(n, 3);
	assert_int_equal(mrtx_drop_index(db, "by_q"), MRTX_OK);
	n = 0;
	assert_int_equal(mrtx_indexes(db2, count_idx, &n), MRTX_OK);
	assert_int_equal(n, 0);
	assert_int_equal(lookup_n(db2, "one", &n), MRTX_EINVAL);
	/* db2's declarations are stale: one conflict, then no maintenance */
	assert_int_equal(put3(db2, "two"), MRTX_CONFLICT);
	assert_int_equal(put3(db2, "two"), MRTX_OK);
	/* the index table is gone, on both handles */
	{
		const char *const *fams;
		size_t nf;

		assert_int_equal(mrtx_table_families(db, "t_by_q", &fams, &nf), MRTX_ENOTABLE);
		assert_int_equal(mrtx_table_families(db2, "t_by_q", &fams, &nf), MRTX_ENOTABLE);
	}
	assert_int_equal(mrtx_drop_index(db, "by_q"), MRTX_EINVAL);
	/* and the source table may be dropped now */
	assert_int_equal(mrtx_drop_table(db, "t"), MRTX_OK);
	mrtx_close(db2);
	mrtx_close(db);
}

/* ------------------------------------------------------ lost replies */

/* Lose the reply of the write numbered `lose` (1-based) among those the
 * committing thread makes while `armed` (the handle's heartbeat and tail
 * threads write on their own clock: their writes are neither counted nor
 * lost, so the numbering is the same on every run). */
typedef struct loser {
	int armed;
	unsigned writes, lose;
	pthread_t self;
} loser;

static simr_fate lose_nth(void *arg, const simr_op_info *op)
{
	loser *l = arg;

	if (!l->armed || !op->write || !pthread_equal(pthread_self(), l->self))
		return SIMR_APPLY;
	if (getenv("SIMR_TRACE"))
		fprintf(stderr, "  write %u: client %llu %s/%s\n", l->writes + 1,
		        (unsigned long long)op->client, op->pool, op->oid);
	return ++l->writes == l->lose ? SIMR_LOSE_REPLY : SIMR_APPLY;
}

/* Reads r1..r3 with a fresh handle: 1 all "new", 0 all "old", -1 mixed. */
static int all_or_nothing(void)
{
	mrtx_db *db = open_db(ADDR);
	int nnew = 0, nold = 0;
	char buf[32];

	assert_non_null(db);
	for (int i = 0; i < 3; i++) {
		char row[3] = { 'r', (char)('1' + i), 0 };
		int rc;

		for (int tries = 0; (rc = get_str(db, row, buf, sizeof(buf))) == MRTX_ELOCKED &&
		                    tries < 1000; tries++)
			;
		assert_int_equal(rc, MRTX_OK);
		nnew += strcmp(buf, "new") == 0;
		nold += strcmp(buf, "old") == 0;
	}
	mrtx_close(db);
	return nnew == 3 ? 1 : nold == 3 ? 0 : -1;
}

/* Lose each write's reply of a three-row commit in turn: rows in one
 * tablet (one object), or `split` into three tablets (three objects). */
static void lost_reply_sweep(int split)
{
	const char *fam[1] = { "f" };
	const mrtx_bytes splits[2] = { MRTX_CSTR("r2"), MRTX_CSTR("r3") };
	unsigned total = 0, unknown = 0;
	for (unsigned lose = 1;; lose++) {
		loser l = { 0, 0, lose, pthread_self() };
		simr_hook h = { lose_nth, NULL, &l };
		mrtx_db *db;
		int rc, seen;

		setup_store(NULL);
		simr_set_hook(&h);
		assert_non_null(db = open_db(ADDR));
		assert_int_equal(mrtx_create_table_split(db, "t", fam, 1, splits, split ? 2 : 0),
		                 MRTX_OK);
		assert_int_equal(put3(db, "old"), MRTX_OK);
		l.armed = 1;
		rc = put3(db, "new");
		l.armed = 0;
		mrtx_close(db);
		if (lose == 1)
			total = l.writes; /* how many writes the commit makes */
		seen = all_or_nothing();
		fprintf(stderr, "%s, reply of write %u of %u lost: commit %s, reader "
		        "finds it %s\n", split ? "3 tablets" : "1 tablet", lose, total, mrtx_strerror(rc),
		        seen == 1 ? "committed" : seen == 0 ? "absent" : "MIXED");
		assert_int_not_equal(seen, -1);
		if (rc == MRTX_OK)
			assert_int_equal(seen, 1);
		if (rc == MRTX_CONFLICT || rc == MRTX_ELOCKED)
			assert_int_equal(seen, 0);
		unknown += rc == MRTX_EUNKNOWN;
		if (lose >= total)
			break;
	}
	assert_true(total >= 1);
	assert_true(unknown >= 1);
}

static void test_lost_reply_one_tablet(void **state)
{
	(void)state;
	lost_reply_sweep(0);
}

static void test_lost_reply_three_tablets(void **state)
{
	(void)state;
	lost_reply_sweep(1);
}

/* ----------------------------------------- a blind transaction's start */

/* Put row's cell f:q = val, in table t. */
static int put1(mrtx_txn *t, const char *row, const char *val)
{
	return mrtx_put(t, "t", MRTX_CSTR(row), "f", MRTX_CSTR("q"), MRTX_CSTR(val));
}

/* The operations the test's thread submits while `armed`, in order; a read
 * of the oracle (sim1.ts) is dropped (its completion times out) when
 * drop_ts_read is set. */
typedef struct oplog {
	int armed, drop_ts_read;
	int hold_ts_read; /* hold reads of the oracle until waited for (log_wait) */
	pthread_t self;
	int n;
	struct {
		int write;
		char oid[64];
	} op[32];
} oplog;

static simr_fate log_op(void *arg, const simr_op_info *op)
{
	oplog *l = arg;
	int ts = strcmp(op->oid, "sim1.ts") == 0;

	if (!l->armed || !pthread_equal(pthread_self(), l->self))
		return SIMR_APPLY;
	if (l->n < 32) {
		l->op[l->n].write = op->write;
		snprintf(l->op[l->n].oid, sizeof(l->op[l->n].oid), "%s", op->oid);
		l->n++;
	}
	if (ts && !op->write && l->hold_ts_read)
		return SIMR_HOLD;
	return ts && !op->write && l->drop_ts_read ? SIMR_DROP : SIMR_APPLY;
}

/* A held op reaches the OSD when its caller waits for it: as late as it
 * can while the caller still gets its reply. */
static void log_wait(void *arg, const simr_op_info *op)
{
	(void)arg;
	assert_int_equal(simr_release(op->id, SIMR_APPLY), 0);
}

/* Among ops [from, l->n): ts writes to the oracle, other writes elsewhere. */
static void expect_writes(const oplog *l, int from, int ts, int other)
{
	int nts = 0, nother = 0;

	for (int i = from; i < l->n; i++)
		if (l->op[i].write)
			++*(strcmp(l->op[i].oid, "sim1.ts") == 0 ? &nts : &nother);
	assert_int_equal(nts, ts);
	assert_int_equal(nother, other);
}

/* Commit t while l records: the index of the commit's first op, a write
 * (logging stops). */
static int commit_logged(oplog *l, mrtx_txn *t)
{
	int at = l->n;

	assert_int_equal(mrtx_commit(t), MRTX_OK);
	l->armed = 0;
	assert_true(l->n > at);
	assert_int_equal(l->op[at].write, 1);
	return at;
}

/* row reads want. */
static void expect_row(mrtx_db *db, const char *row, const char *want)
{
	char buf[32];

	assert_int_equal(get_str(db, row, buf, sizeof(buf)), MRTX_OK);
	assert_string_equal(buf, want);
}

/* A blind transaction reads the oracle at its first write, for its start
 * timestamp, and a commit to its rows after that is a conflict (DESIGN
 * §9.1, I15); a one-phase commit then reserves its stamp once and writes
 * once, a two-phase one reserves after its prewrites.  A start read that
 * fails fails the put, and nothing is written.  (The read is awaited by
 * the put: sent without waiting and awaited at commit, it could land
 * after another client's commit to the row, which would then be missed.) */
static void test_blind_start(void **state)
{
	const char *fam[1] = { "f" };
	const mrtx_bytes splits[1] = { MRTX_CSTR("r3") };
	oplog l;
	simr_hook h = { log_op, NULL, &l };
	mrtx_db *db;
	mrtx_txn *t;
	int at;

	(void)state;
	memset(&l, 0, sizeof(l));
	l.self = pthread_self();
	simr_set_hook(&h);
	assert_non_null(db = open_db(ADDR));
	assert_int_equal(mrtx_create_table_split(db, "t", fam, 1, splits, 1), MRTX_OK);
	assert_int_equal(put3(db, "old"), MRTX_OK);

	/* one row, and two rows of one tablet: a read of the oracle at the
	 * first put, then one reservation, then the tablet's write */
	for (int rows = 1; rows <= 2; rows++) {
		l.n = 0;
		l.armed = 1;
		assert_int_equal(mrtx_begin(db, &t), MRTX_OK);
		assert_int_equal(put1(t, "r1", "one"), MRTX_OK);
		if (rows == 2)
			assert_int_equal(put1(t, "r2", "one"), MRTX_OK);
		assert_int_equal(l.n, 1);
		assert_int_equal(l.op[0].write, 0);
		assert_string_equal(l.op[0].oid, "sim1.ts");
		at = commit_logged(&l, t);
		assert_string_equal(l.op[at].oid, "sim1.ts"); /* the reservation first */
		expect_writes(&l, at, 1, 1);
		expect_row(db, "r1", "one");
	}

	/* the start read times out: the put fails, and nothing is written */
	l.n = 0;
	l.armed = 1;
	l.drop_ts_read = 1;
	assert_int_equal(mrtx_begin(db, &t), MRTX_OK);
	assert_int_equal(put1(t, "r1", "lost"), MRTX_ESTORE);
	mrtx_abort(t);
	l.armed = 0;
	l.drop_ts_read = 0;
	expect_writes(&l, 0, 0, 0);
	expect_row(db, "r1", "one");

	/* a commit to the row from another handle after the first write is a
	 * conflict (one row, then two rows of one tablet); then the same with
	 * the start read reaching the oracle only when the put waits for it
	 * (held): it must be waited for before the put returns -- a read left
	 * in flight until the commit would return the other commit's stamp,
	 * and the window would open after it */
	h.wait = log_wait;
	simr_set_hook(&h);
	for (int k = 0; k < 4; k++) {
		int rows = 1 + k % 2, held = k / 2;
		const char *mine = held ? "held" : "late", *theirs = held ? "second" : "first";
		mrtx_db *db2;
		mrtx_txn *t2;

		assert_non_null(db2 = open_db(ADDR));
		assert_int_equal(mrtx_begin(db, &t), MRTX_OK);
		l.armed = l.hold_ts_read = held;
		assert_int_equal(put1(t, "r2", mine), MRTX_OK);
		if (rows == 2)
			assert_int_equal(put1(t, "r1", mine), MRTX_OK);
		l.armed = l.hold_ts_read = 0;
		assert_int_equal(mrtx_begin(db2, &t2), MRTX_OK);
		assert_int_equal(put1(t2, "r2", theirs), MRTX_OK);
		assert_int_equal(mrtx_commit(t2), MRTX_OK);
		assert_int_equal(mrtx_commit(t), MRTX_CONFLICT);
		expect_row(db, "r2", theirs);
		mrtx_close(db2);
	}
	assert_int_equal(simr_held(NULL, 0), 0);
	h.wait = NULL;
	simr_set_hook(&h);

	/* rows in two tablets: two phases, the stamp after the prewrites */
	l.n = 0;
	l.armed = 1;
	assert_int_equal(mrtx_begin(db, &t), MRTX_OK);
	assert_int_equal(put1(t, "r1", "two"), MRTX_OK);
	assert_int_equal(put1(t, "r3", "two"), MRTX_OK);
	at = commit_logged(&l, t);
	assert_string_not_equal(l.op[at].oid, "sim1.ts"); /* a prewrite first */
	expect_row(db, "r3", "two");
	simr_set_hook(NULL);
	mrtx_close(db);
}

/* ------------------------------------------ trims off the commit's path */

/* Reads of the table's tablet (sim1.1.1), by the test's thread and by the
 * handle's own threads. */
typedef struct trimlog {
	pthread_t self;
	unsigned mine, theirs;
} trimlog;

static simr_fate count_tablet_reads(void *arg, const simr_op_info *op)
{
	trimlog *l = arg;

	if (!op->write && strcmp(op->oid, "sim1.1.1") == 0)
		++*(pthread_equal(pthread_self(), l->self) ? &l->mine : &l->theirs);
	return SIMR_APPLY;
}

/* A commit that trims the rows it wrote (one in eight, txn.c trim_written)
 * hands the collection steps to the handle's tail thread: the committing
 * thread reads no tablet in sixteen blind one-row commits, and mrtx_flush
 * waits until the thread has made them (each reads the row's versions). */
static void test_trims_leave_the_commit(void **state)
{
	const char *fam[1] = { "f" };
	mrtx_options o = MRTX_OPTIONS_INIT;
	trimlog l = { pthread_self(), 0, 0 };
	simr_hook h = { count_tablet_reads, NULL, &l };
	mrtx_db *db = NULL;

	(void)state;
	o.durability = MRTX_NOSYNC;
	o.create = MRTX_CREATE_IF_MISSING;
	/* (with its threads; no tablet split, whose row count a write makes
	 * now and then, at random, is a read of the tablet too) */
	assert_int_equal(mrtx_open(&db, ADDR "?split_rows=0", &o), MRTX_OK);
	assert_int_equal(mrtx_create_table(db, "t", fam, 1), MRTX_OK);
	atomic_store(&store__trim_lag_us, 1);
	simr_set_hook(&h);
	for (int i = 0; i < 16; i++) {
		mrtx_txn *t;

		assert_int_equal(mrtx_begin(db, &t), MRTX_OK);
		assert_int_equal(put1(t, "hot", i & 1 ? "odd" : "even"), MRTX_OK);
		assert_int_equal(mrtx_commit(t), MRTX_OK);
	}
	assert_int_equal(l.mine, 0);
	assert_int_equal(mrtx_flush(db), MRTX_OK);
	assert_true(l.theirs >= 2);
	assert_int_equal(l.mine, 0);
	simr_set_hook(NULL);
	atomic_store(&store__trim_lag_us, STORE_TRIM_LAG_US);
	mrtx_close(db);
}

/* ------------------------------------ a malformed oracle and the start */

/* The value of key "ts" on object oid through a connection of its own:
 * its size (-1 when absent or unreadable). */
static int ts_size(const char *oid)
{
	const char *key = "ts";
	size_t klen = 2;
	rados_read_op_t op = rados_create_read_op();
	rados_completion_t c;
	rados_omap_iter_t it = NULL;
	int prval = 0, r, n = -1;
	char *k, *v;
	size_t kl, vl;
	conn a;

	conn_open(&a, "mrtx");
	rados_read_op_omap_get_vals_by_keys2(op, &key, 1, &klen, &it, &prval);
	assert_int_equal(rados_aio_create_completion2(NULL, NULL, &c), 0);
	assert_int_equal(rados_aio_read_op_operate(op, a.io, c, oid, 0), 0);
	rados_aio_wait_for_complete(c);
	r = rados_aio_get_return_value(c);
	rados_aio_release(c);
	while (r == 0 && it && rados_omap_get_next2(it, &k, &v, &kl, &vl) == 0 && k)
		n = (int)vl;
	if (it)
		rados_omap_get_end(it);
	rados_release_read_op(op);
	conn_close(&a);
	return n;
}

/* One transaction putting row blind, committed: what the put or the commit
 * returned. */
static int blind_once(mrtx_db *db, const char *row, const char *val)
{
	mrtx_txn *t;
	int rc;

	if ((rc = mrtx_begin(db, &t)))
		return rc;
	if ((rc = put1(t, row, val))) {
		mrtx_abort(t);
		return rc;
	}
	return mrtx_commit(t);
}

/* A malformed oracle value (nine zero bytes: a truncated one) is reported
 * to the blind writer that met it, which writes nothing: not the oracle
 * either, so the value stays for the next caller to meet and report. */
static void test_malformed_oracle_blind(void **state)
{
	const char *fam[1] = { "f" };
	static const char zeros[9] = { 0 };
	const char *k[1] = { "ts" }, *v[1] = { zeros };
	size_t kl[1] = { 2 }, vl[1] = { sizeof(zeros) };
	rados_write_op_t op;
	mrtx_db *db;
	conn a;

	(void)state;
	assert_non_null(db = open_db(ADDR));
	assert_int_equal(mrtx_create_table(db, "t", fam, 1), MRTX_OK);
	assert_int_equal(put3(db, "old"), MRTX_OK);
	assert_int_equal(ts_size("sim1.ts"), 10);

	conn_open(&a, "mrtx");
	op = rados_create_write_op();
	rados_write_op_omap_set2(op, k, v, kl, vl, 1);
	assert_int_equal(wrun(&a, op, "sim1.ts"), 0);
	conn_close(&a);
	assert_int_equal(ts_size("sim1.ts"), 9);

	/* one row written blind: ECORRUPT from the put's start read */
	assert_int_equal(blind_once(db, "r1", "new"), MRTX_ECORRUPT);
	/* nothing written: neither the row nor the oracle's value, so the
	 * next blind writer, on a fresh handle, meets it too */
	assert_int_equal(ts_size("sim1.ts"), 9);
	mrtx_close(db);
	assert_non_null(db = open_db(ADDR));
	assert_int_equal(blind_once(db, "r1", "new"), MRTX_ECORRUPT);
	assert_int_equal(ts_size("sim1.ts"), 9);
	mrtx_close(db);
}

/* --------------------------------- a trim pass and the handle's close */

typedef struct trimgate {
	pthread_t self;
	unsigned long quits0;
	_Atomic int reads, go, in2, closing, after;
} trimgate;

static simr_fate gate_tablet_reads(void *arg, const simr_op_info *op)
{
	trimgate *g = arg;
	int n;

	if (op->write || strcmp(op->oid, "sim1.1.1") != 0 || pthread_equal(pthread_self(), g->self))
		return SIMR_APPLY;
	n = atomic_fetch_add(&g->reads, 1) + 1;
	if (atomic_load(&g->closing))
		atomic_fetch_add(&g->after, 1);
	if (n == 1)
		while (!atomic_load(&g->go))
			usleep(1000);
	if (n == 20) { /* (a later pass: the first took a few at most) */
		atomic_store(&g->in2, 1);
		while (atomic_load(&mrtx__hb_quits) == g->quits0)
			usleep(1000); /* (until the close has asked the worker to quit) */
	}
	return SIMR_APPLY;
}

/* mrtx_close drops the queued trims: the worker finishes the few of its
 * pass (TAIL_TRIMS_PASS) and stops, so a close never waits out hundreds
 * of them.  The worker is held inside one trim's read until the close has
 * asked it to quit; after that read it may run the rest of its pass (one
 * read a trim: the rows have one version each), and nothing more.  Where
 * that read falls in its pass depends on how many trims the first pass
 * found queued, so up to TAIL_TRIMS_PASS - 1 reads may follow it. */
static void test_close_waits_out_a_trim_pass(void **state)
{
	const char *fam[1] = { "f" };
	mrtx_options o = MRTX_OPTIONS_INIT;
	trimgate g;
	simr_hook h = { gate_tablet_reads, NULL, &g };
	mrtx_db *db = NULL;

	(void)state;
	memset(&g, 0, sizeof(g));
	g.self = pthread_self();
	g.quits0 = atomic_load(&mrtx__hb_quits);
	o.durability = MRTX_NOSYNC;
	o.create = MRTX_CREATE_IF_MISSING;
	assert_int_equal(mrtx_open(&db, ADDR, &o), MRTX_OK);
	assert_int_equal(mrtx_create_table(db, "t", fam, 1), MRTX_OK);
	atomic_store(&store__trim_lag_us, 1);
	simr_set_hook(&h);
	for (int i = 0; i < 8 * 300; i++) {
		mrtx_txn *t;
		char row[16];

		snprintf(row, sizeof(row), "r%d", i);
		assert_int_equal(mrtx_begin(db, &t), MRTX_OK);
		assert_int_equal(mrtx_put(t, "t", MRTX_CSTR(row), "f", MRTX_CSTR("q"),
		                          MRTX_CSTR("v")), MRTX_OK);
		assert_int_equal(mrtx_commit(t), MRTX_OK);
	}
	atomic_store(&g.go, 1);
	while (!atomic_load(&g.in2))
		usleep(1000);
	atomic_store(&g.closing, 1);
	mrtx_close(db); /* (asks the worker to quit) */
	simr_set_hook(NULL);
	atomic_store(&store__trim_lag_us, STORE_TRIM_LAG_US);
	fprintf(stderr, "tablet reads by the worker after mrtx_close began: %d\n",
	        atomic_load(&g.after));
	assert_true(atomic_load(&g.after) <= TAIL_TRIMS_PASS - 1);
}

/* ------------------------------------------- mrtx_flush across a fork */

typedef struct forkflush {
	mrtx_db *db;
	pthread_barrier_t b;
	_Atomic int stop, done;
} forkflush;

static void *flush_rounds(void *arg)
{
	forkflush *ff = arg;

	for (;;) {
		pthread_barrier_wait(&ff->b);
		if (atomic_load(&ff->stop))
			return NULL;
		(void)mrtx_flush(ff->db);
		atomic_store(&ff->done, 1);
	}
}

/* A thread waits in mrtx_flush for a queued trim while another forks: the
 * fork stops the tail thread, which drops the trim; the flush must
 * return (nothing is pending any more), not sleep on. */
static void test_flush_across_fork(void **state)
{
	const char *fam[1] = { "f" };
	mrtx_options o = MRTX_OPTIONS_INIT;
	static forkflush ff;
	pthread_t th;
	int hung = 0;

	(void)state;
	memset(&ff, 0, sizeof(ff));
	o.durability = MRTX_NOSYNC;
	o.create = MRTX_CREATE_IF_MISSING;
	assert_int_equal(mrtx_open(&ff.db, ADDR, &o), MRTX_OK);
	assert_int_equal(mrtx_create_table(ff.db, "t", fam, 1), MRTX_OK);
	atomic_store(&store__trim_lag_us, 1);
	pthread_barrier_init(&ff.b, NULL, 2);
	assert_int_equal(pthread_create(&th, NULL, flush_rounds, &ff), 0);
	for (int i = 0; i < 8 * 200 && !hung; i++) {
		mrtx_txn *t;
		char row[16];
		pid_t p;

		snprintf(row, sizeof(row), "r%d", i % 64);
		assert_int_equal(mrtx_begin(ff.db, &t), MRTX_OK);
		assert_int_equal(mrtx_put(t, "t", MRTX_CSTR(row), "f", MRTX_CSTR("q"),
		                          MRTX_CSTR("v")), MRTX_OK);
		assert_int_equal(mrtx_commit(t), MRTX_OK);
		if (i % 8) /* (one commit in eight queues a trim) */
			continue;
		atomic_store(&ff.done, 0);
		pthread_barrier_wait(&ff.b);
		if ((p = fork()) == 0)
			_exit(0);
		assert_true(p > 0);
		waitpid(p, NULL, 0);
		for (int w = 0; w < 10000 && !atomic_load(&ff.done); w++)
			usleep(1000);
		hung = !atomic_load(&ff.done);
		if (hung)
			fprintf(stderr, "mrtx_flush still waiting 10 s after the fork, round %d\n",
			        i / 8 + 1);
	}
	atomic_store(&store__trim_lag_us, STORE_TRIM_LAG_US);
	assert_false(hung); /* (else the flushing thread is left asleep) */
	atomic_store(&ff.stop, 1);
	pthread_barrier_wait(&ff.b);
	pthread_join(th, NULL);
	mrtx_close(ff.db);
}

/* ---------------------------------- recovery across a table dropped */

/* Plant lock record r at (table, row), which holds none yet. */
static void plant(store *st, const char *table, const char *row, const lock_rec *r)
{
	const store_table *t;
	store_op op;
	mrtx_arena a;

	arena_init(&a);
	assert_int_equal(store_table_find(st, table, &t), 0);
	memset(&op, 0, sizeof(op));
	op.table = t;
	op.row = MRTX_CSTR(row);
	op.cond.absent = 1;
	assert_int_equal(lock_encode(r, &a, &op.new_lock), 0);
	assert_int_equal(store_write_rows(st, &op, 1), 0);
	assert_int_equal(op.result, 0);
	arena_free(&a);
}

/* A secondary PREWRITTEN lock of txn byte id, its primary (pt, prow). */
static void secondary_rec(store *st, lock_rec *r, uint8_t id, uint64_t ts, int live,
                          const char *pt, const char *prow)
{
	memset(r, 0, sizeof(*r));
	r->state = LOCK_PREWRITTEN;
	memcpy(r->tag, store_id(st), LOCK_TAG_SIZE);
	memset(r->txn, id, LOCK_TXNID_SIZE);
	r->commit_ts = ts;
	r->owner = *lock_self_owner();
	r->expiry_ms = live ? mrtx__now_ms() + 3600 * 1000 : 1;
	r->flags = LOCK_F_PREV_ABSENT | LOCK_F_SECONDARY;
	r->primary.table = MRTX_CSTR(pt);
	r->primary.row = MRTX_CSTR(prow);
}

static mrtx_db *drop_db;
static uint64_t held_write;

static simr_fate hold_one_write(void *arg, const simr_op_info *op)
{
	(void)arg;
	if (op->write && !held_write) {
		held_write = op->id;
		return SIMR_HOLD;
	}
	return SIMR_APPLY;
}

/* The held write reaches its OSD only after another handle dropped t3. */
static void drop_t3_then_release(void *arg, const simr_op_info *op)
{
	(void)arg;
	if (op->id != held_write)
		return;
	assert_int_equal(mrtx_drop_table(drop_db, "t3"), MRTX_OK);
	assert_int_equal(simr_release(op->id, SIMR_APPLY), 0);
}

/*
 * A live writer's secondary at (t2,r), its primary (t1,p) held by u's
 * secondary, whose primary (t3,q) holds w's secondary, whose primary is
 * (t1,p): u and w a cycle of expired orphans behind t.  Settling t's row
 * settles u first, which breaks the u/w cycle -- and the first write of
 * that lands only after another handle dropped t3.  Its MRTX_ENOTABLE is
 * about t3, not t1: t stays locked (live), its primary unfenced only
 * because it is live.
 */
static void test_drop_under_nested_settle(void **state)
{
	const char *fam[1] = { "f" };
	simr_hook h = { hold_one_write, drop_t3_then_release, NULL };
	const store_table *t2;
	recover_opts ro = { 0, 0, 0 };
	lock_rec lt, lu, lw;
	store_row cur;
	mrtx_arena a;
	mrtx_db *db;
	store *st;
	int rc;

	(void)state;
	assert_non_null(db = open_db(ADDR));
	assert_non_null(drop_db = open_db(ADDR));
	for (int i = 1; i <= 3; i++) {
		char name[4];

		snprintf(name, sizeof(name), "t%d", i);
		assert_int_equal(mrtx_create_table(db, name, fam, 1), MRTX_OK);
	}
	st = mrtx__db_store(db);
	secondary_rec(st, &lt, 0x11, 1000, 1, "t1", "p");
	plant(st, "t2", "r", &lt);
	secondary_rec(st, &lu, 0x22, 800, 0, "t3", "q");
	plant(st, "t1", "p", &lu);
	secondary_rec(st, &lw, 0x33, 900, 0, "t1", "p");
	plant(st, "t3", "q", &lw);
	arena_init(&a);
	assert_int_equal(store_table_find(st, "t2", &t2), 0);
	{
		store_rowref ref = { t2, MRTX_CSTR("r") };

		assert_int_equal(store_read_locks(st, &ref, 1, &a, &cur), 0);
		assert_true(cur.has_lock);
		held_write = 0;
		simr_set_hook(&h);
		rc = recover_resolve(st, t2, MRTX_CSTR("r"), cur.lock, &ro, NULL);
		simr_set_hook(NULL);
		assert_int_equal(rc, MRTX_ELOCKED); /* t is live */
		assert_int_equal(store_read_locks(st, &ref, 1, &a, &cur), 0);
		assert_true(cur.has_lock); /* and its secondary stays */
	}
	assert_true(held_write != 0);
	arena_free(&a);
	mrtx_close(drop_db);
	mrtx_close(db);
}

/*
 * A primary left ABORTED (its writer's rollback cut short after its
 * secondary went back) whose secondary's table a drop then closed and did
 * not finish: the closed table holds no unsettled lock (the drop settled
 * them before the close), so a recovery sweep releases the primary
 * instead of waiting on the table for ever -- in the batch and on its own.
 */
static void test_sweep_past_closed_table(void **state)
{
	const char *fam[1] = { "f" };
	recover_opts ro = { 0, 0, 0 };
	recover_stats rs;
	const store_table *t1;
	lock_ref sec = { MRTX_CSTR("t2"), MRTX_CSTR("s") };
	store_rowref ref;
	lock_rec pr;
	store_row cur;
	mrtx_arena a;
	mrtx_db *db;
	store *st;
	int closed;

	(void)state;
	assert_non_null(db = open_db(ADDR));
	assert_int_equal(mrtx_create_table(db, "t1", fam, 1), MRTX_OK);
	assert_int_equal(mrtx_create_table(db, "t2", fam, 1), MRTX_OK);
	st = mrtx__db_store(db);
	secondary_rec(st, &pr, 0x44, 700, 0, "", "");
	pr.state = LOCK_ABORTED;
	pr.flags = LOCK_F_PREV_ABSENT;
	pr.secondaries = &sec;
	pr.nsecondaries = 1;
	plant(st, "t1", "p", &pr);
	/* a drop of t2 that stops once every tablet is closed */
	assert_int_equal(mrtx_failpoints_set("ddl.after_close=error"), MRTX_OK);
	assert_int_not_equal(mrtx_drop_table(db, "t2"), MRTX_OK);
	assert_int_equal(mrtx_failpoints_set(""), MRTX_OK);
	{
		const store_table *t2;

		assert_int_equal(store_table_find(st, "t2", &t2), 0);
		assert_int_equal(store_table_closed(st, t2, &closed), 0);
		assert_int_equal(closed, 1);
		assert_int_equal(store_table_find(st, "t1", &t1), 0);
		assert_int_equal(store_table_closed(st, t1, &closed), 0);
		assert_int_equal(closed, 0);
	}
	memset(&rs, 0, sizeof(rs));
	assert_int_equal(admin_recover(db, &ro, &rs, NULL, NULL), 0);
	assert_int_equal(rs.rolled_back, 1);
	arena_init(&a);
	ref.table = t1;
	ref.row = MRTX_CSTR("p");
	assert_int_equal(store_read_locks(st, &ref, 1, &a, &cur), 0);
	if (cur.has_lock) {
		uint8_t s, txn[LOCK_TXNID_SIZE];

		assert_int_equal(lock_peek(cur.lock, &s, txn), 0);
		assert_int_equal(s, LOCK_STABLE);
	}
	arena_free(&a);
	/* the drop run again finishes, and takes the name */
	assert_int_equal(mrtx_drop_table(db, "t2"), MRTX_OK);
	mrtx_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_pool_and_connect, setup),
		cmocka_unit_test_setup(test_guards, setup),
		cmocka_unit_test_setup(test_order_and_paging, setup),
		cmocka_unit_test_setup(test_remove_and_listing, setup),
		cmocka_unit_test_setup(test_hook_hold_and_order, setup),
		cmocka_unit_test_setup(test_hook_hold_reads, setup),
		cmocka_unit_test_setup(test_store_on_sim, setup_store),
		cmocka_unit_test_setup(test_drop_index_on_sim, setup_store),
		cmocka_unit_test_setup(test_blind_start, setup_store),
		cmocka_unit_test_setup(test_trims_leave_the_commit, setup_store),
		cmocka_unit_test_setup(test_malformed_oracle_blind, setup_store),
		cmocka_unit_test_setup(test_close_waits_out_a_trim_pass, setup_store),
		cmocka_unit_test_setup(test_flush_across_fork, setup_store),
		cmocka_unit_test_setup(test_drop_under_nested_settle, setup_store),
		cmocka_unit_test_setup(test_sweep_past_closed_table, setup_store),
		cmocka_unit_test(test_lost_reply_one_tablet),
		cmocka_unit_test(test_lost_reply_three_tablets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
