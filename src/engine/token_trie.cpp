#include "engine/token_trie.h"

#include <algorithm>

namespace mlx_cpp {
namespace {

void remove_id(std::vector<TokenTrie::Id>& ids, TokenTrie::Id id) {
  auto found = std::find(ids.begin(), ids.end(), id);
  if (found != ids.end()) ids.erase(found);
}

}  // namespace

void TokenTrie::insert(Id id, const std::vector<int>& tokens) {
  Node* node = &root_;
  for (int token : tokens) {
    auto& child = node->children[token];
    if (!child) child = std::make_unique<Node>();
    node = child.get();
    node->passing.push_back(id);
  }
  node->ending.push_back(id);
}

void TokenTrie::erase(Id id, const std::vector<int>& tokens) {
  // The path first, then the id off every node on it, pruning the nodes
  // no sequence goes through any more (deepest first).
  std::vector<Node*> path{&root_};
  for (int token : tokens) {
    auto child = path.back()->children.find(token);
    if (child == path.back()->children.end()) return;
    path.push_back(child->second.get());
  }
  remove_id(path.back()->ending, id);
  for (std::size_t depth = tokens.size(); depth > 0; --depth) {
    Node* node = path[depth];
    remove_id(node->passing, id);
    if (node->passing.empty()) path[depth - 1]->children.erase(tokens[depth - 1]);
  }
}

const std::vector<TokenTrie::Id>* TokenTrie::exact(const std::vector<int>& tokens) const {
  const Node* node = &root_;
  for (int token : tokens) {
    auto child = node->children.find(token);
    if (child == node->children.end()) return nullptr;
    node = child->second.get();
  }
  return &node->ending;
}

std::vector<TokenTrie::Level> TokenTrie::walk(const std::vector<int>& query,
                                              std::size_t limit) const {
  std::vector<Level> levels;
  const Node* node = &root_;
  const std::size_t count = std::min(limit, query.size());
  for (std::size_t i = 0; i < count; ++i) {
    auto child = node->children.find(query[i]);
    if (child == node->children.end()) break;
    node = child->second.get();
    levels.push_back({i + 1, node->passing, node->ending});
  }
  return levels;
}

}  // namespace mlx_cpp
