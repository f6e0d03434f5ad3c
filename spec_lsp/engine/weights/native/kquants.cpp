// spec-lsp's CPU products over the GGUF blocks Q4_K, Q6_K and Q5_0, packed by 8 output rows
// (`kblocks.pack`), with the activations quantized per block of 32 to int8 as for Q4_1 / Q8_0
// (`quantize_row`, q4.cpp): one activation format for every kind.
//
//   kq_mm(x [M, K] f32, w [ceil(N/8), K/B, P] u8, N, kind) -> [M, N]
//   kq_dequant(w, N, K, kind) -> [N, K] f32 (gguf-py's float32 operations, in its order)
//   kq_isa() -> 0 plain C++, 1 AVX2, 2 AVX2 with VNNI dot products, 3 AVX-512 VNNI (zmm),
//               4 AMX int8 tiles for passes of 28 rows or more, AVX-512 VNNI for fewer
//   kq_amx_rows(rows) -> the fewest rows the tiles take (28; rows > 0 sets it; -1: no tiles)
//   kq_wide_rows(rows) -> the fewest rows the 512-bit wide tiles take (2; -1: no AVX-512)
//
// kind 0 = Q5_0 (B 32, P 176), 1 = Q4_K (B 256, P 1184), 2 = Q6_K (B 256, P 1680).
//
// Per (activation row r, output row n), blocks of 32 inputs in order (j), every product is exact
// integer arithmetic, then one float chain:
//   Q5_0:  acc = fma(d_w * d_x[j], float(sum (q - 16) a), acc)                        y = acc
//   Q4_K:  acc = fma(d_w * d_x[j], float(sc_j sum q a), acc)
//          mn  = fma(dmin_w * float(m_j), s_x[j], mn)                                 y = acc - mn
//   Q6_K:  acc = fma(d_w * d_x[j], float(sc_2j sum_lo (q - 32) a + sc_2j+1 sum_hi (q - 32) a), acc)
// (the Q6_K integer is below 2^24 in magnitude: exact as a float). The SIMD paths multiply the
// unsigned codes q (Q5_0 0..31, Q4_K 0..15, Q6_K 0..63) by the activations 4 at a time, in 8 lanes
// (8 output rows), and take the offsets off with the activations' integer sums per 16: 16 sum a,
// 32 sum a. AVX2 adds pairs in 16 bits (maddubs), widened before they could saturate; VNNI
// (`_mm256_dpbusd`, AVX-VNNI or AVX512-VNNI + VL) adds 4 products into 32 bits at once; with
// AVX512 F, BW, VL and VNNI (KQ_AVX512), 512-bit registers take two k-steps each (`Steps`) and
// the float operations of two rows (`Lanes<2>`), in tiles of up to 32 rows; passes of 2 rows or
// more take the wide tiles instead (two groups, 16 output rows, a zmm: `wide_rows`). The integers are
// the same whichever instruction computes them and the float operations are the same, lane by
// lane, in every path, so the plain C++, AVX2, VNNI (256 or 512 bits) and AMX results are bitwise
// equal (tests/engine/weights/test_kquants.py), and a row's numbers do not depend on M, on the tile of rows
// it falls in, or on the thread.
// With AMX (KQ_AMX: AMX-TILE and AMX-INT8 besides KQ_AVX512, and the kernel's permission for the
// tile data, asked once), a pass of 28 rows or more takes its integer block sums from tiles:
// TDPBSSD of 16 activation rows (their int8 codes) by the signed codes of 16 output rows (two
// packed groups side by side, the offsets of Q5_0 and Q6_K taken off the codes) gives a block's
// exact sums for 16 x 16 (row, output) pairs, the 16 outputs of a row in the 16 lanes of a zmm,
// which then take the float chain above (`amx_rows`). The weights are unpacked once per pass for
// all its rows (the win for prefill); a rest of fewer than 8 rows after the tiles of 16, and
// passes under 28 rows (decoding, verification), take the 512-bit path.
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/util/Half.h>
#include <torch/library.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define KQ_AVX2 1
#if defined(__AVXVNNI__)
#define KQ_VNNI 1
#define KQ_DPBUSD _mm256_dpbusd_avx_epi32
#elif defined(__AVX512VNNI__) && defined(__AVX512VL__)
#define KQ_VNNI 1
#define KQ_DPBUSD _mm256_dpbusd_epi32
#endif
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__)
#define KQ_AVX512 1  // two k-steps a zmm (`pair`), tiles of 8 rows
#if defined(__AMX_TILE__) && defined(__AMX_INT8__)
#define KQ_AMX 1  // int8 tiles for passes of 28 rows or more (`amx_rows_min`)
#include <sys/syscall.h>
#include <unistd.h>

#include <vector>
#endif
#endif
#endif

namespace spec_lsp_native {
struct QRow {
  int8_t* q;
  float* d;
  float* s;
};
void quantize_row(const float* x, int64_t blocks, QRow out);  // q4.cpp
}  // namespace spec_lsp_native

namespace {

constexpr int64_t QK = 32, GROUP = 8;
constexpr int64_t WEIGHTS[3] = {32, 256, 256};    // weights per block, per kind
constexpr int64_t PACKED[3] = {176, 1184, 1680};  // bytes per group of 8 rows and block
// Offsets in a packed (group, block): see kblocks.py for the layouts.
constexpr int64_t Q5_NIB = 16, Q5_HIGH = 144;
constexpr int64_t Q4K_DMIN = 16, Q4K_SC = 32, Q4K_M = 96, Q4K_CODES = 160;
constexpr int64_t Q6K_SC = 16, Q6K_LOW = 144, Q6K_HIGH = 1168;

inline float f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return static_cast<float>(c10::Half(h, c10::Half::from_bits()));
}

// The activations of all rows: codes [M, K], scales d and d * sum(codes) [M, K / 32], integer
// sums of the codes per 16 [M, K / 16] (for the offsets of Q5_0's and Q6_K's unsigned codes).
struct Act {
  const int8_t* q;
  const float* d;
  const float* s;
  const int32_t* sum16;
  int64_t blocks;  // K / 32
};

#ifdef KQ_AVX2
inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}
inline __m256i load(const uint8_t* p) { return _mm256_loadu_si256((const __m256i*)p); }
inline __m256i bytes_u32(const uint8_t* p) {  // 8 bytes -> 8 int32 lanes (unsigned)
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)p));
}
inline __m256i bytes_i32(const uint8_t* p) {  // 8 bytes -> 8 int32 lanes (signed)
  return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)p));
}
// Bits `from` .. of every byte moved to bit `to` (16-bit shifts: the caller masks the bits that
// cross from the neighbouring byte, which never reach the kept ones for these distances).
template <int FROM, int TO>
inline __m256i move_bits(__m256i v) {
  if constexpr (FROM < TO) return _mm256_slli_epi16(v, TO - FROM);
  else if constexpr (FROM > TO) return _mm256_srli_epi16(v, FROM - TO);
  else return v;
}

#ifdef KQ_AVX512
// Two k-steps in one zmm: 64-bit lane l holds (w[2k] of row l, w[2k + 1] of row l), so that one
// 8-byte broadcast of the activations a[8k .. 8k + 7] feeds both; the two 32-bit sums of a lane
// are added at the end (exact integers: the same sums as the 256-bit paths). Made once per block
// for tiles of 2 rows or more (a single row keeps the 256-bit dot products: cheaper alone).
struct Steps {
  __m512i v[4];
};
template <int R>
inline void to_steps(const __m256i* w, Steps& out) {
  const __m512i idx = _mm512_setr_epi32(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
  if constexpr (R >= 2)
    for (int k = 0; k < 4; ++k)
      out.v[k] = _mm512_permutexvar_epi32(
          idx, _mm512_inserti64x4(_mm512_castsi256_si512(w[2 * k]), w[2 * k + 1], 1));
}
#else
struct Steps {};
template <int R>
inline void to_steps(const __m256i*, Steps&) {}
#endif


// sum over k < S of w[k] . a[4k .. 4k + 3] per 32-bit lane: unsigned codes w (<= 15 for the
// 16-bit sums of the AVX2 path), returned as int32 lanes times `sc` (per lane).
template <int S>
inline __m256i dot_unsigned(const __m256i* w, const int8_t* qa, __m256i sc32) {
#ifdef KQ_VNNI
  __m256i acc = _mm256_setzero_si256();
  for (int k = 0; k < S; ++k) acc = KQ_DPBUSD(acc, w[k], bcast4(qa + 4 * k));
  return _mm256_mullo_epi32(acc, sc32);
#else
  __m256i s16 = _mm256_maddubs_epi16(w[0], bcast4(qa));
  for (int k = 1; k < S; ++k)
    s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(w[k], bcast4(qa + 4 * k)));
  // both 16-bit halves of a lane hold the lane's scale: the pair sum times it
  return _mm256_madd_epi16(s16, _mm256_or_si256(sc32, _mm256_slli_epi32(sc32, 16)));
#endif
}

