"""Forward-declared structs (`struct C;`, C++ [basic.types]/5): pointers and references to the
incomplete type are declared, stored and passed before the definition, which completes the
same type; a struct names itself from its `{` on (`thread Node* next;`). A use that needs the
layout before the definition is refused with clang's message. g++ is the oracle."""

import pytest
from cxx_oracle import agree, gxx_outputs, gxx_rejects, metalsim_outputs, needs_gxx

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


@pytest.mark.parametrize("header, body, message", [
    ("struct O { struct I; thread I* p; struct I { int v; }; };\n", "out[0] = 1;",
     "a forward declaration of a nested struct is not supported by metalsim"),
    ("", "struct L; out[0] = 1;",
     "a forward declaration of a local struct is not supported by metalsim"),
])
def test_nested_and_local_forward_declarations_are_refused_by_name(header, body, message):
    gxx_outputs(header, body, 1)   # (valid C++)
    with pytest.raises(metalsim.CompileError, match=message) as e:
        metalsim_outputs(header, body, 1)
    assert "declare" in e.value.diagnostic.hint


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
