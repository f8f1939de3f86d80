"""Declarations MLX's kernel headers make before their definitions: a typedef naming a type
again (bf16.h's `typedef bfloat bfloat16_t;` after MLX's preamble), a struct template declared
before it is defined, partial and explicit specialisations of variable templates
(complex.h's `is_complex_v<complex_t<T>>`), and Metal's `is_convertible_v` and
`enable_if<B, T>::type`. g++ is the oracle where the construct is plain C++."""

import mlx.core as mx
import pytest
from cxx_oracle import gxx_outputs, metalsim_outputs, needs_gxx

import metalsim

GXX = "#include <type_traits>\nusing namespace std;\n"

HEADER = """
typedef int Count;
typedef int Count;
template <typename T>
struct Pair;
template <typename T>
constexpr constant int depth_v = 0;
template <typename T>
constexpr constant int depth_v<Pair<T>> = 1 + depth_v<T>;
template <>
constexpr constant int depth_v<float> = 10;
template <typename T>
struct Pair {
  T a, b;
};
template <typename T, typename = typename enable_if<is_convertible_v<T, int>>::type>
int as_int(T x) { return int(x) + 100; }
"""


@needs_gxx
def test_redeclarations_forward_declarations_and_variable_template_specializations():
    body = """
  Count c = 3;
  Pair<int> p = {1, 2};
  out[0] = c + p.b;
  out[1] = depth_v<int>;
  out[2] = depth_v<Pair<int>>;
  out[3] = depth_v<Pair<Pair<float>>>;
  out[4] = depth_v<float>;
  out[5] = is_convertible_v<float, int> + 2 * is_convertible_v<Pair<int>, int>;
  out[6] = as_int(short(4));
  out[7] = is_same_v<enable_if<true, short>::type, short>;
"""
    expected = gxx_outputs(GXX + HEADER, body, 8)
    assert metalsim_outputs(HEADER, body, 8) == expected == [5, 0, 1, 12, 10, 1, 104, 1]


def test_bfloat16_t_is_mlxs_typedef_which_a_header_may_declare_again():
    header = "typedef bfloat bfloat16_t;\ntypedef half float16_t;\n"
    source = "out[0] = float16_t(float(bfloat16_t(a[0] * 2)));"
    kernel = metalsim.metal_kernel("k", ["a"], ["out"], source, header=header)
    out = kernel(inputs=[mx.array([1.5], dtype=mx.bfloat16)], output_shapes=[(1,)],
                 output_dtypes=[mx.float16], grid=(1, 1, 1), threadgroup=(1, 1, 1))[0]
    assert out.tolist() == [3.0]


def test_a_typedef_naming_another_type_is_refused_not_a_silent_replacement():
    with pytest.raises(metalsim.CompileError,
                       match=r"typedef redefinition with different types \('float' vs "
                             r"'bfloat'\)"):
        metalsim_outputs("typedef float bfloat16_t;", "out[0] = 1;", 1)
    with pytest.raises(metalsim.CompileError, match="typedef redefinition"):
        metalsim_outputs("", "typedef int I; typedef short I; out[0] = 1;", 1)


def test_metals_bfloat_conversions_decide_is_convertible_v():
    body = ("out[0] = is_convertible_v<bfloat, float>; out[1] = is_convertible_v<float, bfloat>;"
            " out[2] = is_convertible_v<half, bfloat>; out[3] = is_convertible_v<float3, float>;")
    assert metalsim_outputs("", body, 4) == [1, 0, 0, 0]


def test_enable_if_false_has_no_type():
    with pytest.raises(metalsim.CompileError, match="no type named 'type' in 'enable_if"):
        metalsim_outputs("", "enable_if<false, int>::type x = 1; out[0] = x;", 1)


HEADER_2 = """
template <typename T>
struct Lim {
  static const constant T top = T(7);
};
struct V {
  int x;
};
inline bool operator>=(V a, V b) { return a.x >= b.x; }
inline bool operator<=(V a, V b) { return operator>=(b, a); }
template <typename T, enable_if_t<is_integral_v<T>, bool> = true>
int kind(T x) { return 1; }
template <typename T, enable_if_t<is_floating_point_v<T>, bool> = true>
int kind(T x) { return 2; }
"""


@needs_gxx
def test_static_const_members_operator_calls_by_name_and_unnamed_template_parameters():
    body = """
  V a = {1};
  V b = {2};
  out[0] = Lim<int>::top;
  out[1] = operator>=(a, b) + 2 * operator<=(a, b) + 4 * (b >= a);
  out[2] = kind(3) * 10 + kind(1.5f);
"""
    expected = gxx_outputs(GXX + HEADER_2, body, 3)
    assert metalsim_outputs(HEADER_2, body, 3) == expected == [7, 6, 12]


