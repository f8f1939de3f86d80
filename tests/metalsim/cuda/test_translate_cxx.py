"""The CUDA printer on the C++ that MLX's kernel headers are written in: each construct's
translation (what it prints) and that NVRTC compiles it, without a GPU.

MLX's own headers (steel GEMM and attention, quantized.h) are compiled whole in
`test_translate.py`; these pin the constructs one by one.
"""

from __future__ import annotations

import mlx.core as mx
import pytest

import metalsim
from metalsim.cuda import nvrtc
from metalsim.cuda.translate import Translation, translate

needs_nvrtc = pytest.mark.skipif(not nvrtc.available(),
                                 reason="NVRTC is not installed (pip install -e '.[cuda]')")


def translated(body: str, header: str = "") -> Translation:
    kernel = metalsim.metal_kernel("k", ["a"], ["out"], body, header=header)
    gen = kernel._prepare((), dict(inputs=[mx.zeros(8)], output_shapes=[(8,)],
                                   output_dtypes=[mx.float32], grid=(8, 1, 1),
                                   threadgroup=(8, 1, 1))).gen
    return translate(gen)


def compiles(translation: Translation) -> None:
    if nvrtc.available():
        nvrtc.compile_ptx(translation.source)


def test_variable_templates_and_their_specialisations_are_constexpr_templates():
    t = translated("out[thread_position_in_grid.x] = width_v<float> + width_v<int>;", """
        template <typename T> constant constexpr int width_v = 1;
        template <> constant constexpr int width_v<float> = 4;
    """)
    assert "template <typename T>\nconstexpr int width_v = 1;" in t.kernel_text
    assert "template <>\nconstexpr int width_v<float> = 4;" in t.kernel_text
    compiles(t)


def test_parameter_packs_print_with_their_ellipses():
    t = translated("out[thread_position_in_grid.x] = total(1.0f, 2.0f, 3.0f);", """
        template <typename T> T total(T x) { return x; }
        template <typename T, typename... Us> T total(T x, Us... us) { return x + total(us...); }
    """)
    assert "template <typename T, typename... Us>" in t.kernel_text
    assert "total(T x, Us ...us)" in t.kernel_text and "total(us...)" in t.kernel_text
    compiles(t)


def test_namespace_members_are_spelled_by_program_name_and_directives_dropped():
    t = translated("out[thread_position_in_grid.x] = scale(2);", """
        namespace geo { namespace detail { constant constexpr int K = 3; }
                        inline int scale(int x) { return x * detail::K; } }
        using namespace geo;
    """)
    assert "geo_ns_detail_ns_K = 3;" in t.kernel_text
    assert "return (x * geo_ns_detail_ns_K);" in t.kernel_text
    assert "geo_ns_scale(2)" in t.kernel_text and "using namespace" not in t.kernel_text
    compiles(t)


BOX = """
    template <typename T> struct Box {
      typedef T type;
      static constexpr constant int n = 2;
      T v;
      T get() const { return v; }
      template <int K> T times() const { return v * K; }
      static T twice(T x) { return x + x; }
      constexpr operator T() const { return v; }
    };
    template <> struct Box<int> { typedef short type; static constexpr constant int n = 5; };
    template <typename T> struct Tagged : Box<T> { int tag; };
"""


def test_struct_member_types_statics_specialisations_and_bases_print_in_order():
    t = translated("""
        Tagged<float> b;
        b.v = a[0];
        out[thread_position_in_grid.x] = b.get() + Box<int>::n;
    """, BOX)
    text = t.kernel_text
    assert "struct Box {\n  using type = T;\n  static constexpr int n = 2;\n  T v;" in text
    assert "template <>\nstruct Box<int> {\n  using type = short;" in text
    assert "struct Tagged : public Box<T> {\n  int tag;\n};" in text
    compiles(t)


