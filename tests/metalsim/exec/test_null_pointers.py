"""`nullptr` and the null pointer constant 0, with g++ -std=c++14 -pedantic-errors as the
oracle for values and for what is refused; a kernel that dereferences a null pointer is
reported (line, threads, hint), never crashed on."""

import re

import mlx.core as mx
import numpy as np
import pytest
from cxx_oracle import agree, gxx_outputs, gxx_rejects, metalsim_outputs, needs_gxx

import metalsim

pytestmark = needs_gxx

NODE = "struct Node { int v; thread Node* next; };\n"


def agree14(header: str, body: str, n: int) -> list[int]:
    return agree(header, body, n, std="c++14")


def refused(header: str, body: str, gxx_says: str, metalsim_says: str) -> None:
    """g++ (C++14, ISO) and metalsim both refuse the program."""
    assert gxx_says in gxx_rejects(header, body, iso=True, std="c++14")
    with pytest.raises(metalsim.CompileError, match=metalsim_says):
        metalsim_outputs(header, body, 1)


# --- values ----------------------------------------------------------------------------------

def test_a_pointer_initialised_with_nullptr_compares_equal_to_nullptr_and_to_0():
    body = ("int a = 5; thread int* p = nullptr; out[0] = p == nullptr; out[1] = p != 0;"
            " out[2] = 0 == p; p = &a; out[3] = p == nullptr; out[4] = nullptr != p;")
    assert agree14("", body, 5) == [1, 0, 1, 0, 1]


def test_the_literal_0_in_any_spelling_is_a_null_pointer():
    body = ("thread int* p = 0; thread int* q = 0u; thread int* r = 0x0; thread int* s = (0);"
            " out[0] = p == nullptr; out[1] = q == 0L; out[2] = r == nullptr;"
            " out[3] = s == 0u;")
    assert agree14("", body, 4) == [1, 1, 1, 1]


def test_assigning_nullptr_and_0_makes_a_pointer_null():
    body = ("int a = 1; thread int* p = &a; p = nullptr; out[0] = p == nullptr;"
            " p = &a; p = 0; out[1] = p == nullptr;")
    assert agree14("", body, 2) == [1, 1]


def test_a_pointer_is_true_unless_null_as_a_condition_and_as_bool():
    body = ("int a = 1; thread int* p = nullptr; out[0] = p ? 1 : 2; out[1] = !p;"
            " out[2] = bool(p); if (p) out[3] = 7; p = &a; bool b = p; out[4] = b;"
            " out[5] = p && true; if (!p) out[6] = 9;")
    assert agree14("", body, 7) == [2, 1, 0, 0, 1, 1, 0]


def test_nullptr_as_a_condition_is_false():
    assert agree14("", "out[0] = nullptr ? 1 : 2; out[1] = bool(nullptr);", 2) == [2, 0]


def test_nullptr_compares_equal_to_nullptr_and_to_0():
    assert agree14("", "out[0] = nullptr == nullptr; out[1] = nullptr != 0;", 2) == [1, 0]


def test_a_braced_member_initialised_with_0_or_nullptr_ends_a_linked_list():
    header = NODE + ("int total(thread Node* n) { int s = 0; while (n != nullptr) "
                     "{ s += n->v; n = n->next; } return s; }\n")
    body = ("thread Node c = {4, 0}; thread Node b = {2, &c}; thread Node a = {1, &b};"
            " thread Node z{8, nullptr}; out[0] = total(&a); out[1] = total(&z);"
            " out[2] = total(nullptr);")
    assert agree14(header, body, 3) == [7, 8, 0]


def test_value_initialised_pointers_are_null():
    body = ("thread int* ps[3] = {}; out[0] = ps[2] == nullptr;"
            " thread Node n = {5}; out[1] = n.next == 0;")
    assert agree14(NODE, body, 2) == [1, 1]


