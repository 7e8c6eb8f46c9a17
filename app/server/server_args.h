// Command-line options of arbor-server. Anything unknown, a missing value or a value
// out of range is a ServerUsageError naming the option.
#pragma once

#include "api/api_server.h"
#include "arbor/backend.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace arbor::server {

struct ServerUsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct ServerArgs {
    std::string model;           // empty: the installed default model
    api::ApiServerOptions api;   // host, port, key, CORS origins, allowed hosts
    int threads = 0;             // 0: one per core
    std::string device = "auto"; // BackendOptions::device
    int64_t kv_mib = 512;
    KvType kv_type = KvType::F16;  // BackendOptions::kv_type
    bool int8_activations = false;  // BackendOptions::int8_activations
    int64_t kv_disk_mib = 4096;  // 0: no disk tier
    std::string kv_disk_dir;     // empty: arbor::kv_disk_dir()
    bool help = false;
    bool verbose = false;
    std::vector<std::string> warnings;  // for the user, before serving (a key given on the command line)
};

// args excludes the program name. ARBOR_API_KEY supplies the key when neither --api-key
// nor --api-key-file is given.
ServerArgs parse_server_args(const std::vector<std::string>& args);

extern const char* const kServerUsage;

} // namespace arbor::server