def test_a_kernels_own_complex64_t_typedef_meets_mlxs_as_in_the_source_mlx_compiles():
    """MLX compiles a custom kernel after its utils.h, so a kernel's own `complex64_t` of
    another type is a redefinition there (MLX's complex.h, included, replaces the prelude's
    stand-in instead: test_prelude_stand_ins)."""
    header = """
template <typename T>
struct cplx {
  T re, im;
};
typedef cplx<float> complex64_t;
"""
    with pytest.raises(metalsim.CompileError,
                       match=r"typedef redefinition with different types \('cplx<float>' vs "
                             r"'complex64_t'\)"):
        metalsim_outputs(header, "out[0] = 1;", 1)


def test_a_static_assert_constructing_an_object_is_compiled_but_not_evaluated():
    """(One calling a constexpr function with constant arguments is evaluated:
    test_constant_calls.)"""
    header = """
struct P {
  int v;
  constexpr P(int x) thread : v(x) {}
};
constexpr int twice(int x) { return 2 * x; }
static_assert(P(3).v == 3, "compiled, not run");
static_assert(twice(2) == 4, "evaluated");
"""
    assert metalsim_outputs(header, "out[0] = twice(5);", 1) == [10]
    with pytest.raises(metalsim.CompileError, match="no member named 'w'"):
        metalsim_outputs(header + 'static_assert(P(3).w == 3, "w");', "out[0] = 1;", 1)
    with pytest.raises(metalsim.CompileError, match="static assertion failed"):
        metalsim_outputs('static_assert(sizeof(int) == 2, "two");', "out[0] = 1;", 1)


def test_metal_array_holds_elements_with_size_and_indexing():
    header = """
struct Holder {
  const array<int, 2> pair;
};
"""
    body = """
  array<int, 3> v = {1, 2, 3};
  v[1] += 5;
  Holder h = {{10, 20}};
  float array[2] = {4, 5};
  out[0] = v[1];
  out[1] = v.size();
  out[2] = h.pair[1];
  out[3] = int(array[1]);
"""
    assert metalsim_outputs(header, body, 4) == [7, 3, 20, 5]


FUNCTION_CONSTANTS = """
constant bool has_mask [[function_constant(20)]];
constant int block [[function_constant(21)]];
"""


def test_a_function_constant_is_declared_undefined_as_metal_kernel_sets_none():
    body = "out[0] = is_function_constant_defined(has_mask) ? 1 : 2;"
    assert metalsim_outputs(FUNCTION_CONSTANTS, body, 1) == [2]
    with pytest.raises(metalsim.CompileError,
                       match="function constant 'block' has no value") as info:
        metalsim_outputs(FUNCTION_CONSTANTS, "out[0] = block;", 1)
    assert "template" in info.value.diagnostic.hint


def test_a_program_scope_object_without_data_members_is_constructed_from_literals():
    header = """
struct Log {
  constexpr Log(constant char*, constant char*) constant {}
  void note(int) const constant {}
};
constant Log logger("mlx", "ops");
"""
    assert metalsim_outputs(header, "logger.note(3); out[0] = 4;", 1) == [4]


MEMBER_ALIAS_TEMPLATES = """
template <typename T>
struct Frag {
  template <typename U>
  using pair_t = vec<U, 2>;
  template <typename U>
  static U first(pair_t<U> v) { return v.x; }
};
template <typename F>
int use() {
  typename F::template pair_t<int> v = {3, 4};
  return F::template first<int>(v) + v.y;
}
"""


@needs_gxx
def test_member_alias_templates_and_the_template_keyword_after_a_qualifier():
    body = "Frag<float>::pair_t<int> w = {5, 6}; out[0] = use<Frag<float>>() + w.y;"
    gxx = GXX + "template <typename T, int N> struct vec { T x, y; };\n"
    expected = gxx_outputs(gxx + MEMBER_ALIAS_TEMPLATES, body, 1)
    assert metalsim_outputs(MEMBER_ALIAS_TEMPLATES, body, 1) == expected == [13]


UNIONS = """
union Bits {
  float f;
  uint u;
  ushort h[2];
};
using shape_t = union {
  float value;
  uint word;
};
template <typename T>
union packed {
  T val[sizeof(uint) / sizeof(T)];
  uint bits;
};
namespace {
constant int hidden = 7;
}
"""


@needs_gxx
def test_unions_share_their_storage_and_braces_initialise_the_first_member():
    body = """
  Bits b = {1.0f};
  shape_t s;
  s.value = -2.0f;
  packed<uchar> p;
  p.bits = 0x01020304u;
  out[0] = b.u == 0x3f800000u;
  out[1] = b.h[1];
  out[2] = s.word >> 24;
  out[3] = p.val[0] + 10 * p.val[3];
  out[4] = sizeof(Bits) + 10 * sizeof(packed<ushort>) + 100 * hidden;
"""
    gxx = GXX + ("typedef unsigned int uint;\ntypedef unsigned short ushort;\n"
                 "typedef unsigned char uchar;\n")
    expected = gxx_outputs(gxx + UNIONS, body, 5)
    assert metalsim_outputs(UNIONS, body, 5) == expected == [1, 16256, 192, 14, 744]


