#include "kernels/turbo_codec.h"

#include <array>
#include <cmath>
#include <vector>

#include "kernels/packed_row_decoders.h"

namespace mlx_cpp::kernels::turbo {
namespace {

#include "kernels/turbo_codebooks.inc"

// Fixed: cached keys and values depend on it.
constexpr std::uint64_t kSignSeed = 0x7462'7571'616E'7421ull;

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

int group_index(int group) {
  switch (group) {
    case 32:
      return 0;
    case 64:
      return 1;
    case 128:
      return 2;
    case 256:
      return 3;
    default:
      return -1;
  }
}

int bits_index(int bits) {
  switch (bits) {
    case 2:
      return 0;
    case 3:
      return 1;
    case 4:
      return 2;
    case 8:
      return 3;
    default:
      return -1;
  }
}

const float* const kCentroids[4][4] = {
    {kCentroids_g32_b2, kCentroids_g32_b3, kCentroids_g32_b4, kCentroids_g32_b8},
    {kCentroids_g64_b2, kCentroids_g64_b3, kCentroids_g64_b4, kCentroids_g64_b8},
    {kCentroids_g128_b2, kCentroids_g128_b3, kCentroids_g128_b4, kCentroids_g128_b8},
    {kCentroids_g256_b2, kCentroids_g256_b3, kCentroids_g256_b4, kCentroids_g256_b8}};

// Midpoints of adjacent centroids, each (a + b) / 2 in float32.
struct Boundaries {
  std::vector<float> values[4][4];
  Boundaries() {
    for (int g = 0; g < 4; ++g)
      for (int b = 0; b < 4; ++b) {
        const int levels = 1 << (b == 3 ? 8 : b + 2);
        const float* c = kCentroids[g][b];
        for (int i = 0; i + 1 < levels; ++i) values[g][b].push_back((c[i + 1] + c[i]) / 2.0f);
      }
  }
};

const Boundaries& boundaries() {
  static const Boundaries table;
  return table;
}

// The number of boundaries strictly below v (numpy's searchsorted, side
// "left").
std::uint32_t code_of(float v, const std::vector<float>& bounds) {
  std::uint32_t low = 0, high = static_cast<std::uint32_t>(bounds.size());
  while (low < high) {
    const std::uint32_t mid = (low + high) / 2;
    if (bounds[mid] < v)
      low = mid + 1;
    else
      high = mid;
  }
  return low;
}

void pack(const std::uint32_t* codes, int d, int bits, std::uint32_t* words) {
  for (int w = 0; w < words_per_row(d, bits); ++w) words[w] = 0;
  for (int i = 0; i < d; ++i) {
    const int bit = i * bits, word = bit / 32, shift = bit % 32;
    words[word] |= codes[i] << shift;
    if (shift + bits > 32) words[word + 1] |= codes[i] >> (32 - shift);
  }
}

}  // namespace

bool supported(int bits, int group) {
  return bits_index(bits) >= 0 && group_index(group) >= 0;
}

void hadamard(float* x, int n) {
  for (int h = 1; h < n; h *= 2)
    for (int block = 0; block < n; block += 2 * h)
      for (int j = block; j < block + h; ++j) {
        const float a = x[j], b = x[j + h];
        x[j] = a + b;
        x[j + h] = a - b;
      }
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(n)));
  for (int i = 0; i < n; ++i) x[i] *= scale;
}

const float* signs(int n) {
  // Every group size's signs, made once (thread-safe static).
  static const auto tables = [] {
    std::array<std::vector<float>, 4> all;
    for (int g = 0, size = 32; g < 4; ++g, size *= 2)
      for (int i = 0; i < size; ++i) all[g].push_back(splitmix64(kSignSeed + i) & 1 ? -1.0f : 1.0f);
    return all;
  }();
  return tables[group_index(n)].data();
}

const float* centroids(int bits, int n) {
  return kCentroids[group_index(n)][bits_index(bits)];
}

void rotate(float* x, int d, int group) {
  const float* sign = signs(group);
  for (int start = 0; start < d; start += group) {
    for (int i = 0; i < group; ++i) x[start + i] *= sign[i];
    hadamard(x + start, group);
  }
}

void rotate_back(float* x, int d, int group) {
  const float* sign = signs(group);
  for (int start = 0; start < d; start += group) {
    hadamard(x + start, group);
    for (int i = 0; i < group; ++i) x[start + i] *= sign[i];
  }
}

void encode_row(const float* x, int d, int bits, int group, std::uint32_t* words, float* norms) {
  const auto& bounds = boundaries().values[group_index(group)][bits_index(bits)];
  std::vector<float> rotated(x, x + d);
  rotate(rotated.data(), d, group);
  std::vector<std::uint32_t> codes(d);
  for (int start = 0, g = 0; start < d; start += group, ++g) {
    float sum = 0.0f;
    for (int i = 0; i < group; ++i) {
      const float square = rotated[start + i] * rotated[start + i];
      sum += square;
    }
    const float norm = std::sqrt(sum);
    norms[g] = norm;
    const float divisor = norm > 0.0f ? norm : 1.0f;
    for (int i = 0; i < group; ++i)
      codes[start + i] = code_of(rotated[start + i] / divisor, bounds);
  }
  pack(codes.data(), d, bits, words);
}

void decode_row(const std::uint32_t* words, const float* norms, int d, int bits, int group,
                float* x) {
  // Centroid times norm, one product per value: exactly that under every
  // instruction set's decoder (the attention kernel's, which reads rows
  // in this rotated form).
  packed_row_decoders().table(words, bits, d, group, centroids(bits, group), norms, x);
  rotate_back(x, d, group);
}

}  // namespace mlx_cpp::kernels::turbo
