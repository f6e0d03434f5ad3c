// spec-lsp's CPU products over GGUF blocks, with activations quantized per block of 32 to int8
// (as llama.cpp does), in integer dot products (AVX2) or plain C++ elsewhere.
//
//   q4_mm(x [M, K] f32, w [ceil(N/8), K/32, 160] u8, N): Q4_1 blocks (d q + m), packed by 8 rows
//   q8_mm(x [M, K] f32, w [ceil(N/8), K/32, 272] u8, N): Q8_0 blocks (d q), packed by 8 rows
//   q4_dequant(w, N, K) / q8_dequant(w, N, K) -> [N, K] f32
//
// Exactness across batch sizes: every output element y[r, n] is computed from row r of x and row
// n of w alone, in the same order of operations whatever M is and whichever thread computes it,
// so a pass over k rows gives, row for row, bitwise the numbers of k one-row passes.
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>
#include <ATen/ops/empty_like.h>
#include <c10/util/Half.h>

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define SPEC_LSP_AVX2 1
#endif

namespace {

constexpr int64_t QK = 32;
constexpr int64_t Q4_BYTES = 20;  // f16 d, f16 m, 16 bytes: code j low nibble, j + 16 high
constexpr int64_t Q8_BYTES = 34;  // f16 d, 32 int8 codes

inline float f16_to_f32(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
#ifdef SPEC_LSP_AVX2
  return _cvtsh_ss(h);
#else
  const uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F, man = h & 0x3FF, bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal
      exp = 127 - 15 + 1;
      while (!(man & 0x400)) { man <<= 1; --exp; }
      bits = sign | (exp << 23) | ((man & 0x3FF) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7F800000 | (man << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
#endif
}

}  // namespace

// Shared with kquants.cpp (one activation format for every kind of block).
namespace spec_lsp_native {

// One row's activations per block: codes q = round(x / d), d = max|x| / 127, s = d * sum(q).
struct QRow {
  int8_t* q;
  float* d;
  float* s;
};

void quantize_row(const float* x, int64_t blocks, QRow out) {
  for (int64_t b = 0; b < blocks; ++b) {
    const float* xb = x + b * QK;
    float amax = 0.f;
    for (int i = 0; i < QK; ++i) amax = std::fmax(amax, std::fabs(xb[i]));
    const float d = amax / 127.f;
    const float id = d != 0.f ? 127.f / amax : 0.f;
    int sum = 0;
    for (int i = 0; i < QK; ++i) {
      const int v = (int)std::nearbyint(xb[i] * id);
      out.q[b * QK + i] = (int8_t)v;
      sum += v;
    }
    out.d[b] = d;
    out.s[b] = d * (float)sum;
  }
}

}  // namespace spec_lsp_native

namespace {

using spec_lsp_native::QRow;
using spec_lsp_native::quantize_row;

// Weights are stored interleaved by groups of 8 output rows (`qblocks.pack`): per group and block
// of 32 inputs, the 8 rows' fp16 scales side by side (and, Q4_1, their fp16 minimums), then their
// codes so that one 32-byte vector holds 4 consecutive codes of each of the 8 rows (Q4_1: two such
// vectors in one, low and high nibbles). A block's product for 8 rows is then 8 integer
// multiply-adds against 4 broadcast activations each, and each output row stays in its own lane:
// no horizontal sums, the scales applied to 8 rows at once.
//
// Per (activation row r, output row n) the order of operations is fixed: blocks in order, one
// accumulator for d_w d_x sum(q_w q_x) (a fused multiply-add per block) and one for m_w s_x,
// added at the end; integer sums are exact. Whatever M is, and whichever thread or tile computes
// it, a row's result is the same bits.
constexpr int64_t GROUP = 8;        // output rows interleaved together
constexpr int64_t P4_BYTES = 160;   // Q4_1, per group and block: 8 d, 8 m (fp16), 128 code bytes
constexpr int64_t P8_BYTES = 272;   // Q8_0: 8 d (fp16), 256 code bytes

#ifdef SPEC_LSP_AVX2
inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Rows r0 .. r0 + R - 1 of x against one group's G blocks: y[r, n0 .. n0 + 7].
template <bool Q4, int R>
void group_tile(const uint8_t* wg, int64_t G, const int8_t* xq, const float* xd, const float* xs,
                int64_t r0, float* y, int64_t ldy, int64_t n0, int64_t N) {
  const int64_t pb = Q4 ? P4_BYTES : P8_BYTES;
  const __m256i ones = _mm256_set1_epi16(1), low = _mm256_set1_epi8(0x0F);
  __m256 acc[R], mins[R];
  for (int t = 0; t < R; ++t) { acc[t] = _mm256_setzero_ps(); mins[t] = _mm256_setzero_ps(); }
  for (int64_t b = 0; b < G; ++b) {
    const uint8_t* blk = wg + b * pb;
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)blk));
    const __m256 mw = Q4 ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(blk + 16)))
                         : _mm256_setzero_ps();
    __m256i w[8], wabs[8];
    if (Q4) {
      for (int q = 0; q < 4; ++q) {
        const __m256i raw = _mm256_loadu_si256((const __m256i*)(blk + 32 + 32 * q));
        w[q] = _mm256_and_si256(raw, low);
        w[q + 4] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low);
      }
    } else {
      for (int k = 0; k < 8; ++k) {
        w[k] = _mm256_loadu_si256((const __m256i*)(blk + 16 + 32 * k));
        wabs[k] = _mm256_sign_epi8(w[k], w[k]);
      }
    }
    for (int t = 0; t < R; ++t) {
      const int64_t i = (r0 + t) * G + b;
      const int8_t* qa = xq + i * QK;
      __m256i isum;
      if (Q4) {  // pairs of code (0..15) x activation (|a| <= 127): 8 steps stay within int16
        __m256i s16 = _mm256_maddubs_epi16(w[0], bcast4(qa));
        for (int k = 1; k < 8; ++k)
          s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(w[k], bcast4(qa + 4 * k)));
        isum = _mm256_madd_epi16(s16, ones);
      } else {  // |code| <= 128: one step's pairs fill int16, widened at each step
        isum = _mm256_setzero_si256();
        for (int k = 0; k < 8; ++k) {
          const __m256i p = _mm256_maddubs_epi16(wabs[k], _mm256_sign_epi8(bcast4(qa + 4 * k), w[k]));
          isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, ones));
        }
      }
      const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(xd[i]));
      acc[t] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(isum), acc[t]);
      if (Q4) mins[t] = _mm256_fmadd_ps(mw, _mm256_set1_ps(xs[i]), mins[t]);
    }
  }
  for (int t = 0; t < R; ++t) {
    const __m256 v = Q4 ? _mm256_add_ps(acc[t], mins[t]) : acc[t];
    float* out = y + (r0 + t) * ldy + n0;
    if (n0 + GROUP <= N) {
      _mm256_storeu_ps(out, v);
    } else {
      float tmp[GROUP];
      _mm256_storeu_ps(tmp, v);
      for (int64_t j = 0; j < N - n0; ++j) out[j] = tmp[j];
    }
  }
}

