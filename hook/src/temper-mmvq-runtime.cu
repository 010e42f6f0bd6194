// Temper's tuning hook, run-time part (written into this tree by `temper engine patch`).
// Holds the compiled instantiations (filled by the generated registry), the probe's overrides and
// the profile's approved configs, and decides per launch whether mmvq runs a tuned instantiation.
// The profile is read once, at the first mmvq launch: TEMPER_PROFILE=path, else
// $XDG_CONFIG_HOME/temper/engine-profile.json (~/.config/... when unset). TEMPER_PROFILE set to an
// empty string disables loading. Reading and the rules are temper-mmvq-profile.h's (the same file
// Temper tests on the host against `temper profile validate`): a file that cannot be used is
// ignored with one line on stderr and the engine runs stock; otherwise one line per device says
// what the profile holds there.
#include "temper-mmvq.cuh"
#include "temper-mmvq-group.h"
#include "temper-mmvq-profile.h"
#if TEMPER_MMVQ_PATH_HOOKS & 1
#include "mmvq.cuh"  // ggml_cuda_should_use_mmvq: whether ggml runs a MUL_MAT as mmvq
#endif
#include "quantize.cuh"
#include "unary.cuh"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <strings.h>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_set>
#include <vector>

void temper_mmvq_register_all();  // generated: temper-mmvq-registry.cu

namespace {

constexpr int kTypes = 64;
// Temper's grid (kGridNwarps, kGridRowsPerBlock in its mmvq_traits.h); the generated units register
// the configs of it that can launch.
constexpr int kNwarps[] = {1, 2, 4, 8, 16, 32};
constexpr int kRows[] = {1, 2, 4, 8, 16};
constexpr int kNwarpsCount = sizeof(kNwarps) / sizeof(int), kRowsCount = sizeof(kRows) / sizeof(int);

// A measuring switch NAME=1|0: 1 or 0, -1 when unset or anything else.
int switch_from_env(const char * name) {
    const char * v = getenv(name);
    return v && (v[0] == '0' || v[0] == '1') && v[1] == '\0' ? v[0] - '0' : -1;
}

int nwarps_index(int w) { for (int i = 0; i < kNwarpsCount; ++i) if (kNwarps[i] == w) return i; return -1; }
int rows_index(int r) { for (int i = 0; i < kRowsCount; ++i) if (kRows[i] == r) return i; return -1; }

struct Instance { temper_mmvq_launch_fn launch = nullptr; temper_mmvq_attr_fn attr = nullptr; };
Instance g_instances[kTypes][9][kNwarpsCount][kRowsCount];
// Pipelined instantiations (hook v6): one column, NVIDIA; the bits the generated units compiled.
Instance g_pipelined[kTypes][kNwarpsCount][kRowsCount];
int g_pipeline_bits = 0;
// The probe's process-wide pipeline override: -1 none (the profile's *_pipelined entries decide), 0 off
// (none runs, whatever the profile says), 1 every tuned one-column launch that has a pipelined
// instantiation runs it. TEMPER_MMVQ_PIPELINE=1|0 sets it at the first launch, for experiments by hand.
std::atomic<int> g_pipeline_override{-1};
std::atomic<long long> g_pipelined_launches{0};
// Bias-only twins (hook v14): one column, NVIDIA; [type][nwarps][rows][0 plain, 1 pipelined]. A tuned launch
// whose fusion is a bias alone runs its twin (the plain launch's loop and registers, then the bias) unless
// TEMPER_MMVQ_BIAS_ONLY=0 (a measuring switch).
temper_mmvq_launch_fn g_bias_only[kTypes][kNwarpsCount][kRowsCount][2];
bool g_bias_only_on = true;
// Same-input group kernels (hook v5), filled once by the registry.
using GroupInstanceKey = std::tuple<int, int, int, int, int>;  // type A, type B, ncols, nwarps, rows
std::map<GroupInstanceKey, temper_mmvq_group_fn> g_group_instances;
// Fused expert gate/up kernels that also write the GLU output's q8_1 copy (hook v10), per type, nwarps, rows.
std::map<std::tuple<int, int, int>, temper_mmvq_experts_fn> g_experts_glu_q8_1;

// The launch kinds of Temper's profiles (docs/profile-format.md): what ggml launched mmvq for, and
// the fused gate/up kinds as the hook can run them unfused (gate and up as two plain launches).
using temper_profile::kMulMat;
using temper_profile::kMulMatGlu;
using temper_profile::kMulMatId;
using temper_profile::kMulMatIdGlu;
using temper_profile::kMulMatGluUnfused;
using temper_profile::kMulMatIdGluUnfused;
int launch_kind(const temper_mmvq_args & a) {
    const bool fused = a.fusion && a.fusion->gate;
    return a.ids ? (fused ? kMulMatIdGlu : kMulMatId) : (fused ? kMulMatGlu : kMulMat);
}

using ShapeKey = std::tuple<int, int, int, int, int>;  // launch kind, type, n, k, ncols
struct Choice { int nwarps, rows; };

std::mutex g_mutex;                                            // the probe's state; never held across I/O
std::map<ShapeKey, Choice> g_overrides;                        // the probe's
std::atomic<bool> g_any_override{false};                       // whether g_overrides holds any
std::atomic<int> g_last_kind{-1};
std::once_flag g_registered;
std::atomic<long long> g_launches{0}, g_tuned{0};
int g_last[2] = {0, 0};
void * g_last_stream = nullptr;
// The arguments of the last launch the probe's override chose, for kernel-only timing.
struct Captured { bool valid = false; int type = -1, ncols = 0; temper_mmvq_args args; ggml_cuda_mm_fusion_args_device fusion; };
Captured g_captured;

const Instance * find_instance(int type, int ncols, int nwarps, int rows) {
    const int wi = nwarps_index(nwarps), ri = rows_index(rows);
    if (type < 0 || type >= kTypes || ncols < 1 || ncols > 8 || wi < 0 || ri < 0) return nullptr;
    const Instance & in = g_instances[type][ncols][wi][ri];
    return in.launch ? &in : nullptr;
}

void ensure_registered() {
    std::call_once(g_registered, [] {
        temper_mmvq_register_all();
        if (const int e = switch_from_env("TEMPER_MMVQ_PIPELINE"); e >= 0) g_pipeline_override = e;
        g_bias_only_on = switch_from_env("TEMPER_MMVQ_BIAS_ONLY") != 0;
    });
}

// Launches a tuned config's instantiation `in` (pipelined or not), or its bias-only twin where the launch's
// fusion is a bias alone and the twin is compiled.
void launch_tuned(const Instance & in, int type, int ncols, int nwarps, int rows, bool pipelined, const temper_mmvq_args & a) {
    const ggml_cuda_mm_fusion_args_device * f = a.fusion;
    const bool bias_alone = f && f->x_bias && !f->gate && !f->gate_bias && !f->x_scale && !f->gate_scale;
    const int wi = nwarps_index(nwarps), ri = rows_index(rows);
    if (bias_alone && g_bias_only_on && ncols == 1 && type >= 0 && type < kTypes && wi >= 0 && ri >= 0) {
        if (temper_mmvq_launch_fn twin = g_bias_only[type][wi][ri][pipelined ? 1 : 0]) {
            twin(a);
            return;
        }
    }
    in.launch(a);
}

// The pipelined instantiation of a one-column launch of (type, nwarps, rows), when compiled.
const Instance * find_pipelined(int type, int ncols, int nwarps, int rows) {
    const int wi = nwarps_index(nwarps), ri = rows_index(rows);
    if (ncols != 1 || type < 0 || type >= kTypes || wi < 0 || ri < 0) return nullptr;
    const Instance & in = g_pipelined[type][wi][ri];
    return in.launch ? &in : nullptr;
}

// What the override asks of a tuned one-column launch: its pipelined instantiation, when compiled.
const Instance * pipelined_instance(int type, int ncols, int nwarps, int rows) {
    return g_pipeline_override.load() == 1 ? find_pipelined(type, ncols, nwarps, rows) : nullptr;
}

// ggml's types as the profile reader needs them: by name (case-insensitive), whether mmvq has a
// kernel for it (Temper's rule: quantized, but not the q8 activation types), its block size.
temper_profile::TypeFacts type_facts(const std::string & name) {
    temper_profile::TypeFacts f;
    for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
        const char * n = ggml_type_name((ggml_type) t);
        if (!n || strcasecmp(n, name.c_str()) != 0) continue;
        f.id = t;
        f.mmvq = ggml_is_quantized((ggml_type) t) && t != GGML_TYPE_Q8_1 && t != GGML_TYPE_Q8_K;
        f.block = (int) ggml_blck_size((ggml_type) t);
        break;
    }
    return f;
}