def test_nullptr_and_0_are_returned_as_null_pointers():
    header = ("thread int* none() { return nullptr; }\n"
              "thread int* zero() { return 0; }\n")
    assert agree14(header, "out[0] = none() == zero(); out[1] = none() == 0;", 2) == [1, 1]


def test_a_conditional_with_nullptr_or_0_has_the_pointer_type():
    header = "thread int* pick(bool c, thread int* p) { return c ? p : nullptr; }\n"
    body = ("int a = 3; out[0] = *pick(true, &a); out[1] = pick(false, &a) == nullptr;"
            " thread int* q = true ? 0 : &a; out[2] = q == nullptr;"
            " thread int* r = false ? 0 : &a; out[3] = *r;")
    assert agree14(header, body, 4) == [3, 1, 1, 3]


def test_a_null_pointer_chosen_per_thread_compares_per_thread():
    # Lanes of one SIMD-group hold different pointers, some null.
    source = ("uint i = thread_position_in_grid.x;\n"
              "auto p = i % 3 == 0 ? nullptr : a;\n"
              "out[i] = p == nullptr ? -1.0f : p[i];")
    kernel = metalsim.metal_kernel("per_lane_null", ["a"], ["out"], source)
    got = kernel(inputs=[mx.arange(6, dtype=mx.float32)], output_shapes=[(6,)],
                 output_dtypes=[mx.float32], grid=(6, 1, 1), threadgroup=(6, 1, 1))[0]
    assert np.array(got).tolist() == [-1, 1, 2, -1, 4, 5]


def test_an_auto_variable_and_a_parameter_of_type_nullptr_t():
    header = "int is_null(decltype(nullptr) n) { thread int* p = n; return p == 0; }\n"
    body = ("auto n = nullptr; thread int* p = n; out[0] = p == nullptr;"
            " decltype(nullptr) m = 0; out[1] = m == nullptr; out[2] = is_null(0);"
            " out[3] = is_null(nullptr); out[4] = sizeof(nullptr);")
    assert agree14(header, body, 5) == [1, 1, 1, 1, 8]


def as_decltype(text: str) -> str:
    """`text` with Metal's `nullptr_t` spelled as C++ without a header spells its type."""
    return re.sub(r"(metal::)?\bnullptr_t\b", "decltype(nullptr)", text)


def test_nullptr_t_and_metal_nullptr_t_name_the_type_of_nullptr():
    # Metal's library declares `metal::nullptr_t` (ThunderMittens' Metal kernels take
    # `thread const metal::nullptr_t&` parameters); g++ runs it as `decltype(nullptr)`.
    header = ("int kind(nullptr_t) { return 1; }\nint kind(thread int*) { return 2; }\n"
              "int is_null(thread const metal::nullptr_t& n) { thread int* p = n; "
              "return p == 0; }\n")
    body = ("nullptr_t n = nullptr; metal::nullptr_t m = 0; thread int* p = n;"
            " out[0] = p == nullptr; out[1] = m == nullptr; out[2] = kind(n);"
            " out[3] = kind(nullptr); out[4] = is_null(m); out[5] = sizeof(nullptr_t);"
            " out[6] = kind(nullptr_t()); out[7] = nullptr_t(0) == nullptr;")
    expected = gxx_outputs(as_decltype(header), as_decltype(body), 8, std="c++14")
    assert metalsim_outputs(header, body, 8) == expected == [1, 1, 1, 1, 1, 8, 1, 1]


def test_std_nullptr_t_is_refused_with_a_hint_that_compiles():
    body = "std::nullptr_t n = nullptr; out[0] = n == nullptr;"
    with pytest.raises(metalsim.CompileError, match="use of undeclared identifier 'std'") as e:
        metalsim_outputs("", body, 1)
    assert "hint: Metal has no C++ standard library: use 'metal::nullptr_t'" in str(e.value)
    assert metalsim_outputs("", body.replace("std::", "metal::"), 1) == [1]


