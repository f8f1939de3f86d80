"""Pointer members (`const device T* src;` as MLX steel's BlockLoader holds its source and
destination): set by constructors and aggregates, advanced, copied with the struct and
dereferenced; `(void)x`, a reference cast to the object's own type, and static member function
templates called with explicit arguments (`S::f<true>(...)`). g++ is the oracle."""

import mlx.core as mx
import numpy as np
import pytest
from cxx_oracle import gxx_outputs, metalsim_outputs, needs_gxx

import metalsim

HEADER = """
struct Cursor {
  const device float* src;
  thread int* counter;
  int step;
  Cursor(const device float* s, thread int* c, int st) thread : src(s + 1), counter(c),
                                                                step(st) {}
  void next() thread { src += step; *counter += 1; }
  float get() const thread { return *src; }
};
struct Pair { thread int* p; thread int* q; };
struct Ops {
  template <bool Twice>
  static int apply(int x) { return Twice ? 2 * x : x; }
};
"""

BODY = """
  int n = 0;
  Cursor c(squares, &n, 2);
  float s = 0;
  for (int i = 0; i < 3; ++i) { s += c.get(); c.next(); }
  Cursor d = c;
  d.next();
  out[0] = int(s); out[1] = n; out[2] = int(*d.src); out[3] = int(c.src[-1]);
  int x = 1, y = 2;
  Pair p = {&x, &y};
  Pair q = p;
  *q.p += 10; *p.q += 20;
  (void)q;
  out[4] = x * 100 + y;
  thread int& r = reinterpret_cast<thread int&>(x);
  r = 5;
  out[5] = x + Ops::apply<true>(4) * 10 + Ops::apply<false>(4) * 100;
"""


@needs_gxx
def test_pointer_members_agree_with_gxx():
    # g++ reads the squares from a local array, metalsim from a device buffer.
    squares = "  float squares[10];\n  for (int i = 0; i < 10; ++i) squares[i] = float(i * i);\n"
    expected = gxx_outputs(HEADER, squares + BODY, 6)
    kernel = metalsim.metal_kernel("members", ["squares"], ["out"], BODY, header=HEADER)
    got = kernel(inputs=[mx.arange(10, dtype=mx.float32) ** 2], output_shapes=[(6,)],
                 output_dtypes=[mx.int32], grid=(1, 1, 1), threadgroup=(1, 1, 1))[0]
    assert np.array(got).tolist() == expected == [1 + 9 + 25, 4, 81, 36, 1122, 5 + 80 + 400]


def test_a_reference_cast_to_another_type_is_refused():
    with pytest.raises(metalsim.CompileError, match="a cast to a reference only to the "
                                                    "object's own type"):
        metalsim_outputs("", "int x = 1;\nthread float& f = reinterpret_cast<thread float&>(x);"
                             "\nout[0] = f;", 1)
