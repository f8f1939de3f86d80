"""Tests of metalsim.lang.parser: precedence, declarations, templates, statements, errors."""

from __future__ import annotations

import signal
from contextlib import contextmanager, suppress

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metalsim.diagnostics import CompileError, Coord, SourceMap
from metalsim.lang import ast
from metalsim.lang.parser import parse, parse_prefix, parse_source
from metalsim.lang.preprocess import preprocess, preprocess_prefix

# --- Helpers -----------------------------------------------------------------------------------


def show(node: ast.Node | None) -> str:
    """A compact prefix notation of an expression or type, so tests state the tree exactly."""
    if node is None:
        return "_"
    match node:
        case ast.IntLiteral() | ast.FloatLiteral():
            return node.text
        case ast.BoolLiteral():
            return str(node.value).lower()
        case ast.NullptrLiteral():
            return "nullptr"
        case ast.StringLiteral():
            return repr(node.value)
        case ast.Name():
            qualified = f"{node.qualifier}::{node.name}" if node.qualifier else node.name
            if node.template_args is not None:
                qualified += "<" + ", ".join(show(a) for a in node.template_args) + ">"
            return qualified
        case ast.Unary():
            return f"({node.op} {show(node.operand)})"
        case ast.Postfix():
            return f"(post{node.op} {show(node.operand)})"
        case ast.Binary():
            return f"({node.op} {show(node.left)} {show(node.right)})"
        case ast.Assign():
            return f"({node.op} {show(node.target)} {show(node.value)})"
        case ast.Conditional():
            return f"(? {show(node.cond)} {show(node.then)} {show(node.otherwise)})"
        case ast.Call():
            return f"(call {' '.join(show(a) for a in [node.func, *node.args])})"
        case ast.Construct():
            return f"(construct {' '.join(show(a) for a in [node.type, *node.args])})"
        case ast.Cast():
            return f"({node.style}-cast {show(node.type)} {show(node.expr)})"
        case ast.Index():
            return f"([] {show(node.base)} {show(node.index)})"
        case ast.Member():
            return f"({'->' if node.arrow else '.'} {show(node.base)} {node.name})"
        case ast.SizeOf():
            return f"(sizeof {show(node.operand)})"
        case ast.InitList():
            return "{" + ", ".join(show(i) for i in node.items) + "}"
        case ast.NamedType():
            text = node.name
            if node.template_args is not None:
                text += "<" + ", ".join(show(a) for a in node.template_args) + ">"
            prefix = ("const " if node.const else "") + (f"{node.space} " if node.space else "")
            return prefix + text
        case ast.PointerType():
            return show(node.pointee) + ("* const" if node.const else "*")
        case ast.ReferenceType():
            return show(node.referee) + "&"
        case ast.ArrayType():
            return f"{show(node.element)}[{show(node.size) if node.size else ''}]"
    raise AssertionError(f"no notation for {node!r}")


def body(code: str, header: str = "") -> list[ast.Node]:
    """The statements of `void f() { code }`, after `header` at file scope."""
    unit, _ = parse_source(f"{header}\nvoid f() {{\n{code}\n}}\n")
    func = unit.items[-1]
    assert isinstance(func, ast.FunctionDef) and func.body is not None
    return func.body.items


def expr(code: str, header: str = "") -> str:
    """The notation of the single expression statement `code;`."""
    (stmt,) = body(code + ";", header)
    assert isinstance(stmt, ast.ExprStmt), stmt
    return show(stmt.expr)


def decl(code: str, header: str = "") -> list[ast.VarDecl]:
    """The declarators of the single declaration statement `code`."""
    (stmt,) = body(code, header)
    assert isinstance(stmt, ast.DeclStmt), stmt
    return stmt.decls


def error(text: str, sections: list[tuple[str, int, int]] = ()) -> CompileError:
    with pytest.raises(CompileError) as info:
        parse_source(text, sections)
    return info.value


def body_error(code: str) -> CompileError:
    """The error for `code` as a kernel body, with coordinates in the "source" section."""
    return error(*_kernel(code))


def _kernel(source: str, header: str = "") -> tuple[str, list[tuple[str, int, int]]]:
    """`source` wrapped as MLX wraps it, with its header and source sections."""
    prefix = header + (
        "[[kernel]] void custom_kernel_k(\n"
        "  const device float* inp [[buffer(0)]],\n"
        "  device float* out [[buffer(1)]],\n"
        "  uint3 thread_position_in_grid [[thread_position_in_grid]]) {\n"
    )
    text = prefix + source + "\n}\n"
    return text, [("header", 0, len(header)),
                  ("source", len(prefix), len(prefix) + len(source))]


# --- Expressions: precedence and associativity -------------------------------------------------


def test_multiplication_binds_tighter_than_addition():
    assert expr("a + b * c") == "(+ a (* b c))"


def test_subtraction_is_left_associative():
    assert expr("a - b - c") == "(- (- a b) c)"


def test_assignment_is_right_associative():
    assert expr("a = b = c") == "(= a (= b c))"


def test_compound_assignment_is_right_associative():
    assert expr("a += b <<= c") == "(+= a (<<= b c))"


def test_conditional_is_right_associative():
    assert expr("a ? b : c ? d : e") == "(? a b (? c d e))"


def test_conditional_else_branch_takes_an_assignment():
    assert expr("a ? b : c = d") == "(? a b (= c d))"


def test_conditional_middle_takes_a_comma_expression():
    assert expr("a ? b, c : d") == "(? a (, b c) d)"


