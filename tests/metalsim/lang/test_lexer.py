
import pytest

from metalsim.diagnostics import CompileError, SourceMap
from metalsim.lang.lexer import Token, scan, tokenize


def lex(text: str) -> list[Token]:
    """The tokens of `text` without the final "eof"."""
    tokens = tokenize(text, SourceMap(text, [("source", 0, len(text))]))
    assert tokens[-1].kind == "eof"
    return tokens[:-1]


def texts(text: str) -> list[str]:
    return [t.text for t in lex(text)]


def only(text: str) -> Token:
    tokens = lex(text)
    assert len(tokens) == 1, tokens
    return tokens[0]


def lex_error(text: str) -> CompileError:
    with pytest.raises(CompileError) as info:
        lex(text)
    return info.value


# --- Tokens, whitespace and comments -----------------------------------------------------------

def test_empty_text_is_one_eof_token():
    tokens = tokenize("", SourceMap(""))
    assert [(t.kind, t.text, t.offset) for t in tokens] == [("eof", "", 0)]


def test_eof_offset_is_text_length():
    assert tokenize("a b\n", SourceMap("a b\n"))[-1].offset == 4


def test_keywords_are_ident_tokens():
    assert [(t.kind, t.text) for t in lex("if for kernel device")] == [
        ("ident", "if"), ("ident", "for"), ("ident", "kernel"), ("ident", "device")]


def test_identifier_with_digits_and_underscores():
    assert only("_tile_2d").kind == "ident"


def test_offsets_index_the_text():
    assert [t.offset for t in lex("a  +\n b")] == [0, 3, 6]


def test_line_comment_is_skipped():
    assert texts("a // b c\nd") == ["a", "d"]


def test_block_comment_spanning_lines_is_skipped():
    assert texts("a /* b\n c\n */ d") == ["a", "d"]


def test_block_comment_does_not_nest():
    assert texts("/* /* */ x */") == ["x", "*", "/"]


def test_comment_markers_inside_string_are_text():
    assert only('"a // b /* c"').value == "a // b /* c"


def test_unterminated_block_comment_points_at_its_start():
    error = lex_error("int a;\n  /* never closed\n")
    assert "unterminated /* comment" in str(error)
    assert (error.line, error.column) == (2, 3)


def test_line_start_marks_first_token_of_each_line():
    assert [t.line_start for t in lex("a b\n  c d\n\ne")] == [True, False, True, False, True]


def test_block_comment_with_newline_does_not_start_a_line():
    assert [t.line_start for t in lex("a /*\n*/ b")] == [True, False]


def test_space_before_records_whitespace_and_comments():
    assert [t.space_before for t in lex("a+ b/**/c\nd")] == [False, False, True, True, True]


def test_line_continuation_joins_lines():
    assert texts("a \\\n b") == ["a", "b"]
    assert [t.line_start for t in lex("#define X \\\n 1")] == [True, False, False, False]


def test_line_continuation_inside_identifier():
    token = only("ab\\\ncd")
    assert (token.text, token.offset) == ("abcd", 0)


def test_offsets_after_line_continuation_index_the_original_text():
    text = "a \\\n b \\\r\n c"
    assert [text[t.offset] for t in lex(text)] == ["a", "b", "c"]


def test_continuation_ending_a_line_comment_extends_it():
    assert texts("// note \\\nhidden\nshown") == ["shown"]


# --- Integer literals --------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "value"), [
    ("0", 0), ("7", 7), ("123456", 123456), ("0x1F", 31), ("0XfF", 255), ("017", 15),
    ("0b101", 5), ("0B11", 3), ("1'000'000", 1000000), ("0x7fff'ffff", 0x7FFFFFFF),
])
def test_integer_literal_values(text, value):
    token = only(text)
    assert (token.kind, token.value, token.suffix) == ("int", value, "")


def test_hex_literal_value_and_suffix():
    token = only("0xFFu")
    assert (token.kind, token.text, token.value, token.suffix) == ("int", "0xFFu", 255, "u")


@pytest.mark.parametrize(("text", "suffix"), [
    ("1u", "u"), ("1U", "u"), ("1l", "l"), ("1L", "l"), ("1ul", "ul"), ("1LU", "lu"),
    ("1ll", "ll"), ("1LL", "ll"), ("1ull", "ull"), ("1LLU", "llu"), ("1uLL", "ull"),
])
def test_integer_suffixes_are_lower_cased(text, suffix):
    assert only(text).suffix == suffix


@pytest.mark.parametrize("text", ["1f", "1lL", "1uu", "1lul", "0x1g", "12abc"])
def test_invalid_integer_suffix_is_rejected(text):
    assert "invalid suffix" in str(lex_error(text))


def test_float_suffix_on_integer_says_which_suffix():
    assert "invalid suffix 'f' on integer constant" in str(lex_error("x = 1f;"))


def test_invalid_octal_digit_is_rejected():
    assert "invalid digit '9' in octal constant" in str(lex_error("019"))


def test_largest_64_bit_literal_is_accepted():
    assert only("18446744073709551615u").value == 2**64 - 1


def test_integer_literal_too_large_for_64_bits_is_rejected():
    assert "too large" in str(lex_error("18446744073709551616"))


def test_digit_separator_may_not_end_a_literal():
    lex_error("1'")


