#ifndef REWIND_CRC32C_HARDWARE_H
#define REWIND_CRC32C_HARDWARE_H

// CRC-32C (Castagnoli) by the CPU's own instruction: SSE4.2 `crc32` on x86-64, the ARMv8 CRC32C
// instructions on AArch64. Imported by exactly one Swift file
// (Sources/RewindJournal/Codec/CRC32C.swift), which keeps a table version for CPUs without the
// instruction. (The core's other C code is CSHA256, for the SHA extensions.)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/// Whether this CPU has the instruction `rewind_crc32c_hardware_update` uses. Asked of the CPU
/// (cpuid, or the kernel's hwcaps) on each call; the caller keeps the answer.
bool rewind_crc32c_hardware_available(void);

/// The CRC register after `count` bytes at `bytes` (any alignment), starting from `crc`. The
/// register is the raw one: the caller inverts before and after (CRC-32C's init and final xor).
/// - Precondition: `rewind_crc32c_hardware_available()` is true (otherwise the CPU traps on an
///   illegal instruction).
uint32_t rewind_crc32c_hardware_update(uint32_t crc, const uint8_t *bytes, size_t count);

#endif
