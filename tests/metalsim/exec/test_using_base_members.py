"""`using B::f;` in a derived struct (C++ [namespace.udecl]): the base class's overloads of
`f` join the derived struct's own, in calls on an object and unqualified calls in member
functions, where one of the derived struct's own with the same parameter types hides the
base's; the chosen base function runs on the base subobject (a second base's too); operators,
base class templates and indirect bases alike; a data member's using-declaration changes
nothing. g++ is the oracle."""

from cxx_oracle import agree, needs_gxx

pytestmark = needs_gxx

BASE = ("struct B { int v;\n  int f(int x) const { return x + v; }\n"
        "  int f(float x) const { return 100; } };\n")


def test_the_base_s_overloads_join_the_derived_struct_s_own():
    header = BASE + "struct D : B { using B::f; int f(short x) const { return 7; } };\n"
    body = "D d; d.v = 3; out[0] = d.f(2); out[1] = d.f(1.5f); out[2] = d.f(short(1));"
    assert agree(header, body, 3) == [5, 100, 7]


def test_without_the_using_declaration_the_derived_overload_hides_them():
    header = BASE + "struct D : B { int f(short x) const { return 7; } };\n"
    assert agree(header, "D d; d.v = 3; out[0] = d.f(2); out[1] = d.f(1.5f);", 2) == [7, 7]


def test_a_derived_function_of_the_same_parameter_types_hides_the_base_s():
    header = BASE + ("struct D : B { using B::f; int f(int x) const { return 8; }\n"
                     "  int g() const { return f(1) * 10 + f(1.5f) / 100; } };\n")
    assert agree(header, "D d; d.v = 3; out[0] = d.f(2); out[1] = d.g();", 2) == [8, 81]


def test_a_second_base_an_indirect_base_and_a_base_class_template():
    header = BASE + ("struct A { int a; };\n"
                     "struct D2 : A, B { using B::f; int f(short x) const { return 8; } };\n"
                     "struct M : B {};\nstruct D3 : M { using M::f; int f(short x) const "
                     "{ return 9; } };\n"
                     "template <typename T> struct TB { T t; T f(T x) const { return x * t; } };\n"
                     "template <typename T> struct TD : TB<T> { using TB<T>::f;\n"
                     "  T f(float x) const { return T(9); } };\n")
    body = ("D2 d; d.a = 1; d.v = 5; out[0] = d.f(2) * 10 + d.f(short(2));\n"
            "D3 e; e.v = 2; out[1] = e.f(2) * 10 + e.f(short(2));\n"
            "TD<int> t; t.t = 3; out[2] = t.f(2) * 10 + t.f(2.5f);")
    assert agree(header, body, 3) == [78, 49, 69]


def test_a_base_operator_and_a_data_member():
    header = ("struct B { int v; int operator+(int x) const { return x + v; } };\n"
              "struct D : B { using B::operator+; using B::v;\n"
              "  int operator+(float x) const { return 50; } };\n")
    assert agree(header, "D d; d.v = 3; out[0] = d + 2; out[1] = d + 2.5f;", 2) == [5, 50]
