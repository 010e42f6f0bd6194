// temper-probe: Temper's own program, built by `temper engine build` against a hooked ggml tree.
// It serves Temper's engine device over stdin/stdout (probe_protocol.h): weights and activations
// live in the engine's own buffers, every GEMV is ggml's MUL_MAT on the engine's backend (the
// engine quantizes the activations itself and launches mmvq its own way, PDL included), and a
// config is chosen through the hook's override. Times are device events around groups of
// MUL_MATs, launched behind a spin kernel so the host's launch cost never shows (docs/engine.md).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <tuple>
#include <string>
#include <unistd.h>
#include <vector>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cuda.h"
#include "ggml.h"
#include "probe_protocol.h"
#include "temper-mmvq-api.h"

#if defined(TEMPER_PROBE_HIP)
#include <hip/hip_runtime.h>
#define cudaDeviceProp hipDeviceProp_t
#define cudaDriverGetVersion hipDriverGetVersion
#define cudaError_t hipError_t
#define cudaEventCreate hipEventCreate
#define cudaEventDestroy hipEventDestroy
#define cudaEventElapsedTime hipEventElapsedTime
#define cudaEventRecord hipEventRecord
#define cudaEventSynchronize hipEventSynchronize
#ifndef cudaStreamSynchronize
#define cudaStreamSynchronize hipStreamSynchronize
#endif
#ifndef cudaGetLastError
#define cudaGetLastError hipGetLastError
#endif
#ifndef cudaDeviceSynchronize
#define cudaDeviceSynchronize hipDeviceSynchronize
#endif
#define cudaEvent_t hipEvent_t
#define cudaFree hipFree
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaGetErrorString hipGetErrorString
#define cudaMalloc hipMalloc
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define cudaDeviceGetPCIBusId hipDeviceGetPCIBusId
#define cudaRuntimeGetVersion hipRuntimeGetVersion
#define cudaStream_t hipStream_t
#define cudaSuccess hipSuccess
#else
#include <cuda_runtime.h>
#endif


using temper::probe::Op;
using temper::probe::ProbeStatus;

namespace {

int g_out = 1;  // the protocol's stdout; stray prints from libraries go to stderr
ggml_backend_t g_backend = nullptr;
int g_device = 0;
uint64_t g_next_handle = 1;
std::map<uint64_t, ggml_backend_buffer_t> g_buffers;
// x: the float activations (the engine's MUL_MAT quantizes them itself); q8: the same quantized by
// the engine's quantizer in its padded layout (what mmvq reads; kernel-only timing launches on it).
struct Quantized { uint64_t x; int k, ncols; void * q8; };
std::map<uint64_t, Quantized> g_quantized;  // y -> the float activations it holds, quantized
std::map<std::tuple<int, int, int>, std::pair<int, int>> g_stock;  // (type, ncols, k) -> config
constexpr size_t kSlack = 1 << 16;  // room for the row padding ggml's CUDA buffers ask quantized tensors for

struct Failure { ProbeStatus status; std::string what; };
[[noreturn]] void fail(ProbeStatus s, const std::string & what) { throw Failure{s, what}; }

void check_cuda(cudaError_t e, const char * call) {
    if (e != cudaSuccess) fail(ProbeStatus::EngineError, std::string(call) + ": " + cudaGetErrorString(e));
}

bool read_all(void * dst, size_t n) {
    auto * p = static_cast<char *>(dst);
    while (n > 0) {
        const ssize_t got = read(0, p, n);
        if (got <= 0) return false;
        p += got; n -= size_t(got);
    }
    return true;
}

void write_all(const void * src, size_t n) {
    const auto * p = static_cast<const char *>(src);
    while (n > 0) {
        const ssize_t put = write(g_out, p, n);
        if (put <= 0) exit(3);
        p += put; n -= size_t(put);
    }
}

void respond(ProbeStatus status, const std::string & payload) {
    const int32_t s = int32_t(status);
    const uint32_t n = uint32_t(payload.size());
    write_all(&s, 4); write_all(&n, 4); write_all(payload.data(), payload.size());
}

struct Reader {
    const std::string & p; size_t at = 0;
    template <class T> T get() {
        if (at + sizeof(T) > p.size()) fail(ProbeStatus::BadRequest, "request too short");
        T v; memcpy(&v, p.data() + at, sizeof(T)); at += sizeof(T); return v;
    }
    const char * rest(size_t & n) const { n = p.size() - at; return p.data() + at; }
};

template <class T> void put(std::string & out, T v) { out.append(reinterpret_cast<const char *>(&v), sizeof v); }

ggml_backend_buffer_t buffer(uint64_t h) {
    auto it = g_buffers.find(h);
    if (it == g_buffers.end()) fail(ProbeStatus::BadRequest, "unknown buffer handle " + std::to_string(h));
    return it->second;
}

// y no longer holds quantized activations: free its private copy of them.
void forget_quantized(uint64_t y) {
    auto it = g_quantized.find(y);
    if (it == g_quantized.end()) return;
    if (auto b = g_buffers.find(it->second.x); b != g_buffers.end()) {
        ggml_backend_buffer_free(b->second);
        g_buffers.erase(b);
    }
    cudaFree(it->second.q8);
    g_quantized.erase(it);
}

const Quantized & quantized(uint64_t y) {
    auto it = g_quantized.find(y);
    if (it == g_quantized.end()) fail(ProbeStatus::BadRequest, "buffer " + std::to_string(y) + " holds no quantized activations");
    return it->second;
}

void place(ggml_tensor * t, uint64_t h) {
    ggml_backend_buffer_t b = buffer(h);
    if (ggml_backend_buffer_get_alloc_size(b, t) > ggml_backend_buffer_get_size(b))
        fail(ProbeStatus::BadRequest, "buffer " + std::to_string(h) + " is too small for " + std::string(ggml_get_name(t)));
    if (ggml_backend_tensor_alloc(b, t, ggml_backend_buffer_get_base(b)) != GGML_STATUS_SUCCESS)
        fail(ProbeStatus::EngineError, "ggml_backend_tensor_alloc failed");
}

// A graph of MUL_MATs, one per weight buffer, all reading x and writing dst: decode's GEMVs.
struct MulMatGraph {
    ggml_context * ctx = nullptr;
    ggml_cgraph * graph = nullptr;
    MulMatGraph(int type, int n, int k, int ncols, const std::vector<uint64_t> & weights, uint64_t x, uint64_t dst) {
        const size_t nodes = weights.size() * 3 + 8;
        ggml_init_params params = {ggml_tensor_overhead() * nodes + ggml_graph_overhead_custom(nodes, false), nullptr, true};
        ctx = ggml_init(params);
        graph = ggml_new_graph_custom(ctx, nodes, false);
        ggml_tensor * xt = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, ncols);
        ggml_set_name(xt, "x");
        place(xt, x);
        for (size_t i = 0; i < weights.size(); ++i) {
            ggml_tensor * w = ggml_new_tensor_2d(ctx, ggml_type(type), k, n);
            ggml_set_name(w, "weights");
            place(w, weights[i]);
            ggml_tensor * out = ggml_mul_mat(ctx, w, xt);
            ggml_set_name(out, "dst");
            place(out, dst);
            ggml_build_forward_expand(graph, out);
        }
    }
    ~MulMatGraph() { ggml_free(ctx); }
    MulMatGraph(const MulMatGraph &) = delete;
    MulMatGraph & operator=(const MulMatGraph &) = delete;
};