template <bool Q4>
void group_rows(const uint8_t* wg, int64_t G, const int8_t* xq, const float* xd, const float* xs,
                int64_t M, float* y, int64_t ldy, int64_t n0, int64_t N) {
  int64_t r0 = 0;
  for (; r0 + 4 <= M; r0 += 4) group_tile<Q4, 4>(wg, G, xq, xd, xs, r0, y, ldy, n0, N);
  switch (M - r0) {
    case 3: group_tile<Q4, 3>(wg, G, xq, xd, xs, r0, y, ldy, n0, N); break;
    case 2: group_tile<Q4, 2>(wg, G, xq, xd, xs, r0, y, ldy, n0, N); break;
    case 1: group_tile<Q4, 1>(wg, G, xq, xd, xs, r0, y, ldy, n0, N); break;
    default: break;
  }
}
#else
// Plain C++: the same mathematics, lane by lane.
template <bool Q4>
void group_rows(const uint8_t* wg, int64_t G, const int8_t* xq, const float* xd, const float* xs,
                int64_t M, float* y, int64_t ldy, int64_t n0, int64_t N) {
  const int64_t pb = Q4 ? P4_BYTES : P8_BYTES;
  for (int64_t r = 0; r < M; ++r) {
    float acc[GROUP] = {}, mins[GROUP] = {};
    for (int64_t b = 0; b < G; ++b) {
      const uint8_t* blk = wg + b * pb;
      const uint8_t* codes = blk + (Q4 ? 32 : 16);
      const int64_t i = r * G + b;
      const int8_t* qa = xq + i * QK;
      for (int l = 0; l < GROUP; ++l) {
        int32_t isum = 0;
        for (int k = 0; k < 8; ++k)
          for (int e = 0; e < 4; ++e) {
            int qv;
            if (Q4) {
              const uint8_t byte = codes[32 * (k & 3) + 4 * l + e];
              qv = k < 4 ? (byte & 0x0F) : (byte >> 4);
            } else {
              qv = (int8_t)codes[32 * k + 4 * l + e];
            }
            isum += qv * qa[4 * k + e];
          }
        const float scale = f16_to_f32(blk + 2 * l) * xd[i];
        acc[l] = std::fma(scale, (float)isum, acc[l]);
        if (Q4) mins[l] = std::fma(f16_to_f32(blk + 16 + 2 * l), xs[i], mins[l]);
      }
    }
    for (int64_t l = 0; l < GROUP && n0 + l < N; ++l)
      y[r * ldy + n0 + l] = Q4 ? acc[l] + mins[l] : acc[l];
  }
}
#endif

