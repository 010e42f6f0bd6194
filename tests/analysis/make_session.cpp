// Writes a small synthetic H100 session (two shapes, ncols 1 and 8, six configs each, one failed
// result) through the session writer, for the `temper roofline` CLI tests. Generated at test time
// so it always matches this build's session format.
#include <cmath>
#include <vector>

#include "temper/session.h"

using namespace temper;

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  Session s;
  s.id = "cli-test";
  s.status = "complete";
  s.model.file_name = "synthetic-8B-Q4_K_M.gguf";
  SessionDevice d;
  d.info.index = 0;
  d.info.api = "cuda";
  d.info.name = "NVIDIA H100 80GB HBM3";
  d.info.arch = "sm_90";
  d.info.compute_units = 132;
  d.spec_id = "h100-sxm";
  d.copy_bandwidth_gbs = 2950;
  s.devices.push_back(d);
  struct Shape3 { GgmlType type; int n, k; };
  for (Shape3 sh : {Shape3{GgmlType::Q4_K, 4096, 4096}, Shape3{GgmlType::Q6_K, 4096, 14336}})
    for (int ncols : {1, 8})
      for (int nwarps : {2, 4, 8})
        for (int rpb : {1, 4}) {
          Result r;
          r.type = sh.type;
          r.n = sh.n;
          r.k = sh.k;
          r.ncols = ncols;
          r.config = {nwarps, rpb};
          r.is_default = nwarps == (ncols == 1 ? 4 : 2) && rpb == 1;
          if (nwarps == 8 && rpb == 4 && ncols == 8 && sh.type == GgmlType::Q6_K) {
            r.status = ResultStatus::Failed;
            r.failure = "synthetic failure";
            s.results.push_back(r);
            continue;
          }
          const double efficiency = 0.85 - 0.08 * std::abs(std::log2(nwarps) - 2) - 0.05 * std::abs(std::log2(rpb) - 1);
          const double bytes = gemv_bytes(sh.type, sh.n, sh.k, ncols);
          const double us = bytes / (2950e9 * efficiency) * 1e6;
          r.time_us.n = 200;
          r.time_us.median = us;
          r.time_us.p10 = r.time_us.min = us * 0.98;
          r.time_us.p90 = r.time_us.max = us * 1.03;
          r.time_us.ci_low = us * 0.995;
          r.time_us.ci_high = us * 1.005;
          r.converged = true;
          r.gbs = bytes / us / 1e3;
          r.ops_per_s = 2.0 * sh.n * sh.k * ncols / (us * 1e-6);
          s.results.push_back(r);
        }
  save_session(s, argv[1]);
  return 0;
}