// sum over k < S of w[k] . a[4k .. 4k + 3] per 32-bit lane, as int32, for unsigned codes w
// below 2^B (the AVX2 path widens its 16-bit sums every 2^(7 - B) steps: no saturation).
template <int S, int B>
inline __m256i dot_sums(const __m256i* w, const int8_t* qa) {
#ifdef KQ_VNNI
  __m256i acc = _mm256_setzero_si256();
  for (int k = 0; k < S; ++k) acc = KQ_DPBUSD(acc, w[k], bcast4(qa + 4 * k));
  return acc;
#else
  constexpr int STEPS = 1 << (7 - B);  // 2 (2^B - 1) 127 STEPS < 2^15
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i acc = _mm256_setzero_si256();
  for (int k0 = 0; k0 < S; k0 += STEPS) {
    __m256i s16 = _mm256_maddubs_epi16(w[k0], bcast4(qa + 4 * k0));
    for (int k = k0 + 1; k < k0 + STEPS && k < S; ++k)
      s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(w[k], bcast4(qa + 4 * k)));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(s16, ones));
  }
  return acc;
#endif
}

// N rows' 8 lanes at once: N = 2 (the 512-bit path) two rows in a zmm, row t in the low half, the
// same float operations lane by lane as N = 1 (a ymm); `Acc` holds PAIR rows.
#ifdef KQ_AVX512
constexpr int PAIR = 2;
using Acc = __m512;
inline __m512i sub(__m512i x, __m512i y) { return _mm512_sub_epi32(x, y); }
inline __m512i add(__m512i x, __m512i y) { return _mm512_add_epi32(x, y); }
inline __m512i mullo(__m512i x, __m512i y) { return _mm512_mullo_epi32(x, y); }
inline __m512 mul(__m512 x, __m512 y) { return _mm512_mul_ps(x, y); }
inline __m512 fma(__m512 x, __m512 y, __m512 z) { return _mm512_fmadd_ps(x, y, z); }
inline __m512 cvt(__m512i x) { return _mm512_cvtepi32_ps(x); }
// Rows a and b against the same weights: lane l of row a's sums in lane l, row b's in 8 + l.
template <int S>
inline __m512i dot_rows2(const __m512i* w, const int8_t* qa, const int8_t* qb) {
  __m512i x = _mm512_setzero_si512(), y = _mm512_setzero_si512();
  for (int k = 0; k < S / 2; ++k) {
    int64_t u, v;
    std::memcpy(&u, qa + 8 * k, 8);
    std::memcpy(&v, qb + 8 * k, 8);
    x = _mm512_dpbusd_epi32(x, w[k], _mm512_set1_epi64(u));
    y = _mm512_dpbusd_epi32(y, w[k], _mm512_set1_epi64(v));
  }
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  return _mm512_add_epi32(_mm512_permutex2var_epi32(x, even, y),
                          _mm512_permutex2var_epi32(x, odd, y));
}
#else
constexpr int PAIR = 1;
using Acc = __m256;
#endif
inline __m256i sub(__m256i x, __m256i y) { return _mm256_sub_epi32(x, y); }
inline __m256i add(__m256i x, __m256i y) { return _mm256_add_epi32(x, y); }
inline __m256i mullo(__m256i x, __m256i y) { return _mm256_mullo_epi32(x, y); }
inline __m256 mul(__m256 x, __m256 y) { return _mm256_mul_ps(x, y); }
inline __m256 fma(__m256 x, __m256 y, __m256 z) { return _mm256_fmadd_ps(x, y, z); }
inline __m256 cvt(__m256i x) { return _mm256_cvtepi32_ps(x); }

#ifdef KQ_AVX512
inline __m512 join(__m256 lo, __m256 hi) {  // (AVX512F: no 32x8 inserts, which are AVX512DQ)
  return _mm512_castpd_ps(
      _mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
}
#endif
template <int N>
struct Lanes {
  using F = __m256;
  using I = __m256i;
};
#ifdef KQ_AVX512
template <>
struct Lanes<2> {
  using F = __m512;
  using I = __m512i;
};
#endif
template <int N>
inline typename Lanes<N>::F two_f(float x, float y) {  // x in row a's lanes, y in row b's
  if constexpr (N == 1) return _mm256_set1_ps(x);
#ifdef KQ_AVX512
  else return join(_mm256_set1_ps(x), _mm256_set1_ps(y));
#endif
}
template <int N>
inline typename Lanes<N>::I two_i(int32_t x, int32_t y) {
  if constexpr (N == 1) return _mm256_set1_epi32(x);
#ifdef KQ_AVX512
  else return _mm512_inserti64x4(_mm512_set1_epi32(x), _mm256_set1_epi32(y), 1);
#endif
}
template <int N>
inline typename Lanes<N>::F dup_f(__m256 v) {  // the same 8 lanes for both rows
  if constexpr (N == 1) return v;
#ifdef KQ_AVX512
  else return join(v, v);
#endif
}
template <int N>
inline typename Lanes<N>::I dup_i(__m256i v) {
  if constexpr (N == 1) return v;
#ifdef KQ_AVX512
  else return _mm512_inserti64x4(_mm512_castsi256_si512(v), v, 1);
#endif
}
// Integer sums of rows qa (and qb, N = 2) against S k-steps of unsigned codes below 2^B.
// (k-steps k0 .. k0 + S - 1 of w, or of its pairs `ws`)
template <int S, int B, int N>
inline typename Lanes<N>::I dots(const __m256i* w, const Steps& ws, int k0, const int8_t* qa,
                                 const int8_t* qb) {
  if constexpr (N == 1) return dot_sums<S, B>(w + k0, qa);
#ifdef KQ_AVX512
  else return dot_rows2<S>(ws.v + k0 / 2, qa, qb);
#endif
}
template <int S, int N>  // the same times `sc` per lane (codes <= 15)
inline typename Lanes<N>::I dots_scaled(const __m256i* w, const Steps& ws, const int8_t* qa,
                                        const int8_t* qb, __m256i sc) {
  if constexpr (N == 1) return dot_unsigned<S>(w, qa, sc);
#ifdef KQ_AVX512
  else return mullo(dot_rows2<S>(ws.v, qa, qb), dup_i<N>(sc));
#endif
}
// A tile's accumulators: two rows a zmm in the 512-bit path's tiles of 2 rows or more (a single
// row keeps ymm registers: no 512-bit operation in a one-row pass), else a row a ymm.
template <int R>
using AccOf = std::conditional_t<(PAIR == 2 && R >= 2), Acc, __m256>;
template <class A>
constexpr int rows_in = sizeof(A) / sizeof(__m256);
// acc (rows t .. t + N - 1, or row t alone in the low half) += x y
inline void fma_into(__m256& acc, __m256 x, __m256 y) { acc = fma(x, y, acc); }
#ifdef KQ_AVX512
inline void fma_into(__m512& acc, __m512 x, __m512 y) { acc = fma(x, y, acc); }
inline void fma_into(__m512& acc, __m256 x, __m256 y) {
  acc = _mm512_castps256_ps512(fma(x, y, _mm512_castps512_ps256(acc)));
}
#endif
// f(N, t) for the tile's rows: pairs first where PAIR is 2, then single rows.
template <int R, class F>
inline void for_rows(F&& f) {
  int t = 0;
  if constexpr (rows_in<AccOf<R>> == 2)
    for (; t + 1 < R; t += 2) f(std::integral_constant<int, 2>{}, t);
  for (; t < R; ++t) f(std::integral_constant<int, 1>{}, t);
}

// [p, p + bytes) into L2 ahead of its use: a decode pass streams w from memory (4 blocks ahead,
// Q5_0 8; docs/benchmarks.md "Kernels" has what each distance measured). Past the end of w is
// harmless: a prefetch never faults.
inline void prefetch(const uint8_t* p, int64_t bytes) {
  for (int64_t o = 0; o < bytes; o += 64) _mm_prefetch((const char*)(p + o), _MM_HINT_T1);
}

inline void store_lanes(__m256 v, float* out, int64_t n0, int64_t N) {
  if (n0 + GROUP <= N) {
    _mm256_storeu_ps(out, v);
  } else {
    float tmp[GROUP];
    _mm256_storeu_ps(tmp, v);
    for (int64_t j = 0; j < N - n0; ++j) out[j] = tmp[j];
  }
}

// Rows r0 .. r0 + R - 1 of the accumulators (acc - mn where `mn`) into y.
template <int R, class A>
inline void store_rows(const A* acc, const A* mn, float* y, int64_t ldy, int64_t r0, int64_t n0,
                       int64_t N) {
  constexpr int P = rows_in<A>;
  for (int t = 0; t < R; ++t) {
    const A v = mn ? acc[t / P] - mn[t / P] : acc[t / P];
    __m256 lanes;
    if constexpr (P == 1) lanes = v;
#ifdef KQ_AVX512
    else if (t % 2) lanes = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
    else lanes = _mm512_castps512_ps256(v);
#endif
    store_lanes(lanes, y + (r0 + t) * ldy + n0, n0, N);
  }
}

template <int R>
void q5_0_tile(const uint8_t* wg, int64_t nb, Act a, int64_t r0, float* y, int64_t ldy,
               int64_t n0, int64_t N) {
  const __m256i low = _mm256_set1_epi8(0x0F), bit4 = _mm256_set1_epi8(0x10);
  using A = AccOf<R>;
  A acc[(R + rows_in<A> - 1) / rows_in<A>];
  for (A& v : acc) v = A{};
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = wg + b * PACKED[0];
    prefetch(blk + 8 * PACKED[0], PACKED[0]);
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)blk));
    const __m256i hv = load(blk + Q5_HIGH);
    __m256i nib[8], w[8];
    for (int q = 0; q < 4; ++q) {
      const __m256i raw = load(blk + Q5_NIB + 32 * q);
      nib[q] = _mm256_and_si256(raw, low);
      nib[q + 4] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low);
    }
    w[0] = _mm256_and_si256(move_bits<0, 4>(hv), bit4);
    w[1] = _mm256_and_si256(move_bits<1, 4>(hv), bit4);
    w[2] = _mm256_and_si256(move_bits<2, 4>(hv), bit4);
    w[3] = _mm256_and_si256(move_bits<3, 4>(hv), bit4);
    w[4] = _mm256_and_si256(move_bits<4, 4>(hv), bit4);
    w[5] = _mm256_and_si256(move_bits<5, 4>(hv), bit4);
    w[6] = _mm256_and_si256(move_bits<6, 4>(hv), bit4);
    w[7] = _mm256_and_si256(move_bits<7, 4>(hv), bit4);
    for (int k = 0; k < 8; ++k) w[k] = _mm256_or_si256(nib[k], w[k]);  // q, 0 .. 31
    Steps ws;
    to_steps<R>(w, ws);
    for_rows<R>([&](auto n, int t) {
      constexpr int M = decltype(n)::value;
      const int64_t i = (r0 + t) * a.blocks + b, i2 = i + (M - 1) * a.blocks;  // rows t, t + M - 1
      const auto offset = two_i<M>(16 * (a.sum16[2 * i] + a.sum16[2 * i + 1]),  // sum (q - 16) a
                                   16 * (a.sum16[2 * i2] + a.sum16[2 * i2 + 1]));
      const auto isum = sub(dots<8, 5, M>(w, ws, 0, a.q + i * QK, a.q + i2 * QK), offset);
      fma_into(acc[t / rows_in<A>], mul(dup_f<M>(dw), two_f<M>(a.d[i], a.d[i2])), cvt(isum));
    });
  }
  store_rows<R, A>(acc, nullptr, y, ldy, r0, n0, N);
}

