"""Malformed kernels give CompileError at the user's line; fuzzed kernels never crash or hang."""

import contextlib
import re

import mlx.core as mx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import metalsim

GOOD = """\
uint i = thread_position_in_grid.x;
float acc = 0.0f;
for (uint k = 0; k < 4; ++k) {
    acc += a[(i + k) % a_shape[0]] * 0.5f;
}
if (i < a_shape[0]) {
    out[i] = acc;
}
"""


def call(source, header=""):
    kernel = metalsim.metal_kernel("k", ["a"], ["out"], source, header=header)
    return metalsim.simulate(kernel, inputs=[mx.arange(8, dtype=mx.float32)],
                             output_shapes=[(8,)], output_dtypes=[mx.float32], grid=(8, 1, 1),
                             threadgroup=(4, 1, 1))


MALFORMED = [
    # (source, line, column, message pattern, hint pattern)
    ("uint i = thread_position_in_grid.x;\nout[i] = a[j];", 2, 12,
     "undeclared identifier 'j'", ""),
    ("uint i = thread_position_in_grid.x;\nflaot x = a[i];\nout[i] = x;", 2, 1,
     "unknown type name 'flaot'", "did you mean 'float'"),
    ("uint i = thread_position_in_grid.x\nout[i] = a[i];", 1, 35, "expected ';'", ""),
    ("uint i = thread_position_in_grid.x;\na[i] = 1.0f;", 2, 1,
     "const", ""),
    ("uint i = thread_position_in_grid.x;\nout[i] = a[i] % 2.0f;", 2, 10,
     "invalid operands", "fmod"),
    ("uint i = thread_position_in_grid.x;\nint grid_size = 3;\nout[i] = a[i] + grid_size;", 2, 5,
     "redefinition of 'grid_size'", "MLX adds one"),
    ("uint i = thread_position_in_grid.x;\nfloat4 v = float4(1.0f, 2.0f);\nout[i] = v.x;", 2, 12,
     "too few elements", ""),
    ("uint i = thread_position_in_grid.x;\nfloat2 v = float2(1.0f);\nout[i] = v.z;", 3, 10,
     "exceeds", ""),
    ("uint i = thread_position_in_grid.x;\nout[i] = max(int(i), 2u);", 2, 10,
     "no matching function|max", ""),
    ("uint i = thread_position_in_grid.x;\nfloat* p = out;\nout[i] = a[i];", 2, 1,
     "address space", ""),
    ("uint i = thread_position_in_grid.x;\nthreadgroup float t[4] = {0, 0, 0, 0};\nout[i] = t[0];",
     2, 26, "threadgroup variables cannot have an initializer", ""),
    ("uint i = thread_position_in_grid.x;\nif (i < 3) {\n  out[i] = a[i];\n", 2, 12,
     "expected '}'|unmatched|'}'", ""),
    ("uint i = thread_position_in_grid.x;\nbreak;\nout[i] = a[i];", 2, 1,
     "'break' statement not in loop", ""),
    ("uint i = thread_position_in_grid.x;\nout[i] = sqrtt(a[i]);", 2, 10,
     "undeclared identifier 'sqrtt'", "did you mean 'sqrt'"),
    ("uint i = thread_position_in_grid.x;\nout[i] = a[i] @ 2;", 2, 15, "unexpected character", ""),
    ("uint i = thread_position_in_grid.x;\nint x[1 / 0];\nout[i] = x[0];", 2, 7,
     "array size is not an integral constant expression", ""),
]


@pytest.mark.parametrize(("source", "line", "column", "message", "hint"), MALFORMED)
def test_malformed_kernel_reports_the_users_line(source, line, column, message, hint):
    with pytest.raises(metalsim.CompileError) as info:
        call(source)
    err = info.value
    assert err.diagnostic.section == "source"
    assert (err.line, err.column) == (line, column), str(err)
    assert re.search(message, err.diagnostic.message), err.diagnostic.message
    assert re.search(hint, err.diagnostic.hint), err.diagnostic.hint
    assert "^" in str(err)