def test_shift_binds_looser_than_addition():
    assert expr("x << 1 + 2") == "(<< x (+ 1 2))"


def test_unary_minus_applies_to_the_subscript():
    assert expr("-a[i]") == "(- ([] a i))"


def test_dereference_of_post_increment():
    assert expr("*p++") == "(* (post++ p))"


def test_address_of_subscript():
    assert expr("&a[3]") == "(& ([] a 3))"


def test_c_cast_binds_tighter_than_division():
    assert expr("(float)a / b") == "(/ (c-cast float a) b)"


def test_full_precedence_ladder():
    assert expr("a || b && c | d ^ e & f == g < h << i + j * k") == (
        "(|| a (&& b (| c (^ d (& e (== f (< g (<< h (+ i (* j k))))))))))"
    )


def test_relational_binds_tighter_than_equality():
    assert expr("a == b < c") == "(== a (< b c))"


def test_comma_is_lowest():
    assert expr("a = 1, b = 2") == "(, (= a 1) (= b 2))"


def test_prefix_and_postfix_increments():
    assert expr("++i + j--") == "(+ (++ i) (post-- j))"


def test_logical_not_and_bitwise_not():
    assert expr("!a && ~b") == "(&& (! a) (~ b))"


def test_member_access_and_arrow_chain():
    assert expr("p->pos.xy") == "(. (-> p pos) xy)"


def test_sizeof_type_and_expression():
    assert expr("sizeof(float4) + sizeof x") == "(+ (sizeof float4) (sizeof x))"


def test_sizeof_parenthesised_expression():
    assert expr("sizeof(a + 1)") == "(sizeof (+ a 1))"


def test_string_literals_concatenate():
    assert expr('f("ab" "cd")') == "(call f 'abcd')"


# --- Literals ----------------------------------------------------------------------------------


def test_int_literal_fields():
    (stmt,) = body("x = 0x1Fu;")
    lit = stmt.expr.value
    assert (lit.value, lit.suffix, lit.text, lit.hex_or_octal) == (31, "u", "0x1Fu", True)


def test_decimal_literal_is_not_hex_or_octal():
    (stmt,) = body("x = 10;")
    assert stmt.expr.value.hex_or_octal is False


def test_octal_literal_is_flagged():
    (stmt,) = body("x = 017;")
    assert (stmt.expr.value.value, stmt.expr.value.hex_or_octal) == (15, True)


def test_float_literal_fields():
    (stmt,) = body("x = 1.5h;")
    lit = stmt.expr.value
    assert isinstance(lit, ast.FloatLiteral)
    assert (lit.value, lit.suffix, lit.text) == (1.5, "h", "1.5h")


def test_char_literal_is_int_literal():
    (stmt,) = body("x = 'A';")
    lit = stmt.expr.value
    assert isinstance(lit, ast.IntLiteral) and lit.value == 65


def test_bool_literals():
    assert expr("x = true || false") == "(= x (|| true false))"


def test_nullptr_is_a_literal_in_comparisons_and_conditionals():
    assert expr("p = c ? nullptr : q") == "(= p (? c nullptr q))"
    assert expr("b = p != nullptr") == "(= b (!= p nullptr))"


def test_nullptr_is_a_reserved_word_not_a_declarable_name():
    with pytest.raises(CompileError, match="'nullptr' is a reserved word"):
        body("int nullptr = 0;")


# --- Casts, constructors and parentheses -------------------------------------------------------


def test_parenthesised_name_is_not_a_cast():
    assert expr("(a) - b") == "(- a b)"


def test_parenthesised_type_is_a_cast_even_before_minus():
    assert expr("(int) - b") == "(c-cast int (- b))"


def test_cast_of_parenthesised_expression():
    assert expr("(uint)(a + b)") == "(c-cast uint (+ a b))"


def test_cast_to_address_space_pointer():
    assert expr("(device float4*)p") == "(c-cast device float4* p)"
    assert expr("(threadgroup half*)shmem") == "(c-cast threadgroup half* shmem)"


def test_cast_to_const_pointer():
    assert expr("(const device float*)p") == "(c-cast const device float* p)"


def test_cast_to_typedef_name():
    assert expr("(real)x", header="typedef float real;") == "(c-cast real x)"


def test_functional_cast_inside_parentheses_is_not_a_c_cast():
    assert expr("(float(x) + 1)") == "(+ (construct float x) 1)"


def test_named_casts():
    assert expr("static_cast<int>(x)") == "(static_cast-cast int x)"
    assert expr("reinterpret_cast<device float4*>(p)") == (
        "(reinterpret_cast-cast device float4* p)")
    assert expr("as_type<uint>(f)") == "(as_type-cast uint f)"


def test_functional_casts_and_constructors():
    assert expr("float4(1, 2, 3, 4)") == "(construct float4 1 2 3 4)"
    assert expr("uint(x)") == "(construct uint x)"
    assert expr("unsigned(x)") == "(construct uint x)"


def test_brace_construction():
    assert expr("float2{a, b}") == "(construct float2 a b)"


def test_template_type_construction():
    assert expr("vec<float, 4>(0)") == "(construct vec<float, 4> 0)"


def test_template_parameter_construction():
    (func,) = parse_source("template <typename T> T f(T x) { return T(1) + x; }")[0].items
    assert show(func.body.items[0].value) == "(+ (construct T 1) x)"


def test_metal_qualified_type_construction():
    assert expr("metal::float2(1)") == "(construct float2 1)"


