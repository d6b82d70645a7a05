// The built-in model zoo: "zoo:NAME" models (see Session::load), the networks
// the inter-operator scheduling papers evaluate, with deterministic random
// weights. `hetsched zoo` lists them.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace hetsched::zoo {

using ZooParams = std::map<std::string, std::string>;

struct ZooModelInfo {
  std::string name;
  std::string description;
  std::string params;  // accepted parameters with their defaults: "layers=12 seq=128 ..."
};

// Every zoo model, sorted by name.
std::vector<ZooModelInfo> zoo_models();

}  // namespace hetsched::zoo
