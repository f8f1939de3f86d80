"""A derived object used as its base class, with g++ as the oracle: `d.B::f()` and `B::f()` in a
derived member function call the base's function on the base subobject; a derived object
slices into a `B` (a copy), binds to `B&` and `const B&` (the subobject itself, not a copy)
and converts to a by-value `B` parameter; the base's operators apply to it; a constructor
initializes its bases (`D(int x) : B(x), w(1) {}`, `B<T>(x)`, a typedef's name); a `D*`
converts to a `B*` (moved to the subobject where it is not the first), and casts reach the
subobject (`static_cast<B&>(d)`) or the derived object again (`static_cast<D*>(pb)`)."""

import pytest
from cxx_oracle import agree, metalsim_outputs, needs_gxx

import metalsim

pytestmark = needs_gxx

HEADER = """
struct B { int v; int get() const { return v * 3; } void set(int x) { v = x; } };
struct D : B {
  int w;
  int get() const { return w * 5 + B::get(); }
  int base_get() const { return B::get(); }
};
struct E : D { int z; int get() const { return z + D::get() * 100; } };
int take(B b) { return b.get() + 1000; }
int peek(const thread B& b) { return b.get() + 2000; }
void reset(thread B& b) { b.set(9); }
"""


def test_qualified_calls_reach_the_hidden_base_member_functions():
    body = ("D d; d.v = 2; d.w = 7; out[0] = d.get(); out[1] = d.B::get(); out[2] = d.base_get();\n"
            "E e; e.v = 1; e.w = 2; e.z = 3; out[3] = e.get(); out[4] = e.B::get();\n"
            "out[5] = e.D::get();")
    assert agree(HEADER, body, 6) == [41, 6, 6, 1303, 3, 13]


def test_a_derived_object_slices_into_a_copy_of_its_base():
    body = ("D d; d.v = 2; d.w = 7; B b = d; out[0] = b.get(); B c; c = d; out[1] = c.v;\n"
            "out[2] = take(d); d.v = 4; out[3] = b.v;")
    assert agree(HEADER, body, 4) == [6, 2, 1006, 2]


def test_base_references_bind_to_the_subobject_itself():
    body = ("D d; d.v = 2; d.w = 7; const thread B& rb = d; d.v = 6; out[0] = rb.get();\n"
            "out[1] = peek(d); reset(d); out[2] = d.v; thread B& wb = d; wb.v = 11;\n"
            "out[3] = d.get();")
    assert agree(HEADER, body, 4) == [18, 2018, 9, 68]


def test_base_class_operators_apply_to_derived_objects():
    header = """
struct B {
  int v;
  int operator+(B o) const { return v * 10 + o.v; }
  int operator[](int i) const { return v + i; }
  void operator+=(int k) { v += k; }
};
struct D : B { int w; };
struct P { int x; };
int operator*(P a, P b) { return a.x * b.x; }
struct Q : P { int y; };
"""
    body = ("D d1; d1.v = 2; d1.w = 0; D d2; d2.v = 3; d2.w = 0; out[0] = d1 + d2;\n"
            "out[1] = d1[4]; d1 += 5; out[2] = d1.v; Q q; q.x = 6; q.y = 1; P p; p.x = 7;\n"
            "out[3] = q * p; out[4] = q * q;")
    assert agree(header, body, 5) == [23, 6, 7, 42, 36]


def test_base_class_initializers_construct_the_base_subobject_first():
    header = """
struct B { int v; B(int x) : v(x * 2) {} B() : v(1) {} int get() const { return v; } };
struct A { int a; };
struct D : B { int w; D(int x, int y) : B(x), w(y) {} D() : w(5) {} };
struct E : D { int z; E(int k) : D(k, k + 1), z(k * 3) {} };
struct F : A { int f; F(int x) : A{x + 1}, f(x) {} };
"""
    body = ("D d(3, 4); out[0] = d.get() * 100 + d.w; D e; out[1] = e.get() * 100 + e.w;\n"
            "E x(2); out[2] = x.v * 10000 + x.w * 100 + x.z; F f(6); out[3] = f.a * 10 + f.f;")
    assert agree(header, body, 4) == [604, 105, 40306, 76]


MULTIPLE = """
struct A { int a; };
struct B { int b; int get() const { return b * 2; } };
struct D : A, B { int d; };
int via_b(const thread B* p) { return p->get(); }
int via_ptr(thread D* p) { return 1; }
int via_ptr(thread A* p) { return 2; }
"""


def test_a_derived_pointer_converts_to_a_pointer_to_its_base_subobject():
    """The second base starts after the first: the pointer moves to it, and back by a cast."""
    body = ("D x; x.a = 1; x.b = 2; x.d = 3; thread B* pb = &x; pb->b = 7; out[0] = x.b;\n"
            "thread D* back = static_cast<thread D*>(pb); out[1] = back->d;\n"
            "out[2] = ((thread B*)&x)->b; out[3] = via_b(&x); thread A* pa = &x; out[4] = pa->a;\n"
            "out[5] = via_ptr(&x) * 10 + via_ptr(pa); thread D* again = (thread D*)pb;\n"
            "out[6] = again->a;")
    assert agree(MULTIPLE, body, 7) == [7, 3, 7, 14, 1, 12, 1]


