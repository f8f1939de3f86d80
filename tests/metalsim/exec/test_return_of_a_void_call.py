"""`return f();` in a void function, where f returns void, is allowed C++ ([stmt.return]):
f runs and the function returns (MLX's steel_gemm_fused.h: `return mma_op.store_result(D,
ldd);`). Returning a value from a void function stays an error. g++ is the oracle."""

import pytest
from cxx_oracle import agree, metalsim_outputs, needs_gxx

import metalsim

HEADER = """
inline void put(thread int* out, int v) { out[0] += v; }
inline void twice(thread int* out, int v) {
  if (v > 2) {
    return put(out, v * 100);
  }
  put(out, v);
  return put(out, v);
}
"""
BODY = """
  int acc[1] = {0};
  twice(acc, 1);
  twice(acc, 3);
  out[0] = acc[0];
"""


@needs_gxx
def test_returning_a_void_call_from_a_void_function_agrees_with_gxx():
    assert agree(HEADER, BODY, 1) == [302]


def test_returning_a_value_from_a_void_function_is_still_an_error():
    header = "inline void f(thread int* out) { return out[0]; }"
    with pytest.raises(metalsim.CompileError, match="void function 'f' should not return a "
                                                    "value"):
        metalsim_outputs(header, "int a[1] = {0}; f(a); out[0] = a[0];", 1)