# --- Names and templates -----------------------------------------------------------------------


def test_qualified_names_drop_metal():
    assert expr("mem_flags::mem_threadgroup") == "mem_flags::mem_threadgroup"
    assert expr("metal::fast::exp(x)") == "(call fast::exp x)"
    assert expr("metal::precise::sqrt(x)") == "(call precise::sqrt x)"
    assert expr("metal::max(a, b)") == "(call max a b)"


def test_qualified_name_fields():
    (stmt,) = body("metal::mem_flags::mem_device;")
    assert (stmt.expr.name, stmt.expr.qualifier) == ("mem_device", "mem_flags")


def test_builtin_template_call():
    assert expr("max<int>(a, b)") == "(call max<int> a b)"


def test_user_template_call_with_value_argument():
    header = "template <typename T, int N> T g(T x) { return x; }"
    assert expr("g<float, 4>(x)", header) == "(call g<float, 4> x)"


def test_unknown_name_followed_by_less_than_is_a_comparison():
    assert expr("a < b > c") == "(> (< a b) c)"


def test_variable_shadows_builtin_template():
    (_, stmt) = body("int max = 3; y = max < 4;")
    assert show(stmt.expr) == "(= y (< max 4))"


def test_numeric_limits_member_call():
    assert expr("numeric_limits<float>::max()") == "(call numeric_limits::max<float>)"
    (stmt,) = body("metal::numeric_limits<half>::infinity();")
    name = stmt.expr.func
    assert (name.name, name.qualifier, show(name.template_args[0])) == (
        "infinity", "numeric_limits", "half")


def test_right_shift_token_closes_two_template_lists():
    (d,) = decl("vec<vec<float, 2>> m;")
    assert show(d.type) == "vec<vec<float, 2>>"


def test_template_argument_expression_in_parentheses_may_use_greater():
    assert expr("g<(2 > 1)>(x)", "template <bool B> int g(int x);") == "(call g<(> 2 1)> x)"


def test_template_argument_with_arithmetic():
    header = "template <int N> int g(int x);"
    assert expr("g<N + 1>(x)", "constant int N = 1;\n" + header) == "(call g<(+ N 1)> x)"


def test_right_shift_token_closes_a_cast_type():
    assert expr("static_cast<vec<int, 2>>(x)") == "(static_cast-cast vec<int, 2> x)"


def test_explicit_instantiation_with_value_arguments():
    unit, _ = parse_source(
        "template <typename T, int N, bool B> [[kernel]] void k(device T* o [[buffer(0)]]) {}\n"
        'template [[host_name("k_1")]] [[kernel]] decltype(k<float, -3, 1>) k<float, -3, 1>;'
    )
    assert [show(a) for a in unit.items[1].template_args] == ["float", "(- 3)", "1"]


def test_shift_still_works_after_template_lists():
    assert expr("x = static_cast<int>(a) >> 2") == "(= x (>> (static_cast-cast int a) 2))"


# --- Declarations and types --------------------------------------------------------------------


def test_several_declarators():
    decls = decl("int i = 0, j = 1, k[2];")
    assert [(d.name, show(d.type), show(d.init)) for d in decls] == [
        ("i", "int", "0"), ("j", "int", "1"), ("k", "int[2]", "_")]


def test_declarators_do_not_share_type_nodes():
    first, second = decl("int i, j;")
    assert first.type is not second.type


def test_multidimensional_array_outer_dimension_first():
    (d,) = decl("threadgroup float a[4][8];")
    assert isinstance(d.type, ast.ArrayType) and show(d.type.size) == "4"
    assert show(d.type.element) == "threadgroup float[8]"


def test_unsized_array_with_initializer_list():
    (d,) = decl("float a[] = {1, 2, {3}};")
    assert (show(d.type), show(d.init)) == ("float[]", "{1, 2, {3}}")


def test_array_of_pointers():
    (d,) = decl("device float* ptrs[2];")
    assert show(d.type) == "device float*[2]"


def test_const_on_either_side_of_the_type_name():
    assert show(decl("const device float* p;")[0].type) == "const device float*"
    assert show(decl("device const float* p;")[0].type) == "const device float*"
    assert show(decl("device float const* p;")[0].type) == "const device float*"


def test_const_pointer():
    (d,) = decl("device float* const p = q;")
    assert isinstance(d.type, ast.PointerType) and d.type.const
    assert show(d.type) == "device float* const"


def test_volatile_is_ignored():
    assert show(decl("volatile int x;")[0].type) == "int"


def test_reference_declaration():
    assert show(decl("thread float& r = x;")[0].type) == "thread float&"


def test_multi_word_integer_types_are_normalised():
    assert show(decl("unsigned int a;")[0].type) == "uint"
    assert show(decl("unsigned a;")[0].type) == "uint"
    assert show(decl("signed char a;")[0].type) == "char"
    assert show(decl("unsigned long int a;")[0].type) == "ulong"
    assert show(decl("short int a;")[0].type) == "short"


@pytest.mark.parametrize("text", ["long long a;", "unsigned long long a;", "long long int a;"])
def test_long_long_is_not_a_metal_type(text):
    with pytest.raises(CompileError, match="'long long' is not a Metal type"):
        decl(text)


