"""The C preprocessor, run over tokens as clang's is before it parses Metal code.

Macro expansion follows Prosser's algorithm (the one the C standard's examples are written
against): every token in flight carries a "hide set" of the macros whose expansion produced it,
and a macro name is not expanded again while it is in its own hide set. Tokens flow through a
`_Stream` that pulls from the file lazily, so directives take effect exactly where they appear,
even between a function-like macro's name and its arguments.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from metalsim.diagnostics import CompileError, SourceMap
from metalsim.lang.lexer import Token, error_at, scan

METAL_VERSION = 310  # __METAL_VERSION__: MSL 3.1, the oldest language version MLX targets
# Tokens macro expansion may produce in one translation unit. A compiler has no such limit but
# runs out of memory on a "#define bomb"; the simulator stops early with a compile error.
MAX_EXPANDED_TOKENS = 100_000
MAX_INCLUDE_DEPTH = 200  # clang's default (-fbracket-depth aside): "#include nested too deeply"

_PREDEFINED = {
    "__METAL_VERSION__": str(METAL_VERSION),
    "__METAL__": "1",
    "__METAL_MACOS__": "1",
    "__HAVE_BFLOAT__": "1",
    # From MLX's kernel prelude, which kernels may use without including it.
    "METAL_FUNC": "inline",
    "MLX_MTL_PRAGMA_UNROLL": "",
}

_Item = tuple[Token, frozenset[str]]  # a token and its hide set
_NO_HIDE: frozenset[str] = frozenset()
_PLACEMARKER = Token("placemarker", "", -1)  # an empty argument next to `##` (C17 6.10.3.3)
_MASK = (1 << 64) - 1
_BINARY_PRECEDENCE = {
    "||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6,
    "<": 7, ">": 7, "<=": 7, ">=": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10,
}


@dataclass(frozen=True)
class _Macro:
    name: str
    params: tuple[str, ...] | None  # None for object-like macros; "__VA_ARGS__" ends variadic ones
    body: tuple[Token, ...]

    @property
    def variadic(self) -> bool:
        return bool(self.params) and self.params[-1] == "__VA_ARGS__"


@dataclass
class _Conditional:
    """One open #if group: whether the current branch is live and whether any branch was."""

    hash_token: Token
    directive: Token
    parent_active: bool
    active: bool
    taken: bool
    seen_else: bool = False


def _is_punct(token: Token, text: str) -> bool:
    return token.kind == "punct" and token.text == text


def _moved(token: Token, offset: int, space_before: bool) -> Token:
    """`token` placed at `offset` with the given spacing (tokens are immutable)."""
    return Token(token.kind, token.text, offset, token.value, token.suffix, space_before)


class _Stream:
    """Tokens to rescan: a push-back stack in front of an optional lazy source (the file)."""

    def __init__(self, items: list[_Item],
                 refill: Callable[[], _Item | None] | None = None) -> None:
        self.stack = items[::-1]
        self.refill = refill

    def next(self) -> _Item | None:
        if self.stack:
            return self.stack.pop()
        return self.refill() if self.refill else None

    def peek(self) -> _Item | None:
        item = self.next()
        if item is not None:
            self.stack.append(item)
        return item

    def push(self, items: list[_Item]) -> None:
        self.stack.extend(reversed(items))


def _wrap(value: int, unsigned: bool) -> int:
    """`value` reduced to uintmax_t or intmax_t, the types #if arithmetic uses."""
    value &= _MASK
    return value if unsigned or value < 1 << 63 else value - (1 << 64)


