"""A struct template's injected class name inside a namespace: `using type = ic;` in
`na::ic` names the instance (MLX's `mlx::steel::integral_constant`). g++ is the oracle."""

from cxx_oracle import agree, needs_gxx

NAMESPACED = """
namespace na {
template <typename T, T v> struct ic {
  static constexpr constant T value = v;
  using type = ic;
};
}
"""


@needs_gxx
def test_a_struct_templates_injected_class_name_inside_a_namespace_agrees_with_gxx():
    # MLX's steel `integral_constant` (`using type = integral_constant;` in mlx::steel)
    assert agree(NAMESPACED, "out[0] = na::ic<int, 3>::type::value;", 1) == [3]


@needs_gxx
def test_the_injected_class_name_as_a_member_function_s_parameter_and_result_types():
    header = ("namespace na { template <typename T> struct W { T v;\n"
              "  W twice(W o) const { return W{T(v + o.v)}; }\n"
              "  W<T> same() const { return *this; } }; }\n")
    assert agree(header, "na::W<short> w{4}; out[0] = w.twice(w).v * 10 + w.same().v;",
                 1) == [84]
