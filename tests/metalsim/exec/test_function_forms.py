"""Function forms C++ code writes that metalsim once refused, with g++ as the oracle: trailing
return types, `typename X::type(v)` as a functional cast, default arguments that use a
template parameter, and overloads on `T&` against `const T&`."""

from cxx_oracle import agree, needs_gxx

pytestmark = needs_gxx


def test_trailing_return_types_of_functions_templates_and_members():
    header = ("auto add(int a, int b) -> int { return a + b; }\n"
              "template <typename T> auto twice(T x) -> T { return x * 2; }\n"
              "struct S { int v; auto get() const -> int { return v * 3; } };\n")
    assert agree(header, "S s{5}; out[0] = add(2, 3); out[1] = twice(4); out[2] = s.get();",
                 3) == [5, 8, 15]


def test_typename_member_type_as_a_functional_cast():
    header = ("struct S { typedef short type; };\n"
              "template <typename X> int mk() { return typename X::type(70000) + 1; }\n")
    assert agree(header, "out[0] = mk<S>();", 1) == [4465]


def test_default_argument_using_a_template_parameter_is_evaluated_where_declared():
    header = ("constant constexpr int step = 2;\n"
              "template <typename T> T inc(T x, T by = T(step)) { return x + by; }\n")
    body = "int step2 = 9; out[0] = inc(3); out[1] = inc(3, 5); out[2] = int(inc(0.5f) * 2.0f);"
    assert agree(header, body, 3) == [5, 8, 5]


def test_reference_overloads_rank_by_constness_and_lvalueness():
    header = ("int f(thread int& x) { return 1; }\nint f(const thread int& x) { return 2; }\n"
              "int g(thread int& x) { return 3; }\nint g(float x) { return 4; }\n")
    body = ("int a = 0; const int b = 0;\nout[0] = f(a); out[1] = f(b); out[2] = f(3);\n"
            "out[3] = g(a); out[4] = g(7);")
    assert agree(header, body, 5) == [1, 2, 2, 3, 4]
