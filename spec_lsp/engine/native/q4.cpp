// spec-lsp's CPU products over GGUF blocks, with activations quantized per block of 32 to int8
// (as llama.cpp does), in integer dot products (AVX2) or plain C++ elsewhere.
//
//   q4_mm(x [M, K] f32, w [N, K/32 * 20] u8: Q4_1 blocks {f16 d, f16 m, 16 bytes of codes})
//   q8_mm(x [M, K] f32, w [N, K/32 * 34] u8: Q8_0 blocks {f16 d, 32 int8 codes})
//   q4_dequant(w) / q8_dequant(w) -> [N, K] f32
//
// Exactness across batch sizes: every output element y[r, n] is computed from row r of x and row
// n of w alone, in the same order of operations whatever M is and whichever thread computes it
// (blocks in order, one 8-lane accumulator, one horizontal sum), so a pass over k rows gives, row
// for row, bitwise the numbers of k one-row passes.
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>
#include <ATen/ops/empty_like.h>

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

#ifdef SPEC_LSP_AVX2
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
#endif

// The products of weight rows w0 .. w0 + NR - 1 (G blocks each) with activation rows r0 ..
// r0 + R - 1: y[r, n]. Per (n, r) the order of operations is fixed (blocks alternate between two
// accumulators, summed at the end), whatever R and NR: a row's result does not depend on which
// other rows share its tile.
#ifdef SPEC_LSP_AVX2
struct WBlock {
  __m256i q;
  float d, m;
};

template <bool Q4>
inline WBlock load_block(const uint8_t* blk) {
  WBlock out;
  out.d = f16_to_f32(blk);
  if (Q4) {
    out.m = f16_to_f32(blk + 2);
    const __m128i raw = _mm_loadu_si128((const __m128i*)(blk + 4));
    const __m128i mask = _mm_set1_epi8(0x0F);
    out.q = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(raw, 4), mask), _mm_and_si128(raw, mask));
  } else {
    out.m = 0.f;
    out.q = _mm256_loadu_si256((const __m256i*)(blk + 2));
  }
  return out;
}

template <bool Q4>
inline __m256 block_dot(const WBlock& w, const int8_t* qa) {
  const __m256i a = _mm256_loadu_si256((const __m256i*)qa);
  const __m256i p16 = Q4 ? _mm256_maddubs_epi16(w.q, a)  // codes 0..15 unsigned, x signed
                         : _mm256_maddubs_epi16(_mm256_sign_epi8(w.q, w.q), _mm256_sign_epi8(a, w.q));
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
}

template <bool Q4, int NR, int R>
void tile(const uint8_t* w, int64_t stride, int64_t G, const int8_t* xq, const float* xd,
          const float* xs, int64_t r0, float* y, int64_t ldy) {
  const int64_t wb = Q4 ? Q4_BYTES : Q8_BYTES;
  __m256 acc[NR][R][2];
  float mins[NR][R][2];
  for (int j = 0; j < NR; ++j)
    for (int t = 0; t < R; ++t)
      for (int e = 0; e < 2; ++e) { acc[j][t][e] = _mm256_setzero_ps(); mins[j][t][e] = 0.f; }
  // Blocks b (even) and b + 1 (odd) into accumulators 0 and 1: indices known at compile time,
  // so the accumulators stay in registers.
  auto step = [&](int64_t b, auto e_const) {
    constexpr int e = decltype(e_const)::value;
    for (int j = 0; j < NR; ++j) {
      const WBlock wk = load_block<Q4>(w + j * stride + b * wb);
      for (int t = 0; t < R; ++t) {
        const int64_t i = (r0 + t) * G + b;
        const __m256 p = block_dot<Q4>(wk, xq + i * QK);
        acc[j][t][e] = _mm256_fmadd_ps(_mm256_set1_ps(wk.d * xd[i]), p, acc[j][t][e]);
        if (Q4) mins[j][t][e] += wk.m * xs[i];
      }
    }
  };
  int64_t b = 0;
  for (; b + 2 <= G; b += 2) {
    step(b, std::integral_constant<int, 0>{});
    step(b + 1, std::integral_constant<int, 1>{});
  }
  if (b < G) step(b, std::integral_constant<int, 0>{});
  for (int j = 0; j < NR; ++j)
    for (int t = 0; t < R; ++t)
      y[(r0 + t) * ldy + j] =
          hsum(_mm256_add_ps(acc[j][t][0], acc[j][t][1])) + (mins[j][t][0] + mins[j][t][1]);
}