# Invalid Metal that the Metal compiler rejects (metalsim once ran it), and errors whose message
# once named something other than the real cause.
REFUSED_AS_ON_METAL = [
    ("bfloat x = a[0];\nout[0] = x;", 1, 12, "cannot convert 'float' to 'bfloat' implicitly",
     "convert explicitly"),
    ("half h = a[0];\nbfloat x = h;\nout[0] = x;", 2, 12,
     "cannot convert 'half' to 'bfloat' implicitly", ""),
    ("bfloat x = bfloat(a[0]) + 1.0f;\nout[0] = x;", 1, 12, "'float' to 'bfloat'", ""),
    ("long long x = 1;\nout[0] = x;", 1, 1, "'long long' is not a Metal type", "64 bits"),
    ("static int calls = 0;\nout[0] = calls;", 1, 12,
     "static local variables are not allowed in Metal", "constant"),
    ("out[0] = std::max(a[0], 1.0f);", 1, 10, "undeclared identifier 'std'", "metal::max"),
    ("texture2d<float> t;\nout[0] = 1;", 1, 1, "'texture2d' is a Metal texture type",
     "only buffers"),
    ("float3x3 m;\nout[0] = 1;", 1, 1, r"matrix types \('float3x3'\) are not supported",
     "array of vectors"),
    ("float sq(float x) { return x * x; }\nout[0] = sq(a[0]);", 1, 7,
     "function definition is not allowed here: 'sq'", "header"),
    ("float4 v = float4(1.0f);\nv.xx = float2(1.0f, 2.0f);\nout[0] = v.x;", 2, 1,
     r"swizzle with repeated components \('.xx'\) is not assignable", "distinct"),
    ("goto done;\ndone: out[0] = 1;", 1, 1, "'goto' is not allowed in Metal", "break"),
    ("out[0] = 1;\ndone: out[0] = 2;", 2, 1, "label 'done' is not allowed in Metal", "no goto"),
    ("uint i = thread_position_in_grid().x;\nout[i] = 1;", 1, 10,
     "called object type 'uint3' is not a function", "kernel parameter .* drop the '\\(\\)'"),
    ("atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst);\nout[0] = 1;", 1, 1,
     "'atomic_thread_fence' .* not supported by metalsim", "threadgroup_barrier"),
]


@pytest.mark.parametrize(("source", "line", "column", "message", "hint"), REFUSED_AS_ON_METAL)
def test_invalid_metal_is_refused_naming_the_real_cause(source, line, column, message, hint):
    test_malformed_kernel_reports_the_users_line(source, line, column, message, hint)


@pytest.mark.parametrize("header", ["float scale = 2.0f;", "const float scale = 2.0f;"])
def test_a_program_scope_variable_outside_constant_memory_is_refused(header):
    with pytest.raises(metalsim.CompileError,
                       match="program scope variable must reside in constant address space"):
        call("out[0] = scale;", header=header)


def test_program_scope_constants_are_accepted():
    run = call("out[thread_position_in_grid.x] = s + t;",
               header="constant float s = 2.0f;\nconstexpr constant float t = 1.0f;")
    assert run.outputs[0].tolist() == [3.0] * 8


def test_a_complex64_input_is_refused_by_name_at_launch():
    kernel = metalsim.metal_kernel("k", ["z"], ["out"], "out[0] = 1;")
    with pytest.raises(ValueError, match="'z' is complex64, which metalsim does not support"):
        kernel(inputs=[mx.array([1 + 2j])], output_shapes=[(1,)], output_dtypes=[mx.float32],
               grid=(1, 1, 1), threadgroup=(1, 1, 1))


def test_error_in_the_header_points_at_the_header():
    with pytest.raises(metalsim.CompileError) as info:
        call("uint i = thread_position_in_grid.x;\nout[i] = twice(a[i]);",
             header="inline float twice(float x) { return 2 * y; }\n")
    assert info.value.diagnostic.section == "header"
    assert (info.value.line, info.value.column) == (1, 42)


def test_good_kernel_compiles_and_runs():
    assert call(GOOD).report.diagnostics == []


# --- fuzzing: only CompileError or a finished run, never another exception, never a hang ------

TOKENS = ["uint", "int", "float", "half", "float4", "i", "k", "acc", "a", "out", "a_shape",
          "thread_position_in_grid", ".x", ".yz", "[", "]", "(", ")", "{", "}", ";", "=", "+=",
          "+", "-", "*", "/", "%", "<<", ">>", "&&", "||", "!", "?", ":", "<", ">", "==", ",",
          "0", "1", "4", "0.5f", "2u", "for", "while", "if", "else", "return", "break",
          "threadgroup", "threadgroup_barrier(mem_flags::mem_threadgroup)", "float t[4]",
          "&", "->", "sizeof", "static_cast<int>", "as_type<uint>", "#define X 1\n", "\n"]


def run_fuzzed(source):
    with contextlib.suppress(metalsim.CompileError):
        call(source)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(TOKENS), min_size=1, max_size=40))
def test_random_token_soup_only_raises_compile_errors(tokens):
    run_fuzzed(" ".join(tokens))


