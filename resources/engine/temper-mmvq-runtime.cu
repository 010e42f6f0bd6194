// Temper's tuning hook, run-time part (written into this tree by `temper engine patch`).
// Holds the compiled instantiations (filled by the generated registry), the probe's overrides and
// the profile's approved configs, and decides per launch whether mmvq runs a tuned instantiation.
// The profile is read once, at the first mmvq launch: TEMPER_PROFILE=path, else
// $XDG_CONFIG_HOME/temper/engine-profile.json (~/.config/... when unset). TEMPER_PROFILE set to an
// empty string disables loading. A file that cannot be used is ignored with one line on stderr;
// the engine then runs stock.
#include "temper-mmvq.cuh"
#include "quantize.cuh"
#include "unary.cuh"

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

void temper_mmvq_register_all();  // generated: temper-mmvq-registry.cu

namespace {

constexpr int kTypes = 64;
constexpr int kNwarps[] = {1, 2, 4, 8, 16};
constexpr int kRows[] = {1, 2, 4, 8};

int nwarps_index(int w) { for (int i = 0; i < 5; ++i) if (kNwarps[i] == w) return i; return -1; }
int rows_index(int r) { for (int i = 0; i < 4; ++i) if (kRows[i] == r) return i; return -1; }

struct Instance { temper_mmvq_launch_fn launch = nullptr; temper_mmvq_attr_fn attr = nullptr; };
Instance g_instances[kTypes][9][5][4];

// The launch kinds of Temper's profiles (docs/profile-format.md): what ggml launched mmvq for, and
// the fused gate/up kinds as the hook can run them unfused (gate and up as two plain launches).
enum LaunchKind {
    kMulMat = 0, kMulMatGlu = 1, kMulMatId = 2, kMulMatIdGlu = 3, kMulMatGluUnfused = 4, kMulMatIdGluUnfused = 5,
    kLaunchKinds = 6
};
const char * const kLaunchNames[kLaunchKinds] = {"mul_mat", "mul_mat_glu", "mul_mat_id", "mul_mat_id_glu",
                                                 "mul_mat_glu_unfused", "mul_mat_id_glu_unfused"};
int launch_kind(const temper_mmvq_args & a) {
    const bool fused = a.fusion && a.fusion->gate;
    return a.ids ? (fused ? kMulMatIdGlu : kMulMatId) : (fused ? kMulMatGlu : kMulMat);
}

using ShapeKey = std::tuple<int, int, int, int, int>;  // launch kind, type, n, k, ncols
struct Choice { int nwarps, rows; };
// Entries of one arch: the arch-level ones, and per device (name, compute units) its own.
struct ArchEntries {
    std::map<ShapeKey, Choice> any_device;
    std::map<std::pair<std::string, int>, std::map<ShapeKey, Choice>> by_device;
};

std::mutex g_mutex;
std::map<ShapeKey, Choice> g_overrides;                        // the probe's
std::map<std::string, ArchEntries> g_profile;                  // per arch, approved entries
std::string g_profile_path;
int g_profile_malformed = 0, g_profile_unapproved = 0, g_profile_unknown_launch = 0;
std::atomic<int> g_last_kind{-1};
bool g_profile_reported[64] = {};
std::once_flag g_registered, g_profile_loaded;
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

void ensure_registered() { std::call_once(g_registered, [] { temper_mmvq_register_all(); }); }

// --- a small strict JSON reader, enough for a Temper profile --------------------------------------
struct Json {
    enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
    double number = 0; bool boolean = false; std::string text;
    std::vector<Json> items; std::vector<std::pair<std::string, Json>> fields;
    const Json * get(const char * key) const {
        for (const auto & f : fields) if (f.first == key) return &f.second;
        return nullptr;
    }
};

struct Parser {
    const char * p; const char * end; const char * begin; std::string error; int depth = 0;
    bool fail(const char * what) { if (error.empty()) error = std::string(what) + " at byte " + std::to_string(p - begin); return false; }
    void ws() { while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) ++p; }
    bool lit(const char * s) { size_t n = strlen(s); if (size_t(end - p) < n || memcmp(p, s, n) != 0) return false; p += n; return true; }
    bool string(std::string & out) {
        if (p >= end || *p != '"') return fail("expected a string");
        for (++p; p < end && *p != '"'; ++p) {
            if ((unsigned char) *p < 0x20) return fail("control character in a string");
            if (*p == '\\') {
                if (++p >= end) break;
                switch (*p) {
                    case 'n': out += '\n'; break; case 't': out += '\t'; break; case 'r': out += '\r'; break;
                    case 'b': out += '\b'; break; case 'f': out += '\f'; break;
                    case 'u': if (end - p < 5) return fail("short \\u escape"); out += '?'; p += 4; break;
                    default: out += *p;
                }
            } else {
                out += *p;
            }
        }
        if (p >= end) return fail("unterminated string");
        ++p;
        return true;
    }
    bool value(Json & v) {
        if (++depth > 64) return fail("nesting too deep");
        ws();
        if (p >= end) return fail("unexpected end of input");
        bool ok = true;
        if (*p == '{') {
            v.kind = Json::Object; ++p; ws();
            if (p < end && *p == '}') { ++p; }
            else for (;;) {
                std::pair<std::string, Json> f;
                ws();
                if (!string(f.first)) return false;
                ws();
                if (p >= end || *p++ != ':') return fail("expected ':'");
                if (!value(f.second)) return false;
                v.fields.push_back(std::move(f));
                ws();
                if (p < end && *p == ',') { ++p; continue; }
                if (p < end && *p == '}') { ++p; break; }
                return fail("expected ',' or '}'");
            }
        } else if (*p == '[') {
            v.kind = Json::Array; ++p; ws();
            if (p < end && *p == ']') { ++p; }
            else for (;;) {
                v.items.emplace_back();
                if (!value(v.items.back())) return false;
                ws();
                if (p < end && *p == ',') { ++p; continue; }
                if (p < end && *p == ']') { ++p; break; }
                return fail("expected ',' or ']'");
            }
        } else if (*p == '"') {
            v.kind = Json::String; ok = string(v.text);
        } else if (lit("true")) { v.kind = Json::Bool; v.boolean = true; }
        else if (lit("false")) { v.kind = Json::Bool; }
        else if (lit("null")) { v.kind = Json::Null; }
        else {
            char * stop = nullptr;
            std::string num;
            while (p < end && (isdigit((unsigned char) *p) || strchr("+-.eE", *p))) num += *p++;
            v.kind = Json::Number; v.number = strtod(num.c_str(), &stop);
            if (num.empty() || *stop != '\0') return fail("expected a JSON value");
        }
        --depth;
        return ok;
    }
};

