"""The CUDA translation keeps each local's point of declaration: a name is in scope from its
declarator on, before its initializer, in CUDA C++ as in Metal."""

import pytest

from metalsim.cuda import nvrtc
from metalsim.cuda.translate import translate_function

needs_nvrtc = pytest.mark.skipif(not nvrtc.available(),
                                 reason="NVRTC is not installed (pip install -e '.[cuda]')")

SOURCE = """
struct Node { int v; thread Node* next; };
[[kernel]] void k(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  thread Node c = {4, &c};
  int n = sizeof(n);
  int q = 5;
  { int p = q, q = 1; out[1] = p + q; }
  int v[3] = {1, v[0] + 1, v[1] * 3};
  out[0] = c.next->v + n + v[2];
}
"""


def test_initializers_naming_their_own_variable_translate_in_declaration_order():
    text = translate_function(SOURCE, "k").source
    assert "Node c = {4, (&c)};" in text
    assert "int n = sizeof(n);" in text
    # the later declarator stays after the earlier one's initializer, which reads the outer q
    assert text.index("int p = q;") < text.index("int q = 1;", text.index("int p = q;"))


@needs_nvrtc
def test_initializers_naming_their_own_variable_compile_with_nvrtc():
    nvrtc.compile_ptx(translate_function(SOURCE, "k").source)