def test_member_templates_static_members_and_conversion_functions():
    t = translated("""
        Box<float> b{a[0]};
        typename Box<float>::type t = b.template times<3>();
        out[thread_position_in_grid.x] = t + Box<float>::twice(b.get()) + float(b);
    """, BOX)
    text = t.kernel_text
    assert "template <int K>\n  __device__ inline T times() const" in text
    assert "__device__ inline static T twice(T x)" in text
    assert "__device__ inline constexpr operator T() const" in text
    assert "typename Box<float>::type t = b.template times<3>();" in text
    compiles(t)


def test_a_qualifier_keeps_its_template_arguments_on_the_part_that_had_them():
    t = translated("out[thread_position_in_grid.x] = Outer<float>::Inner::k;", """
        template <typename T> struct Outer {
          struct Inner { static constexpr constant int k = sizeof(T); };
        };
    """)
    assert "Outer<float>::Inner::k" in t.kernel_text
    compiles(t)


def test_a_struct_template_declared_before_its_definition_stays_declared():
    t = translated("out[thread_position_in_grid.x] = is_later<Later<float>> ? 1 : 0;", """
        template <typename T> struct Later;
        template <typename T> constant constexpr bool is_later = false;
        template <typename T> constant constexpr bool is_later<Later<T>> = true;
        template <typename T> struct Later { T x; };
    """)
    assert "template <typename T>\nstruct Later;\n" in t.kernel_text
    compiles(t)


def test_decltype_of_an_expression_is_a_type():
    t = translated("""
        float x = a[0];
        decltype(x) y = x * 2;
        out[thread_position_in_grid.x] = y;
    """)
    assert "decltype(x) y = " in t.kernel_text
    compiles(t)


def test_a_header_kernel_that_nothing_instantiates_is_left_out():
    t = translated("out[thread_position_in_grid.x] = a[0];", """
        template <typename T>
        [[kernel]] void other(device T* x [[buffer(0)]]) { x[0] = T(1); }
    """)
    assert "other" not in t.kernel_text
    compiles(t)


def test_an_unset_function_constant_is_dropped_unless_the_kernel_reads_it():
    header = "constant bool use_bias [[function_constant(0)]];\n"
    t = translated("out[thread_position_in_grid.x] = a[0];", header)
    assert "use_bias" not in t.kernel_text
    with pytest.raises(metalsim.CompileError) as info:
        translated("out[thread_position_in_grid.x] = use_bias ? a[0] : 0.0f;", header)
    assert "cannot translate the function constant 'use_bias'" in str(info.value)
    assert info.value.line == 1


def test_metal_fast_and_precise_overloads_of_a_header_print_in_their_namespace():
    t = translated("out[thread_position_in_grid.x] = float(fast::twice(bfloat16_t(a[0])));", """
        namespace metal { namespace fast {
          inline bfloat16_t twice(bfloat16_t x) { return x + x; }
        } }
    """)
    assert "namespace fast {\n__device__ inline bfloat16_t twice(bfloat16_t x)" in t.kernel_text
    compiles(t)


@needs_nvrtc
def test_metals_type_traits_and_limits_are_constant_expressions_on_cuda():
    t = translated("""
        static_assert(metal::is_same_v<metal::remove_cv_t<const float>, float>, "");
        static_assert(metal::bool_constant<true>::value && !metal::is_integral_v<float>, "");
        static_assert(metal::is_convertible_v<int, float>, "");
        static_assert(metal::is_convertible_v<bfloat16_t, float>, "");
        static_assert(!metal::is_convertible_v<float, bfloat16_t>, "");   // MSL 2.22
        static_assert(!metal::is_convertible_v<half, bfloat16_t>, "");
        static_assert(metal::is_same_v<metal::conditional_t<true, int, float>, int>, "");
        constexpr float inf = metal::numeric_limits<float>::infinity();
        constexpr half top = metal::numeric_limits<half>::max();
        static_assert(metal::numeric_limits<float>::has_infinity, "");
        static_assert(metal::numeric_limits<int>::infinity() == 0, "");
        static_assert(metal::numeric_limits<char>::is_signed && numeric_limits<char>::digits == 7,
                      "");
        static_assert(numeric_limits<bfloat>::digits == 8 && !numeric_limits<uint>::is_signed,
                      "");
        static_assert(numeric_limits<ulong>::max() == 18446744073709551615ul, "");
        static_assert(numeric_limits<long>::min() < 0 && numeric_limits<short>::digits10 == 4,
                      "");
        out[thread_position_in_grid.x] = inf > top ? 1.0f : 0.0f;
    """)
    nvrtc.compile_ptx(t.source)


