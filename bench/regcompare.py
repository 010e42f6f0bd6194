#!/usr/bin/env python3
"""Register fidelity of Temper's mmvq against upstream's, on the CPU (no GPU needed).

Compiles upstream's mul_mat_vec_q (from the extracted ggml trees in $TEMPER_UPSTREAM or
--upstream-dir, ggml-<commit>/, copied into a work folder) and Temper's kernels (kernels/mmvq.h) for sm_90 with `ptxas -v`, maps each upstream
instantiation to Temper's launch config and prints registers and spills side by side, per engine
version. Stock upstream compiles only its default-table configs, so on sm_90 at ncols 1 the
comparable grid configs are (nwarps 4, rows 1) and, for small K, (4, 4) (calc_nwarps /
calc_rows_per_block, GENERIC table). With --temper, the extracted copy is first patched by
`temper engine patch` (the tuning hook adds nwarps / rows template parameters to mul_mat_vec_q,
the instantiation the engine bridge launches), and the whole ncols-1 grid is compared. The trees
themselves are only read.

With --amd-arch gfxNNN (gfx942, gfx1151, gfx1201, ...: the targets Debian's hipcc lacks) the same
comparison is made for AMD with clang++-19 (--clang): both sides compiled `-x hip --cuda-device-only` with
the installed HIP 5.2 headers, ggml's HIP definitions and the test stand-ins for what HIP 5.2 lacks
(tests/engine/hip-standins), the ROCm device libraries of Temper's kernel cache (--device-libs: the folder
`temper occupancy --arch ARCH` makes, with the arch's ISA-version library), registers read from the
compiler's own report (-Rpass-analysis=kernel-resource-usage: VGPRs, AGPRs, scratch). Always hooked
(--temper), over the 24 grid configs the hooked HIP build instantiates (no nwarps 32), for --types.
Static facts of code objects, not measurements.

Exit: 0 all within the allowed difference, 1 a difference beyond it (or a new spill), 2 bad
arguments or input, 77 skipped (no nvcc / clang-19, no upstream tree, or the generated IQ tables missing).
"""
import argparse
import os
import re
import shutil
import subprocess
import stat
import sys

SKIP = 77
# Tier-1 types: name, ggml id.
TYPES = [("q4_0", 2), ("q4_1", 3), ("q5_0", 6), ("q5_1", 7), ("q8_0", 8), ("q2_K", 10), ("q3_K", 11),
         ("q4_K", 12), ("q5_K", 13), ("q6_K", 14), ("iq4_nl", 20), ("iq4_xs", 23), ("mxfp4", 39)]
GGML_NAMES = {2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 10: "Q2_K", 11: "Q3_K", 12: "Q4_K",
              13: "Q5_K", 14: "Q6_K", 20: "IQ4_NL", 23: "IQ4_XS", 39: "MXFP4"}
# Engine version -> (Temper's kernel variant modelling it, mmvq::KernelVariant value; upstream tree's folder).
ENGINES = {"ggml-d99724f": (("GgmlD99724f", 1), "ggml-d99724f"), "ggml-7180759": (("Ggml7180759", 0), "ggml-7180759")}
ARCH = "sm_90"
NWARPS = 4  # upstream's GENERIC table at ncols 1 (every NVIDIA arch but Turing and GB10)
STOCK_CONFIGS = [(False, (NWARPS, 1)), (True, (NWARPS, NWARPS))]  # (small_k, (nwarps, rows_per_block))
# Temper's ncols-1 grid (mmvq_traits.h): 6 nwarps × 5 rows less the three beyond 48 KiB of shared
# memory in the fused twin at ncols 1 (docs/kernels.md, "The grid").
GRID = [(w, r) for w in (1, 2, 4, 8, 16, 32) for r in (1, 2, 4, 8, 16) if (w, r) not in ((16, 16), (32, 8), (32, 16))]
MOE_MARKER = "// Dedicated MoE multi-token kernel"


def skip(why):
    print(f"regcompare: skipped: {why}")
    sys.exit(SKIP)


