"""Structs: layout, thread/threadgroup/device objects, members, copies, calls, and the memory
checks (counts, bounds, races, uninitialised reads) on member bytes."""

import shutil
import subprocess

import mlx.core as mx
import numpy as np
import pytest
from struct_kernels import Kernels, kinds

import metalsim
from metalsim.exec.compile import Compiler
from metalsim.exec.launch import BUILTINS
from metalsim.lang.parser import parse_source
from metalsim.lang.types import StructType

PARAMS = "struct Params { int n; float scale; float4 bias; int arr[3]; };"

KERNELS = Kernels(PARAMS)
simulate = KERNELS.simulate
run = KERNELS.run


def layouts(header: str) -> dict[str, StructType]:
    unit, source_map = parse_source(header)
    compiler = Compiler(unit, source_map, BUILTINS)
    compiler.declare_globals()
    return {k: v for k, v in compiler.globals.names.items() if isinstance(v, StructType)}


# --- layout ------------------------------------------------------------------------------------

def test_members_are_placed_at_their_alignment_and_size_rounds_up_to_the_struct_alignment():
    s = layouts("struct S { char c; float f; short h; };")["S"]
    assert [(m.name, m.offset) for m in s.members] == [("c", 0), ("f", 4), ("h", 8)]
    assert (s.size, s.align) == (12, 4)


def test_float3_member_takes_16_bytes_with_16_byte_alignment():
    s = layouts("struct S { float a; float3 v; float b; };")["S"]
    assert [m.offset for m in s.members] == [0, 16, 32]
    assert (s.size, s.align) == (48, 16)


def test_packed_float3_member_takes_12_bytes_with_4_byte_alignment():
    s = layouts("struct S { float a; packed_float3 v; float b; };")["S"]
    assert [m.offset for m in s.members] == [0, 4, 16]
    assert (s.size, s.align) == (20, 4)


def test_half3_is_8_bytes_and_nested_struct_keeps_its_alignment():
    s = layouts("struct In { half3 h; char c; }; struct S { char a; In in; };")
    assert (s["In"].size, s["In"].align) == (16, 8)
    assert [m.offset for m in s["S"].members] == [0, 8]
    assert s["S"].size == 24


def test_sizeof_and_alignof_in_a_kernel():
    out = run("out[0] = sizeof(Params); out[1] = alignof(Params); "
              "out[2] = sizeof(packed_float3); out[3] = alignof(float3);", grid=(1, 1, 1))
    assert out.tolist() == [48, 16, 12, 16]


# gcc oracle: plain-C structs (scalars, arrays, nested structs; vectors as gcc vector types,
# which have MSL's size and alignment) must get gcc's offsetof/sizeof/_Alignof exactly.
C_TYPES = {"char": "signed char", "uchar": "unsigned char", "short": "short",
           "ushort": "unsigned short", "int": "int", "uint": "unsigned int", "long": "long",
           "ulong": "unsigned long", "float": "float", "half": "unsigned short",
           "bool": "_Bool", "float2": "v_float2", "float4": "v_float4", "int2": "v_int2",
           "float3": "v_float4", "half4": "v_half4", "packed_float3": "p_float3"}
C_PRELUDE = """
#include <stdio.h>
#include <stddef.h>
typedef float v_float2 __attribute__((vector_size(8)));
typedef float v_float4 __attribute__((vector_size(16)));
typedef int v_int2 __attribute__((vector_size(8)));
typedef unsigned short v_half4 __attribute__((vector_size(8)));
typedef float p_float3[3];
"""


def random_structs(rng: np.random.Generator, count: int) -> list[tuple[str, list]]:
    structs: list[tuple[str, list]] = []
    for k in range(count):
        fields = []
        for j in range(int(rng.integers(1, 6))):
            if structs and rng.random() < 0.25:
                t = structs[int(rng.integers(len(structs)))][0]
            else:
                t = str(rng.choice(list(C_TYPES)))
            length = int(rng.integers(1, 4)) if rng.random() < 0.3 else 0
            fields.append((f"m{j}", t, length))
        structs.append((f"S{k}", fields))
    return structs


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_struct_layouts_match_gcc_offsetof_sizeof_and_alignof(tmp_path):
    structs = random_structs(np.random.default_rng(7), 60)

    def decl(fields, types):
        return " ".join(f"{types.get(t, t)} {n}{f'[{a}]' if a else ''};" for n, t, a in fields)
    c = C_PRELUDE + "".join(f"typedef struct {{ {decl(f, C_TYPES)} }} {s};\n" for s, f in structs)
    c += "int main(void) {\n"
    for s, fields in structs:
        c += f'printf("{s} %zu %zu\\n", sizeof({s}), _Alignof({s}));\n'
        for n, _, _ in fields:
            c += f'printf("{s}.{n} %zu\\n", offsetof({s}, {n}));\n'
    c += "return 0; }\n"
    (tmp_path / "layout.c").write_text(c)
    subprocess.run(["gcc", "-std=c11", "-o", str(tmp_path / "layout"), str(tmp_path / "layout.c")],
                   check=True)
    expected = subprocess.run([str(tmp_path / "layout")], check=True, capture_output=True,
                              text=True).stdout.split("\n")
    found = layouts("".join(f"struct {s} {{ {decl(f, {})} }};\n" for s, f in structs))
    lines = []
    for s, _ in structs:
        lines.append(f"{s} {found[s].size} {found[s].align}")
        lines += [f"{s}.{m.name} {m.offset}" for m in found[s].members]
    assert lines == expected[:-1]