def test_metal_prefixed_and_template_types():
    assert show(decl("metal::float4 v;")[0].type) == "float4"
    assert show(decl("vec<half, 3> v;")[0].type) == "vec<half, 3>"
    assert show(decl("simdgroup_matrix<float, 8, 8> m;")[0].type) == (
        "simdgroup_matrix<float, 8, 8>")
    assert show(decl("simdgroup_float8x8 m;")[0].type) == "simdgroup_float8x8"


def test_auto_declaration():
    assert show(decl("auto x = 1;")[0].type) == "auto"


def test_constexpr_and_static_flags():
    (d,) = decl("constexpr static int N = 4;")
    assert (d.constexpr, d.static) == (True, True)


def test_brace_and_direct_initialisation():
    (d,) = decl("float4 v(1.0f);")
    assert show(d.init) == "(construct float4 1.0f)"
    (d,) = decl("int x{3};")
    assert show(d.init) == "{3}"


def test_type_name_statement_start_with_paren_is_an_expression():
    (stmt,) = body("float4(1).x;")
    assert isinstance(stmt, ast.ExprStmt)


def test_typedef_and_using_inside_a_body():
    alias, using, stmt = body("typedef float real; using namespace metal; real x = 1;")
    assert isinstance(alias, ast.TypeAlias) and isinstance(using, ast.UsingNamespace)
    assert show(stmt.decls[0].type) == "real"


# --- File-scope declarations -------------------------------------------------------------------


def test_program_scope_variables():
    unit, _ = parse_source(
        "constant float k[3] = {1, 2, 3};\n"
        "constexpr constant int N = 4;\n"
        "constant constexpr static float x = 1.0f;\n"
    )
    k, n, x = (item.decls[0] for item in unit.items)
    assert (show(k.type), show(k.init)) == ("constant float[3]", "{1, 2, 3}")
    assert (n.constexpr, show(n.type)) == (True, "constant int")
    assert (x.constexpr, x.static, show(x.type)) == (True, True, "constant float")


def test_aliases_and_using_namespace():
    unit, _ = parse_source(
        "using namespace metal;\n"
        "typedef vec<float, 4> f4;\n"
        "using real = half;\n"
        "template <typename T> using V2 = vec<T, 2>;\n"
        "V2<real> f(f4 a);\n"
    )
    using, f4, real, v2, func = unit.items
    assert using.name == "metal"
    assert (f4.name, show(f4.type)) == ("f4", "vec<float, 4>")
    assert (real.name, show(real.type)) == ("real", "half")
    assert (v2.name, show(v2.type), [p.name for p in v2.template_params]) == (
        "V2", "vec<T, 2>", ["T"])
    assert show(func.return_type) == "V2<real>" and func.body is None


def test_template_parameters():
    unit, _ = parse_source(
        "template <typename T, class U, int N, bool B = false, typename D = float>\n"
        "inline T f(U x) { return x; }\n"
    )
    params = unit.items[0].template_params
    assert [(p.name, show(p.kind) if p.kind else None, show(p.default) if p.default else None)
            for p in params] == [
        ("T", None, None), ("U", None, None), ("N", "int", None), ("B", "bool", "false"),
        ("D", None, "float")]


def test_template_parameter_scope_ends_with_the_function():
    with pytest.raises(CompileError, match="unknown type name 'T'"):
        parse_source("template <typename T> T f(T x) { return x; }\nT g();")


def test_function_specifiers_and_kernel_keyword():
    unit, _ = parse_source(
        "static inline constexpr int one() { return 1; }\n"
        "inline __attribute__((always_inline)) int two() { return 2; }\n"
        "kernel void k(device int* p [[buffer(0)]]) { p[0] = one(); }\n"
        "METAL_FUNC float three(void) { return 3; }\n"
    )
    one, two, k, three = unit.items
    assert (one.name, two.name, three.name, three.params) == ("one", "two", "three", [])
    assert [a.name for a in k.attributes] == ["kernel"]


def test_pointer_returning_function():
    (func,) = parse_source("device float* at(device float* p, int i) { return p + i; }")[0].items
    assert show(func.return_type) == "device float*"


def test_static_assert_and_empty_declarations():
    unit, _ = parse_source('; static_assert(sizeof(int) == 4, "int is " "32 bits");;')
    (item,) = unit.items
    assert isinstance(item, ast.StaticAssert) and item.message == "int is 32 bits"
    assert show(item.cond) == "(== (sizeof int) 4)"


def test_parameter_defaults_and_unnamed_parameters():
    (func,) = parse_source("int f(int, float y = 1.0f);")[0].items
    assert [(p.name, show(p.default) if p.default else None) for p in func.params] == [
        (None, None), ("y", "1.0f")]