// A launch of any kind (probe_protocol.h, GemvLaunch / TimeLaunch), as the engine's graph makes it.
struct LaunchSpec {
    int launch = 0, glu = 0, type = 0, n = 0, k = 0, ncols = 1, nwarps = 0, rows = 0, experts = 0, used = 0, ids_sets = 1;
    uint64_t gate_offset = 0;
    // 0 MUL_MAT, 1 fused gate/up, 2 MUL_MAT_ID, 3 fused MUL_MAT_ID gate/up; 4 and 5: 1 and 3 as the
    // hook's unfused pair (the graph is the fused one; the override asks the hook for the pair).
    bool ids() const { return launch == 2 || launch == 3 || launch == 5; }
    bool fused() const { return launch == 1 || launch == 3 || launch == 4 || launch == 5; }
    bool unfused() const { return launch >= 4; }
    int input_columns() const { return launch == 2 ? used : ids() ? 1 : ncols; }
};

LaunchSpec launch_spec(Reader & r) {
    LaunchSpec s;
    s.launch = r.get<int32_t>(); s.glu = r.get<int32_t>(); s.type = r.get<int32_t>();
    s.n = r.get<int32_t>(); s.k = r.get<int32_t>(); s.ncols = r.get<int32_t>();
    s.nwarps = r.get<int32_t>(); s.rows = r.get<int32_t>();
    s.experts = r.get<int32_t>(); s.used = r.get<int32_t>(); s.ids_sets = r.get<int32_t>();
    s.gate_offset = r.get<uint64_t>();
    if (s.launch < 0 || s.launch > 5 || s.glu < 0 || s.glu > 1 || s.n < 1 || s.k < 1 || s.ncols < 1 || s.ncols > 8)
        fail(ProbeStatus::BadRequest, "launch: bad kind, GLU or size");
    if (s.ids() && (s.used < 1 || s.used > s.experts || s.ids_sets < 1 || s.ncols != 1))
        fail(ProbeStatus::BadRequest, "launch: bad experts");
    if (s.fused() && s.ncols != 1) fail(ProbeStatus::EngineError, "the engine fuses gate/up only at one token");
    return s;
}

// One graph of `weights.size()` launches of a kind, each reading its own weight copy (and the ids
// set of its launch index), all writing dst; gate and up of the fused kinds go to a scratch buffer
// the fused kernel never writes (it writes only the GLU result).
struct LaunchGraph {
    ggml_context * ctx = nullptr;
    ggml_cgraph * graph = nullptr;
    ggml_backend_buffer_t scratch = nullptr;
    LaunchGraph(const LaunchSpec & s, const std::vector<uint64_t> & weights, size_t first_launch, uint64_t x, uint64_t ids, uint64_t dst) {
        const size_t nodes = weights.size() * 6 + 8;
        ggml_init_params params = {ggml_tensor_overhead() * (nodes + 8) + ggml_graph_overhead_custom(nodes, false), nullptr, true};
        ctx = ggml_init(params);
        graph = ggml_new_graph_custom(ctx, nodes, false);
        const int out_cols = s.ids() ? s.used : s.ncols;
        const size_t out_bytes = size_t(s.n) * size_t(out_cols) * 4;
        if (s.fused()) {
            scratch = ggml_backend_buft_alloc_buffer(ggml_backend_get_default_buffer_type(g_backend), 2 * out_bytes + 512 + kSlack);
            if (!scratch) fail(ProbeStatus::EngineError, "out of device memory for the scratch of a fused launch");
        }
        auto at = [&](ggml_tensor * t, ggml_backend_buffer_t b, size_t offset) {
            if (offset + ggml_nbytes(t) > ggml_backend_buffer_get_size(b))
                fail(ProbeStatus::BadRequest, std::string("launch: a buffer is too small for ") + ggml_get_name(t));
            if (ggml_backend_tensor_alloc(b, t, static_cast<char *>(ggml_backend_buffer_get_base(b)) + offset) != GGML_STATUS_SUCCESS)
                fail(ProbeStatus::EngineError, "ggml_backend_tensor_alloc failed");
            return t;
        };
        ggml_tensor * xt = at(ggml_new_tensor_3d(ctx, GGML_TYPE_F32, s.k, s.input_columns(), 1), buffer(x), 0);
        for (size_t i = 0; i < weights.size(); ++i) {
            ggml_backend_buffer_t wb = buffer(weights[i]);
            auto matrix = [&](size_t offset) {
                ggml_tensor * t = s.ids() ? ggml_new_tensor_3d(ctx, ggml_type(s.type), s.k, s.n, s.experts)
                                          : ggml_new_tensor_2d(ctx, ggml_type(s.type), s.k, s.n);
                return at(t, wb, offset);
            };
            ggml_tensor * sel = nullptr;
            if (s.ids()) {
                const size_t set = (first_launch + i) % size_t(s.ids_sets);
                sel = at(ggml_new_tensor_2d(ctx, GGML_TYPE_I32, s.used, 1), buffer(ids), set * size_t(s.used) * 4);
            }
            auto product = [&](ggml_tensor * w) { return s.ids() ? ggml_mul_mat_id(ctx, w, xt, sel) : ggml_mul_mat(ctx, w, xt); };
            ggml_tensor * out = nullptr;
            if (s.fused()) {
                ggml_tensor * g = at(product(matrix(s.gate_offset)), scratch, 0);
                ggml_tensor * up = at(product(matrix(0)), scratch, (out_bytes + 255) / 256 * 256);
                out = s.glu == 1 ? ggml_geglu_split(ctx, g, up) : ggml_swiglu_split(ctx, g, up);
            } else {
                out = product(matrix(0));
            }
            ggml_set_name(out, "dst");
            at(out, buffer(dst), 0);
            ggml_build_forward_expand(graph, out);
        }
    }
    ~LaunchGraph() {
        ggml_free(ctx);
        if (scratch) ggml_backend_buffer_free(scratch);
    }
    LaunchGraph(const LaunchGraph &) = delete;
    LaunchGraph & operator=(const LaunchGraph &) = delete;
};

