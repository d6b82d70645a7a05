// The zoo registry: each src/zoo/<name>.cpp registers its model with
// HETSCHED_ZOO_MODEL (model_builder.h); nothing central lists them.
#include "zoo/zoo.h"

#include <charconv>
#include <stdexcept>

#include "hetsched/error.h"
#include "zoo/model_builder.h"

namespace hetsched::zoo {
namespace {

// Function-local static: registration runs from static initialisers of other
// translation units, whose order is unspecified.
std::map<std::string, ZooModelDef>& registry() {
  static std::map<std::string, ZooModelDef> models;
  return models;
}

std::string params_text(const ZooModelDef& def) {
  std::string text;
  for (const auto& p : def.params) text += p.name + "=" + std::to_string(p.default_value) + " ";
  return text + "seed=0";
}

std::string accepted_names(const ZooModelDef& def) {
  std::string text;
  for (const auto& p : def.params) text += p.name + ", ";
  return text + "seed";
}

template <typename T>
bool parse_whole(const std::string& text, T& value) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end;
}

}  // namespace

void register_zoo_model(ZooModelDef def) {
  std::string name = def.name;
  registry()[name] = std::move(def);
}

std::vector<ZooModelInfo> zoo_models() {
  std::vector<ZooModelInfo> models;
  for (const auto& [name, def] : registry()) models.push_back({name, def.description, params_text(def)});
  return models;  // std::map: sorted by name
}

onnx::ModelProto build_zoo_model(const std::string& name, const ZooParams& params) {
  const auto& models = registry();
  auto it = models.find(name);
  if (it == models.end()) {
    std::string known;
    for (const auto& [n, def] : models) known += (known.empty() ? "" : ", ") + n;
    throw Error(ErrorCode::kUsage, "unknown zoo model '" + name + "'; known models: " + known);
  }
  const ZooModelDef& def = it->second;

  uint64_t seed = 0;
  std::map<std::string, int64_t> values;
  for (const auto& p : def.params) values[p.name] = p.default_value;
  for (const auto& [key, text] : params) {
    if (key == "seed") {
      if (!parse_whole(text, seed))
        throw Error(ErrorCode::kUsage, "zoo:" + name + ": parameter 'seed' must be an unsigned 64-bit integer, got '" +
                                           text + "'");
      continue;
    }
    const ZooParamSpec* spec = nullptr;
    for (const auto& p : def.params)
      if (p.name == key) spec = &p;
    if (!spec)
      throw Error(ErrorCode::kUsage,
                  "zoo:" + name + ": unknown parameter '" + key + "'; accepted: " + accepted_names(def));
    int64_t value = 0;
    if (!parse_whole(text, value) || value < spec->min_value || value > spec->max_value)
      throw Error(ErrorCode::kUsage, "zoo:" + name + ": parameter '" + key + "' must be an integer in [" +
                                         std::to_string(spec->min_value) + ", " + std::to_string(spec->max_value) +
                                         "], got '" + text + "'");
    values[key] = value;
  }
  try {
    return def.build(ZooArgs(seed, std::move(values)));
  } catch (const std::logic_error& e) {
    // A parameter combination the architecture cannot take (e.g. a width not
    // divisible by its groups) surfaces as a builder invariant.
    throw Error(ErrorCode::kUsage, "zoo:" + name + ": invalid parameters: " + e.what());
  }
}

}  // namespace hetsched::zoo