template <bool Q4>
at::Tensor blocks_mm(const at::Tensor& x_in, const at::Tensor& w, int64_t N) {
  TORCH_CHECK(x_in.dim() == 2 && w.dim() == 3, "q_mm: x [M, K] and w [groups, K / 32, bytes]");
  TORCH_CHECK(w.scalar_type() == at::kByte && w.is_contiguous() && w.device().is_cpu(),
              "q_mm: w must be contiguous uint8 on the CPU");
  const at::Tensor x = x_in.to(at::kFloat).contiguous();
  const int64_t M = x.size(0), K = x.size(1), groups = w.size(0);
  TORCH_CHECK(K % QK == 0, "q_mm: K must be a multiple of 32");
  const int64_t G = K / QK, pb = Q4 ? P4_BYTES : P8_BYTES;
  TORCH_CHECK(w.size(1) == G && w.size(2) == pb, "q_mm: w does not hold K / 32 packed blocks");
  TORCH_CHECK(N > (groups - 1) * GROUP && N <= groups * GROUP, "q_mm: N does not fit the groups");
  at::Tensor y = at::empty({M, N}, x.options());
  at::Tensor xq = at::empty({M, K}, x.options().dtype(at::kChar));
  at::Tensor xd = at::empty({M, G}, x.options());
  at::Tensor xs = at::empty({M, G}, x.options());
  const float* xp = x.data_ptr<float>();
  int8_t* qp = xq.data_ptr<int8_t>();
  float* dp = xd.data_ptr<float>();
  float* sp = xs.data_ptr<float>();
  for (int64_t r = 0; r < M; ++r)
    quantize_row(xp + r * K, G, QRow{qp + r * K, dp + r * G, sp + r * G});
  const uint8_t* wp = w.data_ptr<uint8_t>();
  float* yp = y.data_ptr<float>();
  at::parallel_for(0, groups, 2, [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g)
      group_rows<Q4>(wp + g * G * pb, G, qp, dp, sp, M, yp, N, g * GROUP, N);
  });
  return y;
}

// The packed matrix de-quantized: [N, K] float32, row n = output row n (d q + m; Q8_0: d q).
template <bool Q4>
at::Tensor blocks_dequant(const at::Tensor& w, int64_t N, int64_t K) {
  TORCH_CHECK(w.scalar_type() == at::kByte && w.is_contiguous() && w.dim() == 3,
              "q_dequant: w must be contiguous uint8 [groups, K / 32, bytes]");
  const int64_t groups = w.size(0), G = K / QK, pb = Q4 ? P4_BYTES : P8_BYTES;
  TORCH_CHECK(K % QK == 0 && w.size(1) == G && w.size(2) == pb,
              "q_dequant: w does not hold K / 32 packed blocks");
  TORCH_CHECK(N > (groups - 1) * GROUP && N <= groups * GROUP, "q_dequant: N does not fit");
  at::Tensor out = at::empty({N, K}, w.options().dtype(at::kFloat));
  const uint8_t* wp = w.data_ptr<uint8_t>();
  float* op = out.data_ptr<float>();
  at::parallel_for(0, groups, 4, [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g)
      for (int64_t b = 0; b < G; ++b) {
        const uint8_t* blk = wp + (g * G + b) * pb;
        const uint8_t* codes = blk + (Q4 ? 32 : 16);
        for (int64_t l = 0; l < GROUP && g * GROUP + l < N; ++l) {
          float* o = op + (g * GROUP + l) * K + b * QK;
          const float d = f16_to_f32(blk + 2 * l);
          const float m = Q4 ? f16_to_f32(blk + 16 + 2 * l) : 0.f;
          for (int k = 0; k < 8; ++k)
            for (int e = 0; e < 4; ++e) {
              if (Q4) {
                const uint8_t byte = codes[32 * (k & 3) + 4 * l + e];
                o[4 * k + e] = d * (float)(k < 4 ? (byte & 0x0F) : (byte >> 4)) + m;
              } else {
                o[4 * k + e] = d * (float)(int8_t)codes[32 * k + 4 * l + e];
              }
            }
        }
      }
  });
  return out;
}
// -- the small operations of a decode-sized pass (each row on its own, in a fixed order) -----

// Sum over i of a[i] * b[i] in 8 lanes (i mod 8), the lanes added pairwise at the end.
inline float dot8(const float* a, const float* b, int64_t n) {
  float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) lane[l] += a[i + l] * b[i + l];
  for (int l = 0; i < n; ++i, ++l) lane[l] += a[i] * b[i];
  return ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
}