template <int R>
void q4_k_tile(const uint8_t* wg, int64_t nb, Act a, int64_t r0, float* y, int64_t ldy,
               int64_t n0, int64_t N) {
  const __m256i low = _mm256_set1_epi8(0x0F);
  using A = AccOf<R>;
  A acc[(R + rows_in<A> - 1) / rows_in<A>], mn[(R + rows_in<A> - 1) / rows_in<A>];
  for (int t = 0; t < (R + rows_in<A> - 1) / rows_in<A>; ++t) acc[t] = mn[t] = A{};
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = wg + b * PACKED[1];
    prefetch(blk + 4 * PACKED[1], PACKED[1]);
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)blk));
    const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(blk + Q4K_DMIN)));
    for (int c = 0; c < 4; ++c) {
      __m256i raw[8], w[8];
      for (int k = 0; k < 8; ++k) raw[k] = load(blk + Q4K_CODES + 256 * c + 32 * k);
      for (int half = 0; half < 2; ++half) {
        const int j = 2 * c + half;
        for (int k = 0; k < 8; ++k)
          w[k] = _mm256_and_si256(half ? _mm256_srli_epi16(raw[k], 4) : raw[k], low);
        Steps ws;
        to_steps<R>(w, ws);
        const __m256i sc = bytes_u32(blk + Q4K_SC + 8 * j);
        const __m256 dm = _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(bytes_u32(blk + Q4K_M + 8 * j)));
        for_rows<R>([&](auto n, int t) {
          constexpr int M = decltype(n)::value;
          const int64_t i = (r0 + t) * a.blocks + 8 * b + j, i2 = i + (M - 1) * a.blocks;
          const auto p = dots_scaled<8, M>(w, ws, a.q + i * QK, a.q + i2 * QK, sc);
          fma_into(acc[t / rows_in<A>], mul(dup_f<M>(dw), two_f<M>(a.d[i], a.d[i2])), cvt(p));
          fma_into(mn[t / rows_in<A>], dup_f<M>(dm), two_f<M>(a.s[i], a.s[i2]));
        });
      }
    }
  }
  store_rows<R>(acc, mn, y, ldy, r0, n0, N);
}

// Activation block j = 4s + T of a Q6_K super-block: low nibbles lv (of chunk j / 2), 2-bit high
// parts at bits 2T of hv.
template <int R, int T>
inline void q6_k_block(const uint8_t* blk, int64_t b, const __m256i* lv, const __m256i* hv,
                       int half, int j, __m256 dw, Act a, int64_t r0, AccOf<R>* acc) {
  using A = AccOf<R>;
  const __m256i low = _mm256_set1_epi8(0x0F), two = _mm256_set1_epi8(0x30);
  __m256i w[8];  // q, 0 .. 63
  for (int k = 0; k < 8; ++k) {
    const __m256i lo = _mm256_and_si256(half ? _mm256_srli_epi16(lv[k], 4) : lv[k], low);
    w[k] = _mm256_or_si256(lo, _mm256_and_si256(move_bits<2 * T, 4>(hv[k]), two));
  }
  Steps ws;
  to_steps<R>(w, ws);
  const __m256i sa = bytes_i32(blk + Q6K_SC + 8 * (2 * j));
  const __m256i sb = bytes_i32(blk + Q6K_SC + 8 * (2 * j + 1));
  for_rows<R>([&](auto n, int t) {
    constexpr int M = decltype(n)::value;
    const int64_t i = (r0 + t) * a.blocks + 8 * b + j, i2 = i + (M - 1) * a.blocks;
    const int8_t *qa = a.q + i * QK, *qb = a.q + i2 * QK;
    // sc_a sum_lo (q - 32) a + sc_b sum_hi (q - 32) a
    const auto oa = two_i<M>(32 * a.sum16[2 * i], 32 * a.sum16[2 * i2]);
    const auto ob = two_i<M>(32 * a.sum16[2 * i + 1], 32 * a.sum16[2 * i2 + 1]);
    const auto ia = sub(dots<4, 6, M>(w, ws, 0, qa, qb), oa);
    const auto ib = sub(dots<4, 6, M>(w, ws, 4, qa + 16, qb + 16), ob);
    const auto p = add(mullo(ia, dup_i<M>(sa)), mullo(ib, dup_i<M>(sb)));
    fma_into(acc[t / rows_in<A>], mul(dup_f<M>(dw), two_f<M>(a.d[i], a.d[i2])), cvt(p));
  });
}

template <int R>
void q6_k_tile(const uint8_t* wg, int64_t nb, Act a, int64_t r0, float* y, int64_t ldy,
               int64_t n0, int64_t N) {
  using A = AccOf<R>;
  A acc[(R + rows_in<A> - 1) / rows_in<A>];
  for (A& v : acc) v = A{};
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = wg + b * PACKED[2];
    prefetch(blk + 4 * PACKED[2], PACKED[2]);
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)blk));
    for (int s = 0; s < 2; ++s) {
      __m256i hv[8], lv[8];
      for (int k = 0; k < 8; ++k) hv[k] = load(blk + Q6K_HIGH + 256 * s + 32 * k);
      for (int k = 0; k < 8; ++k) lv[k] = load(blk + Q6K_LOW + 256 * (2 * s) + 32 * k);
      q6_k_block<R, 0>(blk, b, lv, hv, 0, 4 * s, dw, a, r0, acc);
      q6_k_block<R, 1>(blk, b, lv, hv, 1, 4 * s + 1, dw, a, r0, acc);
      for (int k = 0; k < 8; ++k) lv[k] = load(blk + Q6K_LOW + 256 * (2 * s + 1) + 32 * k);
      q6_k_block<R, 2>(blk, b, lv, hv, 0, 4 * s + 2, dw, a, r0, acc);
      q6_k_block<R, 3>(blk, b, lv, hv, 1, 4 * s + 3, dw, a, r0, acc);
    }
  }
  store_rows<R, A>(acc, nullptr, y, ldy, r0, n0, N);
}

