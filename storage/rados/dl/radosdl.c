/*
 * radosdl.c - librados, loaded when the first RADOS store is opened.
 *
 * The RADOS backend (storage/rados/) calls the librados C functions by
 * their own names.  This file defines each of those names and forwards the
 * call to librados.so.2, which it opens with dlopen(3) on first use
 * (radosdl_load).  So a process that never opens a rados:// address never
 * loads Ceph's libraries: it starts without their relocations and
 * constructors, it runs on a machine where librados2 is not installed, and
 * a leak check at its exit does not scan libceph-common's 130 MiB of
 * zero-filled globals (half a second a process under LeakSanitizer).
 *
 * Built into the libraries that talk to a real cluster (the build's own
 * `mrtx` library, libmrtx.a, libmrtx.so), never into the simulator's,
 * whose storage/sim/simrados*.c define the same names over an in-memory
 * cluster (and radosdl_load as a no-op).  In libmrtx.so the version script
 * keeps these names local; a program that links librados itself still
 * calls its own copy, and the forwarded calls reach the same library
 * (dlopen of a loaded library returns it).
 *
 * Invariant: no function here is called before radosdl_load succeeded,
 * except by a program that calls librados directly; each forwarder loads
 * on its own first, and if that fails returns -ENOSYS, NULL, 0, or (void
 * functions) does nothing.  Every librados object is made by a forwarder
 * that succeeded, so a void function never meets one from nowhere.
 */
#include "radosdl.h"

#include <rados/librados.h>

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#define RADOSDL_LIB "librados.so.2"

/* The forwarded functions: return type, name, parameters, arguments, and
 * the value returned when librados cannot be loaded; V: functions that
 * return nothing. */
#define RADOSDL_FUNCS(X, V)                                                                   \
	X(int, rados_create2,                                                              \
	  (rados_t * pcluster, const char *const clustername, const char *const name,     \
	   uint64_t flags),                                                                \
	  (pcluster, clustername, name, flags), -ENOSYS)                                   \
	X(int, rados_conf_read_file, (rados_t cluster, const char *path), (cluster, path), \
	  -ENOSYS)                                                                         \
	X(int, rados_conf_parse_env, (rados_t cluster, const char *var), (cluster, var),   \
	  -ENOSYS)                                                                         \
	X(int, rados_conf_set, (rados_t cluster, const char *option, const char *value),   \
	  (cluster, option, value), -ENOSYS)                                               \
	X(int, rados_conf_get, (rados_t cluster, const char *option, char *buf, size_t len), \
	  (cluster, option, buf, len), -ENOSYS)                                            \
	X(int, rados_connect, (rados_t cluster), (cluster), -ENOSYS)                       \
	V(rados_shutdown, (rados_t cluster), (cluster))                        \
	X(int, rados_wait_for_latest_osdmap, (rados_t cluster), (cluster), -ENOSYS)        \
	X(int, rados_getaddrs, (rados_t cluster, char **addrs), (cluster, addrs), -ENOSYS) \
	X(int, rados_blocklist_add,                                                        \
	  (rados_t cluster, char *client_address, uint32_t expire_seconds),                \
	  (cluster, client_address, expire_seconds), -ENOSYS)                              \
	X(int, rados_ioctx_create, (rados_t cluster, const char *pool_name, rados_ioctx_t *ioctx), \
	  (cluster, pool_name, ioctx), -ENOSYS)                                            \
	V(rados_ioctx_destroy, (rados_ioctx_t io), (io))                       \
	X(int, rados_remove, (rados_ioctx_t io, const char *oid), (io, oid), -ENOSYS)      \
	X(int, rados_nobjects_list_open, (rados_ioctx_t io, rados_list_ctx_t *ctx),        \
	  (io, ctx), -ENOSYS)                                                              \
	X(int, rados_nobjects_list_next,                                                   \
	  (rados_list_ctx_t ctx, const char **entry, const char **key, const char **nspace), \
	  (ctx, entry, key, nspace), -ENOSYS)                                              \
	V(rados_nobjects_list_close, (rados_list_ctx_t ctx), (ctx))            \
	X(int, rados_aio_create_completion2,                                               \
	  (void *cb_arg, rados_callback_t cb_complete, rados_completion_t *pc),            \
	  (cb_arg, cb_complete, pc), -ENOSYS)                                              \
	X(int, rados_aio_wait_for_complete, (rados_completion_t c), (c), -ENOSYS)          \
	X(int, rados_aio_get_return_value, (rados_completion_t c), (c), -ENOSYS)           \
	V(rados_aio_release, (rados_completion_t c), (c))                      \
	X(rados_write_op_t, rados_create_write_op, (void), (), NULL)                       \
	V(rados_release_write_op, (rados_write_op_t write_op), (write_op))     \
	V(rados_write_op_create,                                                     \
	  (rados_write_op_t write_op, int exclusive, const char *category),                \
	  (write_op, exclusive, category))                                           \
	V(rados_write_op_exec,                                                       \
	  (rados_write_op_t write_op, const char *cls, const char *method,                 \
	   const char *in_buf, size_t in_len, int *prval),                                 \
	  (write_op, cls, method, in_buf, in_len, prval))                            \
	V(rados_write_op_omap_cmp2,                                                  \
	  (rados_write_op_t write_op, const char *key, uint8_t comparison_operator,        \
	   const char *val, size_t key_len, size_t val_len, int *prval),                   \
	  (write_op, key, comparison_operator, val, key_len, val_len, prval))        \
	V(rados_write_op_omap_set2,                                                  \
	  (rados_write_op_t write_op, char const *const *keys, char const *const *vals,    \
	   const size_t *key_lens, const size_t *val_lens, size_t num),                    \
	  (write_op, keys, vals, key_lens, val_lens, num))                           \
	V(rados_write_op_omap_rm_keys2,                                              \
	  (rados_write_op_t write_op, char const *const *keys, const size_t *key_lens,     \
	   size_t keys_len),                                                               \
	  (write_op, keys, key_lens, keys_len))                                      \
	V(rados_write_op_omap_rm_range2,                                             \
	  (rados_write_op_t write_op, const char *key_begin, size_t key_begin_len,         \
	   const char *key_end, size_t key_end_len),                                       \
	  (write_op, key_begin, key_begin_len, key_end, key_end_len))                \
	X(int, rados_aio_write_op_operate,                                                 \
	  (rados_write_op_t write_op, rados_ioctx_t io, rados_completion_t completion,     \
	   const char *oid, time_t *mtime, int flags),                                     \
	  (write_op, io, completion, oid, mtime, flags), -ENOSYS)                          \
	X(rados_read_op_t, rados_create_read_op, (void), (), NULL)                         \
	V(rados_release_read_op, (rados_read_op_t read_op), (read_op))         \
	V(rados_read_op_omap_get_vals2,                                              \
	  (rados_read_op_t read_op, const char *start_after, const char *filter_prefix,    \
	   uint64_t max_return, rados_omap_iter_t *iter, unsigned char *pmore, int *prval), \
	  (read_op, start_after, filter_prefix, max_return, iter, pmore, prval))     \
	V(rados_read_op_omap_get_vals_by_keys2,                                      \
	  (rados_read_op_t read_op, char const *const *keys, size_t num_keys,              \
	   const size_t *key_lens, rados_omap_iter_t *iter, int *prval),                   \
	  (read_op, keys, num_keys, key_lens, iter, prval))                          \
	X(int, rados_aio_read_op_operate,                                                  \
	  (rados_read_op_t read_op, rados_ioctx_t io, rados_completion_t completion,       \
	   const char *oid, int flags),                                                    \
	  (read_op, io, completion, oid, flags), -ENOSYS)                                  \
	X(int, rados_omap_get_next2,                                                       \
	  (rados_omap_iter_t iter, char **key, char **val, size_t *key_len, size_t *val_len), \
	  (iter, key, val, key_len, val_len), -ENOSYS)                                     \
	X(unsigned int, rados_omap_iter_size, (rados_omap_iter_t iter), (iter), 0)         \
	V(rados_omap_get_end, (rados_omap_iter_t iter), (iter))