def bad(why):
    print(f"regcompare: {why}", file=sys.stderr)
    sys.exit(2)


def find_nvcc(given):
    if given:
        if not (os.path.isfile(given) and os.access(given, os.X_OK)):
            bad(f"--nvcc {given}: not an executable")
        return given
    for c in [shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"]:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def copy_tree(tree, dest):
    """The tree's include/ and src/ (headers and ggml-cuda) under dest, writable, once."""
    stamp = os.path.join(dest, ".copied")
    if os.path.exists(stamp):
        return
    if not os.path.isdir(os.path.join(tree, "src", "ggml-cuda")):
        bad(f"{tree}: no src/ggml-cuda inside (expected an extracted ggml tree)")
    shutil.rmtree(dest, ignore_errors=True)
    for part in ("include", "src"):
        shutil.copytree(os.path.join(tree, part), os.path.join(dest, part))
    for root, dirs, files in os.walk(dest):  # the copy is patched even where the tree is read-only
        for name in dirs + files:
            path = os.path.join(root, name)
            os.chmod(path, os.stat(path).st_mode | stat.S_IWUSR)
    open(stamp, "w").close()


def ptxas_table(log):
    """{mangled name: (registers, spill stores, spill loads, stack frame)} from `ptxas -v` output."""
    out, name, spills = {}, None, (0, 0, 0)
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            name, spills = m.group(1), (0, 0, 0)
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            spills = (int(m.group(2)), int(m.group(3)), int(m.group(1)))
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and name:
            out[name] = (int(m.group(1)),) + spills
            name = None
    return out


def compile_ptxas(nvcc, src, flags, work):
    obj = src[:-3] + ".o"
    cmd = [nvcc, f"-arch={ARCH}", "-O3", "-DNDEBUG", "-std=c++17", "-Xptxas", "-v", "-c", src, "-o", obj] + flags
    p = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stdout + p.stderr, file=sys.stderr)
        bad(f"nvcc failed on {src} (command: {' '.join(cmd)})")
    return ptxas_table(p.stdout + p.stderr)