template <int R>
void tile(int kind, const uint8_t* wg, int64_t nb, Act a, int64_t r0, float* y, int64_t ldy,
          int64_t n0, int64_t N) {
  if (kind == 0) q5_0_tile<R>(wg, nb, a, r0, y, ldy, n0, N);
  else if (kind == 1) q4_k_tile<R>(wg, nb, a, r0, y, ldy, n0, N);
  else q6_k_tile<R>(wg, nb, a, r0, y, ldy, n0, N);
}

void group_rows(int kind, const uint8_t* wg, int64_t nb, Act a, int64_t M, float* y, int64_t ldy,
                int64_t n0, int64_t N) {
  int64_t r0 = 0;
#ifdef KQ_AVX512  // up to 32 rows per unpacked block (32 zmm registers; spills cost less)
  for (; r0 + 32 <= M; r0 += 32) tile<32>(kind, wg, nb, a, r0, y, ldy, n0, N);
  if (r0 + 16 <= M) tile<16>(kind, wg, nb, a, r0, y, ldy, n0, N), r0 += 16;
  if (r0 + 8 <= M) tile<8>(kind, wg, nb, a, r0, y, ldy, n0, N), r0 += 8;
  if (r0 + 4 <= M) tile<4>(kind, wg, nb, a, r0, y, ldy, n0, N), r0 += 4;
#else
  for (; r0 + 4 <= M; r0 += 4) tile<4>(kind, wg, nb, a, r0, y, ldy, n0, N);
#endif
  switch (M - r0) {
    case 3: tile<3>(kind, wg, nb, a, r0, y, ldy, n0, N); break;
    case 2: tile<2>(kind, wg, nb, a, r0, y, ldy, n0, N); break;
    case 1: tile<1>(kind, wg, nb, a, r0, y, ldy, n0, N); break;
    default: break;
  }
}

#ifdef KQ_AVX512
// -- Wide tiles: two groups (16 output rows) a zmm, one activation row a zmm ------------------
// The verification passes' path (2 rows or more, under AMX's 16 where there are tiles). Lane l of
// a zmm is output row l of group g (l < 8) or l - 8 of group g + 1, as in the AMX path, so that
// one 4-byte broadcast of a row's activations feeds 16 output rows and a row's float chain needs
// no lane shuffles: per block of 32, 8 dot products and 4-5 vector operations a row, against 8
// dot products and ~14 operations for the pair-of-rows zmm (`dot_rows2`). The weights of both
// groups are unpacked once per block for all the tile's rows. The integer sums and the float
// operations are the other paths', lane by lane: the same bits (tests/engine/weights/test_kquants.py).
// `kq_wide_rows` sets the fewest rows that take it (2, Q6_K 3; to compare the paths in one process).
// The blocks are prefetched further ahead than by the other paths (two streams at once).
std::atomic<int64_t> wide_rows_min{2};
constexpr int WIDE_TILE = 16;  // activation rows per tile (their accumulators stay in registers)
// Both groups' blocks `AHEAD` blocks on, each stream into the next pair's group past its end (the
// groups lie one after the other: group g's block nb + i is group g + 2's block i, 2 groups on).
template <int KIND, int AHEAD>
inline void wide_prefetch(const uint8_t* blk, const uint8_t* blh, int64_t b, int64_t nb) {
  const int64_t on = (AHEAD + (b + AHEAD >= nb ? nb : 0)) * PACKED[KIND];
  prefetch(blk + on, PACKED[KIND]);
  prefetch(blh + on, PACKED[KIND]);
}

inline __m512i load2(const uint8_t* p, const uint8_t* q) {  // 32 bytes of each group
  return _mm512_inserti64x4(_mm512_castsi256_si512(load(p)), load(q), 1);
}
inline __m512 halves2(const uint8_t* p, const uint8_t* q) {  // 8 fp16 of each group
  return _mm512_cvtph_ps(_mm256_inserti128_si256(
      _mm256_castsi128_si256(_mm_loadu_si128((const __m128i*)p)),
      _mm_loadu_si128((const __m128i*)q), 1));
}
inline __m128i bytes2(const uint8_t* p, const uint8_t* q) {  // 8 bytes of each group
  return _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i*)p), _mm_loadl_epi64((const __m128i*)q));
}
template <int FROM, int TO>
inline __m512i move_bits(__m512i v) {
  if constexpr (FROM < TO) return _mm512_slli_epi16(v, TO - FROM);
  else if constexpr (FROM > TO) return _mm512_srli_epi16(v, FROM - TO);
  else return v;
}
// sum over k < S of w[k] . a[4k .. 4k + 3] per 32-bit lane (exact; two chains, added at the end)
template <int S>
inline __m512i wide_dots(const __m512i* w, const int8_t* qa) {
  __m512i x = _mm512_setzero_si512(), y = _mm512_setzero_si512();
  for (int k = 0; k < S; k += 2) {
    int32_t u, v;
    std::memcpy(&u, qa + 4 * k, 4);
    std::memcpy(&v, qa + 4 * k + 4, 4);
    x = _mm512_dpbusd_epi32(x, w[k], _mm512_set1_epi32(u));
    y = _mm512_dpbusd_epi32(y, w[k + 1], _mm512_set1_epi32(v));
  }
  return _mm512_add_epi32(x, y);
}
// acc = fma(d_w d_x, float(p), acc): the float chain of every path, 16 lanes
inline __m512 wide_step(__m512 acc, __m512 dw, float dx, __m512i p) {
  return _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(dx)), _mm512_cvtepi32_ps(p), acc);
}
inline void wide_store(__m512 v, float* out, int64_t n0, int64_t N) {
  store_lanes(_mm512_castps512_ps256(v), out, n0, N);
  if (n0 + GROUP < N)
    store_lanes(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)), out + GROUP,
                n0 + GROUP, N);
}

template <int R>
void q5_0_wide(const uint8_t* wg, const uint8_t* wh, int64_t nb, Act a, int64_t r0, float* y,
               int64_t ldy, int64_t n0, int64_t N) {
  const __m512i low = _mm512_set1_epi8(0x0F), bit4 = _mm512_set1_epi8(0x10);
  __m512 acc[R];
  for (__m512& v : acc) v = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t *blk = wg + b * PACKED[0], *blh = wh + b * PACKED[0];
    wide_prefetch<0, 16>(blk, blh, b, nb);
    const __m512 dw = halves2(blk, blh);
    const __m512i hv = load2(blk + Q5_HIGH, blh + Q5_HIGH);
    __m512i w[8];
    for (int q = 0; q < 4; ++q) {
      const __m512i raw = load2(blk + Q5_NIB + 32 * q, blh + Q5_NIB + 32 * q);
      w[q] = _mm512_and_si512(raw, low);
      w[q + 4] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low);
    }
    w[0] = _mm512_or_si512(w[0], _mm512_and_si512(move_bits<0, 4>(hv), bit4));
    w[1] = _mm512_or_si512(w[1], _mm512_and_si512(move_bits<1, 4>(hv), bit4));
    w[2] = _mm512_or_si512(w[2], _mm512_and_si512(move_bits<2, 4>(hv), bit4));
    w[3] = _mm512_or_si512(w[3], _mm512_and_si512(move_bits<3, 4>(hv), bit4));
    w[4] = _mm512_or_si512(w[4], _mm512_and_si512(move_bits<4, 4>(hv), bit4));
    w[5] = _mm512_or_si512(w[5], _mm512_and_si512(move_bits<5, 4>(hv), bit4));
    w[6] = _mm512_or_si512(w[6], _mm512_and_si512(move_bits<6, 4>(hv), bit4));
    w[7] = _mm512_or_si512(w[7], _mm512_and_si512(move_bits<7, 4>(hv), bit4));
    for (int t = 0; t < R; ++t) {
      const int64_t i = (r0 + t) * a.blocks + b;
      const __m512i off = _mm512_set1_epi32(16 * (a.sum16[2 * i] + a.sum16[2 * i + 1]));
      acc[t] = wide_step(acc[t], dw, a.d[i], _mm512_sub_epi32(wide_dots<8>(w, a.q + i * QK), off));
    }
  }
  for (int t = 0; t < R; ++t) wide_store(acc[t], y + (r0 + t) * ldy + n0, n0, N);
}

