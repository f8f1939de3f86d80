"""Function pointers as template arguments (`metalsim.exec.function_pointers`), as MLX's fft.h
passes its radix codelets: `RadixFunc<T> radix_func` given `radix2<T>` and called
`radix_func(x, y)`, passed on to other templates. g++ is the oracle."""

import pytest
from cxx_oracle import agree, metalsim_outputs, needs_gxx

import metalsim

HEADER = """
template <typename T> using BinFunc = void (*)(thread T*, thread T*);
template <typename T> void twice_it(thread T* a, thread T* b) { *b = *a * T(2); }
template <typename T> void negate_it(thread T* a, thread T* b) { *b = -*a; }
void add_one(thread int* a, thread int* b) { *b = *a + 1; }
void add_one(thread float* a, thread float* b) { *b = *a + 1.0f; }
template <typename T, BinFunc<T> f> T apply(T x) { T a = x; T y; f(&a, &y); return y; }
template <typename T, BinFunc<T> f> T apply_twice(T x) { return apply<T, f>(apply<T, f>(x)); }
template <int N, void (*g)(thread int*, thread int*)> int chain(int x) {
  int a = x; int y; g(&a, &y); return y + N;
}
"""


@needs_gxx
@pytest.mark.parametrize("body, n", [
    ("out[0] = apply<int, twice_it<int>>(5); out[1] = int(apply<float, negate_it<float>>(2.5f)"
     " * 2);", 2),
    # a template parameter passed on to another template
    ("out[0] = apply_twice<int, twice_it<int>>(3); out[1] = apply_twice<int, negate_it>(4);", 2),
    # the overload whose type is the parameter's; a function template's arguments deduced
    # from it (`negate_it` for `BinFunc<int>`)
    ("out[0] = chain<100, add_one>(4); out[1] = apply<int, add_one>(9);\n"
     "out[2] = int(apply<float, add_one>(1.5f) * 2); out[3] = apply<int, negate_it>(6);", 4),
])
def test_a_function_named_by_a_template_argument_is_called_through_it(body, n):
    agree(HEADER, body, n)


@pytest.mark.parametrize("body, message", [
    ("out[0] = apply<int, twice_it<float>>(5);",
     "address of overloaded function 'twice_it' does not match required type"),
    ("out[0] = apply<short, add_one>(5);",
     "address of overloaded function 'add_one' does not match required type"),
])
def test_a_function_of_another_type_is_an_error(body, message):
    with pytest.raises(metalsim.CompileError, match=message):
        metalsim_outputs(HEADER, body, 1)


def test_a_function_pointer_used_as_a_value_is_refused():
    header = HEADER + ("template <typename T, BinFunc<T> f> bool same() { return f == f; }\n")
    with pytest.raises(metalsim.CompileError,
                       match="function pointers only as template arguments"):
        metalsim_outputs(header, "out[0] = same<int, twice_it<int>>();", 1)
