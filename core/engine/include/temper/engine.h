#pragma once
// The engine bridge: Temper's tuning hook for a user's ggml / llama.cpp tree (docs/engine.md).
// The hook (hook/ in Temper's source) edits src/ggml-cuda/mmvq.cu by anchors on upstream's own
// names: each upstream family (hook/families.txt, which names the tested commits) has its edit
// lists, so it applies to every tree whose anchors are in place and refuses, naming the anchor,
// where one has moved. The patched kernel takes (nwarps, rows_per_block)
// as template parameters; generated translation units instantiate the grid; a run-time choice per
// exact (type, N, K, ncols) — a Temper profile, or temper-probe's override — picks one.
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace temper::engine {

// 2: the `full` set compiles tier 2 at ncols 1 only; 3: launch kinds and device entries; 4: the mmvq/mmq
// choice (ggml_cuda_should_use_mmvq and get_mmvq_mmid_max_batch wrapped where the tree has them), and
// the grid's rows_per_block 16 and nwarps 32 (a v3 build counts entries using them as "not compiled in");
// 5: same-input groups (ggml-cuda.cu patched too, where its three anchors are; mul_mat_group entries);
// 6: pipelined one-column launches (mul_mat_vec_q's temper_pipe, where the kernel waits for its predecessor);
// 7: the profile's *_pipelined entries pipeline the launches they name (v6 pipelines only by override);
// 8: the norm writes its GEMVs' q8_1 activations (rms_norm_q8_1); 9: so does an unfused pair's GLU (glu_q8_1).
// 10: and the fused expert gate/up, as one kernel (glu_q8_1 entries of the experts' rows).
// 11: the group kernel's q4_K dot products share each row's and each column's work (same results).
// 12: a group entry matches its members in any order (llama.cpp runs a layer's q, v, k).
// 13: a tuned fused launch (gate, bias) tests its gate once, not in every row's step (same results).
// 14: a tuned one-column launch whose fusion is a bias alone runs compiled without the gate (same results).
constexpr int kHookVersion = 14;

// A family of upstream trees the hook patches alike, and what the hook gives them (a row of
// hook/families.txt).
struct HookFamily {
  std::string name;                 // "ggml-halve-iters"
  std::vector<std::string> tested;  // where it is tested, "tree@commit"
  int types = 0;                    // mmvq's types at the tested commit
  bool groups = false;              // same-input groups (ggml-cuda.cu patched)
  bool pipelining = false;          // pipelined one-column launches
  bool mul_mat_path = false;        // MUL_MAT's mmvq/mmq choice wrapped (ggml_cuda_should_use_mmvq)
  bool moe_cap = false;             // MUL_MAT_ID's mmvq batch cap wrapped (get_mmvq_mmid_max_batch)
};
const std::vector<HookFamily>& hook_families();  // in the order a tree is tried against them
std::string hook_family_row(const HookFamily& f);  // "types 23, groups yes, pipelining yes, ..."

enum class TreeKind { Ggml, LlamaCpp };

struct Tree {
  std::filesystem::path root;       // what the user named
  std::filesystem::path ggml_root;  // root itself, or root/ggml in a llama.cpp checkout
  std::filesystem::path mmvq;       // ggml_root/src/ggml-cuda/mmvq.cu
  std::filesystem::path cuda;       // ggml_root/src/ggml-cuda/ggml-cuda.cu (hook v5's groups; may be absent)
  TreeKind kind = TreeKind::Ggml;
  std::string commit;               // from the tree's .git (HEAD), empty when there is none
};

std::string_view tree_kind_name(TreeKind kind);  // "ggml", "llama.cpp"

// Error(BadInput) naming the folder when it holds no ggml CUDA backend.
Tree find_tree(const std::filesystem::path& dir);

// Which instantiations the hook generates: "full" (every type mmvq supports, ncols 1-8, the whole
// grid) or "ci" (q4_0 and q4_K at ncols 1, the whole grid), like TEMPER_KERNEL_SET.
// Which instantiations the hook compiles: `types` at `ncols`, every other type of the tree's mmvq.cu
// at `other_ncols`. full: the tier-1 types at ncols 1-8 and the rest at ncols 1 (the build time
// goes mostly into these units); all: every type at ncols 1-8; ncols1: the tier-1 types at ncols 1
// only (bench/fidelity.sh); ci: q4_0 and q4_K at ncols 1.
struct KernelSet {
  std::string name = "full";
  std::vector<int> ncols;                  // empty: 1..8
  std::vector<std::string> types;          // upstream names without GGML_TYPE_ ("Q4_K"); empty: all
  std::vector<int> other_ncols;            // for the types not listed; empty: none
  // The ncols this set compiles for an upstream type name (empty: none).
  std::vector<int> ncols_of(const std::string& type) const;
};
// A named set, or a comma-separated list of ggml types (each at ncols 1-8, nothing else).
KernelSet kernel_set(const std::string& name);  // Error(BadInput) for another name
std::string_view kernel_set_names();            // "full|all|ncols1|ci|TYPE,TYPE,...", for help and messages

// The hooked tree's files: the patched mmvq.cu and the generated ones (name relative to the
// ggml-cuda folder, content).
struct Patch {
  std::string family;  // the tree's family (HookFamily::name)
  std::string mmvq;
  std::vector<std::pair<std::string, std::string>> files;
  std::vector<std::string> types;  // the types mmvq.cu supports, as upstream names them
  bool halve_iters = false;        // the launch template takes small_k and halve_iters (family ggml-halve-iters)
  // Which of ggml's mmvq/mmq decisions the hook wraps (hook v4; TEMPER_MMVQ_PATH_HOOKS in the
  // generated header): kPathHookMulMat, kPathHookMulMatId. A tree without the function lacks the bit.
  int path_hooks = 0;
  // Same-input groups (hook v5): the patched ggml-cuda.cu (empty: left as it is) and which of its
  // places carry the hook (kGroupHookEvaluate | kGroupHookOrder, both or neither), else why not.
  std::string cuda;
  int group_hooks = 0;
  std::string group_problem;
  // Pipelined launches (hook v6; TEMPER_MMVQ_PIPELINE_HOOKS): 1 when mul_mat_vec_q waits for the
  // previous kernel (ggml_cuda_pdl_sync, family ggml-halve-iters) and so can let the next one launch early, else 0.
  int pipeline_hooks = 0;
  // The norm writes the GEMVs' q8_1 activations (hook v8; TEMPER_MMVQ_NORM_HOOKS): kNormHookEvaluate from
  // ggml-cuda.cu's graph evaluation, kNormHookRead from mmvq.cu's quantization; both or it never runs.
  int norm_hooks = 0;
};
// A pipelined instantiation's bits (temper-mmvq.cuh): 1 the next kernel may launch as each block
// starts, 2 each block asks L2 for its weight rows before it waits for the previous kernel.
constexpr int kPipelineEarlyLaunch = 1;
constexpr int kPipelinePrefetch = 2;
constexpr int kPipelineBits = kPipelineEarlyLaunch | kPipelinePrefetch;
constexpr int kPathHookMulMat = 1;    // ggml_cuda_should_use_mmvq (family ggml-halve-iters; ggml-small-k decides inline)
constexpr int kPathHookMulMatId = 2;  // get_mmvq_mmid_max_batch: MUL_MAT_ID's mmvq batch cap
constexpr int kGroupHookEvaluate = 1;  // ggml-cuda.cu's graph evaluation launches same-input groups
constexpr int kGroupHookOrder = 2;     // its graph_optimize puts each run's MUL_MATs next to each other
constexpr int kNormHookEvaluate = 1;   // ggml-cuda.cu's graph evaluation runs an RMS_NORM·MUL with its q8_1 copy
constexpr int kNormHookRead = 2;       // mmvq.cu's launcher reads that copy instead of quantizing

// Applies the hook to mmvq.cu's text. Error(BadInput) "<what> not found" naming the anchor when
// the text is not an mmvq.cu the hook understands, or "already patched" when it carries the hook.
// hook_version: the marker to write (an older one only to recognise what an older Temper wrote).
// cuda_source: ggml-cuda.cu's text (hook v5's groups), nullptr when the tree has none; where its
// anchors are missing the patch leaves it alone and says why in group_problem.
Patch make_patch(const std::string& mmvq_source, const KernelSet& set, int hook_version = kHookVersion,
                 const std::string* cuda_source = nullptr);

enum class HookState { Stock, Patched };

struct CheckReport {
  Tree tree;
  HookState state = HookState::Stock;
  int patched_version = 0;       // hook version found in a patched file
  bool applies = false;          // stock and every anchor found
  std::string problem;           // why it does not apply
  std::string family;            // stock and applies: the tree's family (HookFamily::name)
  std::vector<std::string> types;
  int group_hooks = 0;           // stock: what patch would give ggml-cuda.cu (kGroupHook*); patched: what it has
  std::string group_problem;     // why groups would not apply (an anchor of ggml-cuda.cu missing)
  int pipeline_hooks = 0;        // stock: whether patch would compile pipelined launches (hook v6); patched: whether it did
  int norm_hooks = 0;            // stock: what patch would give (kNormHook*, hook v8); patched: what the tree carries
  bool undoable = false;         // patched, and `engine patch --undo` would restore it
  std::string undo_problem;      // patched, and why undo would refuse
};
CheckReport check(const std::filesystem::path& dir);

// In place, atomically: the generated files are written first, then mmvq.cu (temp + rename), and
// the original bytes are kept under src/ggml-cuda/.temper-hook/ for undo, with a manifest of the
// hash of every file written. Nothing is written when an anchor is missing, mmvq.cu is not a
// regular file of at most 4 MiB inside the tree (a link leading out is refused, naming its target),
// has CRLF line endings, or a file to be written exists. One patch or undo per tree at a time (a
// lock on the ggml-cuda folder, waited for up to 30 s).
// Hook v5 also patches ggml-cuda.cu (kept as .temper-hook/ggml-cuda.cu.orig, written before mmvq.cu,
// restored before it); returns the group hooks it wrote (0: ggml-cuda.cu left as it is).
int patch(const std::filesystem::path& dir, const KernelSet& set);
// What patch would change, as a unified diff against the tree's root (`patch -p1` in the root applies
// it): mmvq.cu, ggml-cuda.cu and the hook's new files; the undo record (.temper-hook/) is left out.
// Writes nothing; refuses what patch refuses.
std::string dry_run(const std::filesystem::path& dir, const KernelSet& set);
// Restores mmvq.cu byte for byte and removes the files the hook added: only files of the hook's
// own naming in the ggml-cuda folder, each unchanged since it was written (its recorded hash).
// Everything is verified first; Error(BadInput) when the tree is not patched, mmvq.cu or a hook
// file changed since, or the manifest lists anything else (then nothing is touched).
void undo(const std::filesystem::path& dir);

// The hook's own sources, embedded at build time (hook/src/; the probe's, resources/engine/).
std::string_view hook_header();
std::string_view hook_api();  // the hook's C interface, shared by the hook and temper-probe
std::string_view hook_runtime();
std::string_view hook_profile_reader();  // temper-mmvq-profile.h: the runtime's profile reader (plain C++)
std::string_view hook_group_header();    // temper-mmvq-group.h: what ggml-cuda.cu calls (hook v5)
std::string_view hook_group_kernel();    // temper-mmvq-group.cuh: the group kernel
std::string_view probe_source();

}  // namespace temper::engine
