"""Template argument deduction through alias templates, which C++ sees through
([temp.alias]): `box_t<A>&` deduces `A` as `Box<A, 2>&` would. MLX's steel attention
`BaseMMAFrag::mma` takes `dtype_frag_t<Atype>&` (a member alias of `vec<U, 2>`) and
`dtype_mat_t<Atype>&` (of `simdgroup_matrix<U, 8, 8>`). g++ is the oracle where it is plain
C++."""

import mlx.core as mx
import numpy as np
from cxx_oracle import agree, needs_gxx

import metalsim

HEADER = """
template <typename T, int N> struct Box { T v[N]; };
template <typename T> using Pair = Box<T, 2>;
template <typename T> int first_of(thread Pair<T>& p) { return int(sizeof(T)) * 100 + int(p.v[0]); }
struct Frag {
  template <typename U> using box_t = Box<U, 2>;
  template <typename A, typename B>
  static int mix(thread box_t<A>& a, thread const box_t<B>& b) {
    return int(sizeof(A)) * 10 + int(sizeof(B)) + int(a.v[1] + b.v[1]);
  }
};
"""
BODY = """
  Pair<short> s = {{3, 4}};
  Box<long, 2> l = {{5, 6}};
  Box<char, 2> c = {{7, 8}};
  out[0] = first_of(s);
  out[1] = first_of(l);
  out[2] = Frag::mix(s, l);
  out[3] = Frag::mix(c, s);
"""


@needs_gxx
def test_a_global_and_a_member_alias_template_deduce_as_their_aliased_type_agree_with_gxx():
    assert agree(HEADER, BODY, 4) == [203, 805, 28 + 10, 12 + 12]


METAL_HEADER = """
struct Frag {
  template <typename U> using frag_t = vec<U, 2>;
  template <typename U> using mat_t = simdgroup_matrix<U, 8, 8>;
  template <typename A> static A second(thread frag_t<A>& f) { return f.y; }
  template <typename A> static int elem_size(thread mat_t<A>& m) { return int(sizeof(A)); }
};
"""
METAL_BODY = """
  float2 f = float2(1.5f, 2.5f);
  int2 i = int2(7, 9);
  simdgroup_half8x8 m = simdgroup_half8x8(0);
  out[0] = int(Frag::second(f) * 2.0f);
  out[1] = Frag::second(i);
  out[2] = Frag::elem_size(m);
"""


def test_alias_templates_of_vec_and_simdgroup_matrix_deduce_their_element_type():
    kernel = metalsim.metal_kernel("alias_deduction", ["unused"], ["out"], METAL_BODY,
                                   header=METAL_HEADER)
    out = kernel(inputs=[mx.zeros(1)], output_shapes=[(3,)], output_dtypes=[mx.int32],
                 grid=(32, 1, 1), threadgroup=(32, 1, 1), init_value=0)[0]
    assert np.array(out).tolist() == [5, 9, 2]

