"""Calls of constexpr functions in constant expressions (`metalsim.exec.constant_calls`):
template arguments, array sizes, constexpr variables, static_assert and `if constexpr`, with
g++ as the oracle; a call of a non-constexpr function, or one that faults, is no constant."""

import pytest
from cxx_oracle import agree, metalsim_outputs, needs_gxx

import metalsim

HEADER = """
constexpr int sq(int v) { return v * v; }
constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }
constexpr int log2_floor(int n) { int r = 0; while (n > 1) { n >>= 1; r++; } return r; }
template <typename T> constexpr T twice(T x) { return x + x; }
template <int N> int getn() { return N; }
template <int N> struct Tile { static constexpr constant int size = N; int v[N]; };
static_assert(sq(3) == 9, "sq");
"""


@needs_gxx
@pytest.mark.parametrize("body, n", [
    ("out[0] = getn<sq(5)>(); out[1] = getn<ceil_div(10, 4)>(); out[2] = getn<twice(21)>();\n"
     "out[3] = Tile<log2_floor(1000)>::size;", 4),
    ("int a[sq(2)]; out[0] = sizeof(a); constexpr int k = ceil_div(sq(7), 8); out[1] = k;\n"
     "Tile<k> t; out[2] = sizeof(t);", 3),
    ("if constexpr (sq(2) > 3) { out[0] = 1; } else { out[0] = 2; }\n"
     "out[1] = getn<twice(short(300))>();", 2),
    # a run-time argument: an ordinary call
    ("int x = out[0] + 6; out[0] = sq(x) + ceil_div(x, 4);", 1),
])
def test_constexpr_calls_with_constant_arguments_are_constants(body, n):
    agree(HEADER, body, n)


@pytest.mark.parametrize("header, body", [
    ("int plain(int v) { return v * 2; }\ntemplate <int N> int getn() { return N; }\n",
     "out[0] = getn<plain(2)>();"),
    ("constexpr int inv(int v) { return 100 / v; }\ntemplate <int N> int getn() { return N; }\n",
     "out[0] = getn<inv(0)>();"),
])
def test_a_call_that_is_no_constant_expression_is_refused_as_a_template_argument(header, body):
    with pytest.raises(metalsim.CompileError, match="must be a constant"):
        metalsim_outputs(header, body, 1)


def test_a_static_assert_calling_a_constexpr_function_is_checked():
    header = "constexpr int sq(int v) { return v * v; }\nstatic_assert(sq(3) == 10, \"nine\");\n"
    with pytest.raises(metalsim.CompileError, match="static assertion failed: nine"):
        metalsim_outputs(header, "out[0] = 1;", 1)


@needs_gxx
def test_a_constant_chosen_by_a_conditional_sizes_an_array():
    """A const local with a constant initializer is a constant expression wherever it appears,
    here both operands of the conditional giving an array its size (g++ agrees)."""
    agree("", "const unsigned W = 3; const unsigned Z = W > 3 ? 0 : W - 3;\n"
              "float v[W > 0 ? W : 1]; float u[Z > 0 ? Z : 1];\n"
              "out[0] = sizeof(v); out[1] = sizeof(u);", 2)