def test_a_template_parameter_deduced_from_nullptr_is_nullptr_t():
    header = "template <typename T> int null_of(T x) { return x == nullptr; }\n"
    assert agree14(header, "out[0] = null_of(nullptr);", 1) == [1]


def test_a_nullptr_t_captured_by_copy_in_a_lambda():
    body = ("auto n = nullptr; auto l = [n]() { thread int* p = n; return p == nullptr; };"
            " out[0] = l();")
    assert agree14("", body, 1) == [1]


def test_a_const_reference_to_a_pointer_binds_a_temporary_pointer_or_nullptr():
    header = "int f(const thread int* const& p) { return p == nullptr ? -1 : *p; }\n"
    body = "int a = 4; out[0] = f(&a); out[1] = f(nullptr); out[2] = f(0);"
    assert agree14(header, body, 3) == [4, -1, -1]


def test_an_array_of_nullptr_t_is_refused_clearly():
    with pytest.raises(metalsim.CompileError, match="arrays of 'std::nullptr_t' are not "
                                                    "supported by metalsim"):
        metalsim_outputs("", "decltype(nullptr) ns[2] = {}; out[0] = 1;", 1)


def test_a_derived_pointer_compares_with_a_base_pointer_as_the_base_subobject():
    header = "struct B { int x; };\nstruct C { int z; };\nstruct D : C, B { int y; };\n"
    body = ("thread D d; thread D* pd = &d; thread B* pb = &d; thread C* pc = &d;"
            " out[0] = pb == pd; out[1] = pd == pb; out[2] = pc == pd; out[3] = pb != pd;"
            " const thread B* cb = pb; out[4] = cb == pb;")
    assert agree14(header, body, 5) == [1, 1, 1, 0, 1]


def test_comparing_distinct_pointer_types_is_refused():
    refused("", "thread float* f = nullptr; thread int* p = 0; out[0] = f == p;",
            "comparison between distinct pointer types",
            "comparison of distinct pointer types")


def test_nullptr_cast_to_a_64_bit_integer_is_0():
    body = ("out[0] = (long)nullptr == 0; out[1] = (unsigned long)nullptr == 0;"
            " out[2] = (size_t)nullptr == 0; out[3] = long(nullptr) == 0;"
            " auto n = nullptr; out[4] = (long)n - 1;")
    assert agree14("", body, 5) == [1, 1, 1, 1, -1]


def test_reinterpret_cast_of_nullptr_to_a_64_bit_integer_is_0():
    body = ("out[0] = reinterpret_cast<long>(nullptr) == 0;"
            " out[1] = reinterpret_cast<unsigned long>(nullptr) + 1;")
    assert agree14("", body, 2) == [1, 1]


NULL_AFTER = "decltype(nullptr) null_after(thread int& k, int v) { k = v; return nullptr; }\n"


def test_a_call_that_returns_nullptr_t_is_made_where_its_null_value_is_used():
    body = ("int b = 0, c = 0, d = 0; out[0] = null_after(b, 2) == nullptr;"
            " thread int* p = null_after(c, 3); out[1] = bool(null_after(d, 4));"
            " out[2] = b; out[3] = c; out[4] = d; out[5] = p == nullptr;")
    assert agree14(NULL_AFTER, body, 6) == [1, 0, 2, 3, 4, 1]


def test_a_call_that_returns_nullptr_t_cast_to_long_is_still_made():
    # The operand of a cast is evaluated; g++ 12 drops this call (it prints 0 for `a`), and
    # clang fixed the same loss for other nullptr_t operands (llvm-project#64923), so g++ is
    # no oracle here.
    body = "int a = 0; out[0] = (long)null_after(a, 1); out[1] = a;"
    assert metalsim_outputs(NULL_AFTER, body, 2) == [0, 1]


def test_casting_nullptr_to_an_integer_narrower_than_a_pointer_is_refused():
    for cast in ("(int)nullptr", "reinterpret_cast<int>(nullptr)", "(char)nullptr",
                 "reinterpret_cast<bool>(nullptr)"):
        refused("", f"out[0] = {cast};", "loses precision",
                "cast from pointer to smaller type '(int|char|bool)' loses information")


