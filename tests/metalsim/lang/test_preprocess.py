import shutil
import subprocess
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalsim.diagnostics import CompileError, SourceMap
from metalsim.lang.lexer import Token, scan
from metalsim.lang.preprocess import (
    MAX_EXPANDED_TOKENS,
    METAL_VERSION,
    preprocess,
    preprocess_prefix,
)

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc's preprocessor")


def run(text: str, predefined: dict[str, str] | None = None) -> list[Token]:
    """The preprocessed tokens of `text` (a "source" section) without the final "eof"."""
    tokens = preprocess(text, SourceMap(text, [("source", 0, len(text))]), predefined)
    assert tokens[-1].kind == "eof"
    return tokens[:-1]


def texts(text: str, predefined: dict[str, str] | None = None) -> list[str]:
    return [t.text for t in run(text, predefined)]


def spelled(text: str) -> str:
    return " ".join(texts(text))


def pp_error(text: str) -> CompileError:
    with pytest.raises(CompileError) as info:
        run(text)
    return info.value


def gcc_tokens(text: str) -> list[str] | None:
    """What gcc's preprocessor makes of `text`, as token spellings; None if it rejects it."""
    result = subprocess.run(["gcc", "-E", "-P", "-x", "c", "-"], input=text,
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        return None
    return [t.text for t in scan(result.stdout, SourceMap(result.stdout))][:-1]


def our_tokens(text: str) -> list[str] | None:
    try:
        return texts(text)
    except CompileError:
        return None


# --- Object-like and function-like macros ------------------------------------------------------

def test_object_like_macro_expands():
    assert texts("#define TILE 16\nfloat a[TILE];") == ["float", "a", "[", "16", "]", ";"]


def test_empty_macro_expands_to_nothing():
    assert texts("#define NOTHING\na NOTHING b") == ["a", "b"]


def test_expansion_is_rescanned_for_more_macros():
    assert texts("#define A B + 1\n#define B 2\nA") == ["2", "+", "1"]


def test_macro_defined_later_expands_in_earlier_definition_at_use():
    assert texts("#define A B\n#define B 3\nA") == ["3"]


def test_function_like_macro_expands_arguments():
    assert spelled("#define MUL(a, b) ((a) * (b))\nMUL(x + 1, y)") == "( ( x + 1 ) * ( y ) )"


def test_function_like_macro_name_without_parens_is_left_alone():
    assert texts("#define F(x) x\nint F;") == ["int", "F", ";"]


def test_function_like_macro_arguments_may_span_lines():
    assert texts("#define F(a, b) a b\nF(1,\n  2)") == ["1", "2"]


def test_define_with_space_before_paren_is_object_like():
    assert spelled("#define F (x) x\nF(1)") == "( x ) x ( 1 )"


def test_nested_parentheses_protect_commas_in_arguments():
    assert spelled("#define FIRST(a, b) a\nFIRST((1, 2), 3)") == "( 1 , 2 )"


def test_empty_parameter_list_takes_no_arguments():
    assert texts("#define F() 7\nF()") == ["7"]


def test_single_parameter_accepts_an_empty_argument():
    assert texts("#define F(x) [x]\nF()") == ["[", "]"]


def test_arguments_are_expanded_before_substitution():
    assert spelled("#define N 4\n#define SQ(x) x*x\nSQ(N)") == "4 * 4"


def test_nested_invocations_expand():
    assert spelled("#define S(x) (x+1)\nS(S(0))") == "( ( 0 + 1 ) + 1 )"


def test_macro_is_not_reexpanded_inside_its_own_expansion():
    assert spelled("#define foo foo + 1\nfoo") == "foo + 1"


def test_mutually_recursive_macros_stop_expanding():
    assert spelled("#define A B\n#define B A\nA B") == "A B"


def test_function_like_macro_stays_painted_when_passed_back_as_argument():
    assert spelled("#define id(x) x\nid(id)(5)") == "id ( 5 )"


def test_expansion_may_consume_parens_from_the_following_text():
    assert spelled("#define f(a) a*g\n#define g(a) f(a)\nf(2)(9)") == "2 * 9 * g"


def test_undef_removes_macro():
    assert texts("#define X 1\nX\n#undef X\nX") == ["1", "X"]


def test_redefinition_takes_effect_from_its_line():
    assert texts("#define X 1\nX\n#define X 2\nX") == ["1", "2"]


def test_directive_between_macro_name_and_arguments_is_executed():
    assert spelled("#define F(x, y) [x|y]\nF(1,\n#define Q 7\nQ)") == "[ 1 | 7 ]"


# --- Variadic macros ---------------------------------------------------------------------------

def test_variadic_macro_substitutes_va_args_with_commas():
    assert spelled("#define CALL(f, ...) f(__VA_ARGS__)\nCALL(g, 1, 2)") == "g ( 1 , 2 )"


def test_variadic_macro_with_omitted_variadic_part():
    assert spelled("#define CALL(f, ...) f(__VA_ARGS__)\nCALL(g)") == "g ( )"


def test_variadic_only_macro():
    assert spelled("#define LIST(...) {__VA_ARGS__}\nLIST(a, b)") == "{ a , b }"


def test_gnu_comma_paste_drops_comma_before_empty_va_args():
    source = "#define E(fmt, ...) pr(fmt, ## __VA_ARGS__)\nE(a) E(a, b)"
    assert spelled(source) == "pr ( a ) pr ( a , b )"


def test_va_args_as_parameter_name_is_rejected():
    assert "__VA_ARGS__" in str(pp_error("#define F(__VA_ARGS__) 1"))


# --- Stringizing and pasting -------------------------------------------------------------------

def test_stringize_argument():
    token = run("#define STR(x) #x\nSTR(a + b)")[0]
    assert (token.kind, token.text, token.value) == ("string", '"a + b"', "a + b")


def test_stringize_collapses_whitespace_and_drops_comments():
    assert run("#define STR(x) #x\nSTR(  a   /* c */  +\n b  )")[0].text == '"a + b"'


def test_stringize_escapes_quotes_and_backslashes_of_literals():
    assert run('#define STR(x) #x\nSTR("a\\n" \'"\')')[0].text == '"\\"a\\\\n\\" \'\\"\'"'


def test_stringize_does_not_expand_the_argument():
    assert run("#define N 4\n#define STR(x) #x\nSTR(N)")[0].value == "N"


def test_stringize_through_helper_expands_the_argument():
    source = "#define N 4\n#define STR(x) #x\n#define XSTR(x) STR(x)\nXSTR(N)"
    assert run(source)[0].value == "4"


def test_stringize_of_empty_argument_is_empty_string():
    assert run("#define STR(x) #x\nSTR()")[0].text == '""'


def test_token_paste_forms_identifier():
    token = run("#define CAT(a, b) a ## b\nCAT(tile_, 2)")[0]
    assert (token.kind, token.text) == ("ident", "tile_2")


def test_token_paste_forms_number_with_value():
    token = run("#define F(n) n ## .5f\nF(1)")[0]
    assert (token.kind, token.text, token.value, token.suffix) == ("float", "1.5f", 1.5, "f")


def test_token_paste_forms_operator():
    assert texts("#define CAT(a, b) a ## b\nCAT(<, <=)") == ["<<="]


def test_pasted_operand_is_not_expanded_first():
    assert texts("#define N 4\n#define CAT(a, b) a ## b\nCAT(N, 1)") == ["N1"]


def test_paste_result_is_rescanned():
    assert texts("#define AB 9\n#define CAT(a, b) a ## b\nCAT(A, B)") == ["9"]


def test_paste_with_empty_argument_keeps_other_side():
    source = "#define CAT(a, b) [a ## b]\nCAT(, x) CAT(x, ) CAT(,)"
    assert spelled(source) == "[ x ] [ x ] [ ]"


def test_paste_in_object_like_macro():
    assert texts("#define XY 1\n#define P X ## Y\nP") == ["1"]


def test_invalid_paste_is_rejected_at_the_use():
    error = pp_error("#define CAT(a, b) a ## b\nx = CAT(+, -);")
    assert "pasting formed '+-', an invalid preprocessing token" in str(error)
    assert (error.line, error.column) == (2, 5)


# --- Offsets -----------------------------------------------------------------------------------

def test_plain_tokens_keep_their_offsets():
    text = "#define X 1\n  a + b"
    assert [t.offset for t in run(text)] == [text.index("a"), text.index("+"), text.index("b")]


def test_macro_tokens_carry_use_site_offset():
    text = "#define TWICE(x) ((x) * 2)\ny = TWICE(z);"
    site = text.index("TWICE(z)")
    offsets = {t.text: t.offset for t in run(text)}
    assert offsets["*"] == site and offsets["2"] == site


def test_argument_tokens_keep_their_own_offsets():
    text = "#define TWICE(x) ((x) * 2)\ny = TWICE(z);"
    z = next(t for t in run(text) if t.text == "z")
    assert z.offset == text.index("z)")


def test_nested_macro_tokens_carry_outermost_use_site():
    text = "#define A B\n#define B 1\n  A"
    assert run(text)[0].offset == text.rindex("A")


def test_predefined_macro_tokens_carry_use_site_offset():
    text = "x = __METAL_VERSION__;"
    assert run(text)[2].offset == 4


# --- Conditional compilation -------------------------------------------------------------------

def test_if_zero_skips_group():
    assert texts("a\n#if 0\nb\n#endif\nc") == ["a", "c"]


def test_if_one_keeps_group():
    assert texts("#if 1\nb\n#endif") == ["b"]


def test_else_branch_taken_when_if_is_false():
    assert texts("#if 0\na\n#else\nb\n#endif") == ["b"]


def test_else_branch_skipped_when_if_is_true():
    assert texts("#if 1\na\n#else\nb\n#endif") == ["a"]


def test_elif_chain_takes_first_true_branch():
    source = "#if 0\na\n#elif 0\nb\n#elif 1\nc\n#elif 1\nd\n#else\ne\n#endif"
    assert texts(source) == ["c"]


def test_elif_after_taken_branch_is_not_evaluated():
    assert texts("#if 1\na\n#elif 1/0\nb\n#endif") == ["a"]


def test_nested_conditionals_in_skipped_group_are_skipped():
    source = "#if 0\n#if 1\na\n#else\nb\n#endif\nc\n#else\nd\n#endif"
    assert texts(source) == ["d"]


def test_nested_conditionals_in_live_group():
    assert texts("#if 1\n#if 0\na\n#else\nb\n#endif\n#endif") == ["b"]


def test_ifdef_metal_version():
    source = "#ifdef __METAL_VERSION__\nmetal\n#else\nhost\n#endif"
    assert texts(source) == ["metal"]


def test_ifndef_undefined_name():
    assert texts("#ifndef NOPE\nyes\n#endif") == ["yes"]


def test_ifdef_sees_undef():
    assert texts("#define X\n#undef X\n#ifdef X\nyes\n#endif") == []


@pytest.mark.parametrize("test", ["defined X", "defined(X)", "defined ( X )", "!defined Y"])
def test_defined_operator_forms(test):
    assert texts(f"#define X\n#if {test}\nyes\n#endif") == ["yes"]


def test_defined_produced_by_macro_expansion_is_evaluated():
    assert texts("#define X\n#define HAS_X defined(X)\n#if HAS_X\nyes\n#endif") == ["yes"]


def test_unknown_identifier_in_if_is_zero():
    assert texts("#if UNKNOWN\na\n#else\nb\n#endif") == ["b"]


def test_true_is_one_in_if_as_in_cpp():
    assert texts("#if true && !false\nyes\n#endif") == ["yes"]


def test_if_expands_macros():
    assert texts("#define TILE 16\n#if TILE * 2 == 32\nyes\n#endif") == ["yes"]


def test_if_expands_function_like_macros():
    assert texts("#define MAX(a, b) ((a) > (b) ? (a) : (b))\n#if MAX(2, 5) == 5\nyes\n#endif") \
        == ["yes"]


def test_metal_version_comparison():
    assert texts("#if __METAL_VERSION__ >= 310\nnew\n#else\nold\n#endif") == ["new"]


@pytest.mark.parametrize(("expression", "taken"), [
    ("-1 > 0u", True),  # the signed side converts to unsigned
    ("-1 > 0", False),
    ("18446744073709551615 == -1", True),  # too big for signed, so unsigned
    ("0x7fffffffffffffff + 1 < 0", True),  # signed overflow wraps
    ("1 ? -1 : 0u", True),  # ?: takes the common type, unsigned
    ("-7 / 2 == -3 && -7 % 2 == -1", True),  # C division truncates toward zero
    ("1 << 63 < 0", True),
    ("-1 >> 1 == -1", True),  # arithmetic shift of signed values
    ("1 << -1 == 0", True),  # a negative count shifts the other way
    ("(2 || 0) == 1 && (3 && 4) == 1", True),
    ("'a' == 97 && '\\xff' < 0", True),  # plain char is signed
    ("~0u == 18446744073709551615u", True),
    ("(1, 0)", None),  # the comma operator is not accepted
])
def test_if_integer_semantics(expression, taken):
    source = f"#if {expression}\nyes\n#else\nno\n#endif"
    if taken is None:
        pp_error(source)
    else:
        assert texts(source) == (["yes"] if taken else ["no"])


def test_if_short_circuit_skips_division_by_zero():
    assert texts("#if 0 && 1 / 0\na\n#elif 1 || 1 % 0\nb\n#endif") == ["b"]


def test_if_division_by_zero_is_an_error():
    error = pp_error("#if 4 / (2 - 2)\n#endif")
    assert "division by zero" in str(error)
    assert (error.line, error.column) == (1, 7)


def test_if_without_expression_is_an_error():
    assert "#if with no expression" in str(pp_error("#if\n#endif"))


def test_if_missing_operand_points_past_the_line():
    error = pp_error("#if 1 +\n#endif")
    assert "expected value in expression" in str(error)
    assert (error.line, error.column) == (1, 8)


def test_if_with_float_is_an_error():
    assert "floating point literal" in str(pp_error("#if 1.5\n#endif"))


def test_if_with_missing_close_paren_is_an_error():
    assert "expected ')'" in str(pp_error("#if (1 + 2\n#endif"))


def test_if_with_two_values_in_a_row_is_an_error():
    assert "not a valid binary operator" in str(pp_error("#if 1 2\n#endif"))


def test_unterminated_if_reports_line():
    error = pp_error("a\n  #if 1\nb\n")
    assert "unterminated conditional directive" in str(error)
    assert (error.line, error.column) == (2, 3)


def test_unterminated_nested_ifdef_reports_innermost():
    error = pp_error("#if 1\n#ifdef X\n#endif\n#ifndef Y\n")
    assert error.line == 4


def test_endif_without_if_is_an_error():
    assert "#endif without #if" in str(pp_error("#endif"))


def test_else_after_else_is_an_error():
    assert "#else after #else" in str(pp_error("#if 1\n#else\n#else\n#endif"))


def test_elif_after_else_is_an_error():
    assert "#elif after #else" in str(pp_error("#if 1\n#else\n#elif 1\n#endif"))


def test_ifdef_without_name_is_an_error():
    assert "macro name missing" in str(pp_error("#ifdef\n#endif"))


def test_skipped_group_may_contain_malformed_tokens():
    assert texts("#if 0\ndon't @ 1f $\n#endif\nok") == ["ok"]


def test_skipped_group_ignores_unknown_directives_and_errors():
    assert texts("#if 0\n#line 4\n#error no\n#include \"x.h\"\n#endif\nok") == ["ok"]


def test_malformed_token_in_live_code_is_reported():
    error = pp_error("x = 1f;")
    assert "invalid suffix 'f' on integer constant" in str(error)


def test_malformed_token_in_unused_macro_body_is_not_reported():
    assert texts("#define BAD @\nok") == ["ok"]


def test_malformed_token_from_macro_reported_at_use():
    error = pp_error("#define BAD @\n\n  BAD")
    assert "unexpected character '@'" in str(error)
    assert (error.line, error.column) == (3, 3)


# --- Other directives --------------------------------------------------------------------------

def test_null_directive_is_allowed():
    assert texts("#\na") == ["a"]


def test_hash_not_at_line_start_is_not_a_directive():
    assert texts("a # define") == ["a", "#", "define"]


def test_directive_may_follow_whitespace_and_comments():
    assert texts("  /* c */ # define X 1\nX") == ["1"]


def test_directive_continued_over_lines():
    assert texts("#define X 1 + \\\n  2\nX") == ["1", "+", "2"]


def test_pragma_lines_are_dropped():
    source = "#pragma unroll\nfor\n#pragma METAL fp math_mode(safe)\n#pragma clang loop unroll(4)"
    assert texts(source) == ["for"]


def test_pragma_operator_is_removed():
    assert texts('_Pragma("unroll") for') == ["for"]


def test_pragma_operator_from_macro_is_removed():
    assert texts('#define UNROLL _Pragma("clang loop unroll(full)")\nUNROLL for') == ["for"]


def test_malformed_pragma_operator_is_an_error():
    assert "_Pragma takes a parenthesized string literal" in str(pp_error("_Pragma(unroll)"))


def test_include_of_system_header_is_ignored():
    source = "#include <metal_stdlib>\n#include <metal_simdgroup>\nusing namespace metal;"
    assert texts(source) == ["using", "namespace", "metal", ";"]


def test_include_of_quoted_file_is_an_error():
    error = pp_error('#include "utils.h"')
    assert "'utils.h' file not found" in str(error)


def test_error_directive_reports_its_text():
    error = pp_error("\n#error  tile size must be  a power of two\n")
    assert error.diagnostic.message == "tile size must be a power of two"
    assert error.line == 2


def test_error_directive_with_apostrophe():
    assert "don't" in str(pp_error("#error don't"))


def test_warning_directive_is_accepted():
    assert texts("#warning slow path\na") == ["a"]


@pytest.mark.parametrize("directive", ["#line 10", "#foo", "#include_next <x>", "#ident \"x\""])
def test_unknown_directive_is_rejected(directive):
    assert "unknown preprocessing directive" in str(pp_error(directive))


def test_non_identifier_directive_is_rejected():
    assert "unknown preprocessing directive" in str(pp_error("# 42"))


# --- #define errors ----------------------------------------------------------------------------

def test_define_without_name_is_an_error():
    assert "macro name missing" in str(pp_error("#define"))


def test_define_of_non_identifier_is_an_error():
    assert "macro name must be an identifier" in str(pp_error("#define 1 2"))


def test_defined_cannot_be_a_macro_name():
    assert "'defined' cannot be used as a macro name" in str(pp_error("#define defined 1"))


def test_hash_must_precede_a_parameter():
    assert "'#' is not followed by a macro parameter" in str(pp_error("#define F(x) #y"))


@pytest.mark.parametrize("definition", ["#define F ## x", "#define F x ##", "#define F(a) a ##"])
def test_paste_at_either_end_is_an_error(definition):
    assert "'##' cannot appear at either end" in str(pp_error(definition))


def test_duplicate_parameter_is_an_error():
    assert "duplicate macro parameter name 'a'" in str(pp_error("#define F(a, a) a"))


@pytest.mark.parametrize("definition", ["#define F(a", "#define F(a,", "#define F(a b) a",
                                        "#define F(..., a) a"])
def test_malformed_parameter_list_is_an_error(definition):
    pp_error(definition)


def test_too_many_arguments_is_an_error():
    error = pp_error("#define F(a) a\n  F(1, 2)")
    assert "too many arguments" in str(error)
    assert (error.line, error.column) == (2, 3)


def test_too_few_arguments_is_an_error():
    assert "too few arguments" in str(pp_error("#define F(a, b) a\nF(1)"))


def test_unterminated_invocation_reports_macro_name():
    error = pp_error("#define F(a) a\nx = F(1;\n")
    assert "unterminated function-like macro invocation" in str(error)
    assert (error.line, error.column) == (2, 5)


# --- Predefined macros -------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "value"), [
    ("__METAL_VERSION__", str(METAL_VERSION)), ("__METAL__", "1"), ("__METAL_MACOS__", "1"),
    ("__HAVE_BFLOAT__", "1"),
])
def test_predefined_macros(name, value):
    assert texts(name) == [value]


