#pragma once
// An index of stored token sequences by their prefixes: a walk along a
// query visits, depth by depth, the stored sequences that share that many
// tokens with it, in time proportional to the query's length rather than
// to the number and length of the sequences stored.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

namespace mlx_cpp {

class TokenTrie {
 public:
  using Id = std::uint64_t;

  // One depth of a walk: the ids whose sequences start with the query's
  // first `depth` tokens, and those of them that end there.
  struct Level {
    std::size_t depth;
    const std::vector<Id>& passing;
    const std::vector<Id>& ending;
  };

  void insert(Id id, const std::vector<int>& tokens);
  // Removes what insert(id, tokens) added; an id not stored is ignored.
  void erase(Id id, const std::vector<int>& tokens);
  // Ids whose sequence is exactly `tokens`.
  const std::vector<Id>* exact(const std::vector<int>& tokens) const;
  // The levels of the query's first `limit` tokens, shallowest first,
  // down to the deepest the stored sequences reach.
  std::vector<Level> walk(const std::vector<int>& query, std::size_t limit) const;
  bool empty() const { return root_.children.empty(); }

 private:
  struct Node {
    std::unordered_map<int, std::unique_ptr<Node>> children;
    std::vector<Id> passing;  // ids whose sequence goes through this node
    std::vector<Id> ending;   // ids whose sequence ends here
  };
  Node root_;
};

}  // namespace mlx_cpp