# --- Floating literals -------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "value", "suffix"), [
    ("1.0", 1.0, ""), (".5", 0.5, ""), ("1.", 1.0, ""), ("1e-3", 1e-3, ""), ("1E3", 1000.0, ""),
    ("1.5e+2f", 150.0, "f"), ("2.5F", 2.5, "f"), ("1.f", 1.0, "f"), ("0.5h", 0.5, "h"),
    ("0.5H", 0.5, "h"), ("1.0bf", 1.0, "bf"), ("3.0BF", 3.0, "bf"), ("1e2f", 100.0, "f"),
    ("08.5", 8.5, ""), ("1'000.5", 1000.5, ""),
])
def test_float_literal_values_and_suffixes(text, value, suffix):
    token = only(text)
    assert (token.kind, token.value, token.suffix) == ("float", value, suffix)


@pytest.mark.parametrize(("text", "value"), [("0x1p3", 8.0), ("0x1.8p1", 3.0), ("0x.8p0", 0.5)])
def test_hex_float_literal_values(text, value):
    assert only(text).value == value


@pytest.mark.parametrize("text", ["1.0x", "1.0q", "1.5.3", "1.0fh"])
def test_invalid_float_suffix_is_rejected(text):
    assert "on floating constant" in str(lex_error(text))


def test_signed_exponent_belongs_to_the_number():
    assert texts("1e+5+2") == ["1e+5", "+", "2"]


def test_plus_after_non_exponent_letter_is_an_operator():
    assert texts("x+1") == ["x", "+", "1"]


def test_member_access_after_name_is_not_a_float():
    assert texts("v.xy") == ["v", ".", "xy"]


# --- Character and string literals -------------------------------------------------------------

@pytest.mark.parametrize(("text", "value"), [
    ("'a'", 97), ("'\\n'", 10), ("'\\0'", 0), ("'\\''", 39), ("'\\\\'", 92), ("'\"'", 34),
    ("'\\x41'", 65), ("'\\101'", 65), ("'\\xff'", -1), ("'\\t'", 9), ("'\\?'", 63),
])
def test_char_literal_values(text, value):
    token = only(text)
    assert (token.kind, token.value) == ("char", value)


def test_multi_character_literal_packs_bytes_like_clang():
    assert only("'ab'").value == 0x6162


def test_empty_char_literal_is_rejected():
    assert "empty character constant" in str(lex_error("''"))


def test_unterminated_char_literal_is_rejected():
    assert "missing terminating ' character" in str(lex_error("x = 'a;"))


def test_string_literal_decodes_escapes():
    token = only(r'"a\tb\"c\\d\x41\101\u00e9"')
    assert (token.kind, token.value) == ("string", 'a\tb"c\\dAAé')


def test_string_literal_keeps_its_spelling():
    assert only(r'"a\n"').text == r'"a\n"'


def test_unterminated_string_literal_is_rejected():
    error = lex_error('s = "abc\nx')
    assert "missing terminating \" character" in str(error)
    assert (error.line, error.column) == (1, 5)


def test_hex_escape_out_of_range_is_rejected():
    assert "hex escape sequence out of range" in str(lex_error(r"'\x100'"))


def test_incomplete_universal_character_name_is_rejected():
    lex_error(r'"\u12"')


# --- Punctuators -------------------------------------------------------------------------------

@pytest.mark.parametrize("punct", [
    "...", "::", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=",
    "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "##", "#", "{", "}", "[", "]", "(", ")",
    ";", ":", ",", ".", "?", "~", "!", "+", "-", "*", "/", "%", "&", "|", "^", "=", "<", ">",
])
def test_each_punctuator_is_one_token(punct):
    token = only(punct)
    assert (token.kind, token.text) == ("punct", punct)


def test_punctuators_take_the_longest_match():
    assert texts("a<<=b>>c->d::e...f") == [
        "a", "<<=", "b", ">>", "c", "->", "d", "::", "e", "...", "f"]


def test_longest_match_splits_plus_runs_greedily():
    assert texts("a+++b") == ["a", "++", "+", "b"]


def test_double_brackets_are_two_tokens():
    assert texts("[[kernel]]") == ["[", "[", "kernel", "]", "]"]


def test_template_closing_angles_lex_as_shift():
    assert texts("vec<vec<float,4>>") == ["vec", "<", "vec", "<", "float", ",", "4", ">>"]


# --- Errors ------------------------------------------------------------------------------------

@pytest.mark.parametrize("char", ["@", "$", "`", "\\"])
def test_stray_character_is_rejected(char):
    assert f"unexpected character {char!r}" in str(lex_error(f"a {char} b"))


def test_unexpected_character_message_is_exact():
    assert lex_error("a @ b").diagnostic.message == "unexpected character '@'"


def test_error_reports_line_and_column_of_the_section():
    text = "header stuff\nint x;\n  y = 1f;\n"
    start = text.index("int")
    source_map = SourceMap(text, [("header", 0, start), ("source", start, len(text))])
    with pytest.raises(CompileError) as info:
        tokenize(text, source_map)
    assert info.value.coord.section == "source"
    assert (info.value.line, info.value.column) == (2, 7)
    assert "^~" in str(info.value)


def test_scan_keeps_malformed_tokens_as_invalid():
    tokens = scan("a @ 1f", SourceMap("a @ 1f"))
    assert [(t.kind, t.text) for t in tokens] == [
        ("ident", "a"), ("invalid", "@"), ("invalid", "1f"), ("eof", "")]
    assert tokens[2].value == "invalid suffix 'f' on integer constant"