template <bool Q4, int NR>
void rows_tile(const uint8_t* w, int64_t stride, int64_t G, const int8_t* xq, const float* xd,
               const float* xs, int64_t M, float* y, int64_t ldy) {
  int64_t r0 = 0;
  for (; r0 + 4 <= M; r0 += 4) tile<Q4, NR, 4>(w, stride, G, xq, xd, xs, r0, y, ldy);
  switch (M - r0) {
    case 3: tile<Q4, NR, 3>(w, stride, G, xq, xd, xs, r0, y, ldy); break;
    case 2: tile<Q4, NR, 2>(w, stride, G, xq, xd, xs, r0, y, ldy); break;
    case 1: tile<Q4, NR, 1>(w, stride, G, xq, xd, xs, r0, y, ldy); break;
    default: break;
  }
}
#else
// Plain C++: the same mathematics (8 integer lanes per block, two float accumulators).
template <bool Q4>
void rows_plain(const uint8_t* w, int64_t G, const int8_t* xq, const float* xd, const float* xs,
                int64_t M, float* y, int64_t ldy) {
  const int64_t wb = Q4 ? Q4_BYTES : Q8_BYTES;
  for (int64_t r = 0; r < M; ++r) {
    float lanes[2][8] = {};
    float mins[2] = {0.f, 0.f};
    for (int64_t b = 0; b < G; ++b) {
      const int e = (int)(b & 1);
      const uint8_t* blk = w + b * wb;
      const int8_t* qa = xq + (r * G + b) * QK;
      int32_t part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      for (int i = 0; i < QK; ++i) {
        int qv;
        if (Q4) {
          const uint8_t byte = blk[4 + (i & 15)];
          qv = i < 16 ? (byte & 0x0F) : (byte >> 4);
        } else {
          qv = (int8_t)blk[2 + i];
        }
        part[i / 4] += qv * qa[i];
      }
      const float scale = f16_to_f32(blk) * xd[r * G + b];
      for (int l = 0; l < 8; ++l) lanes[e][l] = std::fma(scale, (float)part[l], lanes[e][l]);
      if (Q4) mins[e] += f16_to_f32(blk + 2) * xs[r * G + b];
    }
    float v[8];
    for (int l = 0; l < 8; ++l) v[l] = lanes[0][l] + lanes[1][l];
    const float s = ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
    y[r * ldy] = s + (mins[0] + mins[1]);
  }
}
#endif

template <bool Q4>
at::Tensor blocks_mm(const at::Tensor& x_in, const at::Tensor& w) {
  TORCH_CHECK(x_in.dim() == 2 && w.dim() == 2, "q_mm: x [M, K] and w [N, bytes]");
  TORCH_CHECK(w.scalar_type() == at::kByte && w.is_contiguous() && w.device().is_cpu(),
              "q_mm: w must be contiguous uint8 on the CPU");
  const at::Tensor x = x_in.to(at::kFloat).contiguous();
  const int64_t M = x.size(0), K = x.size(1), N = w.size(0);
  TORCH_CHECK(K % QK == 0, "q_mm: K must be a multiple of 32");
  const int64_t G = K / QK;
  TORCH_CHECK(w.size(1) == G * (Q4 ? Q4_BYTES : Q8_BYTES), "q_mm: w does not hold K/32 blocks");
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
  const int64_t stride = w.size(1);
  at::parallel_for(0, N, 16, [&](int64_t begin, int64_t end) {
#ifdef SPEC_LSP_AVX2
    int64_t n = begin;
    for (; n + 2 <= end; n += 2) rows_tile<Q4, 2>(wp + n * stride, stride, G, qp, dp, sp, M, yp + n, N);
    if (n < end) rows_tile<Q4, 1>(wp + n * stride, stride, G, qp, dp, sp, M, yp + n, N);
#else
    for (int64_t n = begin; n < end; ++n) rows_plain<Q4>(wp + n * stride, G, qp, dp, sp, M, yp + n, N);
#endif
  });
  return y;
}