bool compiled_in(int launch, int type, int ncols, int nwarps, int rows);

temper_profile::Loader g_profile(type_facts, [](const std::string & l) { std::fprintf(stderr, "%s\n", l.c_str()); },
                                 TEMPER_MMVQ_PATH_HOOKS, compiled_in);

// What identifies a device for its own profile entries: arch, name, compute units.
temper_profile::Device device_id(int device) {
    temper_profile::Device id;
    id.index = device;
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) { id.arch = "unknown"; return id; }
#if defined(GGML_USE_HIP)
    id.arch = prop.gcnArchName;
    id.arch = id.arch.substr(0, id.arch.find(':'));
#else
    id.arch = "sm_" + std::to_string(prop.major * 10 + prop.minor);
#endif
    id.name = prop.name;
    id.compute_units = prop.multiProcessorCount;
    return id;
}

// For a mul_mat_group entry (whose type is one of its group's): any group kernel with that type at that config;
// for an rms_norm_q8_1 or glu_q8_1 entry: whether this tree was patched for it.
bool compiled_in(int launch, int type, int ncols, int nwarps, int rows) {
    // this tree's graph evaluation (it tracks the node evaluated) and mmvq (it reads the copy) carry it
    if (temper_profile::launch_writes_q8(launch)) return (TEMPER_MMVQ_NORM_HOOKS & 3) == 3;
    if (temper_profile::launch_is_pipelined(launch)) return find_pipelined(type, ncols, nwarps, rows) != nullptr;
    if (launch != temper_profile::kMulMatGroup) return find_instance(type, ncols, nwarps, rows) != nullptr;
    for (const auto & [key, fn] : g_group_instances)
        if ((std::get<0>(key) == type || std::get<1>(key) == type) && std::get<2>(key) == ncols && std::get<3>(key) == nwarps &&
            std::get<4>(key) == rows)
            return true;
    return false;
}

// A device as the profile knows it (looked up once per thread and device).
const temper_profile::Device & device_of(int device) {
    static thread_local int cached_device = -1;
    static thread_local temper_profile::Device cached_id;
    if (device != cached_device) { cached_id = device_id(device); cached_device = device; }
    return cached_id;
}

const temper_profile::Device & current_device() { return device_of(ggml_cuda_get_device()); }

// ---- the mmvq/mmq choice (hook v4) ----
using PathOverrideKey = std::tuple<int, int, int>;  // launch kind, type, ncols
std::map<PathOverrideKey, int> g_path_overrides;     // the probe's (under g_mutex)
std::atomic<bool> g_any_path_override{false};       // whether g_path_overrides holds any
std::atomic<unsigned> g_path_generation{0};         // bumped when the probe's paths or the profile change
std::atomic<long long> g_path_changes{0};

bool mmvq_type(int type) {
    return type >= 0 && type < GGML_TYPE_COUNT && ggml_is_quantized((ggml_type) type) && type != GGML_TYPE_Q8_1 && type != GGML_TYPE_Q8_K;
}

// Whether the probe or the profile chose any path at all. ggml asks at every graph it checks
// (MUL_MAT_ID's cap, once per decode token and expert launch): without one the answer needs no lock
// and no device query.
bool any_path_choice() { return g_any_path_override.load() || g_profile.any_paths(); }

// The probe's path for (launch, type, ncols), else the profile's for this device; kNoPath: ggml's own.
int path_choice(int launch, int type, int ncols) {
    if (g_any_path_override.load()) {
        std::lock_guard<std::mutex> lock(g_mutex);
        if (auto it = g_path_overrides.find(PathOverrideKey{launch, type, ncols}); it != g_path_overrides.end()) return it->second;
    }
    if (!g_profile.any_paths()) return temper_profile::kNoPath;
    return g_profile.path(current_device(), compiled_in, launch, type, ncols);
}

// ---- same-input groups (hook v5) ----
std::atomic<Choice> g_group_override{Choice{0, 0}};  // the probe's; nwarps -1: off. Lock-free: read at every MUL_MAT node
std::atomic<long long> g_group_launches{0};

// TEMPER_MMVQ_GROUP=W,R: every group at that config (a measuring switch; the profile is the way to
// ask). {0, 0} when unset or unreadable.
Choice env_group() {
    static const Choice c = [] {
        Choice e{0, 0};
        const char * v = getenv("TEMPER_MMVQ_GROUP");
        if (v && std::sscanf(v, "%d,%d", &e.nwarps, &e.rows) != 2) e = Choice{0, 0};
        return e;
    }();
    return c;
}

// ggml's concurrent streams (GGML_CUDA_GRAPH_OPT=1) reorder the graph themselves: groups stay off then.
bool groups_possible() {
    static const bool ok = [] {
        const char * v = getenv("GGML_CUDA_GRAPH_OPT");
        return (TEMPER_MMVQ_GROUP_HOOKS & 3) == 3 && !(v && std::atoi(v) == 1);
    }();
    return ok;
}

// Whether anything may ask for a group on `device`: the probe, the env switch or the profile.
bool groups_wanted(int device) {
    if (!groups_possible()) return false;
    ensure_registered();
    if (const Choice o = g_group_override.load(); o.nwarps != 0) return o.nwarps > 0;
    return env_group().nwarps > 0 || g_profile.has_groups(device_of(device));
}

bool is_fusable_consumer(ggml_op op) { return op == GGML_OP_ADD || op == GGML_OP_ADD_ID || op == GGML_OP_MUL || op == GGML_OP_GLU; }

