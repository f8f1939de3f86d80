"""A C variadic function (`int f(int n, ...)`) is refused with a compiler-like error at its
`...` (metalsim runs none; Metal's library has no `va_list`). A template parameter pack
(`T... xs`) or a generic lambda's `auto...` is no such function and still parses."""

import mlx.core as mx
import pytest

import metalsim


def run(header: str, body: str = "out[0] = 1;") -> list[int]:
    kernel = metalsim.metal_kernel("k", ["a"], ["out"], body, header=header)
    out = kernel(inputs=[mx.zeros(1)], output_shapes=[(1,)], output_dtypes=[mx.int32],
                 grid=(1, 1, 1), threadgroup=(1, 1, 1))[0]
    return out.tolist()


@pytest.mark.parametrize("header", [
    "int f(int n, ...) { return n; }\n",
    "int f(...) { return 1; }\n",
    "int f(int n...) { return n; }\n",
    "int f(int...) { return 1; }\n",
    "int f(int n, ...);\n",
    "struct S { int f(int n, ...) { return n; } };\n",
    "int g() { auto l = [](int k, ...) { return k; }; return l(1); }\n",
    "template <class T> int f(T...) { return 1; }\n",   # T is no pack: C's ellipsis
])
def test_a_c_variadic_function_is_refused_at_its_ellipsis(header):
    with pytest.raises(metalsim.CompileError) as e:
        run(header)
    d = e.value.diagnostic
    assert d.message == "metalsim does not support C variadic functions"
    assert (d.section, d.line, d.column) == ("header", 1, header.index("...") + 1)
    assert "^~~\n" in str(e.value)
    assert "fixed list of parameters" in d.hint


@pytest.mark.parametrize("header", [
    "template <class... T> int g(T... xs) { return 1; }\n",
    "template <class... T> int g(T...) { return 1; }\n",
    "template <class... T> struct P { static int g(T... xs) { return 1; } };\n",
    "int g() { auto l = [](auto... xs) { return 1; }; return 2; }\n",
    "struct L { template <typename... A> void log(constant char*, A...) const thread {} };\n",
])
def test_a_parameter_pack_is_no_variadic_function(header):
    assert run(header) == [1]
