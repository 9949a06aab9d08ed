#pragma once
// TurboQuant's vector codec (Zandieh et al., 2025, in its MSE-optimal
// form), one row at a time: each group of a row (a power of two long) is
// multiplied by fixed random signs and rotated by the orthonormal
// Walsh-Hadamard transform, its norm is kept in float32, and each rotated
// coordinate divided by the norm is coded as the nearest centroid of the
// Lloyd-Max quantizer for a unit vector's coordinate. Codes are packed
// little-endian into uint32 words, value i at bits [i*b, (i+1)*b).
//
// Bit-exact with tools/oracle/turboquant_reference.py (encode and decode):
// every step is the same float32 operation in the same order, and the
// centroids are the reference's, generated into turbo_codebooks.inc. Rows
// are decoded by the packed-row decoders (packed_row_decoders.h), whose
// table lookup is one exact product per value.
// Compiled without FMA contraction (ISO C++ mode, baseline ISA), which the
// reference's separate roundings need.
#include <cstdint>

namespace mlx_cpp::kernels::turbo {

// Bits per coordinate and group sizes the codec has codebooks for.
bool supported(int bits, int group);

// The orthonormal Walsh-Hadamard transform of x[n] in place (n a power of
// two): butterflies h = 1, 2, 4, ..., then a scale of 1/sqrt(n). Its own
// inverse.
void hadamard(float* x, int n);
// The fixed random signs of a group of n (+1 or -1).
const float* signs(int n);
// 2^bits centroids, ascending, of a group of n.
const float* centroids(int bits, int n);

// Words per row of d values, and groups per row.
inline int words_per_row(int d, int bits) {
  return d * bits / 32;
}

// x[d] → words[d*bits/32], norms[d/group].
void encode_row(const float* x, int d, int bits, int group, std::uint32_t* words, float* norms);
// The inverse: centroids times norms, rotated back, signs applied.
void decode_row(const std::uint32_t* words, const float* norms, int d, int bits, int group,
                float* x);
// Takes x[d] into the rotated basis (signs, then the transform, per group),
// and back (the transform, then the signs).
void rotate(float* x, int d, int group);
void rotate_back(float* x, int d, int group);

}  // namespace mlx_cpp::kernels::turbo
