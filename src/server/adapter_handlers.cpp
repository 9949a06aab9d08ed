// The adapter endpoints: GET /v1/adapters (mounted), GET
// /v1/adapters/available (directories under --adapter-dir), POST
// /v1/adapters (mount one at runtime), DELETE /v1/adapters/{name}.
// Mounting and unmounting run on the engine thread, between two steps.
#include <algorithm>
#include <set>
#include <system_error>
#include <vector>

#include "model/adapter_files.h"
#include "server/api_error.h"
#include "server/request_fields.h"
#include "server/route_context.h"

namespace mlx_cpp::server {
namespace {

const Backend& loaded_backend(const EngineThread& engine) {
  const Backend* backend = engine.backend();
  if (engine.state() != EngineState::ready || !backend)
    throw ApiError(503, "unavailable_error", "the model is not ready");
  return *backend;
}

nlohmann::ordered_json adapter_entry(const AdapterRegistry::Mounted& mounted,
                                     const std::string& model_id) {
  const auto& adapter = *mounted.adapter;
  return {{"id", adapter.name},
          {"object", "adapter"},
          {"model", model_id + ":" + adapter.name},
          {"path", adapter.directory},
          {"fine_tune_type", adapter.fine_tune_type},
          {"rank", adapter.rank},
          {"scale", adapter.scale},
          {"bytes", adapter.bytes},
          {"in_use", mounted.in_use}};
}

// A directory a mount request names: absolute, or under --adapter-dir.
std::filesystem::path adapter_directory(const ServerConfig& config, const std::string& name,
                                        const std::optional<std::string>& path) {
  const std::filesystem::path directory =
      path ? std::filesystem::path(*path) : std::filesystem::path(name);
  if (directory.is_absolute()) return directory;
  if (config.adapter_dir.empty())
    throw invalid_request(
        "give an absolute 'path' (this server has no --adapter-dir for relative ones)", "path");
  if (directory.lexically_normal().string().rfind("..", 0) == 0)
    throw invalid_request("'path' must stay under the adapter directory", "path");
  return config.adapter_dir / directory;
}

}  // namespace

void handle_list_adapters(RouteContext& context, httplib::Response& response) {
  const auto& backend = loaded_backend(context.engine);
  nlohmann::ordered_json data = nlohmann::ordered_json::array();
  for (const auto& mounted : backend.adapters())
    data.push_back(adapter_entry(mounted, context.engine.model_id()));
  set_json(response, 200, {{"object", "list"}, {"data", data}});
}

void handle_available_adapters(RouteContext& context, httplib::Response& response) {
  const auto& backend = loaded_backend(context.engine);
  if (context.config.adapter_dir.empty())
    throw invalid_request("this server has no adapter directory (serve --adapter-dir DIR)", "");
  std::set<std::string> mounted;
  for (const auto& entry : backend.adapters()) mounted.insert(entry.adapter->directory);
  nlohmann::ordered_json data = nlohmann::ordered_json::array();
  std::error_code error;
  std::vector<std::filesystem::path> directories;
  for (const auto& entry : std::filesystem::directory_iterator(context.config.adapter_dir, error))
    if (entry.is_directory() && std::filesystem::exists(entry.path() / "adapter_config.json"))
      directories.push_back(entry.path());
  if (error)
    throw ApiError(500, "server_error",
                   "cannot list " + context.config.adapter_dir.string() + ": " + error.message());
  std::sort(directories.begin(), directories.end());
  for (const auto& directory : directories) {
    nlohmann::ordered_json item = {{"name", directory.filename().string()},
                                   {"path", directory.string()}};
    try {
      const auto files = read_adapter_directory(directory);
      item["fine_tune_type"] = files.fine_tune_type;
      item["num_layers"] = files.num_layers;
      item["rank"] = files.rank;
      item["scale"] = files.scale;
      item["mounted"] = mounted.count(files.directory.string()) > 0;
    } catch (const Error& unreadable) {
      item["error"] = unreadable.what();
    }
    data.push_back(std::move(item));
  }
  set_json(response, 200, {{"object", "list"}, {"data", data}});
}

void handle_mount_adapter(RouteContext& context, const httplib::Request& request,
                          httplib::Response& response) {
  auto body = parse_json_body(request.body);
  const auto name = optional_string(body, "name");
  if (!name || name->empty()) throw invalid_request("'name' is required", "name");
  const auto directory = adapter_directory(context.config, *name, optional_string(body, "path"));
  context.engine.run_on_engine([&](Backend& backend) { backend.mount_adapter(*name, directory); });
  for (const auto& mounted : loaded_backend(context.engine).adapters())
    if (mounted.adapter->name == *name)
      return set_json(response, 201, adapter_entry(mounted, context.engine.model_id()));
  throw ApiError(500, "server_error", "adapter " + *name + " was not mounted");
}

void handle_unmount_adapter(RouteContext& context, const std::string& name,
                            httplib::Response& response) {
  long in_use = 0;
  for (const auto& mounted : loaded_backend(context.engine).adapters())
    if (mounted.adapter->name == name) in_use = mounted.in_use;
  bool removed = false;
  context.engine.run_on_engine([&](Backend& backend) { removed = backend.unmount_adapter(name); });
  if (!removed)
    throw ApiError(404, "not_found_error", "no adapter named " + name + " is mounted", "name",
                   "adapter_not_found");
  // Requests already running with it finish with it; new ones are refused.
  set_json(
      response, 200,
      {{"id", name}, {"object", "adapter"}, {"deleted", true}, {"finishing_requests", in_use}});
}

}  // namespace mlx_cpp::server
