"""`void*`: what converts to it and back, how overloads rank the conversion, and the byte it
steps by, with g++ -std=c++14 as the oracle (refusals under -pedantic-errors)."""

import pytest
from cxx_oracle import agree, gxx_rejects, metalsim_outputs, needs_gxx

import metalsim

pytestmark = needs_gxx

BASES = "struct B { int x; };\nstruct D : B { int y; };\n"


def agree14(header: str, body: str, n: int) -> list[int]:
    return agree(header, body, n, std="c++14")


def refused(body: str, gxx_says: str, metalsim_says: str) -> None:
    assert gxx_says in gxx_rejects("", body, iso=True, std="c++14")
    with pytest.raises(metalsim.CompileError, match=metalsim_says):
        metalsim_outputs("", body, 1)


def test_an_object_pointer_converts_to_void_pointer_implicitly_and_back_by_a_cast():
    body = ("int a = 3; thread int* p = &a; thread void* v = p; out[0] = (thread int*)v == p;"
            " out[1] = *(thread int*)v; out[2] = v == p; const thread int* c = &a;"
            " const thread void* cv = c; out[3] = cv == c; thread D d; thread void* w = &d;"
            " out[4] = w == &d;")
    assert agree14(BASES, body, 5) == [1, 3, 1, 1, 1]


def test_a_void_pointer_parameter_takes_any_object_pointer():
    header = "int first(const thread void* v) { return *(const thread int*)v; }\n"
    assert agree14(header, "int a[2] = {7, 8}; out[0] = first(a); out[1] = first(&a[1]);",
                   2) == [7, 8]


def test_a_base_class_pointer_parameter_beats_a_void_pointer_one():
    header = BASES + "int f(thread void*) { return 1; }\nint f(thread B*) { return 2; }\n"
    assert agree14(header, "thread D d; int i = 0; out[0] = f(&d); out[1] = f(&i);",
                   2) == [2, 1]


def test_converting_a_pointer_to_const_to_void_pointer_is_refused():
    refused("int a = 3; const thread int* c = &a; thread void* v = c; out[0] = v != 0;",
            "invalid conversion", "it drops 'const'")


def test_a_void_pointer_does_not_convert_to_an_object_pointer_implicitly():
    refused("int a = 3; thread void* v = &a; thread int* p = v; out[0] = *p;",
            "invalid conversion", r"cannot convert 'thread void\*' to 'thread int\*' implicitly")


def test_a_void_pointer_steps_one_byte_as_gnu_cxx_steps_it():
    # g++ and clang accept `void*` arithmetic as a GNU extension (g++ -std=c++14, without
    # -pedantic, only warns); a step of 0 bytes would leave `v + 8 == v`.
    body = ("int a[4]; thread void* v = (thread void*)a; out[0] = (thread int*)(v + 8) == a + 2;"
            " v += 4; out[1] = (thread int*)v == a + 1; ++v; v++; --v;"
            " out[2] = (thread char*)v - (thread char*)a; v -= 5; out[3] = v == (thread void*)a;")
    assert agree14("", body, 4) == [1, 1, 5, 1]