int type_id(const std::string & name) {
    for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
        const char * n = ggml_type_name((ggml_type) t);
        if (n && strcasecmp(n, name.c_str()) == 0) return t;
    }
    return -1;
}

int int_field(const Json & o, const char * key) {
    const Json * v = o.get(key);
    if (!v || v->kind != Json::Number || v->number != (double) (long long) v->number || v->number < 0 || v->number > 1e9) return -1;
    return (int) v->number;
}

std::string default_profile_path() {
    const char * xdg = getenv("XDG_CONFIG_HOME");
    if (xdg && *xdg) return std::string(xdg) + "/temper/engine-profile.json";
    const char * home = getenv("HOME");
    return home && *home ? std::string(home) + "/.config/temper/engine-profile.json" : std::string();
}

// Reads the profile into g_profile; returns the reason when the whole file is unusable.
std::string read_profile(const std::string & path) {
    FILE * f = fopen(path.c_str(), "rb");
    if (!f) return "cannot open it";
    std::string text;
    char buf[65536];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
        text.append(buf, got);
        if (text.size() > (16u << 20)) { fclose(f); return "larger than 16 MiB"; }
    }
    fclose(f);
    Parser ps{text.data(), text.data() + text.size(), text.data()};
    Json root;
    if (!ps.value(root)) return "not valid JSON: " + ps.error;
    ps.ws();
    if (ps.p != ps.end) return "not valid JSON: trailing data at byte " + std::to_string(ps.p - ps.begin);
    const Json * format = root.get("format");
    if (root.kind != Json::Object || !format || format->text != "temper-profile") return "not a Temper profile (format is not \"temper-profile\")";
    const Json * entries = root.get("entries");
    if (!entries || entries->kind != Json::Array) return "no entries array";
    for (const Json & e : entries->items) {
        const Json * approval = e.get("approval");
        if (approval && approval->kind == Json::String && approval->text != "approved") { ++g_profile_unapproved; continue; }
        const Json * arch = e.get("arch");
        const Json * type = e.get("type");
        const Json * config = e.get("config");
        const Json * launch = e.get("launch");    // absent: a plain MUL_MAT (schema 1)
        const Json * device = e.get("device");    // absent: every device of the arch
        int kind = kMulMat;
        if (launch) {
            kind = -1;
            for (int i = 0; launch->kind == Json::String && i < kLaunchKinds; ++i)
                if (launch->text == kLaunchNames[i]) kind = i;
            if (kind < 0) { ++g_profile_unknown_launch; continue; }  // a newer Temper's launch kind
        }
        const int n = int_field(e, "n"), k = int_field(e, "k"), ncols = int_field(e, "ncols");
        const int t = type && type->kind == Json::String ? type_id(type->text) : -1;
        const int w = config ? int_field(*config, "nwarps") : -1, r = config ? int_field(*config, "rows_per_block") : -1;
        const Json * device_name = device ? device->get("name") : nullptr;
        const int device_cus = device ? int_field(*device, "compute_units") : 0;
        if (!approval || !arch || arch->kind != Json::String || t < 0 || n <= 0 || k <= 0 || ncols < 1 || ncols > 8 || w <= 0 || r <= 0 ||
            (device && (!device_name || device_name->kind != Json::String || device_name->text.empty() || device_cus <= 0))) {
            ++g_profile_malformed;
            continue;
        }
        ArchEntries & a = g_profile[arch->text];
        auto & table = device ? a.by_device[{device_name->text, device_cus}] : a.any_device;
        table[ShapeKey{kind, t, n, k, ncols}] = Choice{w, r};
    }
    return std::string();
}

