"""Forward-declared structs (`struct C;`, C++ [basic.types]/5): pointers and references to the
incomplete type are declared, stored and passed before the definition, which completes the
same type; a struct names itself from its `{` on (`thread Node* next;`). A use that needs the
layout before the definition is refused with clang's message. g++ is the oracle."""

import pytest
from cxx_oracle import agree, gxx_rejects, metalsim_outputs, needs_gxx

import metalsim

pytestmark = needs_gxx


def test_a_reference_parameter_declared_before_the_definition_reads_the_defined_object():
    header = ("struct C;\nint get(thread C& c);\nstruct C { int v; int w; };\n"
              "int get(thread C& c) { return c.v * 10 + c.w; }\n")
    assert agree(header, "C c = {3, 4}; out[0] = get(c); out[1] = sizeof(C);", 2) == [34, 8]


def test_a_pointer_member_to_a_declared_struct_is_followed_after_its_definition():
    header = ("struct Node;\nstruct List { thread Node* head; int n; };\n"
              "struct Node { int v; thread Node* next; };\n"
              "int total(List l) { int s = 0; thread Node* p = l.head;\n"
              "  for (int k = 0; k < l.n; ++k) { s += p->v; p = p->next; } return s; }\n")
    body = ("Node c; c.v = 4; c.next = &c; Node b = {20, &c}; Node a = {300, &b};\n"
            "List l = {&a, 3}; out[0] = total(l); out[1] = sizeof(List);")
    assert agree(header, body, 2) == [324, 16]


def test_a_struct_names_itself_in_its_own_members():
    header = "struct L { thread L* next; int v; int get() const { return next->v; } };\n"
    body = "L a; a.v = 7; a.next = &a; L b = {&a, 2}; out[0] = b.get() + b.next->next->v;"
    assert agree(header, body, 1) == [14]


def test_a_function_returning_a_declared_struct_is_defined_after_it():
    header = ("struct C;\nC make(int k);\nint twice(thread C* c);\nstruct C { int v; };\n"
              "C make(int k) { return {k * 3}; }\nint twice(thread C* c) { return 2 * c->v; }\n")
    assert agree(header, "C c = make(5); out[0] = c.v; out[1] = twice(&c);", 2) == [15, 30]


def test_an_incomplete_object_is_passed_on_by_reference_before_the_definition():
    header = ("struct C;\nint g(thread C& c);\nint f(thread C* p) { return g(*p); }\n"
              "struct C { int v; };\nint g(thread C& c) { return c.v; }\n")
    assert agree(header, "C a = {7}; out[0] = f(&a);", 1) == [7]


def test_repeated_declarations_and_a_union_name_one_type():
    header = ("struct C;\nstruct C;\nunion U;\nstruct C { int v; };\nstruct C;\n"
              "union U { int i; float f; };\nint read(thread U& u) { return u.i; }\n")
    body = "C c = {3}; U u; u.f = 1.0f; out[0] = c.v; out[1] = read(u); out[2] = sizeof(U);"
    assert agree(header, body, 3) == [3, 1065353216, 4]


def test_forward_declarations_in_a_namespace():
    header = ("namespace na { struct C; int get(thread C* c); struct C { int v; };\n"
              "int get(thread C* c) { return c->v + 1; } }\n")
    assert agree(header, "na::C c = {8}; out[0] = na::get(&c);", 1) == [9]


def test_pointers_to_a_declared_struct_compare_before_its_definition():
    header = ("struct C;\nbool same(thread C* a, thread C* b) { return a == b; }\n"
              "struct C { int v; };\n")
    assert agree(header, "C c = {1}, d = {1}; out[0] = same(&c, &c); out[1] = same(&c, &d);",
                 2) == [1, 0]


def test_an_elaborated_type_declares_the_struct_in_the_enclosing_namespace():
    header = ("struct N { thread struct C* p; };\nint get(thread struct C* c);\n"
              "namespace na { struct M { thread struct D* d; }; }\n"
              "struct C { int v; };\nint get(thread struct C* c) { return c->v * 2; }\n"
              "namespace na { struct D { int w; }; }\n")
    body = ("C c = {3}; N n = {&c}; na::D d = {5}; na::M m = {&d};\n"
            "out[0] = n.p->v; out[1] = get(&c); out[2] = m.d->w;")
    assert agree(header, body, 3) == [3, 6, 5]


def test_a_local_forward_declaration_names_the_struct_its_block_defines_later():
    body = ("struct C; thread C* p = nullptr; struct C { int x; int y; };\n"
            "C c = {5, 6}; p = &c; out[0] = p->x * 10 + p->y; out[1] = sizeof(C);")
    assert agree("", body, 2) == [56, 8]


def test_a_local_forward_declaration_in_a_function_is_followed_by_a_pointer():
    header = ("int f(int k) { struct C; thread C* p = nullptr; struct C;\n"
              "  struct C { int v; thread C* next; };\n"
              "  C b = {k, nullptr}; C a = {1, &b}; p = &a; return p->v + p->next->v; }\n")
    assert agree(header, "out[0] = f(40);", 1) == [41]


