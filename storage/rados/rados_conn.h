/*
 * rados_conn.h - the connection layer of the RADOS backend.
 *
 * Three things, none of which knows about mrtx locks or rows:
 *
 *   raddr   a store address  rados://POOL/NAME[?conf=PATH][&user=ID][&timeout=S]
 *           [&split_rows=N]
 *   rconn   a connected cluster handle plus an I/O context on POOL, with
 *           bounded timeouts: no call made through it waits forever
 *   rconn_write / rconn_read   submit N compound operations on N objects
 *           at once (aio) and wait for all; per-op results
 *
 * Only files in storage/rados/ include <rados/librados.h>; this header does,
 * for the operation flags and rados_ioctx_t.
 *
 * Errors follow the project's rule: MRTX_* codes, the detail recorded with
 * mrtx__seterr (mrtx_errmsg) where the failure happens, naming the monitors,
 * the conf file, the pool or the object.  One code is internal:
 * RCONN_TIMEDOUT, an operation that hit rados_osd_op_timeout (the PG had too
 * few OSDs, or the cluster was unreachable).  Such an operation may or may
 * not have been applied; a caller at a commit point turns it into
 * MRTX_EUNKNOWN, elsewhere into MRTX_ESTORE.
 *
 * Timeouts: one bound, in whole seconds, is set as client_mount_timeout,
 * rados_mon_op_timeout and rados_osd_op_timeout, overriding the conf file.
 * It comes from the address (timeout=S), else from rconn_opts.timeout_s,
 * else from the environment variable MRTX_RADOS_TIMEOUT, else 10 s
 * (RCONN_DEFAULT_TIMEOUT_S); 1..3600.  With it, an unreachable cluster
 * fails rconn_open within about that bound (plus the conf-file read), and a
 * PG below min_size fails an operation with RCONN_TIMEDOUT after it.
 */
#ifndef MRTX_RADOS_CONN_H
#define MRTX_RADOS_CONN_H

#include <rados/librados.h>

#include "storage/common.h"

/* An operation timed out (outcome unknown); never leaves the library. */
#define RCONN_TIMEDOUT (-31980)

#define RCONN_DEFAULT_TIMEOUT_S 10u
#define RCONN_MAX_TIMEOUT_S 3600u
/* Longest pool, store name and user id accepted in an address. */
#define RADDR_MAX_NAME 128u

/* ------------------------------------------------------------ addresses */

/*
 * A parsed address.  Every string is NUL-terminated, percent-decoded and
 * owned by the raddr (raddr_free).  pool and name: 1..RADDR_MAX_NAME bytes
 * of [A-Za-z0-9._-] (name is the prefix of every object of the store, so it
 * must be a plain token).  conf: NULL when absent (then CEPH_CONF, else
 * Ceph's default search), otherwise a non-empty path.  user: the cephx id
 * (client.<user>), NULL for client.admin; [A-Za-z0-9._-], 1..RADDR_MAX_NAME.
 * timeout_s: 0 when absent.
 */
typedef struct raddr {
	char *pool;
	char *name;
	char *conf;
	char *user;
	unsigned timeout_s;
	uint32_t split_rows; /* split_rows=N: tablet bound, 0 = never split */
	int has_split_rows;
} raddr;

/* The tablet bound without split_rows= in the address, and the largest. */
#define RADDR_DEFAULT_SPLIT_ROWS 50000u
#define RADDR_MAX_SPLIT_ROWS 100000000u

/*
 * Parse uri into *out (zeroed first; on failure nothing is left to free).
 * Grammar: "rados://" POOL "/" NAME [ "?" PARAM *( "&" PARAM ) ] where
 * PARAM is conf=VALUE, user=VALUE, timeout=SECONDS or split_rows=N (a
 * tablet with more rows is split: 0 never, else 2..RADDR_MAX_SPLIT_ROWS;
 * default RADDR_DEFAULT_SPLIT_ROWS), each at most once.
 * %XX escapes are decoded in POOL, NAME and values (%00 is refused).
 * @return MRTX_OK; MRTX_EINVAL (not rados://, empty or over-long pool or
 *   name, a character outside the allowed set, a bad escape, an unknown,
 *   repeated or empty parameter, a bad timeout; the detail names which);
 *   MRTX_ENOMEM.
 */
