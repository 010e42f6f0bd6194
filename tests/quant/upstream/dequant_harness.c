/* Test harness (ours): runs upstream ggml's own dequantize_row_* (ggml-quants.c of an upstream
 * archive, compiled by upstream_dequant_test at test time, never shipped) over blocks read from
 * stdin and writes the float32 values to stdout, so Temper's dequantization can be compared with
 * ggml's bit for bit.  usage: dequant_harness TYPE_ID VALUES < blocks > floats */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "ggml-quants.h"

/* ggml-quants.c refers to these ggml.c functions only on its quantize paths; never called here. */
void ggml_abort(const char* file, int line, const char* fmt, ...) {
  fprintf(stderr, "ggml_abort %s:%d %s\n", file, line, fmt);
  abort();
}
size_t ggml_row_size(enum ggml_type type, int64_t ne) { (void)type; (void)ne; abort(); }
size_t ggml_type_size(enum ggml_type type) { (void)type; abort(); }
const char* ggml_type_name(enum ggml_type type) { (void)type; return "?"; }

typedef void (*dequant_fn)(const void*, float*, int64_t);

static dequant_fn find(int id) {
  switch (id) {
    case GGML_TYPE_Q4_0: return (dequant_fn)dequantize_row_q4_0;
    case GGML_TYPE_Q4_1: return (dequant_fn)dequantize_row_q4_1;
    case GGML_TYPE_Q5_0: return (dequant_fn)dequantize_row_q5_0;
    case GGML_TYPE_Q5_1: return (dequant_fn)dequantize_row_q5_1;
    case GGML_TYPE_Q8_0: return (dequant_fn)dequantize_row_q8_0;
    case GGML_TYPE_Q2_K: return (dequant_fn)dequantize_row_q2_K;
    case GGML_TYPE_Q3_K: return (dequant_fn)dequantize_row_q3_K;
    case GGML_TYPE_Q4_K: return (dequant_fn)dequantize_row_q4_K;
    case GGML_TYPE_Q5_K: return (dequant_fn)dequantize_row_q5_K;
    case GGML_TYPE_Q6_K: return (dequant_fn)dequantize_row_q6_K;
    case GGML_TYPE_IQ2_XXS: return (dequant_fn)dequantize_row_iq2_xxs;
    case GGML_TYPE_IQ2_XS: return (dequant_fn)dequantize_row_iq2_xs;
    case GGML_TYPE_IQ3_XXS: return (dequant_fn)dequantize_row_iq3_xxs;
    case GGML_TYPE_IQ1_S: return (dequant_fn)dequantize_row_iq1_s;
    case GGML_TYPE_IQ4_NL: return (dequant_fn)dequantize_row_iq4_nl;
    case GGML_TYPE_IQ3_S: return (dequant_fn)dequantize_row_iq3_s;
    case GGML_TYPE_IQ2_S: return (dequant_fn)dequantize_row_iq2_s;
    case GGML_TYPE_IQ4_XS: return (dequant_fn)dequantize_row_iq4_xs;
    case GGML_TYPE_IQ1_M: return (dequant_fn)dequantize_row_iq1_m;
    case GGML_TYPE_MXFP4: return (dequant_fn)dequantize_row_mxfp4;
    case GGML_TYPE_NVFP4: return (dequant_fn)dequantize_row_nvfp4;
    case GGML_TYPE_Q1_0: return (dequant_fn)dequantize_row_q1_0;
    case GGML_TYPE_Q2_0: return (dequant_fn)dequantize_row_q2_0;
    default: return NULL;
  }
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const dequant_fn f = find(atoi(argv[1]));
  const long long values = atoll(argv[2]);
  if (!f || values <= 0) return 2;
  size_t cap = 1 << 20, size = 0, n;
  unsigned char* blocks = malloc(cap);
  while (blocks && (n = fread(blocks + size, 1, cap - size, stdin)) > 0)
    if ((size += n) == cap) blocks = realloc(blocks, cap *= 2);
  float* out = malloc((size_t)values * sizeof(float));
  if (!blocks || !out) return 1;
  f(blocks, out, values);
  return fwrite(out, sizeof(float), (size_t)values, stdout) == (size_t)values ? 0 : 1;
}
