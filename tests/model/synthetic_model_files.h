// Shared by the architecture tests: the synthetic models and their llama.cpp references
// (tests/data/synthetic), and a model file taken apart, edited and written back, so that
// a test can break one thing of a real model (a key, a tensor) and check what Arbor does.
#pragma once

#include "test_support.h"

#include "arbor/backend.h"
#include "arbor/error.h"
#include "arbor/generator.h"
#include "arbor/gguf.h"
#include "arbor/model.h"
#include "arbor/tokenizer.h"
#include "../gguf/gguf_test_writer.h"

#include <QCryptographicHash>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace arbor::test {

inline std::filesystem::path synthetic_dir() { return test_data_dir() / "synthetic"; }

inline std::vector<TokenId> ids_of(const QJsonValue& v) {
    std::vector<TokenId> out;
    for (const auto& x : v.toArray()) out.push_back(TokenId(x.toInt()));
    return out;
}

inline int32_t argmax(const std::vector<float>& v) {
    return int32_t(std::max_element(v.begin(), v.end()) - v.begin());
}

// The "models" of a reference file in tests/data/synthetic; empty if it cannot be read.
inline QJsonArray reference_models(const char* name) {
    QFile f(QString::fromStdString((synthetic_dir() / name).string()));
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QJsonDocument::fromJson(f.readAll()).object().value("models").toArray();
}

inline QString sha256_of(const std::filesystem::path& path) {
    QFile f(QString::fromStdString(path.string()));
    if (!f.open(QIODevice::ReadOnly)) return "unreadable";
    return QString(QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha256).toHex());
}

inline double max_abs_diff(const float* got, const QJsonArray& want) {
    double diff = 0.0;
    for (qsizetype i = 0; i < want.size(); ++i) diff = std::max(diff, std::abs(double(got[i]) - want[i].toDouble()));
    return diff;
}

// The synthetic models, each loaded once, and the references they are compared with.
class SyntheticModels {
public:
    // Adds the models of a reference file; false if it is missing or has none.
    bool add_references(const char* name) {
        const QJsonArray models = reference_models(name);
        for (const auto& m : models) references_.append(m);
        return !models.isEmpty();
    }
    const QJsonArray& references() const { return references_; }
    QJsonObject reference(const QString& file) const {
        for (const auto& m : references_)
            if (m.toObject().value("file").toString() == file) return m.toObject();
        return {};
    }
    // The first model file whose SHA-256 is not the one its reference was computed on;
    // empty when all match.
    QString changed_file() const {
        for (const auto& m : references_) {
            const QString file = m.toObject().value("file").toString();
            if (sha256_of(synthetic_dir() / file.toStdString()) != m.toObject().value("sha256").toString()) return file;
        }
        return {};
    }
    const Model& model(const QString& file) {
        auto& m = loaded_[file];
        if (!m) m = Model::load(synthetic_dir() / file.toStdString());
        return *m;
    }

private:
    QJsonArray references_;
    std::map<QString, std::unique_ptr<Model>> loaded_;
};

// The context llama.cpp ran a reference with (its "n_ctx", 256 unless it says): Arbor's
// KV pool then holds as many positions, so that a LongRoPE model chooses the same factors.
inline int32_t reference_context(const QJsonObject& ref) { return ref.value("n_ctx").toInt(256); }

// A model's last-position logits against its reference cases (`ref`, one model of a
// reference file), each case prefilled whole and in chunks of 7 across KV pages: the
// largest difference seen and, when a case differs by `tolerance` or more or picks
// another argmax, what failed. attention_part > 0 splits each row's attention into parts
// of that many positions; panel_weights as BackendOptions's.
struct ReferenceDiff {
    double worst = 0.0;
    QString failure;  // empty: every case within tolerance
};

inline ReferenceDiff diff_from_reference(const Model& m, const QJsonObject& ref, double tolerance,
                                         int32_t attention_part = 0, bool panel_weights = true) {
    BackendOptions options;
    options.panel_weights = panel_weights;
    options.kv_tokens = reference_context(ref);
    options.threads = 2;
    if (attention_part > 0) options.attention_part = attention_part;
    options.kv_type = KvType::F32;  // as the reference ran
    auto backend = make_cpu_backend(m, options);
    ReferenceDiff result;
    for (const auto& c : ref.value("cases").toArray()) {
        const auto ids = ids_of(c.toObject().value("ids"));
        const QJsonArray want = c.toObject().value("logits").toArray();
        for (int32_t chunk : {512, 7}) {
            Generator gen(m, *backend, chunk);
            const std::vector<float> got = gen.prefill(ids);
            if (got.size() != size_t(want.size())) {
                result.failure = QString("%1 logits, reference has %2").arg(got.size()).arg(want.size());
                return result;
            }
            const double diff = max_abs_diff(got.data(), want);
            int32_t want_argmax = 0;
            for (qsizetype i = 0; i < want.size(); ++i)
                if (want[i].toDouble() > want[want_argmax].toDouble()) want_argmax = int32_t(i);
            result.worst = std::max(result.worst, diff);
            if (!(diff < tolerance) || argmax(got) != want_argmax) {
                result.failure = QString("%1 ids, chunk %2: max abs diff %3, argmax %4 (reference %5)")
                                     .arg(ids.size()).arg(chunk).arg(diff).arg(argmax(got)).arg(want_argmax);
                return result;
            }
        }
    }
    return result;
}

