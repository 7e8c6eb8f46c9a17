# The installable Debian package (cpack -G DEB in the build directory): the programs, the
# desktop entry and icon, arbor-download-model for the default model, which is not
# packaged (it is a separate download of about 100 MB), and in a build with CUDA the CUDA
# backend, /usr/lib/arbor/libarbor_cuda.so (installed by engine/model).

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME arbor)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "Arbor developers <arbor@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "desktop chat with local LLMs (GGUF) and a local OpenAI-compatible API")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
  "Arbor runs GGUF language models on the local machine with its own inference engine.\n\
Conversations in several tabs generate at the same time; each conversation's history is\n\
kept as reusable KV blocks, so follow-up turns compute only the new tokens. An optional\n\
OpenAI-compatible API serves other programs on 127.0.0.1. Run arbor-download-model once\n\
to install the default model (SmolLM2-135M-Instruct).")
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_STRIP_FILES ON)
# Linked libraries (Qt, SQLite, spdlog, ICU) are found by dpkg-shlibdeps; QML modules and
# the platform plugins are loaded at run time; libzip (which reads the default model out of
# its PyPI wheel) is named as well, and ca-certificates for the downloads. Boost.Beast/Asio
# (libboost-dev) and nlohmann-json (nlohmann-json3-dev) are header-only: compiled into the
# programs, needed to build the package but not to run it, so they are no dependencies of it.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS
  "qt6-qpa-plugins, qml6-module-qtqml, qml6-module-qtqml-models, qml6-module-qtqml-workerscript, \
qml6-module-qtquick, qml6-module-qtquick-controls, qml6-module-qtquick-templates, \
qml6-module-qtquick-layouts, qml6-module-qtquick-window, qml6-module-qtquick-dialogs, \
qml6-module-qt-labs-folderlistmodel, fonts-dejavu-core, libzip4, ca-certificates")
# The CUDA backend links the CUDA runtime and cuBLAS; the programs open it only for a
# GPU and, without those libraries or a driver, run on the CPU and say why. dpkg-shlibdeps
# finds them through the library's RUNPATH (the toolkit it was built with): a toolkit no
# Debian package installed (NVIDIA's runfile) adds no dependency, one from NVIDIA's
# Debian packages adds those packages.
include(CPack)
