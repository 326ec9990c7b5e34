/*
 * rados_fence.c - fencing the clients of dead processes (DESIGN §6.4).
 *
 * A killed client's requests that had reached the cluster may still be
 * applied after its process is gone.  Each is guarded, so none breaks a
 * transaction, but a late prewrite can leave a lock after a reader or a
 * sweep settled the row.  Ceph's own answer is the OSD blocklist: once a
 * client address is on it and an OSD has the map that says so, that OSD
 * refuses the client's requests.
 *
 * The registry NAME.clients maps lock owners to client addresses: every
 * handle opened for writing sets "c/<owner>/<address>" (owner: the lock
 * record's boot id, pid and start time, 28 bytes as hex; address as
 * rados_getaddrs gives it) before it writes anything, and removes it at
 * close.  Fencing an owner blocklists every address registered for it,
 * waits for the newest OSD map (so this client's next request carries it:
 * an OSD processes a request only once it has the request's map, and
 * refuses a blocklisted client's requests from then on), and removes the
 * entries.  A key without the mon capability to blocklist ("allow r" only)
 * gets -EPERM: the fence is skipped, counted as denied, and the entries
 * stay for a caller who may.
 *
 * Who fences: a resolver that settles a lock whose owner is dead or whose
 * lock expired (recovery.c, before writing), and `mrtx recover`, which
 * first fences every registered owner that is provably dead on this host
 * (store_fence_dead).  A presumed-dead owner that was alive (stuck for
 * longer than its lock's expiry) finds every request refused: its handle
 * fails with MRTX_ESTORE and must be reopened.
 */
#include "storage/rados/rados_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "storage/sim_hooks.h"

/* How long a fenced address stays on the blocklist: far longer than any
 * request of the dead client can be in flight. */
#define FENCE_EXPIRE_S 3600u

static void owner_hex(const uint8_t *owner, char *out)
{
	static const char hx[] = "0123456789abcdef";

	for (size_t i = 0; i < STORE_OWNER_SIZE; i++) {
		out[2 * i] = hx[owner[i] >> 4];
		out[2 * i + 1] = hx[owner[i] & 15];
	}
	out[2 * STORE_OWNER_SIZE] = '\0';
}

static int hex_owner(const char *s, uint8_t *owner)
{
	for (size_t i = 0; i < STORE_OWNER_SIZE; i++) {
		int v = 0;

		for (int k = 0; k < 2; k++) {
			char c = s[2 * i + (size_t)k];

			v <<= 4;
			if (c >= '0' && c <= '9')
				v |= c - '0';
			else if (c >= 'a' && c <= 'f')
				v |= c - 'a' + 10;
			else
				return -1;
		}
		owner[i] = (uint8_t)v;
	}
	return s[2 * STORE_OWNER_SIZE] == '/' ? 0 : -1;
}

/* This process's PID namespace (the inode of /proc/self/ns/pid; 0 when it
 * cannot be read): a pid judged dead is so only in its own namespace. */
static uint64_t pid_ns(void)
{
	struct stat sb;

	return stat("/proc/self/ns/pid", &sb) == 0 ? (uint64_t)sb.st_ino : 0;
}