// y = x / sqrt(mean(x^2) + eps) * w, row by row.
at::Tensor rms_norm(const at::Tensor& x_in, const at::Tensor& w_in, double eps) {
  const at::Tensor x = x_in.to(at::kFloat).contiguous(), w = w_in.to(at::kFloat).contiguous();
  const int64_t H = x.size(-1), M = x.numel() / H;
  TORCH_CHECK(w.numel() == H, "rms_norm: weight of another width");
  at::Tensor y = at::empty_like(x);
  const float *xp = x.data_ptr<float>(), *wp = w.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  for (int64_t r = 0; r < M; ++r) {
    const float* xr = xp + r * H;
    const float inv = 1.f / std::sqrt(dot8(xr, xr, H) / (float)H + (float)eps);
    for (int64_t i = 0; i < H; ++i) yp[r * H + i] = xr[i] * inv * wp[i];
  }
  return y;
}

// [M, 2F] (gate, up) -> [M, F]: silu(gate) * up, element by element (the same value whichever
// thread computes it: the threads split the elements).
at::Tensor silu_mul(const at::Tensor& gu_in) {
  const at::Tensor gu = gu_in.to(at::kFloat).contiguous();
  const int64_t F2 = gu.size(-1), F = F2 / 2, M = gu.numel() / F2;
  at::Tensor y = at::empty({M, F}, gu.options());
  const float* gp = gu.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  at::parallel_for(0, M * F, 2048, [&](int64_t begin, int64_t end) {
    int64_t r = begin / F, i = begin % F;  // one division a chunk, not one an element
    for (int64_t e = begin; e < end; ++e) {
      const float g = gp[r * F2 + i];
      yp[e] = g / (1.f + std::exp(-g)) * gp[r * F2 + F + i];
      if (++i == F) i = 0, ++r;
    }
  });
  return y;
}

// p[j] = exp(p[j] - mx) for j < len; returns their sum (8 lanes, added pairwise at the end).
// exp as Cephes' expf: 2^n times a degree-7 polynomial on [-ln2 / 2, ln2 / 2] (~1 ulp).
inline float exp_poly(float x) {
  x = std::fmin(std::fmax(x, -88.3762626647949f), 88.3762626647949f);
  const float fx = std::floor(x * 1.44269504088896341f + 0.5f);
  x = x - fx * 0.693359375f + fx * 2.12194440e-4f;
  float y = 1.9875691500E-4f;
  y = y * x + 1.3981999507E-3f;
  y = y * x + 8.3334519073E-3f;
  y = y * x + 4.1665795894E-2f;
  y = y * x + 1.6666665459E-1f;
  y = y * x + 5.0000001201E-1f;
  y = y * x * x + x + 1.f;
  const int32_t bits = ((int32_t)fx + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, 4);
  return y * scale;
}

inline float exp_shifted(float* p, int64_t len, float mx) {
  float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
#ifdef SPEC_LSP_AVX2
  __m256 acc = _mm256_setzero_ps();
  const __m256 lo = _mm256_set1_ps(-88.3762626647949f), hi = _mm256_set1_ps(88.3762626647949f);
  for (; j + 8 <= len; j += 8) {
    __m256 x = _mm256_sub_ps(_mm256_loadu_ps(p + j), _mm256_set1_ps(mx));
    x = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
    const __m256 fx = _mm256_floor_ps(
        _mm256_add_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)), _mm256_set1_ps(0.5f)));
    x = _mm256_add_ps(_mm256_sub_ps(x, _mm256_mul_ps(fx, _mm256_set1_ps(0.693359375f))),
                      _mm256_mul_ps(fx, _mm256_set1_ps(2.12194440e-4f)));
    __m256 y = _mm256_set1_ps(1.9875691500E-4f);
    y = _mm256_add_ps(_mm256_mul_ps(y, x), _mm256_set1_ps(1.3981999507E-3f));
    y = _mm256_add_ps(_mm256_mul_ps(y, x), _mm256_set1_ps(8.3334519073E-3f));
    y = _mm256_add_ps(_mm256_mul_ps(y, x), _mm256_set1_ps(4.1665795894E-2f));
    y = _mm256_add_ps(_mm256_mul_ps(y, x), _mm256_set1_ps(1.6666665459E-1f));
    y = _mm256_add_ps(_mm256_mul_ps(y, x), _mm256_set1_ps(5.0000001201E-1f));
    y = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(y, x), x), x), _mm256_set1_ps(1.f));
    const __m256i n = _mm256_slli_epi32(
        _mm256_add_epi32(_mm256_cvttps_epi32(fx), _mm256_set1_epi32(127)), 23);
    y = _mm256_mul_ps(y, _mm256_castsi256_ps(n));
    _mm256_storeu_ps(p + j, y);
    acc = _mm256_add_ps(acc, y);
  }
  _mm256_storeu_ps(lane, acc);
