"""`p - q` between two pointers, with g++ -std=c++14 -pedantic-errors as the oracle for
values and for what is refused (C++14 [expr.add]/2: pointers to the same type, either
pointee const); across address spaces, which g++ does not have, as clang refuses it."""

import mlx.core as mx
import pytest
from cxx_oracle import agree, gxx_rejects, metalsim_outputs, needs_gxx

import metalsim

pytestmark = needs_gxx

DERIVED = "struct B { int x; };\nstruct D : B { int y; };\n"


def agree14(header: str, body: str, n: int) -> list[int]:
    return agree(header, body, n, std="c++14")


def refused(header: str, body: str, metalsim_says: str) -> str:
    """g++ (C++14, ISO) and metalsim both refuse the subtraction; metalsim's message."""
    assert "invalid operands of types" in gxx_rejects(header, body, iso=True, std="c++14")
    with pytest.raises(metalsim.CompileError, match=metalsim_says) as error:
        metalsim_outputs(header, body, 1)
    return str(error.value)


# --- accepted --------------------------------------------------------------------------------

def test_pointers_to_one_type_subtract_to_the_elements_between_them():
    body = "int a[6]; thread int* p = a + 5; thread int* q = a + 1; out[0] = p - q; out[1] = q - p;"
    assert agree14("", body, 2) == [4, -4]


def test_a_pointer_to_const_and_a_pointer_to_non_const_subtract():
    body = ("int a[4]; const thread int* c = a; thread int* p = a + 3;"
            " out[0] = p - c; out[1] = c - p;")
    assert agree14("", body, 2) == [3, -3]


def test_pointers_to_pointers_differing_only_in_the_pointees_own_const_subtract():
    body = ("typedef thread int* IP; IP ps[3] = {}; const thread IP* c = ps + 2;"
            " thread IP* p = ps; out[0] = c - p;")
    assert agree14("", body, 1) == [2]


def test_pointers_to_structs_subtract_in_whole_structs():
    body = "thread D ds[4]; thread D* p = ds + 3; out[0] = p - ds; out[1] = &ds[1] - p;"
    assert agree14(DERIVED, body, 2) == [3, -2]


# --- refused ---------------------------------------------------------------------------------

def test_subtracting_a_float_pointer_from_an_int_pointer_is_refused_with_both_types():
    text = refused("", "int a[2]; float f[2]; thread int* p = a; thread float* q = f;\n"
                       "out[0] = p - q;",
                   r"'thread int\*' and 'thread float\*' are not pointers to compatible types")
    assert "source:2:10: error:" in text
    assert "out[0] = p - q;" in text and "hint: a pointer difference counts elements" in text


def test_subtracting_pointers_to_int_and_uint_is_refused():
    refused("", "int a[2]; uint u[2]; thread int* p = a; thread uint* q = u; out[0] = q - p;",
            "not pointers to compatible types")


def test_subtracting_a_base_pointer_from_a_derived_pointer_is_refused():
    refused(DERIVED, "thread D d[2]; thread B* pb = d; thread D* pd = d + 1; out[0] = pd - pb;",
            r"'thread D\*' and 'thread B\*' are not pointers to compatible types")


def test_pointers_to_pointers_whose_pointees_differ_in_const_are_refused():
    # `const int*` and `int*` are different types, so their pointers do not subtract.
    refused("", "typedef const thread int* CIP; typedef thread int* IP;"
                " thread CIP* c = 0; thread IP* p = 0; out[0] = c - p;",
            "not pointers to compatible types")


def test_subtracting_pointers_into_different_address_spaces_is_refused():
    # g++ has no address spaces; clang refuses this for address spaces that do not overlap,
    # as Metal's do not.
    kernel = metalsim.metal_kernel("spaces", ["a"], ["out"],
                                   "float f[2];\nout[0] = out - f;")
    with pytest.raises(metalsim.CompileError, match=r"\('device float\*' and 'thread float\*'\) "
                                                    "which are pointers to non-overlapping "
                                                    "address spaces"):
        kernel(inputs=[mx.zeros(1)], output_shapes=[(1,)], output_dtypes=[mx.float32],
               grid=(1, 1, 1), threadgroup=(1, 1, 1))