class _IfExpression:
    """Evaluates a macro-expanded #if line with C's 64-bit integer rules.

    Values are `(int, unsigned)` pairs. `live` is False under a short-circuited operand, where
    C evaluates nothing, so dividing by zero there is no error; types still propagate.
    """

    def __init__(self, tokens: list[Token], end: Token, source_map: SourceMap) -> None:
        self.tokens = tokens
        self.end = end
        self.pos = 0
        self.source_map = source_map

    def _peek(self) -> Token:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else self.end

    def _error(self, message: str, token: Token | None = None) -> CompileError:
        return error_at(token or self._peek(), message, self.source_map)

    def evaluate(self) -> bool:
        value, _ = self._conditional(True)
        if self.pos < len(self.tokens):
            raise self._error("token is not a valid binary operator in a preprocessor "
                              "subexpression")
        return value != 0

    def _conditional(self, live: bool) -> tuple[int, bool]:
        condition = self._binary(1, live)
        if not _is_punct(self._peek(), "?"):
            return condition
        self.pos += 1
        then = self._conditional(live and condition[0] != 0)
        if not _is_punct(self._peek(), ":"):
            raise self._error("expected ':' in preprocessor expression")
        self.pos += 1
        otherwise = self._conditional(live and condition[0] == 0)
        unsigned = then[1] or otherwise[1]
        return _wrap((then if condition[0] else otherwise)[0], unsigned), unsigned

    def _binary(self, min_precedence: int, live: bool) -> tuple[int, bool]:
        left = self._unary(live)
        while True:
            op = self._peek()
            precedence = _BINARY_PRECEDENCE.get(op.text, 0) if op.kind == "punct" else 0
            if precedence < min_precedence:
                return left
            self.pos += 1
            if op.text in ("&&", "||"):
                short = (left[0] == 0) if op.text == "&&" else (left[0] != 0)
                right = self._binary(precedence + 1, live and not short)
                truth = (left[0] and right[0]) if op.text == "&&" else (left[0] or right[0])
                left = (int(truth != 0), False)
            else:
                left = self._apply(op, left, self._binary(precedence + 1, live), live)

    def _apply(self, op: Token, left: tuple[int, bool], right: tuple[int, bool],
               live: bool) -> tuple[int, bool]:
        if op.text in ("<<", ">>"):
            return self._shift(op.text, left, right)
        unsigned = left[1] or right[1]
        a, b = _wrap(left[0], unsigned), _wrap(right[0], unsigned)
        text = op.text
        if text in ("/", "%"):
            if b == 0:
                if live:
                    raise self._error("division by zero in preprocessor expression", op)
                return 0, unsigned
            quotient = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # C truncates
            return _wrap(quotient if text == "/" else a - quotient * b, unsigned), unsigned
        if text in ("<", ">", "<=", ">=", "==", "!="):
            result = {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b, "==": a == b,
                      "!=": a != b}[text]
            return int(result), False
        result = {"+": a + b, "-": a - b, "*": a * b, "&": a & b, "^": a ^ b, "|": a | b}[text]
        return _wrap(result, unsigned), unsigned

    @staticmethod
    def _shift(text: str, left: tuple[int, bool], right: tuple[int, bool]) -> tuple[int, bool]:
        # As GCC and clang evaluate #if: the result has the left operand's type, a negative
        # count shifts the other way and a count past the width shifts everything out.
        value, unsigned = left
        count = right[0]
        if count < 0:
            text, count = ("<<" if text == ">>" else ">>"), -count
        if text == "<<":
            return (_wrap(value << count, unsigned) if count < 64 else 0), unsigned
        return (value >> count if count < 64 else (-1 if value < 0 else 0)), unsigned

    def _unary(self, live: bool) -> tuple[int, bool]:
        token = self._peek()
        self.pos += 1
        if token.kind == "punct":
            if token.text in ("+", "-", "~", "!"):
                value, unsigned = self._unary(live)
                if token.text == "!":
                    return int(value == 0), False
                result = {"+": value, "-": -value, "~": ~value}[token.text]
                return _wrap(result, unsigned), unsigned
            if token.text == "(":
                value = self._conditional(live)
                if not _is_punct(self._peek(), ")"):
                    raise self._error("expected ')' in preprocessor expression")
                self.pos += 1
                return value
        elif token.kind == "int":
            # A literal is unsigned if it says so or if only uintmax_t can hold it.
            unsigned = "u" in token.suffix or token.value >= 1 << 63
            return int(token.value), unsigned
        elif token.kind == "char":
            return int(token.value), False
        elif token.kind == "ident":
            # C++ keeps `true` and `false` in #if; every other leftover identifier is 0.
            return int(token.text == "true"), False
        elif token.kind == "float":
            raise self._error("floating point literal in preprocessor expression", token)
        elif token.kind == "invalid":
            raise self._error(str(token.value), token)
        self.pos -= 1
        if token is self.end:
            raise self._error("expected value in expression", token)
        raise self._error("invalid token at start of a preprocessor expression", token)