template <bool Q4>
at::Tensor blocks_dequant(const at::Tensor& w, int64_t K) {
  TORCH_CHECK(w.scalar_type() == at::kByte && w.is_contiguous() && w.dim() == 2,
              "q_dequant: w must be contiguous uint8 [N, bytes]");
  const int64_t N = w.size(0), G = K / QK, wb = Q4 ? Q4_BYTES : Q8_BYTES;
  TORCH_CHECK(K % QK == 0 && w.size(1) == G * wb, "q_dequant: w does not hold K/32 blocks");
  at::Tensor out = at::empty({N, K}, w.options().dtype(at::kFloat));
  const uint8_t* wp = w.data_ptr<uint8_t>();
  float* op = out.data_ptr<float>();
  at::parallel_for(0, N, 16, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      for (int64_t b = 0; b < G; ++b) {
        const uint8_t* blk = wp + n * w.size(1) + b * wb;
        float* o = op + n * K + b * QK;
        const float d = f16_to_f32(blk);
        if (Q4) {
          const float m = f16_to_f32(blk + 2);
          for (int i = 0; i < 16; ++i) {
            o[i] = d * (float)(blk[4 + i] & 0x0F) + m;
            o[i + 16] = d * (float)(blk[4 + i] >> 4) + m;
          }
        } else {
          for (int i = 0; i < QK; ++i) o[i] = d * (float)(int8_t)blk[2 + i];
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

// [M, 2F] (gate, up) -> [M, F]: silu(gate) * up.
at::Tensor silu_mul(const at::Tensor& gu_in) {
  const at::Tensor gu = gu_in.to(at::kFloat).contiguous();
  const int64_t F2 = gu.size(-1), F = F2 / 2, M = gu.numel() / F2;
  at::Tensor y = at::empty({M, F}, gu.options());
  const float* gp = gu.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  for (int64_t r = 0; r < M; ++r)
    for (int64_t i = 0; i < F; ++i) {
      const float g = gp[r * F2 + i];
      yp[r * F + i] = g / (1.f + std::exp(-g)) * gp[r * F2 + F + i];
    }
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
    lane[l] += p[j];
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

// y[i] = fma(a, x[i], y[i]) for i < n.
inline void axpy(float a, const float* x, float* y, int64_t n) {
  int64_t i = 0;
#ifdef SPEC_LSP_AVX2
  const __m256 av = _mm256_set1_ps(a);
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
#endif
  for (; i < n; ++i) y[i] = std::fma(a, x[i], y[i]);
}

// p[j] = sum over d of q[d] K[d, j] (K [D, cap]), for j < len: each p[j] a chain of fused
// multiply-adds over d = 0 .. D - 1, 64 keys at a time held in registers.
inline void scores_of(const float* q, const float* K, int64_t cap, int64_t D, int64_t len,
                      float* p) {
  int64_t j = 0;
#ifdef SPEC_LSP_AVX2
  for (; j + 64 <= len; j += 64) {
    __m256 acc[8];
    for (int k = 0; k < 8; ++k) acc[k] = _mm256_setzero_ps();
    for (int64_t d = 0; d < D; ++d) {
      const __m256 qd = _mm256_set1_ps(q[d]);
      const float* kd = K + d * cap + j;
      for (int k = 0; k < 8; ++k) acc[k] = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kd + 8 * k), acc[k]);
    }
    for (int k = 0; k < 8; ++k) _mm256_storeu_ps(p + j + 8 * k, acc[k]);
  }
#endif
  for (int64_t i = j; i < len; ++i) p[i] = 0.f;
  for (int64_t d = 0; d < D; ++d) axpy(q[d], K + d * cap + j, p + j, len - j);
}

// o[d] = sum over j < len of p[j] V[j, d] (V [cap, D]): each o[d] a chain of fused multiply-adds
// over j, 64 features at a time held in registers.
inline void mix_values(const float* p, const float* V, int64_t D, int64_t len, float* o) {
  int64_t d0 = 0;
#ifdef SPEC_LSP_AVX2
  for (; d0 + 64 <= D; d0 += 64) {
    __m256 acc[8];
    for (int k = 0; k < 8; ++k) acc[k] = _mm256_setzero_ps();
    for (int64_t j = 0; j < len; ++j) {
      const __m256 pj = _mm256_set1_ps(p[j]);
      const float* vj = V + j * D + d0;
      for (int k = 0; k < 8; ++k) acc[k] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(vj + 8 * k), acc[k]);
    }
    for (int k = 0; k < 8; ++k) _mm256_storeu_ps(o + d0 + 8 * k, acc[k]);
  }
#endif
  for (int64_t d = d0; d < D; ++d) o[d] = 0.f;
  for (int64_t j = 0; j < len; ++j) axpy(p[j], V + j * D + d0, o + d0, D - d0);
}

// Causal attention of q [n, heads, D] (scaled) at positions start .. start + n - 1 over keys
// [kv, D, cap] and values [kv, cap, D]: row r sees positions 0 .. start + r, one row at a time.
at::Tensor attend(const at::Tensor& q_in, const at::Tensor& keys, const at::Tensor& values,
                  int64_t start) {
  const at::Tensor q = q_in.to(at::kFloat).contiguous();
  TORCH_CHECK(keys.is_contiguous() && values.is_contiguous() && keys.scalar_type() == at::kFloat &&
                  values.scalar_type() == at::kFloat, "attend: float32 contiguous caches");
  const int64_t n = q.size(0), heads = q.size(1), D = q.size(2), kv = keys.size(0);
  const int64_t cap = keys.size(2), group = heads / kv;
  TORCH_CHECK(values.size(1) == cap && start + n <= cap, "attend: cache too short");
  at::Tensor out = at::empty({n, heads, D}, q.options());
  const float *qp = q.data_ptr<float>(), *kp = keys.data_ptr<float>(), *vp = values.data_ptr<float>();
  float* op = out.data_ptr<float>();
  // One item: a row and a query head (its KV head's keys and values stay in cache for the
  // group's other heads). Products are fused multiply-adds, vector and scalar alike, so a row's
  // numbers do not depend on where the vector loops end.
  at::parallel_for(0, n * heads, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(start + n);
    float* p = scores.data();
    for (int64_t item = begin; item < end; ++item) {
      const int64_t r = item / heads, h = item % heads, g = h / group, len = start + r + 1;
      const float* K = kp + g * D * cap;
      const float* V = vp + g * cap * D;
      const float* qr = qp + (r * heads + h) * D;
      scores_of(qr, K, cap, D, len, p);
      const float mx = max_of(p, len);
      const float inv = 1.f / exp_shifted(p, len, mx);
      for (int64_t j = 0; j < len; ++j) p[j] *= inv;
      mix_values(p, V, D, len, op + (r * heads + h) * D);
    }
  });
  return out;
}

// One layer's attention from its fused q/k/v product qkv [n, (heads + 2 kv) D]: q and k rotated
// by rot [n, heads + kv, D / 2, 2] (cos, sin pairs; q's with the attention scale folded in; each
// head's rotated pairs side by side), k and v written to the caches at start .. start + n - 1,
// then `attend`. Returns [n, heads, D].
at::Tensor rope_attend(const at::Tensor& qkv_in, const at::Tensor& rot_in, const at::Tensor& keys,
                       const at::Tensor& values, int64_t start, int64_t heads) {
  const at::Tensor qkv = qkv_in.to(at::kFloat).contiguous(), rot = rot_in.contiguous();
  TORCH_CHECK(keys.is_contiguous() && values.is_contiguous() && keys.scalar_type() == at::kFloat &&
                  values.scalar_type() == at::kFloat && rot.scalar_type() == at::kFloat,
              "rope_attend: float32 contiguous caches and rotation");
  const int64_t n = qkv.size(0), kv = keys.size(0), D = keys.size(1), cap = keys.size(2);
  const int64_t qk_heads = heads + kv, width = qkv.size(1);
  TORCH_CHECK(width == (heads + 2 * kv) * D && start + n <= cap && values.size(1) == cap,
              "rope_attend: shapes");
  TORCH_CHECK(rot.numel() == n * qk_heads * D, "rope_attend: rotation shape");
  at::Tensor q = at::empty({n, heads, D}, qkv.options());
  const float *xp = qkv.data_ptr<float>(), *cs = rot.data_ptr<float>();
  float *qp = q.data_ptr<float>(), *kp = keys.data_ptr<float>(), *vp = values.data_ptr<float>();
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
          float* k = kp + (hh - heads) * D * cap + start + r;
          k[(2 * j) * cap] = re;
          k[(2 * j + 1) * cap] = im;
        }
      }
    }
    for (int64_t g = 0; g < kv; ++g)
      std::memcpy(vp + (g * cap + start + r) * D, x + (qk_heads + g) * D, D * sizeof(float));
  }
  return attend(q, keys, values, start);
}