def test_casts_to_a_base_reference_or_value_name_the_subobject_or_copy_it():
    body = ("D x; x.a = 1; x.b = 2; x.d = 3; B other; other.b = 5;\n"
            "static_cast<thread B&>(x) = other; out[0] = x.b * 10 + x.d;\n"
            "((thread B&)x).b = 9; out[1] = x.b; out[2] = static_cast<const thread B&>(x).get();\n"
            "out[3] = static_cast<B>(x).b + B(x).b + ((B)x).b;\n"
            "thread B& rb = x; out[4] = static_cast<thread D&>(rb).d + ((thread D&)rb).a * 10;")
    assert agree(MULTIPLE, body, 5) == [53, 9, 18, 27, 13]


def test_a_const_base_reference_cast_is_read_only():
    with pytest.raises(metalsim.CompileError, match="read-only"):
        metalsim_outputs(MULTIPLE, "D x; static_cast<const thread B&>(x).b = 1; out[0] = x.b;",
                         1)


def test_base_initializers_name_template_and_typedef_bases():
    header = """
template <typename T> struct B { T v; B(T x) : v(x) {} };
template <typename T> struct P { T p; };
struct D : B<int> { int w; D(int x) : B<int>(x * 2), w(1) {} };
template <typename T> struct E : B<T>, P<T> { T e; E(T x) : B<T>(x + 1), P<T>{x * 3}, e(x) {} };
struct Q { int q; Q(int x) : q(x) {} };
typedef Q Base;
struct F : Base { int f; F(int x) : Base(x + 5), f(x) {} };
"""
    body = ("D d(6); out[0] = d.v * 10 + d.w; E<int> e(4); out[1] = e.v * 100 + e.p * 10 + e.e;\n"
            "F f(2); out[2] = f.q * 10 + f.f;")
    assert agree(header, body, 3) == [121, 624, 72]


def test_qualified_data_members_name_the_hidden_or_ambiguous_base_member():
    header = """
struct A { int v; };
struct B { int v; };
struct D : A, B { int v; int sum() const { return v * 100 + A::v * 10 + B::v; } };
template <typename T> struct P { T v; };
template <typename T> struct Q : P<T> {
  T v;
  void set(T x) { P<T>::v = x; v = x + 1; }
  T base() const { return P<T>::v; }
};
"""
    body = ("D d; d.v = 3; d.A::v = 1; d.B::v = 2; out[0] = d.sum(); out[1] = d.A::v + d.B::v;\n"
            "d.D::v += 4; out[2] = d.v; Q<int> q; q.set(5); out[3] = q.v * 10 + q.base();")
    assert agree(header, body, 4) == [312, 3, 7, 65]


@pytest.mark.parametrize("header, message", [
    ("struct B { virtual int f() const { return 1; } };", "virtual functions are not allowed"),
    ("struct B { int v; };\nstruct D : virtual B { int w; };", "virtual base classes"),
    ("struct B { int v; B(int x) : v(x) {} };\nstruct D : B { using B::B; };",
     r"inheriting constructors \('using B::B;'\)"),
    ("struct B { int v; };\nstruct C { int f() const { return 1; } };\n"
     "struct D : B { using C::f; };", "'C' is not a base class of 'D'"),
    ("struct B { int v; };\nstruct D : B { using B::g; };", "no member named 'g' in 'B'"),
])
def test_what_metalsim_refuses_about_classes_is_named(header, message):
    with pytest.raises(metalsim.CompileError, match=message):
        metalsim_outputs(header, "out[0] = 1;", 1)


def test_overloads_prefer_the_nearest_base_class():
    """C++ [over.ics.rank]/4.4: C to B beats C to A where B derives from A; pointers,
    references and copies alike."""
    header = ("struct A { int a; };\nstruct B : A { int b; };\nstruct C : B { int c; };\n"
              "int f(thread A* p) { return 1; }\nint f(thread B* p) { return 2; }\n"
              "int g(A x) { return 1; }\nint g(B x) { return 2; }\n"
              "int h(const thread A& x) { return 1; }\nint h(const thread B& x) { return 2; }\n")
    body = ("C c; c.a = 1; c.b = 2; c.c = 3; out[0] = f(&c) * 100 + g(c) * 10 + h(c);\n"
            "A a; a.a = 0; out[1] = f(&a) * 100 + g(a) * 10 + h(a);")
    assert agree(header, body, 2) == [222, 111]


def test_a_member_qualified_by_a_base_class_template_instance_or_a_namespace():
    header = ("template <typename T> struct TB { T v; T get() const { return v * 2; } };\n"
              "struct D : TB<int> { int v; int get() const { return 5; } };\n"
              "template <typename T> struct TD : TB<T> { T v;\n"
              "  T both() const { return this->TB<T>::v * 10 + v + this->TB<T>::get(); } };\n"
              "namespace na { struct B { int v; }; }\nstruct N : na::B { int v; };\n")
    body = ("D d; d.v = 3; d.TB<int>::v = 4; thread D* p = &d;\n"
            "out[0] = d.TB<int>::v * 10 + d.v + p->TB<int>::get() * 100;\n"
            "TD<short> t; t.v = 3; t.TB<short>::v = 4; out[1] = t.both();\n"
            "N n; n.v = 1; n.na::B::v = 2; out[2] = n.na::B::v * 10 + n.v;\n"
            "out[3] = d.v < 4 && d.v > 2;")
    assert agree(header, body, 4) == [843, 51, 21, 1]