#endif
  for (int l = 0; j < len; ++j, ++l) {
    p[j] = exp_poly(p[j] - mx);
    lane[l & 7] += p[j];  // the tail after 8-lane vectors (all of it in plain C++)
  }
  return ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
}

// The largest of p[0 .. len) (exact in any order).
inline float max_of(const float* p, int64_t len) {
  float mx = p[0];
  int64_t j = 0;
#ifdef SPEC_LSP_AVX2
  if (len >= 8) {
    __m256 m = _mm256_loadu_ps(p);
    for (j = 8; j + 8 <= len; j += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(p + j));
    float lanes[8];
    _mm256_storeu_ps(lanes, m);
    for (int l = 0; l < 8; ++l) mx = std::fmax(mx, lanes[l]);
  }
#endif
  for (; j < len; ++j) mx = std::fmax(mx, p[j]);
  return mx;
}

// The KV cache holds float32 or float16 (c10::Half): loaded as float32, exactly.
inline float to_f32(float v) { return v; }
inline float to_f32(c10::Half v) { return static_cast<float>(v); }
template <typename T>
inline T from_f32(float v) { return static_cast<T>(v); }  // float16: round to nearest even

#ifdef SPEC_LSP_AVX2
inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const c10::Half* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p));
}
#endif

// Scores of HB query heads (q [HB, D]) over keys lo .. hi - 1 (K [D, ks]): p[h * ps + j - lo].
// Each score is a chain of fused multiply-adds over d = 0 .. D - 1 (vector and scalar alike), so
// it does not depend on where the vector loops end; each key vector is loaded once for HB heads.
template <typename T, int HB>
void scores_heads(const float* q, const T* K, int64_t ks, int64_t D, int64_t lo, int64_t hi,
                  float* p, int64_t ps) {
  int64_t j = lo;
#ifdef SPEC_LSP_AVX2
  for (; j + 32 <= hi; j += 32) {
    __m256 acc[HB][4];
    for (int h = 0; h < HB; ++h)
      for (int i = 0; i < 4; ++i) acc[h][i] = _mm256_setzero_ps();
    for (int64_t d = 0; d < D; ++d) {
      const T* kd = K + d * ks + j;
      // The D key rows are D streams, more than the hardware prefetchers follow: fetch each
      // row's next 32 keys ahead (past the end of the keys it is harmless).
      _mm_prefetch((const char*)(kd + 64), _MM_HINT_T0);
      __m256 qd[HB];
      for (int h = 0; h < HB; ++h) qd[h] = _mm256_set1_ps(q[h * D + d]);
      for (int i = 0; i < 4; ++i) {
        const __m256 kv = load8(kd + 8 * i);
        for (int h = 0; h < HB; ++h) acc[h][i] = _mm256_fmadd_ps(qd[h], kv, acc[h][i]);
      }
    }
    for (int h = 0; h < HB; ++h)
      for (int i = 0; i < 4; ++i) _mm256_storeu_ps(p + h * ps + (j - lo) + 8 * i, acc[h][i]);
  }
  for (; j + 8 <= hi; j += 8) {
    __m256 acc[HB];
    for (int h = 0; h < HB; ++h) acc[h] = _mm256_setzero_ps();
    for (int64_t d = 0; d < D; ++d) {
      const __m256 kv = load8(K + d * ks + j);
      for (int h = 0; h < HB; ++h) acc[h] = _mm256_fmadd_ps(_mm256_set1_ps(q[h * D + d]), kv, acc[h]);
    }
    for (int h = 0; h < HB; ++h) _mm256_storeu_ps(p + h * ps + (j - lo), acc[h]);
  }
  if (j < hi && j + 8 <= ks) {
    // The last 1-7 keys as one vector reaching into the keys after them (still the row: rows are
    // padded past the capacity), the lanes past hi dropped: each score's chain as the scalar
    // loop's, without its latency (D dependent FMAs for each key and head, one at a time).
    __m256 acc[HB];
    for (int h = 0; h < HB; ++h) acc[h] = _mm256_setzero_ps();
    for (int64_t d = 0; d < D; ++d) {
      const __m256 kv = load8(K + d * ks + j);
      for (int h = 0; h < HB; ++h) acc[h] = _mm256_fmadd_ps(_mm256_set1_ps(q[h * D + d]), kv, acc[h]);
    }
    float lanes[8];
    for (int h = 0; h < HB; ++h) {
      _mm256_storeu_ps(lanes, acc[h]);
      for (int64_t l = 0; l < hi - j; ++l) p[h * ps + (j - lo) + l] = lanes[l];
    }
    j = hi;
  }
#endif
  for (; j < hi; ++j)
    for (int h = 0; h < HB; ++h) {
      float sum = 0.f;
      for (int64_t d = 0; d < D; ++d) sum = std::fma(q[h * D + d], to_f32(K[d * ks + j]), sum);
      p[h * ps + (j - lo)] = sum;
    }
}

