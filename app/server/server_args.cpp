#include "server_args.h"

#include "api/request_guard.h"

#include <algorithm>
#include <charconv>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sys/stat.h>

namespace arbor::server {

const char* const kServerUsage =
    "usage: arbor-server [--model PATH] [--host H] [--port P] [--api-key-file FILE] [--threads N]\n"
    "                    [--device D] [--kv-mib N] [--kv-type T] [--cors-origin ORIGIN]... [--allowed-hosts H,...]\n"
    "                    [--kv-disk-mib N] [--kv-disk-dir DIR] [--share-cache] [--int8-activations]\n"
    "                    [--verbose]\n"
    "Serves the OpenAI-compatible API (/v1/models, /v1/chat/completions, /v1/completions,\n"
    "/health) with one engine on the model.\n"
    "  --model PATH          GGUF file (default: the installed default model)\n"
    "  --host H              address to listen on (default 127.0.0.1)\n"
    "  --port P              TCP port (default 8080; 0 picks a free one)\n"
    "  --api-key-file FILE   require 'Authorization: Bearer K', K the file's first line;\n"
    "                        or set ARBOR_API_KEY=K (--api-key K works too, but every\n"
    "                        user of this machine can read it in ps)\n"
    "  --threads N           CPU threads (default: one per core)\n"
    "  --device D            auto, cpu, cuda or cuda:N (default auto: the GPU when usable)\n"
    "  --kv-mib N            KV cache memory in MiB (default 512)\n"
    "  --kv-type T           KV cache element type: f16 (default), f32 or q8_0 (about half\n"
    "                        of f16's bytes per token; CPU only)\n"
    "  --kv-disk-mib N       KV disk tier budget in MiB (default 4096; 0 turns it off): pages\n"
    "                        leaving memory, and all at exit, are kept on disk and read back\n"
    "                        when a prompt continues them (also after a restart)\n"
    "  --kv-disk-dir DIR     where the disk tier keeps them (default\n"
    "                        ${XDG_CACHE_HOME:-~/.cache}/arbor/kv)\n"
    "  --cors-origin ORIGIN  allow browser requests from ORIGIN ('*': any); repeatable\n"
    "  --allowed-hosts H,... also answer requests whose Host names H (besides localhost and\n"
    "                        the server's addresses); '*': any name (unsafe); repeatable\n"
    "  --share-cache         one prefix cache for every client (by default each API key or\n"
    "                        bearer token, and all clients without one, have their own,\n"
    "                        so no client can probe another's prompts; cache_salt still\n"
    "                        separates)\n"
    "  --int8-activations    round activations to 8 bits inside the weight products, as\n"
    "                        llama.cpp does: faster prompts and batches on the CPU, logits\n"
    "                        a little less exact (README, Numerics)\n"
    "Ctrl+C or SIGTERM stops the server.\n";

namespace {

int64_t to_int(const std::string& name, const std::string& value, int64_t lo, int64_t hi) {
    int64_t v = 0;
    auto r = std::from_chars(value.data(), value.data() + value.size(), v);
    if (value.empty() || r.ec != std::errc() || r.ptr != value.data() + value.size())
        throw ServerUsageError(name + " needs a whole number, got '" + value + "'");
    if (v < lo || v > hi)
        throw ServerUsageError(name + " must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                               ", got " + value);
    return v;
}

// "a.example, b.example": each a name or address without a port, or "*".
void append_allowed_hosts(const std::string& option, const std::string& list, std::vector<std::string>& out) {
    size_t start = 0;
    for (;;) {
        const size_t comma = std::min(list.find(',', start), list.size());
        std::string host = list.substr(start, comma - start);
        host.erase(0, host.find_first_not_of(' '));
        host.erase(host.find_last_not_of(' ') + 1);
        if (!api::valid_allowed_host(host))
            throw ServerUsageError(option + " needs host names or IP addresses without ports, separated by commas; got '" +
                                   host + "'");
        out.push_back(std::move(host));
        if (comma == list.size()) return;
        start = comma + 1;
    }
}

// The key in an --api-key-file: its first line without surrounding blanks.
std::string read_key_file(const std::string& path, std::vector<std::string>& warnings) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ServerUsageError("--api-key-file: cannot read '" + path + "': " + std::strerror(errno));
    std::string key;
    std::getline(in, key);
    if (in.bad()) throw ServerUsageError("--api-key-file: cannot read '" + path + "'");
    const auto first = key.find_first_not_of(" \t\r");
    key = first == std::string::npos ? std::string() : key.substr(first, key.find_last_not_of(" \t\r") - first + 1);
    if (key.empty()) throw ServerUsageError("--api-key-file: '" + path + "' holds no key on its first line");
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && (st.st_mode & (S_IRGRP | S_IROTH)))
        warnings.push_back("the key file '" + path + "' is readable by other users (chmod 600 it)");
    return key;
}

} // namespace

ServerArgs parse_server_args(const std::vector<std::string>& args) {
    ServerArgs out;
    bool key_given = false, key_file_given = false;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--help" || a == "-h") {
            out.help = true;
            continue;
        }
        if (a == "--verbose") {
            out.verbose = true;
            continue;
        }
        auto value = [&]() -> const std::string& {
            if (i + 1 >= args.size()) throw ServerUsageError(a + " needs a value");
            return args[++i];
        };
        if (a == "--model") out.model = value();
        else if (a == "--host") {
            out.api.host = value();
            if (out.api.host.empty()) throw ServerUsageError("--host needs a non-empty address");
        } else if (a == "--port") out.api.port = uint16_t(to_int(a, value(), 0, 65535));
        else if (a == "--api-key") {
            out.api.api_key = value();
            if (out.api.api_key.empty()) throw ServerUsageError("--api-key needs a non-empty key");
            key_given = true;
            out.warnings.push_back("--api-key shows the key to every user of this machine (ps); use --api-key-file FILE "
                                   "or ARBOR_API_KEY instead");
        } else if (a == "--api-key-file") {
            out.api.api_key = read_key_file(value(), out.warnings);
            key_file_given = true;
        } else if (a == "--share-cache") {
            out.api.share_app_cache = true;
        } else if (a == "--int8-activations") {
            out.int8_activations = true;
        } else if (a == "--threads") out.threads = int(to_int(a, value(), 0, 1024));
        else if (a == "--device") out.device = value();
        else if (a == "--kv-mib") out.kv_mib = to_int(a, value(), 16, 1 << 20);
        else if (a == "--kv-type") {
            const auto type = kv_type_from_name(value());
            if (!type) throw ServerUsageError("--kv-type must be f16, f32 or q8_0");
            out.kv_type = *type;
        }
        else if (a == "--kv-disk-mib") out.kv_disk_mib = to_int(a, value(), 0, int64_t(1) << 30);
        else if (a == "--kv-disk-dir") {
            out.kv_disk_dir = value();
            if (out.kv_disk_dir.empty()) throw ServerUsageError("--kv-disk-dir needs a directory");
        }
        else if (a == "--cors-origin") {
            out.api.allowed_origins.push_back(value());
            if (out.api.allowed_origins.back().empty()) throw ServerUsageError("--cors-origin needs an origin");
        } else if (a == "--allowed-hosts") {
            append_allowed_hosts(a, value(), out.api.allowed_hosts);
        } else throw ServerUsageError("unknown option '" + a + "'");
    }
    if (key_given && key_file_given) throw ServerUsageError("--api-key and --api-key-file exclude each other");
    if (!key_given && !key_file_given)
        if (const char* env = std::getenv("ARBOR_API_KEY"); env && *env) out.api.api_key = env;
    return out;
}

} // namespace arbor::server
