"""Structs defined inside structs (named `Outer::Inner` outside, seeing the enclosing struct's
constants and template parameters) and `struct alignas(n)`, as MLX steel's BlockLoader declares
its `ReadVector`; g++ is the oracle for values and layouts."""

import pytest
from cxx_oracle import agree, metalsim_outputs, needs_gxx

import metalsim

HEADER = """
template <typename T, short alignment = 1, short n_reads = 4>
struct Loader {
  static constexpr constant short vec_size = n_reads;
  struct alignas(alignment * sizeof(T)) ReadVector {
    unsigned char v[sizeof(T) * vec_size];
  };
  struct Pair { T a; short b; int sum() const thread { return int(a) + b; } };
  Pair p;
};
struct alignas(16) Padded { float x; };
struct Holder { Padded one; char tail; };
"""


@needs_gxx
def test_nested_structs_and_alignas_agree_with_gxx():
    body = """
  out[0] = sizeof(Loader<float>::ReadVector) * 100 + alignof(Loader<float>::ReadVector);
  out[1] = sizeof(Loader<short, 8>::ReadVector) * 100 + alignof(Loader<short, 8>::ReadVector);
  out[2] = sizeof(Padded) * 100 + sizeof(Holder);
  Loader<char>::Pair q = {char(3), short(4)};
  Loader<char> l;
  l.p = q;
  out[3] = l.p.sum() + sizeof(Loader<int, 4, 2>::ReadVector);
"""
    assert agree(HEADER, body, 4) == [1604, 1616, 1632, 23]


def test_an_alignment_that_is_not_a_power_of_two_is_an_error():
    with pytest.raises(metalsim.CompileError, match="requested alignment is not a positive "
                                                    r"power of 2 \(12\)"):
        metalsim_outputs("struct alignas(12) S { int a; };", "S s;\ns.a = 1;\nout[0] = s.a;", 1)


@needs_gxx
def test_a_constructor_declared_inline_constexpr_or_explicit_is_a_constructor():
    header = """
struct Counter {
  int n;
  METAL_FUNC Counter(int start) thread : n(start * 2) {}
  inline constexpr explicit Counter(float f) thread : n(int(f)) {}
};
"""
    body = "  Counter a(4);\n  Counter b(2.5f);\n  out[0] = a.n * 10 + b.n;\n"
    assert agree(header, body, 1) == [82]
