#pragma once
// The SSD tier under the prefix cache: entries that leave memory are
// written to files, found again by the same longest-prefix rules, and
// loaded instead of prefilled.
//
// Files are prompt-cache files (model/prompt_cache_file.h, so mlx-lm can
// read them too) carrying, in their metadata, the tokens they hold, the
// cache signature (kind and KV scheme), the model's identity, a format
// version and a seal (a SHA-256 of all the rest, io/safetensors_image.h).
// They live in a folder per model identity and format, named by a hash of
// signature and tokens, and are written durably (temporary file, fsync,
// rename, fsync of the folder) by a thread of their own: a crash leaves a
// file whole or absent. A file that does not read back as sealed is
// deleted, never loaded.
//
// Processes may share a folder: files are immutable once named, two
// writers of one entry write the same content under the same name
// (rename replaces atomically), and a file another process deleted is a
// miss. Each process counts towards its byte cap the files it knows (found
// at start or written), evicting the least recently used (file times, so
// processes see each other's use).
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "engine/prefix_cache.h"
#include "io/safetensors_image.h"

namespace mlx_cpp {

// What a model's files are: config.json's bytes and each weight file's
// name, size and modification time, hashed. Changes when the checkpoint does.
std::string model_identity(const std::filesystem::path& model_directory);

struct SsdCacheOptions {
  std::filesystem::path directory;
  std::size_t byte_cap = 0;  // of files on disk
  std::string identity;      // model_identity() (and adapters, when there are)
  std::string model;         // the model's directory, as mlx-lm's files name it
  // Bytes waiting to be written at most; entries past it are not kept.
  std::size_t pending_cap = std::size_t(1) << 30;
};

struct SsdCacheCounts {
  std::size_t files = 0, bytes = 0;
  std::size_t written = 0, write_failures = 0, dropped = 0;
  std::size_t hits = 0, rejected = 0;  // rejected: found broken and deleted
};

class SsdCache : public PrefixCacheTier {
 public:
  // Opens (creates) the folder, deletes what is broken or left half
  // written, and indexes the rest from their headers.
  explicit SsdCache(SsdCacheOptions options);
  // Writes what is pending, then stops the writer.
  ~SsdCache() override;
  SsdCache(const SsdCache&) = delete;
  SsdCache& operator=(const SsdCache&) = delete;

  void spill(const std::vector<int>& tokens, const CacheList& caches,
             const std::string& signature) override;
  std::optional<Found> fetch(const std::vector<int>& prompt, const std::string& signature,
                             std::size_t longer_than) override;
  void flush() override;

  SsdCacheCounts counts() const;
  const std::filesystem::path& folder() const { return folder_; }

 private:
  struct File {
    std::filesystem::path path;
    std::size_t bytes = 0;
    std::filesystem::file_time_type used;
  };
  struct Job {
    SafetensorsImage image;
    std::filesystem::path path;
    std::vector<int> tokens;
    std::string signature;
    bool trimmable = false;
  };
  void index_existing();
  // Adds a file to the index (under the lock).
  // `used`: when the file was last used (its time on disk when found at
  // start-up; now when just written), the order the cap evicts in.
  void add(const std::filesystem::path& path, std::size_t bytes, std::vector<int> tokens,
           const std::string& signature, bool trimmable, std::filesystem::file_time_type used);
  void forget(PrefixIndex::Id id, bool remove_file);  // under the lock
  void evict_over_cap();                              // under the lock
  void write_loop();
  std::filesystem::path path_for(const std::vector<int>& tokens,
                                 const std::string& signature) const;

  SsdCacheOptions options_;
  std::filesystem::path folder_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  PrefixIndex index_;
  std::unordered_map<PrefixIndex::Id, File> files_;
  PrefixIndex::Id next_id_ = 1;
  std::size_t bytes_ = 0;
  std::deque<Job> queue_;
  std::size_t pending_bytes_ = 0;
  bool writing_ = false, stopping_ = false;
  SsdCacheCounts counts_;
  std::string last_warning_;
  std::thread writer_;
};

}  // namespace mlx_cpp
