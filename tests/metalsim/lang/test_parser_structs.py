"""Parsing struct definitions: data members and member functions parse; what is more is
refused with a CompileError at the offending token and a hint."""

import pytest

from metalsim.diagnostics import CompileError
from metalsim.lang import ast
from metalsim.lang.parser import parse_source


def parse(text):
    return parse_source(text)[0]


def test_struct_definition_lists_its_members_in_order():
    unit = parse("struct P { int n; float a, b[4]; float4 v; };")
    (struct,) = unit.items
    assert isinstance(struct, ast.StructDef) and struct.name == "P"
    assert [m.name for m in struct.members] == ["n", "a", "b", "v"]
    assert isinstance(struct.members[2].type, ast.ArrayType)


def test_struct_name_is_a_type_after_its_definition():
    unit = parse("struct P { int n; }; kernel void k() { P p = {1}; P q{2}; struct P r; }")
    body = unit.items[1].body.items
    assert [d.decls[0].type.name for d in body] == ["P", "P", "P"]
    assert isinstance(body[1].decls[0].init, ast.InitList)


def test_typedef_of_an_anonymous_struct_names_it_after_the_alias():
    (alias,) = parse("typedef struct { int a; } Pair;").items
    assert isinstance(alias, ast.TypeAlias) and isinstance(alias.type, ast.StructDef)
    assert (alias.name, alias.type.name) == ("Pair", "Pair")


def test_typedef_of_a_tagged_struct_keeps_the_tag():
    (alias,) = parse("typedef struct Tag { int a; } Alias;").items
    assert (alias.name, alias.type.name) == ("Alias", "Tag")


def test_struct_defined_in_a_function_body_is_a_statement():
    unit = parse("kernel void k() { struct L { int z; }; L l; }")
    assert isinstance(unit.items[0].body.items[0], ast.StructDef)


def test_access_labels_are_accepted():
    (struct,) = parse("struct P { public: int n; };").items
    assert [m.name for m in struct.members] == ["n"]


def test_braced_construct_is_marked():
    unit = parse("struct P { int n; }; kernel void k() { int a = P{1}.n; int b = int(2); }")
    first, second = (d.decls[0].init for d in unit.items[1].body.items)
    assert first.base.braces and not second.braces


def test_alignof_parses_like_sizeof():
    unit = parse("kernel void k() { ulong a = alignof(float4); }")
    init = unit.items[0].body.items[0].decls[0].init
    assert isinstance(init, ast.SizeOf) and init.align


def test_member_functions_are_parsed_apart_from_data_members():
    (struct,) = parse("struct W { float m; void add(float x) { m += x; } int n; "
                      "float get() const { return m; } };").items
    assert [m.name for m in struct.members] == ["m", "n"]
    assert [f.name for f in struct.methods] == ["add", "get"]
    add, get = struct.methods
    assert isinstance(add, ast.MemberFunction) and [p.name for p in add.params] == ["x"]
    assert (add.const, add.space, get.const, get.space) == (False, None, True, None)
    assert isinstance(add.body, ast.Compound)


@pytest.mark.parametrize("qualifiers, const, space", [
    ("threadgroup", False, "threadgroup"), ("const device", True, "device"),
    ("device const", True, "device"), ("const thread", True, "thread"),
    ("constant const", True, "constant"),
])
def test_member_function_qualifiers_name_the_object_constness_and_address_space(
        qualifiers, const, space):
    (struct,) = parse(f"struct S {{ int n; int get() {qualifiers} {{ return n; }} }};").items
    (get,) = struct.methods
    assert (get.const, get.space) == (const, space)


def test_this_is_an_expression():
    (struct,) = parse("struct S { int n; int get() { return this->n + (*this).n; } };").items
    value = struct.methods[0].body.items[0].value
    assert isinstance(value.left, ast.Member) and isinstance(value.left.base, ast.This)
    assert isinstance(value.right.base, ast.Unary) and isinstance(value.right.base.operand,
                                                                  ast.This)


def test_a_member_function_may_name_its_own_struct_and_inline_specifiers():
    (struct,) = parse("struct V { float x; METAL_FUNC V twice() const { V r = {x * 2}; "
                      "return r; } };").items
    assert struct.methods[0].return_type.name == "V"


def test_constructors_keep_their_member_initializers_and_explicitness():
    struct = parse("struct W { float m; int n; W() : m(0), n{} {} explicit W(float x) : W() "
                   "{ m = x; } ~W() {} };").items[0]
    assert [d.name for d in struct.members] == ["m", "n"] and struct.methods == []
    default, one = struct.constructors
    assert [(i.name, len(i.args), i.braces) for i in default.inits] == [("m", 1, False),
                                                                       ("n", 0, True)]
    assert (default.explicit, one.explicit, [p.name for p in one.params]) == (False, True, ["x"])
    assert [i.name for i in one.inits] == ["W"] and len(one.body.items) == 1