void load_profile_locked(const char * explicit_path) {
    g_profile.clear();
    g_profile_malformed = g_profile_unapproved = g_profile_unknown_launch = 0;
    std::fill(std::begin(g_profile_reported), std::end(g_profile_reported), false);
    const char * env = getenv("TEMPER_PROFILE");
    std::string path = explicit_path ? explicit_path : env ? env : default_profile_path();
    g_profile_path = path;
    if (path.empty()) return;
    FILE * exists = fopen(path.c_str(), "rb");
    if (!exists && !explicit_path && !env) return;  // no default profile: stock, silently
    if (exists) fclose(exists);
    const std::string why = read_profile(path);
    if (!why.empty()) {
        g_profile.clear();
        fprintf(stderr, "temper: profile %s ignored: %s; mmvq runs stock\n", path.c_str(), why.c_str());
        g_profile_path.clear();
    }
}

// What identifies a device for its own profile entries: arch, name, compute units.
struct DeviceId { std::string arch, name; int compute_units = 0; };

DeviceId device_id(int device) {
    DeviceId id;
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

// The entries the hook uses on this device: its own, then the arch-level ones. Counts what it used
// and what it ignored.
struct Usable { int own = 0, arch = 0, not_compiled = 0, other_arch = 0, other_devices = 0; };
Usable count_usable(const DeviceId & id) {
    Usable u;
    auto count = [&](const std::map<ShapeKey, Choice> & entries, int & into) {
        for (const auto & [key, c] : entries) {
            if (find_instance(std::get<1>(key), std::get<4>(key), c.nwarps, c.rows)) ++into; else ++u.not_compiled;
        }
    };
    for (const auto & [a, entries] : g_profile) {
        int all = (int) entries.any_device.size();
        for (const auto & [dev, table] : entries.by_device) all += (int) table.size();
        if (a != id.arch) { u.other_arch += all; continue; }
        count(entries.any_device, u.arch);
        for (const auto & [dev, table] : entries.by_device) {
            if (dev.first == id.name && dev.second == id.compute_units) count(table, u.own);
            else u.other_devices += (int) table.size();
        }
    }
    return u;
}

// The profile's one line, once per device: what it holds for this device and arch, what it ignored.
void report_profile(int device, const DeviceId & id) {
    if (g_profile_path.empty() || device < 0 || device >= 64 || g_profile_reported[device]) return;
    g_profile_reported[device] = true;
    const Usable u = count_usable(id);
    fprintf(stderr, "temper: profile %s: %d entries for %s (%s, device %d), %d for %s; ignored %d for other archs, %d for other devices, "
                    "%d for launches this hook lacks, %d with a config not compiled in, %d malformed, %d not approved\n",
            g_profile_path.c_str(), u.own, id.name.c_str(), id.arch.c_str(), device, u.arch, id.arch.c_str(), u.other_arch,
            u.other_devices, g_profile_unknown_launch, u.not_compiled, g_profile_malformed, g_profile_unapproved);
}

const Choice * profile_choice(const DeviceId & id, const ShapeKey & key) {
    auto arch = g_profile.find(id.arch);
    if (arch == g_profile.end()) return nullptr;
    if (auto dev = arch->second.by_device.find({id.name, id.compute_units}); dev != arch->second.by_device.end())
        if (auto it = dev->second.find(key); it != dev->second.end()) return &it->second;
    if (auto it = arch->second.any_device.find(key); it != arch->second.any_device.end()) return &it->second;
    return nullptr;
}

}  // namespace