int raddr_parse(raddr *out, const char *uri);
/* Free what raddr_parse allocated; a zeroed raddr is fine. */
void raddr_free(raddr *a);
/* Is s a rados:// address (by its scheme alone)? */
int raddr_is_rados(const char *s);
/* Whole seconds 1..RCONN_MAX_TIMEOUT_S from the decimal string s into *out;
 * MRTX_EINVAL with a message starting with what otherwise. */
int raddr_parse_seconds(const char *s, const char *what, unsigned *out);

/* ---------------------------------------------------------- connection */

typedef struct rconn rconn;

typedef struct rconn_opts {
	unsigned timeout_s; /* 0: the address's, else MRTX_RADOS_TIMEOUT, else 10 */
} rconn_opts;

#define RCONN_OPTS_INIT { 0 }

/*
 * Connect to the cluster of addr and open an I/O context on addr->pool.
 * Turns librados's stderr logging off, reads the conf (addr->conf, else
 * $CEPH_CONF, else Ceph's default search) and CEPH_ARGS (either may turn
 * stderr logging back on), then sets the timeouts above.  opts may be NULL.
 * *out is set only on success; close it with rconn_close.
 * @return MRTX_OK;
 *   MRTX_EINVAL (bad timeout in opts or MRTX_RADOS_TIMEOUT);
 *   MRTX_ESTORE (conf file unreadable or not found; cluster unreachable or
 *     authentication refused: the detail names mon_host, the conf and the
 *     client name; returned within about the timeout);
 *   MRTX_ENOTSTORE (the pool does not exist: "pool X does not exist");
 *   MRTX_ENOMEM.
 */
int rconn_open(rconn **out, const raddr *addr, const rconn_opts *opts);
/* Disconnect; waits for nothing in flight (callers wait for their ops).
 * NULL is fine. */
void rconn_close(rconn *c);

/* Accessors; valid while c is open. */
rados_ioctx_t rconn_ioctx(rconn *c);
rados_t rconn_cluster(rconn *c);
const char *rconn_pool(const rconn *c);
const char *rconn_name(const rconn *c);
unsigned rconn_timeout_s(const rconn *c);

/*
 * Map a librados result (negative errno) of an operation on oid to an
 * MRTX code and record the detail ("<what> on object <oid> in pool P: ...").
 * 0 -> MRTX_OK; -ETIMEDOUT -> RCONN_TIMEDOUT; -ECANCELED -> MRTX_CONFLICT;
 * -ENOMEM -> MRTX_ENOMEM; -EMSGSIZE, -E2BIG, -EFBIG -> MRTX_ETOOBIG;
 * anything else -> MRTX_ESTORE.
 */
int rconn_error(const rconn *c, int r, const char *what, const char *oid);

/* ------------------------------------------------------ batched aio ops */

/* omap_cmp2: the value stored under key compared with value by op (a
 * LIBRADOS_CMPXATTR_OP_*).  A missing key compares as the empty value, so
 * "key absent" is  EQ "" (RADOS.md §4b); never store empty values where
 * absence matters. */
typedef struct rguard {
	mrtx_bytes key, value;
	uint8_t op;
	int result; /* out: 0, -ECANCELED when false, other -errno */
} rguard;

/* An object-class call inside a write op (e.g. lua eval_bufferlist): its
 * negative return aborts the whole op. */
typedef struct rexec {
	const char *cls, *method;
	mrtx_bytes in;
	int result; /* out */
} rexec;

typedef struct rkv {
	mrtx_bytes key, value;
} rkv;

/*
 * One compound write on one object, applied atomically or not at all, in
 * this order: create (if create), guards, execs, the range removal (keys
 * in [rm_from, rm_to), when rm_to.size), sets, removals.
 * create: rados_write_op_create(IDEMPOTENT) first, so that on a missing
 * object the guards see an empty omap (without it any guard fails with
 * -ENOENT) and the object is created only if the whole op applies.
 * Keys and values may hold any bytes (the *2 calls take lengths).
 */