def upstream_registers(nvcc, tree, work, temper_bin, types=None, configs=None, amd=None):
    """{(type id, (nwarps, rows)): (registers, spill stores, spill loads)} of upstream's kernel."""
    root = os.path.join(work, os.path.basename(tree) + ("-hooked" if temper_bin else ""))
    if temper_bin:
        shutil.rmtree(root, ignore_errors=True)  # patched afresh: the hook may have changed since
    copy_tree(tree, root)
    cuda = os.path.join(root, "src", "ggml-cuda")
    if temper_bin:
        p = subprocess.run([temper_bin, "engine", "patch", root], capture_output=True, text=True)
        if p.returncode != 0:
            bad(f"temper engine patch {root} failed: {(p.stderr or p.stdout).strip()}")
    with open(os.path.join(cuda, "mmvq.cu")) as f:
        text = f.read()
    cut = text.find(MOE_MARKER)
    if cut < 0:
        cut = text.find("template<ggml_type type>\nstatic std::pair<dim3, dim3> calc_launch_params")
    if cut < 0:
        bad(f"{cuda}/mmvq.cu: neither '{MOE_MARKER}' nor calc_launch_params found to cut the kernel out at")
    # The kernel and everything it needs, without the host dispatch that would instantiate all types.
    head = os.path.join(work, os.path.basename(root) + "_mmvq_kernel.cuh")
    with open(head, "w") as f:
        f.write(text[:cut])
    if temper_bin:
        # The hooked template: <type, ncols, has_fusion, bool flags (small_k, halve_iters in newer
        # ggml: all false, as the hook's launches), temper_nwarps, temper_rows[, temper_pipe (hook v6;
        # left at 0: the plain instantiation)]>.
        m = re.search(r"template\s*<ggml_type type, int ncols_dst, bool has_fusion((?:, bool \w+ = false)*)"
                      r", int temper_nwarps = 0, int temper_rows = 0(?:, int temper_pipe = 0)?>", text)
        if not m:
            bad(f"{cuda}/mmvq.cu: the hooked mul_mat_vec_q template was not found after patching")
        flags = "false, " * m.group(1).count("bool")
        instances = [(tid, cfg, f"mul_mat_vec_q<GGML_TYPE_{GGML_NAMES[tid]}, 1, false, {flags}{cfg[0]}, {cfg[1]}>")
                     for _, tid in types or TYPES for cfg in configs or GRID]
    else:
        instances = [(tid, cfg, f"mul_mat_vec_q<GGML_TYPE_{GGML_NAMES[tid]}, 1, false, {str(small_k).lower()}>")
                     for _, tid in TYPES for small_k, cfg in STOCK_CONFIGS]
    src = os.path.join(work, os.path.basename(root) + ("_regs.hip" if amd else "_regs.cu"))
    with open(src, "w") as f:
        f.write(f'#include "{head}"\n')
        f.write("// Taking each kernel's address instantiates exactly the configs compared.\n")
        f.write("__attribute__((used)) static const void* temper_regcompare_kernels[] = {\n")
        for _, _, inst in instances:
            f.write(f"  (const void*)&{inst},\n")
        f.write("};\n")
    if amd:
        table = amd.compile(src, amd.upstream_flags(root, cuda), work)
    else:
        flags = ["-use_fast_math", "-extended-lambda", "-DGGML_USE_CUDA", f"-I{root}/include", f"-I{root}/src", f"-I{cuda}"]
        table = compile_ptxas(nvcc, src, flags, work)
    out = {}
    for name, v in table.items():
        if temper_bin:
            m = re.search(r"mul_mat_vec_qIL9ggml_type(\d+)ELi1ELb0E(?:Lb0E)*Li(\d+)ELi(\d+)E", name)
            if m:
                out[(int(m.group(1)), (int(m.group(2)), int(m.group(3))))] = v
        else:
            m = re.search(r"mul_mat_vec_qIL9ggml_type(\d+)ELi1ELb0ELb([01])E", name)
            if m:
                out[(int(m.group(1)), STOCK_CONFIGS[int(m.group(2))][1])] = v
    return out


def remarks_table(log):
    """{mangled name: (VGPRs, spill bytes (scratch), AGPRs)} from clang's kernel-resource-usage remarks."""
    out, name, fields = {}, None, {}
    for line in log.splitlines():
        m = re.search(r"remark: Function Name: (\S+)", line)
        if m:
            name, fields = m.group(1), {}
            out[name] = (0, 0, 0)
            continue
        m = re.search(r"remark:\s+([A-Za-z ]+?)(?: \[[^\]]*\])?: (\d+) \[", line)
        if m and name:
            fields[m.group(1)] = int(m.group(2))
            out[name] = (fields.get("VGPRs", 0), fields.get("ScratchSize", 0), fields.get("AGPRs", 0))
    return out


class Amd:
    """Compiles HIP device code for one AMD arch with clang++-19 and reads registers from its remarks."""

    def __init__(self, clang, arch, device_libs, standins):
        self.clang, self.arch, self.device_libs, self.standins = clang, arch, device_libs, standins

    def compile(self, src, flags, work, std="c++17"):
        obj = src.rsplit(".", 1)[0] + f".{self.arch}.co"
        cmd = [self.clang, "-x", "hip", f"-std={std}", "-O3", "-DNDEBUG", f"--offload-arch={self.arch}", "--cuda-device-only",
               "--no-gpu-bundle-output", f"--rocm-device-lib-path={self.device_libs}",
               "-Rpass-analysis=kernel-resource-usage", "-c", src, "-o", obj] + flags
        p = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
        if p.returncode != 0:
            print("\n".join(l for l in (p.stdout + p.stderr).splitlines() if "remark" not in l)[:4000], file=sys.stderr)
            bad(f"{os.path.basename(self.clang)} failed on {src} for {self.arch}")
        return remarks_table(p.stderr)

    def upstream_flags(self, root, cuda):
        return ["-DGGML_USE_HIP", "-DGGML_HIP_GRAPHS", "-DGGML_HIP_NO_VMM", f"-I{self.standins}", "-include",
                "rocm6-additions.h", f"-I{root}/include", f"-I{root}/src", f"-I{cuda}"]