def test_metal_version_is_msl_3_1():
    assert METAL_VERSION == 310


def test_metal_func_expands_to_inline():
    assert texts("METAL_FUNC float f();")[:2] == ["inline", "float"]


def test_mlx_pragma_unroll_expands_to_nothing():
    assert texts("MLX_MTL_PRAGMA_UNROLL\nfor") == ["for"]


def test_extra_predefined_macros():
    assert texts("#ifdef __FAST_MATH__\nfast\n#endif", {"__FAST_MATH__": "1"}) == ["fast"]


def test_fast_math_is_not_predefined_by_default():
    assert texts("#ifdef __FAST_MATH__\nfast\n#endif") == []


def test_predefined_macros_may_be_undefined():
    assert texts("#undef __METAL__\n__METAL__") == ["__METAL__"]


def test_output_ends_with_the_lexers_eof():
    text = "a\n"
    tokens = preprocess(text, SourceMap(text))
    assert (tokens[-1].kind, tokens[-1].offset) == ("eof", 2)


# --- Against gcc -------------------------------------------------------------------------------

# The examples of C17 6.10.3.5, which pin down rescanning, painting, `#` and `##`.
C_STANDARD_EXAMPLES = [
    """#define x 3
#define f(a) f(x * (a))
#undef x
#define x 2
#define g f
#define z z[0]
#define h g(~
#define m(a) a(w)
#define w 0,1
#define t(a) a
#define p() int
#define q(x) x
#define r(x,y) x ## y
#define str(x) # x
f(y+1) + f(f(z)) % t(t(g)(0) + t)(1);
g(x+(3,4)-w) | h 5) & m
(f)^m(m);
p() i[q()] = { q(1), r(2,3), r(4,), r(,5), r(,) };
char c[2][6] = { str(hello), str() };
""",
    """#define str(s) # s
#define xstr(s) str(s)
#define debug(s, t) printf("x" # s "= %d, x" # t "= %s", \\
 x ## s, x ## t)
#define INCFILE(n) vers ## n
#define glue(a, b) a ## b
#define xglue(a, b) glue(a, b)
#define HIGHLOW "hello"
#define LOW LOW ", world"
debug(1, 2);
fputs(str(strncmp("abc\\0d", "abc", '\\4') // this goes away
 == 0) str(: @\\n), s);
xstr(INCFILE(2).h)
glue(HIGH, LOW);
xglue(HIGH, LOW)
""",
    """#define hash_hash # ## #
#define mkstr(a) # a
#define in_between(a) mkstr(a)
#define join(c, d) in_between(c hash_hash d)
char p[] = join(x, y);
#define t(x,y,z) x ## y ## z
int j[] = { t(1,2,3), t(,4,5), t(6,,7), t(8,9,),
 t(10,,), t(,11,), t(,,12), t(,,) };
""",
    """#define debug(...) fprintf(stderr, __VA_ARGS__)
#define showlist(...) puts(#__VA_ARGS__)
#define report(test, ...) ((test)?puts(#test):\\
 printf(__VA_ARGS__))
debug("Flag");
debug("X = %d\\n", x);
showlist(The first, second, and third items.);
report(x>y, "x is %d but y is %d", x, y);
""",
    """#define XSTR(x) STR(x)
#define STR(x) #x
#define ONE 1
#define F(a) ( a )
XSTR(x+ONE) XSTR( x ONE ) XSTR(F( a )) XSTR(F(ONE)+F (2))
""",
]