def test_a_local_forward_declaration_hides_a_program_scope_struct():
    header = "struct C { int a; int b; int c; };\n"
    body = ("C outer = {1, 2, 3};\n{ struct C; thread C* p = nullptr; struct C { int v; };\n"
            "  C c = {7}; p = &c; out[0] = p->v; out[1] = sizeof(C); }\nout[2] = sizeof(C);")
    assert agree(header, body, 3) == [7, 4, 12]


def test_a_nested_forward_declaration_names_the_member_struct_defined_later():
    header = ("struct O { struct I; thread I* p; struct I { int v; };\n"
              "  int get() const { return p->v; } };\n")
    body = "O::I i = {4}; O o = {&i}; out[0] = o.get(); out[1] = sizeof(O::I);"
    assert agree(header, body, 2) == [4, 4]


def test_a_nested_forward_declaration_in_a_struct_template_and_a_local_struct():
    header = ("template <class T> struct O { struct I; thread I* p; struct I { T v; };\n"
              "  T get() { return p->v; } };\n")
    body = ("O<int>::I i = {5}; O<int> o = {&i}; out[0] = o.get() + sizeof(O<int>::I);\n"
            "struct L { struct J; thread J* q; struct J { int w; }; };\n"
            "L::J j = {6}; L l = {&j}; out[1] = l.q->w;")
    assert agree(header, body, 2) == [9, 6]


def test_repeated_nested_forward_declarations_and_a_union_name_one_type_each():
    header = ("struct O { struct I; struct I; union U; thread I* p; struct I { int v; };\n"
              "  union U { int a; float b; }; U u; };\n")
    body = "O::I i = {4}; O o; o.p = &i; o.u.a = 3; out[0] = o.p->v + o.u.a * 10;"
    assert agree(header, body, 1) == [34]


def test_a_member_function_body_sees_a_nested_struct_defined_after_it():
    header = ("struct O { struct I; int size() const { return sizeof(I); }\n"
              "  struct I { int v; int w; }; };\n")
    assert agree(header, "O o; out[0] = o.size();", 1) == [8]


# --- uses before the definition: refused --------------------------------------------------

INCOMPLETE_USES = [
    # (header, body, clang's message, where)
    ("struct C;\n", "C c; out[0] = 1;", "variable has incomplete type 'C'", "source:1:3"),
    ("struct C;\n", "out[0] = sizeof(C);",
     "invalid application of 'sizeof' to an incomplete type 'C'", "source:1:10"),
    ("struct C;\nstruct N { C c; };\nstruct C { int v; };\n", "out[0] = 1;",
     "field has incomplete type 'C'", "header:2:14"),
    ("struct C;\nstruct N { C c[2]; };\nstruct C { int v; };\n", "out[0] = 1;",
     "field has incomplete type 'C'", "header:2:14"),
    ("struct C;\nint f(C c) { return 1; }\nstruct C { int v; };\n", "out[0] = 1;",
     "variable has incomplete type 'C'", "header:2:9"),
    ("struct C;\nC f() { return C(); }\nstruct C { int v; };\n", "out[0] = 1;",
     "incomplete result type 'C' in function definition", "header:2:1"),
    ("struct C;\nint f(thread C* p) { return p->v; }\nstruct C { int v; };\n",
     "C c = {3}; out[0] = f(&c);", "member access into incomplete type 'C'", "header:2:29"),
    ("struct C;\nint f() { return sizeof(C); }\nstruct C { int v; };\n", "out[0] = f();",
     "invalid application of 'sizeof' to an incomplete type 'C'", "header:2:18"),
    ("struct C;\nint f(thread C* p) { C x = *p; return 0; }\nstruct C { int v; };\n",
     "C c = {3}; out[0] = f(&c);", "variable has incomplete type 'C'", "header:2:24"),
    ("struct C;\nthread C* step(thread C* p) { return p + 1; }\nstruct C { int v; };\n",
     "C c[2] = {{1}, {2}}; out[0] = step(c)->v;",
     "arithmetic on a pointer to an incomplete type 'C'", "header:2:38"),
    ("struct C;\nstruct N { thread C* p; int g() { return p->v; } };\nstruct C { int v; };\n",
     "out[0] = 1;", "member access into incomplete type 'C'", "header:2:42"),
    ("struct C;\nstruct D : C { int w; };\nstruct C { int v; };\n", "out[0] = 1;",
     "base class has incomplete type 'C'", "header:2:12"),
    ("struct C { C c; };\n", "out[0] = 1;", "field has incomplete type 'C'", "header:1:14"),
    ("struct C;\nstruct N { thread C* p; thread C* q; void f() { *p = *q; } };\n"
     "struct C { int v; };\n", "C a = {1}; C b = a; out[0] = b.v;",
     "incomplete type 'C' where a complete type is required", "header:2:54"),
    ("struct C;\nstruct N { thread C* p; void f() { *p = {1}; } };\nstruct C { int v; };\n",
     "out[0] = 1;", "initialization of incomplete type 'C'", "header:2:41"),
    # forward declarations in a block or a struct's body
    ("", "struct C; C c; struct C { int v; }; out[0] = 1;", "variable has incomplete type 'C'",
     "source:1:13"),
    ("", "struct C; out[0] = sizeof(C); struct C { int v; };",
     "invalid application of 'sizeof' to an incomplete type 'C'", "source:1:20"),
    ("int f() { struct C; thread C* p = nullptr; int k = p->v; struct C { int v; };\n"
     "  return k; }\n", "out[0] = f();", "member access into incomplete type 'C'",
     "header:1:52"),
    ("struct O { struct I; I i; struct I { int v; }; };\n", "out[0] = 1;",
     "field has incomplete type 'O::I'", "header:1:24"),
    ("struct O { struct I; I i[2]; struct I { int v; }; };\n", "out[0] = 1;",
     "field has incomplete type 'O::I'", "header:1:24"),
    ("struct O { struct I; int f() { return sizeof(I); } };\n", "out[0] = 1;",
     "invalid application of 'sizeof' to an incomplete type 'O::I'", "header:1:39"),
]