// A MUL_MAT ggml would run as mmvq on plain quantized weights at batch width 1..4 (graph order only:
// the launch checks the rest).
bool order_candidate(const ggml_tensor * t) {
    if (t->op != GGML_OP_MUL_MAT) return false;
    const ggml_tensor * w = t->src[0], * x = t->src[1];
    return w && x && w->op == GGML_OP_NONE && mmvq_type(w->type) && x->type == GGML_TYPE_F32 && t->type == GGML_TYPE_F32 &&
           x->ne[1] >= 1 && x->ne[1] <= 4 && x->ne[2] == 1 && x->ne[3] == 1 && w->ne[2] == 1 && w->ne[3] == 1;
}

// One member of a group launch: everything ggml checks before it runs this MUL_MAT as mmvq.
bool group_member(const ggml_backend_cuda_context & ctx, const ggml_tensor * t, const ggml_tensor * leader) {
    if (!order_candidate(t) || ggml_is_empty(t) || (t->flags & GGML_TENSOR_FLAG_COMPUTE) == 0) return false;
    const ggml_tensor * w = t->src[0], * x = t->src[1];
    if (leader && (x != leader->src[1] || w->ne[0] != leader->src[0]->ne[0])) return false;
    if (ggml_get_op_params_i32(t, 1) != 0) return false;  // a hint ggml acts on (e.g. a Hadamard src0)
    if (!w->buffer || ggml_backend_buffer_get_type(w->buffer) != ggml_backend_cuda_buffer_type(ctx.device)) return false;  // split, host
    if (ggml_backend_buffer_get_usage(w->buffer) == GGML_BACKEND_BUFFER_USAGE_COMPUTE) return false;
    if (!ggml_is_contiguous(w) || !ggml_is_contiguous(x) || !ggml_is_contiguous(t) || w->ne[0] % ggml_blck_size(w->type) != 0) return false;
#if TEMPER_MMVQ_PATH_HOOKS & 1
    const int cc = ggml_cuda_info().devices[ctx.device].cc;
    return ggml_cuda_should_use_mmvq(w->type, cc, x->ne[1]);  // the hook's own choice included
#else
    return x->ne[1] == 1;  // a ggml deciding inline (7180759): one column always runs mmvq
#endif
}

temper_mmvq_group_fn find_group(int type_a, int type_b, int ncols, Choice c, bool & swapped) {
    swapped = false;
    if (auto it = g_group_instances.find(GroupInstanceKey{type_a, type_b, ncols, c.nwarps, c.rows}); it != g_group_instances.end()) return it->second;
    if (type_a == type_b) return nullptr;
    auto it = g_group_instances.find(GroupInstanceKey{type_b, type_a, ncols, c.nwarps, c.rows});
    if (it == g_group_instances.end()) return nullptr;
    swapped = true;  // the pair was compiled the other way round: B's members are its A
    return it->second;
}

}  // namespace

void temper_mmvq_register_experts_glu_q8_1(int type, int nwarps, int rows, temper_mmvq_experts_fn launch) {
    g_experts_glu_q8_1[{type, nwarps, rows}] = launch;
}

void temper_mmvq_register_group(int type_a, int type_b, int ncols, int nwarps, int rows, temper_mmvq_group_fn launch) {
    g_group_instances[GroupInstanceKey{type_a, type_b, ncols, nwarps, rows}] = launch;
}

void temper_mmvq_group_order(int device, ggml_cgraph * cgraph) {
    if (!groups_wanted(device)) return;
    const int n = cgraph->n_nodes;
    // MUL_MATs ggml may fuse with what consumes them (a bias, the gate/up GLU: mmvq fuses at one column
    // only) stay where they are.
    std::unordered_set<const ggml_tensor *> fused;
    for (int i = 0; i < n; ++i)
        if (is_fusable_consumer(cgraph->nodes[i]->op))
            for (const ggml_tensor * s : cgraph->nodes[i]->src)
                if (s && s->op == GGML_OP_MUL_MAT && s->ne[1] == 1) fused.insert(s);
    auto movable = [&](const ggml_tensor * t) { return order_candidate(t) && !fused.count(t); };
    // Each run's members move up to just after its first MUL_MAT: always a valid order, a member's
    // inputs being a weight and the first one's activations.
    constexpr int kWindow = 64;
    std::vector<ggml_tensor *> order;
    order.reserve(n);
    std::vector<char> placed(n, 0);
    for (int i = 0; i < n; ++i) {
        if (placed[i]) continue;
        ggml_tensor * lead = cgraph->nodes[i];
        order.push_back(lead);
        placed[i] = 1;
        if (!movable(lead)) continue;
        int count = 1;
        for (int j = i + 1; j < n && j <= i + kWindow && count < 4; ++j) {
            ggml_tensor * t = cgraph->nodes[j];
            if (placed[j] || !movable(t) || t->src[1] != lead->src[1] || t->src[0]->ne[0] != lead->src[0]->ne[0]) continue;
            order.push_back(t);
            placed[j] = 1;
            ++count;
        }
    }
    std::copy(order.begin(), order.end(), cgraph->nodes);
}

int temper_mmvq_try_group(ggml_backend_cuda_context & ctx, ggml_cgraph * cgraph, int i) {
    const ggml_tensor * lead = cgraph->nodes[i];
    if (lead->op != GGML_OP_MUL_MAT || !groups_possible()) return 0;
    ensure_registered();
    Choice c = g_group_override.load();
    if (c.nwarps < 0) return 0;
    if (c.nwarps == 0) c = env_group();
    if (c.nwarps == 0 && !g_profile.has_groups(device_of(ctx.device))) return 0;  // nothing asks: the cheap way out (no lock without a profile)
    if (!group_member(ctx, lead, nullptr)) return 0;
    int count = 1;
    while (count < 4 && i + count < cgraph->n_nodes && group_member(ctx, cgraph->nodes[i + count], lead)) ++count;
    if (count < 2) return 0;
    // At one column ggml fuses a MUL_MAT with the node after it (a bias add, the gate/up GLU): such a
    // run is not ours. From two columns on mmvq fuses nothing, and an unfused gate/up pair is a run.
    if (i + count < cgraph->n_nodes && lead->src[1]->ne[1] == 1) {
        const ggml_tensor * next = cgraph->nodes[i + count];
        if (is_fusable_consumer(next->op))
            for (const ggml_tensor * s : next->src)
                for (int m = 0; m < count; ++m)
                    if (s && s == cgraph->nodes[i + m]) return 0;
    }
    const int type_a = lead->src[0]->type;
    int type_b = type_a;
    temper_profile::GroupKey key{};
    key.ncols = (int) lead->src[1]->ne[1];
    key.k = (int) lead->src[0]->ne[0];
    key.count = count;
    for (int m = 0; m < count; ++m) {
        const ggml_tensor * w = cgraph->nodes[i + m]->src[0];
        key.type[m] = w->type;
        key.n[m] = (int) w->ne[1];
        if (w->type != type_a) {
            if (type_b != type_a && w->type != type_b) return 0;  // at most two types
            type_b = w->type;
        }
    }
    if (c.nwarps == 0) {
        temper_profile::Config pc;
        if (!g_profile.group(device_of(ctx.device), key, &pc)) return 0;
        c = Choice{pc.nwarps, pc.rows};
    }
    bool swapped = false;
    const temper_mmvq_group_fn launch = find_group(type_a, type_b, key.ncols, c, swapped);
    if (!launch) return 0;

    cudaStream_t stream = ctx.stream();
    const ggml_tensor * x = lead->src[1];
    const int64_t k = x->ne[0], ncols = x->ne[1], k_padded = GGML_PAD(k, MATRIX_ROW_PADDING);
    ggml_cuda_pool_alloc<char> q8(ctx.pool());
    const void * vy = temper_mmvq_norm_q8_1(x, k_padded);  // the norm's copy, when it wrote one (hook v8)
    if (!vy) {
        q8.alloc(ncols * k_padded * sizeof(block_q8_1) / QK8_1);
        const int64_t s1 = x->nb[1] / sizeof(float), s2 = x->nb[2] / sizeof(float), s3 = x->nb[3] / sizeof(float);
        quantize_row_q8_1_cuda((const float *) x->data, nullptr, q8.get(), (ggml_type) type_a, k, s1, s2, s3, k_padded, ncols, 1, 1, stream);
        vy = q8.get();
    }

    temper_mmvq_group_args g{};
    for (int m = 0; m < count; ++m) {
        const ggml_tensor * t = cgraph->nodes[i + m];
        const ggml_tensor * w = t->src[0];
        g.vx[m] = w->data;
        g.dst[m] = (float *) t->data;
        g.nrows[m] = (int) w->ne[1];
        g.stride_row_x[m] = (uint32_t) (w->nb[1] / ggml_type_size(w->type));
        g.stride_col_dst[m] = (uint32_t) (t->nb[1] / sizeof(float));
        g.is_b[m] = (w->type != type_a) != swapped;
    }
    g.count = count;
    g.vy = vy;
    g.ncols_x = (uint32_t) k;
    g.stride_col_y = (uint32_t) (k_padded / QK8_1);
    g.warp_size = ggml_cuda_info().devices[ctx.device].warp_size;
    g.stream = stream;
    launch(g);
    g_last_stream = (void *) stream;
    g_launches += count;  // each member counts as the MUL_MAT it replaces; group launches are counted apart
    g_tuned += count;
    ++g_group_launches;
    return count;
}

