// A stand-in for llama.cpp's llama-bench, for CI without a GPU: it takes llama-bench's arguments
// (-m, -p, -n, -ub, -b, -r, -o json|jsonl|csv|md; comma lists as llama-bench allows) and prints its
// output formats with the same fields, from synthetic, deterministic numbers. Like a build of a
// tree patched with Temper's hook, it reads TEMPER_PROFILE (unset: the hook's default path, empty:
// none): with a Temper profile holding approved entries it prints the hook's one line on stderr and
// runs exactly 10 % faster (with approved pipelined entries, hook v7, another 8 %); otherwise stock. Every sample carries ±0.4 % noise, a hash of the
// invocation's number and the sample's, so a test's numbers are the same on every run.
//
// From the environment:
//   FAKE_LLAMA_BENCH_LOG=FILE     one line per invocation appended: "stock ARGS pid=PID" or "profile ..."
//                                 (its line count numbers the invocations)
//   FAKE_LLAMA_BENCH_UNPATCHED=1  a build without the hook: no line, never faster
//   FAKE_LLAMA_BENCH_FAIL=1       fail like a model that does not load (exit 1)
//   FAKE_LLAMA_BENCH_COMMIT=HEX   build_commit (default "0d1e2f3"); the build_number is 4242
//   FAKE_LLAMA_BENCH_GPU=NAME     gpu_info (default "NVIDIA H100 80GB HBM3")
//   FAKE_LLAMA_BENCH_SLEEP_MS=MS  real wall time per invocation (so a test can interrupt one)
//   FAKE_LLAMA_BENCH_PIPELINE_GAIN=X  what approved *_pipelined entries multiply the speed by (default 1.08)
// A hostile llama-bench (what Temper must survive, issue 51):
//   FAKE_LLAMA_BENCH_STDOUT=FILE  FILE's bytes on stdout instead of the results (exit 0)
//   FAKE_LLAMA_BENCH_STDERR=TEXT  one more line on stderr, after the hook's
//   FAKE_LLAMA_BENCH_FLOOD=BYTES  that many bytes of filler on stdout before anything else
//   FAKE_LLAMA_BENCH_SAMPLES=N    N samples a test, whatever -r asks
//   FAKE_LLAMA_BENCH_LINGER_MS=MS a child left behind holding stdout and stderr open MS ms after the stand-in ends
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fake_mix.h"

namespace {

std::string env(const char* name, const char* fallback = "") {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

std::vector<int> int_list(const std::string& s) {
  std::vector<int> v;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) v.push_back(std::atoi(item.c_str()));
  return v;
}

using temper::fake::mix;

// The profile as the hook would find it; "" when none is in effect.
std::string profile_path() {
  const char* set = std::getenv("TEMPER_PROFILE");
  if (set) return set;
  const std::string xdg = env("XDG_CONFIG_HOME");
  if (!xdg.empty()) return xdg + "/temper/engine-profile.json";
  const std::string home = env("HOME");
  return home.empty() ? std::string() : home + "/.config/temper/engine-profile.json";
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

struct Test {
  int n_prompt, n_gen, n_ubatch, n_batch;
  std::vector<uint64_t> ns;
  std::vector<double> ts;
};

std::string join(const std::vector<double>& v) {
  std::string s;
  char b[64];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(b, sizeof b, "%s%.6f", i ? ", " : "", v[i]);
    s += b;
  }
  return s;
}
std::string join(const std::vector<uint64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

double avg(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / double(v.size());
}
double stdev(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = avg(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / double(v.size() - 1));
}

}  // namespace

int main(int argc, char** argv) {
  std::string model, output = "md";
  std::vector<int> prompts{512}, gens{128}, ubatches{512}, batches{2048};
  int reps = 5;
  std::string args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    args += (i > 1 ? " " : "") + a;
    if (i + 1 >= argc) {
      std::fprintf(stderr, "error: missing value for %s\n", a.c_str());
      return 1;
    }
    const std::string v = argv[++i];
    args += " " + v;
    if (a == "-m" || a == "--model") model = v;
    else if (a == "-p" || a == "--n-prompt") prompts = int_list(v);
    else if (a == "-n" || a == "--n-gen") gens = int_list(v);
    else if (a == "-ub" || a == "--ubatch-size") ubatches = int_list(v);
    else if (a == "-b" || a == "--batch-size") batches = int_list(v);
    else if (a == "-r" || a == "--repetitions") reps = std::atoi(v.c_str());
    else if (a == "-o" || a == "--output") output = v;
    else if (a == "-ngl" || a == "-fa" || a == "-t") continue;  // accepted, no effect here
    else {
      std::fprintf(stderr, "error: invalid parameter for argument: %s\n", a.c_str());
      return 1;
    }
  }
  if (model.empty() || reps < 1) {
    std::fprintf(stderr, "error: -m MODEL and -r >= 1 are required here\n");
    return 1;
  }
  std::fprintf(stderr, "llama_model_loader: loaded meta data from %s (stand-in)\n", model.c_str());
  if (!env("FAKE_LLAMA_BENCH_FAIL").empty()) {
    std::fprintf(stderr, "llama_model_load: error loading model: stand-in asked to fail\nmain: error: failed to load model '%s'\n",
                 model.c_str());
    return 1;
  }