def test_full_mlx_wrapper():
    text = (
        "inline float twice(float x) { return 2.0f * x; }\n"
        "template <typename T>\n"
        "[[kernel]] void custom_kernel_axpb__float_float_float_float(\n"
        "  const device float* a [[buffer(0)]],\n"
        "  const constant int* a_shape [[buffer(1)]],\n"
        "  const constant float& s [[buffer(2)]],\n"
        "  device atomic<float>* out [[buffer(3)]],\n"
        "  uint3 thread_position_in_grid [[thread_position_in_grid]]) {\n"
        "    uint i = thread_position_in_grid.x;\n"
        "    T v = static_cast<T>(a[i]) * s;\n"
        "    atomic_fetch_add_explicit(&out[i], twice(v), memory_order_relaxed);\n"
        "}\n"
        "\n"
        'template [[host_name("custom_kernel_axpb__float_float_float_float")]] [[kernel]] '
        "decltype(custom_kernel_axpb__float_float_float_float<float>) "
        "custom_kernel_axpb__float_float_float_float<float>;\n"
    )
    unit, _ = parse_source(text)
    twice, kernel, inst = unit.items
    assert twice.name == "twice" and twice.template_params is None
    assert [p.name for p in kernel.template_params] == ["T"]
    assert [a.name for a in kernel.attributes] == ["kernel"]
    assert [(p.name, show(p.type), [(a.name, [show(x) for x in a.args]) for a in p.attributes])
            for p in kernel.params] == [
        ("a", "const device float*", [("buffer", ["0"])]),
        ("a_shape", "const constant int*", [("buffer", ["1"])]),
        ("s", "const constant float&", [("buffer", ["2"])]),
        ("out", "device atomic<float>*", [("buffer", ["3"])]),
        ("thread_position_in_grid", "uint3", [("thread_position_in_grid", [])]),
    ]
    assert [show(s.decls[0].init) for s in kernel.body.items[:2]] == [
        "(. thread_position_in_grid x)", "(* (static_cast-cast T ([] a i)) s)"]
    assert isinstance(inst, ast.ExplicitInstantiation)
    assert inst.name == "custom_kernel_axpb__float_float_float_float"
    assert [show(a) for a in inst.template_args] == ["float"]
    assert [(a.name, [show(x) for x in a.args]) for a in inst.attributes] == [
        ("host_name", ["'custom_kernel_axpb__float_float_float_float'"]), ("kernel", [])]


# --- Statements --------------------------------------------------------------------------------


def test_if_else_chain():
    (stmt,) = body("if (a) x = 1; else if (b) x = 2; else { x = 3; }")
    assert isinstance(stmt.otherwise, ast.If) and isinstance(stmt.otherwise.otherwise,
                                                              ast.Compound)


def test_dangling_else_binds_to_the_inner_if():
    (stmt,) = body("if (a) if (b) x = 1; else x = 2;")
    assert stmt.otherwise is None and stmt.then.otherwise is not None


def test_if_constexpr():
    (stmt,) = body("if constexpr (N > 2) { }")
    assert stmt.constexpr and show(stmt.cond) == "(> N 2)"


def test_for_with_declaration_and_comma_step():
    (stmt,) = body("for (int i = 0, j = 4; i < j; i++, j--) { }")
    assert [d.name for d in stmt.init.decls] == ["i", "j"]
    assert (show(stmt.cond), show(stmt.step)) == ("(< i j)", "(, (post++ i) (post-- j))")


def test_for_with_expression_init_and_empty_parts():
    (stmt,) = body("for (i = 0;;) break;")
    assert show(stmt.init.expr) == "(= i 0)" and stmt.cond is None and stmt.step is None
    (stmt,) = body("for (;;) ;")
    assert stmt.init is None and isinstance(stmt.body, ast.Empty)


def test_while_and_do_while():
    loop, do = body("while (i < n) i++; do { i--; } while (i > 0);")
    assert isinstance(loop, ast.While) and show(loop.cond) == "(< i n)"
    assert isinstance(do, ast.DoWhile) and show(do.cond) == "(> i 0)"


def test_switch_case_labels_are_body_items():
    (stmt,) = body("switch (k) { case 0: case 1 + 1: x = 1; break; default: x = 2; }")
    items = stmt.body.items
    assert [type(i).__name__ for i in items] == [
        "CaseLabel", "CaseLabel", "ExprStmt", "Break", "CaseLabel", "ExprStmt"]
    assert [show(i.value) for i in items if isinstance(i, ast.CaseLabel)] == ["0", "(+ 1 1)", "_"]


def test_jumps_and_empty_statement():
    loop, ret, empty = body("while (1) { continue; } return; ;")
    assert isinstance(loop.body.items[0], ast.Continue)
    assert isinstance(ret, ast.Return) and ret.value is None
    assert isinstance(empty, ast.Empty)


def test_static_assert_statement_without_message():
    (stmt,) = body("static_assert(N == 4);")
    assert isinstance(stmt, ast.StaticAssert) and stmt.message == ""


def test_unknown_attributes_before_statements_are_skipped():
    (stmt,) = body("[[unroll]] for (;;) break;")
    assert isinstance(stmt, ast.For)


def test_pragma_is_removed_before_parsing():
    (stmt,) = body("#pragma unroll\nfor (;;) break;")
    assert isinstance(stmt, ast.For)


# --- Coordinates -------------------------------------------------------------------------------


def test_coords_are_in_the_user_source_section():
    text, sections = _kernel("uint i = thread_position_in_grid.x;\n  out[i] = inp[i] * 2;")
    unit, _ = parse_source(text, sections)
    decl_stmt, assign = unit.items[0].body.items
    assert decl_stmt.coord == Coord("source", 1, 1)
    assert decl_stmt.decls[0].coord == Coord("source", 1, 6)  # at the declared name
    assert assign.expr.coord == Coord("source", 2, 3)
    assert assign.expr.value.right.coord == Coord("source", 2, 21)


def test_coords_in_header_and_generated_sections():
    text, sections = _kernel("out[0] = g(1);", header="float g(float x) { return x; }\n")
    unit, _ = parse_source(text, sections)
    g, kernel = unit.items
    assert g.coord == Coord("header", 1, 1)
    assert g.body.items[0].coord == Coord("header", 1, 20)
    assert kernel.params[0].coord.section == "generated"


# --- Errors ------------------------------------------------------------------------------------


