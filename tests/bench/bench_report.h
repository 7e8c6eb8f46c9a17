// Result rows of arbor-bench, printed as a table or as JSON.
#pragma once

#include <string>
#include <vector>

namespace arbor::bench {

struct Measurement {
    std::string test;        // e.g. "pp512", "tg128"
    int threads = 0;
    double mean_tps = 0.0;   // tokens per second
    double stddev_tps = 0.0;
    std::vector<double> runs_tps;
};

// What a run held and how long it took to start: the time from opening the model file to
// its first generated token (loading, weight packing and one one-token prompt), the
// process's peak resident memory, and what it needs: the file's bytes and the KV pool's.
struct Footprint {
    double load_ms = 0.0;
    double peak_rss_mib = 0.0;
    double file_mib = 0.0;
    double kv_mib = 0.0;
};

struct Report {
    std::string model;
    std::string backend;
    std::string isa;
    std::string cpu;  // cpu_description()
    std::vector<Measurement> rows;
    Footprint footprint;  // all zero: not measured
};

// The process's peak resident set (VmHWM) in MiB; 0 where /proc does not say.
double peak_rss_mib();

// One number in a printf format ("%.2f"), for the tables and JSON of the workloads.
std::string fmt(const char* format, double v);

std::string to_table(const Report& report);
// `s` as a JSON string literal, quotes included.
std::string json_quoted(const std::string& s);
std::string to_json(const Report& report);

} // namespace arbor::bench
