// The GPU spec database: the shipped file against its schema, the parser's errors, look-ups and
// runtime-device matching.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/gpus.h"

namespace temper {
namespace {

using nlohmann::json;

// A validator for the JSON-schema keywords resources/gpus.schema.json uses. Collects every
// violation as "path: what" so a failing test names the entry and field.
class SchemaValidator {
 public:
  std::vector<std::string> errors;

  void validate(const json& schema, const json& value, const std::string& path) {
    if (schema.contains("type") && !has_type(value, schema["type"].get<std::string>()))
      return error(path, "expected type " + schema["type"].get<std::string>());
    if (schema.contains("enum") &&
        std::find(schema["enum"].begin(), schema["enum"].end(), value) == schema["enum"].end())
      error(path, "value " + value.dump() + " not in enum");
    if (value.is_number()) {
      if (schema.contains("minimum") && value.get<double>() < schema["minimum"].get<double>())
        error(path, value.dump() + " < minimum " + schema["minimum"].dump());
      if (schema.contains("maximum") && value.get<double>() > schema["maximum"].get<double>())
        error(path, value.dump() + " > maximum " + schema["maximum"].dump());
    }
    if (value.is_string()) {
      const auto s = value.get<std::string>();
      if (schema.contains("minLength") && s.size() < schema["minLength"].get<size_t>()) error(path, "too short");
      if (schema.contains("pattern") && !std::regex_search(s, std::regex(schema["pattern"].get<std::string>())))
        error(path, "\"" + s + "\" does not match " + schema["pattern"].get<std::string>());
    }
    if (value.is_array()) {
      if (schema.contains("minItems") && value.size() < schema["minItems"].get<size_t>()) error(path, "too few items");
      if (schema.value("uniqueItems", false)) {
        std::set<std::string> seen;
        for (const auto& v : value)
          if (!seen.insert(v.dump()).second) error(path, "duplicate item " + v.dump());
      }
      if (schema.contains("items"))
        for (size_t i = 0; i < value.size(); ++i)
          validate(schema["items"], value[i], path + "[" + std::to_string(i) + "]");
    }
    if (value.is_object()) {
      for (const auto& key : schema.value("required", json::array()))
        if (!value.contains(key.get<std::string>())) error(path, "missing required " + key.get<std::string>());
      const json props = schema.value("properties", json::object());
      for (const auto& [key, v] : value.items()) {
        if (props.contains(key)) validate(props[key], v, path + "." + key);
        else if (!schema.value("additionalProperties", true)) error(path, "unexpected property " + key);
      }
    }
  }