@st.composite
def mutated_kernel(draw, text=GOOD):
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        line = lines[i]
        action = draw(st.sampled_from(["delete_char", "insert", "swap_lines", "drop_line",
                                       "duplicate_line"]))
        if action == "delete_char" and line:
            j = draw(st.integers(0, len(line) - 1))
            lines[i] = line[:j] + line[j + 1:]
        elif action == "insert":
            j = draw(st.integers(0, len(line)))
            lines[i] = line[:j] + draw(st.sampled_from(TOKENS)) + line[j:]
        elif action == "swap_lines":
            k = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[k] = lines[k], lines[i]
        elif action == "drop_line":
            del lines[i]
            if not lines:
                lines = ["uint i = 0;"]
        else:
            lines.insert(i, line)
    return "\n".join(lines)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated_kernel())
def test_mutated_kernels_only_raise_compile_errors(source):
    run_fuzzed(source)


# Structs in every role: helpers taking and returning them, threadgroup arrays, a device cast.
GOOD_WITH_STRUCTS = """\
struct Acc { float sum; int n; float4 v; float w[2]; };
Acc make(float x) { Acc r = {x, 1}; return r; }
void add(thread Acc& acc, float x) { acc.sum += x; acc.n++; acc.w[1] = x; }
uint i = thread_position_in_grid.x;
threadgroup Acc shared[4];
Acc acc = make(0.0f);
for (uint k = 0; k < 4; ++k) {
    add(acc, a[(i + k) % a_shape[0]]);
}
shared[i % 4] = acc;
threadgroup_barrier(mem_flags::mem_threadgroup);
Acc other = shared[(i + 1) % 4];
device const Acc* p = (device const Acc*)a;
if (i < a_shape[0]) {
    out[i] = acc.sum / acc.n + other.w[1] + p->sum * 0.0f;
}
"""


# Member functions: implicit members and `this`, const, address-space qualified overloads,
# calls through pointers, on threadgroup objects and on temporaries.
GOOD_WITH_METHODS = """\
struct Acc {
    float sum; int n;
    void add(float x) { sum += x; this->n++; }
    void add(float x) threadgroup { sum += x; n++; }
    float mean() const { return n > 0 ? sum / n : 0.0f; }
    float mean() const threadgroup { return sum / n; }
    Acc merged(const thread Acc& o) const { Acc r = *this; r.sum += o.sum; r.n += o.n; return r; }
};
uint i = thread_position_in_grid.x;
threadgroup Acc shared[4];
Acc acc = {0.0f, 0};
thread Acc* p = &acc;
for (uint k = 0; k < 4; ++k) {
    p->add(a[(i + k) % a_shape[0]]);
}
shared[i % 4] = acc;
shared[i % 4].add(1.0f);
threadgroup_barrier(mem_flags::mem_threadgroup);
if (i < a_shape[0]) {
    out[i] = acc.merged(Acc{2.0f, 1}).mean() + shared[(i + 1) % 4].mean();
}
"""


# Constructors: member initializer lists, overloads, delegation, a converting constructor, a
# default-constructed member and array, braces and temporaries calling constructors.
GOOD_WITH_CONSTRUCTORS = """\
struct Stat {
    float mean; float m2; int n;
    Stat() : Stat(0.0f, 0) {}
    Stat(float x, int k) : mean(x), m2(0), n(k) { if (k == 0) mean = 0; }
    Stat(float x) : mean(x), m2(0), n(1) {}
    void add(float x) { n++; float d = x - mean; mean += d / n; m2 += d * (x - mean); }
    ~Stat() {}
};
struct Pair { Stat s; float w; };
float first(Stat s) { return s.mean; }
uint i = thread_position_in_grid.x;
Stat st;
Stat parts[2] = {Stat(1.0f), {2.0f, 1}};
Pair pr = {};
for (uint k = 0; k < 4; ++k) {
    st.add(a[(i + k) % a_shape[0]]);
}
pr.s.add(parts[1].mean);
if (i < a_shape[0]) {
    out[i] = st.m2 / st.n + first(3.0f) + Stat{4.0f}.mean + pr.s.mean + parts[0].n;
}
"""


# Struct templates: type and int parameters with a default, a constructor and a member function
# template inside, a nested instance, a templated call operator in a function template.
GOOD_WITH_TEMPLATES = """\
template <typename T, int N = 2> struct Buf {
    T v[N];
    Buf(T x) { for (int k = 0; k < N; k++) v[k] = x; }
    T get(int k) const { return v[k % N]; }
    template <typename U> U scaled(U s) const { return U(v[0]) * s; }
};
template <typename T> struct Box { T inner; };
struct Max { template <typename T> T operator()(T a, T b) const { return a > b ? a : b; } };
template <typename Op>
float fold(const device float* x, uint n, Op op) { return op(op(x[0], x[n - 1]), x[n / 2]); }
uint i = thread_position_in_grid.x;
Buf<float> b(a[i % a_shape[0]]);
Buf<int, 3> c = Buf<int, 3>(2);
Box<Box<float>> d = {{1.5f}};
if (i < a_shape[0]) {
    out[i] = b.get(1) + c.get(i) + b.scaled(2.0f) + d.inner.inner + fold(a, a_shape[0], Max());
}
"""


