#include "chat/region_format.h"

#include "chat/json_scan.h"

namespace mlx_cpp::chat {
namespace {

size_t trailing_space_begin(std::string_view text, size_t begin, size_t end) {
  while (end > begin && json_scan::is_space(text[end - 1])) --end;
  return end;
}

class ScanBuilder {
 public:
  explicit ScanBuilder(std::string_view text) : text_(text) {}

  // Content that is final: merged into an unsettled content piece.
  void content(size_t begin, size_t end) {
    if (begin >= end) return;
    auto& pieces = scan_.pieces;
    if (!pieces.empty() && pieces.size() > scan_.settled_pieces &&
        pieces.back().kind == PieceKind::content) {
      pieces.back().text.append(text_.substr(begin, end - begin));
    } else {
      Piece piece;
      piece.text = std::string(text_.substr(begin, end - begin));
      pieces.push_back(std::move(piece));
    }
  }
  void add(std::vector<Piece> pieces) {
    for (auto& piece : pieces) scan_.pieces.push_back(std::move(piece));
  }
  void settle(size_t at) {
    scan_.settled = at;
    scan_.settled_pieces = scan_.pieces.size();
  }
  Scan take() { return std::move(scan_); }

 private:
  std::string_view text_;
  Scan scan_;
};

}  // namespace

Scan RegionFormat::scan(std::string_view text, size_t from, bool at_end,
                        const ToolContext& context) const {
  ScanBuilder builder(text);
  builder.settle(from);
  size_t position = from;
  while (position < text.size()) {
    const RegionStart start = find_start(text, position, context);
    if (start.status == RegionStart::Status::none) {
      // Content to the end; its trailing whitespace waits (it is dropped
      // if markup follows).
      size_t final_end = at_end ? text.size() : trailing_space_begin(text, position, text.size());
      builder.content(position, final_end);
      if (final_end > position) builder.settle(final_end);
      break;
    }
    // Content before the region, without the whitespace that separates them.
    const size_t content_end = trailing_space_begin(text, position, start.begin);
    builder.content(position, content_end);
    if (content_end > position) builder.settle(content_end);
    if (start.status == RegionStart::Status::partial) {
      if (at_end) builder.content(content_end, text.size());
      break;
    }
    Region region = read_region(text, start.begin, at_end, context);
    if (region.status == Region::Status::rejected) {
      // Its first byte is content; whitespace before it is content too.
      builder.content(content_end, start.begin + 1);
      builder.settle(start.begin + 1);
      position = start.begin + 1;
      continue;
    }
    builder.add(std::move(region.pieces));
    if (region.status == Region::Status::open) break;
    // The whitespace after a region belongs to it (content that follows
    // starts at its first visible byte); it settles once something follows.
    position = json_scan::skip_space(text, region.end);
    if (position < text.size() || at_end) builder.settle(position);
  }
  return builder.take();
}

RegionStart find_marker(std::string_view text, size_t from, std::string_view marker) {
  size_t found = text.find(marker, from);
  if (found != std::string_view::npos) return {RegionStart::Status::found, found};
  // The longest suffix of text that is a prefix of the marker.
  const size_t longest = std::min(marker.size() - 1, text.size() - std::min(from, text.size()));
  for (size_t length = longest; length > 0; --length) {
    if (text.substr(text.size() - length) == marker.substr(0, length))
      return {RegionStart::Status::partial, text.size() - length};
  }
  return {};
}

RegionStart earliest(RegionStart a, RegionStart b) {
  using Status = RegionStart::Status;
  if (a.status == Status::none) return b;
  if (b.status == Status::none) return a;
  if (a.begin != b.begin) return a.begin < b.begin ? a : b;
  return a.status == Status::found ? a : b;
}

Piece call_piece(std::string name, std::string arguments, bool closed, std::string id) {
  Piece piece;
  piece.kind = PieceKind::call;
  piece.call = {std::move(id), std::move(name), std::move(arguments)};
  piece.closed = closed;
  return piece;
}

}  // namespace mlx_cpp::chat