void temper_mmvq_register(int type, int ncols, int nwarps, int rows, temper_mmvq_launch_fn launch, temper_mmvq_attr_fn attr) {
    const int wi = nwarps_index(nwarps), ri = rows_index(rows);
    if (type < 0 || type >= kTypes || ncols < 1 || ncols > 8 || wi < 0 || ri < 0) return;
    g_instances[type][ncols][wi][ri] = Instance{launch, attr};
}

void temper_mmvq_register_bias_only(int type, int nwarps, int rows, int pipe, temper_mmvq_launch_fn launch) {
    const int wi = nwarps_index(nwarps), ri = rows_index(rows);
    if (type < 0 || type >= kTypes || wi < 0 || ri < 0) return;
    g_bias_only[type][wi][ri][pipe != 0 ? 1 : 0] = launch;
}

void temper_mmvq_register_pipelined(int type, int ncols, int nwarps, int rows, int pipe, temper_mmvq_launch_fn launch,
                                    temper_mmvq_attr_fn attr) {
    const int wi = nwarps_index(nwarps), ri = rows_index(rows);
    if (pipe <= 0 || type < 0 || type >= kTypes || ncols != 1 || wi < 0 || ri < 0) return;
    g_pipelined[type][wi][ri] = Instance{launch, attr};
    g_pipeline_bits |= pipe;
}

// up · act(gate) for the unfused pair, with ggml's own activations; dst as the fused launch writes it
// (rows of each channel, channels stride_channel_dst apart, one column).
__global__ void temper_glu(const float * gate, const float * up, float * dst, int rows, int channels, int stride_channel, int geglu) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * channels) return;
    const int at = (i / rows) * stride_channel + i % rows;
    const float g = gate[at];
    dst[at] = up[at] * (geglu ? ggml_cuda_op_gelu_single(g) : ggml_cuda_op_silu_single(g));
}

bool capturing(cudaStream_t stream) {
#if defined(GGML_USE_HIP)
    hipStreamCaptureStatus status;
    return hipStreamIsCapturing(stream, &status) != hipSuccess || status != hipStreamCaptureStatusNone;
#else
    cudaStreamCaptureStatus status;
    return cudaStreamIsCapturing(stream, &status) != cudaSuccess || status != cudaStreamCaptureStatusNone;
#endif
}

// Device memory of the hook's own, grown only outside a graph capture (a captured graph keeps the
// address it saw).
struct GrowBuffer { void * p = nullptr; size_t bytes = 0; };

// `b` holding at least `need` bytes (a new one at least `floor`); false (nothing to write into) when it
// must grow during a capture or cannot.
bool reserve(GrowBuffer & b, size_t need, cudaStream_t stream, size_t floor = 0) {
    if (b.bytes >= need) return true;
    if (capturing(stream)) return false;
    if (b.p) CUDA_CHECK(cudaFree(b.p));
    b = GrowBuffer{};
    const size_t bytes = std::max(need, floor);
    if (cudaMalloc(&b.p, bytes) != cudaSuccess) { b.p = nullptr; (void) cudaGetLastError(); return false; }
    b.bytes = bytes;
    return true;
}

GrowBuffer g_scratch[64];  // the pair's gate and up results, per device

// Hook v9: the pair's GLU also writes the q8_1 copy its down GEMV reads, when asked; false: not asked,
// not possible here, or no reader (the plain GLU runs).
bool glu_writes_q8_1(int device, const float * gate, const float * up, const temper_mmvq_args & a, bool geglu);
// Hook v10: a fused expert gate/up (one column) as one kernel that also writes its GLU output's q8_1
// copy, when asked; false: not asked, not possible here, or no reader (the launch goes on as it would).
bool experts_glu_writes_q8_1(int type, Choice c, const temper_mmvq_args & a);

std::atomic<long long> g_pair_group_launches{0};

// Hook v9: both GEMVs of an unfused pair (one column, plain weights: no experts) as one same-input group
// launch, when the profile has a mul_mat_group entry of exactly these two members (the group kernel
// computes what mmvq does at the same config, bit for bit); false: none, the two launches run.
bool pair_as_group(int device, int type, const temper_mmvq_args & a, float * gate, float * up) {
    if (a.ids || a.nchannels_dst != 1 || a.nsamples_dst != 1 || !g_profile.any() || !groups_possible()) return false;
    temper_profile::GroupKey key{};
    key.ncols = 1;
    key.k = (int) a.ncols_x;
    key.count = 2;
    key.type[0] = key.type[1] = type;
    key.n[0] = key.n[1] = a.nrows_x;
    temper_profile::Config pc;
    if (!g_profile.group(device_of(device), key, &pc)) return false;
    bool swapped = false;
    const temper_mmvq_group_fn launch = find_group(type, type, 1, Choice{pc.nwarps, pc.rows}, swapped);
    if (!launch) return false;
    temper_mmvq_group_args g{};
    g.vx[0] = a.fusion->gate;
    g.dst[0] = gate;
    g.vx[1] = a.vx;
    g.dst[1] = up;
    for (int m = 0; m < 2; ++m) {
        g.nrows[m] = a.nrows_x;
        g.stride_row_x[m] = a.stride_row_x;
        g.stride_col_dst[m] = a.stride_col_dst;
        g.is_b[m] = 0;
    }
    g.count = 2;
    g.vy = a.vy;
    g.ncols_x = a.ncols_x;
    g.stride_col_y = a.stride_col_y;
    g.warp_size = a.warp_size;
    g.stream = a.stream;
    launch(g);
    ++g_pair_group_launches;
    return true;
}