/* the pointers, filled once by load() */
#define X_PTR(ret, name, params, args, fail) static ret(*p_##name) params;
#define V_PTR(name, params, args) static void(*p_##name) params;
RADOSDL_FUNCS(X_PTR, V_PTR)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;             /* every pointer is set (written in load()) */
static char why[512];          /* else: what failed */
static const char *lib = RADOSDL_LIB; /* (radosdl_set_library) */

void radosdl_set_library(const char *soname)
{
	lib = soname;
}

static void load(void)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	const char *e;

	if (!h) {
		e = dlerror();
		snprintf(why, sizeof(why), "%s", e ? e : "dlopen failed");
		return;
	}
	/* (a void * to a function pointer: POSIX dlsym's documented use) */
#define X_SYM(ret, name, params, args, fail) SYM(name)
#define V_SYM(name, params, args) SYM(name)
#define SYM(name)                                                                            \
	if (!(*(void **)(&p_##name) = dlsym(h, #name))) {                                    \
		snprintf(why, sizeof(why), "%s has no %s (Ceph 14 or later is needed)",      \
		         lib, #name);                                                        \
		dlclose(h);                                                                  \
		return;                                                                      \
	}
	RADOSDL_FUNCS(X_SYM, V_SYM)
	loaded = 1;
	/* (h stays open for the process's life: librados cannot be unloaded
	 * while its threads may run) */
}

int radosdl_load(void)
{
	if (pthread_once(&once, load) != 0 || !loaded)
		return mrtx__seterr(MRTX_ESTORE,
		                    "rados: cannot load %s (install Debian's librados2, Ceph 14 or "
		                    "later): %s", lib, why[0] ? why : "pthread_once failed");
	return MRTX_OK;
}

static int ready(void)
{
	return pthread_once(&once, load) == 0 && loaded;
}

#define X_FWD(ret, name, params, args, fail)                                                \
	ret name params                                                                      \
	{                                                                                    \
		if (!ready())                                                                \
			return fail;                                                         \
		return p_##name args;                                                        \
	}
#define V_FWD(name, params, args)                                                            \
	void name params                                                                     \
	{                                                                                    \
		if (ready())                                                                 \
			p_##name args;                                                       \
	}
RADOSDL_FUNCS(X_FWD, V_FWD)
