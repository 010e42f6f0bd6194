#pragma once
// The wire protocol between Temper and `temper-probe`, the small program Temper builds against a
// user's hooked ggml tree (docs/engine.md). Temper starts the probe as a child process and speaks to
// it over its stdin/stdout; a crash or GPU fault in the engine can end the probe, never Temper.
// This header is plain C++17 with no includes beyond <cstdint>: the probe (compiled by the engine's
// own toolchain, nvcc or hipcc) and core/engine (g++) both include it.
//
// Framing, little-endian:
//   request:  u32 op, u32 payload_bytes, payload
//   response: i32 status (0 ok, else ProbeStatus), u32 payload_bytes, payload
//             (on error the payload is one line of UTF-8 text saying what failed)
// Integers in payloads are the fixed-width types named per op, packed without padding.
#include <cstdint>

namespace temper::probe {

// 2 added TimeKernel; 3 added GemvLaunch and TimeLaunch (the fused gate/up and MUL_MAT_ID launches)
// and Quantize of up to 64 columns; 4 added Replay's batch width and forced mmvq/mmq paths (hook v4),
// its per-token count of changed path decisions, and Hello's path_hooks; 5 added Replay's same-input
// runs (mm+), its group override line and per-token group launches, and Hello's group_hooks; 6 added
// Replay's pipeline line and per-token pipelined launches, and Hello's pipeline_bits (hook v6). Temper accepts probes from kMinProtocolVersion on; an op newer
// than the probe's version is refused on Temper's side with one line (rebuild the probe).
constexpr uint32_t kProtocolVersion = 6;
constexpr uint32_t kMinProtocolVersion = 1;

enum class Op : uint32_t {
  // -> text: "key=value\n" lines: protocol, name, arch (sm_90 / gfx90a), cc, sms, warp_size,
  //    l2_bytes, memory_bytes, clock_mhz, memory_clock_mhz, memory_bus_bits, shared_per_block,
  //    shared_per_sm, regs_per_block, regs_per_sm, max_threads_per_sm, driver, runtime, pci_bus_id,
  //    hook_version, kernel_set (full|all|ncols1|ci), graphs (0|1), path_hooks (protocol 4: the hook's
  //    TEMPER_MMVQ_PATH_HOOKS, bit 0 MUL_MAT's mmvq/mmq choice wrapped, bit 1 MUL_MAT_ID's cap),
  //    group_hooks (protocol 5: TEMPER_MMVQ_GROUP_HOOKS, bit 0 the graph evaluation launches groups,
  //    bit 1 graph_optimize orders runs; 0 for an older hook), pipeline_bits (protocol 6: the bits of the
  //    hook's pipelined instantiations, 1 early launch, 2 L2 prefetch; 0: none compiled)
  Hello = 1,
  Alloc = 2,      // u64 bytes -> u64 handle (device memory in the engine's own buffer type)
  Free = 3,       // u64 handle
  Upload = 4,     // u64 handle, u64 offset, bytes... (rest of payload)
  Download = 5,   // u64 handle, u64 offset, u64 bytes -> bytes
  Fill = 6,       // u64 handle, u8 byte (whole buffer)
  // u64 x (ncols × k floats), u64 y, i32 k, i32 ncols: the engine's own q8_1 quantizer writes y
  // (ncols × k/32 blocks of 36 bytes); the probe remembers that y holds x quantized, because the
  // engine's MUL_MAT takes float activations and quantizes them itself.
  Quantize = 7,
  // i32 type, i32 n, i32 k, i32 ncols, i32 nwarps, i32 rows_per_block, u64 weights, u64 y, u64 dst:
  // one MUL_MAT through the engine (its quantize + mmvq), synchronised. nwarps 0: the engine's stock
  // launch (no override); otherwise the hook's instantiation of that config.
  Gemv = 8,
  // i32 type, n, k, ncols, nwarps, rows_per_block, i32 groups, i32 per_group, u64 y, u64 dst,
  // u32 copies, u64 weights[copies] -> f64 us[groups]: microseconds per MUL_MAT, each group being
  // per_group MUL_MATs back to back (weights rotating through the copies in the order given,
  // continuing across groups), device events around each group only.
  Time = 9,
  HasKernel = 10,   // i32 type, i32 ncols, i32 nwarps, i32 rows_per_block -> u8 (compiled in)
  // i32 type, i32 ncols, i32 nwarps, i32 rows_per_block -> i32 registers, shared_bytes, local_bytes,
  // max_threads_per_block, blocks_per_sm (the engine kernel's own attributes; all 0 when unknown)
  Attributes = 11,
  StockConfig = 12,  // i32 type, i32 ncols, i32 k -> i32 nwarps, i32 rows_per_block (what the engine launches)
  Bandwidth = 13,    // u64 bytes -> f64 GB/s (device-to-device copy, read + write counted)
  Quit = 14,
  // One decode token's GEMVs as one graph, timed per token. u32 tokens, then a UTF-8 plan, a line a
  // node, in the model's order (handles are Alloc'ed and filled before):
  //   profile PATH|-          the profile the hook loads for this run (- : none, stock)
  //   x H / out H / ids H     float activations (>= max K floats), an output arena, i32 expert ids
  //   ncols N                 (protocol 4, before the nodes) batch width 1..8: every node reads N
  //                           columns; MUL_MAT_ID nodes read N tokens of U ids each (ids: N × U i32),
  //                           mmid_down N × U columns; gate/up are not fused at N > 1 (as in ggml)
  //   path L TYPE P           (protocol 4, before the nodes) force ggml's mmvq/mmq pick for launch L
  //                           (0 MUL_MAT, 2 MUL_MAT_ID) of TYPE at this width: P 1 mmvq, 2 mmq
  //                           (temper_mmvq_set_path_override, cleared after the run)
  //   group W R | group off   (protocol 5, before the nodes) same-input groups for the run: force the
  //                           group config nwarps W (2|4|8), rows R (1|2|4), or force groups off
  //                           (temper_mmvq_set_group_override; absent: 0, the profile decides; cleared after)
  //   pipeline on|off         (protocol 6, before the nodes) pipelined launches for the run: every tuned
  //                           one-column launch runs its pipelined instantiation, or none does
  //                           (temper_mmvq_set_pipeline_override; absent: the hook decides; cleared after)
  //   mm TYPE N K W           MUL_MAT of weights W (K×N) with x, through its own tensor over x (so the
  //                           hook never groups it with the node before)
  //   mm+ TYPE N K W          (protocol 5) MUL_MAT reading the very tensor the mm/mm+ node before it
  //                           read (a same-input run: q, k, v), kept adjacent in the graph
  //   glu TYPE N K G U        gate and up MUL_MATs + SwiGLU (the engine fuses them at one token)
  //   mmid TYPE N K E U W     MUL_MAT_ID: U of the E experts of W (K×N×E) with x broadcast to U columns
  //   mmid_glu TYPE N K E U G U2   the same for expert gate and up, + SwiGLU (fused by the engine)
  //   mmid_down TYPE N K E U W     MUL_MAT_ID with U columns of K values (the experts' own outputs)
  // -> f64 us[tokens] (device time of each token's graph), then i64 mmvq launches per token and
  //    i64 of them tuned (launched from a Temper instantiation, not the stock table); protocol 4 adds
  //    i64 path decisions per token the hook answered otherwise than ggml (temper_mmvq_path_changes);
  //    protocol 5 adds i64 group launches per token (temper_mmvq_group_launches); protocol 6 adds i64
  //    pipelined launches per token (temper_mmvq_pipelined_launches).
  Replay = 15,
  // Protocol 2. The Time payload and answer, but kernel-only: the activations are the ones Quantize
  // wrote (quantized once, by the engine's own q8_1 quantizer, in the engine's padded layout), and
  // only the hook's mul_mat_vec_q instantiation of (nwarps, rows_per_block) is launched per step,
  // through the registry's launch function (upstream's own launch path, PDL included), weights
  // rotating through the copies; device events around each group only. nwarps must name a compiled
  // grid instantiation (NotCompiled otherwise): the stock config is timed as its grid
  // instantiation, never through the stock dispatch. The launch arguments (strides, fast-division
  // values, fusion, stream) are the ones the engine itself built for one MUL_MAT of this shape; dst
  // is filled with 0xFF after that MUL_MAT, so afterwards it holds the kernel-only launches' output.
  TimeKernel = 16,
  // Protocol 3. One launch of any kind, as the engine makes it (docs/plan.md), after the launch
  // header: i32 launch (0 MUL_MAT, 1 fused gate/up: MUL_MAT, MUL_MAT, GLU, 2 MUL_MAT_ID, 3 fused
  // MUL_MAT_ID gate/up), i32 glu (0 SwiGLU, 1 GeGLU), i32 type, n, k, ncols, nwarps, rows_per_block,
  // i32 experts, i32 used, i32 ids_sets, u64 gate_offset (bytes from a weight buffer's start to the
  // gate matrix; the up matrix, or all experts' matrices, start at 0).
  //   GemvLaunch: header, u64 weights, u64 y, u64 ids, u64 dst — one launch, synchronised; ids set 0.
  //   TimeLaunch: header, i32 groups, i32 per_group, u64 y, u64 ids, u64 dst, u32 copies,
  //               u64 weights[copies] -> f64 us[groups], as Time (launch i reads copy i mod copies and
  //               ids set i mod ids_sets).
  // y holds activations Quantize wrote: `used` columns for MUL_MAT_ID (each expert its own, as decode's
  // down projection), else ncols. ids holds ids_sets × used i32 expert ids (0 for the plain kinds). The
  // probe refuses (EngineError) when the engine did not launch mmvq as that kind (e.g. did not fuse).
  GemvLaunch = 17,
  TimeLaunch = 18,
};

enum class ProbeStatus : int32_t { Ok = 0, BadRequest = 1, EngineError = 2, NotCompiled = 3 };

}  // namespace temper::probe