@needs_nvrtc
def test_half_and_bfloat_arithmetic_in_a_static_assert_is_evaluated_by_the_compiler():
    """MLX's complex.h checks half and bfloat products at compile time; a wrong claim fails."""
    good = translated("out[thread_position_in_grid.x] = a[0];", """
        static_assert(half(1.5h) * half(3.0h) == 4.5h, "");
        static_assert(bfloat16_t(0.1f) + bfloat16_t(0.2f) == bfloat16_t(0.30078125f), "");
    """)
    nvrtc.compile_ptx(good.source)
    wrong = translated("out[thread_position_in_grid.x] = a[0];",
                       'static_assert(half(0.1f) == 0.1f, "");\n')
    with pytest.raises(nvrtc.NvrtcError, match="static assertion failed"):
        nvrtc.compile_ptx(wrong.source)


def test_lambdas_print_their_captures_parameters_and_return_types():
    t = translated("""
        int k = 3;
        auto add_k = [&](float x) { return x + k; };
        auto sq = [](float x) -> float { return x * x; };
        auto first = [=](auto v) mutable { return v; };
        out[thread_position_in_grid.x] = add_k(a[0]) + sq(2.0f) + first(1.0f);
    """)
    text = t.kernel_text
    assert "auto add_k = [&](float x) {" in text
    assert "auto sq = [](float x) -> float {" in text
    assert "auto first = [=](auto v) mutable {" in text
    compiles(t)


def test_function_pointers_as_template_parameters_and_arguments():
    t = translated("out[thread_position_in_grid.x] = call_with<twice>(a[0]);", """
        inline float twice(float x) { return 2 * x; }
        template <float (*G)(float)> float call_with(float x) { return G(x); }
    """)
    assert "template <float (*G)(float)>" in t.kernel_text
    assert "call_with<twice>(a[0])" in t.kernel_text
    compiles(t)


def test_enums_unions_and_if_constexpr():
    t = translated("""
        Bits b;
        b.f = a[0];
        float r = float(b.u & 1u) + pal::Blue + int(pal::Mode::Slow);
        if constexpr (sizeof(float) == 4) { r += 1; }
        out[thread_position_in_grid.x] = r;
    """, """
        namespace pal { enum Color { Red, Green = 4, Blue };
                        enum class Mode : int { Fast = 1, Slow = 2 }; }
        union Bits { float f; uint u; };
    """)
    text = t.kernel_text
    assert "enum pal_ns_Color {pal_ns_Red, pal_ns_Green = 4, pal_ns_Blue};" in text
    assert "enum class pal_ns_Mode : int {Fast = 1, Slow = 2};" in text
    assert "union Bits {\n  float f;\n  uint u;\n};" in text
    assert "if constexpr ((sizeof(float) == 4))" in text
    assert "pal_ns_Blue" in text and "pal_ns_Mode::Slow" in text
    compiles(t)


def test_explicit_specialisations_and_members_defined_after_their_struct():
    t = translated("""
        Acc acc{1.0f};
        Holder<float> h{2.0f};
        out[thread_position_in_grid.x] = ft<int>(5) + fn<0>() + acc.add(2.0f) + Acc::count()
                                         + h.get<0>() + h.get<2>();
    """, """
        template <typename T> T ft(T x) { return T(x + T(1)); }
        template <> int ft(int x) { return x * 100; }
        template <int N> int fn() { return N; }
        template <> int fn<0>() { return -1; }
        struct Acc { float v; float add(float x); static int count(); };
        float Acc::add(float x) { v += x; return v; }
        int Acc::count() { return 7; }
        template <typename T> struct Holder {
          T v;
          template <int K> T get() const { return v * K; }
        };
        template <> template <> float Holder<float>::get<0>() const { return -1.0f; }
    """)
    text = t.kernel_text
    assert "template <>\n__device__ inline int ft(int x)" in text
    assert "template <>\n__device__ inline int fn<0>()" in text
    assert "__device__ inline float Acc::add(float x) {" in text
    assert "__device__ inline static int count();" in text
    assert "template <>\ntemplate <>\n__device__ inline float Holder<float>::get<0>() const" in text
    compiles(t)


