#include "engine/window_phase.h"

#include <algorithm>
#include <stdexcept>

namespace mlx_cpp {

BatchWindowLayout::BatchWindowLayout(int window, int rows)
    : window_(window), left_padding_(rows, 0), offsets_(rows, 0) {}

void BatchWindowLayout::to_temporal_order() {
  if (!rotated_) return;
  index_ = *width_;
  rotated_ = false;
}

void BatchWindowLayout::prefill(const std::vector<int>& lengths) {
  const long longest = *std::max_element(lengths.begin(), lengths.end());
  // Right padding: the chunk's pad keys are rolled to the front afterwards.
  std::vector<long> targets;
  for (std::size_t b = 0; b < lengths.size(); ++b) targets.push_back(offsets_[b] + lengths[b]);
  if (!width_) {
    width_ = longest;
  } else {
    to_temporal_order();
    if (*width_ > index_) width_ = index_;
    // Keep window - 1 old keys, so every query of the chunk sees a window.
    const long trim = index_ - window_ + 1;
    if (trim > 0) {
      for (auto& padding : left_padding_) padding -= trim;
      *width_ -= trim;
    }
    *width_ += longest;
  }
  for (auto& offset : offsets_) offset += longest;
  total_ += longest;
  index_ = *width_;
  for (std::size_t b = 0; b < offsets_.size(); ++b) {
    const long roll = std::max(0L, offsets_[b] - targets[b]);
    left_padding_[b] += roll;
    offsets_[b] -= roll;
  }
}

void BatchWindowLayout::decode() {
  if (!width_ || (total_ >= *width_ && *width_ < window_)) {
    // Storage grows by up to 256 columns, up to the window.
    width_ = width_.value_or(0) + std::min(256L, window_ - total_);
    index_ = total_;
  }
  const long trim = *width_ - window_;
  if (trim > 0) {
    width_ = window_;
    index_ = window_;
    for (auto& padding : left_padding_) padding -= trim;
  }
  if (index_ == window_) {
    rotated_ = true;
    index_ = 0;
  }
  if (rotated_)
    for (auto& padding : left_padding_) padding -= 1;
  total_ += 1;
  for (auto& offset : offsets_) offset += 1;
  index_ += 1;
}

void BatchWindowLayout::filter(const std::vector<int>& keep) {
  std::vector<long> padding, offsets;
  for (int b : keep) {
    padding.push_back(left_padding_[b]);
    offsets.push_back(offsets_[b]);
  }
  left_padding_ = std::move(padding);
  offsets_ = std::move(offsets);
}

void BatchWindowLayout::extend(BatchWindowLayout other) {
  auto append = [this](const BatchWindowLayout& from, long shift) {
    for (std::size_t b = 0; b < from.offsets_.size(); ++b) {
      left_padding_.push_back(from.left_padding_[b] + shift);
      offsets_.push_back(from.offsets_[b]);
    }
  };
  if (!width_ && !other.width_) {
    append(other, 0);
    return;
  }
  if (rotated_ != other.rotated_ || index_ != other.index_) {
    if (width_) to_temporal_order();
    if (other.width_) other.to_temporal_order();
  }
  const long joined = std::max(index_, other.index_);
  for (auto& padding : left_padding_) padding += joined - index_;
  append(other, joined - other.index_);
  index_ = joined;
  width_ = std::max(width_.value_or(0), other.width_.value_or(0));
  total_ = std::max(total_, other.total_);
}

int BatchWindowLayout::newest_first(int row) const {
  if (!rotated_ || !width_) return 0;
  const long valid = std::min(offsets_[row], *width_);
  return index_ < valid ? static_cast<int>(index_) : 0;
}

void WindowPhaseTracker::admit(int count) {
  if (count == 0) return;
  BatchWindowLayout fresh(window_, count);
  if (prompts_)
    prompts_->extend(std::move(fresh));
  else
    prompts_ = std::move(fresh);
}

std::vector<int> WindowPhaseTracker::start_decoding(const std::vector<int>& starting) {
  if (!prompts_) throw std::logic_error("[WindowPhaseTracker] no prompt batch");
  std::vector<int> rest;
  for (int b = 0, next = 0; b < prompts_->rows(); ++b) {
    if (next < static_cast<int>(starting.size()) && starting[next] == b)
      ++next;
    else
      rest.push_back(b);
  }
  BatchWindowLayout split = *prompts_;
  split.filter(starting);
  keep_prefilling(rest);
  split.decode();
  std::vector<int> phases;
  for (int b = 0; b < split.rows(); ++b) phases.push_back(split.newest_first(b));
  if (decoding_)
    decoding_->extend(std::move(split));
  else
    decoding_ = std::move(split);
  return phases;
}

void WindowPhaseTracker::prefill(const std::vector<int>& lengths) {
  if (prompts_ && !lengths.empty()) prompts_->prefill(lengths);
}

std::vector<int> WindowPhaseTracker::decode() {
  std::vector<int> phases;
  if (!decoding_) return phases;
  decoding_->decode();
  for (int b = 0; b < decoding_->rows(); ++b) phases.push_back(decoding_->newest_first(b));
  return phases;
}

void WindowPhaseTracker::keep_decoding(const std::vector<int>& keep) {
  if (!decoding_) return;
  if (keep.empty())
    decoding_.reset();  // an empty batch drops its caches
  else
    decoding_->filter(keep);
}

void WindowPhaseTracker::keep_prefilling(const std::vector<int>& keep) {
  if (!prompts_) return;
  if (keep.empty())
    prompts_.reset();
  else
    prompts_->filter(keep);
}

}  // namespace mlx_cpp