def test_static_cast_of_nullptr_to_an_integer_is_refused():
    refused("", "out[0] = static_cast<long>(nullptr);", "static_cast’ from type",
            r"cannot convert 'std::nullptr_t' to 'long'")


def test_nullptr_cast_to_float_is_refused():
    refused("", "out[0] = (float)nullptr;", "invalid cast",
            r"cannot convert 'std::nullptr_t' to 'float'")


# --- overload resolution ----------------------------------------------------------------------

def test_nullptr_prefers_a_pointer_parameter_and_0_an_int_one():
    header = "int f(int) { return 1; }\nint f(thread int*) { return 2; }\n"
    assert agree14(header, "out[0] = f(nullptr); out[1] = f(0);", 2) == [2, 1]


def test_0_for_long_or_pointer_parameters_is_ambiguous():
    header = "int f(long) { return 1; }\nint f(thread int*) { return 2; }\n"
    refused(header, "out[0] = f(0);", "ambiguous", "call to 'f' is ambiguous")


def test_nullptr_for_two_pointer_parameters_is_ambiguous():
    header = "int f(thread int*) { return 1; }\nint f(thread float*) { return 2; }\n"
    refused(header, "out[0] = f(nullptr);", "ambiguous", "call to 'f' is ambiguous")


def test_nullptr_prefers_a_nullptr_t_parameter_and_0_finds_both_conversions():
    header = "int f(thread int*) { return 1; }\nint f(decltype(nullptr)) { return 2; }\n"
    assert agree14(header, "out[0] = f(nullptr);", 1) == [2]
    refused(header, "out[0] = f(0);", "ambiguous", "call to 'f' is ambiguous")


def test_0_for_bool_or_unsigned_or_pointer_parameters_is_ambiguous():
    for other in ("bool", "uint"):
        header = f"int f(thread int*) {{ return 1; }}\nint f({other}) {{ return 2; }}\n"
        refused(header, "out[0] = f(0);", "ambiguous", "call to 'f' is ambiguous")


def test_nullptr_does_not_pass_for_a_bool_parameter():
    refused("int f(bool b) { return b; }\n", "out[0] = f(nullptr);",
            "requires direct-initialization", "no matching function|cannot convert")


# --- refused ---------------------------------------------------------------------------------

def test_nullptr_does_not_initialise_an_int():
    refused("", "int x = nullptr; out[0] = x;", "cannot convert",
            r"cannot convert 'std::nullptr_t' to 'int'")


def test_copy_initialising_a_bool_from_nullptr_is_refused():
    refused("", "bool b = nullptr; out[0] = b;", "requires direct-initialization",
            "requires direct-initialization")


def test_an_integer_expression_of_value_0_is_not_a_null_pointer_constant():
    refused("", "thread int* p = 1 - 1; out[0] = p == 0;", "invalid conversion",
            r"cannot convert 'int' to 'thread int\*'")


def test_a_const_int_zero_is_not_a_null_pointer_constant():
    refused("", "const int z = 0; thread int* p = z; out[0] = p == 0;", "invalid conversion",
            r"cannot convert 'int' to 'thread int\*'")


def test_false_is_not_a_null_pointer_constant():
    refused("", "thread int* p = false; out[0] = p == 0;", "cannot convert",
            r"cannot convert 'bool' to 'thread int\*'")


def test_a_pointer_compared_with_1_is_refused():
    refused("", "thread int* p = 0; out[0] = p == 1;", "comparison between pointer and integer",
            "invalid operands")


def test_ordered_comparison_of_a_pointer_with_nullptr_or_0_is_refused():
    refused("", "thread int* p = 0; out[0] = p < nullptr;", "ordered comparison",
            "ordered comparison between pointer and zero")
    refused("", "thread int* p = 0; out[0] = p >= 0;", "ordered comparison",
            "ordered comparison between pointer and zero")
    refused("", "out[0] = nullptr < nullptr;", "ordered comparison", "invalid operands")


