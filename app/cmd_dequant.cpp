// `temper dequant MODEL.gguf TENSOR [--rows A:B] -o OUT.f32`: a tensor (or some of its rows) as
// little-endian float32, through the same CPU reference that verifies the kernels.
#include <cstdio>
#include <ostream>
#include <streambuf>
#include <string>

#include <nlohmann/json.hpp>

#include "cli.h"
#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/gguf.h"
#include "temper/input.h"
#include "temper/quant/reference.h"
#include "temper/quant/tensor.h"

namespace temper::cli {
namespace cmd_dequant {  // own namespace: the commands are compiled together (unity build)
namespace {

std::string supported_list() {
  std::string list = "f32, f16, bf16";
  for (GgmlType t : quant::supported_types()) list += ", " + std::string(type_name(t));
  return list;
}

// Passes bytes on to `sink` and tells stderr each tenth of `total` done, so a large dequant (its
// output is streamed to disk, never held) is not silent for minutes.
class ProgressBuf : public std::streambuf {
 public:
  ProgressBuf(std::streambuf* sink, uint64_t total) : sink_(sink), total_(total) {}

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    const std::streamsize w = sink_->sputn(s, n);
    advance(static_cast<uint64_t>(w));
    return w;
  }
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    if (traits_type::eq_int_type(sink_->sputc(traits_type::to_char_type(c)), traits_type::eof())) return traits_type::eof();
    advance(1);
    return c;
  }
  int sync() override { return sink_->pubsync(); }

 private:
  void advance(uint64_t n) {
    done_ += n;
    const uint64_t tenth = total_ ? done_ * 10 / total_ : 10;
    if (tenth > told_ && tenth <= 10) {
      told_ = tenth;
      std::fprintf(stderr, "dequant: %llu%% (%llu of %llu MiB)\n", static_cast<unsigned long long>(tenth * 10),
                   static_cast<unsigned long long>(done_ >> 20), static_cast<unsigned long long>(total_ >> 20));
    }
  }
  std::streambuf* sink_;
  uint64_t total_, done_ = 0, told_ = 0;
};

constexpr uint64_t kProgressFromBytes = uint64_t{64} << 20;

struct Options {
  std::string model, tensor, rows, output;
  bool json = false, force = false;
};

int run_dequant(const Options& o) {
  const std::vector<std::string> pos = {o.model, o.tensor};
  const auto* out_path = &o.output;

  refuse_overwriting_inputs(*out_path, {pos[0]});
  check_output(*out_path, {o.force});
  const GgufFile model = GgufFile::open(pos[0]);
  const TensorInfo* tensor = model.find_tensor(pos[1]);
  if (!tensor) fail(ErrorKind::BadInput, pos[0] + ": no tensor named '" + pos[1] + "'");
  if (!quant::tensor_type_supported(tensor->type))
    fail(ErrorKind::BadInput, "tensor " + pos[1] + " has type " + std::string(type_name(tensor->type)) +
                                  ", which dequant does not read (it reads " + supported_list() + ")");
  const uint64_t rows = quant::tensor_rows(*tensor);
  const quant::RowRange range = o.rows.empty() ? quant::RowRange{0, rows} : quant::parse_row_range(o.rows, rows);

  const uint64_t values = (range.end - range.begin) * tensor->dims[0];
  write_file_atomic(*out_path, [&](std::ostream& out) {
    if (values * 4 < kProgressFromBytes) return quant::dequantize_tensor(*tensor, range, out);
    ProgressBuf progress(out.rdbuf(), values * 4);
    std::ostream counted(&progress);
    counted.exceptions(std::ios::badbit);
    quant::dequantize_tensor(*tensor, range, counted);
  }, {o.force});

  if (o.json) {
    nlohmann::json j{{"tensor", pos[1]},
                     {"type", type_name(tensor->type)},
                     {"row_length", tensor->dims[0]},
                     {"rows", {{"begin", range.begin}, {"end", range.end}, {"total", rows}}},
                     {"values", values},
                     {"output", path_text(*out_path)},
                     {"bytes", values * 4}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    // "rows of" spelled out: inspect lists dims in ggml's order (ne[0] = row length first).
    std::printf("%s (%s, %llu rows of %llu values): rows %llu:%llu -> %s (%llu float32 values)\n", pos[1].c_str(),
                std::string(type_name(tensor->type)).c_str(), static_cast<unsigned long long>(rows),
                static_cast<unsigned long long>(tensor->dims[0]), static_cast<unsigned long long>(range.begin),
                static_cast<unsigned long long>(range.end), out_path->c_str(), static_cast<unsigned long long>(values));
  }
  return 0;
}

const Registrar registrar{Command{
    "dequant",
    "write a tensor (or rows of it) dequantized as little-endian float32",
    "Dequantizes TENSOR of MODEL.gguf with Temper's CPU reference (bit-identical to ggml's\n"
    "dequantize_row_*) and writes it row after row as little-endian float32: rows x row_length values,\n"
    "row_length being the tensor's ne[0] and rows the product of its other dimensions.\n"
    "\n"
    "Types: f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_K..q6_K, iq4_nl, iq4_xs, mxfp4 and the\n"
    "other types Temper has a reference for; any other type is an error naming it (exit 2).",
    [](CLI::App& app) {
      auto o = std::make_shared<Options>();
      app.add_option("MODEL", o->model, "the GGUF file")->required();
      app.add_option("TENSOR", o->tensor, "the tensor's name")->required();
      app.add_option("--rows", o->rows, "rows A to B-1 only; also A: (to the end), :B (from 0) and A (one row)")
          ->type_name("A:B");
      add_output(app, o->output, "the output file (written whole or not at all)")->required();
      add_force(app, o->force);
      add_json(app, o->json);
      return [o] { return run_dequant(*o); };
    }}};

}  // namespace
}  // namespace cmd_dequant
}  // namespace temper::cli
