"""Lambdas (`metalsim.exec.lambdas`): captures by reference and by copy, generic lambdas
(`auto` parameters), lambdas called where they are defined and passed to function templates,
nested lambdas and `this`, as MLX's NAX headers use them (`const_for_loop`, `dispatch_bool`).
g++ is the oracle for the values; lanes diverging around a lambda are checked against numpy."""

import mlx.core as mx
import numpy as np
import pytest
from cxx_oracle import agree, metalsim_outputs, needs_gxx

import metalsim

LOOPS = """
template <int N> struct Int {
  static constexpr constant int value = N;
  constexpr operator int() const { return N; }
};
template <bool B> struct Bool { static constexpr constant bool value = B; };
template <int start, int stop, int step, typename F>
void const_for_loop(F f) {
  if constexpr (start < stop) {
    constexpr auto idx = Int<start>{};
    f(idx);
    const_for_loop<start + step, stop, step, F>(f);
  }
}
template <typename F> void dispatch_bool(bool v, F f) {
  if (v) { f(Bool<true>{}); } else { f(Bool<false>{}); }
}
template <typename F> int twice(F f, int x) { return f(f(x)); }
struct P { int a; int b; int sum() const thread { return a + b; } };
"""


@needs_gxx
@pytest.mark.parametrize("body, n", [
    # by reference: reads and writes the enclosing variable
    ("int k = 3; auto f = [&](int x) { k += x; return k; }; out[0] = f(2); out[1] = f(5);\n"
     "out[2] = k;", 3),
    # by copy: the value when the lambda was made; mutable copies persist between calls
    ("int k = 3; auto f = [=](int x) { return k * x; }; k = 100; out[0] = f(2); out[1] = k;\n"
     "auto g = [k]() mutable { k += 1; return k; }; out[2] = g(); out[3] = g(); out[4] = k;", 5),
    # explicit captures, mixed with a default
    ("int a = 2, b = 5; auto f = [a, &b](int x) { b += x; return a * b; }; a = 9;\n"
     "out[0] = f(1); out[1] = b; auto g = [=, &b]() { b = a; }; g(); out[2] = b;\n"
     "auto h = [&, a]() { return a + b; }; a = 40; out[3] = h();", 4),
    # copies of a struct and of a pointer (the pointee is still shared)
    ("P p{1, 2}; int arr[3] = {5, 6, 7}; thread int* q = arr;\n"
     "auto f = [=]() { return p.sum() * 100 + q[1]; };\n"
     "auto g = [p, q]() mutable { p.a += 10; q += 1; return p.a * 10 + *q; };\n"
     "p.a = 50; arr[1] = 60; out[0] = f(); out[1] = g(); out[2] = g(); out[3] = p.a;", 4),
    # called as it is made
    ("int k = 3; const int x = [&] { return k * 2; }(); int y = [=](int m) { return k * m; }(5);"
     "\n[&]() { k = 40; }(); out[0] = x; out[1] = y; out[2] = k;", 3),
    # generic: each call instantiates the body for its argument types
    ("int k = 3; auto f = [&](auto x) { return x + k; }; out[0] = f(2);\n"
     "out[1] = int(f(1.5f) * 2); out[2] = int(f(short(4)));", 3),
    ("auto add_to = [](thread auto& target, auto v) { target += v; };\n"
     "int x = 5; float y = 1.5f; add_to(x, 3); add_to(y, 2.0f); out[0] = x;\n"
     "out[1] = int(y * 10);", 2),
    # no parameter list; a trailing return type converts
    ("int k = 7; auto f = [&] { return k; }; auto g = [&](float v) -> int { return v; };\n"
     "out[0] = f(); out[1] = g(2.75f);", 2),
    # passed to function templates, called there (and through them again)
    ("int acc = 0; const_for_loop<0, 4, 1>([&](auto i) { acc += i.value * 10 + i; });\n"
     "out[0] = acc; out[1] = twice([](int v) { return v * 3 + 1; }, 2);", 2),
    ("int acc = 0;\n"
     "for (int i = 0; i < 3; i++) {\n"
     "  dispatch_bool(i % 2 == 0, [&](auto even) {\n"
     "    if constexpr (even.value) { acc += 10; } else { acc += 1; }\n"
     "  });\n"
     "}\n"
     "out[0] = acc;", 1),
    # nested: the inner lambda captures the outer's copy and the function's variable
    ("int base = 7, hits = 0;\n"
     "auto outer = [=, &hits](int k) {\n"
     "  auto inner = [&](int j) { hits += 1; return base * j + k; }; return inner(2);\n"
     "};\n"
     "base = 1000; out[0] = outer(3); out[1] = outer(4); out[2] = hits;", 3),
    ("int grid[2][3] = {{1, 2, 3}, {4, 5, 6}}; int s = 0;\n"
     "const_for_loop<0, 2, 1>([&](auto r) {\n"
     "  const_for_loop<0, 3, 1>([&](auto c) { s += grid[r][c] * (r.value + 1); });\n"
     "});\n"
     "out[0] = s;", 1),
])
def test_lambdas_agree_with_gxx(body, n):
    agree(LOOPS, body, n)


MEMBER = LOOPS + """
struct Tile {
  int vals[6];
  int scale;
  template <int R, int C> int at() const thread { return vals[R * 3 + C]; }
  int weighted() const thread {
    int s = 0;
    const_for_loop<0, 2, 1>([&](auto r) {
      const_for_loop<0, 3, 1>([&](auto c) { s += at<r.value, c.value>() * (r + scale); });
    });
    return s;
  }
  void bump(int k) thread { auto add = [this](int v) { scale += v; }; add(k); }
};
"""


