"""A local's scope begins right after its declarator, before its initializer (C++
[basic.scope.pdecl]): the initializer names the variable being declared, not an outer one.
Well-defined uses agree with g++; a read of the variable's own indeterminate value is an
uninitialised read; a deduced type naming itself is refused."""

import mlx.core as mx
import pytest
from cxx_oracle import agree, gxx_rejects, metalsim_outputs, needs_gxx

import metalsim

pytestmark = needs_gxx

NODE = "struct Node { int v; thread Node* next; };\n"


def simulate(source, n=4):
    kernel = metalsim.metal_kernel("k", ["inp"], ["out"], source)
    return metalsim.simulate(kernel, inputs=[mx.arange(n, dtype=mx.float32)],
                             output_shapes=[(n,)], output_dtypes=[mx.int32], grid=(n, 1, 1),
                             threadgroup=(n, 1, 1), init_value=0)


TID = "uint i = thread_position_in_grid.x;\n"


def test_a_struct_initializer_takes_the_address_of_the_variable_it_initializes():
    body = "thread Node c = {4, &c};\nout[0] = c.next->v;\nout[1] = c.next == &c;"
    assert agree(NODE, body, 2) == [4, 1]


def test_a_struct_initializer_takes_the_address_of_a_shadowing_variable_not_the_outer():
    body = ("thread Node d = {9, &d};\nthread Node c = {1, &d};\n"
            "{ thread Node c = {2, &c}; out[0] = c.next->v; }\nout[1] = c.next->v;")
    assert agree(NODE, body, 2) == [2, 9]


def test_sizeof_of_the_variable_in_its_own_initializer_is_its_size():
    body = "int n = sizeof(n);\nout[0] = n;\n{ short n = sizeof(n) + 1; out[1] = n; }"
    assert agree("", body, 2) == [4, 3]


def test_a_later_declarator_sees_the_earlier_one_initialized():
    assert agree("", "int a = 1, b = a + 1;\nout[0] = a; out[1] = b;", 2) == [1, 2]


def test_an_earlier_declarator_reads_the_outer_name_a_later_one_declares():
    body = "int q = 5;\n{ int p = q, q = 1; out[0] = p; out[1] = q; }"
    assert agree("", body, 2) == [5, 1]


def test_an_array_element_initializer_reads_the_elements_initialized_before_it():
    body = "int v[3] = {1, v[0] + 1, v[1] * 3};\nout[0] = v[1]; out[1] = v[2];"
    assert agree("", body, 2) == [2, 6]


def test_a_lambda_in_a_variables_initializer_sees_the_outer_name_only_where_captured():
    body = "int k = 7;\n{ int k = [](int x) { return x + 1; }(3); out[0] = k; }\nout[1] = k;"
    assert agree("", body, 2) == [4, 7]


def test_a_shadowing_variable_read_in_its_own_initializer_is_an_uninitialised_read():
    run = simulate(TID + "int a = 1;\n{\n  int a = a + 1;\n  out[i] = a;\n}")
    [d] = run.report.diagnostics
    assert (d.kind, d.severity, d.line) == ("uninitialized-read", "error", 5)
    assert d.message == ("uninitialised value is stored to 'out' "
                         "(read from variable 'a' at line 4)")
    assert d.threads == [(t, 0, 0) for t in range(4)]
    assert d.hint == ("variable 'a' is uninitialized when used within its own initialization: "
                      "its scope begins before its initializer, so this 'a' is not the outer "
                      "one; rename one of them")


def test_a_self_initialized_scalar_without_an_outer_name_is_an_uninitialised_read():
    run = simulate(TID + "int x = x * 2;\nout[i] = x;")
    [d] = run.report.diagnostics
    assert (d.kind, d.line) == ("uninitialized-read", 3)
    assert "variable 'x' at line 2" in d.message


def test_a_self_initialized_variable_is_uninitialised_again_in_every_loop_iteration():
    # the second iteration's `x` is a new object: not the first iteration's 5
    run = simulate(TID + "for (int k = 0; k < 2; ++k) {\n"
                         "  int x = k == 0 ? 5 : x;\n  out[i] = x;\n}")
    [d] = run.report.diagnostics
    assert (d.kind, d.line) == ("uninitialized-read", 4)
    assert "variable 'x' at line 3" in d.message


def test_a_for_counter_initialized_from_itself_is_an_uninitialised_read():
    run = simulate(TID + "int k = 1;\nfor (int k = k; k < 3; ++k) out[i] = 1;")
    [d] = run.report.diagnostics
    assert d.kind == "uninitialized-read"
    assert "variable 'k' at line 3" in d.message


def test_a_pointer_initialized_from_itself_is_an_uninitialised_read():
    run = simulate(TID + "int y = 3;\nthread int* p = &y;\n"
                         "{ thread int* p = i < 9 ? p : &y; out[i] = *p; }")
    assert [d.kind for d in run.report.diagnostics] == ["uninitialized-read"]
    assert "uninitialised pointer" in run.report.diagnostics[0].message