// o[h * D + d] = sum over j = lo .. hi - 1 of p[h * ps + j - lo] V[j, d] (V [cap, D]): a chain of
// fused multiply-adds over j for each output, each value vector loaded once for HB heads.
template <typename T, int HB>
void mix_heads(const float* p, int64_t ps, const T* V, int64_t D, int64_t lo, int64_t hi,
               float* o) {
  int64_t d0 = 0;
#ifdef SPEC_LSP_AVX2
  for (; d0 + 32 <= D; d0 += 32) {
    __m256 acc[HB][4];
    for (int h = 0; h < HB; ++h)
      for (int i = 0; i < 4; ++i) acc[h][i] = _mm256_setzero_ps();
    for (int64_t j = lo; j < hi; ++j) {
      const T* vj = V + j * D + d0;
      __m256 pj[HB];
      for (int h = 0; h < HB; ++h) pj[h] = _mm256_set1_ps(p[h * ps + (j - lo)]);
      for (int i = 0; i < 4; ++i) {
        const __m256 vv = load8(vj + 8 * i);
        for (int h = 0; h < HB; ++h) acc[h][i] = _mm256_fmadd_ps(pj[h], vv, acc[h][i]);
      }
    }
    for (int h = 0; h < HB; ++h)
      for (int i = 0; i < 4; ++i) _mm256_storeu_ps(o + h * D + d0 + 8 * i, acc[h][i]);
  }
#endif
  for (int64_t d = d0; d < D; ++d)
    for (int h = 0; h < HB; ++h) {
      float sum = 0.f;
      for (int64_t j = lo; j < hi; ++j) sum = std::fma(p[h * ps + (j - lo)], to_f32(V[j * D + d]), sum);
      o[h * D + d] = sum;
    }
}

// One part of a row's keys for HB heads: scores, their maximum m and sum s of exp(score - m)
// (`exp_shifted`), and the values mixed by those unnormalized weights. part: [HB, D + 2] as
// (o[0 .. D), m, s); an empty part has m = -inf, s = 0.
template <typename T, int HB>
void attend_part(const float* q, const T* K, const T* V, int64_t ks, int64_t D, int64_t lo,
                 int64_t hi, float* scratch, float* part) {
  const int64_t len = hi - lo, ps = len;
  if (len <= 0) {
    for (int h = 0; h < HB; ++h) {
      for (int64_t d = 0; d < D; ++d) part[h * (D + 2) + d] = 0.f;
      part[h * (D + 2) + D] = -INFINITY;
      part[h * (D + 2) + D + 1] = 0.f;
    }
    return;
  }
  scores_heads<T, HB>(q, K, ks, D, lo, hi, scratch, ps);
  float o[HB * 256];
  for (int h = 0; h < HB; ++h) {
    float* ph = scratch + h * ps;
    const float mx = max_of(ph, len);
    part[h * (D + 2) + D] = mx;
    part[h * (D + 2) + D + 1] = exp_shifted(ph, len, mx);
  }
  mix_heads<T, HB>(scratch, ps, V, D, lo, hi, o);
  for (int h = 0; h < HB; ++h)
    for (int64_t d = 0; d < D; ++d) part[h * (D + 2) + d] = o[h * D + d];
}

// The split of a row's len keys into the two parts that two threads attend to: [0, mid), [mid,
// len), mid a multiple of 8. A function of len alone: a row's numbers do not depend on the pass.
inline int64_t split_of(int64_t len) { return std::min(len, ((len + 1) / 2 + 7) / 8 * 8); }