template <int R>
void q4_k_wide(const uint8_t* wg, const uint8_t* wh, int64_t nb, Act a, int64_t r0, float* y,
               int64_t ldy, int64_t n0, int64_t N) {
  const __m512i low = _mm512_set1_epi8(0x0F);
  __m512 acc[R];
  for (__m512& v : acc) v = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t *blk = wg + b * PACKED[1], *blh = wh + b * PACKED[1];
    wide_prefetch<1, 4>(blk, blh, b, nb);
    const __m512 dw = halves2(blk, blh);
    for (int c = 0; c < 4; ++c) {
      __m512i raw[8], w[8];
      for (int k = 0; k < 8; ++k)
        raw[k] = load2(blk + Q4K_CODES + 256 * c + 32 * k, blh + Q4K_CODES + 256 * c + 32 * k);
      for (int half = 0; half < 2; ++half) {
        const int j = 2 * c + half;
        for (int k = 0; k < 8; ++k)
          w[k] = _mm512_and_si512(half ? _mm512_srli_epi16(raw[k], 4) : raw[k], low);
        const __m512i sc = _mm512_cvtepu8_epi32(bytes2(blk + Q4K_SC + 8 * j, blh + Q4K_SC + 8 * j));
        for (int t = 0; t < R; ++t) {
          const int64_t i = (r0 + t) * a.blocks + 8 * b + j;
          const __m512i p = _mm512_mullo_epi32(wide_dots<8>(w, a.q + i * QK), sc);
          acc[t] = wide_step(acc[t], dw, a.d[i], p);
        }
      }
    }
  }
  // mn = fma(dmin float(m), s_x, mn), a chain of its own (as the AMX path's)
  for (int t = 0; t < R; ++t) {
    __m512 mn = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t *blk = wg + b * PACKED[1], *blh = wh + b * PACKED[1];
      const __m512 dmin = halves2(blk + Q4K_DMIN, blh + Q4K_DMIN);
      for (int j = 0; j < 8; ++j) {
        const __m512i m = _mm512_cvtepu8_epi32(bytes2(blk + Q4K_M + 8 * j, blh + Q4K_M + 8 * j));
        const __m512 dm = _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(m));
        mn = _mm512_fmadd_ps(dm, _mm512_set1_ps(a.s[(r0 + t) * a.blocks + 8 * b + j]), mn);
      }
    }
    wide_store(_mm512_sub_ps(acc[t], mn), y + (r0 + t) * ldy + n0, n0, N);
  }
}

template <int R, int T>  // activation block j = 4s + T of a Q6_K super-block (see q6_k_block)
inline void q6_k_wide_block(const uint8_t* blk, const uint8_t* blh, const __m512i* lv,
                            const __m512i* hv, int half, int j, __m512 dw, Act a, int64_t r0,
                            int64_t b, __m512* acc) {
  const __m512i low = _mm512_set1_epi8(0x0F), two = _mm512_set1_epi8(0x30);
  __m512i w[8];  // q, 0 .. 63
  for (int k = 0; k < 8; ++k) {
    const __m512i lo = _mm512_and_si512(half ? _mm512_srli_epi16(lv[k], 4) : lv[k], low);
    w[k] = _mm512_or_si512(lo, _mm512_and_si512(move_bits<2 * T, 4>(hv[k]), two));
  }
  const int64_t sa = Q6K_SC + 8 * (2 * j), sb = sa + 8;
  const __m512i sca = _mm512_cvtepi8_epi32(bytes2(blk + sa, blh + sa));
  const __m512i scb = _mm512_cvtepi8_epi32(bytes2(blk + sb, blh + sb));
  for (int t = 0; t < R; ++t) {
    const int64_t i = (r0 + t) * a.blocks + 8 * b + j;
    const int8_t* qa = a.q + i * QK;
    const __m512i ia =
        _mm512_sub_epi32(wide_dots<4>(w, qa), _mm512_set1_epi32(32 * a.sum16[2 * i]));
    const __m512i ib =
        _mm512_sub_epi32(wide_dots<4>(w + 4, qa + 16), _mm512_set1_epi32(32 * a.sum16[2 * i + 1]));
    const __m512i p = _mm512_add_epi32(_mm512_mullo_epi32(ia, sca), _mm512_mullo_epi32(ib, scb));
    acc[t] = wide_step(acc[t], dw, a.d[i], p);
  }
}

template <int R>
void q6_k_wide(const uint8_t* wg, const uint8_t* wh, int64_t nb, Act a, int64_t r0, float* y,
               int64_t ldy, int64_t n0, int64_t N) {
  __m512 acc[R];
  for (__m512& v : acc) v = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t *blk = wg + b * PACKED[2], *blh = wh + b * PACKED[2];
    wide_prefetch<2, 4>(blk, blh, b, nb);
    const __m512 dw = halves2(blk, blh);
    for (int s = 0; s < 2; ++s) {
      __m512i hv[8], lv[8];
      for (int k = 0; k < 8; ++k) {
        const int64_t h = Q6K_HIGH + 256 * s + 32 * k, l = Q6K_LOW + 256 * (2 * s) + 32 * k;
        hv[k] = load2(blk + h, blh + h);
        lv[k] = load2(blk + l, blh + l);
      }
      q6_k_wide_block<R, 0>(blk, blh, lv, hv, 0, 4 * s, dw, a, r0, b, acc);
      q6_k_wide_block<R, 1>(blk, blh, lv, hv, 1, 4 * s + 1, dw, a, r0, b, acc);
      for (int k = 0; k < 8; ++k) {
        const int64_t l = Q6K_LOW + 256 * (2 * s + 1) + 32 * k;
        lv[k] = load2(blk + l, blh + l);
      }
      q6_k_wide_block<R, 2>(blk, blh, lv, hv, 0, 4 * s + 2, dw, a, r0, b, acc);
      q6_k_wide_block<R, 3>(blk, blh, lv, hv, 1, 4 * s + 3, dw, a, r0, b, acc);
    }
  }
  for (int t = 0; t < R; ++t) wide_store(acc[t], y + (r0 + t) * ldy + n0, n0, N);
}

template <int R>
void wide_tile(int kind, const uint8_t* wg, const uint8_t* wh, int64_t nb, Act a, int64_t r0,
               float* y, int64_t ldy, int64_t n0, int64_t N) {
  if (kind == 0) q5_0_wide<R>(wg, wh, nb, a, r0, y, ldy, n0, N);
  else if (kind == 1) q4_k_wide<R>(wg, wh, nb, a, r0, y, ldy, n0, N);
  else q6_k_wide<R>(wg, wh, nb, a, r0, y, ldy, n0, N);
}

template <int... R>
void wide_rows_of(std::integer_sequence<int, R...>, int rows, int kind, const uint8_t* wg,
                  const uint8_t* wh, int64_t nb, Act a, int64_t r0, float* y, int64_t ldy,
                  int64_t n0, int64_t N) {
  ((rows == R + 1 ? wide_tile<R + 1>(kind, wg, wh, nb, a, r0, y, ldy, n0, N) : void()), ...);
}

// Rows 0 .. M - 1 against groups g and g + 1 (output rows n0 .. n0 + 15), in tiles of 16 rows
// and one tile of the rest.
void wide_rows(int kind, const uint8_t* wg, const uint8_t* wh, int64_t nb, Act a, int64_t M,
               float* y, int64_t ldy, int64_t n0, int64_t N) {
  for (int64_t r0 = 0; r0 < M; r0 += WIDE_TILE)
    wide_rows_of(std::make_integer_sequence<int, WIDE_TILE>{},
                 (int)std::min<int64_t>(WIDE_TILE, M - r0), kind, wg, wh, nb, a, r0, y, ldy, n0,
                 N);
}
#endif

#ifdef KQ_AMX
// -- AMX: 16 activation rows x 16 output rows per tile product -------------------------------
// TDPBSSD (signed x signed bytes, groups of 4 into int32): C[r][n] += sum_k A[r][k] B[k/4][4n + k%4]
// with A the activation codes of 16 rows (their own layout: row r, 32 bytes of block j, stride K)
// and B two packed groups side by side (row k/4: group g's vector k/4, then group g + 1's), the
// codes made signed (Q5_0 q - 16, Q6_K q - 32: no offsets to take off), so that C[r] is the exact
// block sum of row r for the 16 output rows in the 16 lanes of a zmm: the lanes of the other
// paths. Q6_K's halves (a scale per 16) are two products of K = 16. The weights of a pair of
// groups are unpacked once over all of K (`Panel`, the B tiles and the lanes' scales) and used by
// every tile of 16 activation rows; the float chain then is the other paths', lane by lane:
//   Q5_0: acc = fma(d_w d_x, float(C), acc)
//   Q4_K: acc = fma(d_w d_x, float(C) float(sc), acc); mn = fma(dmin float(m), s_x, mn)
//   Q6_K: acc = fma(d_w d_x, float(C_lo) float(sc_a) + float(C_hi) float(sc_b), acc)
// The products and the sum are exact integers below 2^24 (|C| <= 15 127 32 for Q4_K, times 63;
// |C_lo|, |C_hi| <= 32 127 16, times 128, two of them), so each float is the integer the other
// paths convert: the same bits.
// Passes of fewer rows keep the zmm path (decode, verification); `kq_amx_rows` changes it (to
// compare the paths in one process: tests, benchmarks). 28, not 16: what a row costs is mostly
// the float chain, which the tiles do not shorten, and a tile's 16 rows are paid whole; on the
// AMX Xeon (2026-12-07, docs/benchmarks.md "Kernels") passes of 16-27 rows took 8-25% less time by
// the zmm path, the same at 28, and from 29 rows (28-31 padded to two tiles) the tiles won.
std::atomic<int64_t> amx_rows_min{28};
constexpr int AMX_TILE = 16;  // activation rows (and output rows) per tile