// Runs a launch graph once and checks that the engine made every launch as that kind through mmvq
// (the unfused pair: two plain mmvq launches each).
void compute_launch(const LaunchGraph & g, const LaunchSpec & s, size_t launches) {
    const long long before = temper_mmvq_launch_count();
    if (ggml_backend_graph_compute(g_backend, g.graph) != GGML_STATUS_SUCCESS) fail(ProbeStatus::EngineError, "ggml_backend_graph_compute failed");
    if (s.unfused()) launches *= 2;
    if (temper_mmvq_launch_count() - before != (long long) launches || temper_mmvq_last_launch_kind() != s.launch)
        fail(ProbeStatus::EngineError, "the engine did not launch mmvq as this kind (" + std::to_string(launches) + " launches of kind " +
                                           std::to_string(s.launch) + " expected; saw " + std::to_string(temper_mmvq_launch_count() - before) +
                                           ", the last of kind " + std::to_string(temper_mmvq_last_launch_kind()) + ")");
}

void compute(const MulMatGraph & g) {
    const long long before = temper_mmvq_launch_count();
    if (ggml_backend_graph_compute(g_backend, g.graph) != GGML_STATUS_SUCCESS) fail(ProbeStatus::EngineError, "ggml_backend_graph_compute failed");
    if (temper_mmvq_launch_count() == before)
        fail(ProbeStatus::EngineError, "the engine did not run this MUL_MAT through mmvq (another kernel took it)");
}

__global__ void spin(long long ns) {
#if defined(TEMPER_PROBE_HIP)
#if defined(__HIP_DEVICE_COMPILE__)  // HIP declares wall_clock64 (100 MHz) for the device pass only
    const long long start = wall_clock64();
    while ((wall_clock64() - start) * 10 < ns) {}
#endif
#else
    long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < ns);
#endif
}

// One decode token's GEMVs (probe_protocol.h, Op::Replay) as one ggml graph.
struct TokenGraph {
    ggml_context * ctx = nullptr;
    ggml_cgraph * graph = nullptr;
    std::string profile = "-";
    uint64_t x = 0, out = 0, ids = 0;
    size_t out_at = 0;
    int ncols = 1;  // the batch width: every node reads ncols columns (tokens, for MUL_MAT_ID)
    struct ForcedPath { int launch, type, path; };
    std::vector<ForcedPath> paths;  // applied for the run (temper_mmvq_set_path_override), cleared after
    // Protocol 5: "group W R" forces that group config for the run (nwarps W), "group off" forces
    // groups off (-1); absent: 0, the profile (or TEMPER_MMVQ_GROUP) decides. Cleared after the run.
    int group_nwarps = 0, group_rows = 0;
    // Protocol 6: "pipeline on|off" forces pipelined launches for the run (1) or none (0); absent: -1,
    // the hook decides (TEMPER_MMVQ_PIPELINE). Cleared after the run.
    int pipeline = -1;
    ggml_tensor * last_input = nullptr;  // the activations of the last mm/mm+ node (mm+ reads them too)
    ~TokenGraph() { if (ctx) ggml_free(ctx); }

    ggml_tensor * at(ggml_tensor * t, uint64_t h, size_t offset = 0) {
        ggml_backend_buffer_t b = buffer(h);
        if (offset + ggml_nbytes(t) > ggml_backend_buffer_get_size(b))
            fail(ProbeStatus::BadRequest, "replay: buffer " + std::to_string(h) + " is too small");
        if (ggml_backend_tensor_alloc(b, t, static_cast<char *>(ggml_backend_buffer_get_base(b)) + offset) != GGML_STATUS_SUCCESS)
            fail(ProbeStatus::EngineError, "ggml_backend_tensor_alloc failed");
        return t;
    }
    ggml_tensor * output(ggml_tensor * t) {  // each node its own slice of the arena (fusion checks ranges)
        at(t, out, out_at);
        out_at += (ggml_nbytes(t) + 255) / 256 * 256;
        return t;
    }
    // MUL_MAT's activations: ncols columns of k. MUL_MAT_ID's: cols per token (1: broadcast to the
    // token's experts; `used`: each expert its own), ncols tokens, with `used` expert ids per token.
    ggml_tensor * input(int k) { return at(ggml_new_tensor_3d(ctx, GGML_TYPE_F32, k, ncols, 1), x); }
    ggml_tensor * expert_input(int k, int cols) { return at(ggml_new_tensor_3d(ctx, GGML_TYPE_F32, k, cols, ncols), x); }
    ggml_tensor * selection(int used) { return at(ggml_new_tensor_2d(ctx, GGML_TYPE_I32, used, ncols), ids); }

