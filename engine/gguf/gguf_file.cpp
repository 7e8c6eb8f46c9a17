// GGUF layout (all little-endian):
//   magic "GGUF" | uint32 version | uint64 tensor_count | uint64 kv_count
//   kv_count x (string key, uint32 value type, value)
//   tensor_count x (string name, uint32 n_dims, n_dims x uint64 dim, uint32 type, uint64 offset)
//   padding to general.alignment | data section (tensor offsets are relative to its start)
// Strings are a uint64 length followed by the bytes.
#include "arbor/gguf.h"

#include "byte_reader.h"
#include "file_mapping.h"
#include "gguf_value_reader.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <limits>
#include <new>
#include <numeric>

namespace arbor {

using gguf_detail::ByteReader;

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian uint32
constexpr size_t kMaxKeyLength = 65535;
constexpr uint32_t kMaxDims = 4;
// Fewest bytes a metadata entry / tensor info can take; bounds hostile counts.
constexpr size_t kMinKvBytes = 8 + 1 + 4 + 1;
constexpr size_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;

std::string str(uint64_t v) { return std::to_string(v); }

uint64_t checked_mul(uint64_t a, uint64_t b, const char* what) {
    uint64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r) || r > uint64_t(std::numeric_limits<int64_t>::max()))
        throw Error(std::string(what) + " overflows");
    return r;
}

} // namespace

struct GgufFile::Parser {
    GgufFile& f;
    ByteReader in;
    uint64_t tensor_count = 0;
    uint64_t kv_count = 0;

    explicit Parser(GgufFile& file) : f(file), in(file.map_, file.map_size_) {}

    void run() {
        read_header();
        read_metadata();
        read_alignment();
        read_tensor_infos();
        place_tensor_data();
    }

    void read_header() {
        const uint32_t magic = in.u32();
        if (magic != kMagic) {
            char hex[16];
            std::snprintf(hex, sizeof hex, "0x%08x", magic);
            throw Error(std::string("not a GGUF file (bad magic ") + hex + ")");
        }
        const uint32_t version = in.u32();
        if (version == 1)
            throw Error("unsupported GGUF version 1 (only versions 2 and 3 are supported; "
                        "re-convert the model with a current converter)");
        if (version == 0x02000000u || version == 0x03000000u)
            throw Error("unsupported GGUF version: big-endian GGUF files are not supported");
        if (version != 2 && version != 3)
            throw Error("unsupported GGUF version " + str(version) +
                        " (only versions 2 and 3 are supported)");
        f.version_ = version;
        tensor_count = in.u64();
        kv_count = in.u64();
        in.require_items(tensor_count, kMinTensorInfoBytes, "tensor count");
        in.require_items(kv_count, kMinKvBytes, "metadata key count");
    }

    void read_metadata() {
        f.metadata_.reserve(size_t(kv_count));
        f.key_index_.reserve(size_t(kv_count));
        for (uint64_t i = 0; i < kv_count; ++i) {
            std::string key;
            try {
                key = in.string();
                if (key.empty()) throw Error("empty key");
                if (key.size() > kMaxKeyLength)
                    throw Error("key length " + str(key.size()) + " exceeds " + str(kMaxKeyLength));
                GgufValue value = gguf_detail::read_value(in, gguf_detail::checked_type(in.u32()));
                f.metadata_.emplace_back(std::move(key), std::move(value));
            } catch (const Error& e) {
                throw Error((key.empty() ? "metadata entry #" + str(i)
                                         : "metadata key '" + key.substr(0, 200) + "'") +
                            ": " + e.what());
            }
            // Safe to index views: metadata_ was reserved and never reallocates.
            const std::string& stored = f.metadata_.back().first;
            if (!f.key_index_.emplace(stored, f.metadata_.size() - 1).second)
                throw Error("duplicate metadata key '" + stored + "'");
        }
    }