def test_an_array_element_read_before_its_initializer_ran_is_an_uninitialised_read():
    run = simulate(TID + "int v[2] = {v[1], 2};\nout[i] = v[0];")
    [d] = run.report.diagnostics
    assert (d.kind, d.line) == ("uninitialized-read", 3)
    assert "'v'" in d.message


def test_an_auto_variable_in_its_own_initializer_is_refused_as_by_clang():
    gxx_rejects("", "auto x = x;")
    message = "variable 'x' declared with deduced type 'auto' cannot appear in its own initializer"
    for body in ("auto x = x;", "auto x = sizeof(x);", "int x = 1; { auto x = x + 1; }"):
        with pytest.raises(metalsim.CompileError, match=message) as info:
            metalsim_outputs("", body, 1)
        assert info.value.diagnostic.column == body.rindex("= ") + 2 + body[
            body.rindex("= ") + 2:].index("x") + 1


AUTO_MESSAGE = ("variable 'f' declared with deduced type 'auto' cannot appear in its own "
                "initializer")


@pytest.mark.parametrize("body", [
    "auto f = [&] { return f; };",
    "auto f = [=] { return 1 + sizeof(f); };",
    "auto f = [] { return f; };",
    "auto f = [&](int k) { return k; };\n{ auto f = [&] { return f(1); }; }",
])
def test_a_lambda_naming_the_auto_variable_it_initializes_is_refused_uncalled(body):
    gxx_rejects("", body, std="c++14")
    with pytest.raises(metalsim.CompileError, match=AUTO_MESSAGE) as info:
        metalsim_outputs("", body + "\nout[0] = 1;", 1)
    d = info.value.diagnostic
    line = body.count("\n") + 1
    assert (d.line, d.column) == (line, body.splitlines()[-1].rindex("f") + 1)


def test_an_auto_variable_captured_by_name_in_its_own_initializer_is_refused():
    body = "auto f = [&f] { return 1; };"
    gxx_rejects("", body, std="c++14")
    with pytest.raises(metalsim.CompileError, match=AUTO_MESSAGE):
        metalsim_outputs("", body + "\nout[0] = 1;", 1)


def test_a_lambda_declaring_its_own_local_of_the_same_name_is_accepted():
    assert agree("", "auto f = [&] { int f = 3; return f; }; out[0] = f();", 1,
                 std="c++14") == [3]


def test_an_auto_pointer_in_its_own_initializer_is_refused_as_by_clang():
    with pytest.raises(metalsim.CompileError, match="variable 'p' declared with deduced type "
                                                    "'auto\\*' cannot appear in its own"):
        metalsim_outputs("", "thread auto* p = p;", 1)


def test_a_reference_bound_to_itself_is_refused():
    with pytest.raises(metalsim.CompileError, match="reference 'r' is not yet bound to a value "
                                                    "when used within its own initialization"):
        metalsim_outputs("", "int x = 1; { thread int& r = r; out[0] = r; }", 1)


def test_a_self_initialized_pointer_is_unset_again_in_every_loop_iteration():
    run = simulate(TID + "int y = 3;\nfor (int k = 0; k < 2; ++k) {\n"
                         "  thread int* p = k == 0 ? &y : p;\n  out[i] = *p;\n}")
    [d] = run.report.diagnostics
    assert (d.kind, d.line) == ("uninitialized-read", 5)
    assert "uninitialised pointer" in d.message


def test_a_self_initialized_array_is_uninitialised_again_in_every_loop_iteration():
    run = simulate(TID + "for (int k = 0; k < 2; ++k) {\n"
                         "  int v[2] = {k == 0 ? 1 : v[1], 2};\n  out[i] = v[0];\n}")
    [d] = run.report.diagnostics
    assert (d.kind, d.line) == ("uninitialized-read", 4)
    assert "'v'" in d.message


def test_a_program_scope_constant_s_sizeof_in_its_own_initializer_is_its_size():
    assert agree("constant long n = sizeof(n) * 2;\n", "out[0] = int(n);", 1) == [16]


def test_a_program_scope_constant_reading_itself_is_not_a_constant_expression():
    with pytest.raises(metalsim.CompileError, match="initializer of a program scope variable "
                                                    "is not a constant expression"):
        metalsim_outputs("constant int g = g + 1;\n", "out[0] = g;", 1)


@pytest.mark.parametrize("source", [
    "int v[2] = {v[1], 2};\nout[i] = v[0];",
    "struct S { int a; int b; };\nS v = {v.b, 2};\nout[i] = v.a;",
    "struct S { int a; S(int x) : a(x) {} };\nS v(v.a + 1);\nout[i] = v.a;"])
def test_an_object_in_thread_memory_read_in_its_own_initializer_has_clang_s_hint(source):
    [d] = simulate(TID + source).report.diagnostics
    assert d.kind == "uninitialized-read"
    assert d.hint.startswith("variable 'v' is uninitialized when used within its own "
                             "initialization")
