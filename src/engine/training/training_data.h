#pragma once
// Training data in mlx-lm's formats: DIR/{train,valid,test}.jsonl, one JSON
// object per line, all of one kind (judged by the first, as mlx-lm does):
// {"prompt", "completion"} (a user and an assistant message in the chat
// template), {"messages": [...], "tools": [...]} (the chat template), or
// {"text"} (tokenized as it is, the end-of-sequence token appended). With
// mask_prompt the loss covers only the last message (the completion).
// Then mlx-lm's batching: examples ordered as its trainer orders them,
// batches of batch_size shuffled with numpy's generator each epoch, padded
// to one past a multiple of 32 tokens, cut at max_seq_length.
#include <mlx/array.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "engine/model_runtime.h"
#include "engine/training/numpy_random.h"

namespace mlx_cpp {

struct TrainingExample {
  std::vector<int> tokens;
  int offset = 0;  // tokens before this index are not scored (mask_prompt)
  // The record's field count: what mlx-lm's trainer sorts examples by.
  int fields = 0;
};

// Reads one split ("train", "valid" or "test"); nullopt when its file is
// absent. Throws Error naming the file and line for a malformed record or
// an unknown format.
std::optional<std::vector<TrainingExample>> load_training_split(const ModelRuntime& runtime,
                                                                const std::filesystem::path& dir,
                                                                const std::string& split,
                                                                bool mask_prompt);

// Preference records {"prompt", "chosen", "rejected"[, "system"]}: two
// examples each, the chosen answer then the rejected one, in the chat
// template, scored from the end of the prompt (with its generation prompt)
// on. nullopt when the split's file is absent; Error as above.
std::optional<std::vector<TrainingExample>> load_preference_split(const ModelRuntime& runtime,
                                                                  const std::filesystem::path& dir,
                                                                  const std::string& split);

struct TrainingBatch {
  mlx::core::array tokens;   // int32 [batch, length]
  mlx::core::array lengths;  // int32 [batch, 2]: (offset, length) per row
};

// mlx-lm's iterate_batches over examples that outlive it.
class TrainingBatches {
 public:
  // Throws Error when there are fewer examples than batch_size.
  TrainingBatches(const std::vector<TrainingExample>& examples, int batch_size, int max_seq_length,
                  NumpyRandom& random, bool loop);
  // The next batch; nullopt at the end of a pass that does not loop.
  std::optional<TrainingBatch> next();
  // How many longer examples were cut to max_seq_length so far.
  int truncated() const { return truncated_; }

 private:
  TrainingBatch make(const std::vector<int>& members);
  const std::vector<TrainingExample>& examples_;
  int batch_size_, max_seq_length_;
  NumpyRandom& random_;
  bool loop_;
  std::vector<std::vector<int>> batches_;
  std::vector<int> order_;
  std::size_t position_ = 0;
  bool started_ = false;
  int truncated_ = 0;
};

}  // namespace mlx_cpp
