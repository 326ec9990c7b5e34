/*
 * admin.h - the few internals the `mrtx` tool and the tests may use for
 * inspection and recovery (DESIGN §2: tools see the public API plus
 * recovery/ and lockcf/).
 */
#ifndef MRTX_ADMIN_H
#define MRTX_ADMIN_H

#include "mrtx.h"
#include "../recovery/recovery.h"

/* The store behind an open db (owned by db). */
store *mrtx__db_store(mrtx_db *db);

/* Bytes the transaction has allocated for its buffer and reads (bench). */
size_t mrtx__txn_mem(const mrtx_txn *txn);

#endif
