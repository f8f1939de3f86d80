"""A derived object used as its base class, with g++ as the oracle: `d.B::f()` and `B::f()` in a
derived member function call the base's function on the base subobject; a derived object
slices into a `B` (a copy), binds to `B&` and `const B&` (the subobject itself, not a copy)
and converts to a by-value `B` parameter; the base's operators apply to it; a constructor
initializes its bases (`D(int x) : B(x), w(1) {}`)."""

from cxx_oracle import agree, needs_gxx

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