@needs_gxx
def test_a_lambda_in_a_member_function_uses_the_object_through_this():
    """`at<r.value, c.value>()` is MLX's NAX tile pattern: a member template called with a
    generic parameter's static member as its argument."""
    body = ("Tile t{{1, 2, 3, 4, 5, 6}, 1}; out[0] = t.weighted(); t.bump(4); out[1] = t.scale;\n"
            "out[2] = t.weighted();")
    assert agree(MEMBER, body, 3) == [36, 5, 120]


@needs_gxx
def test_a_static_member_named_through_an_object_is_a_constant_expression():
    header = "template <int N> struct Int { static constexpr constant int value = N; };\n" \
             "template <int N> int times() { return N * 2; }\n"
    assert agree(header, "Int<7> i; out[0] = times<i.value>() + i.value;", 1) == [21]


def test_lambdas_run_per_thread_in_diverging_lanes():
    """Each thread's captures are its own: by reference its variable, by copy its value at
    the lambda, in the branch its lanes took."""
    source = """
uint i = thread_position_in_grid.x;
int k = int(i);
auto times = [=](int m) { return k * m; };
auto bump = [&](int d) { k += d; };
if (i % 3 == 0) { bump(100); } else { bump(-1); }
int r = 0;
for (int j = 0; j < int(i % 4); j++) { r += times(j + 1); }
out[i] = r * 1000 + k;"""
    kernel = metalsim.metal_kernel("lambda_lanes", ["a"], ["out"], source)
    (out,) = kernel(inputs=[mx.zeros(1)], output_shapes=[(64,)], output_dtypes=[mx.int32],
                    grid=(64, 1, 1), threadgroup=(32, 1, 1))
    i = np.arange(64)
    k = np.where(i % 3 == 0, i + 100, i - 1)
    r = np.array([sum(t * (j + 1) for j in range(t % 4)) for t in i])
    assert np.array(out).tolist() == (r * 1000 + k).tolist()


@pytest.mark.parametrize("body, message", [
    ("int k = 3; auto f = [](int x) { return k * x; }; out[0] = f(2);",
     "variable 'k' cannot be implicitly captured in a lambda with no capture-default"),
    ("int k = 3, j = 1; auto f = [j](int x) { return k * x; }; out[0] = f(2);",
     "variable 'k' cannot be implicitly captured"),
    ("int k = 3; auto f = [=]() { k = 4; }; f();", "read-only|const"),
    ("int a[2] = {1, 2}; auto f = [=]() { return a[0]; }; out[0] = f();",
     "capturing the array 'a' by copy is not supported by metalsim"),
    ("auto f = [](int x) { return x; }; out[0] = f(1, 2);",
     "no matching function for call to object of type '\\(lambda at source:1:10\\)'"),
    ("auto f = [&q](int x) { return x; };", "'q' in capture list does not name a local"),
    ("auto f = [x = 1]() { return x; };", "init-captures"),
])
def test_lambda_misuse_is_a_compile_error(body, message):
    with pytest.raises(metalsim.CompileError, match=message):
        metalsim_outputs("", body, 1)


def test_this_not_captured_is_a_compile_error():
    header = ("struct S { int v; int get() thread { auto f = [](int k) { return v + k; };\n"
              "  return f(1); } };\n")
    with pytest.raises(metalsim.CompileError, match="'this' cannot be implicitly captured"):
        metalsim_outputs(header, "S s{1}; out[0] = s.get();", 1)


def test_returning_a_lambda_is_refused():
    header = "auto make(int k) { return [=](int x) { return x + k; }; }\n"
    with pytest.raises(metalsim.CompileError, match="returning a lambda is not supported"):
        metalsim_outputs(header, "auto f = make(2); out[0] = f(1);", 1)


def test_a_race_through_a_lambda_is_found_with_the_lambdas_line():
    """A threadgroup array captured by reference is the same memory, checked as ever: the
    missing barrier between the lambda's write and the next read is a race."""
    source = """
threadgroup float sh[32];
auto store = [&](int j) { sh[j] = a[j]; };
store(thread_position_in_threadgroup.x);
out[thread_position_in_grid.x] = sh[(thread_position_in_threadgroup.x + 1) % 32];"""
    kernel = metalsim.metal_kernel("lambda_race", ["a"], ["out"], source)
    run = metalsim.simulate(kernel, inputs=[mx.zeros(32)], output_shapes=[(32,)],
                            output_dtypes=[mx.float32], grid=(32, 1, 1), threadgroup=(32, 1, 1))
    (race,) = [d for d in run.report.diagnostics if d.kind == "race"]
    assert race.line == 5 and "wrote at line 3" in race.detail


@needs_gxx
def test_each_instance_of_a_template_makes_its_own_closure_type():
    """The lambda in `Acc<T, N>::total<U>` is a different closure type in each instance, each
    passed to its own `loop` instance."""
    header = """
template <int start, int stop, typename F> void loop(F f) {
  if constexpr (start < stop) { f(start); loop<start + 1, stop, F>(f); }
}
template <typename T, int N> struct Acc {
  T v[N];
  template <typename U> T total(U scale) const thread {
    T s = T(0);
    loop<0, N>([&](int i) { s += v[i] * T(scale); });
    return s;
  }
};
"""
    body = ("Acc<int, 3> a{{1, 2, 3}}; Acc<float, 2> b{{0.5f, 1.5f}}; out[0] = a.total(2);\n"
            "out[1] = a.total(3.0f); out[2] = int(b.total(4)); out[3] = int(b.total(short(2)));")
    assert agree(header, body, 4) == [12, 18, 8, 4]