int rados_fence_register(rstore *rs, const uint8_t *owner)
{
	char hex[2 * STORE_OWNER_SIZE + 1], *addr = NULL;
	uint8_t when[16];
	rwrite w;
	rkv set;
	int r, rc;

	snprintf(rs->clients_oid, sizeof(rs->clients_oid), "%s.clients", rs->name);
	/* (the simulated cluster has no blocklist: nothing to register, and
	 * no write that would move every later operation's number) */
	if (mrtx__sim_on())
		return 0;
	if ((r = rados_getaddrs(rconn_cluster(rs->conn), &addr)) < 0 || !addr)
		return 0; /* (no address to give: this handle cannot be fenced) */
	owner_hex(owner, hex);
	rc = asprintf(&rs->client_key, "c/%s/%s", hex, addr) < 0 ? -1 : 0;
	free(addr);
	if (rc) {
		rs->client_key = NULL;
		return mrtx__seterr(MRTX_ENOMEM, "out of memory registering the client");
	}
	/* value: when (u64 BE), the PID namespace (u64 BE) */
	rbe64_put(when, mrtx__now_us());
	rbe64_put(when + 8, pid_ns());
	set = (rkv){ MRTX_CSTR(rs->client_key), MRTX_BYTES(when, 16) };
	memset(&w, 0, sizeof(w));
	w.oid = rs->clients_oid;
	w.create = 1;
	w.sets = &set;
	w.nsets = 1;
	atomic_fetch_add_explicit(&rs->write_txns, 1, memory_order_relaxed);
	if ((rc = rconn_write(rs->conn, &w, 1)) == RCONN_TIMEDOUT)
		rc = MRTX_ESTORE;
	return rc;
}

void rados_fence_unregister(rstore *rs)
{
	mrtx_bytes rm;
	rwrite w;

	if (!rs->client_key)
		return;
	rm = MRTX_CSTR(rs->client_key);
	memset(&w, 0, sizeof(w));
	w.oid = rs->clients_oid;
	w.rms = &rm;
	w.nrms = 1;
	/* (best effort: an entry left behind is fenced, harmlessly, when a
	 * sweep finds its process gone) */
	if (rconn_write(rs->conn, &w, 1))
		mrtx__clearerr();
	free(rs->client_key);
	rs->client_key = NULL;
}

typedef struct fence_ctx {
	rstore *rs;
	size_t fenced, denied;
	uint64_t ns; /* nonzero: only entries registered in this PID namespace */
	int (*dead)(const uint8_t *owner, void *arg); /* NULL: every entry listed */
	void *arg;
	int rc;
} fence_ctx;

/* One registry entry: blocklist its address, then remove it. */
static int fence_entry(const char *key, mrtx_bytes value, void *payload)
{
	fence_ctx *c = payload;
	rstore *rs = c->rs;
	uint8_t owner[STORE_OWNER_SIZE];
	const char *addr;
	mrtx_bytes rm;
	rwrite w;
	int r;

	if (c->ns && (value.size != 16 || rbe64_get((const uint8_t *)value.data + 8) != c->ns))
		return 0; /* (its pid means nothing here) */
	if (strncmp(key, "c/", 2) != 0 || strlen(key) < 3 + 2 * STORE_OWNER_SIZE + 1 ||
	    hex_owner(key + 2, owner))
		return 0; /* not an entry of this release: left alone */
	if (c->dead && !c->dead(owner, c->arg))
		return 0;
	if (rs->client_key && strcmp(key, rs->client_key) == 0)
		return 0; /* never this handle */
	addr = key + 3 + 2 * STORE_OWNER_SIZE;
	r = rados_blocklist_add(rconn_cluster(rs->conn), (char *)(uintptr_t)addr, FENCE_EXPIRE_S);
	if (r == -EPERM || r == -EACCES || r == -EOPNOTSUPP) {
		c->denied++;
		return 0;
	}
	if (r < 0) {
		c->rc = rconn_error(rs->conn, r, "blocklist a dead client", rs->clients_oid);
		return 1;
	}
	c->fenced++;
	rm = MRTX_CSTR(key);
	memset(&w, 0, sizeof(w));
	w.oid = rs->clients_oid;
	w.rms = &rm;
	w.nrms = 1;
	if (rconn_write(rs->conn, &w, 1))
		mrtx__clearerr(); /* (fenced twice later: harmless) */
	return 0;
}

/* List the registry entries under prefix and fence each (c->dead says
 * which); then wait for the map that holds the new blocklist. */