def where(err: CompileError) -> tuple[str, int, int]:
    return err.diagnostic.section, err.line, err.column


def test_error_missing_semicolon_points_after_the_expression():
    err = body_error("out[0] = 1\nout[1] = 2;")
    assert err.diagnostic.message == "expected ';' after expression"
    assert where(err) == ("source", 1, 11)
    assert err.diagnostic.hint


def test_error_missing_semicolon_on_the_last_line_stays_in_the_source():
    err = body_error("out[0] = 1")
    assert where(err) == ("source", 1, 11)


def test_error_unknown_type_name_suggests_a_fix():
    err = body_error("  flaot x = 1;")
    assert err.diagnostic.message == "unknown type name 'flaot'"
    assert err.diagnostic.hint == "did you mean 'float'?"
    assert where(err) == ("source", 1, 3)


def test_error_unknown_type_name_in_header_parameter():
    err = error(*_kernel("", header="float f(device flaot* p) { return 0; }\n"))
    assert err.diagnostic.message == "unknown type name 'flaot'"
    assert where(err) == ("header", 1, 16)


def test_error_missing_close_paren_in_condition():
    err = body_error("if (inp[0] < 1 {\n}")
    assert err.diagnostic.message == "expected ')'"
    assert where(err) == ("source", 1, 16)


def test_error_expected_expression():
    err = body_error("out[0] = ;")
    assert err.diagnostic.message == "expected expression"
    assert where(err) == ("source", 1, 10)


def test_error_unclosed_brace_points_at_the_users_brace():
    err = body_error("if (inp[0] > 0) {\n  out[0] = 1;\n")
    assert err.diagnostic.message == "expected '}' to match this '{'"
    assert where(err) == ("source", 1, 17)


def test_error_unclosed_brace_at_end_of_input():
    err = error("void f() {\n  if (x) {\n    y = 1;\n")
    assert err.diagnostic.message == "expected '}' to match this '{'"
    assert (err.line, err.column) == (2, 10)


def test_error_stray_brace_in_kernel_body_is_found():
    err = body_error("if (inp[0] > 0) out[0] = 1; }\nout[1] = 2;")
    assert err.diagnostic.message == "extraneous closing brace ('}')"
    assert where(err) == ("source", 1, 29)


def test_error_at_generated_code_points_after_the_users_last_token():
    err = body_error("out[0] = 1;\nreturn")
    assert err.diagnostic.message == "expected expression"
    assert where(err) == ("source", 2, 7)


def test_error_unclosed_brace_in_templated_kernel():
    text = "template <typename T>\n[[kernel]] void k(device T* out [[buffer(0)]]) {\n"
    source = "for (int i = 0; i < 4; i++) {\n  out[i] = 0;"
    instantiation = 'template [[host_name("k")]] [[kernel]] decltype(k<float>) k<float>;'
    full = text + source + "\n}\n\n" + instantiation + "\n"
    err = error(full, [("source", len(text), len(text) + len(source))])
    assert err.diagnostic.message == "expected '}' to match this '{'"
    assert where(err) == ("source", 1, 29)


def test_error_extraneous_closing_brace():
    err = error("void f() { }\n}")
    assert err.diagnostic.message == "extraneous closing brace ('}')"
    assert (err.line, err.column) == (2, 1)


def test_error_case_outside_switch():
    err = body_error("case 1: out[0] = 1;")
    assert err.diagnostic.message == "'case' statement not in switch statement"
    assert where(err) == ("source", 1, 1)


def test_error_case_label_in_a_nested_block_of_a_switch():
    err = body_error("switch (1) { case 0: { case 1: break; } }")
    assert "nested block" in err.diagnostic.message
    assert where(err) == ("source", 1, 24)


def test_error_conflicting_address_spaces():
    err = body_error("device threadgroup float* p;")
    assert err.diagnostic.message == "conflicting address spaces 'device' and 'threadgroup'"
    assert where(err) == ("source", 1, 8)


def test_error_else_without_if():
    err = body_error("out[0] = 1;\nelse out[0] = 2;")
    assert err.diagnostic.message == "'else' without a matching 'if'"
    assert where(err) == ("source", 2, 1)


def test_error_double_is_not_supported():
    err = body_error("double d = 1;")
    assert err.diagnostic.message == "'double' is not supported in Metal"
    assert err.diagnostic.hint == "use 'float'"


def test_error_unclosed_template_argument_list():
    err = body_error("int i = static_cast<int(inp[0]);")
    assert err.diagnostic.message == "expected '>' to close the template argument list"
    assert where(err) == ("source", 1, 24)


def test_error_missing_semicolon_after_return():
    err = error("int f() {\n  return 1\n}")
    assert err.diagnostic.message == "expected ';' after return statement"
    assert (err.line, err.column) == (2, 11)


def test_error_missing_semicolon_in_for_declaration():
    err = body_error("for (int i = 0 i < 4; i++) {}")
    assert err.diagnostic.message == "expected ';' at end of declaration"
    assert where(err) == ("source", 1, 15)


def test_error_cannot_combine_type_specifiers():
    err = body_error("unsigned float x;")
    assert err.diagnostic.message == "cannot combine with previous 'unsigned' declaration specifier"
    assert where(err) == ("source", 1, 10)


def test_error_missing_close_bracket():
    err = body_error("out[0 = 1;")
    assert err.diagnostic.message == "expected ']'"
    assert where(err) == ("source", 1, 10)