GOOD_WITH_OPERATORS = """\
struct C {
    float re; float im;
    C operator*(C o) const { return {re * o.re - im * o.im, re * o.im + im * o.re}; }
    C operator-() const { return {-re, -im}; }
    void operator+=(C o) { re += o.re; im += o.im; }
    float operator[](int k) const { return k == 0 ? re : im; }
    bool operator<(C o) const { return re < o.re; }
};
inline C operator+(C a, C b) { return {a.re + b.re, a.im + b.im}; }
template <typename T> struct V { T x; V operator*(T k) const { return {x * k}; } };
uint i = thread_position_in_grid.x;
C z = {a[i % a_shape[0]], 1.0f};
C w = z * z + -z;
w += C{0.5f, 0.5f};
V<int> v = V<int>{int(i)} * 3;
if (i < a_shape[0]) {
    out[i] = w[0] + w[1] + (z < w ? 1.0f : 0.0f) + float(v.x);
}
"""


def call_with_header(text, header_lines=3):
    """The first lines are the header (C++ has no functions inside functions)."""
    lines = text.splitlines()
    return call("\n".join(lines[header_lines:]),
                header="\n".join(lines[:header_lines]) + "\n")


# Each kernel above and how many of its first lines are its header.
CPP_KERNELS = {"structs": (GOOD_WITH_STRUCTS, 3), "methods": (GOOD_WITH_METHODS, 8),
               "constructors": (GOOD_WITH_CONSTRUCTORS, 10),
               "templates": (GOOD_WITH_TEMPLATES, 10), "operators": (GOOD_WITH_OPERATORS, 10)}


@pytest.mark.parametrize("name", CPP_KERNELS)
def test_each_cpp_feature_kernel_runs_clean(name):
    assert call_with_header(*CPP_KERNELS[name]).report.diagnostics == []


@pytest.mark.parametrize("name", CPP_KERNELS)
def test_mutated_cpp_feature_kernels_only_raise_compile_errors(name):
    text, header_lines = CPP_KERNELS[name]

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(mutated_kernel(text))
    def check(source):
        with contextlib.suppress(metalsim.CompileError):
            call_with_header(source, header_lines)

    check()


def test_infinite_loop_ends_with_a_step_limit_diagnostic():
    run = call("while (true) { }\nout[0] = 1;")
    assert [d.kind for d in run.report.errors] == ["step-limit"]


@pytest.mark.parametrize(("source", "name", "metal"), [
    ("uint i = threadIdx.x;\nout[i] = a[i];", "threadIdx", "thread_position_in_threadgroup"),
    ("uint i = blockIdx.x;\nout[i] = a[i];", "blockIdx", "threadgroup_position_in_grid"),
    ("uint i = thread_position_in_grid.x;\n__syncthreads();\nout[i] = a[i];", "__syncthreads",
     "threadgroup_barrier"),
    ("__shared__ float t[8];\nuint i = thread_position_in_grid.x;\nout[i] = a[i];",
     "__shared__", "threadgroup address space"),
    ("uint i = thread_position_in_grid.x;\nout[i] = a[i] + warpSize;", "warpSize",
     "threads_per_simdgroup"),
])
def test_cuda_names_are_compile_errors_whose_hint_names_metals(source, name, metal):
    with pytest.raises(metalsim.CompileError) as info:
        call(source)
    d = info.value.diagnostic
    assert f"'{name}'" in d.message and metal in d.hint and "CUDA" in d.hint


def test_a_kernel_function_in_the_source_is_explained_but_one_in_the_header_is_not():
    pasted = ("kernel void f(device const float* a [[buffer(0)]], device float* out "
              "[[buffer(1)]], uint i [[thread_position_in_grid]]) {\n    out[i] = a[i];\n}\n")
    with pytest.raises(metalsim.CompileError) as info:
        call(pasted)
    assert "'f' is a whole kernel function" in info.value.diagnostic.message
    assert "header=" in info.value.diagnostic.hint
    # In the header a kernel function is fine: the body's own mistake is what is reported.
    with pytest.raises(metalsim.CompileError) as info:
        call("uint i = thread_position_in_grid.x\nout[i] = a[i];", header=pasted)
    assert info.value.diagnostic.message.startswith("expected ';'")