// A fused gate/up launch run as its unfused pair: the gate and the up GEMV through the plain
// instantiation `in`, on the activations the engine quantized once, then the GLU into dst. False
// (nothing launched: the fused launch goes on as it would) for what the pair does not carry —
// biases, scales, GLU ops other than SwiGLU and GeGLU, samples — or when scratch cannot be had.
bool launch_unfused(const Instance & in, int type, const temper_mmvq_args & a) {
    const ggml_cuda_mm_fusion_args_device & f = *a.fusion;
    if (f.x_bias || f.gate_bias || f.x_scale || f.gate_scale || a.nsamples_dst != 1) return false;
    if (f.glu_op != GGML_GLU_OP_SWIGLU && f.glu_op != GGML_GLU_OP_GEGLU) return false;
    const size_t span = size_t(a.nchannels_dst - 1) * a.stride_channel_dst + size_t(a.nrows_x);
    const size_t need = 2 * span * sizeof(float);
    const int device = ggml_cuda_get_device();
    if (device < 0 || device >= 64) return false;
    GrowBuffer & s = g_scratch[device];
    if (!reserve(s, need, a.stream)) return false;
    float * gate = static_cast<float *>(s.p), * up = gate + span;
    const ggml_cuda_mm_fusion_args_device none{};
    temper_mmvq_args g = a, u = a;
    g.vx = f.gate; g.fusion = &none; g.dst = gate;
    u.fusion = &none; u.dst = up;
    if (!pair_as_group(device, type, a, gate, up)) {
        in.launch(g);
        in.launch(u);
    }
    const bool geglu = f.glu_op == GGML_GLU_OP_GEGLU;
    if (glu_writes_q8_1(device, gate, up, a, geglu)) return cudaGetLastError() == cudaSuccess;
    const int total = a.nrows_x * a.nchannels_dst;
    temper_glu<<<(total + 255) / 256, 256, 0, a.stream>>>(gate, up, a.dst, a.nrows_x, a.nchannels_dst, (int) a.stride_channel_dst, geglu);
    return cudaGetLastError() == cudaSuccess;
}

// ---- producers that write the q8_1 activations of their GEMVs (hook v8: the norm; v9: the GLU) ----
// An RMS_NORM·MUL whose output feeds mmvq GEMVs (a layer's q, k, v; its gate/up or experts) runs as
// one kernel that writes the MUL's output as ggml's fused norm does and also its q8_1 copy, in the
// padded layout mmvq's quantizer writes; those GEMVs read the copy instead of quantizing again. The
// norm's arithmetic is ggml's (same block size, same reduction, same expression order) and so is the
// quantization (the warp reductions of quantize_q8_1), so every bit of the outputs is as stock.
// Likewise the unfused gate/up pair's GLU writes the q8_1 copy of its output for the down GEMV.
namespace {

enum Producer { kNormCopy = 0, kGluCopy = 1, kProducers = 2 };
std::atomic<int> g_q8_override[kProducers] = {-1, -1};  // the probe's, per producer: -1 none, 0 off, 1 on
std::atomic<long long> g_norm_launches{0}, g_glu_launches{0}, g_q8_reads{0};

// Per device: the graph evaluation's place (set at every node by temper_mmvq_try_norm), and per
// producer the q8_1 copy it wrote last with the node range in which a MUL_MAT reading the producer's
// output may read the copy (after the producer, up to its last reader; none of them writes the output).
struct Evaluation { const ggml_cgraph * graph = nullptr; int at = -1; };
struct Q8Copy {
    GrowBuffer buffer;
    const ggml_cgraph * graph = nullptr; int from = -1, last = -1;
    const void * data = nullptr; int64_t elements = 0, k_padded = 0;
};
Evaluation g_evaluation[64];
Q8Copy g_q8_copy[64][kProducers];

// Whether producer `p` writes its copy for rows of k floats at ncols columns: the probe's override,
// else the measuring switch (TEMPER_MMVQ_NORM_Q8, TEMPER_MMVQ_GLU_Q8), else the profile's entry.
bool q8_wanted(Producer p, int device, int64_t k, int64_t ncols) {
    static const int env[kProducers] = {switch_from_env("TEMPER_MMVQ_NORM_Q8"), switch_from_env("TEMPER_MMVQ_GLU_Q8")};
    if (const int o = g_q8_override[p].load(); o >= 0) return o == 1;
    if (env[p] >= 0) return env[p] == 1;
    return g_profile.writes_q8(p == kNormCopy ? temper_profile::kRmsNormQ8 : temper_profile::kGluQ8, device_of(device), compiled_in, k,
                               ncols);
}

bool view_or_noop(const ggml_tensor * t) {
    return ggml_is_empty(t) || t->op == GGML_OP_NONE || t->op == GGML_OP_RESHAPE || t->op == GGML_OP_VIEW ||
           t->op == GGML_OP_PERMUTE || t->op == GGML_OP_TRANSPOSE;
}

bool overlaps(const ggml_tensor * t, const char * lo, const char * hi) {
    const char * a = (const char *) t->data;
    return a && a < hi && a + ggml_nbytes(t) > lo;
}

// The last node after `from` that is a MUL_MAT on quantized weights reading all of `out` (the producer's
// output) before any node writes into it; -1 when none does.
int last_q8_reader(const ggml_cgraph * cgraph, int from, const ggml_tensor * out) {
    const char * lo = (const char *) out->data, * hi = lo + ggml_nbytes(out);
    int last = -1;
    for (int j = from + 1; j < cgraph->n_nodes && j <= from + 128; ++j) {
        const ggml_tensor * t = cgraph->nodes[j];
        if ((t->op == GGML_OP_MUL_MAT || t->op == GGML_OP_MUL_MAT_ID) && t->src[1] && t->src[1]->data == out->data &&
            ggml_nelements(t->src[1]) == ggml_nelements(out) && ggml_is_contiguous(t->src[1]) && mmvq_type(t->src[0]->type))
            last = j;
        if (!view_or_noop(t) && overlaps(t, lo, hi)) break;
    }
    return last;
}

constexpr size_t kQ8CopyFloor = size_t(1) << 20;  // every copy of a model's rows fits: no regrowth

void publish(Q8Copy & c, const ggml_cgraph * cgraph, int from, int last, const ggml_tensor * out, int64_t k_padded) {
    c.graph = cgraph;
    c.from = from;
    c.last = last;
    c.data = out->data;
    c.elements = ggml_nelements(out);
    c.k_padded = k_padded;
}

#if (TEMPER_MMVQ_NORM_HOOKS & 3) == 3
template <int block_size>
__global__ void temper_rms_norm_q8_1(const float * x, float * dst, const float * mul, block_q8_1 * y, const int ncols,
                                     const int k_padded, const int64_t stride_row, const float eps) {
    ggml_cuda_pdl_lc();
    const int row = blockIdx.x, tid = threadIdx.x;
    x += row * stride_row;
    dst += (int64_t) row * ncols;
    y += (int64_t) row * (k_padded / QK8_1);
    float tmp = 0.0f;
    ggml_cuda_pdl_sync();
    for (int col = tid; col < ncols; col += block_size) {
        const float xi = x[col];
        tmp += xi * xi;
    }
    extern __shared__ float s_sum[];
    tmp = block_reduce<block_reduce_method::SUM, block_size>(tmp, s_sum);
    const float mean = tmp / ncols;
    const float scale = rsqrtf(mean + eps);
    // A warp holds 32 consecutive columns (block_size and k_padded are multiples of 32): one q8_1 block.
    for (int col = tid; col < k_padded; col += block_size) {
        float v = 0.0f;
        if (col < ncols) {
            v = scale * x[col] * mul[col];
            dst[col] = v;
        }
        temper_store_q8_1(y, col, v);
    }
}

// temper_glu over a contiguous dst (channels of `rows` floats) that also writes its q8_1 copy: one
// thread per padded column, so that each warp holds one q8_1 block of one channel.
__global__ void temper_glu_q8_1(const float * gate, const float * up, float * dst, block_q8_1 * y, int rows, int k_padded, int geglu) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int channel = i / k_padded, col = i % k_padded;
    float v = 0.0f;
    if (col < rows) {
        const int at = channel * rows + col;
        const float g = gate[at];
        v = up[at] * (geglu ? ggml_cuda_op_gelu_single(g) : ggml_cuda_op_silu_single(g));
        dst[at] = v;
    }
    temper_store_q8_1(y + (int64_t) channel * (k_padded / QK8_1), col, v);
}
#endif

}  // namespace