@dataclass(frozen=True)
class Prefix:
    """A preprocessed first part of translation units, to go on from (see `preprocess`):
    its text, its tokens (without "eof"), and the macros defined at its end."""

    text: str
    tokens: tuple[Token, ...]
    macros: dict[str, _Macro]
    expanded: int


@functools.lru_cache(maxsize=64)
def _object_macro(name: str, value: str) -> _Macro:
    return _Macro(name, None, tuple(scan(value, SourceMap(value))[:-1]))


@dataclass
class _OpenFile:
    """An included file being read, and where reading resumes in the file that included it."""

    path: Path
    resume_tokens: list[Token]
    resume_pos: int
    conditionals: int  # the includer's open #if groups: the file must close its own


class _Preprocessor:
    def __init__(self, text: str, source_map: SourceMap, predefined: dict[str, str],
                 after: Prefix | None = None, include_dirs: Sequence[str | Path] = ()) -> None:
        self.text = text
        self.source_map = source_map
        self.tokens = scan(text, source_map, len(after.text) if after else 0)
        self.pos = 0
        self.include_dirs = [Path(d) for d in include_dirs]
        self.open_files: list[_OpenFile] = []
        self.once: set[Path] = set()  # files that said `#pragma once`
        self.conditionals: list[_Conditional] = []
        self.active = True
        self.in_if = False  # expanding an #if line, where `defined` is an operator
        # tokens produced by macro substitution so far
        self.expanded = after.expanded if after else 0
        self.macros: dict[str, _Macro] = dict(after.macros) if after else {}
        for name, value in {**({} if after else _PREDEFINED), **predefined}.items():
            self.macros[name] = _object_macro(name, value)

    def error(self, token: Token, message: str, hint: str = "") -> CompileError:
        return error_at(token, message, self.source_map, hint)

    # --- The file, directive by directive ------------------------------------------------------

    def run(self) -> list[Token]:
        out: list[_Item] = []
        self._expand(_Stream([], self._next_from_file), out)
        result: list[Token] = []
        i = 0
        while i < len(out):
            token = out[i][0]
            if token.kind == "ident" and token.text == "_Pragma":
                i = self._skip_pragma_operator(out, i)
                continue
            if token.kind == "invalid":
                raise self.error(token, str(token.value))
            result.append(token)
            i += 1
        result.append(self.tokens[-1])
        return result

    def _skip_pragma_operator(self, out: list[_Item], i: int) -> int:
        """The index after `_Pragma ( "..." )`, which Metal code uses for loop hints."""
        parts = [item[0] for item in out[i + 1 : i + 4]]
        if not (len(parts) == 3 and _is_punct(parts[0], "(") and parts[1].kind == "string"
                and _is_punct(parts[2], ")")):
            raise self.error(out[i][0], "_Pragma takes a parenthesized string literal")
        return i + 4

    def _line_end(self, i: int) -> int:
        tokens = self.tokens
        while tokens[i].kind != "eof" and not tokens[i].line_start:
            i += 1
        return i

    def _next_from_file(self) -> _Item | None:
        tokens = self.tokens
        i = self.pos
        while True:
            token = tokens[i]
            if token.kind == "eof" and self.open_files:
                self._close_file(token)
                tokens, i = self.tokens, self.pos
                continue
            if token.kind == "eof":
                self.pos = i
                if self.conditionals:
                    open_group = self.conditionals[-1]
                    raise CompileError(
                        "unterminated conditional directive",
                        self.source_map.coord(open_group.hash_token.offset), self.source_map,
                        hint=f"this #{open_group.directive.text} has no matching #endif",
                        width=open_group.directive.offset + len(open_group.directive.text)
                        - open_group.hash_token.offset)
                return None
            if token.line_start and _is_punct(token, "#"):
                end = self._line_end(i + 1)
                self.pos = end  # where reading resumes, unless the directive opens a file
                self._directive(token, tokens[i + 1 : end])
                tokens, i = self.tokens, self.pos
            elif not self.active:
                i = self._line_end(i + 1)
            else:
                self.pos = i + 1
                return token, _NO_HIDE

    def _directive(self, hash_token: Token, line: list[Token]) -> None:
        if not line:
            return  # the null directive
        name = line[0]
        directive = name.text  # only identifiers can spell a directive's name
        if directive in ("if", "ifdef", "ifndef"):
            taken = self.active and self._condition(name, line[1:])
            self.conditionals.append(_Conditional(hash_token, name, self.active, taken, taken))
        elif directive in ("elif", "else", "endif"):
            self._close_branch(name, line[1:])
        else:
            if self.active:  # skipped groups may hold anything after `#`
                self._execute(name, line[1:])
            return
        self.active = self.conditionals[-1].active if self.conditionals else True

    def _execute(self, name: Token, rest: list[Token]) -> None:
        """Runs a directive other than a conditional one, in live code."""
        if name.text == "define":
            self._define(name, rest)
        elif name.text == "undef":
            self.macros.pop(self._macro_name(name, rest).text, None)
        elif name.text == "include":
            self._include(name, rest)
        elif name.text == "error":
            message = "".join((" " if t.space_before and k else "") + t.text
                              for k, t in enumerate(rest))
            raise self.error(name, message or "#error")
        elif name.text == "pragma":
            if len(rest) == 1 and rest[0].text == "once" and self.open_files:
                self.once.add(self.open_files[-1].path)
        elif name.text != "warning":
            raise self.error(name, f"unknown preprocessing directive '#{name.text}'")

    def _close_branch(self, name: Token, rest: list[Token]) -> None:
        if not self.conditionals:
            raise self.error(name, f"#{name.text} without #if")
        group = self.conditionals[-1]
        if name.text == "endif":
            self.conditionals.pop()
            return
        if group.seen_else:
            raise self.error(name, f"#{name.text} after #else")
        if name.text == "else":
            group.seen_else = True
            group.active = group.parent_active and not group.taken
        else:
            # Once a branch was taken, later #elif lines are not even evaluated.
            group.active = (group.parent_active and not group.taken
                            and self._condition(name, rest))
        group.taken = group.taken or group.active

    def _condition(self, name: Token, rest: list[Token]) -> bool:
        if name.text != "if" and name.text != "elif":
            defined = self._macro_name(name, rest).text in self.macros
            return defined == (name.text == "ifdef")
        if not rest:
            raise self.error(name, f"#{name.text} with no expression")
        out: list[_Item] = []
        self.in_if = True
        try:
            self._expand(_Stream([(t, _NO_HIDE) for t in rest]), out)
        finally:
            self.in_if = False
        last = rest[-1]
        end = Token("eof", "", last.offset + len(last.text))
        return _IfExpression([t for t, _ in out], end, self.source_map).evaluate()

    def _macro_name(self, directive: Token, rest: list[Token]) -> Token:
        if not rest:
            raise self.error(directive, "macro name missing")
        name = rest[0]
        if name.kind != "ident":
            raise self.error(name, "macro name must be an identifier")
        if name.text == "defined":
            raise self.error(name, "'defined' cannot be used as a macro name")
        return name

    def _include(self, directive: Token, rest: list[Token]) -> None:
        """`#include <...>` names the Metal standard library, always in scope; `#include "..."`
        is looked up in the include directories (as `-I` gives them to a compiler) and read in
        place of the directive."""
        if rest and rest[0].kind == "ident":  # `#include NAME`: the macro's expansion names it
            out: list[_Item] = []
            self._expand(_Stream([(t, _NO_HIDE) for t in rest]), out)
            rest = [t for t, _ in out]
        if rest and _is_punct(rest[0], "<"):
            return  # system headers: the Metal standard library is always in scope
        if not rest or rest[0].kind != "string":
            raise self.error(directive, "expected \"FILENAME\" or <FILENAME>")
        name = str(rest[0].value)
        found = next((d / name for d in self.include_dirs if (d / name).is_file()), None)
        if found is None:
            hint = ("searched: " + ", ".join(str(d) for d in self.include_dirs)
                    if self.include_dirs else
                    "a kernel cannot include files; put shared code in `header`, or give "
                    "metalsim the directory that holds it (metalsim.patch(include_dirs=[...]))")
            raise self.error(rest[0], f"'{name}' file not found", hint=hint)
        found = found.resolve()
        if found in self.once:
            return
        if len(self.open_files) >= MAX_INCLUDE_DEPTH:
            raise self.error(rest[0], "#include nested too deeply",
                             hint="does a header include itself without `#pragma once`?")
        start = self.source_map.append(name, found.read_text())
        tokens = scan(self.source_map.text[start:], self.source_map)
        self.open_files.append(_OpenFile(found, self.tokens, self.pos, len(self.conditionals)))
        self.tokens = [replace(t, offset=t.offset + start) for t in tokens]
        self.pos = 0

    def _close_file(self, eof: Token) -> None:
        """At the end of an included file: check its #if groups are closed, and go back to the
        file that included it."""
        closing = self.open_files.pop()
        if len(self.conditionals) > closing.conditionals:
            open_group = self.conditionals[-1]
            raise self.error(open_group.directive, "unterminated conditional directive",
                             hint=f"this #{open_group.directive.text} has no matching #endif "
                                  "in its file")
        self.tokens, self.pos = closing.resume_tokens, closing.resume_pos

    def _define(self, directive: Token, rest: list[Token]) -> None:
        name = self._macro_name(directive, rest)
        params: list[str] | None = None
        body = rest[1:]
        if body and _is_punct(body[0], "(") and not body[0].space_before:
            params, body = self._parameters(body)
        for k, token in enumerate(body):
            if params is not None and _is_punct(token, "#") and (
                    k + 1 == len(body) or body[k + 1].text not in params):
                raise self.error(token, "'#' is not followed by a macro parameter")
            if _is_punct(token, "##") and (k == 0 or k + 1 == len(body)):
                raise self.error(token, "'##' cannot appear at either end of a macro expansion")
        self.macros[name.text] = _Macro(name.text, None if params is None else tuple(params),
                                        tuple(body))

    def _parameters(self, tokens: list[Token]) -> tuple[list[str], list[Token]]:
        """Parses `(a, b, ...)` at the start of `tokens`; returns the names and the body."""
        params: list[str] = []
        k = 1
        if k < len(tokens) and _is_punct(tokens[k], ")"):
            return params, tokens[k + 1 :]
        while k < len(tokens):
            token = tokens[k]
            if _is_punct(token, "..."):
                params.append("__VA_ARGS__")
            elif token.kind != "ident":
                raise self.error(token, "invalid token in macro parameter list")
            elif token.text == "__VA_ARGS__":
                raise self.error(token, "__VA_ARGS__ can only appear in the expansion of a "
                                        "variadic macro", hint="declare the macro with `...`")
            elif token.text in params:
                raise self.error(token, f"duplicate macro parameter name '{token.text}'")
            else:
                params.append(token.text)
            k += 1
            if k < len(tokens) and _is_punct(tokens[k], ")"):
                return params, tokens[k + 1 :]
            if params[-1] == "__VA_ARGS__" or k == len(tokens) or not _is_punct(tokens[k], ","):
                break
            k += 1
        raise self.error(tokens[min(k, len(tokens) - 1)], "missing ')' in macro parameter list")

    # --- Macro expansion -----------------------------------------------------------------------

    def _expand(self, stream: _Stream, out: list[_Item]) -> None:
        """Moves `stream` to `out`, replacing every macro invocation (and rescanning the result)."""
        while (item := stream.next()) is not None:
            token, hide = item
            if token.kind != "ident":
                out.append(item)
                continue
            if self.in_if and token.text == "defined":
                out.append(self._defined(stream, token))
                continue
            macro = self.macros.get(token.text)
            if macro is None or token.text in hide:
                out.append(item)
                continue
            if macro.params is None:
                stream.push(self._substitute(macro, token, hide | {macro.name}, []))
                continue
            following = stream.peek()
            if following is None or not _is_punct(following[0], "("):
                out.append(item)  # a function-like macro's name alone is just a name
                continue
            stream.next()
            args, close_hide = self._arguments(stream, macro, token)
            stream.push(self._substitute(macro, token, (hide & close_hide) | {macro.name}, args))

    def _defined(self, stream: _Stream, operator: Token) -> _Item:
        """`defined X` or `defined(X)` as the int token 1 or 0."""
        item = stream.next()
        parenthesized = item is not None and _is_punct(item[0], "(")
        if parenthesized:
            item = stream.next()
        if item is None or item[0].kind != "ident":
            raise self.error(item[0] if item else operator,
                             "macro name must be an identifier", hint="write defined(NAME)")
        if parenthesized:
            close = stream.next()
            if close is None or not _is_punct(close[0], ")"):
                raise self.error(item[0], "missing ')' after 'defined'")
        value = int(item[0].text in self.macros)
        return Token("int", str(value), operator.offset, value), _NO_HIDE

    def _arguments(self, stream: _Stream, macro: _Macro,
                   name: Token) -> tuple[list[list[_Item]], frozenset[str]]:
        """Collects the arguments after `(`; returns them and the hide set of the `)`."""
        params = macro.params or ()
        args: list[list[_Item]] = [[]]
        depth = 0
        while True:
            item = stream.next()
            if item is None:
                raise self.error(name, "unterminated function-like macro invocation",
                                 hint=f"'{name.text}' needs a closing ')'")
            token = item[0]
            if token.kind == "punct":
                if token.text == "(":
                    depth += 1
                elif token.text == ")":
                    if depth == 0:
                        break
                    depth -= 1
                elif (token.text == "," and depth == 0
                      and (not macro.variadic or len(args) < len(params))):
                    args.append([])
                    continue
            args[-1].append(item)
        wanted = len(params)
        if wanted == 0 and args == [[]]:
            args = []
        elif macro.variadic and len(args) == wanted - 1:
            args.append([])  # `F(a)` for `F(x, ...)`: the variadic part is empty
        if len(args) != wanted:
            few = len(args) < wanted
            raise self.error(name, f"too {'few' if few else 'many'} arguments provided to "
                                   f"function-like macro invocation",
                             hint=f"'{name.text}' takes {wanted} argument(s), got {len(args)}")
        return args, item[1]

    def _substitute(self, macro: _Macro, site: Token, hide: frozenset[str],
                    args: list[list[_Item]]) -> list[_Item]:
        """The macro's body with arguments substituted, `#` and `##` applied, ready to rescan.

        Body tokens take the offset of the macro name at `site`; argument tokens keep theirs.
        """
        params = macro.params or ()
        expanded: dict[int, list[_Item]] = {}
        body = macro.body
        out: list[_Item] = []
        k = 0
        while k < len(body):
            token = body[k]
            if params and _is_punct(token, "#") and body[k + 1].text in params:
                arg = args[params.index(body[k + 1].text)]
                out.append((self._stringize(arg, site, token.space_before), _NO_HIDE))
                k += 2
                continue
            if _is_punct(token, "##"):
                self._paste(out, body[k + 1], params, args, site)
                k += 2
                continue
            index = params.index(token.text) if token.text in params else -1
            if index < 0:
                out.append((_moved(token, site.offset, token.space_before), _NO_HIDE))
            elif k + 1 < len(body) and _is_punct(body[k + 1], "##"):
                out.extend(self._respaced(args[index], token) or [(_PLACEMARKER, _NO_HIDE)])
            else:
                if index not in expanded:
                    expanded[index] = []
                    self._expand(_Stream(list(args[index])), expanded[index])
                out.extend(self._respaced(expanded[index], token))
            k += 1
        self.expanded += len(out)
        if self.expanded > MAX_EXPANDED_TOKENS:
            raise self.error(site, f"macro expansion produces more than {MAX_EXPANDED_TOKENS} "
                                   "tokens", hint="a macro that expands to many copies of "
                                   "another grows exponentially")
        result = [(t, h | hide) for t, h in out if t is not _PLACEMARKER]
        if result:
            # The expansion stands where the name stood, so it inherits the name's spacing.
            first, first_hide = result[0]
            result[0] = (_moved(first, first.offset, site.space_before), first_hide)
        return result

    @staticmethod
    def _respaced(items: list[_Item], param: Token) -> list[_Item]:
        """An argument's tokens, the first spaced as the parameter was in the body."""
        if not items:
            return []
        first, hide = items[0]
        return [(_moved(first, first.offset, param.space_before), hide), *items[1:]]

    def _paste(self, out: list[_Item], right: Token, params: tuple[str, ...],
               args: list[list[_Item]], site: Token) -> None:
        """Applies `##` between the end of `out` and `right` (a parameter or a body token)."""
        if right.kind == "ident" and right.text in params:
            operand = self._respaced(args[params.index(right.text)], right)
            if right.text == "__VA_ARGS__" and out and _is_punct(out[-1][0], ","):
                # GNU's `, ## __VA_ARGS__`: the comma goes away with an empty variadic part.
                if not operand:
                    out.pop()
                out.extend(operand)
                return
        else:
            operand = [(_moved(right, site.offset, right.space_before), _NO_HIDE)]
        if not operand:
            return  # pasting a placemarker leaves the left side as it is
        left = out.pop()[0]
        if left is _PLACEMARKER:
            out.extend(operand)
        else:
            out.append((self._pasted(left, operand[0][0], site), _NO_HIDE))
            out.extend(operand[1:])

    def _pasted(self, left: Token, right: Token, site: Token) -> Token:
        text = left.text + right.text
        try:
            tokens = scan(text, SourceMap(text))
        except CompileError:
            tokens = []
        if len(tokens) != 2 or tokens[0].text != text:
            raise self.error(site, f"pasting formed '{text}', an invalid preprocessing token")
        token = tokens[0]
        return Token(token.kind, text, site.offset, token.value, token.suffix, left.space_before)

    @staticmethod
    def _stringize(arg: list[_Item], site: Token, space_before: bool) -> Token:
        """`#param`: the argument's spelling as a string literal, each gap one space."""
        raw: list[str] = []
        spelled: list[str] = []
        for k, (token, _) in enumerate(arg):
            gap = " " if k and token.space_before else ""
            raw.append(gap + token.text)
            # Only string and character literals get their quotes and backslashes escaped
            # (C17 6.10.3.2); a stray backslash elsewhere is copied as it is.
            if token.kind in ("string", "char"):
                spelled.append(gap + token.text.replace("\\", "\\\\").replace('"', '\\"'))
            else:
                spelled.append(gap + token.text)
        return Token("string", '"' + "".join(spelled) + '"', site.offset, "".join(raw), "",
                     space_before)


