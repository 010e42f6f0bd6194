// The device vec_dot of every type (tiers 1 and 2), compiled for the CPU (TEMPER_KERNELS_HOST) and driven by
// the mmvq kernel's own work decomposition, against core/quant's integer q8_1 reference: each
// (weight block, int offset) visited exactly once for every grid config, and the sum within the
// reference's reordering tolerance. Catches data-flow slips in kernels/vecdot.h without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <vector>

#include "kernels/vecdot.h"
#include "temper/mmvq_group.h"
#include "temper/mmvq_traits.h"
#include "temper/quant/reference.h"
#include "temper/types.h"

namespace temper {
namespace {

using VecDot = float (*)(const void*, const quant::BlockQ8_1*, int, int);

template <unsigned Type>
float call(const void* vbq, const quant::BlockQ8_1* y, int kbx, int iqs) {
  return kernels::vec_dot<Type>(vbq, y, kbx, iqs);
}

VecDot vec_dot_of(GgmlType t) {
  switch (t) {
    case GgmlType::Q4_0: return call<kernels::kQ4_0>;
    case GgmlType::Q4_1: return call<kernels::kQ4_1>;
    case GgmlType::Q5_0: return call<kernels::kQ5_0>;
    case GgmlType::Q5_1: return call<kernels::kQ5_1>;
    case GgmlType::Q8_0: return call<kernels::kQ8_0>;
    case GgmlType::Q2_K: return call<kernels::kQ2_K>;
    case GgmlType::Q3_K: return call<kernels::kQ3_K>;
    case GgmlType::Q4_K: return call<kernels::kQ4_K>;
    case GgmlType::Q5_K: return call<kernels::kQ5_K>;
    case GgmlType::Q6_K: return call<kernels::kQ6_K>;
    case GgmlType::IQ4_NL: return call<kernels::kIQ4_NL>;
    case GgmlType::IQ4_XS: return call<kernels::kIQ4_XS>;
    case GgmlType::MXFP4: return call<kernels::kMXFP4>;
    case GgmlType::IQ2_XXS: return call<kernels::kIQ2_XXS>;
    case GgmlType::IQ2_XS: return call<kernels::kIQ2_XS>;
    case GgmlType::IQ2_S: return call<kernels::kIQ2_S>;
    case GgmlType::IQ3_XXS: return call<kernels::kIQ3_XXS>;
    case GgmlType::IQ3_S: return call<kernels::kIQ3_S>;
    case GgmlType::IQ1_S: return call<kernels::kIQ1_S>;
    case GgmlType::IQ1_M: return call<kernels::kIQ1_M>;
    case GgmlType::NVFP4: return call<kernels::kNVFP4>;
    case GgmlType::Q1_0: return call<kernels::kQ1_0>;
    case GgmlType::Q2_0: return call<kernels::kQ2_0>;
    default: return nullptr;
  }
}

// Every type with a device kernel: tier 1, then tier 2.
constexpr GgmlType kTypes[] = {GgmlType::Q4_0,    GgmlType::Q4_1,   GgmlType::Q5_0,    GgmlType::Q5_1,
                               GgmlType::Q8_0,    GgmlType::Q2_K,   GgmlType::Q3_K,    GgmlType::Q4_K,
                               GgmlType::Q5_K,    GgmlType::Q6_K,   GgmlType::IQ4_NL,  GgmlType::IQ4_XS,
                               GgmlType::MXFP4,   GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S,
                               GgmlType::IQ3_XXS, GgmlType::IQ3_S,  GgmlType::IQ1_S,   GgmlType::IQ1_M,
                               GgmlType::NVFP4,   GgmlType::Q1_0,   GgmlType::Q2_0};

// One row as the kernel computes it with (nwarps, warp_size): every thread's strided K loop.
double emulate_row(GgmlType type, VecDot dot, const void* row, const quant::BlockQ8_1* y, int k, int nwarps,
                   int warp_size, std::vector<int>& visits) {
  const mmvq::TypeTraits t = mmvq::type_traits(static_cast<uint32_t>(type));
  const int blocks = k / t.qk, per_block = t.qi / t.vdr;
  const int per_iter = mmvq::blocks_per_iter(static_cast<uint32_t>(type), nwarps, warp_size);
  visits.assign(size_t(blocks) * per_block, 0);
  double sum = 0;
  for (int tid = 0; tid < nwarps * warp_size; ++tid) {
    float partial = 0;  // the thread's register, as in the kernel
    for (int kbx = tid / per_block; kbx < blocks; kbx += per_iter) {
      const int kqs = t.vdr * (tid % per_block);
      partial += dot(row, &y[kbx * (t.qk / quant::QK8_1)], kbx, kqs);
      ++visits[size_t(kbx) * per_block + kqs / t.vdr];
    }
    sum += partial;
  }
  return sum;
}

TEST(KernelsHost, VecDotMatchesIntegerReferenceForEveryType) {
  const int k = 4096, rows = 6;
  std::vector<float> x(k);
  quant::fill_random_activations(x.data(), k, 7);
  std::vector<quant::BlockQ8_1> y(k / quant::QK8_1);
  quant::quantize_q8_1(x.data(), y.data(), k, quant::Q8_1Style::Gpu);
  for (GgmlType type : kTypes) {
    SCOPED_TRACE(std::string(type_name(type)));
    ASSERT_TRUE(quant::quant_supported(type));
    const VecDot dot = vec_dot_of(type);
    ASSERT_NE(dot, nullptr);
    const size_t row_bytes = *temper::row_bytes(type, k);
    std::vector<uint8_t> w(row_bytes * rows);
    quant::fill_random(type, w.data(), rows, k, 1000 + static_cast<uint64_t>(type));
    std::vector<int> visits;
    for (int r = 0; r < rows; ++r) {
      const void* row = w.data() + r * row_bytes;
      const quant::DotQ8_1 ref = quant::dot_q8_1_detail(type, row, y.data(), k);
      const double tol = quant::tolerance_q8_1(ref);
      for (int ws : {32, 64})
        for (int nwarps : {1, 4, 16, 32}) {
          if (!mmvq::launchable(1, nwarps, 1, ws)) continue;  // nwarps 32: 32-wide waves only
          const double got = emulate_row(type, dot, row, y.data(), k, nwarps, ws, visits);
          EXPECT_NEAR(got, ref.value, tol) << "row " << r << " nwarps " << nwarps << " wave " << ws;
          for (size_t i = 0; i < visits.size(); ++i) ASSERT_EQ(visits[i], 1) << "slot " << i;
        }
    }
  }
}

// Short rows (fewer blocks than one pass of the block) leave threads idle but still visit every slot once.
TEST(KernelsHost, ShortRowsAreCoveredOnce) {
  for (GgmlType type : kTypes) {
    const mmvq::TypeTraits t = mmvq::type_traits(static_cast<uint32_t>(type));
    const int k = t.qk * 3;
    std::vector<float> x(k);
    quant::fill_random_activations(x.data(), k, 3);
    std::vector<quant::BlockQ8_1> y(k / quant::QK8_1);
    quant::quantize_q8_1(x.data(), y.data(), k);
    std::vector<uint8_t> w(*temper::row_bytes(type, k));
    quant::fill_random(type, w.data(), 1, k, 5);
    std::vector<int> visits;
    const double got = emulate_row(type, vec_dot_of(type), w.data(), y.data(), k, 8, 64, visits);
    const quant::DotQ8_1 ref = quant::dot_q8_1_detail(type, w.data(), y.data(), k);
    EXPECT_NEAR(got, ref.value, quant::tolerance_q8_1(ref)) << type_name(type);
    for (int v : visits) EXPECT_EQ(v, 1) << type_name(type);
  }
}

// The group kernel's q4_K tile against vec_dot<kQ4_K> of each (row, column) pair, accumulated in the same
// order: the same bits, for every (kbx, iqs) a thread visits, with a clamped (repeated) last row as the
// kernel reads past a member's end.
template <int Ncols, int Rows>
void expect_q4_K_tile_equals_vec_dot(const std::vector<uint8_t>& w, int nrows, const std::vector<quant::BlockQ8_1>& y, int k) {
  const int blocks = k / quant::QK_K, stride_col_y = k / quant::QK8_1;
  for (int row0 = 0; row0 < nrows; row0 += Rows) {
    int row_block[Rows];
    for (int r = 0; r < Rows; ++r) row_block[r] = std::min(row0 + r, nrows - 1) * blocks;
    float tile[Ncols][Rows] = {}, pairs[Ncols][Rows] = {};
    for (int kbx = 0; kbx < blocks; ++kbx)
      for (int iqs = 0; iqs < 32; iqs += 2) {
        const int kby = kbx * (quant::QK_K / quant::QK8_1);
        kernels::vec_dot_q4_K_tile<Ncols, Rows>(w.data(), &y[size_t(kby)], row_block, kbx, iqs, stride_col_y, tile);
        for (int c = 0; c < Ncols; ++c)
          for (int r = 0; r < Rows; ++r)
            pairs[c][r] += kernels::vec_dot<kernels::kQ4_K>(w.data(), &y[size_t(c * stride_col_y + kby)], row_block[r] + kbx, iqs);
      }
    for (int c = 0; c < Ncols; ++c)
      for (int r = 0; r < Rows; ++r)
        ASSERT_EQ(std::bit_cast<uint32_t>(tile[c][r]), std::bit_cast<uint32_t>(pairs[c][r]))
            << "ncols " << Ncols << " rows " << Rows << " row " << row0 + r << " column " << c << ": " << tile[c][r] << " against " << pairs[c][r];
  }
}

TEST(KernelsHost, Q4KTileEqualsVecDotBitForBit) {
  const int k = 11 * quant::QK_K, nrows = 7, ncols = 4;
  const size_t row_bytes = *temper::row_bytes(GgmlType::Q4_K, k);
  std::vector<uint8_t> w(row_bytes * nrows);
  quant::fill_random(GgmlType::Q4_K, w.data(), nrows, k, 48);
  std::vector<quant::BlockQ8_1> y(size_t(ncols) * (k / quant::QK8_1));
  std::vector<float> x(k);
  for (int c = 0; c < ncols; ++c) {
    quant::fill_random_activations(x.data(), k, 11 + uint64_t(c));
    quant::quantize_q8_1(x.data(), &y[size_t(c) * (k / quant::QK8_1)], k, quant::Q8_1Style::Gpu);
  }
  expect_q4_K_tile_equals_vec_dot<1, 1>(w, nrows, y, k);
  expect_q4_K_tile_equals_vec_dot<1, 4>(w, nrows, y, k);
  expect_q4_K_tile_equals_vec_dot<2, 2>(w, nrows, y, k);
  expect_q4_K_tile_equals_vec_dot<3, 1>(w, nrows, y, k);
  expect_q4_K_tile_equals_vec_dot<4, 4>(w, nrows, y, k);
}

// A group launch deals its blocks to the members in order: every row of every member is owned by
// exactly one block, and a block never spans two members.
TEST(GroupBlocks, EveryMemberRowOnceInOrder) {
  constexpr int nrows[4] = {67, 33, 22, 16};
  for (int count = 2; count <= mmvq::kGroupMaxMembers; ++count)
    for (int rows : mmvq::kGroupRowsPerBlock) {
      const mmvq::GroupBlocks g = mmvq::group_blocks(nrows, count, rows);
      std::vector<std::vector<int>> seen(static_cast<size_t>(count));
      for (int m = 0; m < count; ++m) seen[size_t(m)].assign(size_t(nrows[m]), 0);
      int last_member = 0;
      for (int block = 0; block < g.blocks; ++block) {
        const mmvq::GroupBlock b = mmvq::group_block(g, rows, block);
        ASSERT_LT(b.member, count);
        EXPECT_GE(b.member, last_member);
        last_member = b.member;
        ASSERT_LT(b.row0, nrows[b.member]) << "a block past its member's rows";
        for (int i = 0; i < rows && b.row0 + i < nrows[b.member]; ++i) ++seen[size_t(b.member)][size_t(b.row0 + i)];
      }
      for (int m = 0; m < count; ++m)
        for (int r = 0; r < nrows[m]; ++r) EXPECT_EQ(seen[size_t(m)][size_t(r)], 1) << count << " " << rows << " " << m << " " << r;
      EXPECT_EQ(g.block_end[mmvq::kGroupMaxMembers - 1], g.blocks);  // members past the last repeat its end
    }
  // Known answer: 67, 33, 22 rows in blocks of 4 are 17, 9 and 6 blocks.
  const mmvq::GroupBlocks g = mmvq::group_blocks(nrows, 3, 4);
  EXPECT_EQ(g.blocks, 32);
  EXPECT_EQ(g.block_end[0], 17);
  EXPECT_EQ(g.block_end[1], 26);
  EXPECT_EQ(mmvq::group_block(g, 4, 16).row0, 64);
  EXPECT_EQ(mmvq::group_block(g, 4, 17).member, 1);
  EXPECT_EQ(mmvq::group_block(g, 4, 31).row0, 20);
  EXPECT_TRUE(mmvq::group_config_in_grid(8, 4));
  EXPECT_FALSE(mmvq::group_config_in_grid(1, 1));
  EXPECT_FALSE(mmvq::group_config_in_grid(2, 8));
}

}  // namespace
}  // namespace temper