def temper_registers(nvcc, source_dir, iq_tables_dir, work, configs, types=None, amd=None):
    src = os.path.join(work, "temper_regs.cu")
    with open(src, "w") as f:
        f.write('#include "kernels/mmvq.h"\n')
        f.write("namespace temper::kernels {\nTEMPER_KERNELS_ABI_BEGIN\n")
        f.write("__attribute__((used)) static const void* temper_regcompare_kernels[] = {\n")
        for (variant, _), _ in sorted(ENGINES.values()):
            for _, tid in types or TYPES:
                for w, r in configs:
                    f.write(f"  (const void*)&mmvq<{tid}u, 1, {w}, {r}, mmvq::KernelVariant::{variant}>,\n")
        f.write("};\nTEMPER_KERNELS_ABI_END\n}\n")
    # The flags of temper_kernels_cuda (cmake/TemperKernels.cmake, Release); on AMD the kernel cache's.
    flags = [f"-I{source_dir}", f"-I{source_dir}/kernels", f"-I{source_dir}/core/common/include", f"-I{source_dir}/core/quant/include",
             f"-I{iq_tables_dir}"]
    table = amd.compile(src, flags, work, std="c++20") if amd else compile_ptxas(nvcc, src, ["-DTEMPER_GPU_CUDA"] + flags, work)
    out = {}
    for name, v in table.items():
        # mmvq<type, 1, nwarps, rows, (mmvq::KernelVariant)v>
        m = re.search(r"mmvqILj(\d+)ELi1ELi(\d+)ELi(\d+)ELN\w*KernelVariantE(\d+)E", name)
        if m:
            out[(int(m.group(4)), int(m.group(1)), (int(m.group(2)), int(m.group(3))))] = v
    return out


# Same-input groups (hook v5's temper-mmvq-group.cuh against Temper's kernels/mmvq_group.h): the (A, B)
# units the hook generates for a Q4_K_M model's q, k, v, every group config, widths 1, 2 and 4.
GROUP_UNITS = [(12, 14), (12, 12)]
GROUP_GRID = [(w, r) for w in (2, 4, 8) for r in (1, 2, 4)]
GROUP_NCOLS = (1, 2, 4)


def group_registers(nvcc, source_dir, iq_tables_dir, hooked_root, work):
    """({(a, b, ncols, (w, r)): ptxas row} of the hook's group kernel, the same of Temper's)."""
    cuda = os.path.join(hooked_root, "src", "ggml-cuda")
    flags = ["-use_fast_math", "-extended-lambda", "-DGGML_USE_CUDA", f"-I{hooked_root}/include", f"-I{hooked_root}/src", f"-I{cuda}"]
    hook, temper = {}, {}
    for a, b in GROUP_UNITS:
        unit = os.path.join(cuda, f"temper-mmvq-group-{GGML_NAMES[a].lower()}" +
                            ("" if a == b else f"-{GGML_NAMES[b].lower()}") + ".cu")
        if not os.path.isfile(unit):
            bad(f"{unit}: the hooked tree has no such group unit (temper engine patch writes one per type pair)")
        for name, v in compile_ptxas(nvcc, unit, flags, work).items():
            m = re.search(r"temper_mmvq_groupIL9ggml_type(\d+)ELS0_(\d+)ELi(\d+)ELi(\d+)ELi(\d+)E", name)
            if m:
                hook[(int(m.group(1)), int(m.group(2)), int(m.group(3)), (int(m.group(4)), int(m.group(5))))] = v
    src = os.path.join(work, "temper_group_regs.cu")
    with open(src, "w") as f:
        f.write('#include "kernels/mmvq_group.h"\n')
        f.write("namespace temper::kernels {\nTEMPER_KERNELS_ABI_BEGIN\n")
        f.write("__attribute__((used)) static const void* temper_regcompare_group_kernels[] = {\n")
        for a, b in GROUP_UNITS:
            for nc in GROUP_NCOLS:
                for w, r in GROUP_GRID:
                    f.write(f"  (const void*)&mmvq_group<{a}u, {b}u, {nc}, {w}, {r}>,\n")
        f.write("};\nTEMPER_KERNELS_ABI_END\n}\n")
    flags = ["-DTEMPER_GPU_CUDA", f"-I{source_dir}", f"-I{source_dir}/kernels", f"-I{source_dir}/core/common/include",
             f"-I{source_dir}/core/quant/include", f"-I{iq_tables_dir}"]
    for name, v in compile_ptxas(nvcc, src, flags, work).items():
        m = re.search(r"mmvq_groupILj(\d+)ELj(\d+)ELi(\d+)ELi(\d+)ELi(\d+)E", name)
        if m:
            temper[(int(m.group(1)), int(m.group(2)), int(m.group(3)), (int(m.group(4)), int(m.group(5))))] = v
    return hook, temper