def test_error_missing_close_paren_in_call():
    err = body_error("out[0] = max(inp[0], inp[1];")
    assert err.diagnostic.message == "expected ')'"
    assert where(err) == ("source", 1, 28)


def test_error_declaration_without_type():
    err = body_error("const x = 3;")
    assert err.diagnostic.message == "expected a type before 'x'"
    assert where(err) == ("source", 1, 7)


def test_error_statement_at_file_scope():
    err = error("x = 1;")
    assert err.diagnostic.message == "expected a declaration"


def test_error_template_needs_arguments():
    err = body_error("vec v;")
    assert err.diagnostic.message == "use of template 'vec' requires template arguments"


def test_member_function_call_parses_as_method_call():
    stmt = body("m.thread_elements()[1] = 2.0f;")[0]
    call = stmt.expr.target.base
    assert isinstance(call, ast.MethodCall)
    assert (call.name, call.args, call.arrow) == ("thread_elements", [], False)


def test_error_missing_semicolon_after_do_while():
    err = body_error("do { } while (false)\n")
    assert err.diagnostic.message == "expected ';' after do/while statement"
    assert where(err) == ("source", 1, 21)


def test_error_excerpt_shows_the_users_line():
    err = body_error("  flaot x = 1;")
    assert "flaot x = 1;" in err.diagnostic.excerpt and "^~~~~" in err.diagnostic.excerpt


def test_error_deep_nesting_is_a_compile_error():
    err = body_error("out[0] = " + "(" * 3000 + "1" + ")" * 3000 + ";")
    assert err.diagnostic.message == "expression too deeply nested"


# --- Robustness --------------------------------------------------------------------------------

KERNEL = """
template <typename T, int N = 4>
inline T scale(T x) { return x * T(N); }
constant float weights[3] = {0.25f, 0.5f, 0.25f};
[[kernel]] void k(const device float* inp [[buffer(0)]], device float* out [[buffer(1)]],
                  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
  uint i = thread_position_in_grid.x;
  threadgroup float buf[16][2];
  float acc = 0.0f;
  for (int j = 0; j < 3; ++j) { acc += weights[j] * inp[i + j]; }
  switch (i % 2) { case 0: acc = -acc; break; default: break; }
  out[i] = i > 0 ? scale<float, 2>(acc) : (float)static_cast<int>(acc) >> 1;
  vec<vec<float, 2>, 2> m; buf[i][0] = float2{acc, 1}.x;
  threadgroup_barrier(mem_flags::mem_threadgroup);
}
"""
KERNEL_TOKENS = [t.text for t in preprocess(KERNEL, SourceMap(KERNEL))[:-1]]
VOCABULARY = sorted(set(KERNEL_TOKENS) | {
    "(", ")", "{", "}", "[", "]", "<", ">", ">>", "::", ";", ",", "?", ":", "=", "template",
    "typename", "using", "typedef", "struct", "if", "else", "do", "while", "case", "default",
    "sizeof", "decltype", "const", "auto", "metal", "numeric_limits", "as_type", '"s"', "'c'",
    "1.5h", "0x10", "->", ".", "&", "*", "++", "static_assert", "namespace", "return",
})


@contextmanager
def time_limit(seconds: float):
    """Turns a hang into a failure rather than a stuck test run."""
    def expire(*_):
        raise TimeoutError("the parser did not finish")
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def parses_or_reports(text: str) -> None:
    with time_limit(5), suppress(CompileError):
        parse_source(text)


def test_reference_kernel_parses():
    unit, _ = parse_source(KERNEL)
    assert [type(i).__name__ for i in unit.items] == ["FunctionDef", "DeclStmt", "FunctionDef"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(VOCABULARY), max_size=60))
def test_fuzz_token_soup_only_raises_compile_error(tokens):
    parses_or_reports(" ".join(tokens))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["delete", "duplicate", "swap"]),
                          st.integers(0, len(KERNEL_TOKENS) - 1)), min_size=1, max_size=4))
def test_fuzz_mutated_kernel_only_raises_compile_error(edits):
    tokens = list(KERNEL_TOKENS)
    for op, index in edits:
        index %= len(tokens)
        if op == "delete":
            del tokens[index]
        elif op == "duplicate":
            tokens.insert(index, tokens[index])
        else:
            j = (index + 1) % len(tokens)
            tokens[index], tokens[j] = tokens[j], tokens[index]
    parses_or_reports(" ".join(tokens))


def test_parse_accepts_tokens_directly():
    text = "int f() { return 1; }"
    source_map = SourceMap(text)
    unit = parse(preprocess(text, source_map), source_map)
    assert unit.items[0].name == "f"


# --- Going on from a parsed prefix (MLX's prelude, parsed once per process) --------------------

NAMES_PREFIX = ("typedef float real;\ntemplate <typename T> T twice(T x) { return x + x; }\n"
                "template <typename T> struct Box { T v; };\n"
                "namespace ns { struct P { real a; }; }\n")
PRELUDE_SECTION = [("prelude", 0, len(NAMES_PREFIX))]
PREPROCESSED = preprocess_prefix(NAMES_PREFIX, SourceMap(NAMES_PREFIX, PRELUDE_SECTION))
PARSED = parse_prefix(list(PREPROCESSED.tokens), SourceMap(NAMES_PREFIX, PRELUDE_SECTION))


def after_prefix(suffix: str) -> tuple[list, SourceMap]:
    """The preprocessed tokens of `NAMES_PREFIX + suffix`, and its source map."""
    text = NAMES_PREFIX + suffix
    source_map = SourceMap(text, [*PRELUDE_SECTION, ("source", len(NAMES_PREFIX), len(text))])
    return preprocess(text, source_map, after=PREPROCESSED), source_map