    void read_alignment() {
        const GgufValue* v = f.find("general.alignment");
        if (!v) return;
        const auto a = v->as_uint();
        if (v->type == GgufType::Bool || v->type == GgufType::String ||
            v->type == GgufType::Array || v->type == GgufType::Float32 ||
            v->type == GgufType::Float64)
            throw Error("metadata key 'general.alignment' must be an unsigned integer, not " +
                        std::string(gguf_type_name(v->type)));
        if (!a || *a == 0 || !std::has_single_bit(*a) ||
            *a > std::numeric_limits<uint32_t>::max())
            throw Error("metadata key 'general.alignment' must be a power of two greater than 0, "
                        "got " + (a ? str(*a) : std::to_string(v->as_int().value_or(0))));
        f.alignment_ = size_t(*a);
    }

    void read_tensor_infos() {
        f.tensors_.reserve(size_t(tensor_count));
        f.tensor_index_.reserve(size_t(tensor_count));
        for (uint64_t i = 0; i < tensor_count; ++i) {
            GgufTensor t;
            try {
                read_tensor_info(t);
            } catch (const Error& e) {
                throw Error((t.name.empty() ? "tensor #" + str(i)
                                            : "tensor '" + t.name.substr(0, 200) + "'") +
                            ": " + e.what());
            }
            f.tensors_.push_back(std::move(t));
            // Safe to index views: tensors_ was reserved and never reallocates.
            const std::string& stored = f.tensors_.back().name;
            if (!f.tensor_index_.emplace(stored, f.tensors_.size() - 1).second)
                throw Error("duplicate tensor name '" + stored + "'");
        }
    }

    void read_tensor_info(GgufTensor& t) {
        t.name = in.string();
        if (t.name.empty()) throw Error("empty tensor name");
        const uint32_t n_dims = in.u32();
        if (n_dims < 1 || n_dims > kMaxDims)
            throw Error("dimension count " + str(n_dims) + " is outside 1.." + str(kMaxDims));
        t.dims.resize(n_dims);
        for (auto& d : t.dims) {
            const uint64_t raw = in.u64();
            if (raw < 1 || raw > uint64_t(std::numeric_limits<int64_t>::max()))
                throw Error("invalid dimension " + str(raw) + " (each must be at least 1)");
            d = int64_t(raw);
        }
        const uint32_t raw_type = in.u32();
        const auto info = dtype_info(raw_type);
        if (!info)
            throw Error("unsupported tensor type id " + str(raw_type));
        if (!info->weight_type)
            throw Error("tensor type " + std::string(info->name) + " (id " + str(raw_type) +
                        ") is not supported for weights");
        t.type = info->type;
        if (t.dims[0] % info->block_size != 0)
            throw Error("first dimension " + str(t.dims[0]) +
                        " is not a multiple of the block size " + str(info->block_size) +
                        " of type " + std::string(info->name));
        uint64_t elements = 1;
        for (int64_t d : t.dims) elements = checked_mul(elements, uint64_t(d), "element count");
        t.n_elements = int64_t(elements);
        const uint64_t row = checked_mul(uint64_t(t.dims[0] / info->block_size),
                                         info->block_bytes, "row byte size");
        t.n_bytes = size_t(checked_mul(row, uint64_t(t.rows()), "byte size"));
        t.offset = in.u64();
        if (t.offset % f.alignment_ != 0)
            throw Error("data offset " + str(t.offset) + " is not a multiple of the alignment " +
                        str(f.alignment_));
    }