def test_a_member_of_a_class_template_instance_defined_after_it_is_a_specialisation():
    t = translated("out[thread_position_in_grid.x] = Pair<float, int>{a[0], 2}.sum();", """
        template <typename A, typename B> struct Pair { A a; B b; float sum() const; };
        template <> float Pair<float, int>::sum() const { return a + b; }
    """)
    assert "template <>\n__device__ inline float Pair<float, int>::sum() const" in t.kernel_text
    compiles(t)


def test_a_constructor_for_constant_objects_and_a_string_in_constant_memory():
    """MLX's logging.h: `constexpr os_log(constant char*, constant char*) constant {}`, which
    metalsim never runs, constructs a program-scope object on CUDA from string literals."""
    t = translated("out[thread_position_in_grid.x] = a[0];", """
        struct Log { constexpr Log(constant char*, constant char*) constant {} };
        constant Log logger("mlx", "census");
    """)
    assert "__device__ constexpr Log(const char *, const char *) {" in t.kernel_text
    compiles(t)


@needs_nvrtc
def test_metals_constants_arrays_and_internal_traits_on_cuda():
    t = translated("""
        static_assert(M_PI_F == 0x1.921fb6p+1f && M_LN10_F == 0x1.26bb1cp+1f, "");
        static_assert(INT_MIN == -2147483647 - 1 && SHRT_MIN == -32768, "");
        static_assert(metal::_disjunction<metal::is_same<int, float>, metal::true_type>::value,
                      "");
        constexpr float nan = metal::numeric_limits<float>::quiet_NaN();
        metal::array<float, 3> v = {a[0], M_SQRT1_2_F, float(HALF_EPSILON)};
        out[thread_position_in_grid.x] = v[v.size() - 1] + (nan != nan ? 1.0f : 0.0f);
    """)
    nvrtc.compile_ptx(t.source)


def test_a_programs_own_integral_constant_replaces_metals_under_another_name():
    """As in the simulator, where Metal's gives way to the program's (MLX's steel declares
    its own, and so do custom headers)."""
    t = translated("""
        Int<4> four;
        out[thread_position_in_grid.x] = a[0] * four + metal::true_type::value;
    """, """
        template <typename T, T v> struct integral_constant {
          static constexpr constant T value = v;
          using value_type = T;
          constexpr operator value_type() const thread { return value; }
        };
        template <int val> using Int = integral_constant<int, val>;
    """)
    assert "struct program_integral_constant {" in t.kernel_text
    assert "using Int = program_integral_constant<int, val>;" in t.kernel_text
    assert "true_type::value" in t.kernel_text   # Metal's, which the program does not declare
    compiles(t)


def test_modf_sincos_frexp_and_mlxs_log1p_compile_where_a_kernel_calls_them():
    t = translated("""
        float ip; int e; float c; half hip;
        float r = modf(a[0], ip) + frexp(a[1], e) + sincos(a[2], c) + log1p(a[3]);
        out[thread_position_in_grid.x] = r + float(modf(half(a[4]), hip))
                                         + float(log1p(bfloat16_t(a[5])));
    """)
    assert "__device__ inline float log1p(float x)" in t.kernel_text   # MLX's, from utils.h
    compiles(t)


# A base's overloads named in a derived struct: without `using` in the CUDA text, `d.get(1)`
# would call the derived `get(float)` there (a different value, no error).
USING_BASE_MEMBERS = """
    namespace na {
    template <typename T> struct TB {
      T get(int x) const { return T(x + 1); }
      TB operator+(int) const { return *this; }
      int tag() const { return 7; }
    };
    }
    template <typename T> struct TD : na::TB<T> {
      using na::TB<T>::get;
      using na::TB<T>::operator+;
      T get(float) const { return T(100); }
      TD operator+(float) const { return *this; }
    };
"""


