#pragma once
// Where the attention kernel reads keys and values from: the rows of a
// [B, H, S, D] tensor handed out as float32, whatever they are stored as
// (a float tensor of any strides, or packed codes). The kernel's blocking,
// online softmax and key chunks (attention.cpp) are the same for all.
//
// A source may hand its rows out in another orthonormal basis than the
// model's (TurboQuant's rotated coordinates): dot products are unchanged
// when the query is taken into that basis first (keys), and a weighted sum
// of rows is taken back from it once at the end (values), instead of
// rotating every row back.
#include <mlx/array.h>

#include <cstdint>
#include <optional>
#include <sstream>

#include "kernels/vector_ops.h"

namespace mlx_cpp::kernels {

class AttentionRows {
 public:
  virtual ~AttentionRows() = default;
  // H and D of the [B, H, S, D] tensor.
  virtual int heads() const = 0;
  virtual int width() const = 0;
  // Asks the memory system for rows s .. s + count - 1 (nothing when
  // count <= 0).
  virtual void prefetch_rows(int b, int h, int s, int count) const {
    (void)b, (void)h, (void)s, (void)count;
  }
  // Rows s .. s + count - 1 of head h into dst[count][width()].
  virtual void load_rows(int b, int h, int s, int count, float* dst) const = 0;
  // A query [width()] into the basis rows are given in (keys' sources).
  virtual void to_row_basis(float* query) const { (void)query; }
  // A weighted sum of rows [width()] back from that basis (values' sources).
  virtual void from_row_basis(float* output) const { (void)output; }
};

// A float tensor [B, H, S, D] of any strides (a cache's prefix view is read
// in place); what does not change per row (strides, type, the SIMD table)
// is looked up once.
class StridedRows : public AttentionRows {
 public:
  explicit StridedRows(const mlx::core::array& a);
  int heads() const override { return heads_; }
  int width() const override { return width_; }
  void prefetch_rows(int b, int h, int s, int count) const override;
  // One conversion when the rows are contiguous (a cache's storage), else
  // row by row.
  void load_rows(int b, int h, int s, int count, float* dst) const override;

 private:
  void load(int b, int h, int s, float* dst) const;

  const mlx::core::array& a_;
  std::int64_t strides_[4];
  ScalarType type_;
  const VectorOps& ops_;
  int heads_, width_;
  std::size_t item_bytes_;
};

// Attention over rows from any source: q [B, Hq, L, D] (float, any
// strides), the first key_count rows of keys and values, an optional mask
// broadcast to [B, Hq, L, S] (bool: false hides; else additive) or causal
// masking (query rows are the last L of key_count), into out [B, Hq, L,
// Dv] (allocated, row-contiguous). Semantics as attention_fast's.
void run_attention(const mlx::core::array& q, const AttentionRows& keys,
                   const AttentionRows& values, const mlx::core::array* mask, float scale,
                   bool causal, int key_count, mlx::core::array& out);

// What is wrong, if anything, with attending q [B, Hq, L, D] over `keys`
// keys of `kv_heads` heads under these masks (the checks every attention
// op shares once its own operands' shapes hold), written to msg.
void describe_attention_problem(std::ostringstream& msg, const mlx::core::array& q, int kv_heads,
                                int keys, bool causal, const std::optional<mlx::core::array>& mask);

}  // namespace mlx_cpp::kernels