// The largest logit difference from the reference's longest (last) case, prefilled whole.
inline double last_case_diff(const Model& m, const QJsonObject& ref) {
    BackendOptions options;
    options.kv_tokens = reference_context(ref);
    options.kv_type = KvType::F32;
    auto backend = make_cpu_backend(m, options);
    const QJsonObject c = ref.value("cases").toArray().last().toObject();
    Generator gen(m, *backend, 512);
    const std::vector<float> got = gen.prefill(ids_of(c.value("ids")));
    return max_abs_diff(got.data(), c.value("logits").toArray());
}

// The batched scheduler's step on a reference's three cases: all three sequences in one
// forward (on interleaved pages), then the first one's last id decoded beside the second's
// prefill (its pages rewritten). Empty when every sequence's last-position logits are within
// `tolerance` of its reference; else what differed. panel_weights as BackendOptions's.
inline QString batched_failure(const Model& m, const QJsonObject& ref, double tolerance, bool panel_weights = true) {
    const QJsonArray cases = ref.value("cases").toArray();
    if (cases.size() != 3) return QString("the reference has %1 cases, not 3").arg(cases.size());
    BackendOptions options;
    options.panel_weights = panel_weights;
    options.kv_tokens = reference_context(ref);
    options.threads = 2;
    options.kv_type = KvType::F32;
    auto backend = make_cpu_backend(m, options);
    const int32_t ps = backend->page_size(), pages = backend->page_count();
    std::vector<std::vector<TokenId>> ids;
    std::vector<std::vector<int32_t>> tables(size_t(cases.size()));
    ForwardBatch batch;
    for (qsizetype s = 0; s < cases.size(); ++s) {
        ids.push_back(ids_of(cases[s].toObject().value("ids")));
        for (int32_t i = 0; i * ps < int32_t(ids.back().size()); ++i)
            tables[size_t(s)].push_back(pages - 1 - int32_t(s) - 3 * i);
        batch.sequences.push_back({int32_t(batch.tokens.size()), int32_t(ids.back().size()), 0, tables[size_t(s)],
                                   SequenceRows::Logits::Last});
        batch.tokens.insert(batch.tokens.end(), ids.back().begin(), ids.back().end());
    }
    QString failure;
    const auto check = [&](const float* got, qsizetype s, const char* what) {
        const double diff = max_abs_diff(got, cases[s].toObject().value("logits").toArray());
        if (!(diff < tolerance) && failure.isEmpty())
            failure = QString("%1, sequence %2: max abs diff %3").arg(what).arg(s).arg(diff);
    };
    const size_t n_vocab = size_t(m.config().n_vocab);
    std::vector<float> logits;
    backend->forward(batch, logits);
    if (logits.size() != 3 * n_vocab) return QString("%1 logits for 3 sequences").arg(logits.size());
    for (qsizetype s = 0; s < 3; ++s) check(&logits[size_t(s) * n_vocab], s, "one batch");

    ForwardBatch mixed;
    mixed.tokens = {ids[0].back()};
    mixed.tokens.insert(mixed.tokens.end(), ids[1].begin(), ids[1].end());
    mixed.sequences.push_back({0, 1, int32_t(ids[0].size()) - 1, tables[0], SequenceRows::Logits::Last});
    mixed.sequences.push_back({1, int32_t(ids[1].size()), 0, tables[1], SequenceRows::Logits::Last});
    backend->forward(mixed, logits);
    check(logits.data(), 0, "decode row");
    check(&logits[n_vocab], 1, "beside a decode row");
    return failure;
}

// The message of the arbor::Error that loading `path` throws, or what happened instead.
inline QString load_error(const std::filesystem::path& path) {
    try {
        Model::load(path);
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    } catch (const std::exception& e) {
        return "non-arbor::Error exception: " + QString::fromStdString(e.what());
    }
    return "no error";
}

// A model's metadata and tensors, editable and writable as a new file.
struct Parts {
    std::vector<std::pair<std::string, GgufValue>> metadata;
    std::vector<TestTensor> tensors;

    static Parts read(const std::filesystem::path& path) {
        const auto file = GgufFile::open(path);
        Parts p{file->metadata(), {}};
        for (const auto& t : file->tensors()) {
            TestTensor tt;
            tt.name = t.name;
            tt.type = uint32_t(t.type);
            for (int64_t d : t.dims) tt.dims.push_back(uint64_t(d));
            tt.data.assign(t.data, t.data + t.n_bytes);
            p.tensors.push_back(std::move(tt));
        }
        return p;
    }