bool amx_ready() {  // the process's permission to use the tile data (Linux 5.16+), asked once
  static const bool ok = syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */,
                                 18 /* XFEATURE_XTILEDATA */) == 0;
  return ok;
}

// GCC's `_tile_loadconfig` and `_tile_loadd` do not say that they read memory (only 8 bytes of the
// configuration): what they read is written before this compiler barrier.
inline void amx_barrier() { asm volatile("" ::: "memory"); }

// Tiles, two blocks of 32 activations at a time: Q5_0 and Q4_K: 0, 1 the sums C (16 x 16 int32),
// 2, 3 A (16 rows x 32 bytes), 4, 5 B (8 x 64); Q6_K (halves of 16): 0 - 3 the sums, 4, 5 A (16
// x 16 bytes), 6, 7 B (4 x 64).
void amx_config(int kind) {
  struct alignas(64) {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
  } cfg;
  std::memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  const int k32[8][2] = {{16, 64}, {16, 64}, {16, 32}, {16, 32}, {8, 64}, {8, 64}, {0, 0}, {0, 0}};
  const int k16[8][2] = {{16, 64}, {16, 64}, {16, 64}, {16, 64},
                         {16, 16}, {16, 16}, {4, 64},  {4, 64}};
  const auto& shape = kind == 2 ? k16 : k32;
  for (int t = 0; t < 8; ++t) cfg.rows[t] = shape[t][0], cfg.colsb[t] = shape[t][1];
  amx_barrier();
  _tile_loadconfig(&cfg);
}

// Two groups (16 output rows) over all K / 32 activation blocks j: B tiles (512 bytes a block)
// and, per block, VECS vectors of 16 floats (lanes 0-7 group g, 8-15 group g + 1):
// Q5_0 d; Q4_K d, float(sc), dmin float(m); Q6_K d, float(sc_a), float(sc_b).
struct Panel {
  std::vector<int8_t> b;
  std::vector<float> f;
  static constexpr int VECS[3] = {1, 3, 3};
};

inline void put8(float* f, int v, int h, __m256 x) { _mm256_storeu_ps(f + 16 * v + 8 * h, x); }
inline void put_codes(int8_t* b, int h, const __m256i* w, int8_t minus) {
  const __m256i off = _mm256_set1_epi8(minus);
  for (int k = 0; k < 8; ++k)
    _mm256_storeu_si256((__m256i*)(b + 64 * k + 32 * h), _mm256_sub_epi8(w[k], off));
}

// Group wg's codes and scales into half h of the panel (the same unpacking as the tiles above).
void unpack_group(int kind, const uint8_t* wg, int64_t nb, int h, Panel& p) {
  const int V = Panel::VECS[kind];
  const __m256i low = _mm256_set1_epi8(0x0F);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = wg + b * PACKED[kind];
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)blk));
    if (kind == 0) {
      const __m256i bit4 = _mm256_set1_epi8(0x10), hv = load(blk + Q5_HIGH);
      __m256i w[8];
      for (int q = 0; q < 4; ++q) {
        const __m256i raw = load(blk + Q5_NIB + 32 * q);
        w[q] = _mm256_and_si256(raw, low);
        w[q + 4] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low);
      }
      w[0] = _mm256_or_si256(w[0], _mm256_and_si256(move_bits<0, 4>(hv), bit4));
      w[1] = _mm256_or_si256(w[1], _mm256_and_si256(move_bits<1, 4>(hv), bit4));
      w[2] = _mm256_or_si256(w[2], _mm256_and_si256(move_bits<2, 4>(hv), bit4));
      w[3] = _mm256_or_si256(w[3], _mm256_and_si256(move_bits<3, 4>(hv), bit4));
      w[4] = _mm256_or_si256(w[4], _mm256_and_si256(move_bits<4, 4>(hv), bit4));
      w[5] = _mm256_or_si256(w[5], _mm256_and_si256(move_bits<5, 4>(hv), bit4));
      w[6] = _mm256_or_si256(w[6], _mm256_and_si256(move_bits<6, 4>(hv), bit4));
      w[7] = _mm256_or_si256(w[7], _mm256_and_si256(move_bits<7, 4>(hv), bit4));
      put_codes(p.b.data() + 512 * b, h, w, 16);
      put8(p.f.data() + 16 * V * b, 0, h, dw);
    } else if (kind == 1) {
      const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(blk + Q4K_DMIN)));
      for (int c = 0; c < 4; ++c)
        for (int half = 0; half < 2; ++half) {
          const int jl = 2 * c + half;
          const int64_t j = 8 * b + jl;
          __m256i w[8];
          for (int k = 0; k < 8; ++k) {
            const __m256i raw = load(blk + Q4K_CODES + 256 * c + 32 * k);
            w[k] = _mm256_and_si256(half ? _mm256_srli_epi16(raw, 4) : raw, low);
          }
          put_codes(p.b.data() + 512 * j, h, w, 0);
          float* f = p.f.data() + 16 * V * j;
          put8(f, 0, h, dw);
          put8(f, 1, h, _mm256_cvtepi32_ps(bytes_u32(blk + Q4K_SC + 8 * jl)));
          put8(f, 2, h, _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(bytes_u32(blk + Q4K_M + 8 * jl))));
        }
    } else {
      const __m256i two = _mm256_set1_epi8(0x30);
      for (int jl = 0; jl < 8; ++jl) {
        const int64_t j = 8 * b + jl;
        // high bits 2T of the vectors of blocks 4s + T, to bits 4 and 5
        const __m128i shift = _mm_cvtsi32_si128(2 * (jl & 3));
        __m256i w[8];
        for (int k = 0; k < 8; ++k) {
          const __m256i lv = load(blk + Q6K_LOW + 256 * (jl / 2) + 32 * k);
          const __m256i hv = load(blk + Q6K_HIGH + 256 * (jl / 4) + 32 * k);
          const __m256i lo = _mm256_and_si256((jl & 1) ? _mm256_srli_epi16(lv, 4) : lv, low);
          const __m256i hi = _mm256_slli_epi16(_mm256_srl_epi16(hv, shift), 4);
          w[k] = _mm256_or_si256(lo, _mm256_and_si256(hi, two));
        }
        put_codes(p.b.data() + 512 * j, h, w, 32);
        float* f = p.f.data() + 16 * V * j;
        put8(f, 0, h, dw);
        put8(f, 1, h, _mm256_cvtepi32_ps(bytes_i32(blk + Q6K_SC + 8 * (2 * jl))));
        put8(f, 2, h, _mm256_cvtepi32_ps(bytes_i32(blk + Q6K_SC + 8 * (2 * jl + 1))));
      }
    }
  }
}

