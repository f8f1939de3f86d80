"""The lexer: Metal Shading Language source text to C++ tokens.

One compiled regular expression walks the text; numbers are first matched as C "pp-numbers" and
only then classified, as a C++ compiler does, so `1f` is one malformed token rather than `1` `f`.
`scan` keeps malformed pieces as "invalid" tokens because the preprocessor must not reject text
inside `#if 0`; `tokenize` is the strict entry point that reports the first of them.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from metalsim.diagnostics import CompileError, SourceMap


@dataclass(frozen=True, slots=True)
class Token:
    """One C++ token.

    `kind` is "ident", "int", "float", "char", "string", "punct" or "eof" ("invalid" only from
    `scan`, with the error message as `value`). `offset` indexes the original text; for tokens a
    macro expansion produced it is the offset of the macro name at the use site. `value` holds the
    int value of "int" and "char" tokens, the float of "float" tokens and the decoded text of
    "string" tokens. `suffix` is the lower-cased literal suffix ("u", "ul", "f", "h", "bf", ...).
    """

    kind: str
    text: str
    offset: int
    value: int | float | str | None = None
    suffix: str = ""
    space_before: bool = False
    line_start: bool = False


# Longest first, so the alternation below takes `<<=` over `<<` over `<`.
_PUNCTUATORS = (
    "...", "<<=", ">>=", "::", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
    "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "##",
    "{", "}", "[", "]", "(", ")", ";", ":", ",", ".", "?", "~", "!",
    "+", "-", "*", "/", "%", "&", "|", "^", "=", "<", ">", "#",
)

_TOKEN_RE = re.compile(
    "|".join(
        [
            r"(?P<newline>\n)",
            r"(?P<space>[ \t\r\f\v]+)",
            r"(?P<comment>//[^\n]*|/\*(?s:.*?)\*/)",
            r"(?P<open_comment>/\*)",
            # A C pp-number: digits, letters, dots, digit separators and signed exponents.
            r"(?P<number>\.?[0-9](?:[eEpP][+-]|'[0-9A-Za-z_]|[0-9A-Za-z_.])*)",
            r"(?P<char>'(?:[^'\\\n]|\\.)*')",
            r"(?P<string>\"(?:[^\"\\\n]|\\.)*\")",
            # An unterminated quote swallows its line, so `don't` inside `#if 0` stays one token.
            r"(?P<open_quote>['\"][^\n]*)",
            r"(?P<ident>[A-Za-z_][A-Za-z0-9_]*)",
            "(?P<punct>" + "|".join(re.escape(p) for p in _PUNCTUATORS) + ")",
            r"(?P<stray>(?s:.))",
        ]
    )
)

_SPLICE_RE = re.compile(r"\\[ \t]*\r?\n")

_DIGITS = r"[0-9]+(?:'[0-9]+)*"
_HEX_DIGITS = r"[0-9a-fA-F]+(?:'[0-9a-fA-F]+)*"
_INT_RE = re.compile(
    rf"(?:0[xX](?P<hex>{_HEX_DIGITS})|0[bB](?P<bin>[01]+(?:'[01]+)*)|(?P<dec>{_DIGITS}))"
    r"(?P<suffix>.*)"
)
_FLOAT_RE = re.compile(
    rf"(?P<mantissa>(?:{_DIGITS})?(?P<dot>\.)(?:{_DIGITS})?|{_DIGITS})"
    r"(?P<exponent>[eE][+-]?[0-9]+)?(?P<suffix>.*)"
)
_HEX_FLOAT_RE = re.compile(
    rf"0[xX](?P<mantissa>(?:{_HEX_DIGITS})?\.?(?:{_HEX_DIGITS})?)"
    r"(?P<exponent>[pP][+-]?[0-9]+)(?P<suffix>.*)"
)
_INT_SUFFIXES = {"", "u", "l", "ul", "lu", "ll", "ull", "llu"}
_FLOAT_SUFFIXES = {"", "f", "h", "bf"}

_ESCAPE_RE = re.compile(
    r"\\(?:([0-7]{1,3})|x([0-9a-fA-F]*)|u([0-9a-fA-F]{0,4})|U([0-9a-fA-F]{0,8})|(.))"
)
_SIMPLE_ESCAPES = {
    "n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v",
    "\\": "\\", "'": "'", '"': '"', "?": "?",
}


class _LiteralError(Exception):
    """A malformed literal; the message becomes an "invalid" token."""


def _int_suffix(suffix: str) -> str:
    lowered = suffix.lower()
    # `lL` and `Ll` are not the `long long` suffix: its two letters must share their case.
    if lowered not in _INT_SUFFIXES or "lL" in suffix or "Ll" in suffix:
        raise _LiteralError(f"invalid suffix '{suffix}' on integer constant")
    return lowered


def _float_suffix(suffix: str) -> str:
    if suffix.lower() not in _FLOAT_SUFFIXES:
        raise _LiteralError(f"invalid suffix '{suffix}' on floating constant")
    return suffix.lower()


def _number(text: str) -> tuple[str, int | float, str]:
    """Classifies a pp-number as ("int" | "float", value, suffix) or raises _LiteralError."""
    m = _HEX_FLOAT_RE.fullmatch(text)
    if m and m["mantissa"].strip("."):
        suffix = _float_suffix(m["suffix"])
        spelling = f"0x{m['mantissa']}p{m['exponent'][1:]}".replace("'", "")
        return "float", float.fromhex(spelling), suffix
    m = _FLOAT_RE.fullmatch(text)
    if m and (m["dot"] or m["exponent"]):
        suffix = _float_suffix(m["suffix"])
        return "float", float((m["mantissa"] + (m["exponent"] or "")).replace("'", "")), suffix
    m = _INT_RE.fullmatch(text)
    if m is None:
        raise _LiteralError(f"invalid numeric constant '{text}'")
    suffix = _int_suffix(m["suffix"])
    if m["hex"]:
        value = int(m["hex"].replace("'", ""), 16)
    elif m["bin"]:
        value = int(m["bin"].replace("'", ""), 2)
    else:
        digits = m["dec"].replace("'", "")
        if len(digits) > 1 and digits[0] == "0":
            bad = next((d for d in digits if d in "89"), None)
            if bad:
                raise _LiteralError(f"invalid digit '{bad}' in octal constant")
            value = int(digits, 8)
        else:
            value = int(digits)
    if value >= 1 << 64:
        raise _LiteralError("integer literal is too large to be represented in any integer type")
    return "int", value, suffix


def _unescape(body: str) -> list[tuple[int, bool]]:
    """Code points of a literal's body, each flagged True when it came from a numeric escape."""
    units: list[tuple[int, bool]] = []
    pos = 0
    for m in _ESCAPE_RE.finditer(body):
        units.extend((ord(c), False) for c in body[pos : m.start()])
        pos = m.end()
        octal, hexa, short_ucn, long_ucn, other = m.groups()
        if octal is not None:
            value = int(octal, 8)
            if value > 0xFF:
                raise _LiteralError("octal escape sequence out of range")
            units.append((value, True))
        elif hexa is not None:
            if not hexa:
                raise _LiteralError("\\x used with no following hex digits")
            value = int(hexa, 16)
            if value > 0xFF:
                raise _LiteralError("hex escape sequence out of range")
            units.append((value, True))
        elif short_ucn is not None or long_ucn is not None:
            digits, needed = (short_ucn, 4) if short_ucn is not None else (long_ucn, 8)
            if len(digits) != needed:
                raise _LiteralError("incomplete universal character name")
            units.append((int(digits, 16), False))
        else:
            # An unknown escape is only a warning in clang; the character stands for itself.
            units.append((ord(_SIMPLE_ESCAPES.get(other, other)), False))
    units.extend((ord(c), False) for c in body[pos:])
    return units