    void set(const std::string& key, GgufValue value) {
        for (auto& [k, v] : metadata)
            if (k == key) { v = std::move(value); return; }
        metadata.emplace_back(key, std::move(value));
    }
    void erase_key(const std::string& key) {
        std::erase_if(metadata, [&](const auto& kv) { return kv.first == key; });
    }
    void erase_tensor(const std::string& name) {
        std::erase_if(tensors, [&](const auto& t) { return t.name == name; });
    }
    TestTensor& tensor(const std::string& name) {
        for (auto& t : tensors)
            if (t.name == name) return t;
        throw std::runtime_error("no tensor " + name);
    }

    void write(const std::filesystem::path& path) const {
        GgufWriter w;
        for (const auto& [k, v] : metadata) w.add(k, v);
        for (const auto& t : tensors) w.add_tensor(t);
        write_file(path, w.bytes());
    }
};

// Synthetic model `file` with `edit` applied to its parts, written to `path` and loaded.
inline std::unique_ptr<Model> edited_model(const QString& file, const std::filesystem::path& path,
                                           const std::function<void(Parts&)>& edit) {
    Parts p = Parts::read(synthetic_dir() / file.toStdString());
    edit(p);
    p.write(path);
    return Model::load(path);
}

// ChatML with the generation prompt's <think> left open, as DeepSeek-R1 distills' templates
// leave it: the model's reply is reasoning until it writes "</think>".
inline constexpr const char* kThinkingChatTemplate =
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}";

// A copy of the default model with `chat_template` for its template, written to `path`.
inline void write_default_model_with_template(const std::filesystem::path& path, const std::string& chat_template) {
    Parts parts = Parts::read(model_path());
    parts.set("tokenizer.chat_template", gv::str(chat_template));
    parts.write(path);
}

// Writes `broken` to `path` and loads it: empty when the load fails with a message holding
// every one of `words` (logged), else the message.
inline QString load_error_lacking(const Parts& broken, const std::filesystem::path& path, const QStringList& words) {
    broken.write(path);
    const QString message = load_error(path);
    qInfo("%s", qPrintable(message));
    for (const auto& w : words)
        if (!message.contains(w)) return "message: " + message;
    return {};
}

// Half the rows of a matrix, half the length of a vector (F32 only; its data shrinks alike).
inline void halve(TestTensor& t) {
    if (t.type != 0) throw std::runtime_error("halve: tensor " + t.name + " is not F32");
    t.dims.back() /= 2;
    uint64_t n = 1;
    for (uint64_t d : t.dims) n *= d;
    t.data.resize(size_t(n) * sizeof(float));
}

// An F32 tensor of n zeros.
inline TestTensor zeros_tensor(std::string name, std::vector<uint64_t> dims) {
    TestTensor t;
    t.name = std::move(name);
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    t.dims = std::move(dims);
    t.data.assign(size_t(n) * sizeof(float), 0);
    return t;
}

// One edit "OP:ARG": drop:TENSOR, transpose:TENSOR (a matrix), halve:TENSOR,
// longrope (Phi-3's factor tensors), bias:TENSOR (64 zeros), pattern:N (the
// architecture's per-layer sliding-window flags, N of them), erase:KEY, or KEY=VALUE after
// set (a string), u32, f32 or bool (true/false). Throws std::runtime_error for an unknown
// edit or tensor.
inline void apply_edit(Parts& p, const QString& edit) {
    const QString op = edit.section(':', 0, 0);
    const std::string arg = edit.section(':', 1).toStdString();
    if (op == "drop") {
        p.erase_tensor(arg);
    } else if (op == "transpose") {
        auto& t = p.tensor(arg);
        std::swap(t.dims[0], t.dims[1]);
    } else if (op == "halve") {
        halve(p.tensor(arg));
    } else if (op == "longrope") {  // Phi-3 128k's factor tensors (12 zeros each)
        for (const char* name : {"rope_factors_long.weight", "rope_factors_short.weight"})
            p.tensors.push_back(zeros_tensor(name, {12}));
    } else if (op == "bias") {
        p.tensors.push_back(zeros_tensor(arg, {64}));
    } else if (op == "erase") {
        p.erase_key(arg);
    } else if (op == "pattern") {
        std::string arch;
        for (const auto& [k, v] : p.metadata)
            if (k == "general.architecture" && v.as_string()) arch = *v.as_string();
        std::vector<GgufValue> flags(size_t(std::stoi(arg)), gv::boolean(true));
        p.set(arch + ".attention.sliding_window_pattern", gv::arr(GgufType::Bool, flags));
    } else {
        const std::string key = arg.substr(0, arg.find('=')), value = arg.substr(arg.find('=') + 1);
        if (op == "set") p.set(key, gv::str(value));
        else if (op == "u32") p.set(key, gv::u32(uint32_t(std::stoul(value))));
        else if (op == "f32") p.set(key, gv::f32(std::stof(value)));
        else if (op == "bool") p.set(key, gv::boolean(value == "true"));
        else throw std::runtime_error("unknown edit " + edit.toStdString());
    }
}

} // namespace arbor::test