// The block sums of activation rows r0 .. r0 + 15 (codes qa) against the panel's blocks j and,
// where TWO, j + 1 into c and c + 512 (Q6_K: the high halves' at + 256).
template <int KIND, bool TWO>
inline void amx_sums(const Panel& p, const int8_t* qa, int64_t K, int64_t j, int32_t* c) {
  const int8_t *bt = p.b.data() + 512 * j, *at = qa + QK * j;
  if constexpr (KIND != 2) {
    _tile_zero(0);
    _tile_loadd(2, at, K);
    _tile_loadd(4, bt, 64);
    if constexpr (TWO) {
      _tile_zero(1);
      _tile_loadd(3, at + QK, K);
      _tile_loadd(5, bt + 512, 64);
    }
    _tile_dpbssd(0, 2, 4);
    if constexpr (TWO) _tile_dpbssd(1, 3, 5);
    _tile_stored(0, c, 64);
    if constexpr (TWO) _tile_stored(1, c + 512, 64);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_loadd(4, at, K);
    _tile_loadd(6, bt, 64);
    _tile_loadd(5, at + 16, K);
    _tile_loadd(7, bt + 256, 64);
    _tile_dpbssd(0, 4, 6);
    _tile_dpbssd(1, 5, 7);
    if constexpr (TWO) {
      _tile_zero(2);
      _tile_zero(3);
      _tile_loadd(4, at + QK, K);
      _tile_loadd(6, bt + 512, 64);
      _tile_loadd(5, at + QK + 16, K);
      _tile_loadd(7, bt + 512 + 256, 64);
      _tile_dpbssd(2, 4, 6);
      _tile_dpbssd(3, 5, 7);
    }
    _tile_stored(0, c, 64);
    _tile_stored(1, c + 256, 64);
    if constexpr (TWO) {
      _tile_stored(2, c + 512, 64);
      _tile_stored(3, c + 768, 64);
    }
  }
}
template <int KIND>
inline void amx_stage(const Panel& p, const int8_t* qa, int64_t K, int64_t j, int32_t* c) {
  if (j + 1 < K / QK) amx_sums<KIND, true>(p, qa, K, j, c);
  else amx_sums<KIND, false>(p, qa, K, j, c);
}

// Output rows n0 .. n0 + 15 (the panel's) for activation rows r0 .. r0 + 15 (rows from M on are
// padding: computed, not stored).
template <int KIND>
void amx_rows(const Panel& p, Act a, int64_t r0, int64_t M, float* y, int64_t N, int64_t n0) {
  constexpr int V = Panel::VECS[KIND];
  const int64_t G = a.blocks, K = G * QK;
  const int8_t* qa = a.q + r0 * K;
  alignas(64) float mn[AMX_TILE][16];
  if constexpr (KIND == 1) {  // mn = fma(dmin float(m), s_x, mn), a chain of its own
    __m512 m[AMX_TILE];
    for (__m512& v : m) v = _mm512_setzero_ps();
    for (int64_t j = 0; j < G; ++j) {
      const __m512 dm = _mm512_loadu_ps(p.f.data() + 16 * (V * j + 2));
      for (int r = 0; r < AMX_TILE; ++r)
        m[r] = _mm512_fmadd_ps(dm, _mm512_set1_ps(a.s[(r0 + r) * G + j]), m[r]);
    }
    for (int r = 0; r < AMX_TILE; ++r) _mm512_store_ps(mn[r], m[r]);
  }
  __m512 acc[AMX_TILE];
  for (__m512& v : acc) v = _mm512_setzero_ps();
  alignas(64) int32_t c[2][1024];  // two stages of two blocks' sums in flight
  amx_stage<KIND>(p, qa, K, 0, c[0]);
  for (int64_t j = 0; j < G; ++j) {
    if (j % 2 == 0 && j + 2 < G) amx_stage<KIND>(p, qa, K, j + 2, c[(j / 2 + 1) & 1]);
    const int32_t* cj = c[(j / 2) & 1] + 512 * (j & 1);
    const float* f = p.f.data() + 16 * V * j;
    const __m512 dw = _mm512_loadu_ps(f);
    for (int r = 0; r < AMX_TILE; ++r) {
      __m512 s = _mm512_cvtepi32_ps(_mm512_load_si512(cj + 16 * r));
      if constexpr (KIND == 1) s = _mm512_mul_ps(s, _mm512_loadu_ps(f + 16));
      if constexpr (KIND == 2)
        s = _mm512_add_ps(
            _mm512_mul_ps(s, _mm512_loadu_ps(f + 16)),
            _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_load_si512(cj + 256 + 16 * r)),
                          _mm512_loadu_ps(f + 32)));
      const __m512 dd = _mm512_mul_ps(dw, _mm512_set1_ps(a.d[(r0 + r) * G + j]));
      acc[r] = _mm512_fmadd_ps(dd, s, acc[r]);
    }
  }
  const __mmask16 lanes = (__mmask16)((1u << std::min<int64_t>(16, N - n0)) - 1);
  for (int r = 0; r < AMX_TILE && r0 + r < M; ++r) {
    __m512 v = acc[r];
    if constexpr (KIND == 1) v = _mm512_sub_ps(v, _mm512_load_ps(mn[r]));
    _mm512_mask_storeu_ps(y + (r0 + r) * N + n0, lanes, v);
  }
}

// Rows 0 .. M - 1 (the activations padded to whole tiles of 16 rows) against every pair of groups.
void amx_mm(int kind, const uint8_t* wp, int64_t groups, int64_t nb, Act a, int64_t M, float* y,
            int64_t N) {
  const int64_t gb = nb * PACKED[kind], G = a.blocks;
  at::parallel_for(0, (groups + 1) / 2, 1, [&](int64_t begin, int64_t end) {
    amx_config(kind);
    Panel p;
    p.b.resize(512 * G);
    p.f.resize(16 * Panel::VECS[kind] * G);
    for (int64_t pair = begin; pair < end; ++pair) {
      for (int h = 0; h < 2; ++h) {
        const int64_t g = 2 * pair + h;
        if (g < groups) {
          unpack_group(kind, wp + g * gb, nb, h, p);
        } else {  // a last group alone: zero codes and scales in the other half
          for (int64_t j = 0; j < G; ++j) {
            for (int k = 0; k < 8; ++k) std::memset(p.b.data() + 512 * j + 64 * k + 32, 0, 32);
            for (int v = 0; v < Panel::VECS[kind]; ++v)
              std::memset(p.f.data() + 16 * (Panel::VECS[kind] * j + v) + 8, 0, 32);
          }
        }
      }
      amx_barrier();  // the panel, and the activations, are in memory for the tile loads
      for (int64_t r0 = 0; r0 < M; r0 += AMX_TILE) {
        if (kind == 0) amx_rows<0>(p, a, r0, M, y, N, 16 * pair);
        else if (kind == 1) amx_rows<1>(p, a, r0, M, y, N, 16 * pair);
        else amx_rows<2>(p, a, r0, M, y, N, 16 * pair);
      }
    }
    _tile_release();
  });
}
#endif
#endif

// -- plain C++: the codes of a packed (group, block), the same mathematics lane by lane -------

// Code x (0 .. 31) of activation block j of row l, as the signed weight code (Q4_K: 0 .. 15).
inline int code(int kind, const uint8_t* blk, int l, int j, int x) {
  const int at = 32 * (x / 4) + 4 * l + (x & 3);
  if (kind == 0) {
    const int nib = (blk[Q5_NIB + 32 * ((x / 4) & 3) + 4 * l + (x & 3)] >> (4 * (x / 16))) & 15;
    const int hb = (blk[Q5_HIGH + 4 * l + (x & 3)] >> (x / 4)) & 1;
    return (nib | hb << 4) - 16;
  }
  if (kind == 1) return (blk[Q4K_CODES + 256 * (j / 2) + at] >> (4 * (j & 1))) & 15;
  const int lo = (blk[Q6K_LOW + 256 * (j / 2) + at] >> (4 * (j & 1))) & 15;
  const int hi = (blk[Q6K_HIGH + 256 * (j / 4) + at] >> (2 * (j & 3))) & 3;
  return (lo | hi << 4) - 32;
}

void group_rows_plain(int kind, const uint8_t* wg, int64_t nb, Act a, int64_t M, float* y,
                      int64_t ldy, int64_t n0, int64_t N) {
  const int64_t per = WEIGHTS[kind] / QK;  // activation blocks per block
  for (int64_t r = 0; r < M; ++r) {
    float acc[GROUP] = {}, mn[GROUP] = {};
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blk = wg + b * PACKED[kind];
      for (int j = 0; j < per; ++j) {
        const int64_t i = r * a.blocks + per * b + j;
        const int8_t* qa = a.q + i * QK;
        for (int l = 0; l < GROUP; ++l) {
          int32_t sums[2] = {0, 0};
          for (int x = 0; x < QK; ++x) sums[x / 16] += code(kind, blk, l, j, x) * qa[x];
          int32_t p = sums[0] + sums[1];
          if (kind == 1) p *= blk[Q4K_SC + 8 * j + l];
          if (kind == 2)
            p = (int8_t)blk[Q6K_SC + 8 * (2 * j) + l] * sums[0] +
                (int8_t)blk[Q6K_SC + 8 * (2 * j + 1) + l] * sums[1];
          acc[l] = std::fma(f16(blk + 2 * l) * a.d[i], (float)p, acc[l]);
          if (kind == 1) {
            const float dm = f16(blk + Q4K_DMIN + 2 * l) * (float)blk[Q4K_M + 8 * j + l];
            mn[l] = std::fma(dm, a.s[i], mn[l]);
          }
        }
      }
    }
    for (int64_t l = 0; l < GROUP && n0 + l < N; ++l)
      y[r * ldy + n0 + l] = kind == 1 ? acc[l] - mn[l] : acc[l];
  }
}

