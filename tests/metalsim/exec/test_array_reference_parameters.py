"""References to arrays, `T (&a)[N]` (as MLX's sort.h passes its per-thread arrays): the array
is bound, not decayed, so `N` is deduced and `sizeof(a)` is the array's; g++ is the oracle."""

import pytest
from cxx_oracle import agree, metalsim_outputs, needs_gxx

import metalsim

pytestmark = needs_gxx


def test_non_template_function_writes_through_a_reference_to_an_array():
    header = ("void bump(thread int (&a)[4]) { for (int i = 0; i < 4; i++) a[i] += i; }\n"
              "int total(const thread int (&a)[4]) {\n"
              "  return a[0] + a[1] + a[2] + a[3] + int(sizeof(a));\n}\n")
    body = "int a[4] = {1, 2, 3, 4}; bump(a); out[0] = total(a); out[1] = a[3];"
    assert agree(header, body, 2) == [32, 7]


def test_static_member_of_a_struct_template_sorts_a_thread_array_in_place():
    header = """
template <typename T, int N> struct Sorter {
  static void sort(thread T (&vals)[N]) {
    for (int i = 0; i < N; i++)
      for (int j = 0; j + 1 < N - i; j++)
        if (vals[j] > vals[j + 1]) { T t = vals[j]; vals[j] = vals[j + 1]; vals[j + 1] = t; }
  }
};
"""
    body = ("float v[5] = {3.0f, 1.0f, 4.0f, 1.5f, 0.5f}; Sorter<float, 5>::sort(v);\n"
            "for (int i = 0; i < 5; i++) out[i] = int(v[i] * 10);")
    assert agree(header, body, 5) == [5, 10, 15, 30, 40]


def test_both_bounds_of_a_two_dimensional_array_are_deduced():
    header = ("template <int R, int C> int cells(thread int (&m)[R][C]) {\n"
              "  int s = 0;\n  for (int r = 0; r < R; r++) for (int c = 0; c < C; c++) "
              "s += m[r][c] * (r + 1);\n  return s * 100 + R * 10 + C;\n}\n")
    assert agree(header, "int m[2][3] = {{1, 2, 3}, {4, 5, 6}}; out[0] = cells(m);",
                 1) == [3623]


def test_array_member_binds_to_a_deduced_parameter_and_a_local_reference():
    header = ("struct S { int arr[3]; };\n"
              "template <typename T, int N> T sum(thread T (&a)[N]) {\n"
              "  T s = 0;\n  for (int i = 0; i < N; i++) s += a[i];\n  return s + N;\n}\n")
    body = ("S s = {{1, 2, 3}}; out[0] = sum(s.arr);\n"
            "thread int (&r)[3] = s.arr; r[1] = 10; out[1] = s.arr[1];")
    assert agree(header, body, 2) == [9, 10]


def test_an_array_of_another_length_does_not_bind():
    header = "void bump(thread int (&a)[4]) { a[0] = 1; }\n"
    with pytest.raises(metalsim.CompileError, match="no matching function for call to 'bump"):
        metalsim_outputs(header, "int a[3]; bump(a); out[0] = a[0];", 1)