def compare_groups(hook, temper):
    """At one column registers must be equal; at every width Temper's kernel may have no stack frame or
    spill the hook's lacks (a stack frame cost its first version up to 1.4x, docs/perf-notes.md)."""
    failures = 0
    print(f"\nsame-input groups: the hook's temper_mmvq_group vs Temper's mmvq_group, {ARCH} "
          "(registers, spill stores/loads, stack frame in bytes)")
    print(f"{'members':10} {'ncols':>5} {'config':7} {'hook':>16} {'temper':>16} {'diff':>5}  verdict")
    for a, b in GROUP_UNITS:
        for nc in GROUP_NCOLS:
            for cfg in GROUP_GRID:
                key = (a, b, nc, cfg)
                h, t = hook.get(key), temper.get(key)
                members = GGML_NAMES[a].lower() + ("" if a == b else "+" + GGML_NAMES[b].lower())
                cfg_text = f"({cfg[0]},{cfg[1]})"
                if h is None or t is None:
                    print(f"{members:10} {nc:>5} {cfg_text:7} {'missing' if h is None else h[0]:>16} "
                          f"{'missing' if t is None else t[0]:>16}        FAIL (not compiled)")
                    failures += 1
                    continue
                diff = t[0] - h[0]
                extra = (t[1] or t[2]) and not (h[1] or h[2]) or (t[3] > h[3])
                ok = not extra and (nc != 1 or diff == 0)
                verdict = "ok" if ok else "FAIL (stack frame or spills)" if extra else "FAIL (registers at one column)"
                print(f"{members:10} {nc:>5} {cfg_text:7} {h[0]:>5} ({h[1]}/{h[2]}/{h[3]}) {t[0]:>5} ({t[1]}/{t[2]}/{t[3]}) "
                      f"{diff:>+5}  {verdict}")
                failures += 0 if ok else 1
    return failures


def read_allowed(path):
    """{(engine, type name, (nwarps, rows)): allowed |difference|} from 'engine type nwarps,rows max # why'."""
    allowed = {}
    if not path:
        return allowed
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            body = line.split("#", 1)[0].split()
            if not body:
                continue
            if len(body) != 4 or not re.fullmatch(r"\d+,\d+", body[2]) or not body[3].isdigit():
                bad(f"{path}:{lineno}: expected 'ENGINE TYPE NWARPS,ROWS MAX_DIFF  # reason', got '{line.strip()}'")
            w, r = (int(x) for x in body[2].split(","))
            allowed[(body[0], body[1], (w, r))] = int(body[3])
    return allowed


