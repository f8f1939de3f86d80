"""`enum` and `enum class`, with g++ as the oracle: enumerator values (implicit, given, from
earlier ones), promotion and overloads of unscoped enumerations, `E::A`, an underlying type
(given, or the one an unscoped enumeration's values need), `switch` over either, enumerations in
namespaces, blocks, structs and template arguments, anonymous ones; and the conversions C++
allows only explicitly."""

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


def test_a_namespaced_enumerator_s_value_names_an_earlier_one():
    header = ("namespace na { enum Kind { KA = 4, KB, KC = KB * 3 };\n"
              "namespace nb { enum Deep { DA = KC, DB = DA + 1, DC = na::KA + DB }; } }\n")
    body = "out[0] = na::KC; out[1] = na::nb::DB; out[2] = na::nb::DC;"
    assert agree(header, body, 3) == [15, 16, 20]


def test_enumerator_as_a_template_argument():
    header = ("enum class Op { Add, Mul };\n"
              "template <Op O> int apply(int a, int b) { return O == Op::Add ? a + b : a * b; }\n")
    assert agree(header, "out[0] = apply<Op::Add>(3, 4); out[1] = apply<Op::Mul>(3, 4);",
                 2) == [7, 12]


def test_anonymous_enumerations_name_constants():
    header = "enum { W = 4, H = 7 };\nenum : unsigned char { Small = 200 };\n"
    body = ("out[0] = W * H; out[1] = Small + 100; out[2] = sizeof(Small); int arr[W];\n"
            "arr[W - 1] = 2; out[3] = arr[3];")
    assert agree(header, body, 4) == [28, 300, 1, 2]


def test_an_unscoped_enumeration_holds_and_promotes_as_its_enumerators_need():
    """int while every enumerator fits one, else unsigned int, long (C++ [conv.prom]/3)."""
    header = ("enum Big { X = 0x7fffffff, Y };\nenum Neg { N1 = -1, N2 = 0x7fffffff };\n"
              "enum Huge { H1 = -1, H2 = 0x80000000 };\n")
    body = ("out[0] = sizeof(Big); out[1] = int(Y >> 1); out[2] = Y > 0; out[3] = sizeof(Huge);\n"
            "out[4] = int(H2 >> 4); out[5] = H1 < 0; out[6] = -N1; out[7] = (Y - 1u) == "
            "0x7fffffffu;")
    assert agree(header, body, 8) == [4, 1073741824, 1, 8, 134217728, 1, 1, 1]


def test_enumerations_declared_in_a_struct_are_its_members():
    header = """
struct S {
  enum K { A, B = 5, C };
  enum class M : short { X = 3, Y };
  K k;
  int v;
  int get() const { return k == B ? v * 10 : v + C; }
  int m() const { return static_cast<int>(M::Y); }
};
template <typename T> struct Buf { enum { N = sizeof(T) * 2 }; T data[N]; };
struct D : S { int twice() const { return C * 2; } };
template <S::M O> int pick() { return O == S::M::X ? 1 : 2; }
"""
    body = ("S s; s.k = S::B; s.v = 2; out[0] = s.get(); s.k = S::A; out[1] = s.get();\n"
            "S::K k2 = S::C; out[2] = k2; out[3] = s.m() * 10 + static_cast<int>(S::M::X);\n"
            "out[4] = sizeof(S::M); out[5] = Buf<short>::N * 10 + sizeof(Buf<int>);\n"
            "D d; out[6] = d.twice() + D::B; out[7] = pick<S::M::Y>() * 10 + pick<S::M::X>();")
    assert agree(header, body, 8) == [20, 8, 6, 43, 2, 72, 17, 21]


@pytest.mark.parametrize("header, body, message", [
    ("enum class M { A };", "out[0] = M::A;", "no implicit conversion from scoped enumeration"),
    ("enum class M { A };", "int x = M::A + 1; out[0] = x;", "invalid operand of type 'M'"),
    ("enum E { A };", "E e = 1; out[0] = e;", "cannot initialize a value of type 'E'"),
    ("enum E { A };", "out[0] = E::Z;", "no member named 'Z' in 'E'"),
    ("enum E : uchar { A = 300 };", "out[0] = A;", "300 is not representable"),
    ("enum class { A };", "out[0] = 1;", "scoped enumeration requires a name"),
    ("enum E { A = -1, B = 0xffffffffffffffff };", "out[0] = A;",
     "no integral type can represent all of the enumerator values"),
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