#if (TEMPER_MMVQ_NORM_HOOKS & 3) == 3
namespace {
// The GLU's copy for a gate/up launch that writes a.dst (one column, channels of contiguous rows): the
// fused run's GLU node, its last mmvq reader and a buffer for the copy, when the copy is asked for and
// read; null otherwise.
Q8Copy * glu_copy(int device, const temper_mmvq_args & a, int & glu, int & last, int64_t & k_padded) {
    if (device < 0 || device >= 64) return nullptr;
    const Evaluation & e = g_evaluation[device];
    if (!e.graph || !groups_possible() || a.stride_channel_dst != (uint32_t) a.nrows_x || !q8_wanted(kGluCopy, device, a.nrows_x, 1))
        return nullptr;
    glu = -1;
    for (int j = e.at; j >= 0 && j < e.graph->n_nodes && j <= e.at + 3; ++j)
        if (e.graph->nodes[j]->op == GGML_OP_GLU && e.graph->nodes[j]->data == a.dst) glu = j;
    if (glu < 0) return nullptr;
    const ggml_tensor * out = e.graph->nodes[glu];
    if (!ggml_is_contiguous(out) || ggml_nelements(out) != (int64_t) a.nrows_x * a.nchannels_dst) return nullptr;
    last = last_q8_reader(e.graph, glu, out);
    if (last < 0) return nullptr;
    k_padded = GGML_PAD(a.nrows_x, MATRIX_ROW_PADDING);
    Q8Copy & c = g_q8_copy[device][kGluCopy];
    if (!reserve(c.buffer, (size_t) a.nchannels_dst * k_padded / QK8_1 * sizeof(block_q8_1), a.stream, kQ8CopyFloor)) return nullptr;
    return &c;
}
}  // namespace
#endif

bool glu_writes_q8_1(int device, const float * gate, const float * up, const temper_mmvq_args & a, bool geglu) {
#if (TEMPER_MMVQ_NORM_HOOKS & 3) == 3
    int glu = -1, last = -1;
    int64_t k_padded = 0;
    Q8Copy * c = glu_copy(device, a, glu, last, k_padded);
    if (!c) return false;
    const int total = (int) (a.nchannels_dst * k_padded);  // a multiple of 256: no warp is partial
    temper_glu_q8_1<<<total / 256, 256, 0, a.stream>>>(gate, up, a.dst, (block_q8_1 *) c->buffer.p, a.nrows_x, (int) k_padded, geglu);
    publish(*c, g_evaluation[device].graph, glu, last, g_evaluation[device].graph->nodes[glu], k_padded);
    ++g_glu_launches;
    return true;
#else
    GGML_UNUSED_VARS(device, gate, up, a, geglu);
    return false;
#endif
}

GrowBuffer g_arrived[64];  // the experts' GLU kernel's counters, per device: all 0 between its launches

bool experts_glu_writes_q8_1(int type, Choice choice, const temper_mmvq_args & a) {
#if (TEMPER_MMVQ_NORM_HOOKS & 3) == 3
    const ggml_cuda_mm_fusion_args_device & f = *a.fusion;
    if (!a.ids || f.x_bias || f.gate_bias || f.x_scale || f.gate_scale || a.nsamples_dst != 1) return false;
    if (f.glu_op != GGML_GLU_OP_SWIGLU && f.glu_op != GGML_GLU_OP_GEGLU) return false;
    // The launch's config where the group grid has it, else mmvq's own one-column config (4 warps, a row).
    auto kernel = g_experts_glu_q8_1.find({type, choice.nwarps, choice.rows});
    if (kernel == g_experts_glu_q8_1.end()) kernel = g_experts_glu_q8_1.find({type, 4, 1});
    if (kernel == g_experts_glu_q8_1.end()) return false;
    const int device = ggml_cuda_get_device();
    int glu = -1, last = -1;
    int64_t k_padded = 0;
    Q8Copy * c = glu_copy(device, a, glu, last, k_padded);
    if (!c) return false;
    GrowBuffer & counters = g_arrived[device];
    const size_t need = (size_t) a.nchannels_dst * k_padded / QK8_1 * sizeof(int);
    if (counters.bytes < need) {
        if (!reserve(counters, need, a.stream, kQ8CopyFloor / 8)) return false;
        if (cudaMemsetAsync(counters.p, 0, counters.bytes, a.stream) != cudaSuccess) { (void) cudaGetLastError(); return false; }
    }
    kernel->second(a, c->buffer.p, (int *) counters.p, (int) k_padded, f.glu_op == GGML_GLU_OP_GEGLU);
    publish(*c, g_evaluation[device].graph, glu, last, g_evaluation[device].graph->nodes[glu], k_padded);
    ++g_glu_launches;
    return true;
#else
    GGML_UNUSED_VARS(type, choice, a);
    return false;
#endif
}

