#include "sha256_hardware.h"

// FIPS 180-4's round constants, four per group of rounds.
static const uint32_t round_constants[64] __attribute__((aligned(16))) = {
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

const uint32_t *rewind_sha256_round_constants(void) { return round_constants; }

#if defined(__x86_64__)

#include <cpuid.h>
#include <immintrin.h>

bool rewind_sha256_hardware_available(void) {
  unsigned int eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  if ((ecx & bit_SSSE3) == 0 || (ecx & bit_SSE4_1) == 0) return false;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return (ebx & bit_SHA) != 0;
}

// `sha256rnds2` keeps the eight working variables in two registers, lanes from high to low:
// (a, b, e, f) and (c, d, g, h). Each call does two rounds, taking their constant-plus-word sums
// from the low two lanes of its third operand.
__attribute__((target("sha,ssse3,sse4.1")))
void rewind_sha256_hardware_blocks(uint32_t state[8], const uint8_t *blocks, size_t count) {
  // Message words are big-endian: this shuffle reverses the bytes of each 32-bit lane.
  const __m128i byte_swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);

  __m128i abcd = _mm_loadu_si128((const __m128i *)&state[0]);  // lanes low to high: a b c d
  __m128i efgh = _mm_loadu_si128((const __m128i *)&state[4]);  // e f g h
  abcd = _mm_shuffle_epi32(abcd, 0xB1);                          // b a d c
  efgh = _mm_shuffle_epi32(efgh, 0x1B);                          // h g f e
  __m128i abef = _mm_alignr_epi8(abcd, efgh, 8);                 // f e b a
  __m128i cdgh = _mm_blend_epi16(efgh, abcd, 0xF0);              // h g d c

  for (; count > 0; count--, blocks += 64) {
    const __m128i abef_before = abef;
    const __m128i cdgh_before = cdgh;
    // The message schedule, four words at a time: w[0] holds words 4i...4i+3 of the current
    // group, w[1...3] the next three (computed as the rounds go).
    __m128i w[4];
    for (int i = 0; i < 4; i++) {
      w[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(blocks + 16 * i)), byte_swap);
    }
    for (int group = 0; group < 16; group++) {
      const __m128i current = w[group % 4];
      __m128i sums = _mm_add_epi32(current, _mm_load_si128((const __m128i *)&round_constants[4 * group]));
      cdgh = _mm_sha256rnds2_epu32(cdgh, abef, sums);
      sums = _mm_shuffle_epi32(sums, 0x0E);
      abef = _mm_sha256rnds2_epu32(abef, cdgh, sums);
      if (group < 12) {
        // Words 4(i+4)...: w[t-16] + σ0(w[t-15]) (msg1), + w[t-7] (the middle of the two
        // newest groups), + σ1(w[t-2]) (msg2, which needs the words just made).
        const __m128i oldest = w[group % 4];
        const __m128i next = w[(group + 1) % 4];
        const __m128i newer = w[(group + 2) % 4];
        const __m128i newest = w[(group + 3) % 4];
        __m128i made = _mm_sha256msg1_epu32(oldest, next);
        made = _mm_add_epi32(made, _mm_alignr_epi8(newest, newer, 4));
        w[group % 4] = _mm_sha256msg2_epu32(made, newest);
      }
    }
    abef = _mm_add_epi32(abef, abef_before);
    cdgh = _mm_add_epi32(cdgh, cdgh_before);
  }

  const __m128i a_b_e_f = _mm_shuffle_epi32(abef, 0x1B);         // a b e f
  const __m128i g_h_c_d = _mm_shuffle_epi32(cdgh, 0xB1);         // g h c d
  abcd = _mm_blend_epi16(a_b_e_f, g_h_c_d, 0xF0);                // a b c d
  efgh = _mm_alignr_epi8(g_h_c_d, a_b_e_f, 8);                   // e f g h
  _mm_storeu_si128((__m128i *)&state[0], abcd);
  _mm_storeu_si128((__m128i *)&state[4], efgh);
}

#else

bool rewind_sha256_hardware_available(void) { return false; }

void rewind_sha256_hardware_blocks(uint32_t state[8], const uint8_t *blocks, size_t count) {
  (void)state;
  (void)blocks;
  (void)count;
  __builtin_trap();
}

#endif
