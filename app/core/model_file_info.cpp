#include "model_file_info.h"

#include "model_fit.h"

#include "arbor/gguf.h"
#include "arbor/model.h"

#include <algorithm>
#include <map>
#include <memory>

namespace arbor::app {

std::string fileTypeName(uint64_t fileType) {
    // llama.cpp's llama_ftype numbering (include/llama.h); the gaps are retired values.
    static const std::map<uint64_t, const char*> names = {
        {0, "F32"},      {1, "F16"},      {2, "Q4_0"},     {3, "Q4_1"},     {7, "Q8_0"},
        {8, "Q5_0"},     {9, "Q5_1"},     {10, "Q2_K"},    {11, "Q3_K_S"},  {12, "Q3_K_M"},
        {13, "Q3_K_L"},  {14, "Q4_K_S"},  {15, "Q4_K_M"},  {16, "Q5_K_S"},  {17, "Q5_K_M"},
        {18, "Q6_K"},    {19, "IQ2_XXS"}, {20, "IQ2_XS"},  {21, "Q2_K_S"},  {22, "IQ3_XS"},
        {23, "IQ3_XXS"}, {24, "IQ1_S"},   {25, "IQ4_NL"},  {26, "IQ3_S"},   {27, "IQ3_M"},
        {28, "IQ2_S"},   {29, "IQ2_M"},   {30, "IQ4_XS"},  {31, "IQ1_M"},   {32, "BF16"},
        {36, "TQ1_0"},   {37, "TQ2_0"},   {38, "MXFP4_MOE"},
    };
    const auto it = names.find(fileType);
    return it == names.end() ? std::string() : it->second;
}

std::string parameterCountText(uint64_t count) {
    const std::string text = quotedAmount(count, {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}});
    return text.empty() ? std::to_string(count) : text;
}

namespace {

// The tensor type holding most weight elements: what "Q4_K" means for a file without
// general.file_type.
std::string dominantTensorType(const GgufFile& file) {
    std::map<DType, uint64_t> elements;
    for (const GgufTensor& t : file.tensors())
        if (t.dims.size() >= 2) elements[t.type] += uint64_t(t.n_elements);
    const auto best = std::max_element(elements.begin(), elements.end(),
                                       [](const auto& a, const auto& b) { return a.second < b.second; });
    return best == elements.end() ? std::string() : std::string(dtype_name(best->first));
}

} // namespace

ModelFileInfo readModelFileInfo(const std::filesystem::path& path) {
    ModelFileInfo info;
    info.path = path;
    info.name = path.stem().string();
    std::error_code ec;
    info.fileSize = std::filesystem::file_size(path, ec);
    if (ec) {
        info.problem = "cannot read the file: " + ec.message();
        return info;
    }
    std::unique_ptr<GgufFile> file;
    try {
        file = GgufFile::open(path);
    } catch (const std::exception& e) {
        info.problem = std::string("cannot read the GGUF header: ") + e.what();
        return info;
    }
    try {
        info.architecture = file->get_string("general.architecture").value_or("");
        info.name = file->get_string("general.name").value_or(info.name);
        for (const GgufTensor& t : file->tensors()) info.parameterCount += uint64_t(t.n_elements);
        if (const auto ft = file->get_uint("general.file_type")) info.quantType = fileTypeName(*ft);
        if (info.quantType.empty()) info.quantType = dominantTensorType(*file);
        if (!info.architecture.empty())
            info.contextLength = int64_t(file->get_uint(info.architecture + ".context_length").value_or(0));
    } catch (const std::exception&) {
        // A key of the wrong type: the description stays partial, and the engine's own
        // reading below gives the reason.
    }
    try {
        const ModelConfig config = read_model_config(*file);
        info.layers = config.n_layer;
        info.kvDim = config.kv_dim();
        info.contextLength = config.n_ctx_train;
        // The reader has already refused tensor types the engine cannot use as weights.
        info.supported = true;
    } catch (const std::exception& e) {
        info.problem = e.what();
    }
    return info;
}

} // namespace arbor::app