template <typename T>
void attend_rows(const float* qp, const T* kp, const T* vp, float* op, int64_t n, int64_t heads,
                 int64_t D, int64_t ks, int64_t cap, int64_t group, int64_t start) {
  const int64_t kv = heads / group, stride = D + 2;
  // Every (row, head, part) is written below: no need to zero them first.
  std::unique_ptr<float[]> parts(new float[n * heads * 2 * stride]);
  float* pp = parts.get();
  // One item: a row, a KV head and one part of the row's keys, for the KV head's query heads
  // (3 at a time: each key and value vector loaded once for them). Rows in the order 0, n - 1, 1,
  // n - 2, ...: a row costs in proportion to its keys, and each thread gets one contiguous run of
  // items, so the runs of a prefill chunk cost about the same. (Which thread computes a row
  // changes nothing in its numbers.)
  at::parallel_for(0, n * kv * 2, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scratch(3 * (start + n + 8));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t i = item / (kv * 2), g = (item / 2) % kv, c = item % 2;
      const int64_t r = i % 2 == 0 ? i / 2 : n - 1 - i / 2;
      const int64_t len = start + r + 1, mid = split_of(len);
      const int64_t lo = c == 0 ? 0 : mid, hi = c == 0 ? mid : len;
      const T* K = kp + g * D * ks;
      const T* V = vp + g * cap * D;
      for (int64_t h0 = g * group; h0 < (g + 1) * group; h0 += 3) {
        const int hb = (int)std::min<int64_t>(3, (g + 1) * group - h0);
        const float* q = qp + (r * heads + h0) * D;
        float* part = pp + ((r * heads + h0) * 2 + c) * stride;
        // parts of head h: [(r * heads + h) * 2 + c]; HB heads' parts are 2 apart
        float tmp[3 * (256 + 2)];
        if (hb == 3) attend_part<T, 3>(q, K, V, ks, D, lo, hi, scratch.data(), tmp);
        else if (hb == 2) attend_part<T, 2>(q, K, V, ks, D, lo, hi, scratch.data(), tmp);
        else attend_part<T, 1>(q, K, V, ks, D, lo, hi, scratch.data(), tmp);
        for (int h = 0; h < hb; ++h)
          std::memcpy(part + h * 2 * stride, tmp + h * stride, stride * sizeof(float));
      }
    }
  });
  // Each head's two parts, rescaled to their common maximum and normalized.
  for (int64_t rh = 0; rh < n * heads; ++rh) {
    const float* a = pp + rh * 2 * stride;
    const float* b = a + stride;
    const float mx = std::fmax(a[D], b[D]);
    const float wa = a[D + 1] > 0.f ? exp_poly(a[D] - mx) : 0.f;
    const float wb = b[D + 1] > 0.f ? exp_poly(b[D] - mx) : 0.f;
    const float inv = 1.f / (wa * a[D + 1] + wb * b[D + 1]);
    float* o = op + rh * D;
    for (int64_t d = 0; d < D; ++d) o[d] = (wa * a[d] + wb * b[d]) * inv;
  }
}

void check_caches(const at::Tensor& keys, const at::Tensor& values, const char* what) {
  const auto kind = keys.scalar_type();
  TORCH_CHECK(keys.is_contiguous() && values.is_contiguous() && values.scalar_type() == kind &&
                  (kind == at::kFloat || kind == at::kHalf),
              what, ": float32 or float16 contiguous caches of one dtype");
}

// Causal attention of q [n, heads, D] (scaled) at positions start .. start + n - 1 over keys
// [kv, D, ks] (ks >= cap: rows may be padded, so that the D rows of a head do not all fall in the
// same cache sets) and values [kv, cap, D]: row r sees positions 0 .. start + r, one row at a time.
at::Tensor attend(const at::Tensor& q_in, const at::Tensor& keys, const at::Tensor& values,
                  int64_t start) {
  const at::Tensor q = q_in.to(at::kFloat).contiguous();
  check_caches(keys, values, "attend");
  const int64_t n = q.size(0), heads = q.size(1), D = q.size(2), kv = keys.size(0);
  const int64_t ks = keys.size(2), cap = values.size(1), group = heads / kv;
  TORCH_CHECK(ks >= cap && start + n <= cap, "attend: cache too short");
  TORCH_CHECK(D <= 256 && heads % kv == 0, "attend: head_dim up to 256, whole groups of heads");
  at::Tensor out = at::empty({n, heads, D}, q.options());
  const float* qp = q.data_ptr<float>();
  float* op = out.data_ptr<float>();
  if (keys.scalar_type() == at::kHalf)
    attend_rows(qp, keys.data_ptr<c10::Half>(), values.data_ptr<c10::Half>(), op, n, heads, D, ks,
                cap, group, start);
  else
    attend_rows(qp, keys.data_ptr<float>(), values.data_ptr<float>(), op, n, heads, D, ks, cap,
                group, start);
  return out;
}