def test_arithmetic_on_nullptr_is_refused():
    refused("", "out[0] = nullptr + 1 == 0;", "invalid operands", "invalid operands")
    refused("", "thread int* p = 0; out[0] = p - nullptr;", "invalid operands",
            "pointer arithmetic needs an integer offset|invalid operands")
    refused("", "out[0] = -nullptr == 0;", "wrong type argument", "invalid operand")


def test_dereferencing_nullptr_itself_is_refused():
    refused("", "out[0] = *nullptr;", "invalid type argument", "indirection requires|pointer")


def test_nullptr_is_a_keyword_not_a_name():
    refused("", "int nullptr = 1; out[0] = nullptr;", "expected", "expected|nullptr")


# --- null dereference at run time -----------------------------------------------------------

def run_faulting(source: str, threads: int = 8) -> str:
    kernel = metalsim.metal_kernel("null_deref", ["a"], ["out"], source)
    with pytest.raises(metalsim.KernelFault) as fault:
        kernel(inputs=[mx.arange(threads, dtype=mx.float32)], output_shapes=[(threads,)],
               output_dtypes=[mx.float32], grid=(threads, 1, 1), threadgroup=(threads, 1, 1))
    return str(fault.value)


def test_reading_through_a_null_pointer_names_the_line_and_the_threads():
    text = run_faulting("uint i = thread_position_in_grid.x;\n"
                        "const device float* p = i % 2 == 0 ? a : nullptr;\n"
                        "out[i] = p[i];")
    assert "source:3:10: error: dereference of a null pointer" in text
    assert "threads: (1, 0, 0), (3, 0, 0), (5, 0, 0), (7, 0, 0)\n" in text
    assert "out[i] = p[i];" in text and "hint: test the pointer" in text


def test_writing_through_a_null_pointer_is_reported():
    text = run_faulting("device float* p = nullptr;\n*p = 1.0f;")
    assert "source:2:1: error: dereference of a null pointer" in text


def test_a_member_read_through_a_null_struct_pointer_is_reported():
    source = ("struct S { int v; };\nthread S* s = 0;\n"
              "out[thread_position_in_grid.x] = s->v;")
    assert "source:3:34: error: dereference of a null pointer" in run_faulting(source)


def test_an_atomic_through_a_null_pointer_is_reported():
    text = run_faulting("device atomic_int* p = nullptr;\n"
                        "atomic_fetch_add_explicit(p, 1, memory_order_relaxed);")
    assert "source:2:1: error: dereference of a null pointer" in text


def test_a_null_pointer_kept_in_an_array_is_reported_when_dereferenced():
    text = run_faulting("thread float* ps[2] = {nullptr, 0};\nout[0] = *ps[1];")
    assert "source:2:10: error: dereference of a null pointer" in text


def test_a_null_dereference_is_a_finding_of_its_own_kind():
    kernel = metalsim.metal_kernel("null_finding", ["a"], ["out"],
                                   "device float* p = nullptr;\nout[0] = *p;")
    run = metalsim.simulate(kernel, inputs=[mx.zeros(1)], output_shapes=[(1,)],
                            output_dtypes=[mx.float32], grid=(1, 1, 1), threadgroup=(1, 1, 1))
    assert [(d.kind, d.severity) for d in run.report.diagnostics] == [
        ("null-dereference", "error")]


def test_a_conditional_between_nullptr_and_0_is_a_nullptr_t():
    # C++14 [expr.cond]/6 (both null pointer constants, one non-integral) and [expr]/13 give
    # std::nullptr_t; g++ 12 refuses it ("different types"), so g++ is no oracle here.
    assert metalsim_outputs("", "auto q = true ? nullptr : 0; thread int* p = q;"
                                " out[0] = p == nullptr; out[1] = sizeof(q);", 2) == [1, 8]
