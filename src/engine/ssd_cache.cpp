#include "engine/ssd_cache.h"

#include <mlx/transforms.h>
#include <signal.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "io/error.h"
#include "io/gguf/sha256.h"
#include "io/safetensors_file.h"
#include "model/prompt_cache_file.h"

namespace mlx_cpp {
namespace fs = std::filesystem;
namespace {

// Bumped whenever what a file means changes: older files are deleted.
constexpr const char* kFormat = "1";
// Metadata keys (the caller's part of a prompt-cache file's metadata).
constexpr const char* kFormatKey = "mlx_cpp_ssd_format";
constexpr const char* kIdentityKey = "mlx_cpp_identity";
constexpr const char* kSignatureKey = "mlx_cpp_signature";
constexpr const char* kTokensKey = "mlx_cpp_tokens";
constexpr const char* kTrimmableKey = "mlx_cpp_trimmable";
// The seal, among the file's metadata as a whole (prompt-cache files put
// the caller's keys under "0.").
constexpr const char* kSealKey = "0.mlx_cpp_seal";

std::string hex_sha256(const std::string& text) {
  return gguf::sha256_bytes(
      std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

std::string join_tokens(const std::vector<int>& tokens) {
  std::string text;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (i) text += ',';
    text += std::to_string(tokens[i]);
  }
  return text;
}

std::optional<std::vector<int>> split_tokens(const std::string& text) {
  std::vector<int> tokens;
  const char* at = text.data();
  const char* end = text.data() + text.size();
  while (at < end) {
    int value = 0;
    auto [next, error] = std::from_chars(at, end, value);
    if (error != std::errc() || value < 0) return std::nullopt;
    tokens.push_back(value);
    at = next;
    if (at < end && *at++ != ',') return std::nullopt;
  }
  if (tokens.empty()) return std::nullopt;
  return tokens;
}

bool process_alive(long pid) {
  return pid > 0 && (::kill(pid, 0) == 0 || errno != ESRCH);
}

// "<stem>.tmp-<pid>.safetensors" (io/durable_file.h) → pid.
long writer_pid(const std::string& name) {
  const auto at = name.rfind(".tmp-");
  if (at == std::string::npos) return -1;
  try {
    return std::stol(name.substr(at + 5));
  } catch (...) {
    return -1;
  }
}

// Fault injection for tests: MLX_CPP_SSD_WRITE_PAUSE_MS holds each write
// halfway for that long, so a test can kill the process mid-write.
std::function<void()> midway_pause() {
  static const long milliseconds = [] {
    const char* value = std::getenv("MLX_CPP_SSD_WRITE_PAUSE_MS");
    return value ? std::strtol(value, nullptr, 10) : 0L;
  }();
  if (milliseconds <= 0) return {};
  return [] { std::this_thread::sleep_for(std::chrono::milliseconds(milliseconds)); };
}

}  // namespace

std::string model_identity(const fs::path& model_directory) {
  std::string facts;
  std::ifstream config(model_directory / "config.json", std::ios::binary);
  facts.assign(std::istreambuf_iterator<char>(config), std::istreambuf_iterator<char>());
  for (const auto& file : find_weight_files(model_directory)) {
    facts += "\n" + file.filename().string() + " " + std::to_string(fs::file_size(file)) + " " +
             std::to_string(fs::last_write_time(file).time_since_epoch().count());
  }
  return hex_sha256(facts);
}

SsdCache::SsdCache(SsdCacheOptions options) : options_(std::move(options)) {
  if (options_.identity.empty()) throw Error("the SSD cache needs the model's identity");
  folder_ =
      options_.directory / (std::string("v") + kFormat + "-" + options_.identity.substr(0, 16));
  std::error_code error;
  fs::create_directories(folder_, error);
  if (error || !fs::is_directory(folder_))
    throw Error("cannot create the SSD cache folder " + folder_.string() + ": " + error.message());
  index_existing();
  writer_ = std::thread([this] { write_loop(); });
}

SsdCache::~SsdCache() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (writer_.joinable()) writer_.join();
}

void SsdCache::index_existing() {
  std::error_code error;
  for (const auto& item : fs::directory_iterator(folder_, error)) {
    const auto& path = item.path();
    const std::string name = path.filename().string();
    if (!name.empty() && name.front() == '.') {
      // Half written by a process that is gone (a crash or kill -9).
      if (!process_alive(writer_pid(name))) fs::remove(path, error);
      continue;
    }
    if (path.extension() != ".safetensors") continue;
    std::optional<std::vector<int>> tokens;
    std::string signature;
    bool trimmable = false;
    try {
      const auto header = read_safetensors_header(path);
      auto value = [&](const char* key) {
        auto found = header.metadata.find(std::string("0.") + key);
        return found == header.metadata.end() ? std::string() : found->second;
      };
      if (value(kFormatKey) == kFormat && value(kIdentityKey) == options_.identity &&
          header.metadata.count(kSealKey)) {
        tokens = split_tokens(value(kTokensKey));
        signature = value(kSignatureKey);
        trimmable = value(kTrimmableKey) == "1";
      }
    } catch (const Error&) {
      // truncated or garbled: deleted below
    }
    if (!tokens || signature.empty()) {
      fs::remove(path, error);
      ++counts_.rejected;
      continue;
    }
    std::lock_guard lock(mutex_);
    add(path, fs::file_size(path, error), std::move(*tokens), signature, trimmable,
        fs::last_write_time(path, error));
  }
  std::lock_guard lock(mutex_);
  evict_over_cap();
}

void SsdCache::add(const fs::path& path, std::size_t bytes, std::vector<int> tokens,
                   const std::string& signature, bool trimmable, fs::file_time_type used) {
  if (const auto same = index_.exact(tokens, signature)) forget(*same, /*remove_file=*/false);
  const auto id = next_id_++;
  index_.insert(id, tokens, signature, trimmable);
  files_[id] = File{path, bytes, used};
  bytes_ += bytes;
  counts_.files = files_.size();
  counts_.bytes = bytes_;
}

void SsdCache::forget(PrefixIndex::Id id, bool remove_file) {
  auto file = files_.find(id);
  if (file == files_.end()) return;
  if (remove_file) {
    std::error_code error;
    fs::remove(file->second.path, error);
  }
  bytes_ -= file->second.bytes;
  files_.erase(file);
  index_.erase(id);
  counts_.files = files_.size();
  counts_.bytes = bytes_;
}

void SsdCache::evict_over_cap() {
  while (bytes_ > options_.byte_cap && !files_.empty()) {
    auto oldest = files_.begin();
    for (auto it = files_.begin(); it != files_.end(); ++it)
      if (it->second.used < oldest->second.used) oldest = it;
    forget(oldest->first, /*remove_file=*/true);
  }
}

fs::path SsdCache::path_for(const std::vector<int>& tokens, const std::string& signature) const {
  return folder_ /
         (hex_sha256(signature + "|" + join_tokens(tokens)).substr(0, 32) + ".safetensors");
}

void SsdCache::spill(const std::vector<int>& tokens, const CacheList& caches,
                     const std::string& signature) {
  const auto path = path_for(tokens, signature);
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    if (index_.exact(tokens, signature)) return;  // on disk already
    for (const auto& job : queue_)
      if (job.path == path) return;
  }
  const bool trimmable = all_trimmable(caches);
  std::optional<SafetensorsImage> image;
  try {
    image = prompt_cache_image(caches, {{"model", options_.model},
                                        {"tokenizer_config", "{}"},
                                        {kFormatKey, kFormat},
                                        {kIdentityKey, options_.identity},
                                        {kSignatureKey, signature},
                                        {kTokensKey, join_tokens(tokens)},
                                        {kTrimmableKey, trimmable ? "1" : "0"}});
    image->seal(kSealKey);
  } catch (const Error& error) {
    std::lock_guard lock(mutex_);
    ++counts_.dropped;
    return;
  }
  const std::size_t bytes = image->data().size();
  std::lock_guard lock(mutex_);
  if (pending_bytes_ + bytes > options_.pending_cap) {
    ++counts_.dropped;
    return;
  }
  pending_bytes_ += bytes;
  queue_.push_back(Job{std::move(*image), path, tokens, signature, trimmable});
  changed_.notify_all();
}