    void place_tensor_data() {
        if (f.tensors_.empty()) return;  // vocab-only files may end before the padding
        const uint64_t header_end = in.pos();
        const uint64_t data_start = (header_end + f.alignment_ - 1) / f.alignment_ * f.alignment_;
        if (data_start > f.map_size_)
            throw Error("tensor data section starts at byte " + str(data_start) +
                        ", beyond the end of the file (" + str(f.map_size_) +
                        " bytes; file truncated)");
        const uint64_t data_size = f.map_size_ - data_start;
        for (auto& t : f.tensors_) {
            if (t.offset > data_size || t.n_bytes > data_size - t.offset)
                throw Error("tensor '" + t.name + "' data (offset " + str(t.offset) + ", " +
                            str(t.n_bytes) + " bytes) extends beyond the end of the file "
                            "(file truncated or offset corrupt)");
            t.data = f.map_ + data_start + t.offset;
        }
        std::vector<size_t> order(f.tensors_.size());
        std::iota(order.begin(), order.end(), size_t(0));
        std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
            return f.tensors_[a].offset < f.tensors_[b].offset;
        });
        for (size_t i = 1; i < order.size(); ++i) {
            const GgufTensor& prev = f.tensors_[order[i - 1]];
            const GgufTensor& cur = f.tensors_[order[i]];
            if (prev.offset + prev.n_bytes > cur.offset)
                throw Error("tensors '" + prev.name + "' and '" + cur.name +
                            "' overlap in the data section");
        }
    }
};

std::unique_ptr<GgufFile> GgufFile::open(const std::filesystem::path& path) {
    const auto start = std::chrono::steady_clock::now();
    std::unique_ptr<GgufFile> f(new GgufFile());
    f->path_ = path;
    const auto mapping = gguf_detail::map_file(path);
    f->map_ = mapping.data;
    f->map_size_ = mapping.size;
    try {
        Parser(*f).run();
    } catch (const Error& e) {
        throw Error("GGUF file '" + path.string() + "': " + e.what());
    } catch (const std::bad_alloc&) {
        // Counts are bounded by the file size, but a huge hostile file can still exhaust memory.
        throw Error("GGUF file '" + path.string() + "': out of memory while reading the metadata");
    }
    const auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start);
    spdlog::debug("opened GGUF {} (v{}, {} metadata keys, {} tensors) in {:.1f} ms", path.string(),
                  f->version_, f->metadata_.size(), f->tensors_.size(), ms.count());
    return f;
}

GgufFile::~GgufFile() { gguf_detail::unmap_file({map_, map_size_}); }

void GgufFile::release_pages(const uint8_t* data, size_t bytes) const {
    if (data < map_ || bytes > map_size_ || size_t(data - map_) > map_size_ - bytes)
        throw Error("GGUF file '" + path_.string() + "': release_pages outside the mapping");
    gguf_detail::release_pages(data, bytes);
}

const GgufValue* GgufFile::find(std::string_view key) const {
    const auto it = key_index_.find(key);
    return it == key_index_.end() ? nullptr : &metadata_[it->second].second;
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
    const auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

[[noreturn]] void wrong_type(const std::filesystem::path& path, std::string_view key,
                             const GgufValue& v, const char* expected) {
    throw Error("GGUF file '" + path.filename().string() + "': metadata key '" +
                std::string(key) + "' (" + std::string(gguf_type_name(v.type)) +
                ") does not convert to " + expected);
}

template <typename T>
T required(std::optional<T> v, const std::filesystem::path& path, std::string_view key) {
    if (!v)
        throw Error("GGUF file '" + path.filename().string() + "': required metadata key '" +
                    std::string(key) + "' is missing");
    return std::move(*v);
}

} // namespace

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (const std::string* s = v->as_string()) return *s;
    wrong_type(path_, key, *v, "a string");
}

std::optional<uint64_t> GgufFile::get_uint(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (auto u = v->as_uint()) return u;
    wrong_type(path_, key, *v, "a non-negative integer");
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (auto d = v->as_float()) return d;
    wrong_type(path_, key, *v, "a number");
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (auto b = v->as_bool()) return b;
    wrong_type(path_, key, *v, "a bool");
}

std::string GgufFile::require_string(std::string_view key) const {
    return required(get_string(key), path_, key);
}

uint64_t GgufFile::require_uint(std::string_view key) const {
    return required(get_uint(key), path_, key);
}

int64_t GgufTensor::rows() const {
    int64_t r = 1;
    for (size_t i = 1; i < dims.size(); ++i) r *= dims[i];
    return r;
}

} // namespace arbor
