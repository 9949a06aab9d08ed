#include "chat/tool_call_stream.h"

#include <random>

namespace mlx_cpp::chat {

void OutputDelta::append(OutputDelta other) {
  content += other.content;
  reasoning += other.reasoning;
  for (auto& call : other.tool_calls) tool_calls.push_back(std::move(call));
}

ToolCallStream::ToolCallStream(const ToolCallFormat& format, ToolContext context, int max_calls)
    : format_(format), context_(std::move(context)), max_calls_(max_calls) {}

OutputDelta ToolCallStream::feed(std::string_view text) {
  if (finished_ || text.empty()) return {};
  text_.append(text);
  return advance(false);
}

OutputDelta ToolCallStream::finish() {
  if (finished_) return {};
  auto delta = advance(true);
  finished_ = true;
  return delta;
}

OutputDelta ToolCallStream::advance(bool at_end) {
  Scan scan = format_.scan(text_, settled_, at_end, context_);
  OutputDelta delta;
  if (scan.pieces.size() < shown_.size()) ++violations_;
  for (size_t i = 0; i < scan.pieces.size(); ++i) {
    const bool is_new = i >= shown_.size();
    if (is_new) shown_.emplace_back();
    show(scan.pieces[i], shown_[i], is_new, delta);
  }
  if (scan.settled > settled_) {
    settled_ = scan.settled;
    shown_.erase(shown_.begin(), shown_.begin() + std::min(scan.settled_pieces, shown_.size()));
  }
  return delta;
}

void ToolCallStream::show(const Piece& piece, Shown& shown, bool is_new, OutputDelta& delta) {
  if (is_new) {
    shown.kind = piece.kind;
    if (piece.kind == PieceKind::call) {
      if (max_calls_ == 0 || next_call_index_ < max_calls_) {
        shown.call_index = next_call_index_++;
        shown.name = piece.call.name;
        delta.tool_calls.push_back({shown.call_index,
                                    piece.call.id.empty() ? new_call_id() : piece.call.id,
                                    piece.call.name, ""});
      } else {
        ++next_call_index_;  // counted, not sent
      }
    }
  } else if (shown.kind != piece.kind) {
    ++violations_;
    return;
  }
  if (piece.kind == PieceKind::call) {
    const std::string& arguments = piece.call.arguments;
    if (piece.call.name != shown.name || arguments.size() < shown.argument_bytes) {
      if (shown.call_index >= 0) ++violations_;
      return;
    }
    if (shown.call_index < 0 || arguments.size() == shown.argument_bytes) return;
    std::string fragment = arguments.substr(shown.argument_bytes);
    shown.argument_bytes = arguments.size();
    if (!delta.tool_calls.empty() && delta.tool_calls.back().index == shown.call_index)
      delta.tool_calls.back().arguments += fragment;
    else
      delta.tool_calls.push_back({shown.call_index, "", "", std::move(fragment)});
    return;
  }
  if (piece.text.size() < shown.text_bytes) {
    ++violations_;
    return;
  }
  std::string& target = piece.kind == PieceKind::content ? delta.content : delta.reasoning;
  target.append(piece.text, shown.text_bytes);
  shown.text_bytes = piece.text.size();
}

std::string ToolCallStream::new_call_id() const {
  static thread_local std::mt19937_64 generator{std::random_device{}()};
  static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  const bool nine = format_.id_style() == CallIdStyle::nine_letters;
  std::string id = nine ? "" : "call_";
  for (int i = 0; i < (nine ? 9 : 24); ++i) id += alphabet[generator() % (sizeof(alphabet) - 1)];
  return id;
}

}  // namespace mlx_cpp::chat