def test_call_operator_is_a_member_function_and_calls_parse_on_any_callee():
    struct = parse("struct Max { float operator()(float a, float b) const { return a; } };"
                   ).items[0]
    (fn,) = struct.methods
    assert (fn.name, fn.const, len(fn.params)) == ("operator()", True, 2)
    call = parse("struct Max { float v; }; float f() { return Max{}(1.0f); }").items[1]
    ret = call.body.items[0].value
    assert isinstance(ret, ast.MethodCall) and ret.name == "operator()"
    assert isinstance(ret.base, ast.Construct)


@pytest.mark.parametrize("text, message, hint, column", [
    ("struct P { static int k; };", "static data members are not supported",
     "static constexpr constant int k", 12),
    ("struct P { static int get() const { return 1; } };",
     "static member function cannot have 'const' qualifier", "", 29),
    ("struct P { P operator=(P o) { return o; } };", "overloading 'operator=' is not supported",
     "implicit copy assignment", 22),
    ("struct P { int n, get() { return 1; } };", "declare a member function on its own", "",
     19),
    ("struct P { int get() device threadgroup { return 1; } };",
     "conflicting address spaces 'device' and 'threadgroup'", "", 29),
    ("struct P { int get() & { return 1; } };", "ref-qualified member functions", "", 22),
    ("struct P { P() = default; };", "defaulted and deleted constructors", "P() {}", 16),
    ("struct P { P() const {} };", "'const' qualifier is not allowed on a constructor", "", 16),
    ("struct P { P() : n(1) };", "expected function body after constructor", "", 23),
    ("struct P { P() : (1) {} };", "expected a member name", "", 18),
    ("struct P { P() : n; };", "or '{' after member 'n'", "", 19),
    ("struct P { P(); };", "constructor defined in the struct body", "P(...) { ... }", 15),
    ("struct P { ~P() { n = 0; } int n; };", "destructors with a body", "drop '~P()'", 12),
    ("struct P { ~Q() {} };", "expected the struct's name 'P' after '~'", "", 13),
    ("struct P { static int n; };", "static data members", "constant", 12),
    ("struct P { int n : 3; };", "bit-fields", "", 18),
    ("struct Q { int a; }; struct P : virtual Q { int n; };", "virtual base classes", "", 33),
    ("struct { int a; };", "anonymous structs", "give the struct a name", 1),
    ("struct P { int n; } p;", "declaring a variable in a struct definition", "P p;", 21),
    ("struct P { struct Q { int a; } q; };", "declaring a variable in a struct definition",
     "Q q;", 32),
    ("struct P { struct { int a; }; };", "anonymous structs", "", 12),
    ("kernel void k() { struct Nope n; }", "unknown type name 'Nope'", "", 26),
    ("struct P { int n; }", "expected ';' after struct definition", "", 20),
    ("struct S { template <typename T> friend int f(T x) { return 1; } };",
     "a friend function defined in a struct template's specialisation, a nested or local "
     "struct, or as a template", "declare the function after the struct", 34),
])
def test_what_is_more_than_an_aggregate_is_refused_with_a_hint(text, message, hint, column):
    with pytest.raises(CompileError, match=message) as info:
        parse(text)
    assert hint in str(info.value)
    assert (info.value.line, info.value.column) == (1, column)


# --- templates ---------------------------------------------------------------------------------

def test_struct_template_records_its_parameters_and_is_a_template_name_after():
    unit = parse("template <typename T, int N = 4> struct Buf { T v[N]; }; "
                 "kernel void k() { Buf<float, 2> b; Buf<Buf<int>, 3> c; }")
    struct, kernel = unit.items
    assert isinstance(struct, ast.StructDef) and struct.name == "Buf"
    assert [(p.name, p.kind is None, p.default is not None)
            for p in struct.template_params] == [("T", True, False), ("N", False, True)]
    b, c = (d.decls[0].type for d in kernel.body.items)
    assert (b.name, [a.name for a in b.template_args[:1]]) == ("Buf", ["float"])
    assert c.template_args[0].template_args[0].name == "int"  # `>>` closes two lists


def test_injected_class_name_parses_with_and_without_arguments():
    (struct,) = parse("template <typename T> struct A { T x; A twice() const { A r; return r; } "
                      "A<T> same() const { return *this; } A(T v) : x(v) {} };").items
    assert [f.return_type.template_args for f in struct.methods] == [
        None, [struct.methods[1].return_type.template_args[0]]]
    assert [c.name for c in struct.constructors] == ["A"]


def test_member_function_template_keeps_its_parameters():
    (struct,) = parse("struct Max { template <typename T> T operator()(T a, T b) const "
                      "{ return a > b ? a : b; } };").items
    (fn,) = struct.methods
    assert (fn.name, [p.name for p in fn.template_params], fn.const) == ("operator()", ["T"],
                                                                          True)


