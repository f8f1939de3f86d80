"""Tests of metalsim.exec.uses: what the syntax says about how a function uses its names."""

from __future__ import annotations

import pytest

from metalsim.exec.uses import fixed_names, mentions, only_read, uses
from metalsim.lang import ast
from metalsim.lang.parser import parse_source


def loop_of(body: str) -> ast.For:
    """The first `for` loop of a function whose body is `body`."""
    unit, _ = parse_source("struct S { int x; };\n"
                           f"void f(device float* out, uint n) {{\n{body}\n}}\n")
    stack: list[ast.Node] = [unit.items[-1].body]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.For):
            return node
        stack.extend(v for v in vars(node).values() if isinstance(v, ast.Node))
        stack.extend(x for v in vars(node).values() if isinstance(v, list)
                     for x in v if isinstance(x, ast.Node))
    raise AssertionError("no loop")


def counter_only_read(body: str, builtins=("min", "simd_shuffle")) -> bool:
    loop = loop_of(body)
    return only_read("k", [loop.cond, loop.body],
                     lambda name: name.name in builtins, returns_value=True)


@pytest.mark.parametrize("body", [
    "for (uint k = 0; k < n; ++k) { out[k] = out[k + 1] * 2; }",
    "for (int k = 0; k < 8; k++) { if (k == n) break; out[n] += float(k) + (float)k; }",
    "for (int k = 0; k < 8; ++k) { int j = k; out[j] = min(k, 3) + simd_shuffle(1.0f, k); }",
    "for (int k = 0; k < 8; ++k) { out[n] = k > 2 ? k : -k; out[0] = sizeof(k); }",
    "for (int k = 0; k < 8; ++k) { for (int j = k; j < 8; ++j) out[j] += 1; }",
])
def test_a_counter_used_only_as_a_value_is_only_read(body):
    assert counter_only_read(body)


@pytest.mark.parametrize("body", [
    "for (int k = 0; k < 8; ++k) { k = 3; }",
    "for (int k = 0; k < 8; ++k) { k += 2; }",
    "for (int k = 0; k < 8; ++k) { out[k++] = 1; }",
    "for (int k = 0; k < 8; ++k) { --k; }",
    "for (int k = 0; k < 8; ++k) { thread int* p = &k; }",
    "for (int k = 0; k < 8; ++k) { thread int& r = k; r = 1; }",
    "for (int k = 0; k < 8; ++k) { bump(k); }",                  # a user function: a reference?
    "for (int k = 0; k < 8; ++k) { out[0] = frexp(1.0f, k); }",  # not known built-in here
    "for (int k = 0; k < 8; ++k) { int k = 2; }",                # another k
    "for (int k = 0; k < 8; ++k) { S s{k}; }",
    "for (int k = 0; (k = k + 1) < 8; ++k) { }",                 # written in the condition
    "for (int k = 0; k < 8; ++k) { ((thread int&)k) = 2; }",
    "for (int k = 0; k < 8; ++k) { (n ? k : n) = 2; }",         # a conditional lvalue
    "for (int k = 0; k < 8; ++k) { ++(n ? n : (n ? k : n)); }",
    "for (int k = 0; k < 8; ++k) { thread int& r = n > 1 ? n : k; }",
])
def test_a_counter_written_or_bound_to_a_reference_is_not_only_read(body):
    assert not counter_only_read(body)


def test_a_returned_counter_is_only_read_where_the_function_returns_a_value():
    loop = loop_of("for (int k = 0; k < 8; ++k) { if (out[k] > 0) return k; }")
    assert only_read("k", [loop.cond, loop.body], lambda name: False, returns_value=True)
    assert not only_read("k", [loop.cond, loop.body], lambda name: False, returns_value=False)


def test_mentions_and_addressed_names_are_found_anywhere_under_a_node():
    loop = loop_of("for (int k = 0; k < 8; ++k) { thread float* p = &out[k]; int i = 0; "
                   "thread int* q = &i; }")
    assert mentions(loop.body, "k") and not mentions(loop.body, "j")
    assert uses([loop.body], lambda name: False, returns_value=True).addressed == {"i"}


def body_of(body: str) -> ast.Compound:
    unit, _ = parse_source("struct Adder { void operator()(thread uint& x) { x += 1; } };\n"
                           f"void f(device float* out, uint n) {{\n{body}\n}}\n")
    return unit.items[-1].body


def test_fixed_names_are_declared_once_outside_loops_and_only_read():
    body = body_of("""
        uint a = n + 1, b = 2, c = 3, d = 4, e = 5;
        uint u;
        thread uint& r = a;
        b = 7;
        for (uint k = 0; k < 4; ++k) { uint in_loop = k; out[in_loop + a + e] = 0; }
        if (n > 2) { uint twice = 1; out[twice] = c; } else { uint twice = 2; out[twice] = 0; }
        out[d++] = e;""")
    assert fixed_names(uses([body], lambda name: False, returns_value=True)) == {"c", "e"}


def is_min(name: ast.Name) -> bool:
    return name.name == "min"


def test_a_local_called_as_a_function_fixes_no_names():
    body = body_of("uint a = n; Adder min; min(a); out[a] = 0;")
    assert fixed_names(uses([body], is_min, returns_value=True)) == set()
    body = body_of("uint a = n; out[a] = min(a, 2u);")
    assert fixed_names(uses([body], is_min, returns_value=True)) == {"a"}


def test_the_objects_a_conditional_lvalue_names_are_addressed():
    """Each thread names one of them: they live in memory, so a location picks per lane."""
    loop = loop_of("for (int k = 0; k < 8; ++k) { int a = 0; int b[2]; float4 v; "
                   "(k ? a : b[1]) = 1; (k ? v.x : v.y) += 2.0f; out[k] = k ? a : b[0]; }")
    found = uses([loop.body], lambda name: False, returns_value=True)
    assert {"a", "b", "v"} <= found.addressed and "k" not in found.addressed


def test_a_conditional_giving_an_array_its_size_only_reads_its_operands():
    """`float v[W > 0 ? W : 1]` reads W: its conditional is a value, so W keeps no location and
    stays a constant (it was taken for an lvalue, put in memory and refused as no constant)."""
    body = body_of("const uint W = 3; float v[W > 0 ? W : 1]; v[0] = 1; out[0] = v[0];")
    found = uses([body], lambda name: False, returns_value=True)
    assert "W" not in found.addressed and "W" not in found.not_only_read
