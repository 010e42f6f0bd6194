#pragma once
// Temper's tuning hook in ggml-cuda.cu (hook v5; written into this tree by `temper engine patch`,
// docs/engine.md in Temper): same-input groups. ggml-cuda.cu includes this after its common header
// and calls the two functions from its graph optimisation and its graph evaluation.
struct ggml_backend_cuda_context;
struct ggml_cgraph;
// Before the graph runs: moves the MUL_MATs of each same-input run (2..4 reading the same
// activations, e.g. a layer's q, k and v) next to the first, when a profile, the probe or
// TEMPER_MMVQ_GROUP may ask for groups on `device`; the graph is left as it is otherwise.
void temper_mmvq_group_order(int device, ggml_cgraph * cgraph);
// At node i: how many nodes from i on ran as one group launch (0: none; node i runs as ggml would).
int temper_mmvq_try_group(ggml_backend_cuda_context & ctx, ggml_cgraph * cgraph, int i);
// Before ggml's own fusions (hook v8): at node i, an RMS_NORM·MUL run as one kernel that also writes
// the q8_1 activations of the mmvq GEMVs reading it; how many nodes it ran (0: none, ggml goes on).
int temper_mmvq_try_norm(ggml_backend_cuda_context & ctx, ggml_cgraph * cgraph, int i);