void check_packed(const at::Tensor& w, int64_t N, int64_t K, int64_t kind, const char* what) {
  TORCH_CHECK(kind >= 0 && kind < 3, what, ": kind 0 (Q5_0), 1 (Q4_K) or 2 (Q6_K)");
  TORCH_CHECK(w.dim() == 3 && w.scalar_type() == at::kByte && w.is_contiguous() &&
                  w.device().is_cpu(),
              what, ": w must be contiguous uint8 [groups, blocks, bytes] on the CPU");
  const int64_t groups = w.size(0);
  TORCH_CHECK(K % WEIGHTS[kind] == 0 && w.size(1) == K / WEIGHTS[kind] &&
                  w.size(2) == PACKED[kind],
              what, ": w does not hold the packed blocks of K inputs");
  TORCH_CHECK(N > (groups - 1) * GROUP && N <= groups * GROUP, what, ": N does not fit the groups");
}

at::Tensor kq_mm(const at::Tensor& x_in, const at::Tensor& w, int64_t N, int64_t kind) {
  TORCH_CHECK(x_in.dim() == 2, "kq_mm: x [M, K]");
  const at::Tensor x = x_in.to(at::kFloat).contiguous();
  const int64_t M = x.size(0), K = x.size(1), G = K / QK;
  check_packed(w, N, K, kind, "kq_mm");
  at::Tensor y = at::empty({M, N}, x.options());
  // Rows 0 .. Ma - 1 in AMX tiles of 16 (the last padded to Mq), the rest (M - Ma) by the
  // vectors: a last tile of 8 rows or more is padded, fewer rows are cheaper by the vectors.
  int64_t Ma = 0, Mq = M;
#ifdef KQ_AMX
  if (M >= amx_rows_min.load() && amx_ready()) {
    Ma = M % AMX_TILE >= 8 ? M : M - M % AMX_TILE;
    Mq = std::max(M, (Ma + AMX_TILE - 1) / AMX_TILE * AMX_TILE);
  }
#endif
  at::Tensor xq = at::empty({Mq, K}, x.options().dtype(at::kChar));
  at::Tensor xd = at::empty({Mq, G}, x.options());
  at::Tensor xs = at::empty({Mq, G}, x.options());
  const float* xp = x.data_ptr<float>();
  int8_t* qp = xq.data_ptr<int8_t>();
  float *dp = xd.data_ptr<float>(), *sp = xs.data_ptr<float>();
  for (int64_t r = 0; r < M; ++r)
    spec_lsp_native::quantize_row(xp + r * K, G,
                                  spec_lsp_native::QRow{qp + r * K, dp + r * G, sp + r * G});
  const int64_t nb = K / WEIGHTS[kind], gb = nb * PACKED[kind];
  const uint8_t* wp = w.data_ptr<uint8_t>();
  float* yp = y.data_ptr<float>();
#ifdef KQ_AMX
  if (Ma > 0) {  // padding rows: zero codes and scales (their outputs are not stored)
    std::memset(qp + M * K, 0, (Mq - M) * K);
    std::memset(dp + M * G, 0, (Mq - M) * G * sizeof(float));
    std::memset(sp + M * G, 0, (Mq - M) * G * sizeof(float));
    amx_mm((int)kind, wp, w.size(0), nb, Act{qp, dp, sp, nullptr, G}, Ma, yp, N);
    if (Ma == M) return y;
  }
#endif
  const int64_t Mv = M - Ma;  // rows Ma .. M - 1
  at::Tensor xsum = at::empty({Mv, 2 * G}, x.options().dtype(at::kInt));
  int32_t* up = xsum.data_ptr<int32_t>();
  const int8_t* qv = qp + Ma * K;
  for (int64_t h = 0; h < 2 * Mv * G; ++h) {
    int32_t sum = 0;
    for (int e = 0; e < 16; ++e) sum += qv[16 * h + e];
    up[h] = sum;
  }
  const Act a{qv, dp + Ma * G, sp + Ma * G, up, G};
  float* yv = yp + Ma * N;
#ifdef KQ_AVX512
  // Pairs of groups, a zmm each: from 2 rows (Q6_K from 3: measured slower for 2 rows, where its
  // wider unpacking outweighs the rows' savings)
  if (Mv >= std::max<int64_t>(wide_rows_min.load(), kind == 2 ? 3 : 2)) {
    const int64_t groups = w.size(0);
    at::parallel_for(0, (groups + 1) / 2, 1, [&](int64_t begin, int64_t end) {
      for (int64_t pair = begin; pair < end; ++pair) {
        const int64_t g = 2 * pair;
        if (g + 1 < groups)
          wide_rows((int)kind, wp + g * gb, wp + (g + 1) * gb, nb, a, Mv, yv, N, g * GROUP, N);
        else  // a last group alone
          group_rows((int)kind, wp + g * gb, nb, a, Mv, yv, N, g * GROUP, N);
      }
    });
    return y;
  }
#endif
  at::parallel_for(0, w.size(0), 2, [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g) {
#ifdef KQ_AVX2
      group_rows((int)kind, wp + g * gb, nb, a, Mv, yv, N, g * GROUP, N);
#else
      group_rows_plain((int)kind, wp + g * gb, nb, a, Mv, yv, N, g * GROUP, N);
#endif
    }
  });
  return y;
}

// gguf-py's dequantization, in float32 and its order: Q5_0 d (q - 16); Q4_K (d sc) q - dmin m;
// Q6_K (d sc) (q - 32).
at::Tensor kq_dequant(const at::Tensor& w, int64_t N, int64_t K, int64_t kind) {
  check_packed(w, N, K, kind, "kq_dequant");
  at::Tensor out = at::empty({N, K}, w.options().dtype(at::kFloat));
  const int64_t nb = K / WEIGHTS[kind], per = WEIGHTS[kind] / QK;
  const uint8_t* wp = w.data_ptr<uint8_t>();
  float* op = out.data_ptr<float>();
  at::parallel_for(0, w.size(0), 4, [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g)
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = wp + (g * nb + b) * PACKED[kind];
        for (int l = 0; l < GROUP && g * GROUP + l < N; ++l) {
          const float d = f16(blk + 2 * l);
          for (int j = 0; j < per; ++j) {
            float* o = op + (g * GROUP + l) * K + b * WEIGHTS[kind] + QK * j;
            for (int x = 0; x < QK; ++x) {
              const float q = (float)code((int)kind, blk, l, j, x);
              if (kind == 0) {
                o[x] = d * q;
              } else if (kind == 1) {
                const float ds = d * (float)blk[Q4K_SC + 8 * j + l];
                const float dm = f16(blk + Q4K_DMIN + 2 * l) * (float)blk[Q4K_M + 8 * j + l];
                o[x] = ds * q - dm;
              } else {
                o[x] = (d * (float)(int8_t)blk[Q6K_SC + 8 * (2 * j + x / 16) + l]) * q;
              }
            }
          }
        }
      }
  });
  return out;
}

int64_t kq_isa() {
#if defined(KQ_AMX)
  return amx_ready() ? 4 : 3;
#elif defined(KQ_AVX512)
  return 3;
#elif defined(KQ_VNNI)
  return 2;
#elif defined(KQ_AVX2)
  return 1;
#else
  return 0;
#endif
}

// The fewest rows of a pass that the AMX path computes (28 unless changed); `rows` > 0 sets it
// and the previous value is returned. -1 where the library has no AMX path or may not use it.
int64_t kq_amx_rows(int64_t rows) {
#ifdef KQ_AMX
  if (!amx_ready()) return -1;
  return rows > 0 ? amx_rows_min.exchange(rows) : amx_rows_min.load();
#else
  (void)rows;
  return -1;
#endif
}

// The fewest rows of a pass that the wide tiles compute (2 unless changed; the AMX tiles take
// passes from `kq_amx_rows` on); `rows` > 0 sets it (1 << 30: never) and the previous value is
// returned. -1 where the library has no wide path (no AVX-512 VNNI).
int64_t kq_wide_rows(int64_t rows) {
#ifdef KQ_AVX512
  return rows > 0 ? wide_rows_min.exchange(rows) : wide_rows_min.load();
#else
  (void)rows;
  return -1;
#endif
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(spec_lsp, m) {
  m.def("kq_mm(Tensor x, Tensor w, int N, int kind) -> Tensor", &kq_mm);
  m.def("kq_dequant(Tensor w, int N, int K, int kind) -> Tensor", &kq_dequant);
  m.def("kq_isa() -> int", &kq_isa);
  m.def("kq_amx_rows(int rows) -> int", &kq_amx_rows);
  m.def("kq_wide_rows(int rows) -> int", &kq_wide_rows);
}
