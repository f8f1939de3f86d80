"""C++ namespaces (nested, `a::b` definitions, `using namespace`, qualified names) and static
constexpr data members (MLX's `STEEL_CONST`), as MLX's kernel headers use them."""

import mlx.core as mx
import pytest

import metalsim

NAMESPACES = """
namespace mlx {
namespace steel {
template <typename T>
struct Acc {
  T v;
  void add(T x) thread { v += x; }
};
inline float twice(float x) { return 2 * x; }
constant constexpr int kTile = 4;
typedef float AccT;
}  // namespace steel
}  // namespace mlx
namespace util::inner {
inline int three() { return 3; }
}
"""

STATICS = """
#define STEEL_CONST static constant constexpr const
template <typename T, int BM, int BN>
struct Tile {
  STEEL_CONST int kRows = BM;
  STEEL_CONST int kCols = BN;
  STEEL_CONST int kElems = kRows * kCols;
  static constexpr constant short kPad = 16 / sizeof(T);
  T first;
  int elems() const thread { return kElems + kPad; }
};
struct Plain {
  static constexpr constant float scale = 0.5f;
  float x;
};
"""


def run(source, header):
    kernel = metalsim.metal_kernel("k", ["a"], ["out"], source, header=header)
    return kernel(inputs=[mx.zeros(1)], output_shapes=[(1,)], output_dtypes=[mx.float32],
                  grid=(1, 1, 1), threadgroup=(1, 1, 1))[0].item()


def test_qualified_names_reach_into_nested_namespaces():
    source = """
    mlx::steel::Acc<mlx::steel::AccT> acc = {1.0f};
    acc.add(mlx::steel::twice(1.0f));
    out[0] = acc.v + mlx::steel::kTile + util::inner::three() + ::mlx::steel::kTile;
    """
    assert run(source, NAMESPACES) == 3 + 4 + 3 + 4


def test_using_namespace_makes_the_names_visible_unqualified():
    source = "Acc<float> acc = {1.0f};\nout[0] = twice(acc.v) + kTile;"
    assert run(source, NAMESPACES + "using namespace mlx::steel;\n") == 6


def test_a_namespace_sees_its_own_names_unqualified():
    header = NAMESPACES + "namespace mlx { inline float four() { return steel::kTile; } }\n"
    assert run("out[0] = mlx::four();", header) == 4


@pytest.mark.parametrize("source, message", [
    ("out[0] = mlx::steel::nothing(1.0f);", "no member named 'nothing' in namespace 'mlx::steel'"),
    ("mlx::steel::Nope<float> q;\nout[0] = 1;", "no member named 'Nope' in namespace"),
])
def test_a_qualified_name_the_namespace_does_not_declare_is_an_error(source, message):
    with pytest.raises(metalsim.CompileError, match=message):
        run(source, NAMESPACES)


def test_using_an_undeclared_namespace_is_an_error():
    with pytest.raises(metalsim.CompileError, match="expected namespace name"):
        run("out[0] = 1;", "using namespace nowhere;")


def test_one_name_in_two_namespaces_names_two_constants():
    header = "namespace a { constant int k = 1; }\nnamespace b { constant int k = 2; }"
    assert run("out[0] = a::k * 10 + b::k;", header) == 12


def test_static_constexpr_members_of_a_struct_template_per_instance():
    source = "out[0] = Tile<half, 4, 8>::kElems * 100 + Tile<float, 2, 2>::kPad;"
    assert run(source, STATICS) == 32 * 100 + 4


def test_member_functions_use_static_members_unqualified():
    source = "Tile<half, 4, 8> t;\nt.first = 0;\nout[0] = t.elems();"
    assert run(source, STATICS) == 32 + 8


def test_static_members_of_a_plain_struct_and_its_size():
    assert run("out[0] = Plain::scale + sizeof(Plain);", STATICS) == 4.5


def test_a_static_member_is_a_constant_expression():
    source = "float buf[Tile<float, 2, 3>::kElems];\nstatic_assert(Tile<float, 2, 3>::kCols == 3, "
    source += "\"cols\");\nout[0] = sizeof(buf) / sizeof(float);"
    assert run(source, STATICS) == 6


def test_an_unknown_static_member_is_an_error():
    with pytest.raises(metalsim.CompileError, match="no static member named 'nope' in 'Plain'"):
        run("out[0] = Plain::nope;", STATICS)


def test_a_static_member_needs_a_constant_initializer():
    header = "struct S { static constexpr constant int k = 1 / 0; };"
    with pytest.raises(metalsim.CompileError, match="constant expression"):
        run("out[0] = S::k;", header)


def test_a_static_data_member_without_constexpr_is_refused_with_what_to_write():
    with pytest.raises(metalsim.CompileError, match="static data members are not supported"):
        run("out[0] = 1;", "struct S { static int k; };")


def test_using_a_nested_namespace_relative_to_the_enclosing_one():
    header = NAMESPACES + "namespace mlx { using namespace steel;\n"
    header += "inline float five() { return kTile + 1; } }\n"
    assert run("out[0] = mlx::five();", header) == 5


STATIC_FUNCTIONS = """
struct TransformNone {
  static constexpr constant int k = 3;
  static float apply(float x) { return x + k; }
  template <typename T> static T twice(T x) { return x * 2; }
};
template <typename T, int N>
struct Frag {
  static T scaled(T x) { return x * N; }
  T v;
  T get() const thread { return scaled(v) + TransformNone::apply(v); }
};
"""


def test_static_member_functions_called_through_the_struct_name():
    source = ("out[0] = TransformNone::apply(1.0f) + TransformNone::twice(2)"
              " + Frag<float, 3>::scaled(2.0f);")
    assert run(source, STATIC_FUNCTIONS) == 4 + 4 + 6


def test_static_member_functions_called_on_an_object_and_from_const_members():
    assert run("TransformNone t;\nout[0] = t.apply(1.0f);", STATIC_FUNCTIONS) == 4
    assert run("Frag<float, 2> f = {1.0f};\nout[0] = f.get();", STATIC_FUNCTIONS) == 2 + 4


@pytest.mark.parametrize("source, header, message", [
    ("out[0] = Frag<float, 2>::get();", STATIC_FUNCTIONS,
     "call to non-static member function 'get' without an object argument"),
    ("out[0] = 1;", "struct S { float x; static float bad() { return x; } };",
     "undeclared identifier 'x'"),
    ("out[0] = 1;", "struct S { static float c() const { return 1; } };",
     "static member function cannot have 'const' qualifier"),
    ("out[0] = TransformNone::nope(1.0f);", STATIC_FUNCTIONS,
     "no static member function named 'nope'"),
])
def test_misused_static_member_functions_are_errors(source, header, message):
    with pytest.raises(metalsim.CompileError, match=message):
        run(source, header)
