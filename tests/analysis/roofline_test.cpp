// Roofline math on hand-computed cases, and the SVG chart's structure.
#include <gtest/gtest.h>

#include <regex>

#include "temper/error.h"
#include "temper/gpus.h"
#include "temper/roofline.h"
#include "temper/session.h"

namespace temper {
namespace {

Result result(GgmlType type, int n, int k, int ncols, Config c, double median_us, bool is_default = false) {
  Result r;
  r.type = type;
  r.n = n;
  r.k = k;
  r.ncols = ncols;
  r.config = c;
  r.is_default = is_default;
  r.time_us.n = 100;
  r.time_us.median = median_us;
  return r;
}

Session session(double copy_gbs, std::string spec_id = "h100-sxm") {
  Session s;
  s.id = "test";
  SessionDevice d;
  d.info.index = 0;
  d.info.name = "NVIDIA H100 80GB HBM3 <test & co>";
  d.info.arch = "sm_90";
  d.spec_id = std::move(spec_id);
  d.copy_bandwidth_gbs = copy_gbs;
  s.devices.push_back(d);
  return s;
}

TEST(Roofline, BytesAndOpsOfOneLaunch) {
  // q4_0, 4096 × 4096: weights 4096 rows × 128 blocks × 18 B; q8_1 128 × 36 B; outputs 4096 × 4 B.
  EXPECT_DOUBLE_EQ(gemv_bytes(GgmlType::Q4_0, 4096, 4096, 1), 9437184.0 + 4608 + 16384);
  EXPECT_DOUBLE_EQ(gemv_bytes(GgmlType::Q4_0, 4096, 4096, 4), 9437184.0 + 4 * 4608 + 4 * 16384);
  EXPECT_DOUBLE_EQ(gemv_ops(4096, 4096, 1), 33554432.0);
  EXPECT_DOUBLE_EQ(gemv_ops(4096, 14336, 8), 2.0 * 4096 * 14336 * 8);
}

TEST(Roofline, BandwidthBoundPointsAgainstMeasuredBandwidth) {
  Session s = session(3000);
  s.results.push_back(result(GgmlType::Q4_0, 4096, 4096, 1, {4, 1}, 4.0, true));
  s.results.push_back(result(GgmlType::Q4_0, 4096, 4096, 1, {8, 1}, 5.0));
  Result failed = result(GgmlType::Q4_0, 4096, 4096, 1, {16, 8}, 0);
  failed.status = ResultStatus::Failed;
  s.results.push_back(failed);
  const Roofline r = build_roofline(s, 0);
  EXPECT_EQ(r.spec_id, "h100-sxm");
  EXPECT_DOUBLE_EQ(r.bandwidth_roof(), 3000e9);    // measured beats the 3350 GB/s spec
  EXPECT_DOUBLE_EQ(r.compute_roof(), 1978.9e12);   // int8 peak caps the roof; fp32 is a reference line
  ASSERT_EQ(r.points.size(), 2u);
  EXPECT_EQ(r.results_skipped, 1);
  EXPECT_EQ(r.results_failed, 1);
  EXPECT_EQ(r.results_invalid, 0);
  const RooflinePoint& p = r.points[0];
  const double bytes = 9458176, ops = 33554432;
  EXPECT_DOUBLE_EQ(p.bytes, bytes);
  EXPECT_DOUBLE_EQ(p.intensity, ops / bytes);
  EXPECT_DOUBLE_EQ(p.ops_per_s, ops / 4e-6);
  EXPECT_DOUBLE_EQ(p.roof_ops_per_s, 3000e9 * ops / bytes);
  // Below the ridge, % of roof is achieved bytes/s over the bandwidth: 2.364544 TB/s of 3 TB/s.
  EXPECT_NEAR(p.percent_of_roof, 100 * (bytes / 4e-6) / 3000e9, 1e-9);
  EXPECT_NEAR(p.percent_of_roof, 78.8181333, 1e-6);
  EXPECT_NEAR(r.points[1].percent_of_roof, 78.8181333 * 4 / 5, 1e-6);
  EXPECT_NE(p.label().find("(default)"), std::string::npos);
  // Ceilings: measured and spec bandwidth, int8 and fp32 peaks; measured BW and int8 form the roof.
  ASSERT_EQ(r.ceilings.size(), 4u);
  EXPECT_TRUE(r.ceilings[0].measured && r.ceilings[0].in_roof);
  EXPECT_FALSE(r.ceilings[1].in_roof);
  EXPECT_DOUBLE_EQ(r.ceilings[1].value, 3350e9);
  EXPECT_TRUE(r.ceilings[2].in_roof);
  EXPECT_FALSE(r.ceilings[3].in_roof);
  EXPECT_DOUBLE_EQ(r.ceilings[3].value, 67e12);
}

TEST(Roofline, SpecBandwidthWithoutMeasurementAndComputeBoundAboveTheRidge) {
  Session s = session(0);
  s.results.push_back(result(GgmlType::Q8_0, 1024, 1024, 8, {2, 2}, 10.0));
  Roofline r = build_roofline(s, 0);
  EXPECT_DOUBLE_EQ(r.bandwidth_roof(), 3350e9);
  // A spec without an int8 figure and a 1 TFLOPS fp32 peak below bandwidth × AI: the flat part
  // (fp32) is the roof.
  GpuSpec slow = *find_gpu("h100-sxm");
  slow.int8_tops = 0;
  slow.fp32_tflops = 1;
  r = build_roofline(s, 0, &slow);
  const RooflinePoint& p = r.points.at(0);
  EXPECT_GT(3350e9 * p.intensity, 1e12);
  EXPECT_DOUBLE_EQ(p.roof_ops_per_s, 1e12);
  EXPECT_NEAR(p.percent_of_roof, 100 * gemv_ops(1024, 1024, 8) / 10e-6 / 1e12, 1e-9);
  EXPECT_DOUBLE_EQ(r.roof(0.001), 3350e9 * 0.001);
}

TEST(Roofline, DeviceNotInDatabaseUsesRuntimeFigures) {
  Session s = session(900, std::string(kNotInDatabase));
  s.devices[0].info.arch = "sm_75";
  s.devices[0].info.name = "NVIDIA GeForce RTX 2080";
  s.results.push_back(result(GgmlType::Q4_K, 4096, 4096, 1, {4, 1}, 20.0));
  const Roofline r = build_roofline(s, 0);
  EXPECT_DOUBLE_EQ(r.bandwidth_roof(), 900e9);
  EXPECT_DOUBLE_EQ(r.compute_roof(), 0);  // peaks unknown: the roof is the bandwidth line alone
  EXPECT_DOUBLE_EQ(r.points.at(0).roof_ops_per_s, 900e9 * r.points[0].intensity);
  EXPECT_THROW(build_roofline(s, 3), Error);
}

// Issue 19 (14): the chart said "28 failed, not drawn" for 28 configs the plan excluded.
TEST(Roofline, InvalidAndFailedAreCountedApart) {
  Session s = session(3000);
  s.results.push_back(result(GgmlType::Q4_0, 4096, 4096, 1, {4, 1}, 4.0, true));
  for (int i = 0; i < 2; ++i) {
    Result invalid = result(GgmlType::Q4_0, 4096, 4096, 1, {16, 8 + i}, 0);
    invalid.status = ResultStatus::Invalid;
    s.results.push_back(invalid);
  }
  const Roofline r = build_roofline(s, 0);
  EXPECT_EQ(r.results_invalid, 2);
  EXPECT_EQ(r.results_failed, 0);
  EXPECT_EQ(r.skipped_text(), "2 invalid configs (never launched); not drawn");
  const std::string svg = roofline_svg(r, "t");
  EXPECT_NE(svg.find("1 results (2 invalid configs (never launched); not drawn)"), std::string::npos);
  EXPECT_EQ(svg.find("failed"), std::string::npos);
}

TEST(Roofline, SvgIsAWellFormedLogLogChart) {
  Session s = session(3000);
  s.results.push_back(result(GgmlType::Q4_0, 4096, 4096, 1, {4, 1}, 4.0, true));
  s.results.push_back(result(GgmlType::Q4_0, 4096, 4096, 8, {2, 2}, 9.0));
  s.results.push_back(result(GgmlType::Q6_K, 4096, 14336, 1, {4, 1}, 20.0));
  const Roofline r = build_roofline(s, 0);
  const std::string svg = roofline_svg(r, "q4 & q6 <sweep>");
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  // Text is escaped: no raw '&' or '<' from the title or the device name.
  EXPECT_NE(svg.find("q4 &amp; q6 &lt;sweep&gt;"), std::string::npos);
  EXPECT_NE(svg.find("&lt;test &amp; co&gt;"), std::string::npos);
  auto count = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t at = svg.find(needle); at != std::string::npos; at = svg.find(needle, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("<g"), count("</g>"));
  EXPECT_EQ(count("<title>"), count("</title>"));
  EXPECT_EQ(count("<text"), count("</text>"));
  // One marker with a tooltip per point: the default as a square, the others as circles.
  EXPECT_EQ(count("<circle cx=") - /*legend*/ 3, 2u);  // 2 types + "other configs" in the legend
  EXPECT_EQ(count("% of roof, median"), 3u);
  // Log-log: the ncols-8 point has the higher intensity, so it lies further right.
  const std::regex circle(R"re(<circle cx="([0-9.]+)" cy="([0-9.]+)" r="4" fill="#[0-9a-f]+" fill-opacity)re");
  std::vector<double> xs;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), circle); it != std::sregex_iterator(); ++it)
    xs.push_back(std::stod((*it)[1]));
  ASSERT_EQ(xs.size(), 2u);
  EXPECT_GT(r.points[1].intensity, r.points[2].intensity);
  EXPECT_GT(xs[0], xs[1]);
  // Ceiling values appear in the legend.
  EXPECT_NE(svg.find("3 TB/s"), std::string::npos);
  EXPECT_NE(svg.find("67 Tops/s"), std::string::npos);
  EXPECT_NE(svg.find("(above the chart)"), std::string::npos);  // the int8 peak, far above GEMV points
}

TEST(Roofline, JsonCarriesCeilingsAndPoints) {
  Session s = session(3000);
  s.results.push_back(result(GgmlType::Q4_0, 4096, 4096, 1, {4, 1}, 4.0, true));
  const auto j = to_json(build_roofline(s, 0));
  EXPECT_EQ(j["ceilings"].size(), 4u);
  EXPECT_EQ(j["ceilings"][0]["kind"], "bandwidth");
  EXPECT_EQ(j["points"][0]["type"], "q4_0");
  EXPECT_NEAR(j["points"][0]["percent_of_roof"].get<double>(), 78.8181333, 1e-6);
}

}  // namespace
}  // namespace temper
