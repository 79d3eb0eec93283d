// libsqlite3 for the benchmark's SQLite baseline only; the Rewind modules never depend on it.
#ifndef REWIND_CSQLITE_SHIM_H
#define REWIND_CSQLITE_SHIM_H

#include <sqlite3.h>
#include <stdint.h>

// SQLITE_TRANSIENT is a cast of -1 to a function pointer, which Swift cannot import as a macro.
static inline int rewind_sqlite3_bind_blob_copy(sqlite3_stmt *statement, int index, const uint8_t *bytes, int count) {
  return sqlite3_bind_blob(statement, index, bytes, count, SQLITE_TRANSIENT);
}

#endif