def preprocess(text: str, source_map: SourceMap, predefined: dict[str, str] | None = None,
               include_dirs: Sequence[str | Path] = (),
               after: Prefix | None = None) -> list[Token]:
    """Lexes and preprocesses `text`, returning the tokens the parser sees, ending with "eof".

    Directives are executed, macros expanded and `#pragma` / `_Pragma` dropped. Tokens keep
    their offsets in `text`; tokens a macro produced carry the offset of the macro's name at the
    use site. `predefined` adds object-like macros (name -> replacement text) to Metal's own.
    `#include "name"` reads `name` from the first of `include_dirs` that has it; its text is
    appended to `source_map` as a section named `name`, so diagnostics point into the file.
    `after`, a `preprocess_prefix` of the start of `text`, stands for preprocessing that start
    again (its macros included; `predefined` then adds to them).
    """
    if after is None:
        return _Preprocessor(text, source_map, predefined or {}, include_dirs=include_dirs).run()
    if not text.startswith(after.text):
        raise ValueError("the text does not begin with the preprocessed prefix")
    return [*after.tokens, *_Preprocessor(text, source_map, predefined or {}, after,
                                          include_dirs).run()]


def preprocess_prefix(text: str, source_map: SourceMap,
                      predefined: dict[str, str] | None = None) -> Prefix:
    """Preprocesses `text`, a first part of translation units, for `preprocess(after=)`.

    `text` must end a line, outside any #if group and any macro invocation."""
    if text and not text.endswith("\n"):
        raise ValueError("a preprocessed prefix must end with a newline")
    pp = _Preprocessor(text, source_map, predefined or {})
    tokens = pp.run()[:-1]
    return Prefix(text, tuple(tokens), dict(pp.macros), pp.expanded)