 private:
  static bool has_type(const json& v, const std::string& type) {
    if (type == "object") return v.is_object();
    if (type == "array") return v.is_array();
    if (type == "string") return v.is_string();
    if (type == "integer") return v.is_number_integer();
    if (type == "number") return v.is_number();
    if (type == "boolean") return v.is_boolean();
    ADD_FAILURE() << "validator does not know type " << type;
    return false;
  }
  void error(const std::string& path, const std::string& what) { errors.push_back(path + ": " + what); }
};

json load(const char* relative) {
  return json::parse(read_file(std::string(TEMPER_SOURCE_DIR) + "/" + relative));
}

TEST(GpuDatabase, ShippedFileMatchesItsSchema) {
  SchemaValidator v;
  v.validate(load("resources/gpus.schema.json"), load("resources/gpus.json"), "gpus.json");
  for (const auto& e : v.errors) ADD_FAILURE() << e;
}

TEST(GpuDatabase, ValidatorCatchesViolations) {
  json doc = load("resources/gpus.json");
  doc["gpus"][0]["compute_units"] = 1;           // below minimum (2: the smallest iGPU has 4)
  doc["gpus"][1].erase("source");                 // required
  doc["gpus"][2]["arch"] = "vega20";              // pattern
  doc["gpus"][3]["wave_sizes"] = json::array({64, 64});  // uniqueItems
  doc["gpus"][4]["colour"] = "red";               // additionalProperties
  SchemaValidator v;
  v.validate(load("resources/gpus.schema.json"), doc, "gpus.json");
  EXPECT_EQ(v.errors.size(), 5u);
}

TEST(GpuDatabase, EmbeddedCopyEqualsTheFile) {
  // The library embeds resources/gpus.json at configure time; a stale build would diverge.
  const auto from_file = parse_gpu_database(read_file(std::string(TEMPER_SOURCE_DIR) + "/resources/gpus.json"), "file");
  ASSERT_EQ(from_file.size(), gpu_database().size());
  for (size_t i = 0; i < from_file.size(); ++i) EXPECT_EQ(from_file[i].id, gpu_database()[i].id);
}

TEST(GpuDatabase, CoversTheRequiredArchitectures) {
  for (const char* arch : {"gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1101", "gfx1102",
                           "gfx1103", "gfx1150", "gfx1151", "gfx1200", "gfx1201", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"})
    EXPECT_NE(find_gpu(arch), nullptr) << arch;
}

TEST(GpuDatabase, EntriesAreConsistent) {
  for (const auto& g : gpu_database()) {
    SCOPED_TRACE(g.id);
    EXPECT_LE(g.lds_per_block, g.lds_per_cu);
    EXPECT_EQ(g.is_nvidia(), g.arch.rfind("sm_", 0) == 0);
    std::vector<int> waves{32, 64};  // RDNA runs both
    if (g.is_nvidia()) waves = {32};
    if (g.family.rfind("gcn", 0) == 0 || g.family.rfind("cdna", 0) == 0) waves = {64};
    EXPECT_EQ(g.wave_sizes, waves);
    EXPECT_GT(g.memory_bandwidth_gbs, 0);
    EXPECT_GT(g.fp32_tflops, 0);
  }
}

TEST(GpuDatabase, FindsByIdArchAndName) {
  ASSERT_NE(find_gpu("mi300x"), nullptr);
  EXPECT_EQ(find_gpu("MI300X")->arch, "gfx942");
  EXPECT_EQ(find_gpu("gfx942")->id, "mi300x");            // an arch names its reference SKU
  EXPECT_EQ(find_gpu("sm_90")->id, "h100-sxm");
  EXPECT_EQ(find_gpu("RX 7900 XTX")->id, "rx7900xtx");
  EXPECT_EQ(find_gpu("rtx 4090")->id, "rtx4090");          // unique substring of a name
  EXPECT_EQ(find_gpu("7900"), nullptr);                    // ambiguous: XTX, XT and GRE
  EXPECT_EQ(find_gpus("7900").size(), 3u);
  EXPECT_EQ(find_gpu("gfx1103")->id, "radeon-780m");
  EXPECT_EQ(find_gpu("780m")->compute_units, 12);
  EXPECT_EQ(find_gpu("gfx1150")->id, "radeon-890m");
  EXPECT_EQ(find_gpu("gfx1151")->id, "radeon-8060s");
  EXPECT_EQ(find_gpu("8050S")->compute_units, 32);
  EXPECT_EQ(find_gpu("gfx1150")->registers_per_simd, 32768);  // no 1.5x VGPR file on gfx1150, unlike gfx1151
  EXPECT_EQ(find_gpu("gfx1151")->registers_per_simd, 49152);
  EXPECT_EQ(find_gpu("gfx9999"), nullptr);
  EXPECT_EQ(find_gpu(""), nullptr);
}

DeviceInfo device(std::string name, std::string arch, int cus, double gb = 0) {
  DeviceInfo d;
  d.name = std::move(name);
  d.arch = std::move(arch);
  d.compute_units = cus;
  d.memory_bytes = static_cast<uint64_t>(gb * 1e9);
  return d;
}

TEST(GpuDatabase, MatchesRuntimeDevices) {
  auto id = [](const GpuSpec* g) { return g ? g->id : std::string("not in database"); };
  EXPECT_EQ(id(match_device(device("NVIDIA H100 80GB HBM3", "sm_90", 132, 85))), "h100-sxm");
  EXPECT_EQ(id(match_device(device("NVIDIA H100 PCIe", "sm_90", 114, 85))), "h100-pcie");
  EXPECT_EQ(id(match_device(device("NVIDIA H200", "sm_90", 132, 150))), "h200");
  // Same arch and SM count, an unknown name: memory size decides.
  EXPECT_EQ(id(match_device(device("NVIDIA Graphics Device", "sm_90", 132, 150.1))), "h200");
  EXPECT_EQ(id(match_device(device("AMD Instinct MI210", "gfx90a:sramecc+:xnack-", 104))), "mi210");
  EXPECT_EQ(id(match_device(device("", "gfx90a", 110))), "mi250x");
  EXPECT_EQ(id(match_device(device("AMD Instinct MI325X", "gfx942:sramecc+:xnack-", 304))), "mi325x");
  EXPECT_EQ(id(match_device(device("", "gfx942", 304, 206))), "mi300x");
  // RDNA runtimes may report work-group processors (two CUs each).
  EXPECT_EQ(id(match_device(device("Radeon RX 7900 XTX", "gfx1100", 48))), "rx7900xtx");
  EXPECT_EQ(id(match_device(device("AMD Radeon RX 7900 XTX", "gfx1100", 96))), "rx7900xtx");
  EXPECT_EQ(id(match_device(device("AMD Radeon RX 7900 GRE", "gfx1100", 40))), "rx7900gre");
  // Phoenix iGPUs: the CU count tells them apart, or — 760M counted in WGPs (4) against the
  // 740M's 4 CUs — the name; an APU's generic runtime name cannot, so it is not guessed.
  EXPECT_EQ(id(match_device(device("AMD Radeon Graphics", "gfx1103", 12))), "radeon-780m");
  EXPECT_EQ(id(match_device(device("AMD Radeon 760M", "gfx1103", 4))), "radeon-760m");
  EXPECT_EQ(id(match_device(device("AMD Radeon Graphics", "gfx1103", 4))), "not in database");
  // Strix Point and Strix Halo (issue 50): the CU count tells each pair apart, in CUs or in WGPs.
  EXPECT_EQ(id(match_device(device("AMD Radeon Graphics", "gfx1150", 16))), "radeon-890m");
  EXPECT_EQ(id(match_device(device("AMD Radeon 880M", "gfx1150", 6))), "radeon-880m");
  EXPECT_EQ(id(match_device(device("AMD Radeon Graphics", "gfx1151", 40))), "radeon-8060s");
  EXPECT_EQ(id(match_device(device("AMD Radeon Graphics", "gfx1151", 16))), "radeon-8050s");
  // Unknown arch, or a cut-down part whose CU count matches no entry: not in the database.
  EXPECT_EQ(match_device(device("NVIDIA GeForce RTX 2080", "sm_75", 46)), nullptr);
  EXPECT_EQ(match_device(device("NVIDIA H100 NVL", "sm_90", 120, 94)), nullptr);
  // Same arch and CUs, nothing to tell them apart: refuse rather than guess the peaks.
  EXPECT_EQ(match_device(device("", "sm_80", 108)), nullptr);
}

TEST(GpuDatabase, ParserErrorsNameEntryAndField) {
  const std::string good = read_file(std::string(TEMPER_SOURCE_DIR) + "/resources/gpus.json");
  auto message = [](const std::string& text) {
    try {
      parse_gpu_database(text, "test.json");
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::BadInput);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("{").find("not valid JSON"), std::string::npos);
  EXPECT_NE(message("[]").find("\"gpus\" array"), std::string::npos);
  json doc = json::parse(good);
  doc["gpus"][1]["compute_units"] = "many";
  EXPECT_NE(message(doc.dump()).find("gpus[1] (mi60).compute_units: expected a non-negative integer"), std::string::npos);
  doc = json::parse(good);
  doc["gpus"][2].erase("memory_bandwidth_gbs");
  EXPECT_NE(message(doc.dump()).find("missing field \"memory_bandwidth_gbs\""), std::string::npos);
  doc = json::parse(good);
  doc["gpus"][3]["id"] = "mi50";
  EXPECT_NE(message(doc.dump()).find("duplicate id"), std::string::npos);
  doc = json::parse(good);
  doc["gpus"][0]["vendor"] = "intel";
  EXPECT_NE(message(doc.dump()).find("vendor: expected \"amd\" or \"nvidia\""), std::string::npos);
}

}  // namespace
}  // namespace temper

namespace temper {
namespace {

TEST(GpuDatabase, SpecForUnknownDeviceComesFromTheRuntime) {
  DeviceInfo d;
  d.name = "NVIDIA GeForce RTX 2080";
  d.arch = "sm_75";
  d.api = "cuda";
  d.compute_units = 46;
  d.warp_size = 32;
  d.regs_per_cu = 65536;
  d.shared_per_cu = 65536;
  d.shared_per_block = 49152;
  d.max_threads_per_cu = 1024;
  d.l2_bytes = 4u << 20;
  d.memory_clock_mhz = 7000;
  d.memory_bus_bits = 256;
  const GpuSpec g = spec_for_device(d);
  EXPECT_EQ(g.id, "not in database");
  EXPECT_TRUE(g.is_nvidia());
  EXPECT_EQ(g.registers_per_simd, 16384);
  EXPECT_EQ(g.max_waves_per_simd, 8);
  EXPECT_EQ(g.max_blocks_per_cu, 16);
  EXPECT_DOUBLE_EQ(g.memory_bandwidth_gbs, 448);
  EXPECT_EQ(g.llc_bytes, 4u << 20);
  // A known device gets its entry.
  d.name = "NVIDIA H100 80GB HBM3";
  d.arch = "sm_90";
  d.compute_units = 132;
  EXPECT_EQ(spec_for_device(d).id, "h100-sxm");
  EXPECT_EQ(family_of_arch("gfx90a:sramecc+:xnack-"), "cdna2");
  EXPECT_EQ(family_of_arch("gfx1151"), "rdna3.5");
  EXPECT_EQ(family_of_arch("sm_89"), "ada");
  EXPECT_EQ(family_of_arch("gfx803"), "");
}

}  // namespace
}  // namespace temper