@needs_gcc
@pytest.mark.parametrize("source", C_STANDARD_EXAMPLES)
def test_c_standard_macro_examples_match_gcc(source):
    expected = gcc_tokens(source)
    assert expected is not None
    assert texts(source) == expected


_LEAVES = st.one_of(
    st.integers(0, 40).map(str),
    st.sampled_from(["0u", "1u", "7u", "0x10", "017", "0b11", "'a'", "9223372036854775807",
                     "18446744073709551615u", "0x8000000000000000", "UNDEFINED", "defined(DEF)",
                     "defined NOPE", "DEF", "FIVE", "SQ(3)"]),
)
_BINARY = ["*", "/", "%", "+", "-", "<<", ">>", "<", ">", "<=", ">=", "==", "!=", "&", "^", "|",
           "&&", "||"]


def _extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(st.sampled_from(["-", "+", "~", "!"]), inner).map(lambda p: f"{p[0]}{p[1]}"),
        st.tuples(inner, st.sampled_from(_BINARY), inner).map(" ".join),
        inner.map(lambda e: f"({e})"),
        st.tuples(inner, inner, inner).map(lambda p: f"{p[0]} ? {p[1]} : {p[2]}"),
    )


_EXPRESSIONS = st.recursive(_LEAVES, _extend, max_leaves=12)


