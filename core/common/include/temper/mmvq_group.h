#pragma once
// Same-input groups in Temper's own kernel (kernels/mmvq_group.h): 2..4 GEMVs that read the same
// activations (a layer's q, k and v) as one launch, the way the hook's mul_mat_group entries run
// them (docs/engine.md). The grid, the limits and how a launch's blocks are dealt to its members,
// as constexpr data shared by the device code and core. Plain C++, like mmvq_traits.h.
#include "temper/mmvq_traits.h"

namespace temper::mmvq {

constexpr int kGroupMaxMembers = 4;
constexpr int kGroupMaxNcols = 4;  // the hook compiles groups for batch widths 1..4
constexpr int kGroupNwarps[] = {2, 4, 8};
constexpr int kGroupRowsPerBlock[] = {1, 2, 4};

TEMPER_HD constexpr bool group_config_in_grid(int nwarps, int rows_per_block) {
  bool w = false, r = false;
  for (int v : kGroupNwarps) w = w || v == nwarps;
  for (int v : kGroupRowsPerBlock) r = r || v == rows_per_block;
  return w && r;
}

// A launch deals its blocks to the members in order, each member's rows in blocks of rows_per_block:
// member m owns blocks [block_end[m-1], block_end[m]); members past the last repeat its end.
struct GroupBlocks {
  int block_end[kGroupMaxMembers] = {};
  int blocks = 0;
};
TEMPER_HD constexpr GroupBlocks group_blocks(const int* nrows, int count, int rows_per_block) {
  GroupBlocks g;
  for (int m = 0; m < kGroupMaxMembers; ++m) {
    if (m < count) g.blocks += (nrows[m] + rows_per_block - 1) / rows_per_block;
    g.block_end[m] = g.blocks;
  }
  return g;
}

// The member that owns `block` and that block's first row within the member. Compares with constant
// indices only: in a kernel, a dynamic index into its parameters makes nvcc copy them to a stack frame.
struct GroupBlock {
  int member = 0, row0 = 0;
};
TEMPER_HD constexpr GroupBlock group_block(const GroupBlocks& g, int rows_per_block, int block) {
  int m = 0, first = 0;
  for (int i = 0; i < kGroupMaxMembers - 1; ++i)
    if (block >= g.block_end[i]) m = i + 1, first = g.block_end[i];
  return {m, (block - first) * rows_per_block};
}

}  // namespace temper::mmvq
