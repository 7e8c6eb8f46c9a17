#include "bench_report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace arbor::bench {
namespace {

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\', out += c;
        else if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else out += c;
    }
    return out + "\"";
}

} // namespace

std::string json_quoted(const std::string& s) { return json_string(s); }

namespace {

std::string number(double v) { return fmt("%.3f", v); }

} // namespace

std::string fmt(const char* format, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

double peak_rss_mib() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.starts_with("VmHWM:")) {
            std::istringstream in(line.substr(6));
            double kb = 0.0;
            in >> kb;
            return kb / 1024.0;
        }
    return 0.0;
}

std::string to_table(const Report& r) {
    std::string out = "model: " + r.model + "\nbackend: " + r.backend + " (" + r.isa + ")\ncpu: " + r.cpu + "\n\n";
    char line[160];
    int width = 8;  // the test column fits its longest name ("tg128 @ d1024")
    for (const auto& m : r.rows) width = std::max(width, int(m.test.size()));
    std::snprintf(line, sizeof line, "| %-*s | %7s | %14s |\n|%s|---------|----------------|\n", width, "test",
                  "threads", "tokens/s", std::string(size_t(width) + 2, '-').c_str());
    out += line;
    for (const auto& m : r.rows) {
        std::snprintf(line, sizeof line, "| %-*s | %7d | %7.1f ± %5.1f |\n", width, m.test.c_str(), m.threads,
                      m.mean_tps, m.stddev_tps);
        out += line;
    }
    const Footprint& f = r.footprint;
    if (f.peak_rss_mib > 0.0) {
        std::snprintf(line, sizeof line,
                      "\nload (file opened to first token): %.0f ms; peak RSS %.0f MiB = %.2f x (file %.0f MiB + KV %.0f MiB)\n",
                      f.load_ms, f.peak_rss_mib, f.peak_rss_mib / (f.file_mib + f.kv_mib), f.file_mib, f.kv_mib);
        out += line;
    }
    return out;
}

std::string to_json(const Report& r) {
    std::string out = "{\"model\": " + json_string(r.model) + ", \"backend\": " + json_string(r.backend) +
                      ", \"isa\": " + json_string(r.isa) + ", \"cpu\": " + json_string(r.cpu) + ", \"results\": [";
    for (size_t i = 0; i < r.rows.size(); ++i) {
        const auto& m = r.rows[i];
        out += std::string(i ? ", " : "") + "{\"test\": " + json_string(m.test) +
               ", \"threads\": " + std::to_string(m.threads) + ", \"tokens_per_second\": " + number(m.mean_tps) +
               ", \"stddev\": " + number(m.stddev_tps) + ", \"runs\": [";
        for (size_t j = 0; j < m.runs_tps.size(); ++j) out += (j ? ", " : "") + number(m.runs_tps[j]);
        out += "]}";
    }
    out += "]";
    const Footprint& f = r.footprint;
    if (f.peak_rss_mib > 0.0)
        out += ", \"load_ms\": " + number(f.load_ms) + ", \"peak_rss_mib\": " + number(f.peak_rss_mib) +
               ", \"file_mib\": " + number(f.file_mib) + ", \"kv_mib\": " + number(f.kv_mib);
    return out + "}\n";
}

} // namespace arbor::bench