@needs_gxx
def test_disjunction_and_conjunction_of_traits():
    header = """
template <typename T>
constexpr constant bool is_word = _disjunction<is_same<T, int>, is_same<T, uint>,
                                               bool_constant<sizeof(T) == 8>>::value;
template <typename T>
constexpr constant bool signed_int = _conjunction<is_integral<T>, is_signed<T>>::value;
"""
    body = ("out[0] = is_word<int> + 2 * is_word<float> + 4 * is_word<long>"
            " + 8 * signed_int<int> + 16 * signed_int<uint>;")
    gxx = (GXX + "typedef unsigned int uint;\n#define _disjunction disjunction\n"
           "#define _conjunction conjunction\n")
    expected = gxx_outputs(gxx + header, body, 1)
    assert metalsim_outputs(header, body, 1) == expected == [13]


MEMBER_CALLS = """
struct F {
  int v;
  operator float() const thread { return v * 1.5f; }
  operator int() const thread { return v + 100; }
  int twice() const thread { return this->operator int() * 2; }
  F operator+(F o) const thread { F r = {v + o.v}; return r; }
  template <typename T>
  int sum() const thread { return first<T>(T(v)) + 1; }
  template <typename T>
  int first(T x) const thread { return int(x) * 10; }
};
"""


@needs_gxx
def test_operators_called_by_name_braced_assignment_and_later_member_templates():
    body = """
  F x = {2};
  F y = {3};
  int k;
  k = {7};
  F z;
  z = {4};
  out[0] = x.twice();
  out[1] = int(x.operator float() * 2);
  out[2] = x.operator+(y).v;
  out[3] = k + z.v;
  out[4] = x.sum<float>();
  float n = 3;
  int i = 2;
  out[5] = i < float(n);
"""
    expected = gxx_outputs(GXX + MEMBER_CALLS, body, 6)
    assert metalsim_outputs(MEMBER_CALLS, body, 6) == expected == [204, 6, 5, 11, 21, 1]


def test_braced_assignment_of_vectors():
    body = ("float2 w[2]; w[0] = {1.5f, 2.5f}; w[1] = {}; out[0] = int(w[0].y * 2);"
            " out[1] = int(w[1].x);")
    assert metalsim_outputs("", body, 2) == [5, 0]


def test_uniform_computes_as_its_type():
    body = """
  constexpr const uniform<int> step = make_uniform(4);
  const uniform<int> n = make_uniform(10);
  const uniform<int> iters = n / step;
  out[0] = iters * step;
  out[1] = n - iters * step;
"""
    assert metalsim_outputs("", body, 2) == [8, 2]


OUT_OF_CLASS = """
struct Op {
  int k;
  int operator()(int x) thread;
  int operator()(float x) thread { return int(x) + k; }
  int get() const thread;
};
int Op::operator()(int x) thread { return x * k; }
int Op::get() const thread { return k + 1; }
"""


@needs_gxx
def test_member_functions_defined_after_their_struct():
    body = "Op o = {3}; out[0] = o(4) + o.get(); out[1] = o(2.5f);"
    expected = gxx_outputs(GXX + OUT_OF_CLASS, body, 2)
    assert metalsim_outputs(OUT_OF_CLASS, body, 2) == expected == [16, 5]


def test_a_member_function_declared_but_not_defined_is_reported_where_called():
    header = "struct Q { int f() thread; };"
    with pytest.raises(metalsim.CompileError, match="function 'f' is declared but never defined"):
        metalsim_outputs(header, "Q q; out[0] = q.f();", 1)
    with pytest.raises(metalsim.CompileError, match="does not match any declaration in 'Q'"):
        metalsim_outputs(header + "int Q::f(int x) thread { return x; }", "out[0] = 1;", 1)


@needs_gxx
def test_a_specialization_may_leave_defaulted_template_arguments_out():
    header = """
template <typename T, typename = void>
struct Init { static constexpr constant int v = 1; };
template <typename T>
struct Init<T, enable_if_t<is_floating_point_v<T>>> { static constexpr constant int v = 2; };
template <>
struct Init<short> { static constexpr constant int v = 3; };
"""
    body = "out[0] = Init<int>::v * 100 + Init<float>::v * 10 + Init<short>::v;"
    expected = gxx_outputs(GXX + header, body, 1)
    assert metalsim_outputs(header, body, 1) == expected == [123]