# --- thread objects ----------------------------------------------------------------------------

def test_brace_initialisation_member_reads_and_zero_filled_tail():
    out = run("""
    uint i = thread_position_in_grid.x;
    Params p = {int(i), 2.0f, float4(1, 2, 3, 4)};
    out[i] = p.n * p.scale + p.bias.z + p.arr[2];
    """)
    assert out.tolist() == [3, 5, 7, 9]


def test_direct_list_initialisation_and_temporaries():
    out = run("""
    uint i = thread_position_in_grid.x;
    Params p{int(i), 0.5f};
    out[i] = p.scale + Params{7}.n + Params().n + Params{1, 2, {}, {4, 5, 6}}.scale;
    """)
    assert out.tolist() == [9.5] * 4


def test_member_compound_assignment_increment_and_swizzle_writes():
    out = run("""
    uint i = thread_position_in_grid.x;
    Params p = {int(i), 1.0f, float4(0), {1, 2, 3}};
    p.n++;
    ++p.arr[i % 3];
    p.scale *= 3;
    p.bias.yx = float2(10, 20);
    p.arr[0] += p.n;
    out[i] = p.n + p.scale + p.bias.x + p.arr[0] * 100 + p.arr[1] * 1000;
    """)
    i = np.arange(4)
    arr0 = 1 + (i % 3 == 0) + (i + 1)
    arr1 = 2 + (i % 3 == 1)
    assert out.tolist() == ((i + 1) + 3 + 20 + arr0 * 100 + arr1 * 1000).tolist()


def test_whole_struct_copy_is_independent_of_the_original():
    out = run("""
    uint i = thread_position_in_grid.x;
    Params p = {int(i), 1.0f};
    Params q;
    q = p;
    q.n = 50;
    p.arr[1] = 4;
    out[i] = p.n + q.n + q.arr[1];
    """)
    assert out.tolist() == [50, 51, 52, 53]


def test_nested_structs_and_arrays_of_structs():
    header = PARAMS + "struct Outer { Params p[2]; half h; };"
    out = run("""
    uint i = thread_position_in_grid.x;
    Outer o = {{{1, 2.0f}, {int(i)}}, 0.5h};
    o.p[1].bias.w = 3;
    Params inner = o.p[0];
    out[i] = inner.n + inner.scale + o.p[1].n * 10 + o.p[1].bias.w + float(o.h);
    """, header=header)
    assert out.tolist() == [6.5, 16.5, 26.5, 36.5]


def test_typedef_struct_and_struct_defined_in_the_kernel_body():
    header = "typedef struct { int a; float b; } Pair; typedef struct Tag { int c; } Tagged;"
    out = run("""
    struct Local { Pair pr; struct Tag t; };
    uint i = thread_position_in_grid.x;
    Local l = {{int(i), 0.5f}, {3}};
    Tagged t = l.t;
    out[i] = l.pr.a + l.pr.b + t.c;
    """, header=header)
    assert out.tolist() == [3.5, 4.5, 5.5, 6.5]


def test_structs_by_value_by_reference_and_returned_from_helpers():
    header = PARAMS + """
    Params make(int n) { return {n, 0.5f, float4(1, 2, 3, 4), {7, 8, 9}}; }
    void bump(thread Params& p, float by) { p.scale += by; p.n++; }
    float consume(Params p) { p.n = 100; return p.n + p.scale; }
    float peek(const thread Params& p) { return p.scale; }
    """
    out = run("""
    uint i = thread_position_in_grid.x;
    Params p = make(int(i));
    bump(p, 2.0f);
    float c = consume(p);
    out[i] = p.n * 1000 + c + peek(make(0)) + make(5).n * 10;
    """, header=header)
    assert out.tolist() == [(i + 1) * 1000 + 102.5 + 0.5 + 50 for i in range(4)]


