#pragma once
// Tier-2 vec_dot specialisations (IQ2/IQ3/IQ1 grids, NVFP4). Empty until their CPU reference and
// grid tables exist in core/quant: a type without a specialisation here is not instantiated.