    explicit TokenGraph(const std::string & plan) {
        const size_t nodes = 16384;
        ggml_init_params params = {ggml_tensor_overhead() * nodes + ggml_graph_overhead_custom(nodes, false), nullptr, true};
        ctx = ggml_init(params);
        graph = ggml_new_graph_custom(ctx, nodes, false);
        std::istringstream in(plan);
        std::string line;
        while (std::getline(in, line)) {
            std::istringstream l(line);
            std::string op;
            if (!(l >> op)) continue;
            int type = 0, n = 0, k = 0, e = 0, u = 0;
            uint64_t w = 0, w2 = 0;
            if (op == "profile") { l >> profile; continue; }
            if (op == "x") { l >> x; continue; }
            if (op == "out") { l >> out; continue; }
            if (op == "ids") { l >> ids; continue; }
            if (op == "group") {
                if (ggml_graph_n_nodes(graph) > 0) fail(ProbeStatus::BadRequest, "replay: \"" + line + "\" comes after the nodes");
                std::string first, extra;
                int rows = 0;
                if ((l >> first) && first == "off" && !(l >> extra)) {
                    group_nwarps = -1;
                    group_rows = 0;
                    continue;
                }
                std::istringstream nw(first);
                int nwarps = 0;
                if ((nw >> nwarps) && (l >> rows) && !(l >> extra) && (nwarps == 2 || nwarps == 4 || nwarps == 8) &&
                    (rows == 1 || rows == 2 || rows == 4)) {
                    group_nwarps = nwarps;
                    group_rows = rows;
                    continue;
                }
                fail(ProbeStatus::BadRequest, "replay: cannot read plan line \"" + line +
                                                  "\" (expected \"group off\" or \"group W R\" with W 2, 4 or 8 and R 1, 2 or 4)");
            }
            if (op == "pipeline") {
                if (ggml_graph_n_nodes(graph) > 0) fail(ProbeStatus::BadRequest, "replay: \"" + line + "\" comes after the nodes");
                std::string value, extra;
                if ((l >> value) && (value == "on" || value == "off") && !(l >> extra)) {
                    pipeline = value == "on" ? 1 : 0;
                    continue;
                }
                fail(ProbeStatus::BadRequest, "replay: cannot read plan line \"" + line + "\" (expected \"pipeline on\" or \"pipeline off\")");
            }
            if (op == "ncols" || op == "path") {
                if (ggml_graph_n_nodes(graph) > 0) fail(ProbeStatus::BadRequest, "replay: \"" + line + "\" comes after the nodes");
                std::string extra;
                ForcedPath f{};
                if (op == "ncols" && (l >> ncols) && !(l >> extra) && ncols >= 1 && ncols <= 8) continue;
                if (op == "path" && (l >> f.launch >> f.type >> f.path) && !(l >> extra) && (f.launch == 0 || f.launch == 2) &&
                    f.type >= 0 && f.type < GGML_TYPE_COUNT && (f.path == 1 || f.path == 2)) {
                    paths.push_back(f);
                    continue;
                }
                fail(ProbeStatus::BadRequest, "replay: cannot read plan line \"" + line +
                                                  "\" (expected \"ncols N\" with N 1..8 or \"path LAUNCH TYPE P\" with LAUNCH 0 or 2, P 1 mmvq or 2 mmq)");
            }
            if (!x || !out) fail(ProbeStatus::BadRequest, "replay: x and out come before the nodes");
            if ((op == "mm" || op == "mm+") && (l >> type >> n >> k >> w)) {
                // A plain mm reads its own tensor over x (never grouped with its neighbour); mm+ the very
                // tensor the node before it read, as q, k and v read one normalized input.
                if (op == "mm+" && (!last_input || last_input->ne[0] != k))
                    fail(ProbeStatus::BadRequest, "replay: \"" + line + "\" follows no mm/mm+ node of the same K");
                ggml_tensor * xin = op == "mm+" ? last_input : input(k);
                ggml_tensor * wt = at(ggml_new_tensor_2d(ctx, ggml_type(type), k, n), w);
                ggml_build_forward_expand(graph, output(ggml_mul_mat(ctx, wt, xin)));
                last_input = xin;
                continue;
            } else if (op == "glu" && (l >> type >> n >> k >> w >> w2)) {
                ggml_tensor * xin = input(k);
                ggml_tensor * g = output(ggml_mul_mat(ctx, at(ggml_new_tensor_2d(ctx, ggml_type(type), k, n), w), xin));
                ggml_tensor * up = output(ggml_mul_mat(ctx, at(ggml_new_tensor_2d(ctx, ggml_type(type), k, n), w2), xin));
                ggml_build_forward_expand(graph, output(ggml_swiglu_split(ctx, g, up)));
            } else if ((op == "mmid" || op == "mmid_down") && (l >> type >> n >> k >> e >> u >> w)) {
                ggml_tensor * wt = at(ggml_new_tensor_3d(ctx, ggml_type(type), k, n, e), w);
                ggml_build_forward_expand(graph, output(ggml_mul_mat_id(ctx, wt, expert_input(k, op == "mmid" ? 1 : u), selection(u))));
            } else if (op == "mmid_glu" && (l >> type >> n >> k >> e >> u >> w >> w2)) {
                ggml_tensor * xin = expert_input(k, 1);
                ggml_tensor * sel = selection(u);
                ggml_tensor * g = output(ggml_mul_mat_id(ctx, at(ggml_new_tensor_3d(ctx, ggml_type(type), k, n, e), w), xin, sel));
                ggml_tensor * up = output(ggml_mul_mat_id(ctx, at(ggml_new_tensor_3d(ctx, ggml_type(type), k, n, e), w2), xin, sel));
                ggml_build_forward_expand(graph, output(ggml_swiglu_split(ctx, g, up)));
            } else {
                fail(ProbeStatus::BadRequest, "replay: cannot read plan line \"" + line + "\"");
            }
            last_input = nullptr;  // an mm+ after any other node has no run to join
        }
    }
};

// The plan's forced paths, set at the plan's width for one replay and cleared on every way out of it.
struct PathOverrides {
    const TokenGraph & t;
    explicit PathOverrides(const TokenGraph & g) : t(g) { set(true); }
    ~PathOverrides() { set(false); }
    void set(bool on) const {
        for (const auto & f : t.paths) temper_mmvq_set_path_override(f.launch, f.type, t.ncols, on ? f.path : 0);
        temper_mmvq_set_group_override(on ? t.group_nwarps : 0, on ? t.group_rows : 0);
        if (t.pipeline >= 0) temper_mmvq_set_pipeline_override(on ? t.pipeline : -1);
    }
};

// ggml's compute stream, which the hook learns from an mmvq launch. A replay whose launches all run
// mmq (forced paths) makes none: then one small q4_0 GEMV (mmvq at one column) shows it first.
cudaStream_t compute_stream() {
    if (void * s = temper_mmvq_last_stream()) return (cudaStream_t) s;
    ggml_init_params params = {ggml_tensor_overhead() * 8 + ggml_graph_overhead(), nullptr, true};
    ggml_context * ctx = ggml_init(params);
    ggml_tensor * y = ggml_mul_mat(ctx, ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_0, 32, 32), ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 32, 1));
    ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, y);
    ggml_backend_buffer_t b = ggml_backend_alloc_ctx_tensors(ctx, g_backend);
    const bool ok = b && (ggml_backend_buffer_clear(b, 0), ggml_backend_graph_compute(g_backend, g) == GGML_STATUS_SUCCESS);
    if (b) ggml_backend_buffer_free(b);
    ggml_free(ctx);
    if (!ok || !temper_mmvq_last_stream()) fail(ProbeStatus::EngineError, "replay: cannot find the engine's compute stream (no mmvq launch)");
    return (cudaStream_t) temper_mmvq_last_stream();
}