void SsdCache::write_loop() {
  while (true) {
    std::optional<Job> job;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing pending
      job.emplace(std::move(queue_.front()));
      queue_.pop_front();
      writing_ = true;
    }
    std::string failure;
    try {
      job->image.write(job->path, midway_pause());
    } catch (const std::exception& error) {
      failure = error.what();
    }
    std::error_code error;
    const std::size_t bytes = failure.empty() ? fs::file_size(job->path, error) : 0;
    {
      std::lock_guard lock(mutex_);
      writing_ = false;
      pending_bytes_ -= job->image.data().size();
      if (failure.empty()) {
        // Just written is just used, on the same clock as fetch's uses (a
        // file system's coarser timestamps could order it before them).
        const auto now = fs::file_time_type::clock::now();
        fs::last_write_time(job->path, now, error);  // other processes see the use
        add(job->path, bytes, std::move(job->tokens), job->signature, job->trimmable, now);
        ++counts_.written;
        evict_over_cap();
      } else {
        ++counts_.write_failures;
        // A full or failing disk leaves the cache in memory only: said
        // once per kind of failure, never fatal.
        if (failure != last_warning_) {
          last_warning_ = failure;
          std::fprintf(stderr, "mlx-cpp: SSD cache: %s; entries stay in memory only\n",
                       failure.c_str());
        }
      }
    }
    changed_.notify_all();
  }
}