def test_using_declarations_of_base_members_are_kept():
    t = translated("TD<float> d; out[thread_position_in_grid.x] = d.get(1) + (d + 1).tag();",
                   USING_BASE_MEMBERS)
    assert "  using na_ns_TB<T>::get;\n  using na_ns_TB<T>::operator+;\n" in t.kernel_text
    compiles(t)


# Hidden friends: only argument-dependent lookup finds them, so `f(1L)` calls the global
# `f(int)` (C++: 1), not the friend `f(long)` of a struct it has no argument of.
HIDDEN_FRIENDS = """
    inline int f(int) { return 1; }
    struct D { int v; friend int f(long) { return 2; } };
    namespace na {
    struct C { int v; friend int g(C c) { return c.v; } };
    template <typename T> struct W { T v; friend T h(W w) { return w.v; } };
    }
"""
HIDDEN_FRIENDS_BODY = ("na::C c{5}; na::W<float> w{3}; "
                       "out[thread_position_in_grid.x] = g(c) + h(w) + 10 * f(1L);")


def test_hidden_friends_are_defined_in_their_structs():
    t = translated(HIDDEN_FRIENDS_BODY, HIDDEN_FRIENDS)
    assert "  friend __device__ inline int f(long) {" in t.kernel_text
    assert "  friend __device__ inline int g(na_ns_C c) {" in t.kernel_text
    assert "  friend __device__ inline T h(na_ns_W w) {" in t.kernel_text
    compiles(t)


def test_prefix_and_postfix_increment_operators_print_with_the_postfix_int():
    t = translated("C c = {1}; ++c; C d = c--; P p = {1}; p++; "
                   "out[thread_position_in_grid.x] = c.v + d.v + p.x;", """
        struct C { int v; C& operator++() { v += 10; return *this; }
                   C operator--(int) { C old = *this; v -= 1; return old; } };
        struct P { int x; };
        P operator++(P& p, int) { P old = p; p.x += 3; return old; }
    """)
    assert "__device__ inline C & operator++() {" in t.kernel_text
    assert "__device__ inline C operator--(int) {" in t.kernel_text
    assert "__device__ inline P operator++(P &p, int) {" in t.kernel_text
    assert "(++c);" in t.kernel_text and "C d = (c--);" in t.kernel_text
    compiles(t)


def test_forward_declared_structs_print_with_their_class_key_and_compile():
    t = translated("C c = {3}; N n = {&c}; L l; l.next = &l; l.v = 1; "
                   "out[thread_position_in_grid.x] = get(n) + na::g(&c) + l.next->v;", """
        struct C;
        struct N { thread C* p; };
        int get(N n);
        struct C { int v; };
        int get(N n) { return n.p->v; }
        namespace na { union U; int g(thread C* c) { return c->v; } union U { int i; }; }
        struct L { thread L* next; int v; };
        struct K { thread struct E* e; };
        struct E { int w; };
    """)
    assert "struct C;\n" in t.kernel_text and "union na_ns_U;\n" in t.kernel_text
    assert t.kernel_text.index("struct E;") < t.kernel_text.index("struct K {")
    assert t.kernel_text.index("struct C;") < t.kernel_text.index("struct N {")
    compiles(t)


def test_local_and_nested_forward_declarations_print_where_they_are_and_compile():
    t = translated("struct C; thread C* p = nullptr; struct C { int v; }; C c = {2}; p = &c; "
                   "O::I i = {5}; O o = {&i}; "
                   "out[thread_position_in_grid.x] = p->v + o.p->v;", """
        struct O { struct I; thread I* p; struct I { int v; }; };
    """)
    text = t.kernel_text
    assert text.index("struct C;") < text.index("C *p = nullptr;") < text.index("struct C {")
    assert text.index("struct I;") < text.index("struct I {")   # (types before data members)
    compiles(t)