static int fence_listed(rstore *rs, const char *prefix, fence_ctx *c)
{
	mrtx_bytes after = MRTX_BYTES(NULL, 0);
	mrtx_arena a;
	int rc = 0, more = 1;

	if (!rs->clients_oid[0])
		snprintf(rs->clients_oid, sizeof(rs->clients_oid), "%s.clients", rs->name);
	arena_init(&a);
	while (more && rc == 0 && c->rc == 0) {
		rget g;
		rread r;

		memset(&g, 0, sizeof(g));
		memset(&r, 0, sizeof(r));
		g.start_after = after;
		g.prefix = MRTX_CSTR(prefix);
		g.max = RLIST_MAX;
		r.oid = rs->clients_oid;
		r.gets = &g;
		r.ngets = 1;
		atomic_fetch_add_explicit(&rs->read_txns, 1, memory_order_relaxed);
		if ((rc = rconn_read(rs->conn, &r, 1, &a))) {
			rc = rc == RCONN_TIMEDOUT ? MRTX_ESTORE : rc;
			break;
		}
		for (size_t i = 0; i < g.nkvs && c->rc == 0; i++) {
			char key[512];

			if (g.kvs[i].key.size >= sizeof(key))
				continue;
			memcpy(key, g.kvs[i].key.data, g.kvs[i].key.size);
			key[g.kvs[i].key.size] = '\0';
			fence_entry(key, g.kvs[i].value, c);
		}
		more = g.more && g.nkvs;
		if (more) {
			uint8_t *k = arena_alloc(&a, g.kvs[g.nkvs - 1].key.size);

			if (!k) {
				rc = MRTX_ENOMEM;
				break;
			}
			memcpy(k, g.kvs[g.nkvs - 1].key.data, g.kvs[g.nkvs - 1].key.size);
			after = MRTX_BYTES(k, g.kvs[g.nkvs - 1].key.size);
		}
	}
	arena_free(&a);
	if (rc == 0)
		rc = c->rc;
	if (rc == 0 && c->fenced) {
		int r = rados_wait_for_latest_osdmap(rconn_cluster(rs->conn));

		if (r < 0)
			rc = rconn_error(rs->conn, r, "wait for the OSD map after a fence",
			                 rs->clients_oid);
	}
	return rc;
}

int rados_store_fence(store *st, const uint8_t *owner, int expired, size_t *fenced,
                      size_t *denied)
{
	rstore *rs = RS(st);
	char hex[2 * STORE_OWNER_SIZE + 1], prefix[3 + 2 * STORE_OWNER_SIZE + 2];
	fence_ctx c = { rs, 0, 0, expired ? 0 : pid_ns(), NULL, NULL, 0 };
	int rc;

	*fenced = *denied = 0;
	if (rs->head.read_only)
		return 0;
	/* (once per owner and handle: a sweep meets many locks of one owner) */
	pthread_mutex_lock(&rs->mu);
	for (size_t i = 0; i < rs->nfenced; i++)
		if (memcmp(rs->fenced[i], owner, STORE_OWNER_SIZE) == 0) {
			pthread_mutex_unlock(&rs->mu);
			return 0;
		}
	pthread_mutex_unlock(&rs->mu);
	owner_hex(owner, hex);
	snprintf(prefix, sizeof(prefix), "c/%s/", hex);
	rc = fence_listed(rs, prefix, &c);
	*fenced = c.fenced;
	*denied = c.denied;
	if (rc == 0 && c.denied == 0) {
		pthread_mutex_lock(&rs->mu);
		if (rs->nfenced < RFENCED_MAX)
			memcpy(rs->fenced[rs->nfenced++], owner, STORE_OWNER_SIZE);
		pthread_mutex_unlock(&rs->mu);
	}
	return rc;
}

int rados_store_fence_dead(store *st, int (*dead)(const uint8_t *owner, void *arg), void *arg,
                           size_t *fenced, size_t *denied)
{
	rstore *rs = RS(st);
	fence_ctx c = { rs, 0, 0, pid_ns(), dead, arg, 0 };
	int rc;

	*fenced = *denied = 0;
	if (rs->head.read_only)
		return 0;
	rc = fence_listed(rs, "c/", &c);
	*fenced = c.fenced;
	*denied = c.denied;
	return rc;
}