@needs_gcc
@settings(max_examples=150, deadline=None)
@given(_EXPRESSIONS)
def test_if_expressions_keep_the_same_branch_as_gcc(expression):
    source = (f"#define DEF\n#define FIVE 5\n#define SQ(x) ((x) * (x))\n"
              f"#if {expression}\nyes\n#else\nno\n#endif\n")
    assert our_tokens(source) == gcc_tokens(source)


# --- Limits -------------------------------------------------------------------------------------

def test_define_bomb_stops_with_a_compile_error_quickly():
    # Ten levels of ten copies: 10**10 tokens if expanded; a compiler runs out of memory.
    levels = ["#define L0 x x x x x x x x x x"] + [
        f"#define L{k} " + " ".join([f"L{k - 1}"] * 10) for k in range(1, 10)]
    started = time.monotonic()
    error = pp_error("\n".join(levels) + "\nL9\n")
    assert f"more than {MAX_EXPANDED_TOKENS} tokens" in error.diagnostic.message
    assert error.coord.line == 11
    assert time.monotonic() - started < 30


def test_expansion_just_under_the_limit_is_complete():
    text = "#define T x x x x x x x x x x\n#define H T T T T T T T T T T\nH H H H H\n"
    assert texts(text) == ["x"] * 500


# --- Going on from a preprocessed prefix (MLX's prelude, preprocessed once per process) --------

