// CUDA kernels against the CPU scalar references (cuda_reference.h, kernels/cpu), every
// weight type. Without a usable CUDA device it exits as skipped, with the reason.
#include "arbor/kernels/cpu_ops.h"
#include "arbor/kernels/cuda_kernels.h"
#include "arbor/kernels/fp16.h"
#include "arbor/kernels/quant.h"
#include "cuda_reference.h"
#include "gpu_check.h"
#include "q8_dot.h"

#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace arbor;
using gpu_check::Checks;

namespace {

// Device copy of a vector, freed with the object.
template <class T>
struct Dev {
    T* p = nullptr;
    size_t n = 0;
    explicit Dev(const std::vector<T>& v) : n(v.size()) {
        cudaMalloc(&p, std::max<size_t>(1, n) * sizeof(T));
        cudaMemcpy(p, v.data(), n * sizeof(T), cudaMemcpyHostToDevice);
    }
    explicit Dev(size_t count) : n(count) { cudaMalloc(&p, std::max<size_t>(1, n) * sizeof(T)); }
    ~Dev() { cudaFree(p); }
    std::vector<T> get() const {
        std::vector<T> out(n);
        cudaDeviceSynchronize();
        cudaMemcpy(out.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
        return out;
    }
};

const DType kTypes[] = {DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0,
                        DType::Q5_1, DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};

std::vector<float> dequantized(DType type, const std::vector<uint8_t>& w, int64_t rows, int64_t cols) {
    std::vector<float> out(size_t(rows * cols));
    for (int64_t r = 0; r < rows; ++r)
        dequantize_row(type, w.data() + size_t(r) * row_bytes(type, cols), &out[size_t(r * cols)], cols, Isa::Scalar);
    return out;
}

// Rows of x as the integer path sees them: quantized on the host (q8_dot.h), decoded.
struct HostQ8 {
    std::vector<uint8_t> rows;
    std::vector<float> values, steps;  // per element: d * code, and d / 2
    HostQ8(const std::vector<float>& x, int64_t cols, int n) : rows(size_t(n) * cuda::q8::row_bytes(cols)) {
        for (int t = 0; t < n; ++t) {
            uint8_t* row = &rows[size_t(t) * cuda::q8::row_bytes(cols)];
            cuda::q8::quantize_row(&x[size_t(t * cols)], cols, row);
            for (int64_t i = 0; i < cols; ++i) {
                const float d = cuda::q8::scales_of(row, cols)[i / cuda::q8::kBlock].d;
                values.push_back(d * float(reinterpret_cast<const int8_t*>(row)[i]));
                steps.push_back(d / 2);
            }
        }
    }
};

// Every type on float activations; the types with an integer path also on int8 ones,
// against the dequantized weights times the host-quantized activations (1e-4 of the sum
// of |terms|: the unit sums are exact integers, so what remains is float rounding; a
// wrong index or scale misses by the order of the sum itself), and against the float
// path within the activations' quantization bound, sum |w_i| * d_i / 2.
void test_matvec(Checks& c, std::mt19937& rng, int64_t cols, const std::string& label = "") {
    const int64_t rows = 67;
    for (DType type : kTypes) {
        const auto w = gpu_check::random_weights(type, rows, cols, rng);
        const auto wf = dequantized(type, w, rows, cols);
        const auto x = gpu_check::random_floats(size_t(cuda::kMatvecRows * cols), rng);
        const auto bias = gpu_check::random_floats(size_t(rows), rng);
        const HostQ8 hq(x, cols, cuda::kMatvecRows);
        Dev<uint8_t> dw(w), dq(cuda::q8_bytes(cols, cuda::kMatvecRows));
        Dev<float> dx(x), dbias(bias);
        cuda::quantize_q8(dx.p, cols, cuda::kMatvecRows, dq.p, nullptr);
        if (cuda::has_int8_path(type))
            c.expect(dq.get() == hq.rows, std::string(dtype_name(type)) + " quantize_q8 gives the host quantizer's bits");
        for (bool int8 : {false, true}) {
            if (int8 && !cuda::has_int8_path(type)) continue;
            const std::string name =
                label + std::string(dtype_name(type)) + (int8 ? " int8" : "") + " cols " + std::to_string(cols);
            const void* q8 = int8 ? dq.p : nullptr;
            const std::vector<float>& xr = int8 ? hq.values : x;
            for (int n_x : {1, 3, 8}) {
                Dev<float> dy(size_t(n_x * rows));
                c.expect(cuda::matvec(type, dw.p, rows, cols, dx.p, n_x, dy.p, dbias.p, nullptr, q8),
                         name + " matvec launches");
                const auto y = dy.get();
                double worst = 0.0, worst_vs_float = 0.0;
                for (int t = 0; t < n_x; ++t)
                    for (int64_t r = 0; r < rows; ++r) {
                        double ref = bias[size_t(r)], exact = ref, mag = std::fabs(ref), bound = 0.0;
                        for (int64_t i = 0; i < cols; ++i) {
                            const size_t wi = size_t(r * cols + i), xi = size_t(t * cols + i);
                            const double p = double(wf[wi]) * double(xr[xi]);
                            ref += p;
                            mag += std::fabs(p);
                            exact += double(wf[wi]) * double(x[xi]);
                            bound += std::fabs(double(wf[wi])) * double(hq.steps[xi]);
                        }
                        const double got = y[size_t(t * rows + r)];
                        worst = std::max(worst, std::fabs(got - ref) / (mag + 1e-6));
                        worst_vs_float = std::max(worst_vs_float, std::fabs(got - exact) / (bound + 1e-4 * mag + 1e-6));
                    }
                const double tolerance = int8 ? 1e-4 : 1e-5;
                c.expect(worst < tolerance, name + " matvec of " + std::to_string(n_x) + " rows within " +
                                                (int8 ? "1e-4" : "1e-5") + " of the sum of |terms| (" +
                                                std::to_string(worst) + ")");
                if (int8)
                    c.expect(worst_vs_float <= 1.0, name + " matvec of " + std::to_string(n_x) +
                                                        " rows within the quantization bound of the float product (" +
                                                        std::to_string(worst_vs_float) + " of it)");
            }
            // A row's result does not depend on the rows beside it.
            Dev<float> all{size_t(8 * rows)}, one{size_t(rows)};
            cuda::matvec(type, dw.p, rows, cols, dx.p, 8, all.p, nullptr, nullptr, q8);
            Dev<uint8_t> dq5(cuda::q8_bytes(cols, 1));
            cuda::quantize_q8(dx.p + 5 * cols, cols, 1, dq5.p, nullptr);
            cuda::matvec(type, dw.p, rows, cols, dx.p + 5 * cols, 1, one.p, nullptr, nullptr, int8 ? dq5.p : nullptr);
            const std::vector<float> a = all.get(), o = one.get();
            c.expect(std::memcmp(a.data() + 5 * rows, o.data(), size_t(rows) * 4) == 0,
                     name + " matvec row 5 of 8 has the bits of row 5 alone");
        }
    }
}

// Stacked launches give each matrix's matvec bits: Q, K and V in one launch, and the
// gated FFN product against matvec of gate and up followed by silu_mul.
void test_fused_matvec(Checks& c, std::mt19937& rng, const std::string& label = "") {
    const int64_t cols = 256;
    for (DType type : {DType::Q4_K, DType::Q6_K, DType::Q8_0, DType::F16})
        for (bool int8 : {false, true}) {
        if (int8 && !cuda::has_int8_path(type)) continue;
        const std::string name = label + std::string(dtype_name(type)) + (int8 ? " int8" : "");
        const int64_t rows[3] = {40, 9, 13};
        std::vector<std::unique_ptr<Dev<uint8_t>>> w;
        for (int64_t r : rows) w.push_back(std::make_unique<Dev<uint8_t>>(gpu_check::random_weights(type, r, cols, rng)));
        const auto bias = gpu_check::random_floats(40, rng);
        Dev<float> dx(gpu_check::random_floats(size_t(3 * cols), rng)), dbias(bias);
        Dev<uint8_t> dq(cuda::q8_bytes(cols, 3));
        cuda::quantize_q8(dx.p, cols, 3, dq.p, nullptr);
        const void* q8 = int8 ? dq.p : nullptr;
        for (int n_x : {1, 3}) {
            std::vector<std::unique_ptr<Dev<float>>> fused, alone;
            std::vector<cuda::MatvecOut> outs;
            for (int i = 0; i < 3; ++i) {
                fused.push_back(std::make_unique<Dev<float>>(size_t(n_x * rows[i])));
                alone.push_back(std::make_unique<Dev<float>>(size_t(n_x * rows[i])));
                const float* b = i == 1 ? dbias.p : nullptr;
                outs.push_back({w[size_t(i)]->p, rows[i], fused.back()->p, b});
                cuda::matvec(type, w[size_t(i)]->p, rows[i], cols, dx.p, n_x, alone.back()->p, b, nullptr, q8);
            }
            c.expect(cuda::matvec_multi(type, cols, outs.data(), 3, dx.p, n_x, nullptr, q8),
                     name + " matvec_multi launches");
            bool same = true;
            for (int i = 0; i < 3; ++i) same = same && fused[size_t(i)]->get() == alone[size_t(i)]->get();
            c.expect(same, name + " three matrices in one launch of " + std::to_string(n_x) + " rows give each one's bits");

            Dev<float> gated(size_t(n_x * rows[0])), gate(size_t(n_x * rows[0])), up(size_t(n_x * rows[0]));
            // gate and up of equal rows (the first matrix serves as both)
            cuda::matvec_gated(type, cols, w[0]->p, w[0]->p, rows[0], dx.p, n_x, gated.p, nullptr, q8);
            cuda::matvec(type, w[0]->p, rows[0], cols, dx.p, n_x, gate.p, nullptr, nullptr, q8);
            cuda::matvec(type, w[0]->p, rows[0], cols, dx.p, n_x, up.p, nullptr, nullptr, q8);
            cuda::silu_mul(gate.p, up.p, int64_t(n_x) * rows[0], nullptr);
            c.expect(gated.get() == gate.get(), name + " gated product of " + std::to_string(n_x) +
                                                     " rows gives matvec and silu_mul's bits");
        }
    }
}

void test_dequantize_and_rows(Checks& c, std::mt19937& rng) {
    const int64_t rows = 9, cols = 768;
    for (DType type : kTypes) {
        const std::string name(dtype_name(type));
        const auto w = gpu_check::random_weights(type, rows, cols, rng);
        const auto wf = dequantized(type, w, rows, cols);
        Dev<uint8_t> dw(w);
        Dev<uint16_t> halves(size_t(5 * cols));
        c.expect(cuda::dequantize_f16(type, dw.p, 3, 5, cols, halves.p, nullptr), name + " dequantize_f16 launches");
        const auto h = halves.get();
        int wrong = 0;
        for (int64_t i = 0; i < 5 * cols; ++i) wrong += h[size_t(i)] != fp32_to_fp16(wf[size_t(3 * cols + i)]);
        c.expect(wrong == 0, name + " rows 3-7 as halves equal the reference rounded (" + std::to_string(wrong) + " differ)");

        const std::vector<int32_t> ids = {8, 0, 3, 3};
        Dev<int32_t> dids(ids);
        Dev<float> out(ids.size() * size_t(cols));
        c.expect(cuda::get_rows(type, dw.p, cols, dids.p, int(ids.size()), out.p, nullptr), name + " get_rows launches");
        const auto got = out.get();
        bool same = true;
        for (size_t t = 0; t < ids.size(); ++t)
            same = same && std::memcmp(&got[t * size_t(cols)], &wf[size_t(ids[t] * cols)], size_t(cols) * 4) == 0;
        c.expect(same, name + " get_rows gives the reference's dequantized rows bit for bit");
    }
}

double max_rel(const std::vector<float>& a, const std::vector<float>& b) {
    double worst = 0.0;
    for (size_t i = 0; i < a.size(); ++i)
        worst = std::max(worst, std::fabs(double(a[i]) - double(b[i])) / (std::fabs(double(b[i])) + 1e-3));
    return worst;
}

// The norms on rows of 1000 (the general kernels), and of 576, 4096 and 4160 (the wide
// kernels for multiples of 32: a partly filled warp, one chunk, a second chunk).
void test_norms(Checks& c, std::mt19937& rng, int64_t n) {
    const int rows = 5;
    const float eps = 1e-5f;
    const std::string size = " (" + std::to_string(n) + " wide)";
    const auto x = gpu_check::random_floats(size_t(rows * n), rng), add = gpu_check::random_floats(size_t(rows * n), rng);
    const auto w = gpu_check::random_floats(size_t(n), rng);
    std::vector<float> ref(size_t(rows * n)), sum(x);
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += add[i];
    Dev<float> dx(x), dadd(add), dw(w), dy(size_t(rows * n));
    const std::vector<int32_t> src = {4, 1, 1, 0, 2};
    Dev<int32_t> dsrc(src);
    cuda::rms_norm(dx.p, dsrc.p, dw.p, dy.p, rows, n, eps, nullptr);
    for (int t = 0; t < rows; ++t) ref::rms_norm(&x[size_t(src[size_t(t)] * n)], w.data(), &ref[size_t(t * n)], n, eps);
    c.expect(max_rel(dy.get(), ref) < 1e-5, "rms_norm of gathered rows within 1e-5" + size);

    cuda::add_rms_norm(dx.p, dadd.p, dw.p, dy.p, rows, n, eps, nullptr);
    for (int t = 0; t < rows; ++t) ref::rms_norm(&sum[size_t(t * n)], w.data(), &ref[size_t(t * n)], n, eps);
    c.expect(dx.get() == sum, "add_rms_norm adds exactly" + size);
    c.expect(max_rel(dy.get(), ref) < 1e-5, "add_rms_norm normalizes the sums within 1e-5" + size);
    if (n % 32 != 0) return;

    // The norms' quantized output: quantize_q8's bits of the rows they wrote.
    {
        const int64_t m = n;
        Dev<float> mx(gpu_check::random_floats(size_t(rows * m), rng)), madd(gpu_check::random_floats(size_t(rows * m), rng));
        Dev<float> mw(gpu_check::random_floats(size_t(m), rng)), my(size_t(rows * m));
        Dev<uint8_t> fused(cuda::q8_bytes(m, rows)), apart(cuda::q8_bytes(m, rows));
        cuda::rms_norm(mx.p, nullptr, mw.p, my.p, rows, m, eps, nullptr, fused.p);
        cuda::quantize_q8(my.p, m, rows, apart.p, nullptr);
        c.expect(fused.get() == apart.get(), "rms_norm's quantized rows are quantize_q8's of its output" + size);
        cuda::add_rms_norm(mx.p, madd.p, mw.p, my.p, rows, m, eps, nullptr, fused.p);
        cuda::quantize_q8(my.p, m, rows, apart.p, nullptr);
        c.expect(fused.get() == apart.get(), "add_rms_norm's quantized rows are quantize_q8's of its output" + size);
    }
}

void test_row_ops(Checks& c, std::mt19937& rng) {
    for (int64_t n : {1000, 576, 4096, 4160}) test_norms(c, rng, n);
    const int64_t n = 1000;
    const auto x = gpu_check::random_floats(size_t(5 * n), rng), add = gpu_check::random_floats(size_t(5 * n), rng);

    std::vector<float> gate(x);
    ref::silu_mul(gate.data(), add.data(), int64_t(gate.size()));
    Dev<float> dgate(x), dadd(add);
    cuda::silu_mul(dgate.p, dadd.p, int64_t(x.size()), nullptr);
    c.expect(max_rel(dgate.get(), gate) < 1e-5, "silu_mul within 1e-5");
}

void test_rope_store(Checks& c, std::mt19937& rng) {
    for (bool neox : {false, true}) {
        const int n_head = 6, n_kv = 2, D = 64, P = 16, pages = 4, rows = 3;
        const std::vector<int32_t> pos = {0, 17, 40}, table = {0, 0, 0}, tables = {2, 0, 3};
        std::vector<float> inv_freq(D / 2);
        for (int i = 0; i < D / 2; ++i) inv_freq[size_t(i)] = float(std::pow(10000.0, -2.0 * i / D));
        const auto q = gpu_check::random_floats(size_t(rows * n_head * D), rng);
        const auto k = gpu_check::random_floats(size_t(rows * n_kv * D), rng);
        const auto v = gpu_check::random_floats(size_t(rows * n_kv * D), rng);
        const size_t cache_elems = size_t(pages) * P * n_kv * D;
        Dev<float> dq(q), dk(k), dv(v), dfreq(inv_freq);
        Dev<int32_t> dpos(pos), dtable(table), dtables(tables);
        Dev<uint16_t> kc(std::vector<uint16_t>(cache_elems, 0)), vc(std::vector<uint16_t>(cache_elems, 0));
        const cuda::KvLayout kv{kc.p, vc.p, pages, P, n_kv, D};
        cuda::rope_store_kv(dq.p, dk.p, dv.p, rows, n_head, dfreq.p, neox, {dpos.p, dtable.p, dtables.p}, kv, 0, nullptr);
        const std::vector<float> gq = dq.get();
        const std::vector<uint16_t> gk = kc.get(), gv = vc.get();
        double worst_q = 0.0, worst_k = 0.0;
        bool values_exact = true;
        for (int t = 0; t < rows; ++t) {
            std::vector<float> cs(D);
            for (int i = 0; i < D / 2; ++i) {
                const double a = double(pos[size_t(t)]) * double(inv_freq[size_t(i)]);
                cs[size_t(2 * i)] = float(std::cos(a));
                cs[size_t(2 * i + 1)] = float(std::sin(a));
            }
            const int page = tables[size_t(pos[size_t(t)] / P)], slot = pos[size_t(t)] % P;
            for (int h = 0; h < n_head; ++h) {
                std::vector<float> r(&q[size_t((t * n_head + h) * D)], &q[size_t((t * n_head + h + 1) * D)]);
                rope_apply(r.data(), cs.data(), D, neox);
                for (int d = 0; d < D; ++d)
                    worst_q = std::max(worst_q, double(std::fabs(gq[size_t((t * n_head + h) * D + d)] - r[size_t(d)])));
            }
            for (int h = 0; h < n_kv; ++h) {
                std::vector<float> r(&k[size_t((t * n_kv + h) * D)], &k[size_t((t * n_kv + h + 1) * D)]);
                rope_apply(r.data(), cs.data(), D, neox);
                const size_t at = (size_t(page) * P + size_t(slot)) * n_kv * D + size_t(h) * D;
                for (int d = 0; d < D; ++d) {
                    worst_k = std::max(worst_k, double(std::fabs(fp16_to_fp32(gk[at + size_t(d)]) - r[size_t(d)])));
                    values_exact = values_exact && gv[at + size_t(d)] == fp32_to_fp16(v[size_t((t * n_kv + h) * D + d)]);
                }
            }
        }
        const std::string how = neox ? "neox" : "adjacent-pair";
        c.expect(worst_q < 1e-5, how + " RoPE of the queries within 1e-5 of rope_apply");
        c.expect(worst_k < 4e-3, how + " RoPE'd keys stored as halves within half precision");
        c.expect(values_exact, how + " values stored as the nearest halves in the rows' slots");
    }
}

// Rows of three sequences in one launch: a decode row split into three parts, a prefill
// chunk, and rows on both sides of a part boundary; GQA groups 1, 3, 4 and 8.
void test_attention(Checks& c, std::mt19937& rng) {
    struct Shape { int n_head, n_kv, D; };
    for (const Shape s : {Shape{4, 4, 64}, Shape{9, 3, 64}, Shape{32, 8, 128}, Shape{16, 2, 128}}) {
        gpu_check::HostCache cache;
        cache.layers = 2, cache.pages = 96, cache.page_size = 16, cache.n_kv_heads = s.n_kv, cache.head_dim = s.D;
        const size_t elems = size_t(cache.layers) * cache.pages * cache.page_size * s.n_kv * s.D;
        const auto kf = gpu_check::random_floats(elems, rng), vf = gpu_check::random_floats(elems, rng);
        cache.k.resize(elems), cache.v.resize(elems);
        for (size_t i = 0; i < elems; ++i) cache.k[i] = fp32_to_fp16(kf[i]), cache.v[i] = fp32_to_fp16(vf[i]);
        // Sequence tables: a permutation of pages, so positions hop around the pool.
        std::vector<int32_t> perm(size_t(cache.pages));
        for (int i = 0; i < cache.pages; ++i) perm[size_t(i)] = (i * 37 + 11) % cache.pages;
        // Pages for positions up to 767, 63 and 271.
        const std::vector<int32_t> seq_a(perm.begin(), perm.begin() + 48), seq_b(perm.begin() + 48, perm.begin() + 52),
            seq_c(perm.begin() + 52, perm.begin() + 69);
        std::vector<int32_t> tables = seq_a;
        tables.insert(tables.end(), seq_b.begin(), seq_b.end());
        tables.insert(tables.end(), seq_c.begin(), seq_c.end());
        std::vector<int32_t> pos = {700}, table = {0};
        for (int i = 0; i < 12; ++i) pos.push_back(20 + i), table.push_back(48);
        for (int p : {127, 128, 254, 255, 256, 257}) pos.push_back(p), table.push_back(52);
        const int rows = int(pos.size());
        std::vector<cuda::AttentionPart> parts;
        std::vector<cuda::AttentionMerge> merges;
        int32_t partials = 0;
        for (int t = 0; t < rows; ++t) cuda::plan_attention_row(t, pos[size_t(t)], parts, merges, partials);
        const auto q = gpu_check::random_floats(size_t(rows * s.n_head * s.D), rng);
        Dev<float> dq(q), out(size_t(rows * s.n_head * s.D)), pout(size_t(std::max(1, partials) * s.n_head * s.D)),
            pstats(size_t(std::max(1, partials) * s.n_head * 2));
        Dev<uint16_t> dk(cache.k), dv(cache.v);
        Dev<int32_t> dpos(pos), dtable(table), dtables(tables);
        Dev<cuda::AttentionPart> dparts(parts);
        Dev<cuda::AttentionMerge> dmerges(merges);
        const cuda::KvLayout kv{dk.p, dv.p, cache.pages, cache.page_size, s.n_kv, s.D};
        const cuda::RowTables rt{dpos.p, dtable.p, dtables.p};
        cuda::attention(dq.p, out.p, s.n_head, dparts.p, int(parts.size()), rt, kv, 1, pout.p, pstats.p, nullptr);
        cuda::merge_attention(dmerges.p, int(merges.size()), s.n_head, s.D, pout.p, pstats.p, out.p, nullptr);
        const auto got = out.get();
        double worst = 0.0;
        std::vector<float> ref(size_t(s.n_head * s.D));
        for (int t = 0; t < rows; ++t) {
            const std::vector<int32_t> tab(tables.begin() + table[size_t(t)], tables.end());
            gpu_check::reference_attention(cache, 1, tab, pos[size_t(t)], &q[size_t(t * s.n_head * s.D)], s.n_head,
                                           ref.data());
            for (size_t i = 0; i < ref.size(); ++i)
                worst = std::max(worst, double(std::fabs(got[size_t(t) * ref.size() + i] - ref[i])));
        }
        c.expect(cudaGetLastError() == cudaSuccess, "attention kernels launch");
        c.expect(worst < 2e-5, "attention of " + std::to_string(s.n_head) + " heads over " + std::to_string(s.n_kv) +
                                   " KV heads of " + std::to_string(s.D) + " within 2e-5 of the double reference (" +
                                   std::to_string(worst) + ")");
    }
}

} // namespace

int main() {
    std::string why;
    if (cuda::device_count(&why) == 0) return gpu_check::skip("no CUDA device: " + why);
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    std::printf("device: %s\n", prop.name);
    Checks c;
    std::mt19937 rng(42);
    // 512 columns give a lane of the float products at most one unit, 2304 several and a
    // partial last round; 67 rows leave the last warp's pair with one row.
    for (int64_t cols : {512, 2304}) test_matvec(c, rng, cols);
    test_fused_matvec(c, rng);
    // The integer path with every row split over two warps (by default only rows of 2048
    // columns and more are), checked the same way ("split" in the names).
    const int split_units = cuda::q8_split_units();
    cuda::set_q8_split_units(1);
    for (int64_t cols : {512, 2304}) test_matvec(c, rng, cols, "split ");
    test_fused_matvec(c, rng, "split ");
    cuda::set_q8_split_units(split_units);
    test_dequantize_and_rows(c, rng);
    test_row_ops(c, rng);
    test_rope_store(c, rng);
    test_attention(c, rng);
    c.expect(cudaDeviceSynchronize() == cudaSuccess, "no asynchronous CUDA error");
    return c.finish();
}
