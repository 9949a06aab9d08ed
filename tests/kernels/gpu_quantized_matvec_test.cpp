// The GPU matrix-vector kernel (kernels/gpu/quantized_matvec.h) against the
// exact product computed on the CPU in float32 from the same dequantized
// weights, on random inputs of many shapes, widths, groups and dtypes; every
// row of a call equals that row computed alone (bit for bit); unaligned
// inputs give the aligned result; one token of each of many sequences runs
// in blocks, each row its own; several matrices of one x in one launch give
// each matrix's result alone; quantized_matmul_fast takes the kernel for
// decode-shaped calls and MLX's op for the rest. Needs a GPU: elsewhere the
// tests skip and say so (they run in the GPU suite, scripts/gpu/parity).
#include <gtest/gtest.h>
#include <mlx/mlx.h>

#include <cmath>
#include <sstream>

#include "kernel_test_util.h"
#include "kernels/gpu/quantized_matvec.h"
#include "kernels/kernels.h"

namespace mlx_cpp::kernels {
namespace {
namespace mx = mlx::core;
using testing::random_normal;

struct Quantized {
  mx::array w, scales, biases, dense;  // dense: the dequantized weights, float32
};

// scale * code + bias in float32 for every weight. (MLX's dequantize with
// bfloat16 factors computes in bfloat16 even when asked for float32 output:
// each weight then carries a 2^-9 rounding, which over thousands of terms is
// far more than the kernel's own error.)
mx::array dequantize_exactly(const mx::array& w, const mx::array& scales, const mx::array& biases,
                             int group_size, int bits) {
  const auto cpu = mx::Device::cpu;
  const int per_word = 32 / bits, n = w.shape(0), k = w.shape(1) * per_word;
  auto shifts = mx::astype(mx::arange(0, 32, bits, cpu), mx::uint32, cpu);
  auto codes = mx::bitwise_and(mx::right_shift(mx::expand_dims(w, -1, cpu), shifts, cpu),
                               mx::array((1u << bits) - 1u, mx::uint32), cpu);
  codes = mx::astype(mx::reshape(codes, {n, k}, cpu), mx::float32, cpu);
  auto per_weight = [&](const mx::array& factors) {
    return mx::repeat(mx::astype(factors, mx::float32, cpu), group_size, 1, cpu);
  };
  return mx::add(mx::multiply(codes, per_weight(scales), cpu), per_weight(biases), cpu);
}

Quantized quantize(int n, int k, int group_size, int bits, mx::Dtype factors, int seed) {
  auto weights = random_normal({n, k}, factors, 0.05f, seed);
  auto parts = mx::quantize(weights, group_size, bits, "affine", std::nullopt, mx::Device::cpu);
  // Codes of widths that do not divide 32 straddle words: no reference for
  // those (the kernel does not take them).
  auto dense = 32 % bits == 0 ? dequantize_exactly(parts[0], parts[1], parts[2], group_size, bits)
                              : mx::array(0.0f);
  mx::eval(parts);
  mx::eval(dense);
  return {parts[0], parts[1], parts[2], dense};
}

// max |ours - exact| against float32 accumulation plus one rounding of the
// output dtype, element by element.
std::string compare(const mx::array& ours, const mx::array& x, const Quantized& q) {
  auto x32 = mx::astype(x, mx::float32, mx::Device::cpu);
  auto exact = mx::matmul(x32, mx::transpose(q.dense, mx::Device::cpu), mx::Device::cpu);
  auto magnitude = mx::matmul(mx::abs(x32, mx::Device::cpu),
                              mx::transpose(mx::abs(q.dense, mx::Device::cpu), mx::Device::cpu),
                              mx::Device::cpu);
  auto got = mx::astype(ours, mx::float32, mx::Device::cpu);
  const double unit = ours.dtype() == mx::float32    ? std::ldexp(1.0, -22)
                      : ours.dtype() == mx::bfloat16 ? std::ldexp(1.0, -8)
                                                     : std::ldexp(1.0, -10);
  auto allowed = mx::add(mx::multiply(mx::abs(exact), mx::array(unit)),
                         mx::multiply(magnitude, mx::array(1e-5f)));
  auto excess = mx::subtract(mx::abs(mx::subtract(got, exact)), allowed);
  const float worst = mx::max(excess).item<float>();
  if (worst <= 0) return "";
  std::ostringstream message;
  message << "an output is off by " << worst << " beyond its bound";
  return message.str();
}

struct Case {
  int rows, k, n, group_size, bits;
  mx::Dtype x_dtype, factors;
};

TEST(GpuQuantizedMatvec, MatchesTheExactProductOnManyShapes) {
  MLX_CPP_REQUIRE_GPU();
  const std::vector<Case> cases = {
      {1, 128, 1, 32, 4, mx::bfloat16, mx::bfloat16},
      {1, 576, 1536, 64, 4, mx::bfloat16, mx::bfloat16},
      {2, 64, 128, 64, 4, mx::bfloat16, mx::bfloat16},
      {1, 96, 40, 32, 8, mx::bfloat16, mx::bfloat16},
      {1, 4096, 1000, 64, 4, mx::bfloat16, mx::bfloat16},
      {2, 1536, 256, 32, 4, mx::bfloat16, mx::bfloat16},
      {3, 896, 131, 64, 4, mx::float16, mx::float16},
      {8, 2048, 512, 128, 4, mx::bfloat16, mx::bfloat16},
      {5, 640, 77, 32, 4, mx::float32, mx::float32},
      {1, 4096, 300, 64, 8, mx::bfloat16, mx::bfloat16},
      {4, 1024, 200, 32, 8, mx::float32, mx::bfloat16},
      {8, 384, 96, 128, 8, mx::float16, mx::float16},
      {7, 256, 33, 64, 4, mx::bfloat16, mx::float32},
  };
  int seed = 1;
  for (const auto& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.rows << "x" << c.k << " @ " << c.n << "x" << c.k << ", "
                                      << c.bits << " bits, group " << c.group_size);
    auto q = quantize(c.n, c.k, c.group_size, c.bits, c.factors, seed++);
    auto x = random_normal({c.rows, c.k}, c.x_dtype, 1.0f, seed++);
    const auto gpu = mx::to_stream(mx::Device::gpu);
    ASSERT_TRUE(gpu::quantized_matvec_covers(x, q.w, q.scales, c.group_size, c.bits, gpu));
    auto ours = gpu::quantized_matvec(x, q.w, q.scales, q.biases, c.group_size, c.bits, gpu);
    mx::eval(ours);
    EXPECT_EQ(ours.dtype(), mx::promote_types(c.x_dtype, c.factors));
    EXPECT_EQ(ours.shape(), (mx::Shape{c.rows, c.n}));
    EXPECT_EQ(compare(ours, x, q), "");
  }
}

TEST(GpuQuantizedMatvec, EveryRowIsTheRowComputedAlone) {
  MLX_CPP_REQUIRE_GPU();
  const auto gpu = mx::to_stream(mx::Device::gpu);
  for (int bits : {4, 8}) {
    auto q = quantize(384, 2048, 64, bits, mx::bfloat16, 40 + bits);
    auto x = random_normal({gpu::kMaxRows, 2048}, mx::bfloat16, 1.0f, 50 + bits);
    auto together = gpu::quantized_matvec(x, q.w, q.scales, q.biases, 64, bits, gpu);
    for (int row = 0; row < gpu::kMaxRows; ++row) {
      auto alone_x = mx::slice(x, {row, 0}, {row + 1, 2048});
      auto alone = gpu::quantized_matvec(alone_x, q.w, q.scales, q.biases, 64, bits, gpu);
      auto same_row = mx::slice(together, {row, 0}, {row + 1, 384});
      EXPECT_TRUE(mx::array_equal(alone, same_row).item<bool>())
          << "row " << row << ", " << bits << " bits";
    }
  }
}

// One token of each of 13 sequences: blocks of kMaxRows rows, each row
// still its own.
TEST(GpuQuantizedMatvec, ManySequencesEachGetTheirRowAlone) {
  MLX_CPP_REQUIRE_GPU();
  const auto gpu = mx::to_stream(mx::Device::gpu);
  auto q = quantize(200, 1024, 32, 4, mx::bfloat16, 90);
  auto x = random_normal({13, 1, 1024}, mx::bfloat16, 1.0f, 91);
  ASSERT_TRUE(gpu::quantized_matvec_covers(x, q.w, q.scales, 32, 4, gpu));
  auto together = gpu::quantized_matvec(x, q.w, q.scales, q.biases, 32, 4, gpu);
  EXPECT_EQ(together.shape(), (mx::Shape{13, 1, 200}));
  EXPECT_EQ(compare(mx::reshape(together, {13, 200}), mx::reshape(x, {13, 1024}), q), "");
  for (int row = 0; row < 13; ++row) {
    auto alone = gpu::quantized_matvec(mx::slice(x, {row, 0, 0}, {row + 1, 1, 1024}), q.w, q.scales,
                                       q.biases, 32, 4, gpu);
    auto same_row = mx::slice(together, {row, 0, 0}, {row + 1, 1, 200});
    EXPECT_TRUE(mx::array_equal(alone, same_row).item<bool>()) << "sequence " << row;
  }
}

// Projections of one x in few launches (queries, keys and values of
// different widths; a fourth matrix and a change of factor dtype start new
// launches): each output is the bits of that matrix's call alone, for one
// row and for a batch in blocks.
TEST(GpuQuantizedMatvec, SeveralMatricesGiveEachMatrixAlone) {
  MLX_CPP_REQUIRE_GPU();
  const auto gpu = mx::to_stream(mx::Device::gpu);
  const std::vector<std::pair<int, mx::Dtype>> matrices = {{256, mx::bfloat16}, {64, mx::bfloat16},
                                                           {64, mx::bfloat16},  {96, mx::bfloat16},
                                                           {40, mx::float32},   {72, mx::bfloat16}};
  std::vector<Quantized> quantized;
  std::vector<QuantizedWeights> weights;
  for (std::size_t i = 0; i < matrices.size(); ++i) {
    quantized.push_back(quantize(matrices[i].first, 512, 64, 4, matrices[i].second, 100 + i));
    weights.push_back({quantized.back().w, quantized.back().scales, quantized.back().biases});
  }
  for (const mx::Shape& shape : {mx::Shape{1, 1, 512}, mx::Shape{11, 1, 512}}) {
    auto x = random_normal(shape, mx::bfloat16, 1.0f, 120 + shape[0]);
    auto together = gpu::quantized_matvecs(x, weights, 64, 4, gpu);
    ASSERT_EQ(together.size(), matrices.size());
    for (std::size_t i = 0; i < matrices.size(); ++i) {
      const auto& q = quantized[i];
      auto alone = gpu::quantized_matvec(x, q.w, q.scales, q.biases, 64, 4, gpu);
      EXPECT_EQ(together[i].shape(), alone.shape()) << "matrix " << i;
      EXPECT_EQ(together[i].dtype(), alone.dtype()) << "matrix " << i;
      EXPECT_TRUE(mx::array_equal(together[i], alone).item<bool>())
          << "matrix " << i << ", " << shape[0] << " rows";
    }
    EXPECT_EQ(compare(mx::reshape(together[4], {shape[0], 40}), mx::reshape(x, {shape[0], 512}),
                      quantized[4]),
              "");
  }
}

TEST(GpuQuantizedMatvec, UnalignedInputsGiveTheAlignedResult) {
  MLX_CPP_REQUIRE_GPU();
  const auto gpu = mx::to_stream(mx::Device::gpu);
  auto q = quantize(100, 512, 32, 4, mx::bfloat16, 60);
  // One element in: the rows start 2 bytes past a 16-byte boundary.
  auto padded = random_normal({1 + 3 * 512}, mx::bfloat16, 1.0f, 61);
  auto shifted = mx::reshape(mx::slice(padded, {1}, {1 + 3 * 512}), {3, 512});
  auto aligned = mx::copy(shifted);
  mx::eval(shifted, aligned);
  auto from_shifted = gpu::quantized_matvec(shifted, q.w, q.scales, q.biases, 32, 4, gpu);
  auto from_aligned = gpu::quantized_matvec(aligned, q.w, q.scales, q.biases, 32, 4, gpu);
  EXPECT_TRUE(mx::array_equal(from_shifted, from_aligned).item<bool>());
}

TEST(GpuQuantizedMatvec, QuantizedMatmulFastTakesItForDecodeShapesOnly) {
  MLX_CPP_REQUIRE_GPU();
  const auto gpu = mx::to_stream(mx::Device::gpu);
  auto q = quantize(256, 1024, 64, 4, mx::bfloat16, 70);
  auto decode = random_normal({1, 1, 1024}, mx::bfloat16, 1.0f, 71);
  auto fast = quantized_matmul_fast(decode, q.w, q.scales, q.biases, 64, 4,
                                    ActivationPrecision::float32, PrefillArithmetic::float32, gpu);
  auto own = gpu::quantized_matvec(decode, q.w, q.scales, q.biases, 64, 4, gpu);
  EXPECT_TRUE(mx::array_equal(fast, own).item<bool>());

  auto prefill = random_normal({1, gpu::kMaxRows + 1, 1024}, mx::bfloat16, 1.0f, 72);
  EXPECT_FALSE(gpu::quantized_matvec_covers(prefill, q.w, q.scales, 64, 4, gpu));
  auto fast_prefill =
      quantized_matmul_fast(prefill, q.w, q.scales, q.biases, 64, 4, ActivationPrecision::float32,
                            PrefillArithmetic::float32, gpu);
  auto stock = mx::quantized_matmul(prefill, q.w, q.scales, q.biases, true, 64, 4, "affine", gpu);
  EXPECT_TRUE(mx::array_equal(fast_prefill, stock).item<bool>());
}

// The reference itself, without a GPU: every weight is its code times its
// group's scale plus its bias, computed one by one in float32.
TEST(GpuQuantizedMatvec, TheReferenceDequantizesExactly) {
  for (int bits : {4, 8}) {
    auto q = quantize(16, 128, 32, bits, mx::bfloat16, 95 + bits);
    const auto words = q.w.data<uint32_t>();
    const auto scales = mx::astype(q.scales, mx::float32, mx::Device::cpu);
    const auto biases = mx::astype(q.biases, mx::float32, mx::Device::cpu);
    mx::eval(scales, biases);
    const int per_word = 32 / bits;
    for (int n = 0; n < 16; ++n)
      for (int k = 0; k < 128; ++k) {
        const uint32_t code =
            (words[n * 128 / per_word + k / per_word] >> (bits * (k % per_word))) &
            ((1u << bits) - 1u);
        const float expected = static_cast<float>(code) * scales.data<float>()[n * 4 + k / 32] +
                               biases.data<float>()[n * 4 + k / 32];
        ASSERT_EQ(q.dense.data<float>()[n * 128 + k], expected) << n << ", " << k;
      }
  }
}

// What the kernel does not take, decided without a GPU.
TEST(GpuQuantizedMatvec, CoversOnlyWhatItComputes) {
  auto q4 = quantize(64, 256, 64, 4, mx::bfloat16, 80);
  auto q6 = quantize(64, 256, 64, 6, mx::bfloat16, 81);
  auto x = random_normal({2, 256}, mx::bfloat16, 1.0f, 82);
  const mx::Stream gpu(0, mx::Device::gpu), cpu = mx::to_stream(mx::Device::cpu);
  EXPECT_FALSE(gpu::quantized_matvec_covers(x, q4.w, q4.scales, 64, 4, cpu));
  EXPECT_FALSE(gpu::quantized_matvec_covers(x, q6.w, q6.scales, 64, 6, gpu));
  auto many = random_normal({gpu::kMaxRows + 1, 256}, mx::bfloat16, 1.0f, 83);
  EXPECT_FALSE(gpu::quantized_matvec_covers(many, q4.w, q4.scales, 64, 4, gpu));
  auto wrong_k = random_normal({1, 320}, mx::bfloat16, 1.0f, 84);
  EXPECT_FALSE(gpu::quantized_matvec_covers(wrong_k, q4.w, q4.scales, 64, 4, gpu));
  EXPECT_TRUE(gpu::quantized_matvec_covers(x, q4.w, q4.scales, 64, 4, gpu));
}

}  // namespace
}  // namespace mlx_cpp::kernels