def test_pointer_to_a_thread_struct_and_arrow():
    out = run("""
    uint i = thread_position_in_grid.x;
    Params p = {int(i)};
    thread Params* q = &p;
    q->n += 5;
    q->bias.x = 2;
    out[i] = p.n + (*q).bias.x;
    """)
    assert out.tolist() == [7, 8, 9, 10]


def test_conditional_chooses_between_structs():
    out = run("""
    uint i = thread_position_in_grid.x;
    Params a = {1}, b = {2};
    Params c = i % 2 ? a : b;
    out[i] = c.n;
    """)
    assert out.tolist() == [2, 1, 2, 1]


def test_constant_program_scope_struct():
    header = PARAMS + "constant Params P = {3, 1.5f, float4(1), {4, 5, 6}};"
    out = run("out[thread_position_in_grid.x] = P.n + P.scale + P.arr[2];", header=header)
    assert out.tolist() == [10.5] * 4


def test_reading_a_member_never_written_is_an_uninitialised_read():
    result = simulate("Params p; p.n = 1; out[thread_position_in_grid.x] = p.scale;")
    assert kinds(result) == ["uninitialized-read"]


# --- device and threadgroup memory -----------------------------------------------------------

def params_bytes(rows):
    """Params rows packed as the C layout (gcc: n@0, scale@4, bias@16, arr@32, size 48)."""
    dt = np.dtype({"names": ["n", "scale", "bias", "arr"],
                   "formats": [np.int32, np.float32, (np.float32, 4), (np.int32, 3)],
                   "offsets": [0, 4, 16, 32], "itemsize": 48})
    return mx.array(np.array(rows, dt).view(np.uint8))


def test_structs_read_from_a_cast_kernel_input_match_numpy():
    rows = [(k, 0.5 * k, (k, 2 * k, 3 * k, 4 * k), (k, k + 1, k + 2)) for k in range(4)]
    out = run("""
    uint i = thread_position_in_grid.x;
    device const Params* ps = (device const Params*)in0;
    out[i] = ps[i].n + ps[i].scale * ps[i].bias.w + ps[3 - i].arr[2] + (ps + i)->bias.y;
    """, [params_bytes(rows)])
    k = np.arange(4)
    np.testing.assert_array_equal(out, k + 0.5 * k * 4 * k + (3 - k + 2) + 2 * k)


def test_member_load_counts_as_one_global_read_and_a_copy_one_per_member():
    rows = [(k, 1.0, (0, 0, 0, 0), (0, 0, 0)) for k in range(4)]
    one = simulate("device const Params* ps = (device const Params*)in0; "
                   "out[thread_position_in_grid.x] = ps[thread_position_in_grid.x].n;",
                   [params_bytes(rows)])
    whole = simulate("device const Params* ps = (device const Params*)in0; "
                     "Params p = ps[thread_position_in_grid.x]; "
                     "out[thread_position_in_grid.x] = p.n;", [params_bytes(rows)])
    assert one.report.max_per_thread()["global_reads"] == 1
    assert whole.report.max_per_thread()["global_reads"] == 6  # n, scale, bias, arr[0..2]


def test_struct_stored_through_a_cast_output_pointer():
    out = run("""
    uint i = thread_position_in_grid.x;
    device Params* ps = (device Params*)out;
    Params p = {int(i), 2.0f, float4(i), {1, 2, 3}};
    ps[i] = p;
    """, out_shape=(192,), dtype=mx.uint8, init_value=0)
    rows = np.frombuffer(out.tobytes(), np.int32).reshape(4, 12)
    assert rows[:, 0].tolist() == [0, 1, 2, 3]
    assert rows[:, 8:11].tolist() == [[1, 2, 3]] * 4
    assert rows[:, 3].tolist() == [0] * 4  # padding is not written


def test_out_of_bounds_member_read_is_reported():
    rows = [(k, 1.0, (0, 0, 0, 0), (0, 0, 0)) for k in range(4)]
    result = simulate("device const Params* ps = (device const Params*)in0; "
                      "out[thread_position_in_grid.x] = ps[thread_position_in_grid.x + 1].scale;",
                      [params_bytes(rows)])
    assert kinds(result) == ["out-of-bounds"]
    assert [d.threads for d in result.report.diagnostics][0][0] == (3, 0, 0)


