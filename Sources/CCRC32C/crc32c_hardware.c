#include "crc32c_hardware.h"

#if defined(__x86_64__)

#include <cpuid.h>
#include <nmmintrin.h>

bool rewind_crc32c_hardware_available(void) {
  unsigned int eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  return (ecx & bit_SSE4_2) != 0;
}

__attribute__((target("sse4.2")))
uint32_t rewind_crc32c_hardware_update(uint32_t crc, const uint8_t *bytes, size_t count) {
  uint64_t wide = crc;
  while (count >= 8) {
    uint64_t word;
    __builtin_memcpy(&word, bytes, 8);
    wide = _mm_crc32_u64(wide, word);
    bytes += 8;
    count -= 8;
  }
  uint32_t narrow = (uint32_t)wide;
  if (count >= 4) {
    uint32_t word;
    __builtin_memcpy(&word, bytes, 4);
    narrow = _mm_crc32_u32(narrow, word);
    bytes += 4;
    count -= 4;
  }
  if (count >= 2) {
    uint16_t half;
    __builtin_memcpy(&half, bytes, 2);
    narrow = _mm_crc32_u16(narrow, half);
    bytes += 2;
    count -= 2;
  }
  if (count > 0) narrow = _mm_crc32_u8(narrow, *bytes);
  return narrow;
}

#elif defined(__aarch64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__

#include <arm_acle.h>

#if defined(__ARM_FEATURE_CRC32)
// The compiler's target has the instructions (Apple silicon, or -march=armv8.1-a and later).
bool rewind_crc32c_hardware_available(void) { return true; }
#elif defined(__linux__)
// getauxval(AT_HWCAP) & HWCAP_CRC32, declared here so that only the compiler's own headers are needed.
extern unsigned long getauxval(unsigned long type);
bool rewind_crc32c_hardware_available(void) { return (getauxval(16 /* AT_HWCAP */) & (1UL << 7)) != 0; }
#else
bool rewind_crc32c_hardware_available(void) { return false; }
#endif

__attribute__((target("crc")))
uint32_t rewind_crc32c_hardware_update(uint32_t crc, const uint8_t *bytes, size_t count) {
  while (count >= 8) {
    uint64_t word;
    __builtin_memcpy(&word, bytes, 8);
    crc = __crc32cd(crc, word);
    bytes += 8;
    count -= 8;
  }
  if (count >= 4) {
    uint32_t word;
    __builtin_memcpy(&word, bytes, 4);
    crc = __crc32cw(crc, word);
    bytes += 4;
    count -= 4;
  }
  if (count >= 2) {
    uint16_t half;
    __builtin_memcpy(&half, bytes, 2);
    crc = __crc32ch(crc, half);
    bytes += 2;
    count -= 2;
  }
  if (count > 0) crc = __crc32cb(crc, *bytes);
  return crc;
}

#else

// No instruction known here: the Swift table version does all the work.
bool rewind_crc32c_hardware_available(void) { return false; }

uint32_t rewind_crc32c_hardware_update(uint32_t crc, const uint8_t *bytes, size_t count) {
  (void)bytes;
  (void)count;
  __builtin_trap();
  return crc;
}

#endif