def test_parsing_after_a_prefix_gives_the_unit_of_the_whole_text():
    tokens, source_map = after_prefix(
        "kernel void k(device real* o) { ns::P p; Box<real> b; real * q = o;\n"
        "  p.a = twice<real>(1.0f); *q = p.a + b.v; }\n")
    whole, after = parse(tokens, source_map), parse(tokens, source_map, after=PARSED)
    assert repr(after) == repr(whole)
    assert show(after.items[-1].body.items[2].decls[0].type) == "real*"  # a declaration


def test_names_declared_after_a_prefix_do_not_leak_into_the_next_unit():
    before = repr(PARSED)
    first = parse(*after_prefix("typedef int Foo;\ntemplate <typename T> struct Pair { T a; };\n"
                                  "namespace ns { typedef int Q; }\n"), after=PARSED)
    assert len(first.items) == len(PARSED.unit.items) + 3
    for suffix, message in [("void f() { Foo x = 1; }\n", "unknown type name 'Foo'"),
                            ("void f() { Pair<int> p; }\n", "expected '\\('"),
                            ("void f() { ns::Q q; }\n", "no member named 'Q' in namespace")]:
        with pytest.raises(CompileError, match=message):
            parse(*after_prefix(suffix), after=PARSED)
    assert repr(PARSED) == before


# --- Lambdas and member specialisations ----------------------------------------------------------


def test_a_lambda_keeps_its_capture_default_captures_and_mutable():
    (d,) = decl("auto f = [=, &a, this](int x) mutable { return x; };")
    lam = d.init
    assert isinstance(lam, ast.Lambda)
    assert (lam.default, lam.captures, lam.mutable) == ("=", [("a", True), ("this", True)], True)
    assert [p.name for p in lam.params] == ["x"] and lam.template_params is None
    assert show(lam.return_type) == "auto"


def test_a_generic_lambda_invents_a_template_parameter_per_auto():
    (d,) = decl("auto f = [&](auto a, thread auto& b, const auto c, int d) { };")
    lam = d.init
    assert [p.name for p in lam.template_params] == ["auto:1", "auto:2", "auto:3"]
    assert [show(p.type) for p in lam.params] == ["auto:1", "thread auto:2&",
                                                  "const auto:3", "int"]


def test_a_lambda_with_a_trailing_return_type():
    (d,) = decl("auto f = [k]() -> float { return k; };")
    assert (d.init.default, d.init.captures, show(d.init.return_type)) == (
        None, [("k", False)], "float")


def test_a_lambda_passed_as_an_argument_is_parsed_inside_the_call():
    (stmt,) = body("g<0, 2>([&](auto i) { s += i; });",
                   "template <int A, int B, typename F> void g(F f);")
    call = stmt.expr
    assert show(call.func) == "g<0, 2>" and isinstance(call.args[0], ast.Lambda)
    assert show(call.args[0].body.items[0].expr) == "(+= s i)"


def test_an_init_capture_is_refused_by_name():
    assert "init-captures" in str(body_error("auto f = [x = 1]() { return x; };"))


def test_an_earlier_member_template_takes_expression_arguments_in_a_member_function():
    header = ("struct S { template <int R, int C> int at() const thread { return R + C; }\n"
              "  int f(int r) const thread { return at<1, 2>() + (r < 3); } };\n")
    unit, _ = parse_source(header)
    (f,) = [fn for fn in unit.items[0].methods if fn.name == "f"]
    ret = f.body.items[0].value
    assert show(ret.left) == "(call at<1, 2>)" and show(ret.right) == "(< r 3)"


def test_a_class_template_members_specialisation_names_its_owner_and_arguments():
    unit, _ = parse_source("template <typename T> struct S { int f() thread; };\n"
                           "template <> int S<float>::f() thread { return 1; }\n"
                           "template <> template <> int S<int>::g<2>() thread { return 2; }\n")
    f, g = unit.items[1], unit.items[2]
    assert (f.owner, [show(a) for a in f.owner_args], f.template_params) == ("S", ["float"],
                                                                            None)
    assert (g.owner, [show(a) for a in g.owner_args], g.template_params,
            [show(a) for a in g.specialization_args]) == ("S", ["int"], [], ["2"])


def test_a_function_pointer_type_in_an_alias_and_a_template_parameter():
    unit, _ = parse_source("template <typename T> using F = void (*)(thread T*, int);\n"
                           "template <int N, void (*g)(int)> int h();\n")
    alias, fn = unit.items
    assert isinstance(alias.type, ast.FunctionPointerType)
    assert show(alias.type.result) == "void"
    assert [show(p) for p in alias.type.params] == ["thread T*", "int"]
    g = fn.template_params[1]
    assert g.name == "g" and isinstance(g.kind, ast.FunctionPointerType)


def test_metal4_tensor_types_are_named_as_not_modelled():
    err = error("using extents_t = metal::dextents<int32_t, 2>;\n")
    assert "no type named 'dextents' in namespace 'metal'" in str(err)
    assert "Metal 4's tensors and MetalPerformancePrimitives" in err.diagnostic.hint
    err = error("metal::flaot4 x;\n")
    assert "no type named 'flaot4' in namespace 'metal'" in str(err)
    assert err.diagnostic.hint == "did you mean 'metal::float4'?"