REDECLARED_FRIENDS = """
    namespace na {
    struct B; int g(B b);
    struct C { int v; friend int g(C c) { return c.v; } };
    int g(C c);
    struct B { int v; friend int g(B b) { return b.v * 100; } };
    int use(C c) { return g(c) + na::g(c); }
    }
    struct D { int v; friend int f(D d) { return d.v * 2; } };
    int f(D d);
"""


def test_a_hidden_friend_redeclared_in_its_namespace_prints_under_one_name():
    t = translated("na::C c{5}; na::B b{1}; D d{4}; "
                   "out[thread_position_in_grid.x] = na::g(c) + g(c) + f(d) + na::g(b);",
                   REDECLARED_FRIENDS)
    assert "na_ns_g" not in t.kernel_text
    assert "__device__ inline int g(na_ns_B b);\n" in t.kernel_text
    assert "  friend __device__ inline int g(na_ns_C c) {" in t.kernel_text
    assert "__device__ inline int g(na_ns_C c);\n" in t.kernel_text
    assert "return (g(c) + (g)(c));" in t.kernel_text   # `na::g(c)`: no ADL
    assert "(((g)(c) + g(c)) + f(d)) + (g)(b)" in t.kernel_text
    assert "__device__ inline int f(D d);\n" in t.kernel_text
    compiles(t)


def test_a_redeclared_friend_beside_a_function_of_its_name_is_refused():
    with pytest.raises(metalsim.CompileError, match="the hidden friend 'na::g', whose "
                                                    "namespace declares functions of its name, "
                                                    "beside another function named 'g'") as e:
        translated("out[thread_position_in_grid.x] = g(1);",
                   "int g(int k) { return k; }\n"
                   "namespace na { struct C { int v; friend int g(C c) { return 1; } };\n"
                   "int g(C c); }")
    assert (e.value.line, e.value.column) == (3, 1)


def test_a_qualified_call_of_a_hidden_friend_s_name_finds_no_friend_by_its_argument():
    # C++: `na::other(s)` is the namespace's `other(int)` (through the conversion); an
    # unqualified `other(s)` finds the friend through its argument (the simulator: 3 and 100)
    t = translated("na::S s{2}; out[thread_position_in_grid.x] = na::other(s) * 1000 + "
                   "other(s) + na::tw(s);", """
        namespace na { struct S { int v; operator int() const { return v; }
          friend int tw(S s) { return s.v + 10; }
          friend int other(S s) { return 100; } };
          int tw(S s); int other(int x) { return x + 1; } }
    """)
    assert "__device__ inline int other(int x) {" in t.kernel_text
    assert "(((other)(s) * 1000) + other(s)) + (tw)(s)" in t.kernel_text
    compiles(t)


def test_nullptr_and_null_pointer_comparisons_print_as_written():
    t = translated("uint i = thread_position_in_grid.x;\n"
                   "const device float* p = first(i % 2 == 0, a);\n"
                   "out[i] = p == nullptr ? -1.0f : p[i];", """
        const device float* first(bool c, const device float* p) {
            return c ? p : nullptr;
        }
    """)
    assert "(c ? p : nullptr)" in t.kernel_text
    assert "(p == nullptr)" in t.kernel_text
    compiles(t)


def test_metal_nullptr_t_prints_as_the_preludes_nullptr_t():
    t = translated("out[thread_position_in_grid.x] = is_null(nullptr) + is_null(a);", """
        int is_null(thread const metal::nullptr_t&) { return 1; }
        int is_null(const device float* p) { return p == nullptr_t(); }
    """)
    assert "int is_null(const nullptr_t &)" in t.kernel_text
    assert "typedef decltype(nullptr) nullptr_t;" in t.source
    compiles(t)


def test_casts_of_nullptr_to_long_print_as_written_and_compile():
    t = translated("out[thread_position_in_grid.x] = (long)nullptr + long(nullptr)"
                   " + reinterpret_cast<ulong>(nullptr);")
    assert "((long)(nullptr)) + long(nullptr)) + reinterpret_cast<ulong>(nullptr)" in t.kernel_text
    compiles(t)