// Rotates row r's q and k heads and writes its k and v at position start + r of the caches.
template <typename T>
void rotate_and_store(const float* xp, const float* cs, float* qp, T* kp, T* vp, int64_t n,
                      int64_t heads, int64_t kv, int64_t D, int64_t ks, int64_t cap,
                      int64_t width, int64_t start) {
  const int64_t qk_heads = heads + kv;
  for (int64_t r = 0; r < n; ++r) {
    const float* x = xp + r * width;
    for (int64_t hh = 0; hh < qk_heads; ++hh) {
      const float* a = x + hh * D;
      const float* c = cs + (r * qk_heads + hh) * D;
      for (int64_t j = 0; j < D / 2; ++j) {
        const float re = a[2 * j] * c[2 * j] - a[2 * j + 1] * c[2 * j + 1];
        const float im = a[2 * j] * c[2 * j + 1] + a[2 * j + 1] * c[2 * j];
        if (hh < heads) {
          qp[(r * heads + hh) * D + 2 * j] = re;
          qp[(r * heads + hh) * D + 2 * j + 1] = im;
        } else {
          T* k = kp + (hh - heads) * D * ks + start + r;
          k[(2 * j) * ks] = from_f32<T>(re);
          k[(2 * j + 1) * ks] = from_f32<T>(im);
        }
      }
    }
    for (int64_t g = 0; g < kv; ++g) {
      const float* v = x + (qk_heads + g) * D;
      T* dst = vp + (g * cap + start + r) * D;
      for (int64_t i = 0; i < D; ++i) dst[i] = from_f32<T>(v[i]);
    }
  }
}

// One layer's attention from its fused q/k/v product qkv [n, (heads + 2 kv) D]: q and k rotated
// by rot [n, heads + kv, D / 2, 2] (cos, sin pairs; q's with the attention scale folded in; each
// head's rotated pairs side by side), k and v written to the caches (float32 or float16) at
// start .. start + n - 1, then `attend`. Returns [n, heads, D].
at::Tensor rope_attend(const at::Tensor& qkv_in, const at::Tensor& rot_in, const at::Tensor& keys,
                       const at::Tensor& values, int64_t start, int64_t heads) {
  const at::Tensor qkv = qkv_in.to(at::kFloat).contiguous(), rot = rot_in.contiguous();
  check_caches(keys, values, "rope_attend");
  TORCH_CHECK(rot.scalar_type() == at::kFloat, "rope_attend: float32 rotation");
  const int64_t n = qkv.size(0), kv = keys.size(0), D = keys.size(1), ks = keys.size(2);
  const int64_t cap = values.size(1);
  const int64_t width = qkv.size(1);
  TORCH_CHECK(width == (heads + 2 * kv) * D && start + n <= cap && ks >= cap,
              "rope_attend: shapes");
  TORCH_CHECK(rot.numel() == n * (heads + kv) * D, "rope_attend: rotation shape");
  at::Tensor q = at::empty({n, heads, D}, qkv.options());
  const float *xp = qkv.data_ptr<float>(), *cs = rot.data_ptr<float>();
  float* qp = q.data_ptr<float>();
  if (keys.scalar_type() == at::kHalf)
    rotate_and_store(xp, cs, qp, keys.data_ptr<c10::Half>(), values.data_ptr<c10::Half>(), n,
                     heads, kv, D, ks, cap, width, start);
  else
    rotate_and_store(xp, cs, qp, keys.data_ptr<float>(), values.data_ptr<float>(), n, heads, kv,
                     D, ks, cap, width, start);
  return attend(q, keys, values, start);
}

at::Tensor q4_mm(const at::Tensor& x, const at::Tensor& w, int64_t N) {
  return blocks_mm<true>(x, w, N);
}
at::Tensor q8_mm(const at::Tensor& x, const at::Tensor& w, int64_t N) {
  return blocks_mm<false>(x, w, N);
}
at::Tensor q4_dequant(const at::Tensor& w, int64_t N, int64_t K) {
  return blocks_dequant<true>(w, N, K);
}
at::Tensor q8_dequant(const at::Tensor& w, int64_t N, int64_t K) {
  return blocks_dequant<false>(w, N, K);
}
bool simd() {
#ifdef SPEC_LSP_AVX2
  return true;
#else
  return false;
#endif
}
int64_t kernel_simd() { return simd() ? 1 : 0; }

}  // namespace

TORCH_LIBRARY(spec_lsp, m) {
  m.def("q4_mm(Tensor x, Tensor w, int N) -> Tensor", &q4_mm);
  m.def("q8_mm(Tensor x, Tensor w, int N) -> Tensor", &q8_mm);
  m.def("q4_dequant(Tensor w, int N, int K) -> Tensor", &q4_dequant);
  m.def("q8_dequant(Tensor w, int N, int K) -> Tensor", &q8_dequant);
  m.def("simd() -> int", &kernel_simd);
  m.def("rms_norm(Tensor x, Tensor w, float eps) -> Tensor", &rms_norm);
  m.def("silu_mul(Tensor gu) -> Tensor", &silu_mul);
  m.def("attend(Tensor q, Tensor keys, Tensor values, int start) -> Tensor", &attend);
  m.def("rope_attend(Tensor qkv, Tensor rot, Tensor(a!) keys, Tensor(b!) values, int start, "
        "int heads) -> Tensor", &rope_attend);
}