PREFIX = "#define TWICE(x) ((x) + (x))\n#define N 4\ninline int f(int a) { return TWICE(a); }\n"


def prefix_and_map(suffix: str):
    text = PREFIX + suffix
    sections = [("prelude", 0, len(PREFIX)), ("source", len(PREFIX), len(text))]
    prefix = preprocess_prefix(PREFIX, SourceMap(PREFIX, sections[:1]))
    return text, SourceMap(text, sections), prefix


@pytest.mark.parametrize("suffix", [
    "int g() { return TWICE(N) + f(N); }\n",
    "#undef N\n#define N 5\nint h = N;\n",
    "#ifdef TWICE\nint yes;\n#else\nint no;\n#endif\n",
    "int s = \\\n  N;  /* a comment */ x N y\n",
    "#define M(a) #a N\nM( 1 +  2 )\n",
    "",
])
def test_preprocessing_after_a_prefix_gives_the_tokens_of_the_whole_text(suffix):
    text, source_map, prefix = prefix_and_map(suffix)
    assert preprocess(text, source_map, after=prefix) == preprocess(text, source_map)


def test_an_error_after_a_prefix_points_where_it_does_in_the_whole_text():
    text, source_map, prefix = prefix_and_map("int a;\n#if N >\n#endif\n")
    with pytest.raises(CompileError) as whole:
        preprocess(text, source_map)
    with pytest.raises(CompileError) as after:
        preprocess(text, source_map, after=prefix)
    assert str(after.value) == str(whole.value) and "source:2:" in str(after.value)


