#ifndef REWIND_CLZ4_SHIM_H
#define REWIND_CLZ4_SHIM_H

// liblz4's frame and block APIs, the only C the package depends on. Imported by exactly one Swift
// file (Sources/RewindJournal/Codec/LZ4.swift).
#include <lz4.h>
#include <lz4frame.h>

#endif