  // The hook: TEMPER_PROFILE, its line, and whether it makes mmvq faster.
  bool faster = false, pipelined = false;
  const std::string profile = env("FAKE_LLAMA_BENCH_UNPATCHED").empty() ? profile_path() : std::string();
  if (!profile.empty()) {
    std::ifstream in(profile);
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    const bool explicit_path = std::getenv("TEMPER_PROFILE") != nullptr;
    if (!in && explicit_path) {
      std::fprintf(stderr, "temper: profile %s ignored: cannot open it; mmvq runs stock\n", profile.c_str());
    } else if (in && text.find("\"temper-profile\"") == std::string::npos) {
      std::fprintf(stderr, "temper: profile %s ignored: not a Temper profile (format is not \"temper-profile\"); mmvq runs stock\n",
                   profile.c_str());
    } else if (in) {
      const size_t approved = count(text, "\"approval\": \"approved\""), all = count(text, "\"approval\": ");
      std::fprintf(stderr,
                   "temper: profile %s: %zu entries for NVIDIA H100 80GB HBM3 (sm_90, device 0), 0 for sm_90; ignored 0 for "
                   "other archs, 0 for other devices, 0 for launches this hook lacks, 0 with a config not compiled in, 0 "
                   "malformed, %zu not approved\n",
                   profile.c_str(), approved, all - approved);
      faster = approved > 0;
      pipelined = faster && text.find("_pipelined\"") != std::string::npos;  // tune writes them approved or not at all
    }
  }

  // The invocation's number: lines already in the log.
  uint64_t invocation = 0;
  const std::string log = env("FAKE_LLAMA_BENCH_LOG");
  if (!log.empty()) {
    std::ifstream in(log);
    for (std::string l; std::getline(in, l);) ++invocation;
    std::ofstream(log, std::ios::app) << (faster ? "profile " : "stock ") << args << " pid=" << ::getpid() << "\n";
  }