def test_macros_defined_after_a_prefix_stay_with_their_text():
    text, source_map, prefix = prefix_and_map("#define LEAK 1\n#undef N\nLEAK N\n")
    assert [t.text for t in preprocess(text, source_map, after=prefix)][-3:] == ["1", "N", ""]
    text, source_map, _ = prefix_and_map("LEAK N\n")
    assert [t.text for t in preprocess(text, source_map, after=prefix)][-3:] == ["LEAK", "4", ""]


def test_a_prefix_keeps_the_predefined_macros_it_was_preprocessed_with():
    prefix = preprocess_prefix("int a;\n", SourceMap("int a;\n"), {"__FAST_MATH__": "1"})
    text = "int a;\n__FAST_MATH__ __METAL_VERSION__\n"
    assert [t.text for t in preprocess(text, SourceMap(text), after=prefix)] == [
        "int", "a", ";", "1", str(METAL_VERSION), ""]


def test_a_prefix_must_be_the_start_of_the_text_and_end_a_line():
    prefix = preprocess_prefix("int a;\n", SourceMap("int a;\n"))
    with pytest.raises(ValueError, match="does not begin"):
        preprocess("int b;\n", SourceMap("int b;\n"), after=prefix)
    with pytest.raises(ValueError, match="newline"):
        preprocess_prefix("int a;", SourceMap("int a;"))