void SsdCache::flush() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return queue_.empty() && !writing_; });
}

std::optional<PrefixCacheTier::Found> SsdCache::fetch(const std::vector<int>& prompt,
                                                      const std::string& signature,
                                                      std::size_t longer_than) {
  PrefixIndex::Id id = 0;
  fs::path path;
  std::vector<int> tokens;
  std::size_t length = 0;
  {
    std::lock_guard lock(mutex_);
    const auto match = index_.best(prompt, signature);
    if (!match || match->length <= longer_than) return std::nullopt;
    id = match->id;
    length = match->length;
    path = files_.at(id).path;
    tokens = index_.tokens(id);
  }
  // Read whole and checked against its seal before anything of it is
  // used; the caches are then evaluated at once, so the file may go.
  std::optional<PromptCacheContents> contents;
  if (safetensors_seal_holds(path, kSealKey)) {
    try {
      contents = load_prompt_cache(path);
      std::vector<mlx::core::array> state;
      for (const auto& cache : contents->caches) {
        if (cache->offset() != static_cast<int>(tokens.size())) throw Error("offset");
        for (auto& array : cache->state()) state.push_back(array);
      }
      mlx::core::eval(state);
      if (contents->metadata[kSignatureKey] != signature ||
          contents->metadata[kIdentityKey] != options_.identity)
        contents.reset();
    } catch (const std::exception&) {
      contents.reset();
    }
  }
  std::lock_guard lock(mutex_);
  if (!contents) {
    forget(id, /*remove_file=*/true);
    ++counts_.rejected;
    return std::nullopt;
  }
  ++counts_.hits;
  index_.touch(id);
  if (auto file = files_.find(id); file != files_.end()) {
    std::error_code error;
    file->second.used = fs::file_time_type::clock::now();
    fs::last_write_time(path, file->second.used, error);  // other processes see the use
  }
  return Found{std::move(tokens), std::move(contents->caches), length};
}

SsdCacheCounts SsdCache::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

}  // namespace mlx_cpp
