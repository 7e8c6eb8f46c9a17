// For each row: walk its sequence's block table position by position, decode that
// position's key and value from its page (the layout of kv_pages.h), score in double,
// softmax, weighted sum of the values. No tiles, no parts, no shared work between rows.
#include "paged_attention_reference.h"

#include <algorithm>
#include <cmath>

namespace arbor::test {

namespace {

double from_half(uint16_t h) {
    const int exponent = (h >> 10) & 31, mantissa = h & 1023;
    const double magnitude = exponent == 0    ? std::ldexp(mantissa, -24)
                             : exponent == 31 ? INFINITY
                                              : std::ldexp(mantissa + 1024, exponent - 25);
    return (h & 0x8000) ? -magnitude : magnitude;
}

// Element i of an array of the KV's element type (Q8_0: the int8 code).
double element(KvType type, const void* data, size_t i) {
    if (type == KvType::F32) return static_cast<const float*>(data)[i];
    if (type == KvType::F16) return from_half(static_cast<const uint16_t*>(data)[i]);
    return static_cast<const int8_t*>(data)[i];
}

// Keys are columns: element d of slot j at d * key_stride + j (its Q8_0 scale at
// d / 32 * key_stride + j after them).
std::vector<double> key_at(const KvPages& kv, int32_t layer, int32_t page, int32_t head, int32_t slot, int32_t dim) {
    std::vector<double> key(static_cast<size_t>(dim));
    const size_t stride = size_t(kv.key_stride());
    for (int32_t d = 0; d < dim; ++d) {
        key[size_t(d)] = element(kv.type(), kv.keys(layer, page, head), size_t(d) * stride + size_t(slot));
        if (kv.type() == KvType::Q8_0)
            key[size_t(d)] *= from_half(kv.key_scales(layer, page, head)[size_t(d / 32) * stride + size_t(slot)]);
    }
    return key;
}

// Values are rows (Q8_0: the slot's scales, one per 32 elements).
std::vector<double> value_at(const KvPages& kv, int32_t layer, int32_t page, int32_t head, int32_t slot, int32_t dim) {
    std::vector<double> value(static_cast<size_t>(dim));
    for (int32_t d = 0; d < dim; ++d) {
        value[size_t(d)] = element(kv.type(), kv.values(layer, page, head, slot), size_t(d));
        if (kv.type() == KvType::Q8_0) value[size_t(d)] *= from_half(kv.value_scales(layer, page, head, slot)[d / 32]);
    }
    return value;
}

} // namespace

std::vector<float> reference_paged_attention(const ModelConfig& cfg, const KvPages& kv, const ForwardBatch& batch,
                                             int32_t layer, const float* q) {
    const int32_t D = cfg.head_dim, group = cfg.n_head / cfg.n_head_kv, P = kv.page_size();
    std::vector<float> out(batch.tokens.size() * size_t(cfg.n_head) * size_t(D));
    for (const SequenceRows& seq : batch.sequences)
        for (int32_t i = 0; i < seq.n_rows; ++i) {
            const int32_t row = seq.first_row + i, pos = seq.start_pos + i;
            const int32_t first = cfg.is_local(layer) ? std::max(0, pos - cfg.sliding_window + 1) : 0;
            for (int32_t h = 0; h < cfg.n_head; ++h) {
                const int32_t kv_head = h / group;
                const float* qh = q + (size_t(row) * size_t(cfg.n_head) + size_t(h)) * size_t(D);
                std::vector<double> scores, sum(size_t(D), 0.0);
                for (int32_t p = first; p <= pos; ++p) {
                    const std::vector<double> key = key_at(kv, layer, seq.block_table[size_t(p / P)], kv_head, p % P, D);
                    double dot = 0.0;
                    for (int32_t d = 0; d < D; ++d) dot += double(qh[d]) * key[size_t(d)];
                    scores.push_back(dot * cfg.query_scale());
                }
                double max = -INFINITY, total = 0.0;
                for (double s : scores) max = std::max(max, s);
                for (double& s : scores) total += s = std::exp(s - max);
                for (int32_t p = first; p <= pos; ++p) {
                    const std::vector<double> value =
                        value_at(kv, layer, seq.block_table[size_t(p / P)], kv_head, p % P, D);
                    for (int32_t d = 0; d < D; ++d) sum[size_t(d)] += scores[size_t(p - first)] / total * value[size_t(d)];
                }
                float* o = &out[(size_t(row) * size_t(cfg.n_head) + size_t(h)) * size_t(D)];
                for (int32_t d = 0; d < D; ++d) o[d] = float(sum[size_t(d)]);
            }
        }
    return out;
}

} // namespace arbor::test
