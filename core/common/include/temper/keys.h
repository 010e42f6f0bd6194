#pragma once
// The keys every record is named by, declared once: a launch config, a shape (type, n, k) and a
// group (device, shape, ncols). Each has one ordering and one text form; records that carry a key
// derive from it, so `r.type`, `r.shape()` and `r.group()` mean the same everywhere.
#include <compare>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "temper/mmvq_traits.h"
#include "temper/types.h"

namespace temper {

// Kernel launch parameters: the thing Temper tunes.
struct Config {
  int nwarps = 1;
  int rows_per_block = 1;
  auto operator<=>(const Config&) const = default;
};
std::string config_text(Config c, std::string_view times = "x");  // "4x2": nwarps x rows_per_block
std::string config_words(Config c);  // "nwarps 4, rows_per_block 2"

// The kernel grid's axes, from the kernel traits: the only nwarps and rows_per_block any kernel set
// is built with (plans, the GUI's grid and the checks all take them from here).
inline std::vector<int> grid_nwarps() { return std::vector<int>(std::begin(mmvq::kGridNwarps), std::end(mmvq::kGridNwarps)); }
inline std::vector<int> grid_rows_per_block() {
  return std::vector<int>(std::begin(mmvq::kGridRowsPerBlock), std::end(mmvq::kGridRowsPerBlock));
}
std::string values_text(const std::vector<int>& values);  // "{1, 2, 4, 8}"

// One GEMV shape: dst[n] = W[n×k] · x[k] with W of `type`.
struct ShapeKey {
  GgmlType type = GgmlType::Q4_0;
  int n = 0;  // rows
  int k = 0;  // row length
  const ShapeKey& shape() const { return *this; }
  auto operator<=>(const ShapeKey&) const = default;  // type id, n, k
};
std::string shape_text(const ShapeKey& s, std::string_view times = "x");  // "q4_K 14336x4096"

struct DeviceKey {
  int device = 0;  // DeviceInfo::index
  auto operator<=>(const DeviceKey&) const = default;
};

// What a verdict is given per: one shape at one ncols on one device. Ordered device, shape, ncols.
struct GroupKey : DeviceKey, ShapeKey {
  int ncols = 1;
  const GroupKey& group() const { return *this; }
  auto operator<=>(const GroupKey&) const = default;
};
// "q4_K 14336x4096 ncols 1", prefixed by "device 1 " when `with_device`.
std::string group_text(const GroupKey& g, bool with_device = false);

inline GroupKey group_key(int device, const ShapeKey& shape, int ncols) {
  GroupKey g;
  g.device = device;
  static_cast<ShapeKey&>(g) = shape;
  g.ncols = ncols;
  return g;
}

}  // namespace temper
