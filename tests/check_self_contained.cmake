# Fails when a test or a build file reads data from beside the repository: a fresh clone
# has nothing there, so everything the tests need must live in tests/data.
#   cmake -DREPO_ROOT=<repository root> -P check_self_contained.cmake
if(NOT REPO_ROOT)
  message(FATAL_ERROR "REPO_ROOT is not set")
endif()

# Spelled in pieces so this file does not match itself.
set(outside "shared")
string(TOUPPER "${outside}" outside_upper)
set(pattern "\\.\\./${outside}|${outside}/fixtures|ARBOR_${outside_upper}_DIR")

file(GLOB_RECURSE candidates LIST_DIRECTORIES false
  "${REPO_ROOT}/tests/*" "${REPO_ROOT}/packaging/*" "${REPO_ROOT}/.ci/*"
  "${REPO_ROOT}/app/*CMakeLists.txt" "${REPO_ROOT}/engine/*CMakeLists.txt"
  "${REPO_ROOT}/kernels/*CMakeLists.txt" "${REPO_ROOT}/ui/*CMakeLists.txt")
list(APPEND candidates "${REPO_ROOT}/CMakeLists.txt")
set(offenders "")
foreach(file IN LISTS candidates)
  file(RELATIVE_PATH relative "${REPO_ROOT}" "${file}")
  # tests/data holds the copied data itself (binary files, READMEs naming their origin).
  if(relative MATCHES "^tests/data/")
    continue()
  endif()
  file(STRINGS "${file}" hits REGEX "${pattern}")
  if(hits)
    list(GET hits 0 first)
    string(STRIP "${first}" first)
    list(APPEND offenders "${relative}: ${first}")
  endif()
endforeach()

if(offenders)
  list(JOIN offenders "\n  " report)
  message(FATAL_ERROR "files that read data from outside the repository:\n  ${report}")
endif()
list(LENGTH candidates checked)
message(STATUS "checked ${checked} files: none reads data from outside the repository")
