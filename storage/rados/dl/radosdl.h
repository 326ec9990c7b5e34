/*
 * radosdl.h - load librados on first use (radosdl.c; the simulator's
 * storage/sim/simrados.c defines radosdl_load as a no-op).
 */
#ifndef MRTX_RADOSDL_H
#define MRTX_RADOSDL_H

#include "storage/common.h"

/* Load librados.so.2 and every function storage/rados/ calls, once per
 * process; later calls return the first one's result.  Thread-safe.
 * @return MRTX_OK; MRTX_ESTORE (the library or one of its functions is
 *   missing: the message names it). */
int radosdl_load(void);

/* Tests only: load soname instead of librados.so.2.  Takes effect only
 * before the process's first load; soname must outlive it. */
void radosdl_set_library(const char *soname);

#endif
