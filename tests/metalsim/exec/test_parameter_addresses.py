"""A by-value parameter is an object like a local (C++ [dcl.fct]): a function may take its
address, reinterpret its bytes through a pointer cast (MLX's `FromFP8` reads its `uint8_t`
as an `fp8_e4m3`), write through the pointer and read the parameter, or bind a reference to
it and take the reference's address. metalsim gives such a parameter a thread-memory slot,
initialised by the call's argument. g++ is the oracle (but for a kernel's attribute parameter)."""

import mlx.core as mx
import numpy as np
from cxx_oracle import agree, agree_per_thread, needs_gxx

import metalsim

pytestmark = needs_gxx


def test_a_float_parameter_s_bytes_read_as_uint():
    header = "uint bits(float x) { return *(thread uint*)(&x); }\n"
    body = "out[0] = int(bits(1.5f)); out[1] = int(bits(-2.0f) >> 16); out[2] = int(bits(0.0f));"
    assert agree(header, body, 3) == [1069547520, 49152, 0]


def test_a_write_through_the_pointer_changes_the_parameter_and_not_the_argument():
    header = "int poke(int x) { thread int* p = &x; *p += 7; return x * 10; }\n"
    body = "int a = 3; out[0] = poke(a); out[1] = a; out[2] = poke(poke(1));"
    assert agree(header, body, 3) == [100, 3, 870]


def test_writing_a_parameter_s_bytes_as_another_type():
    header = ("float with_low_byte(float x, unsigned char b) {\n"
              "  thread unsigned char* p = (thread unsigned char*)&x; p[0] = b; return x; }\n")
    body = ("float y = with_low_byte(1.0f, 5); out[0] = *(thread int*)&y;\n"
            "out[1] = int(with_low_byte(2.0f, 0) * 4.0f);")
    assert agree(header, body, 2) == [1065353221, 8]


def test_parameters_of_a_function_template_and_of_a_member_function():
    header = ("template <typename T> T twice_via(T x) { thread T* p = &x; *p += x; return x; }\n"
              "struct S { int k;\n"
              "  int add(int x) const { thread int* q = &x; *q += k; return x; }\n"
              "  template <typename U> U scaled(U u) { thread U* q = &u; *q *= U(k); return u; }\n"
              "};\n")
    body = ("out[0] = twice_via(21); out[1] = int(twice_via(1.25f) * 4.0f);\n"
            "S s{5}; out[2] = s.add(4); out[3] = int(s.scaled(0.5f) * 2.0f); out[4] = s.k;")
    assert agree(header, body, 5) == [42, 10, 9, 5, 5]


def test_a_reference_to_the_parameter_and_its_address():
    header = ("int through_ref(int x) { thread int& r = x; thread int& s = r;\n"
              "  thread int* p = &s; *p = x + 9; return x; }\n")
    body = ("int a = 1; out[0] = through_ref(a); out[1] = a;\n"
            "thread int& r = a; thread int* p = &r; *p = 4; out[2] = a;")
    assert agree(header, body, 3) == [10, 1, 4]


def test_a_const_parameter_and_a_lambda_s_parameter():
    header = ("uint bits(const float x) {\n"
              "  const thread uint* p = (const thread uint*)&x; return *p; }\n")
    body = ("auto twice = [](int x) { thread int* p = &x; *p *= 2; return x; };\n"
            "out[0] = int(bits(2.0f) >> 20); out[1] = twice(21);")
    assert agree(header, body, 2) == [1024, 42]


def test_each_thread_s_parameter_is_its_own():
    header = "int bump(int x) { thread int* p = &x; *p = *p * 3 + 1; return x; }\n"
    body = "out[0] = bump(int(tid)); out[1] = bump(int(tid) + 10);"
    assert agree_per_thread(header, body, 2, 4) == [[1, 31], [4, 34], [7, 37], [10, 40]]


def test_the_address_of_a_kernel_s_attribute_parameter():
    source = ("thread uint3* p = &thread_position_in_grid; (*p).x += 1;\n"
              "out[thread_position_in_grid.x - 1] = int(p->x * 10 + thread_position_in_grid.y);")
    kernel = metalsim.metal_kernel("attribute_address", ["unused"], ["out"], source)
    out = kernel(inputs=[mx.zeros(1)], output_shapes=[(4,)], output_dtypes=[mx.int32],
                 grid=(4, 1, 1), threadgroup=(4, 1, 1), init_value=0)[0]
    assert np.array(out).tolist() == [10, 20, 30, 40]
