// The machine a benchmark ran on, printed with every result (numbers from different CPUs
// are not comparable): the CPU's model name and which of the vector extensions that matter
// to the kernels it reports.
#pragma once

#include <string>

namespace arbor::bench {

// e.g. "AMD EPYC, 2 CPUs; has avx2 fma f16c; lacks avx512f avx512_vnni avx_vnni amx_tile"
// (from /proc/cpuinfo; "unknown CPU" where it cannot be read).
std::string cpu_description();

} // namespace arbor::bench