def _char_value(text: str) -> int:
    """The value clang gives a plain character literal: a signed char, or an int if multi-char."""
    data = bytearray()
    for value, numeric in _unescape(text[1:-1]):
        data.extend([value] if numeric else chr(value).encode("utf-8"))
    if not data:
        raise _LiteralError("empty character constant")
    if len(data) == 1:
        return data[0] - 256 if data[0] >= 128 else data[0]
    value = 0
    for byte in data:
        value = ((value << 8) | byte) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _splice(text: str) -> tuple[str, list[int], list[int]]:
    """Removes backslash-newlines; returns the text and where each removal shifts offsets."""
    starts: list[int] = []
    shifts: list[int] = []
    parts: list[str] = []
    removed = last = 0
    for m in _SPLICE_RE.finditer(text):
        parts.append(text[last : m.start()])
        starts.append(m.start() - removed)
        removed += m.end() - m.start()
        shifts.append(removed)
        last = m.end()
    parts.append(text[last:])
    return "".join(parts), starts, shifts


def scan(text: str, source_map: SourceMap, start: int = 0) -> list[Token]:
    """Tokens of `text` ending with "eof"; malformed ones come back as kind "invalid".

    Only an unterminated block comment raises here, as C compilers reject it even in skipped
    `#if` groups. `start` > 0 scans only `text[start:]`, which must begin a line (offsets stay
    those of `text`): the part after a prefix whose tokens are known.
    """
    starts: list[int] = []
    shifts: list[int] = []
    text_to_scan = text[start:]
    if "\\" in text_to_scan:
        text_to_scan, starts, shifts = _splice(text_to_scan)
    tokens: list[Token] = []
    append = tokens.append
    space = start > 0   # the newline ending the prefix
    line_start = True
    for m in _TOKEN_RE.finditer(text_to_scan):
        kind = m.lastgroup
        if kind == "newline":
            space = line_start = True
            continue
        if kind == "space" or kind == "comment":
            space = True
            continue
        offset = m.start()
        if starts:
            index = bisect.bisect_right(starts, offset) - 1
            offset += shifts[index] if index >= 0 else 0
        offset += start
        spelling = m.group()
        if kind == "ident" or kind == "punct":
            append(Token(kind, spelling, offset, None, "", space, line_start))
        elif kind == "open_comment":
            raise CompileError("unterminated /* comment", source_map.coord(offset), source_map,
                               width=2)
        else:
            value: int | float | str | None = None
            suffix = ""
            try:
                if kind == "number":
                    kind, value, suffix = _number(spelling)
                elif kind == "char":
                    value = _char_value(spelling)
                elif kind == "string":
                    value = "".join(chr(unit) for unit, _ in _unescape(spelling[1:-1]))
                elif kind == "open_quote":
                    raise _LiteralError(f"missing terminating {spelling[0]} character")
                else:
                    raise _LiteralError(f"unexpected character {spelling!r}")
            except _LiteralError as error:
                kind, value = "invalid", str(error)
            append(Token(kind, spelling, offset, value, suffix, space, line_start))
        space = line_start = False
    append(Token("eof", "", len(text), None, "", space, line_start))
    return tokens


def error_at(token: Token, message: str, source_map: SourceMap, hint: str = "") -> CompileError:
    """A CompileError pointing at `token`, underlining its spelling."""
    return CompileError(message, source_map.coord(token.offset), source_map, hint=hint,
                        width=max(1, len(token.text)))


def tokenize(text: str, source_map: SourceMap) -> list[Token]:
    """Lexes `text` into tokens ending with one "eof" token; raises CompileError on bad input."""
    tokens = scan(text, source_map)
    for token in tokens:
        if token.kind == "invalid":
            raise error_at(token, str(token.value), source_map)
    return tokens
