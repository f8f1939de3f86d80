"""`class` declares a struct whose members and bases are private until an access label says
otherwise (Metal accepts it as C++ does): classes, class templates, bases, elaborated
`class C` types and nested classes run as their `struct` spelling does (access control:
`test_member_access_control.py`). g++ is the oracle."""

from cxx_oracle import agree, needs_gxx

pytestmark = needs_gxx


def test_a_class_with_private_data_a_constructor_and_public_member_functions():
    header = ("class C {\n  int v;\n  int twice() const { return v * 2; }\npublic:\n"
              "  C(int x) : v(x) {}\n  int get() const { return twice() + 1; }\n};\n")
    assert agree(header, "C c(4); out[0] = c.get(); class C d(1); out[1] = d.get();",
                 2) == [9, 3]


def test_class_templates_bases_and_nested_classes():
    header = ("template <class T> class W { T t;\npublic:\n  W(T x) : t(x) {}\n"
              "  T twice() const { return t * T(2); }\n};\n"
              "class B { public: int v; int get() const { return v; } };\n"
              "class D : public B { public: int w; class In { public: int k; }; In in; };\n"
              "struct E : B { int z; };\n")
    body = ("W<int> w(5); W<short> s(short(3)); out[0] = w.twice() + s.twice();\n"
            "D d; d.v = 3; d.w = 4; d.in.k = 2; out[1] = d.get() + d.w * 10 + d.in.k * 100;\n"
            "E e; e.v = 1; e.z = 2; out[2] = e.get() + e.z;")
    assert agree(header, body, 3) == [16, 243, 3]


def test_a_class_aggregate_with_public_members():
    header = "class P { public: int x; int y; int sum() const { return x + y; } };\n"
    assert agree(header, "P p{1, 2}; P q = {3, 4}; out[0] = p.sum() * 10 + q.sum();",
                 1) == [37]