int temper_mmvq_try_norm(ggml_backend_cuda_context & ctx, ggml_cgraph * cgraph, int i) {
#if (TEMPER_MMVQ_NORM_HOOKS & 3) == 3
    if (ctx.device < 0 || ctx.device >= 64) return 0;
    g_evaluation[ctx.device] = Evaluation{cgraph, i};
    for (Q8Copy & c : g_q8_copy[ctx.device])
        if (c.graph && (c.graph != cgraph || i <= c.from || i > c.last)) c.graph = nullptr;  // the copy is out of reach
    const ggml_tensor * norm = cgraph->nodes[i];
    if (norm->op != GGML_OP_RMS_NORM || i + 1 >= cgraph->n_nodes || !groups_possible()) return 0;
    ensure_registered();
    const ggml_tensor * mul = cgraph->nodes[i + 1], * x = norm->src[0], * w = mul->src[1];
    const int64_t k = x->ne[0], rows = x->ne[1];
    if (!q8_wanted(kNormCopy, ctx.device, k, rows)) return 0;
    if (!ggml_can_fuse(cgraph, i, {GGML_OP_RMS_NORM, GGML_OP_MUL})) return 0;
    // What this kernel covers: the norm as mul's first operand, one weight row, rows of one channel.
    if (mul->src[0] != norm || x->type != GGML_TYPE_F32 || w->type != GGML_TYPE_F32 || mul->type != GGML_TYPE_F32) return 0;
    if (rows < 1 || rows > 8 || x->ne[2] != 1 || x->ne[3] != 1 || !ggml_is_contiguous_rows(x)) return 0;
    if (ggml_nelements(w) != k || !ggml_is_contiguous(w) || !ggml_is_contiguous(mul) || k % QK8_1 != 0) return 0;
    const int last = last_q8_reader(cgraph, i + 1, mul);
    if (last < 0) return 0;
    const int64_t k_padded = GGML_PAD(k, MATRIX_ROW_PADDING);
    cudaStream_t stream = ctx.stream();
    Q8Copy & c = g_q8_copy[ctx.device][kNormCopy];
    if (!reserve(c.buffer, (size_t) rows * k_padded / QK8_1 * sizeof(block_q8_1), stream, kQ8CopyFloor)) return 0;
    float eps;
    memcpy(&eps, norm->op_params, sizeof(float));
    const int64_t stride_row = x->nb[1] / sizeof(float);
    const dim3 blocks((unsigned) rows, 1, 1);
    if (k < 1024) {
        const ggml_cuda_kernel_launch_params p{blocks, dim3(256, 1, 1), 32 * sizeof(float), stream};
        ggml_cuda_kernel_launch(temper_rms_norm_q8_1<256>, p, (const float *) x->data, (float *) mul->data, (const float *) w->data,
                                (block_q8_1 *) c.buffer.p, (int) k, (int) k_padded, stride_row, eps);
    } else {
        const ggml_cuda_kernel_launch_params p{blocks, dim3(1024, 1, 1), 32 * sizeof(float), stream};
        ggml_cuda_kernel_launch(temper_rms_norm_q8_1<1024>, p, (const float *) x->data, (float *) mul->data, (const float *) w->data,
                                (block_q8_1 *) c.buffer.p, (int) k, (int) k_padded, stride_row, eps);
    }
    publish(c, cgraph, i, last, mul, k_padded);
    ++g_norm_launches;
    return 2;
#else
    GGML_UNUSED_VARS(ctx, cgraph, i);
    return 0;
#endif
}

const void * temper_mmvq_norm_q8_1(const ggml_tensor * src1, long long k_padded) {
    const int device = ggml_cuda_get_device();
    if (device < 0 || device >= 64) return nullptr;
    const Evaluation & e = g_evaluation[device];
    for (const Q8Copy & c : g_q8_copy[device]) {
        if (!c.graph || c.graph != e.graph || e.at <= c.from || e.at > c.last || src1->data != c.data ||
            ggml_nelements(src1) != c.elements || k_padded != c.k_padded || !ggml_is_contiguous(src1))
            continue;
        ++g_q8_reads;
        return c.buffer.p;
    }
    return nullptr;
}

bool temper_mmvq_try_launch(int type, int ncols_dst, const temper_mmvq_args & a) {
    ensure_registered();
    g_last_stream = (void *) a.stream;
    // Entries tune one launch kind each: a plain MUL_MAT's config says nothing about the fused
    // gate/up kernel (twice the work per block) or about MUL_MAT_ID over experts.
    const int kind = launch_kind(a);
    g_last_kind = kind;
    // The probe's override for launch kind `k`, else the profile's (loaded at the first launch,
    // without g_mutex: reading it never stalls a launch).
    auto choose = [&](int k, bool & from_probe, Choice & out) -> bool {
        from_probe = false;
        if (g_any_override.load()) {
            std::lock_guard<std::mutex> lock(g_mutex);
            if (auto it = g_overrides.find(ShapeKey{k, type, a.nrows_x, (int) a.ncols_x, ncols_dst}); it != g_overrides.end()) {
                out = it->second;
                from_probe = true;
                return true;
            }
        }
        if (!g_profile.any()) return false;  // the patched build without a profile: no lock, no device query
        temper_profile::Config c;
        if (!g_profile.lookup(current_device(), compiled_in, {k, type, a.nrows_x, (long long) a.ncols_x, ncols_dst}, &c)) return false;
        out = Choice{c.nwarps, c.rows};
        return true;
    };
    bool from_probe = false;
    Choice choice{0, 0};
    // A one-column launch runs pipelined at the config its *_pipelined entry (or the probe) gives,
    // unless the override says off; that comes before an unfused pair or a plain entry of the launch.
    if (ncols_dst == 1 && g_pipeline_override.load() != 0 && choose(kind + temper_profile::kPipelinedBase, from_probe, choice)) {
        if (const Instance * p = find_pipelined(type, ncols_dst, choice.nwarps, choice.rows)) {
            g_last_kind = kind + temper_profile::kPipelinedBase;
            ++g_pipelined_launches;
            launch_tuned(*p, type, ncols_dst, choice.nwarps, choice.rows, true, a);
            ++g_tuned;
            return true;
        }
    }
    // A fused gate/up runs as its unfused pair when the probe or the profile chose that.
    if (kind == kMulMatGlu || kind == kMulMatIdGlu) {
        const int pair_kind = kind == kMulMatGlu ? kMulMatGluUnfused : kMulMatIdGluUnfused;
        if (choose(pair_kind, from_probe, choice)) {
            const Instance * in = find_instance(type, ncols_dst, choice.nwarps, choice.rows);
            if (in && launch_unfused(*in, type, a)) {
                g_last_kind = pair_kind;
                ++g_tuned;
                return true;
            }
        }
    }
    // A fused expert gate/up whose GLU output the down GEMV reads may write that GEMV's q8_1 copy, at
    // its entry's config (the sums of that config) where compiled.
    const bool chosen = choose(kind, from_probe, choice);
    if (kind == kMulMatIdGlu && ncols_dst == 1 && experts_glu_writes_q8_1(type, chosen ? choice : Choice{4, 1}, a)) {
        g_last_kind = temper_profile::kGluQ8;
        ++g_tuned;
        return true;
    }
    if (!chosen) return false;
    const Instance * in = find_instance(type, ncols_dst, choice.nwarps, choice.rows);
    if (!in) return false;
    const Instance * pipelined = pipelined_instance(type, ncols_dst, choice.nwarps, choice.rows);
    if (pipelined) {
        in = pipelined;
        ++g_pipelined_launches;
    }
    if (from_probe) {
        std::lock_guard<std::mutex> lock(g_mutex);
        g_captured.valid = true;
        g_captured.type = type;
        g_captured.ncols = ncols_dst;
        g_captured.args = a;
        g_captured.fusion = *a.fusion;
        g_captured.args.fusion = &g_captured.fusion;
    }
    launch_tuned(*in, type, ncols_dst, choice.nwarps, choice.rows, pipelined != nullptr, a);
    ++g_tuned;
    return true;
}

