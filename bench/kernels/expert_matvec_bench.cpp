// gather_quantized_matvec_fast vs MLX's gather_qmm for one decode step's
// chosen experts (bfloat16, 4-bit groups of 64; the two are bit-identical):
// Qwen3-30B-A3B's experts (128 of hidden 2048, 768 wide, 8 per token; a
// stack of 64 here, the reads are the chosen 8 either way) and Mixtral-8x7B's
// (8 of hidden 4096, 14336 wide, 2 per token), the gate/up and the down
// projection.
#include <string>

#include "bench_common.h"
#include "kernels/kernels.h"

namespace mlx_cpp::kernels::bench {
namespace {

namespace mx = mlx::core;

struct Experts {
  const char* name;
  int stacked, hidden, width, chosen;
};

const Experts kExperts[] = {{"qwen3-30b-a3b", 64, 2048, 768, 8},
                            {"mixtral-8x7b", 8, 4096, 14336, 2}};

void register_projection(const Experts& e, bool down) {
  const int in = down ? e.width : e.hidden, out = down ? e.hidden : e.width;
  register_pair(
      std::string("experts/") + e.name + (down ? "/down" : "/gate_up"),
      [=] {
        auto dense = random_input({e.stacked, out, in}, mx::bfloat16, 1.0f, 21);
        auto parts = mx::quantize(dense, 64, 4);
        mx::eval(parts);
        auto x = random_input(down ? mx::Shape{1, 1, e.chosen, 1, in} : mx::Shape{1, 1, 1, 1, in},
                              mx::bfloat16, 1.0f, 22);
        std::vector<uint32_t> ids;
        for (int i = 0; i < e.chosen; ++i)
          ids.push_back(static_cast<uint32_t>((i * 7) % e.stacked));
        auto indices = mx::array(ids.begin(), {1, 1, e.chosen}, mx::uint32);
        const auto w = parts[0], scales = parts[1], biases = parts[2];
        return OpPair{
            [=] {
              return mx::gather_qmm(x, w, scales, biases, std::nullopt, indices, true, 64, 4);
            },
            [=] { return gather_quantized_matvec_fast(x, w, scales, biases, indices, 64, 4); }};
      },
      /*slow_stock=*/true);
}

[[maybe_unused]] const bool registered = [] {
  for (const auto& experts : kExperts) {
    register_projection(experts, false);
    register_projection(experts, true);
  }
  return true;
}();

}  // namespace
}  // namespace mlx_cpp::kernels::bench