@pytest.mark.parametrize("header, body, message, where", INCOMPLETE_USES)
def test_a_use_of_an_incomplete_struct_by_value_is_refused_where_it_is(header, body, message,
                                                                        where):
    gxx_rejects(header, body)
    with pytest.raises(metalsim.CompileError) as e:
        metalsim_outputs(header, body, 1)
    d = e.value.diagnostic
    assert (d.message, f"{d.section}:{d.line}:{d.column}") == (message, where)
    assert "pointer or reference" in d.hint


@pytest.mark.parametrize("header, message, where", [
    ("struct C;\nint f(thread C* p) { C x = *p; return 0; }\nstruct C { int v; };\n",
     "variable has incomplete type 'C'", "header:2:24"),
    ("struct C;\nint f(thread C* p) { return p->v; }\nstruct C { int v; };\n",
     "member access into incomplete type 'C'", "header:2:29"),
    ("struct C;\nint f() { return sizeof(C); }\nstruct C { int v; };\n",
     "invalid application of 'sizeof' to an incomplete type 'C'", "header:2:18"),
    ("struct C;\nnamespace na { int f(thread C* p) { C a[2]; return 0; } }\n"
     "struct C { int v; };\n", "array has incomplete element type 'C'", "header:2:39"),
])
def test_a_function_body_using_an_incomplete_struct_is_refused_uncalled(header, message,
                                                                          where):
    gxx_rejects(header, "out[0] = 1;", std="c++14")
    with pytest.raises(metalsim.CompileError) as e:
        metalsim_outputs(header, "out[0] = 1;", 1)
    d = e.value.diagnostic
    assert (d.message, f"{d.section}:{d.line}:{d.column}") == (message, where)


def test_a_function_checked_where_it_is_defined_runs_its_lambdas_when_called():
    header = ("struct C;\nint f(thread C* p) { auto l = [](int k) { return k + 1; };\n"
              "  return l(2); }\nstruct C { int v; };\n")
    body = "C c = {1}; auto m = [](int k) { return k * 10; }; out[0] = f(&c) + m(4);"
    assert agree(header, body, 1, std="c++14") == [43]


def test_a_function_template_body_is_checked_where_it_is_instantiated_after_the_definition():
    header = ("struct C;\ntemplate <class T> int f(thread T* p) { T x = *p; return x.v; }\n"
              "struct C { int v; };\n")
    assert agree(header, "C c = {6}; out[0] = f(&c);", 1, std="c++14") == [6]


def test_a_function_declared_early_and_defined_after_the_struct_uses_it_by_value():
    header = ("struct C;\nint f(thread C* p);\nstruct C { int v; };\n"
              "int f(thread C* p) { C x = *p; return x.v + 1; }\n")
    assert agree(header, "C c = {3}; out[0] = f(&c);", 1, std="c++14") == [4]


def test_the_hint_says_where_the_struct_was_declared():
    with pytest.raises(metalsim.CompileError) as e:
        metalsim_outputs("struct C;\n", "C c; out[0] = 1;", 1)
    assert e.value.diagnostic.hint == (
        "'C' is declared (header line 1) but not defined before this use: define it first, "
        "or use a pointer or reference to it")


def test_a_union_declared_as_a_struct_is_refused():
    header = "struct C;\nunion C { int v; };\n"
    assert "union" in gxx_rejects(header, "")
    with pytest.raises(metalsim.CompileError, match="use of 'C' with tag type that does not "
                                                    "match previous declaration"):
        metalsim_outputs(header, "out[0] = 1;", 1)


def test_a_struct_declared_with_the_name_of_a_typedef_is_refused():
    header = "typedef int C;\nstruct C;\n"
    gxx_rejects(header, "")
    with pytest.raises(metalsim.CompileError, match="redefinition of 'C' as a different kind"):
        metalsim_outputs(header, "out[0] = 1;", 1)
