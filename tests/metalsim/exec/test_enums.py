"""`enum` and `enum class`, with g++ as the oracle: enumerator values (implicit, given, from
earlier ones), promotion and overloads of unscoped enumerations, `E::A`, an underlying type,
`switch` over either, enumerations in namespaces, blocks and template arguments; and the
conversions C++ allows only explicitly."""

import pytest
from cxx_oracle import agree, metalsim_outputs, needs_gxx

import metalsim

pytestmark = needs_gxx


def test_unscoped_enumerators_count_on_promote_and_pick_the_enum_overload():
    header = ("enum Color { Red, Green = 5, Blue, Last = Blue * 2 };\n"
              "int code(Color c) { return c * 10; }\nint code(int x) { return x; }\n")
    body = ("Color c = Blue; out[0] = c; out[1] = Green + 1; out[2] = code(c); out[3] = code(3);\n"
            "out[4] = Last; out[5] = sizeof(Color); out[6] = Color::Green; out[7] = c == Blue;")
    assert agree(header, body, 8) == [6, 6, 60, 3, 12, 4, 5, 1]


def test_enum_class_with_an_underlying_type_converts_explicitly_and_switches():
    header = ("enum class Mode : unsigned char { Off, On = 7, Auto };\n"
              "int pick(Mode m) {\n  switch (m) { case Mode::Off: return 1; case Mode::On: "
              "return 2; default: return 3; }\n}\n")
    body = ("Mode m = Mode::Auto; out[0] = static_cast<int>(m);\n"
            "out[1] = pick(m) + pick(Mode::On) * 10; out[2] = m == Mode::Auto;\n"
            "out[3] = sizeof(Mode); out[4] = int(static_cast<Mode>(7) == Mode::On);\n"
            "out[5] = m != Mode::Off;")
    assert agree(header, body, 6) == [8, 23, 1, 1, 1, 1]


def test_enumerations_in_a_namespace_and_a_block():
    header = "namespace na { enum Kind { A = -2, B, C }; }\n"
    body = ("enum Local { X = 3, Y }; out[0] = Y + na::A; out[1] = na::Kind::C;\n"
            "na::Kind k = na::B;\n"
            "switch (k) { case na::B: out[2] = 9; break; default: out[2] = 1; }")
    assert agree(header, body, 3) == [2, 0, 9]


def test_enumerator_as_a_template_argument():
    header = ("enum class Op { Add, Mul };\n"
              "template <Op O> int apply(int a, int b) { return O == Op::Add ? a + b : a * b; }\n")
    assert agree(header, "out[0] = apply<Op::Add>(3, 4); out[1] = apply<Op::Mul>(3, 4);",
                 2) == [7, 12]


@pytest.mark.parametrize("header, body, message", [
    ("enum class M { A };", "out[0] = M::A;", "no implicit conversion from scoped enumeration"),
    ("enum class M { A };", "int x = M::A + 1; out[0] = x;", "invalid operand of type 'M'"),
    ("enum E { A };", "E e = 1; out[0] = e;", "cannot initialize a value of type 'E'"),
    ("enum E { A };", "out[0] = E::Z;", "no member named 'Z' in 'E'"),
    ("enum E : uchar { A = 300 };", "out[0] = A;", "300 is not representable"),
    ("struct S { enum K { A }; int v; };", "out[0] = 1;", "enum declared in a struct"),
])
def test_what_cxx_refuses_about_enumerations_is_refused(header, body, message):
    with pytest.raises(metalsim.CompileError, match=message):
        metalsim_outputs(header, body, 1)


@pytest.mark.parametrize("body, message", [
    ("E e = A; e++; out[0] = e;", "cannot increment expression of enum type 'E'"),
    ("E e = A; --e; out[0] = e;", "cannot decrement expression of enum type 'E'"),
    ("E e = A; e += 1; out[0] = e;", "assigning to 'E' from incompatible type 'int'"),
])
def test_enumerations_are_not_incremented_or_compound_assigned(body, message):
    with pytest.raises(metalsim.CompileError, match=message):
        metalsim_outputs("enum E { A, B };", body, 1)