  if (const int ms = std::atoi(env("FAKE_LLAMA_BENCH_SLEEP_MS", "0").c_str()); ms > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  if (const std::string extra = env("FAKE_LLAMA_BENCH_STDERR"); !extra.empty()) std::fprintf(stderr, "%s\n", extra.c_str());
  if (const int ms = std::atoi(env("FAKE_LLAMA_BENCH_LINGER_MS", "0").c_str()); ms > 0) {
    std::fflush(nullptr);
    if (::fork() == 0) {  // holds the pipes open after its parent has ended
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      ::_exit(0);
    }
  }
  if (const long flood = std::atol(env("FAKE_LLAMA_BENCH_FLOOD", "0").c_str()); flood > 0) {
    ::signal(SIGPIPE, SIG_DFL);
    const std::string chunk(65536, ' ');
    for (long left = flood; left > 0; left -= long(chunk.size()))
      if (std::fwrite(chunk.data(), 1, size_t(std::min<long>(left, long(chunk.size()))), stdout) == 0) return 1;
  }
  if (const std::string file = env("FAKE_LLAMA_BENCH_STDOUT"); !file.empty()) {
    std::ifstream in(file, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  if (const int n = std::atoi(env("FAKE_LLAMA_BENCH_SAMPLES", "0").c_str()); n > 0) reps = n;

  std::vector<Test> tests;
  auto add = [&](int p, int n) {
    for (int ub : ubatches)
      for (int b : batches) tests.push_back({p, n, std::min(ub, b), b, {}, {}});
  };
  for (int p : prompts)
    if (p > 0) add(p, 0);
  for (int n : gens)
    if (n > 0) add(0, n);
  const double pipeline_gain = pipelined ? std::atof(env("FAKE_LLAMA_BENCH_PIPELINE_GAIN", "1.08").c_str()) : 1.0;
  for (size_t t = 0; t < tests.size(); ++t) {
    Test& x = tests[t];
    // Decode at 100 tokens/s; a prompt of W-token micro-batches at 90 × W (up to W = 64).
    const double base = x.n_gen > 0 ? 100.0 : 90.0 * std::min(x.n_ubatch, 64);
    for (int r = 0; r < reps; ++r) {
      const uint64_t h = mix((invocation << 32) ^ (uint64_t(t) << 16) ^ uint64_t(r) ^ 0x5eedull);
      const double noise = 0.004 * (2.0 * double(h % 1000001) / 1000000.0 - 1.0);
      const double ts = base * (faster ? 1.10 : 1.0) * pipeline_gain * (1.0 + noise);
      const uint64_t ns = uint64_t(1e9 * double(x.n_prompt + x.n_gen) / ts);
      x.ns.push_back(ns);
      x.ts.push_back(1e9 * double(x.n_prompt + x.n_gen) / double(ns));
    }
  }

  const std::string commit = env("FAKE_LLAMA_BENCH_COMMIT", "0d1e2f3"), gpu = env("FAKE_LLAMA_BENCH_GPU", "NVIDIA H100 80GB HBM3");
  const std::string file = model, type = "llama 8B Q4_K - Medium";
  char time_buf[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(time_buf, sizeof time_buf, "%FT%TZ", std::gmtime(&now));
  // llama-bench's fields, in its order.
  auto fields = [&](const Test& x) {
    const std::vector<double> ns_d(x.ns.begin(), x.ns.end());
    std::vector<std::pair<std::string, std::string>> f = {
        {"build_commit", "\"" + commit + "\""}, {"build_number", "4242"}, {"cpu_info", "\"stand-in CPU\""},
        {"gpu_info", "\"" + gpu + "\""}, {"backends", "\"CUDA\""}, {"model_filename", "\"" + file + "\""},
        {"model_type", "\"" + type + "\""}, {"model_size", "4912898304"}, {"model_n_params", "8030261248"},
        {"n_batch", std::to_string(x.n_batch)}, {"n_ubatch", std::to_string(x.n_ubatch)}, {"n_threads", "16"},
        {"cpu_mask", "\"0x0\""}, {"cpu_strict", "false"}, {"poll", "50"}, {"type_k", "\"f16\""}, {"type_v", "\"f16\""},
        {"n_gpu_layers", "99"}, {"n_cpu_moe", "0"}, {"split_mode", "\"layer\""}, {"main_gpu", "0"},
        {"no_kv_offload", "false"}, {"flash_attn", "-1"}, {"devices", "\"auto\""}, {"tensor_split", "\"0.00\""},
        {"tensor_buft_overrides", "\"none\""}, {"load_mode", "\"mmap\""}, {"embeddings", "false"},
        {"no_op_offload", "0"}, {"no_host", "false"}, {"fit_target", "0"}, {"fit_min_ctx", "0"},
        {"n_prompt", std::to_string(x.n_prompt)}, {"n_gen", std::to_string(x.n_gen)}, {"n_depth", "0"},
        {"test_time", "\"" + std::string(time_buf) + "\""}, {"avg_ns", std::to_string(uint64_t(avg(ns_d)))},
        {"stddev_ns", std::to_string(uint64_t(stdev(ns_d)))}, {"avg_ts", std::to_string(avg(x.ts))},
        {"stddev_ts", std::to_string(stdev(x.ts))}};
    return f;
  };
  if (output == "json" || output == "jsonl") {
    const bool lines = output == "jsonl";
    if (!lines) std::printf("[\n");
    for (size_t t = 0; t < tests.size(); ++t) {
      std::printf(lines ? "{" : "%s  {\n", t ? ",\n" : "");
      for (const auto& [k, v] : fields(tests[t])) std::printf(lines ? "\"%s\": %s, " : "    \"%s\": %s,\n", k.c_str(), v.c_str());
      std::printf(lines ? "\"samples_ns\": [ %s ],\"samples_ts\": [ %s ]}\n" : "    \"samples_ns\": [ %s ],\n    \"samples_ts\": [ %s ]\n  }",
                  join(tests[t].ns).c_str(), join(tests[t].ts).c_str());
    }
    if (!lines) std::printf("\n]\n");
  } else if (output == "csv") {
    const auto head = fields(tests.front());
    for (size_t i = 0; i < head.size(); ++i) std::printf("%s%s", i ? "," : "", head[i].first.c_str());
    std::printf("\n");
    for (const Test& x : tests) {
      const auto f = fields(x);
      for (size_t i = 0; i < f.size(); ++i) {
        std::string v = f[i].second;
        if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
        if (v == "false") v = "0";
        std::printf("%s\"%s\"", i ? "," : "", v.c_str());
      }
      std::printf("\n");
    }
  } else if (output == "md") {
    std::printf("| model                          |       size |     params | backend    | ngl | n_ubatch |            test |                  t/s |\n"
                "| ------------------------------ | ---------: | ---------: | ---------- | --: | -------: | --------------: | -------------------: |\n");
    for (const Test& x : tests) {
      const std::string name = x.n_prompt > 0 ? "pp" + std::to_string(x.n_prompt) : "tg" + std::to_string(x.n_gen);
      std::printf("| %-30s | %10s | %10s | %-10s | %3d | %8d | %15s | %13.2f ± %5.2f |\n", type.c_str(), "4.58 GiB", "8.03 B",
                  "CUDA", 99, x.n_ubatch, name.c_str(), avg(x.ts), stdev(x.ts));
    }
    std::printf("\nbuild: %s (4242)\n", commit.c_str());
  } else {
    std::fprintf(stderr, "error: unknown output format %s (this stand-in prints json, jsonl, csv, md)\n", output.c_str());
    return 1;
  }
  return 0;
}
