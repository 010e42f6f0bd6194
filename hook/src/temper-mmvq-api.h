#pragma once
// Temper's tuning hook, its C interface (written into this tree by `temper engine patch`; docs/engine.md
// in Temper): what temper-probe calls in a hooked ggml. temper-mmvq.cuh includes it for the hook's
// definitions, temper-probe.cu for its calls, so the two cannot drift apart.
extern "C" {
int  temper_mmvq_hook_version(void);
const char * temper_mmvq_kernel_set(void);
// nwarps 0 removes the override: that shape runs as the profile or the stock table says. The plain
// form overrides plain MUL_MAT launches; the _launch form any kind (0 MUL_MAT, 1 fused gate/up,
// 2 MUL_MAT_ID, 3 fused MUL_MAT_ID gate/up; Temper's Launch).
void temper_mmvq_set_override(int type, int n, int k, int ncols, int nwarps, int rows);
void temper_mmvq_set_override_launch(int launch, int type, int n, int k, int ncols, int nwarps, int rows);
// The kind of the last mmvq launch (as above); -1 before the first.
int  temper_mmvq_last_launch_kind(void);
int  temper_mmvq_has(int type, int ncols, int nwarps, int rows);
int  temper_mmvq_attributes(int type, int ncols, int nwarps, int rows, int out[5]);
// The last launch mmvq made: nwarps, grid x; and how many launches it has made in all.
void temper_mmvq_last_launch(int out[2]);
long long temper_mmvq_launch_count(void);
// How many of those launched a Temper instantiation (a profile's or the probe's choice).
long long temper_mmvq_tuned_count(void);
// The stream of the last mmvq launch (ggml's compute stream), for the probe's timing events.
void * temper_mmvq_last_stream(void);
// Kernel-only timing: the last launch the probe's override chose is remembered with the arguments
// the engine built for it (strides, fast-division values, fusion, stream). forget drops it;
// captured writes its type, ncols, rows (N) and K, 0 when there is none; launch_captured launches the
// (nwarps, rows) instantiation of that type and ncols with those arguments but weights vx and q8_1
// activations vy (the engine's padded layout), through the registry's launch function; 0 when
// nothing was captured or that config is not compiled in.
int  temper_mmvq_forget_launch(void);
int  temper_mmvq_captured(int out[4]);
int  temper_mmvq_launch_captured(int nwarps, int rows, const void * vx, const void * vy);
// ggml's own q8_1 quantizer, as MUL_MAT runs it before mmvq (x: ncols rows of k floats).
void temper_mmvq_quantize_q8_1(const float * x, void * vy, int type_src0, long long k, long long ncols, void * stream);
// The mmvq/mmq choice (hook v4). A path override for (launch 0 MUL_MAT or 2 MUL_MAT_ID, type, ncols
// 2..8): path 1 mmvq, 2 mmq, 0 removes it (then the profile's choice, else ggml's own). For MUL_MAT_ID
// an mmq override at ncols c lowers ggml's batch cap to c - 1; mmvq never raises it.
void temper_mmvq_set_path_override(int launch, int type, int ncols, int path);
// TEMPER_MMVQ_PATH_HOOKS: bit 0 MUL_MAT's choice wrapped, bit 1 MUL_MAT_ID's cap wrapped.
int  temper_mmvq_path_hooks(void);
// How many of ggml's decisions the hook answered otherwise than ggml (MUL_MAT choices flipped, MUL_MAT_ID
// caps lowered), in all: the evidence that a forced or profiled path ran.
long long temper_mmvq_path_changes(void);
// Same-input groups (hook v5): 2..4 consecutive MUL_MATs of the graph reading the same activations
// (q, k, v of a layer) run as one launch after one q8_1 quantization. The probe's override holds for
// every group this process launches: nwarps > 0 forces that group config (nwarps 2|4|8, rows 1|2|4),
// 0 removes the override (the profile, else TEMPER_MMVQ_GROUP, decides), -1 forces groups off.
void temper_mmvq_set_group_override(int nwarps, int rows);
// How many group launches the hook has made in all (each replaces 2..4 MUL_MAT launches).
long long temper_mmvq_group_launches(void);
// TEMPER_MMVQ_GROUP_HOOKS: bit 0 the graph evaluation launches groups, bit 1 graph_optimize orders runs.
int  temper_mmvq_group_hooks(void);
// Pipelined launches (hook v6): a tuned one-column launch (the probe's or the profile's config) runs its
// pipelined instantiation — each block lets the next kernel launch as it starts and prefetches its
// weight rows to L2 before it waits for the previous kernel. on 1 for every such launch, 0 none,
// -1 removes the override (TEMPER_MMVQ_PIPELINE=1|0 sets it at the first launch). The bits compiled
// in (1 early launch, 2 prefetch; 0: none, as in a tree whose mmvq does not wait for its predecessor)
// and how many launches ran pipelined.
void temper_mmvq_set_pipeline_override(int on);
int  temper_mmvq_pipeline_bits(void);
long long temper_mmvq_pipelined_launches(void);
// The norm writes the q8_1 activations (hook v8): an RMS_NORM·MUL whose output mmvq GEMVs read runs as
// one kernel that also writes their q8_1 copy, and they skip their own quantization. on 1 for every
// such norm, 0 none, -1 removes the override (TEMPER_MMVQ_NORM_Q8=1|0, else the profile, decides).
// How many such norms ran, how many mmvq launches read a producer's copy, and the places patched (bit 0 the graph
// evaluation, bit 1 mmvq's quantization; 3: both, the only useful state).
void temper_mmvq_set_norm_override(int on);
long long temper_mmvq_norm_launches(void);
long long temper_mmvq_norm_reads(void);
int  temper_mmvq_norm_hooks(void);
// The GLU writes the q8_1 activations (hook v9): an unfused gate/up pair's GLU also writes the q8_1 copy
// its down GEMV reads (the norm's places carry it: temper_mmvq_norm_hooks() 3). on 1, 0, -1 as above
// (TEMPER_MMVQ_GLU_Q8=1|0, else the profile's glu_q8_1 entries); how many such GLUs ran. Copies read
// by mmvq, the norm's and the GLU's, are counted by temper_mmvq_norm_reads().
void temper_mmvq_set_glu_override(int on);
long long temper_mmvq_glu_launches(void);
// An unfused pair's two GEMVs as one same-input group launch (hook v9): how many ran so, each where the
// profile has a mul_mat_group entry of exactly the pair's two members at one column.
long long temper_mmvq_pair_group_launches(void);
// Loads a profile now (path NULL: TEMPER_PROFILE, else the default path); prints its one line.
void temper_mmvq_load_profile(const char * path);
}