@pytest.mark.parametrize("text, message", [
    ("template <typename T> struct A { T x; }; kernel void k() { A a; }",
     "use of class template 'A' requires template arguments"),
    ("struct S { template <typename T> T v; };",
     "member templates other than member functions, constructors and conversion functions "
     "are not supported by metalsim"),
])
def test_template_misuse_is_refused_while_parsing(text, message):
    with pytest.raises(CompileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse(text)


# --- operators ---------------------------------------------------------------------------------

def test_member_operators_are_member_functions_named_after_the_operator():
    (struct,) = parse("struct S { S operator+(S o) const { return o; } S operator-() const "
                      "{ return *this; } void operator+=(S o) {} bool operator<=(S o) const "
                      "{ return true; } float operator[](int i) const { return 0; } "
                      "int operator>>(int k) const { return k; } };").items
    assert [(fn.name, len(fn.params), fn.const) for fn in struct.methods] == [
        ("operator+", 1, True), ("operator-", 0, True), ("operator+=", 1, False),
        ("operator<=", 1, True), ("operator[]", 1, True), ("operator>>", 1, True)]


def test_free_and_template_operator_functions_and_a_reference_return_type_parse():
    unit = parse("struct S { float v; S& operator*=(float k) { return *this; } }; "
                 "S operator+(S a, S b) { return a; } "
                 "template <typename T> S operator*(T k, S s) { return s; }")
    struct, plus, times = unit.items
    assert isinstance(struct.methods[0].return_type, ast.ReferenceType)
    assert (plus.name, len(plus.params)) == ("operator+", 2)
    assert (times.name, [p.name for p in times.template_params]) == ("operator*", ["T"])


@pytest.mark.parametrize("text, message, hint, column", [
    ("struct S { S operator++(float) { return *this; } };", r"parameter of overloaded "
     r"post-increment operator must have type 'int' \(not 'float'\)", "operator++(int)", 25),
    ("struct S { S operator--(S a, int b) { return a; } };", r"overloaded 'operator--' must be "
     r"a unary or binary operator \(has 3 parameters\)", "", 14),
    ("struct S { S operator,(S o) { return o; } };", "overloading 'operator,'", "", 22),
    ("struct S { operator float(int x) const { return 1; } };", "a conversion function takes "
     "no parameters", "", 27),
    ("struct S { S* operator&() { return this; } };", "overloading unary 'operator&' is not "
     "supported", "takes the address", 15),
    ("struct S { S operator+(S a, S b) { return a; } };", r"overloaded 'operator\+' must be a "
     r"unary or binary operator \(has 3 parameters\)", "", 14),
    ("struct S { S operator/() { return *this; } };", r"overloaded 'operator/' must be a binary "
     r"operator \(has 1 parameter\)", "", 14),
    ("struct S { bool operator!(S o) { return true; } };", r"overloaded 'operator!' must be a "
     r"unary operator \(has 2 parameters\)", "", 17),
    ("struct S { int v; }; int operator[](S s, int i) { return i; }", r"overloaded "
     r"'operator\[\]' must be a non-static member function", "", 26),
    ("int operator()(int a) { return a; }", r"overloaded 'operator\(\)' must be a non-static "
     "member function", "", 5),
])
def test_operators_metalsim_or_cpp_cannot_overload_are_refused(text, message, hint, column):
    with pytest.raises(CompileError, match=message) as info:
        parse(text)
    assert hint in str(info.value)
    assert (info.value.line, info.value.column) == (1, column)


def test_a_forward_declaration_names_a_type_for_the_declarations_after_it():
    unit = parse("struct C; class K; union U; namespace na { struct D; }\n"
                 "int f(thread C& c, thread na::D* d);")
    declarations = [i for i in unit.items if isinstance(i, ast.StructDeclaration)]
    assert [(d.name, d.key, d.template_params) for d in declarations] == [
        ("C", "struct", None), ("K", "class", None), ("U", "union", None),
        ("na::D", "struct", None)]
    f = unit.items[-1]
    assert [p.type.referee.name if isinstance(p.type, ast.ReferenceType)
            else p.type.pointee.name for p in f.params] == ["C", "na::D"]


def test_a_forward_declaration_needs_a_name():
    with pytest.raises(CompileError, match="expected a struct name after 'struct'") as info:
        parse("struct float4;")
    assert (info.value.line, info.value.column) == (1, 8)


def test_an_elaborated_type_of_an_undeclared_struct_declares_it_before_the_declaration():
    unit = parse("namespace na { struct N { thread struct C* p; }; }")
    declaration, struct = unit.items
    assert isinstance(declaration, ast.StructDeclaration)
    assert (declaration.name, declaration.key, struct.name) == ("na::C", "struct", "na::N")
    assert struct.members[0].type.pointee.name == "na::C"
