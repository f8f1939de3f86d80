"""Access control, as clang (Metal's compiler) checks it: a private or protected member, or
one reached through a private or protected base (a `class`'s members and bases are private
by default), named through an object outside every member function and the friends of the
class declaring it is an error; inside member functions (lambdas in them included), friend
functions (declared, or defined in the class) and public members it runs as C++ runs it.
g++ is the oracle. (Metalsim lets any member function, of any class, name them.)"""

import pytest
from cxx_oracle import agree, gxx_rejects, metalsim_outputs, needs_gxx

import metalsim

pytestmark = needs_gxx

CLASS = ("class C {\n  int v;\n  int f() const { return v + 1; }\npublic:\n"
         "  C(int x) : v(x) {}\n  int g(C o) const { auto h = [&]() { return o.v * 2; };\n"
         "    return f() + h(); }\n  friend int peek(C c);\n"
         "  friend int twice(C c) { return c.v * 2 + c.f(); }\n};\n"
         "int peek(C c) { return c.v + 100; }\n")


def test_members_friends_and_lambdas_in_members_name_private_members():
    assert agree(CLASS, "C c(4); C d(5); out[0] = c.g(d); out[1] = peek(c); "
                        "out[2] = twice(d);", 3) == [15, 104, 16]


def test_protected_members_in_a_derived_class_s_member_functions():
    header = ("class B { protected: int v; public: B(int x) : v(x) {} };\n"
              "class D : public B { public: D(int x) : B(x) {} int get() const "
              "{ return v * 3; } };\nstruct S : private B { S() : B(7) {} int get() const "
              "{ return v; } };\n")
    assert agree(header, "D d(2); S s; out[0] = d.get() * 10 + s.get();", 1) == [67]


@pytest.mark.parametrize("header, body, message", [
    (CLASS, "C c(4); out[0] = c.v;", "'v' is a private member of 'C'"),
    (CLASS, "C c(4); out[0] = c.f();", "'f' is a private member of 'C'"),
    ("struct S { private: int v; public: int w; };", "S s; s.w = 1; s.v = 2; out[0] = s.w;",
     "'v' is a private member of 'S'"),
    ("class B { protected: int v; public: B(int x) : v(x) {} };\n"
     "class D : public B { public: D(int x) : B(x) {} };", "D d(2); out[0] = d.v;",
     "'v' is a protected member of 'B'"),
    ("class A { public: int a; };\nclass B : A { public: int b; };\n"
     "struct D : B { int d; };", "D x; x.a = 1; out[0] = x.a;",
     "'a' is inaccessible: 'A' is a private base of 'B'"),
    ("template <typename T> class W { T t; public: W(T x) : t(x) {} };",
     "W<int> w(3); out[0] = w.t;", r"'t' is a private member of 'W<int>'"),
])
def test_naming_an_inaccessible_member_from_outside_is_an_error(header, body, message):
    gxx_rejects(header, body)
    with pytest.raises(metalsim.CompileError, match=message):
        metalsim_outputs(header, body, 1)
