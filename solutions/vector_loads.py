"""Metal helpers shared by the real kernels: 4-wide loads from either input address space.

MLX passes an input of fewer than 8 elements in the `constant` address space and larger ones in
`device`, so a kernel that casts an input pointer must compile for both: `load4` is overloaded
on the address space. It reads through `packed_vec<T, 4>`, whose alignment is one element's, so
a view bound at any element offset (`x[1:]`) is read correctly; an aligned `vec<T, 4>*` cast
would need 4-element alignment that MLX does not guarantee.
"""

LOAD4_HEADER = """
template <typename T>
inline vec<T, 4> load4(const device T* p) {
    return vec<T, 4>(*(const device packed_vec<T, 4>*)p);
}

template <typename T>
inline vec<T, 4> load4(const constant T* p) {
    return vec<T, 4>(*(const constant packed_vec<T, 4>*)p);
}

template <typename T>
inline void store4(device T* p, vec<T, 4> v) {
    *(device packed_vec<T, 4>*)p = packed_vec<T, 4>(v);
}
"""