at::Tensor q4_mm(const at::Tensor& x, const at::Tensor& w) { return blocks_mm<true>(x, w); }
at::Tensor q8_mm(const at::Tensor& x, const at::Tensor& w) { return blocks_mm<false>(x, w); }
at::Tensor q4_dequant(const at::Tensor& w, int64_t K) { return blocks_dequant<true>(w, K); }
at::Tensor q8_dequant(const at::Tensor& w, int64_t K) { return blocks_dequant<false>(w, K); }
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
  m.def("q4_mm(Tensor x, Tensor w) -> Tensor", &q4_mm);
  m.def("q8_mm(Tensor x, Tensor w) -> Tensor", &q8_mm);
  m.def("q4_dequant(Tensor w, int K) -> Tensor", &q4_dequant);
  m.def("q8_dequant(Tensor w, int K) -> Tensor", &q8_dequant);
  m.def("simd() -> int", &kernel_simd);
  m.def("rms_norm(Tensor x, Tensor w, float eps) -> Tensor", &rms_norm);
  m.def("silu_mul(Tensor gu) -> Tensor", &silu_mul);
  m.def("attend(Tensor q, Tensor keys, Tensor values, int start) -> Tensor", &attend);
  m.def("rope_attend(Tensor qkv, Tensor rot, Tensor(a!) keys, Tensor(b!) values, int start, "
        "int heads) -> Tensor", &rope_attend);
}
