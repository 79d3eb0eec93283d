#ifndef REWIND_CLZ4_SHIM_H
#define REWIND_CLZ4_SHIM_H

// liblz4's frame and block APIs, the only C the package depends on. Imported by one Swift file of
// the library (Sources/RewindJournal/Codec/LZ4.swift), and by the benchmark's decompression
// ceiling (Benchmarks/Sources/Baselines/LZ4LibraryCeiling.swift).
#include <lz4.h>
#include <lz4frame.h>

#endif
