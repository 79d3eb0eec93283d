#ifndef REWIND_SHA256_HARDWARE_H
#define REWIND_SHA256_HARDWARE_H

// SHA-256's block function by the CPU's own instructions (the x86-64 SHA extensions). Imported
// by exactly one Swift file (Sources/Rewind/Digest/SHA256.swift), which keeps the portable
// version for CPUs without them and checks one against the other in its tests.

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/// FIPS 180-4's 64 round constants, for the portable version too.
const uint32_t *rewind_sha256_round_constants(void);

/// Whether this CPU has the instructions `rewind_sha256_hardware_blocks` uses (SHA, SSSE3 and
/// SSE4.1). Asked of the CPU (cpuid) on each call; the caller keeps the answer.
bool rewind_sha256_hardware_available(void);

/// Runs SHA-256's compression function over `count` whole 64-byte blocks at `blocks` (any
/// alignment), updating `state` (the eight working words H0...H7, in that order).
/// - Precondition: `rewind_sha256_hardware_available()` is true (otherwise the CPU traps on an
///   illegal instruction).
void rewind_sha256_hardware_blocks(uint32_t state[8], const uint8_t *blocks, size_t count);

#endif