std::string replay(uint32_t tokens, const std::string & plan) {
    TokenGraph t(plan);
    const PathOverrides forced(t);
    temper_mmvq_load_profile(t.profile == "-" ? "" : t.profile.c_str());
    // Warm-up, and the evidence: how many mmvq launches a token makes and how many are tuned.
    if (ggml_backend_graph_compute(g_backend, t.graph) != GGML_STATUS_SUCCESS) fail(ProbeStatus::EngineError, "replay: compute failed");
    const long long l0 = temper_mmvq_launch_count(), t0 = temper_mmvq_tuned_count(), c0 = temper_mmvq_path_changes();
    const long long g0 = temper_mmvq_group_launches(), q0 = temper_mmvq_pipelined_launches();
    const auto h0 = std::chrono::steady_clock::now();
    ggml_backend_graph_compute_async(g_backend, t.graph);
    const double enqueue_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - h0).count();
    ggml_backend_synchronize(g_backend);
    const long long launches = temper_mmvq_launch_count() - l0, tuned = temper_mmvq_tuned_count() - t0;
    const long long path_changes = temper_mmvq_path_changes() - c0;
    const long long group_launches = temper_mmvq_group_launches() - g0;
    const long long pipelined = temper_mmvq_pipelined_launches() - q0;
    cudaStream_t stream = compute_stream();
    cudaEvent_t e0, e1;
    check_cuda(cudaEventCreate(&e0), "cudaEventCreate");
    check_cuda(cudaEventCreate(&e1), "cudaEventCreate");
    std::string out;
    for (uint32_t i = 0; i < tokens; ++i) {
        // The spin holds the GPU until the whole token is queued: the token runs back to back, as
        // decode's captured graph runs it, and the host's launch cost stays out of the time.
        spin<<<1, 1, 0, stream>>>((long long) (enqueue_ns * 2) + 100000);
        check_cuda(cudaEventRecord(e0, stream), "cudaEventRecord");
        if (ggml_backend_graph_compute_async(g_backend, t.graph) != GGML_STATUS_SUCCESS) fail(ProbeStatus::EngineError, "replay: compute failed");
        check_cuda(cudaEventRecord(e1, stream), "cudaEventRecord");
        ggml_backend_synchronize(g_backend);
        check_cuda(cudaEventSynchronize(e1), "cudaEventSynchronize");
        float ms = 0;
        check_cuda(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
        put(out, double(ms) * 1000.0);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    temper_mmvq_load_profile("");
    put(out, int64_t(launches));
    put(out, int64_t(tuned));
    put(out, int64_t(path_changes));
    put(out, int64_t(group_launches));
    put(out, int64_t(pipelined));
    return out;
}

// Times one graph a group (each `per_group` launches), the groups back to back on ggml's stream
// behind a spin kernel that holds the GPU until all are queued (the host's launch cost never shows),
// device events around each group only: µs per launch, one value a group.
std::string time_groups(const std::vector<ggml_cgraph *> & order, int per_group) {
    cudaStream_t stream = (cudaStream_t) temper_mmvq_last_stream();
    std::vector<cudaEvent_t> ev(order.size() + 1);
    for (auto & e : ev) check_cuda(cudaEventCreate(&e), "cudaEventCreate");
    // Enqueue cost of the whole batch on the host, so the spin covers it with room to spare.
    const auto t0 = std::chrono::steady_clock::now();
    for (ggml_cgraph * g : order) ggml_backend_graph_compute_async(g_backend, g);
    ggml_backend_synchronize(g_backend);
    const double enqueue_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    spin<<<1, 1, 0, stream>>>((long long) (enqueue_ns * 1.5) + 50000);
    check_cuda(cudaEventRecord(ev[0], stream), "cudaEventRecord");
    for (size_t g = 0; g < order.size(); ++g) {
        if (ggml_backend_graph_compute_async(g_backend, order[g]) != GGML_STATUS_SUCCESS)
            fail(ProbeStatus::EngineError, "ggml_backend_graph_compute_async failed");
        check_cuda(cudaEventRecord(ev[g + 1], stream), "cudaEventRecord");
    }
    ggml_backend_synchronize(g_backend);
    check_cuda(cudaEventSynchronize(ev.back()), "cudaEventSynchronize");
    std::string out;
    for (size_t g = 0; g < order.size(); ++g) {
        float ms = 0;
        check_cuda(cudaEventElapsedTime(&ms, ev[g], ev[g + 1]), "cudaEventElapsedTime");
        put(out, double(ms) * 1000.0 / per_group);
    }
    for (auto & e : ev) cudaEventDestroy(e);
    return out;
}

void set_config(int type, int n, int k, int ncols, int nwarps, int rows, int launch = 0) {
    if (nwarps > 0 && !temper_mmvq_has(type, ncols, nwarps, rows))
        fail(ProbeStatus::NotCompiled, "config (" + std::to_string(nwarps) + "," + std::to_string(rows) + ") of type " +
                                           ggml_type_name(ggml_type(type)) + " at ncols " + std::to_string(ncols) + " is not compiled in");
    temper_mmvq_set_override_launch(launch, type, n, k, ncols, nwarps, rows);
}

// Op::TimeLaunch: as Time, for a launch of any kind (probe_protocol.h).
std::string time_launch(Reader & r) {
    const LaunchSpec s = launch_spec(r);
    const int groups = r.get<int32_t>(), per_group = r.get<int32_t>();
    const uint64_t y = r.get<uint64_t>(), ids = r.get<uint64_t>(), dst = r.get<uint64_t>();
    const uint32_t copies = r.get<uint32_t>();
    if (groups < 1 || per_group < 1 || copies < 1) fail(ProbeStatus::BadRequest, "time_launch: groups, per_group and copies must be positive");
    std::vector<uint64_t> ring(copies);
    for (auto & h : ring) h = r.get<uint64_t>();
    const Quantized & q = quantized(y);
    if (q.k != s.k || q.ncols < s.input_columns()) fail(ProbeStatus::BadRequest, "time_launch: activations do not match k/columns");
    set_config(s.type, s.n, s.k, s.ncols, s.nwarps, s.rows, s.launch);
    // One graph per distinct group start (the ring of copies and of id sets continues across groups).
    std::vector<std::unique_ptr<LaunchGraph>> graphs;
    std::vector<int> group_graph(groups);
    std::map<size_t, int> by_start;
    const size_t period = size_t(copies) * size_t(s.ids() ? s.ids_sets : 1);
    for (int g = 0; g < groups; ++g) {
        const size_t start = size_t(g) * size_t(per_group) % period;
        auto it = by_start.find(start);
        if (it == by_start.end()) {
            std::vector<uint64_t> ws(per_group);
            for (int i = 0; i < per_group; ++i) ws[i] = ring[(start + size_t(i)) % copies];
            graphs.push_back(std::make_unique<LaunchGraph>(s, ws, start, q.x, ids, dst));
            it = by_start.emplace(start, int(graphs.size()) - 1).first;
        }
        group_graph[g] = it->second;
    }
    for (const auto & g : graphs) compute_launch(*g, s, size_t(per_group));  // warm-up, and proof of the kind
    std::vector<ggml_cgraph *> order(static_cast<size_t>(groups));
    for (int g = 0; g < groups; ++g) order[size_t(g)] = graphs[size_t(group_graph[g])]->graph;
    const std::string out = time_groups(order, per_group);
    temper_mmvq_set_override_launch(s.launch, s.type, s.n, s.k, s.ncols, 0, 0);
    return out;
}

std::string hello() {
    cudaDeviceProp p;
    check_cuda(cudaGetDeviceProperties(&p, g_device), "cudaGetDeviceProperties");
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    char pci[64] = {0};
    cudaDeviceGetPCIBusId(pci, sizeof pci, g_device);
#if defined(TEMPER_PROBE_HIP)
    std::string arch = p.gcnArchName;
    arch = arch.substr(0, arch.find(':'));
#else
    const std::string arch = "sm_" + std::to_string(p.major * 10 + p.minor);
#endif
    std::string o;
    auto kv = [&](const char * k, const std::string & v) { o += std::string(k) + "=" + v + "\n"; };
    kv("protocol", std::to_string(temper::probe::kProtocolVersion));
    kv("name", p.name);
    kv("arch", arch);
    kv("cc", std::to_string(p.major * 10 + p.minor));
    kv("sms", std::to_string(p.multiProcessorCount));
    kv("warp_size", std::to_string(p.warpSize));
    kv("l2_bytes", std::to_string(p.l2CacheSize));
    kv("memory_bytes", std::to_string(p.totalGlobalMem));
    kv("clock_mhz", std::to_string(0));
    kv("memory_bus_bits", std::to_string(p.memoryBusWidth));
    kv("shared_per_block", std::to_string(p.sharedMemPerBlock));
    kv("shared_per_sm", std::to_string(p.sharedMemPerMultiprocessor));
    kv("regs_per_block", std::to_string(p.regsPerBlock));
    kv("regs_per_sm", std::to_string(p.regsPerMultiprocessor));
    kv("max_threads_per_sm", std::to_string(p.maxThreadsPerMultiProcessor));
    kv("driver", std::to_string(driver));
    kv("runtime", std::to_string(runtime));
    kv("pci_bus_id", pci);
    kv("hook_version", std::to_string(temper_mmvq_hook_version()));
    kv("kernel_set", temper_mmvq_kernel_set());
    kv("path_hooks", std::to_string(temper_mmvq_path_hooks()));
    kv("group_hooks", std::to_string(temper_mmvq_group_hooks()));
    kv("pipeline_bits", std::to_string(temper_mmvq_pipeline_bits()));
    kv("graphs", "0");
    return o;
}

// Op::TimeKernel (probe_protocol.h): mul_mat_vec_q alone, launched back to back with the arguments
// the engine built for one MUL_MAT of this shape.
std::string time_kernel(Reader & r) {
    const int type = r.get<int32_t>(), n = r.get<int32_t>(), k = r.get<int32_t>(), ncols = r.get<int32_t>();
    const int nwarps = r.get<int32_t>(), rows = r.get<int32_t>();
    const int groups = r.get<int32_t>(), per_group = r.get<int32_t>();
    const uint64_t y = r.get<uint64_t>(), dst = r.get<uint64_t>();
    const uint32_t copies = r.get<uint32_t>();
    if (groups < 1 || per_group < 1 || copies < 1) fail(ProbeStatus::BadRequest, "time_kernel: groups, per_group and copies must be positive");
    std::vector<const void *> ring(copies);
    std::vector<uint64_t> handles(copies);
    for (uint32_t i = 0; i < copies; ++i) {
        handles[i] = r.get<uint64_t>();
        ring[i] = ggml_backend_buffer_get_base(buffer(handles[i]));
    }
    const Quantized & q = quantized(y);
    if (q.k != k || q.ncols != ncols) fail(ProbeStatus::BadRequest, "time_kernel: activations do not match k/ncols");
    if (nwarps <= 0) fail(ProbeStatus::NotCompiled, "time_kernel: times a grid instantiation; nwarps 0 (the stock dispatch) has none");
    set_config(type, n, k, ncols, nwarps, rows);
    // One MUL_MAT through the engine with this config: the hook keeps the arguments it launched with.
    temper_mmvq_forget_launch();
    {
        MulMatGraph g(type, n, k, ncols, {handles[0]}, q.x, dst);
        compute(g);
    }
    temper_mmvq_set_override(type, n, k, ncols, 0, 0);
    int seen[4] = {0, 0, 0, 0};
    if (!temper_mmvq_captured(seen) || seen[0] != type || seen[1] != ncols || seen[2] != n || seen[3] != k)
        fail(ProbeStatus::EngineError, "time_kernel: the engine's MUL_MAT did not launch the hook's instantiation of this shape");
    // Poisoned: what dst holds afterwards was written by the kernel-only launches alone.
    ggml_backend_buffer_clear(buffer(dst), 0xFF);
    auto launch = [&](size_t i) {
        if (!temper_mmvq_launch_captured(nwarps, rows, ring[i % copies], q.q8))
            fail(ProbeStatus::EngineError, "time_kernel: the captured launch is gone");
    };
    cudaStream_t stream = (cudaStream_t) temper_mmvq_last_stream();
    for (uint32_t i = 0; i < copies; ++i) launch(i);  // warm-up: every copy once
    check_cuda(cudaStreamSynchronize(stream), "time_kernel warm-up");
    check_cuda(cudaGetLastError(), "time_kernel warm-up");
    std::vector<cudaEvent_t> ev(size_t(groups) + 1);
    for (auto & e : ev) check_cuda(cudaEventCreate(&e), "cudaEventCreate");
    const size_t total = size_t(groups) * size_t(per_group);
    // Enqueue cost of the whole batch on the host, so the spin covers it with room to spare.
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < total; ++i) launch(i);
    check_cuda(cudaStreamSynchronize(stream), "time_kernel");
    const double enqueue_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    spin<<<1, 1, 0, stream>>>((long long) (enqueue_ns * 1.5) + 50000);
    check_cuda(cudaEventRecord(ev[0], stream), "cudaEventRecord");
    size_t at = 0;  // the ring continues across groups
    for (int g = 0; g < groups; ++g) {
        for (int i = 0; i < per_group; ++i) launch(at++);
        check_cuda(cudaEventRecord(ev[size_t(g) + 1], stream), "cudaEventRecord");
    }
    check_cuda(cudaEventSynchronize(ev.back()), "cudaEventSynchronize");
    check_cuda(cudaGetLastError(), "time_kernel");
    std::string out;
    for (int g = 0; g < groups; ++g) {
        float ms = 0;
        check_cuda(cudaEventElapsedTime(&ms, ev[size_t(g)], ev[size_t(g) + 1]), "cudaEventElapsedTime");
        put(out, double(ms) * 1000.0 / per_group);
    }
    for (auto & e : ev) cudaEventDestroy(e);
    return out;
}