def find_clang(given):
    if given:
        if not (os.path.isfile(given) and os.access(given, os.X_OK)):
            bad(f"--clang {given}: not an executable")
        return given
    for c in [shutil.which("clang++-19"), "/usr/lib/llvm-19/bin/clang++"]:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def amd_device_libs(temper_bin, arch, work):
    """The ROCm device-library folder Temper's kernel cache makes for `arch` (compiling q4_K's code objects
    into a cache in the work folder): what Temper's own code objects for the arch are compiled with."""
    cache = os.path.join(work, "kernel-cache")
    env = dict(os.environ, TEMPER_KERNEL_CACHE=cache, TEMPER_CODEOBJ_DIR=os.path.join(work, "none"))
    env.pop("TEMPER_HIPCC", None)
    p = subprocess.run([temper_bin, "occupancy", "--arch", arch, "--type", "q4_K", "--json"], env=env,
                       capture_output=True, text=True)
    if p.returncode != 0:
        bad(f"temper occupancy --arch {arch} failed: {(p.stderr or p.stdout).strip()}")
    n = arch[3:]
    for name in sorted(os.listdir(cache)):
        folder = os.path.join(cache, name)
        if name.startswith("rocm-device-libs-") and os.path.isfile(os.path.join(folder, f"oclc_isa_version_{n}.bc")):
            return folder
    for d in [os.environ.get("TEMPER_ROCM_DEVICE_LIBS", "")] + [os.path.join("/usr/lib", m, "amdgcn", "bitcode")
                                                                for m in sorted(os.listdir("/usr/lib"))]:
        if d and os.path.isfile(os.path.join(d, f"oclc_isa_version_{n}.bc")):
            return d
    bad(f"no ROCm device-library folder with oclc_isa_version_{n}.bc after `temper occupancy --arch {arch}`")


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source-dir", default=here)
    ap.add_argument("--upstream-dir", default=os.environ.get("TEMPER_UPSTREAM"),
                    help="folder of extracted upstream trees, ggml-<commit>/ (default: $TEMPER_UPSTREAM)")
    ap.add_argument("--iq-tables-dir", required=True, help="folder of the generated iq_tables.h (build/kernels)")
    ap.add_argument("--work-dir", required=True)
    ap.add_argument("--engine", action="append", choices=sorted(ENGINES), help="engine versions to compare (default all)")
    ap.add_argument("--allowed", default=os.path.join(here, "bench", "regcompare_allowed.txt"),
                    help="allowed differences (default bench/regcompare_allowed.txt); others must be equal")
    ap.add_argument("--nvcc")
    ap.add_argument("--temper", help="the temper CLI: patch upstream with its tuning hook and compare the whole "
                    "ncols-1 grid (default: stock upstream, its two default-table configs)")
    ap.add_argument("--amd-arch", help="compare AMD code for this arch with clang-19 instead of sm_90 with nvcc "
                    "(gfx942, gfx1151, gfx1201, ...; needs --temper)")
    ap.add_argument("--clang", help="the clang++ for --amd-arch (default clang++-19 on PATH or /usr/lib/llvm-19/bin)")
    ap.add_argument("--types", help="only these tier-1 types, comma-separated (default all 13)")
    a = ap.parse_args()

    types = TYPES
    if a.types:
        names = a.types.split(",")
        unknown = [n for n in names if n not in dict(TYPES)]
        if unknown:
            bad(f"--types: {', '.join(unknown)} not among the tier-1 types ({', '.join(n for n, _ in TYPES)})")
        types = [(n, tid) for n, tid in TYPES if n in names]
    amd = None
    if a.amd_arch:
        if not re.fullmatch(r"gfx[0-9a-f]{3,4}", a.amd_arch):
            bad(f"--amd-arch {a.amd_arch}: expected an AMD arch name like gfx942 or gfx1151")
        if not a.temper:
            bad("--amd-arch compares the hooked grid: give --temper too")
        clang = find_clang(a.clang)
        if not clang:
            skip("clang++-19 not found (Debian: packages clang-19 and lld-19)")
        nvcc = None
    else:
        nvcc = find_nvcc(a.nvcc)
        if not nvcc:
            skip("nvcc not found (PATH, /usr/local/cuda/bin)")
    if not a.upstream_dir:
        skip("no upstream trees: TEMPER_UPSTREAM is not set (nor --upstream-dir)")
    engines = a.engine or sorted(ENGINES)
    trees = {e: os.path.join(os.path.abspath(a.upstream_dir), ENGINES[e][1]) for e in engines}
    missing = [p for p in trees.values() if not os.path.isdir(p)]
    if missing:
        skip(f"upstream tree absent: {', '.join(missing)}")
    if not os.path.isfile(os.path.join(a.iq_tables_dir, "iq_tables.h")):
        skip(f"{a.iq_tables_dir}/iq_tables.h not generated yet (build temper_iq_tables first)")
    if a.temper and not (os.path.isfile(a.temper) and os.access(a.temper, os.X_OK)):
        bad(f"--temper {a.temper}: not an executable")
    allowed = read_allowed(a.allowed)
    configs = GRID if a.temper else [cfg for _, cfg in STOCK_CONFIGS]
    os.makedirs(a.work_dir, exist_ok=True)
    target = ARCH
    if a.amd_arch:
        # The hooked HIP build instantiates the 24 configs that launch at wave 64 too (one HIP build serves
        # GCN/CDNA and RDNA): no nwarps 32.
        configs = [cfg for cfg in GRID if cfg[0] != 32]
        standins = os.path.join(os.path.abspath(a.source_dir), "tests", "engine", "hip-standins")
        amd = Amd(clang, a.amd_arch, amd_device_libs(a.temper, a.amd_arch, a.work_dir), standins)
        target = f"{a.amd_arch} ({subprocess.run([clang, '--version'], capture_output=True, text=True).stdout.splitlines()[0]}, static)"

    temper = temper_registers(nvcc, os.path.abspath(a.source_dir), os.path.abspath(a.iq_tables_dir), a.work_dir,
                              configs, types, amd)
    failures = 0
    for engine in engines:
        variant, variant_value = ENGINES[engine][0]
        up = upstream_registers(nvcc, trees[engine], a.work_dir, a.temper, types, configs, amd)
        print(f"\n{engine}{' (hooked)' if a.temper else ''} vs Temper's mmvq<..., {variant}>, {target}, ncols 1 "
              + ("(VGPRs, scratch bytes/AGPRs)" if amd else "(registers, spill stores/loads in bytes)"))
        print(f"{'type':8} {'config':7} {'upstream':>14} {'temper':>14} {'diff':>5}  verdict")
        for name, tid in types:
            for cfg in configs:
                u, t = up.get((tid, cfg)), temper.get((variant_value, tid, cfg))
                cfg_text = f"({cfg[0]},{cfg[1]})"
                if u is None or t is None:
                    print(f"{name:8} {cfg_text:7} {'missing' if u is None else u[0]:>14} "
                          f"{'missing' if t is None else t[0]:>14}        FAIL (not compiled)")
                    failures += 1
                    continue
                diff = t[0] - u[0]
                limit = allowed.get((engine if not amd else f"{engine}@{a.amd_arch}", name, cfg), 0)
                new_spill = (t[1] and not u[1]) if amd else ((t[1] or t[2]) and not (u[1] or u[2]))
                ok = abs(diff) <= limit and not new_spill and (not amd or t[2] <= u[2])
                verdict = "ok" if ok else "FAIL"
                if ok and diff:
                    verdict = f"ok (allowed {limit})"
                elif new_spill:
                    verdict = "FAIL (spills)"
                elif amd and t[2] > u[2]:
                    verdict = "FAIL (AGPRs)"
                if ok and not diff and limit:
                    verdict = f"ok (equal now: its allowance of {limit} can go)"
                print(f"{name:8} {cfg_text:7} {u[0]:>5} ({u[1]}/{u[2]}) {t[0]:>5} ({t[1]}/{t[2]}) {diff:>+5}  {verdict}")
                failures += 0 if ok else 1
    if a.temper and not amd:  # the hooked trees exist now: the group kernels of the last one compared
        hooked_root = os.path.join(a.work_dir, os.path.basename(trees[engines[-1]]) + "-hooked")
        hook, temper_groups = group_registers(nvcc, os.path.abspath(a.source_dir), os.path.abspath(a.iq_tables_dir),
                                              hooked_root, a.work_dir)
        failures += compare_groups(hook, temper_groups)
    print(f"\nregcompare: {failures} config(s) beyond the allowed difference" if failures else
          "\nregcompare: every compared config within the allowed difference")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