bool temper_mmvq_use_mmvq(int type, long long ne11, bool stock) {
    if (ne11 < 2 || ne11 > 8 || !mmvq_type(type)) return stock;
    ensure_registered();
    const int path = path_choice(kMulMat, type, (int) ne11);
    if (path == temper_profile::kNoPath) return stock;
    const bool use = path == temper_profile::kMmvq;
    if (use != stock) ++g_path_changes;
    return use;
}

int temper_mmvq_mmid_max_batch(int type, int stock_cap) {
    if (!mmvq_type(type)) return stock_cap;
    ensure_registered();
    if (!any_path_choice()) return stock_cap;
    // ggml asks at every graph check (each decode token, each expert launch): the answer is kept per
    // thread, device and type until the probe's paths or the profile change.
    struct Cap { bool valid; unsigned generation; int device, stock, cap; };
    static thread_local Cap known[GGML_TYPE_COUNT] = {};
    const unsigned generation = g_path_generation.load();
    const int device = ggml_cuda_get_device();
    Cap & k = known[type];
    if (!k.valid || k.generation != generation || k.device != device || k.stock != stock_cap) {
        if (!g_profile.ready()) return stock_cap;  // another thread is loading it: stock, not kept
        int cap = stock_cap;
        // mmq from the smallest width whose choice is mmq on: the cap lowered below it, never raised.
        for (int c = 2; c <= 8 && c <= stock_cap; ++c)
            if (path_choice(kMulMatId, type, c) == temper_profile::kMmq) { cap = c - 1; break; }  // c >= 2
        k = Cap{true, generation, device, stock_cap, cap};
    }
    if (k.cap != stock_cap) ++g_path_changes;
    return k.cap;
}

void temper_mmvq_note_launch(int nwarps, int nblocks_x) {
    g_last[0] = nwarps;
    g_last[1] = nblocks_x;
    ++g_launches;
}

extern "C" {

int temper_mmvq_hook_version(void) { return TEMPER_MMVQ_HOOK_VERSION; }

void temper_mmvq_set_override_launch(int launch, int type, int n, int k, int ncols, int nwarps, int rows) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (nwarps <= 0) g_overrides.erase(ShapeKey{launch, type, n, k, ncols});
    else g_overrides[ShapeKey{launch, type, n, k, ncols}] = Choice{nwarps, rows};
    g_any_override = !g_overrides.empty();
}

void temper_mmvq_set_override(int type, int n, int k, int ncols, int nwarps, int rows) {
    temper_mmvq_set_override_launch(kMulMat, type, n, k, ncols, nwarps, rows);
}

int temper_mmvq_last_launch_kind(void) { return g_last_kind.load(); }

void temper_mmvq_set_path_override(int launch, int type, int ncols, int path) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (path != temper_profile::kMmvq && path != temper_profile::kMmq) g_path_overrides.erase(PathOverrideKey{launch, type, ncols});
    else g_path_overrides[PathOverrideKey{launch, type, ncols}] = path;
    g_any_path_override = !g_path_overrides.empty();
    ++g_path_generation;
}

int temper_mmvq_path_hooks(void) { return TEMPER_MMVQ_PATH_HOOKS; }

void temper_mmvq_set_group_override(int nwarps, int rows) {
    g_group_override = nwarps < 0 ? Choice{-1, 0} : nwarps == 0 ? Choice{0, 0} : Choice{nwarps, rows};
}

long long temper_mmvq_group_launches(void) { return g_group_launches.load(); }
void temper_mmvq_set_norm_override(int on) { g_q8_override[kNormCopy] = on < 0 ? -1 : on > 0 ? 1 : 0; }
long long temper_mmvq_norm_launches(void) { return g_norm_launches.load(); }
long long temper_mmvq_norm_reads(void) { return g_q8_reads.load(); }
void temper_mmvq_set_glu_override(int on) { g_q8_override[kGluCopy] = on < 0 ? -1 : on > 0 ? 1 : 0; }
long long temper_mmvq_glu_launches(void) { return g_glu_launches.load(); }
long long temper_mmvq_pair_group_launches(void) { return g_pair_group_launches.load(); }
int temper_mmvq_norm_hooks(void) { return TEMPER_MMVQ_NORM_HOOKS; }
int temper_mmvq_group_hooks(void) { return TEMPER_MMVQ_GROUP_HOOKS; }
void temper_mmvq_set_pipeline_override(int on) {
    ensure_registered();
    g_pipeline_override = on < 0 ? -1 : on > 0 ? 1 : 0;
}
int temper_mmvq_pipeline_bits(void) {
    ensure_registered();
    return g_pipeline_bits;
}
long long temper_mmvq_pipelined_launches(void) { return g_pipelined_launches.load(); }
long long temper_mmvq_path_changes(void) { return g_path_changes.load(); }

int temper_mmvq_has(int type, int ncols, int nwarps, int rows) {
    ensure_registered();
    return find_instance(type, ncols, nwarps, rows) != nullptr;
}

int temper_mmvq_attributes(int type, int ncols, int nwarps, int rows, int out[5]) {
    ensure_registered();
    const Instance * in = find_instance(type, ncols, nwarps, rows);
    for (int i = 0; i < 5; ++i) out[i] = 0;
    if (!in || !in->attr) return 0;
    in->attr(out);
    return 1;
}

void temper_mmvq_last_launch(int out[2]) { out[0] = g_last[0]; out[1] = g_last[1]; }
long long temper_mmvq_launch_count(void) { return g_launches.load(); }
long long temper_mmvq_tuned_count(void) { return g_tuned.load(); }
void * temper_mmvq_last_stream(void) { return g_last_stream; }

int temper_mmvq_forget_launch(void) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_captured.valid = false;
    return 0;
}

int temper_mmvq_captured(int out[4]) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!g_captured.valid) return 0;
    out[0] = g_captured.type; out[1] = g_captured.ncols; out[2] = g_captured.args.nrows_x; out[3] = (int) g_captured.args.ncols_x;
    return 1;
}

int temper_mmvq_launch_captured(int nwarps, int rows, const void * vx, const void * vy) {
    Instance in;
    temper_mmvq_args a;
    int type = -1, ncols = 0;
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        if (!g_captured.valid) return 0;
        const Instance * found = find_instance(g_captured.type, g_captured.ncols, nwarps, rows);
        if (!found) return 0;
        in = *found;
        a = g_captured.args;
        type = g_captured.type;
        ncols = g_captured.ncols;
    }
    a.vx = vx;
    a.vy = vy;
    launch_tuned(in, type, ncols, nwarps, rows, false, a);  // as the engine will run it
    return 1;
}

void temper_mmvq_quantize_q8_1(const float * x, void * vy, int type_src0, long long k, long long ncols, void * stream) {
    const long long k_padded = GGML_PAD(k, MATRIX_ROW_PADDING);
    quantize_row_q8_1_cuda(x, nullptr, vy, (ggml_type) type_src0, k, k, k * ncols, k * ncols, k_padded, ncols, 1, 1,
                           (cudaStream_t) stream);
}

void temper_mmvq_load_profile(const char * path) {
    ensure_registered();
    g_profile.load(path);
    ++g_path_generation;
}

}  // extern "C"