typedef struct rwrite {
	const char *oid;
	int create;
	rguard *guards;
	size_t nguards;
	rexec *execs;
	size_t nexecs;
	const rkv *sets;
	size_t nsets;
	const mrtx_bytes *rms;
	size_t nrms;
	mrtx_bytes rm_from, rm_to;
	int result; /* out: 0 applied; -ECANCELED a guard was false (nothing
	               applied); -ETIMEDOUT outcome unknown; other -errno */
} rwrite;

/*
 * Submit every write at once (one aio each, to different objects or not;
 * two ops on one object apply in submission order) and wait for all.
 * Each w[i].result (and its guards' and execs' results) is set, also when
 * the call fails.  The caller's arrays must stay put until it returns;
 * nothing is kept afterwards.
 * @return MRTX_OK when every op has result 0 or -ECANCELED; otherwise the
 *   rconn_error mapping of the first other result (RCONN_TIMEDOUT for a
 *   timeout); MRTX_EINVAL (NULL oid); MRTX_ENOMEM (then ops not yet
 *   submitted have result -ENOMEM).
 */
int rconn_write(rconn *c, rwrite *w, size_t n);

/*
 * The same for write ops the caller built (any rados_write_op_* call:
 * assert_version, xattrs, data writes, ...): submit ops[i] on oids[i] at
 * once, wait for all, results[i] = 0 or -errno.  The caller keeps owning
 * the ops (release them after the call) and whatever their prval pointers
 * point at, which is written before the call returns.
 * @return as rconn_write; MRTX_EINVAL for a NULL array, op or object.
 */
int rconn_write_ops(rconn *c, rados_write_op_t const *ops, const char *const *oids,
                    int *results, size_t n);

/*
 * omap_get_vals2 inside a read op: up to max pairs whose key sorts after
 * start_after and starts with prefix, in key order.  start_after and
 * prefix are passed to librados as C strings, so they may not hold 0x00
 * (MRTX_EINVAL); size 0 means none.  Out: kvs (max <= 1024 per request on
 * a default cluster; more = 1 when pairs remain), copied into the arena.
 */
typedef struct rget {
	mrtx_bytes start_after, prefix;
	uint64_t max;
	rkv *kvs; /* out */
	size_t nkvs;
	int more;
	int result;
} rget;

/*
 * One compound read of one object: several ranges (gets) and/or exact keys
 * (omap_get_vals_by_keys2; keys found come back in key order in kvs).
 */
typedef struct rread {
	const char *oid;
	rget *gets;
	size_t ngets;
	const mrtx_bytes *keys;
	size_t nkeys;
	rkv *kvs; /* out: the keys found */
	size_t nkvs;
	int result; /* out: 0; -ENOENT no such object; -ETIMEDOUT; other -errno */
} rread;

/*
 * Submit every read at once and wait for all; results are copied into a
 * (they live as long as the arena).  Each r[i].result is set.
 * @return MRTX_OK when every read has result 0 or -ENOENT; otherwise the
 *   rconn_error mapping of the first other result; MRTX_EINVAL (NULL oid,
 *   0x00 in start_after/prefix); MRTX_ENOMEM.
 */
int rconn_read(rconn *c, rread *r, size_t n, mrtx_arena *a);

/* ------------------------------------------------------ object classes */

/*
 * Append to out the input of the `lua` object class's eval_bufferlist
 * method: Ceph's encoding of cls_lua_eval_op {script, handler, input}
 * (ENCODE_START(1, 1): u8 version, u8 compat, u32 length, then each field
 * as u32 length + bytes, little-endian).  The script registers handler
 * with objclass.register(fn); fn(input, output) returns 0 or -errno, and a
 * negative return inside a write op aborts the whole op.  The OSDs must
 * load the class (osd_class_load_list / osd_class_default_list = *).
 * @return MRTX_OK; MRTX_ETOOBIG (a field over 4 GiB); MRTX_ENOMEM.
 */
int rlua_encode(mrtx_buf *out, const char *script, const char *handler, mrtx_bytes input);

#endif