def test_threadgroup_array_of_structs_shared_after_a_barrier():
    out = run("""
    threadgroup Params tile[4];
    uint i = thread_position_in_threadgroup.x;
    tile[i].n = int(i) * 10;
    tile[i].scale = 0.5f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = tile[3 - i].n + tile[i].scale;
    """)
    assert out.tolist() == [30.5, 20.5, 10.5, 0.5]


def test_different_members_of_one_threadgroup_struct_do_not_race():
    result = simulate("""
    threadgroup Params s;
    uint i = thread_position_in_threadgroup.x;
    if (i < 3) s.arr[i] = int(i);
    if (i == 3) s.n = 1;
    """)
    assert result.report.diagnostics == []


def test_threadgroup_struct_member_race_without_a_barrier_is_reported():
    result = simulate("""
    threadgroup Params s;
    uint i = thread_position_in_threadgroup.x;
    if (i == 0) s.n = 5;
    out[i] = s.n;
    """)
    assert "race" in kinds(result)


def test_threadgroup_struct_member_read_before_any_write_is_uninitialised():
    result = simulate("""
    threadgroup Params s;
    if (thread_position_in_threadgroup.x == 0) s.n = 1;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[thread_position_in_threadgroup.x] = s.scale;
    """)
    assert kinds(result) == ["uninitialized-read"]


def test_device_struct_member_write_race_is_reported():
    result = simulate("device Params* ps = (device Params*)out; ps[0].n = 1;",
                      out_shape=(48,), dtype=mx.uint8)
    assert kinds(result) == ["race"]


def test_trace_records_struct_elements_of_threadgroup_memory():
    kernel = metalsim.metal_kernel("k", [], ["out"], """
    threadgroup Params tile[4];
    uint i = thread_position_in_threadgroup.x;
    tile[i].scale = float(i);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = tile[3 - i].scale;
    """, header=PARAMS)
    result = metalsim.simulate(kernel, inputs=[], output_shapes=[(4,)],
                               output_dtypes=[mx.float32], grid=(4, 1, 1),
                               threadgroup=(4, 1, 1), trace=True)
    reads = [e for e in result.report.trace if e["buffer"] == "tile" and e["kind"] == "read"]
    assert reads[0]["element"].tolist() == [3, 2, 1, 0]
    assert np.array(result.outputs[0]).tolist() == [3, 2, 1, 0]


# --- errors ------------------------------------------------------------------------------------

@pytest.mark.parametrize("source, header, message, hint", [
    ("Params p = {1}; out[0] = p.scal;", PARAMS, "no member named 'scal' in 'struct Params'",
     "did you mean 'scale'"),
    ("Params p = {1, 2, float4(0), {1, 2, 3}, 5};", PARAMS, "excess elements", ""),
    ("Params p = {1}; device Params* q = &p;", PARAMS, "address spaces differ", ""),
    ("Params p = {1}; p.add(1);", PARAMS, "no member named 'add' in 'struct Params'", ""),
    ("Params p = {1}; out[0] = p->n;", PARAMS, "is not a pointer", "use '.'"),
    ("device const Params* p = (device const Params*)out; out[0] = p.n;", PARAMS,
     "is a pointer", "'->'"),
    ("Params p = {1}, q = {2}; bool b = p == q;", PARAMS, "invalid operand", ""),
    ("Params p = {1}; p += p;", PARAMS, "no viable overloaded '\\+='", ""),
    ("Params p = Params(1, 2.0f);", PARAMS, "no matching constructor", "braces"),
    ("Params p = {1}; int x = p;", PARAMS, "cannot convert 'Params' to 'int'", ""),
    ("out[0] = 1;", "struct S { device float x; };", "field may not be qualified", ""),
    ("Params p = {1}; out[0] = Params{}.arr[0];", PARAMS, "array member of a temporary",
     "variable"),
    ("S s; out[0] = 1;", "struct S { atomic_int a; };", "must live in device or threadgroup",
     ""),
    ("out[0] = 1;", "struct S { int a; float a; };", "duplicate member 'a'", ""),
    ("out[0] = 1;", "struct S { int a; }; struct S { int b; };", "redefinition of 'S'", ""),
    ("struct S { const int a; }; S s = {1}, t = {2}; s = t;", "",
     "const member 'a'", ""),
    ("struct S { const int a; }; S s = {1}; s.a = 2;", "", "const", ""),
])
def test_struct_misuse_is_a_compile_error(source, header, message, hint):
    with pytest.raises(metalsim.CompileError, match=message) as info:
        simulate(source, header=header)
    assert hint in str(info.value)
    assert info.value.line is not None