void temper_mmvq_register(int type, int ncols, int nwarps, int rows, temper_mmvq_launch_fn launch, temper_mmvq_attr_fn attr) {
    const int wi = nwarps_index(nwarps), ri = rows_index(rows);
    if (type < 0 || type >= kTypes || ncols < 1 || ncols > 8 || wi < 0 || ri < 0) return;
    g_instances[type][ncols][wi][ri] = Instance{launch, attr};
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

// Scratch for the pair's gate and up results, per device; grown only outside a graph capture.
struct Scratch { void * p = nullptr; size_t bytes = 0; };
Scratch g_scratch[64];

bool capturing(cudaStream_t stream) {
#if defined(GGML_USE_HIP)
    hipStreamCaptureStatus status;
    return hipStreamIsCapturing(stream, &status) != hipSuccess || status != hipStreamCaptureStatusNone;
#else
    cudaStreamCaptureStatus status;
    return cudaStreamIsCapturing(stream, &status) != cudaSuccess || status != cudaStreamCaptureStatusNone;
#endif
}

// A fused gate/up launch run as its unfused pair: the gate and the up GEMV through the plain
// instantiation `in`, on the activations the engine quantized once, then the GLU into dst. False
// (nothing launched: the fused launch goes on as it would) for what the pair does not carry —
// biases, scales, GLU ops other than SwiGLU and GeGLU, samples — or when scratch cannot be had.
bool launch_unfused(const Instance & in, const temper_mmvq_args & a) {
    const ggml_cuda_mm_fusion_args_device & f = *a.fusion;
    if (f.x_bias || f.gate_bias || f.x_scale || f.gate_scale || a.nsamples_dst != 1) return false;
    if (f.glu_op != GGML_GLU_OP_SWIGLU && f.glu_op != GGML_GLU_OP_GEGLU) return false;
    const size_t span = size_t(a.nchannels_dst - 1) * a.stride_channel_dst + size_t(a.nrows_x);
    const size_t need = 2 * span * sizeof(float);
    const int device = ggml_cuda_get_device();
    if (device < 0 || device >= 64) return false;
    Scratch & s = g_scratch[device];
    if (s.bytes < need) {
        if (capturing(a.stream)) return false;
        if (s.p) cudaFree(s.p);
        s = Scratch{};
        if (cudaMalloc(&s.p, need) != cudaSuccess) { s.p = nullptr; (void) cudaGetLastError(); return false; }
        s.bytes = need;
    }
    float * gate = static_cast<float *>(s.p), * up = gate + span;
    const ggml_cuda_mm_fusion_args_device none{};
    temper_mmvq_args g = a, u = a;
    g.vx = f.gate; g.fusion = &none; g.dst = gate;
    u.fusion = &none; u.dst = up;
    in.launch(g);
    in.launch(u);
    const int total = a.nrows_x * a.nchannels_dst;
    temper_glu<<<(total + 255) / 256, 256, 0, a.stream>>>(gate, up, a.dst, a.nrows_x, a.nchannels_dst, (int) a.stride_channel_dst,
                                                          f.glu_op == GGML_GLU_OP_GEGLU);
    return cudaGetLastError() == cudaSuccess;
}

bool temper_mmvq_try_launch(int type, int ncols_dst, const temper_mmvq_args & a) {
    ensure_registered();
    g_last_stream = (void *) a.stream;
    std::lock_guard<std::mutex> lock(g_mutex);
    std::call_once(g_profile_loaded, [] { load_profile_locked(nullptr); });
    // Entries tune one launch kind each: a plain MUL_MAT's config says nothing about the fused
    // gate/up kernel (twice the work per block) or about MUL_MAT_ID over experts.
    const int kind = launch_kind(a);
    g_last_kind = kind;
    static thread_local int cached_device = -1;
    static thread_local DeviceId cached_id;
    auto choose = [&](int k, bool & from_probe) -> const Choice * {
        const ShapeKey key{k, type, a.nrows_x, (int) a.ncols_x, ncols_dst};
        from_probe = false;
        if (auto it = g_overrides.find(key); it != g_overrides.end()) {
            from_probe = true;
            return &it->second;
        }
        if (g_profile.empty()) return nullptr;
        const int device = ggml_cuda_get_device();
        if (device != cached_device) { cached_id = device_id(device); cached_device = device; }
        report_profile(device, cached_id);
        return profile_choice(cached_id, key);
    };
    bool from_probe = false;
    // A fused gate/up runs as its unfused pair when the probe or the profile chose that.
    if (kind == kMulMatGlu || kind == kMulMatIdGlu) {
        const int pair_kind = kind == kMulMatGlu ? kMulMatGluUnfused : kMulMatIdGluUnfused;
        if (const Choice * pair = choose(pair_kind, from_probe)) {
            const Instance * in = find_instance(type, ncols_dst, pair->nwarps, pair->rows);
            if (in && launch_unfused(*in, a)) {
                g_last_kind = pair_kind;
                ++g_tuned;
                return true;
            }
        }
    }
    const Choice * choice = choose(kind, from_probe);
    if (!choice) return false;
    const Instance * in = find_instance(type, ncols_dst, choice->nwarps, choice->rows);
    if (!in) return false;
    if (from_probe) {
        g_captured.valid = true;
        g_captured.type = type;
        g_captured.ncols = ncols_dst;
        g_captured.args = a;
        g_captured.fusion = *a.fusion;
        g_captured.args.fusion = &g_captured.fusion;
    }
    in->launch(a);
    ++g_tuned;
    return true;
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
}

void temper_mmvq_set_override(int type, int n, int k, int ncols, int nwarps, int rows) {
    temper_mmvq_set_override_launch(kMulMat, type, n, k, ncols, nwarps, rows);
}

int temper_mmvq_last_launch_kind(void) { return g_last_kind.load(); }

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
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        if (!g_captured.valid) return 0;
        const Instance * found = find_instance(g_captured.type, g_captured.ncols, nwarps, rows);
        if (!found) return 0;
        in = *found;
        a = g_captured.args;
    }
    a.vx = vx;
    a.vy = vy;
    in.launch(a);
    return 1;
}

void temper_mmvq_quantize_q8_1(const float * x, void * vy, int type_src0, long long k, long long ncols, void * stream) {
    const long long k_padded = GGML_PAD(k, MATRIX_ROW_PADDING);
    quantize_row_q8_1_cuda(x, nullptr, vy, (ggml_type) type_src0, k, k, k * ncols, k * ncols, k_padded, ncols, 1, 1,
                           (cudaStream_t) stream);
}

void temper_mmvq_load_profile(const char * path) {
    ensure_registered();
    std::lock_guard<std::mutex> lock(g_mutex);
    std::call_once(g_profile_loaded, [] {});
    load_profile_locked(path);
}

}  // extern "C"