std::string serve(Op op, const std::string & payload) {
    Reader r{payload};
    std::string out;
    switch (op) {
        case Op::Hello: return hello();
        case Op::Alloc: {
            const uint64_t bytes = r.get<uint64_t>();
            ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(ggml_backend_get_default_buffer_type(g_backend), bytes + kSlack);
            if (!b) fail(ProbeStatus::EngineError, "out of device memory allocating " + std::to_string(bytes) + " bytes");
            const uint64_t h = g_next_handle++;
            g_buffers[h] = b;
            put(out, h);
            return out;
        }
        case Op::Free: {
            const uint64_t h = r.get<uint64_t>();
            ggml_backend_buffer_free(buffer(h));
            g_buffers.erase(h);
            forget_quantized(h);
            return out;
        }
        case Op::Upload: {
            ggml_backend_buffer_t b = buffer(r.get<uint64_t>());
            const uint64_t off = r.get<uint64_t>();
            size_t n = 0;
            const char * data = r.rest(n);
            if (off + n > ggml_backend_buffer_get_size(b)) fail(ProbeStatus::BadRequest, "upload past the end of the buffer");
            ggml_tensor t = {};  // the buffer's own set_tensor wants a tensor: one byte-typed view
            t.type = GGML_TYPE_I8; t.ne[0] = int64_t(n); t.ne[1] = t.ne[2] = t.ne[3] = 1;
            t.nb[0] = 1; t.nb[1] = t.nb[2] = t.nb[3] = n; t.buffer = b;
            t.data = static_cast<char *>(ggml_backend_buffer_get_base(b)) + off;
            if (n) ggml_backend_tensor_set(&t, data, 0, n);
            return out;
        }
        case Op::Download: {
            ggml_backend_buffer_t b = buffer(r.get<uint64_t>());
            const uint64_t off = r.get<uint64_t>(), n = r.get<uint64_t>();
            if (off + n > ggml_backend_buffer_get_size(b)) fail(ProbeStatus::BadRequest, "download past the end of the buffer");
            ggml_tensor t = {};
            t.type = GGML_TYPE_I8; t.ne[0] = int64_t(n); t.ne[1] = t.ne[2] = t.ne[3] = 1;
            t.nb[0] = 1; t.nb[1] = t.nb[2] = t.nb[3] = n; t.buffer = b;
            t.data = static_cast<char *>(ggml_backend_buffer_get_base(b)) + off;
            out.resize(n);
            if (n) ggml_backend_tensor_get(&t, out.data(), 0, n);
            return out;
        }
        case Op::Fill: {
            ggml_backend_buffer_t b = buffer(r.get<uint64_t>());
            ggml_backend_buffer_clear(b, r.get<uint8_t>());
            return out;
        }
        case Op::Quantize: {
            const uint64_t x = r.get<uint64_t>(), y = r.get<uint64_t>();
            const int k = r.get<int32_t>(), ncols = r.get<int32_t>();
            // Up to 64 columns: MUL_MAT_ID's down projection reads one column per expert a token uses.
            if (k <= 0 || k % 32 || ncols < 1 || ncols > 64) fail(ProbeStatus::BadRequest, "quantize: k must be a positive multiple of 32, ncols 1..64");
            // ggml pads each column to a multiple of 512 values; Temper's layout is k/32 blocks a column.
            const long long padded = (k + 511) / 512 * 512;
            const size_t col_bytes = size_t(k / 32) * 36, padded_col = size_t(padded / 32) * 36;
            void * tmp = nullptr;
            check_cuda(cudaMalloc(&tmp, padded_col * size_t(ncols)), "cudaMalloc");
            cudaStream_t stream = (cudaStream_t) temper_mmvq_last_stream();
            temper_mmvq_quantize_q8_1(static_cast<const float *>(ggml_backend_buffer_get_base(buffer(x))), tmp, GGML_TYPE_Q8_0, k, ncols, stream);
            char * dst = static_cast<char *>(ggml_backend_buffer_get_base(buffer(y)));
            for (int c = 0; c < ncols; ++c)
                check_cuda(cudaMemcpyAsync(dst + c * col_bytes, static_cast<char *>(tmp) + c * padded_col, col_bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
            // The engine's MUL_MAT takes the float activations: keep a private copy of x with y, since
            // the caller may free x once it holds the quantized blocks.
            const size_t x_bytes = size_t(k) * size_t(ncols) * 4;
            ggml_backend_buffer_t own = ggml_backend_buft_alloc_buffer(ggml_backend_get_default_buffer_type(g_backend), x_bytes + kSlack);
            if (!own) fail(ProbeStatus::EngineError, "out of device memory copying the activations");
            check_cuda(cudaMemcpyAsync(ggml_backend_buffer_get_base(own), ggml_backend_buffer_get_base(buffer(x)), x_bytes,
                                       cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
            ggml_backend_synchronize(g_backend);
            check_cuda(cudaDeviceSynchronize(), "quantize");
            const uint64_t own_handle = g_next_handle++;
            g_buffers[own_handle] = own;
            forget_quantized(y);
            g_quantized[y] = Quantized{own_handle, k, ncols, tmp};  // tmp stays: TimeKernel reads it
            return out;
        }
        case Op::Gemv: {
            const int type = r.get<int32_t>(), n = r.get<int32_t>(), k = r.get<int32_t>(), ncols = r.get<int32_t>();
            const int nwarps = r.get<int32_t>(), rows = r.get<int32_t>();
            const uint64_t w = r.get<uint64_t>(), y = r.get<uint64_t>(), dst = r.get<uint64_t>();
            const Quantized & q = quantized(y);
            if (q.k != k || q.ncols < ncols) fail(ProbeStatus::BadRequest, "gemv: activations do not match k/ncols");
            set_config(type, n, k, ncols, nwarps, rows);
            MulMatGraph g(type, n, k, ncols, {w}, q.x, dst);
            compute(g);
            temper_mmvq_set_override(type, n, k, ncols, 0, 0);
            return out;
        }
        case Op::Time: {
            const int type = r.get<int32_t>(), n = r.get<int32_t>(), k = r.get<int32_t>(), ncols = r.get<int32_t>();
            const int nwarps = r.get<int32_t>(), rows = r.get<int32_t>();
            const int groups = r.get<int32_t>(), per_group = r.get<int32_t>();
            const uint64_t y = r.get<uint64_t>(), dst = r.get<uint64_t>();
            const uint32_t copies = r.get<uint32_t>();
            if (groups < 1 || per_group < 1 || copies < 1) fail(ProbeStatus::BadRequest, "time: groups, per_group and copies must be positive");
            std::vector<uint64_t> ring(copies);
            for (auto & h : ring) h = r.get<uint64_t>();
            const Quantized & q = quantized(y);
            set_config(type, n, k, ncols, nwarps, rows);
            // One graph per distinct group of weights (the ring continues across groups).
            std::vector<std::unique_ptr<MulMatGraph>> graphs;
            std::vector<int> group_graph(groups);
            std::map<size_t, int> by_start;
            for (int g = 0; g < groups; ++g) {
                const size_t start = size_t(g) * size_t(per_group) % copies;
                auto it = by_start.find(start);
                if (it == by_start.end()) {
                    std::vector<uint64_t> ws(per_group);
                    for (int i = 0; i < per_group; ++i) ws[i] = ring[(start + size_t(i)) % copies];
                    graphs.push_back(std::make_unique<MulMatGraph>(type, n, k, ncols, ws, q.x, dst));
                    it = by_start.emplace(start, int(graphs.size()) - 1).first;
                }
                group_graph[g] = it->second;
            }
            for (const auto & g : graphs) compute(*g);  // warm-up, and proof that mmvq runs
            std::vector<ggml_cgraph *> order(static_cast<size_t>(groups));
            for (int g = 0; g < groups; ++g) order[size_t(g)] = graphs[size_t(group_graph[g])]->graph;
            out = time_groups(order, per_group);
            temper_mmvq_set_override(type, n, k, ncols, 0, 0);
            return out;
        }
        case Op::TimeKernel: return time_kernel(r);
        case Op::GemvLaunch: {
            const LaunchSpec s = launch_spec(r);
            const uint64_t w = r.get<uint64_t>(), y = r.get<uint64_t>(), ids = r.get<uint64_t>(), dst = r.get<uint64_t>();
            const Quantized & q = quantized(y);
            if (q.k != s.k || q.ncols < s.input_columns()) fail(ProbeStatus::BadRequest, "gemv_launch: activations do not match k/columns");
            set_config(s.type, s.n, s.k, s.ncols, s.nwarps, s.rows, s.launch);
            LaunchGraph g(s, {w}, 0, q.x, ids, dst);
            compute_launch(g, s, 1);
            temper_mmvq_set_override_launch(s.launch, s.type, s.n, s.k, s.ncols, 0, 0);
            return out;
        }
        case Op::TimeLaunch: return time_launch(r);
        case Op::HasKernel: {
            const int type = r.get<int32_t>(), ncols = r.get<int32_t>(), nwarps = r.get<int32_t>(), rows = r.get<int32_t>();
            put(out, uint8_t(temper_mmvq_has(type, ncols, nwarps, rows) ? 1 : 0));
            return out;
        }
        case Op::Attributes: {
            const int type = r.get<int32_t>(), ncols = r.get<int32_t>(), nwarps = r.get<int32_t>(), rows = r.get<int32_t>();
            int a[5];
            temper_mmvq_attributes(type, ncols, nwarps, rows, a);
            for (int v : a) put(out, int32_t(v));
            return out;
        }
        case Op::StockConfig: {
            const int type = r.get<int32_t>(), ncols = r.get<int32_t>(), k = r.get<int32_t>();
            const auto key = std::make_tuple(type, ncols, k);
            auto it = g_stock.find(key);
            if (it == g_stock.end()) {
                // Observe it: one stock MUL_MAT of 256 rows, and what mmvq launched for it.
                constexpr int n = 256;
                ggml_backend_buffer_t bw = ggml_backend_buft_alloc_buffer(ggml_backend_get_default_buffer_type(g_backend),
                                                                          ggml_row_size(ggml_type(type), k) * n + kSlack);
                ggml_backend_buffer_t bx = ggml_backend_buft_alloc_buffer(ggml_backend_get_default_buffer_type(g_backend), size_t(k) * ncols * 4 + kSlack);
                ggml_backend_buffer_t bd = ggml_backend_buft_alloc_buffer(ggml_backend_get_default_buffer_type(g_backend), size_t(n) * ncols * 4 + kSlack);
                if (!bw || !bx || !bd) fail(ProbeStatus::EngineError, "out of device memory");
                ggml_backend_buffer_clear(bw, 0);
                ggml_backend_buffer_clear(bx, 0);
                const uint64_t hw = g_next_handle++, hx = g_next_handle++, hd = g_next_handle++;
                g_buffers[hw] = bw; g_buffers[hx] = bx; g_buffers[hd] = bd;
                temper_mmvq_set_override(type, n, k, ncols, 0, 0);
                {
                    MulMatGraph g(type, n, k, ncols, {hw}, hx, hd);
                    compute(g);
                }
                int last[2];
                temper_mmvq_last_launch(last);
                for (uint64_t h : {hw, hx, hd}) { ggml_backend_buffer_free(g_buffers[h]); g_buffers.erase(h); }
                if (last[0] <= 0 || last[1] <= 0) fail(ProbeStatus::EngineError, "could not observe the stock launch");
                it = g_stock.emplace(key, std::make_pair(last[0], (n + last[1] - 1) / last[1])).first;
            }
            put(out, int32_t(it->second.first));
            put(out, int32_t(it->second.second));
            return out;
        }
        case Op::Bandwidth: {
            const uint64_t bytes = r.get<uint64_t>();
            void *a = nullptr, *b = nullptr;
            check_cuda(cudaMalloc(&a, bytes), "cudaMalloc");
            check_cuda(cudaMalloc(&b, bytes), "cudaMalloc");
            cudaEvent_t e0, e1;
            cudaEventCreate(&e0); cudaEventCreate(&e1);
            std::vector<double> gbs;
            for (int i = 0; i < 12; ++i) {
                cudaEventRecord(e0, 0);
                cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, 0);
                cudaEventRecord(e1, 0);
                check_cuda(cudaEventSynchronize(e1), "bandwidth copy");
                float ms = 0;
                cudaEventElapsedTime(&ms, e0, e1);
                if (i >= 2) gbs.push_back(2.0 * double(bytes) / (double(ms) * 1e6));
            }
            std::sort(gbs.begin(), gbs.end());
            cudaEventDestroy(e0); cudaEventDestroy(e1);
            cudaFree(a); cudaFree(b);
            put(out, gbs[gbs.size() / 2]);
            return out;
        }
        case Op::Replay: {
            const uint32_t tokens = r.get<uint32_t>();
            size_t n = 0;
            const char * text = r.rest(n);
            if (tokens < 1 || tokens > 100000) fail(ProbeStatus::BadRequest, "replay: tokens must be 1..100000");
            return replay(tokens, std::string(text, n));
        }
        case Op::Quit: exit(0);
    }
    fail(ProbeStatus::BadRequest, "unknown op " + std::to_string(uint32_t(op)));
}

}  // namespace

int main(int argc, char ** argv) {
    // Keep the protocol's stdout for ourselves; anything a library prints goes to stderr.
    g_out = dup(1);
    dup2(2, 1);
    for (int i = 1; i + 1 < argc; ++i)
        if (std::string(argv[i]) == "--device") g_device = atoi(argv[i + 1]);
    setenv("GGML_CUDA_DISABLE_GRAPHS", "1", 1);  // configs change between launches: no captured graph may replay an old one
    setenv("TEMPER_PROFILE", "", 1);            // the probe chooses configs itself
    temper_mmvq_load_profile("");
    g_backend = ggml_backend_cuda_init(g_device);
    if (!g_backend) { fprintf(stderr, "temper-probe: ggml_backend_cuda_init(%d) failed\n", g_device); return 4; }
    for (;;) {
        uint32_t head[2];
        if (!read_all(head, sizeof head)) return 0;
        std::string payload(head[1], '\0');
        if (head[1] && !read_all(payload.data(), head[1])) return 0;
        try {
            respond(ProbeStatus::Ok, serve(Op(head[0]), payload));
        } catch (const Failure & f) {
            respond(f.status, f.what);
        }
    }
}
