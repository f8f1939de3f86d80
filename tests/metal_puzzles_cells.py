# ruff: noqa: E501 - the cells are kept as Metal-Puzzles writes them, long lines included
"""The puzzle cells of the original Metal-Puzzles README, verbatim except that each
`// FILL ME IN` line is replaced by a working kernel body (puzzles 12-14 solved here).

`CELLS` maps a problem's title to the code of its cell(s); running a cell after `PRELUDE`
leaves `problem` (a `MetalProblem`) in the namespace. Later cells reuse the functions of earlier
ones, as in the notebook, so run them in order.
"""

PRELUDE = """
import mlx.core as mx
from utils import MetalKernel, MetalProblem
"""

CELLS: dict[str, str] = {}

CELLS["Map"] = '''
def map_spec(a: mx.array):
    return a + 10

def map_test(a: mx.array):
    source = """
        uint local_i = thread_position_in_grid.x;
        out[local_i] = a[local_i] + 10;
    """

    kernel = MetalKernel(
        name="map",
        input_names=["a"],
        output_names=["out"],
        source=source,
    )

    return kernel

SIZE = 4
a = mx.arange(SIZE)
output_shape = (SIZE,)

problem = MetalProblem(
    "Map",
    map_test,
    [a],
    output_shape,
    grid=(SIZE,1,1),
    spec=map_spec
)
'''

CELLS["Zip"] = '''
def zip_spec(a: mx.array, b: mx.array):
    return a + b

def zip_test(a: mx.array, b: mx.array):
    source = """
        uint local_i = thread_position_in_grid.x;
        out[local_i] = a[local_i] + b[local_i];
    """

    kernel = MetalKernel(
        name="zip",
        input_names=["a", "b"],
        output_names=["out"],
        source=source,
    )

    return kernel

SIZE = 4
a = mx.arange(SIZE)
b = mx.arange(SIZE)
output_shapes = (SIZE,)

problem = MetalProblem(
    "Zip",
    zip_test,
    [a, b],
    output_shapes,
    grid=(SIZE,1,1),
    spec=zip_spec
)
'''

CELLS["Guard"] = '''
def map_guard_test(a: mx.array):
    source = """
        uint local_i = thread_position_in_grid.x;
        if (local_i < a_shape[0]) {
            out[local_i] = a[local_i] + 10;
        }
    """

    kernel = MetalKernel(
        name="guard",
        input_names=["a"],
        output_names=["out"],
        source=source,
    )

    return kernel

SIZE = 4
a = mx.arange(SIZE)
output_shape = (SIZE,)

problem = MetalProblem(
    "Guard",
    map_guard_test,
    [a],
    output_shape,
    grid=(8,1,1),
    spec=map_spec
)
'''

CELLS["Map 2D"] = '''
def map_2D_test(a: mx.array):
    source = """
        uint thread_x = thread_position_in_grid.x;
        uint thread_y = thread_position_in_grid.y;
        uint size = a_shape[0];
        if (thread_x < size && thread_y < size) {
            out[thread_y * size + thread_x] = a[thread_y * size + thread_x] + 10;
        }
    """

    kernel = MetalKernel(
        name="map_2D",
        input_names=["a"],
        output_names=["out"],
        source=source,
    )

    return kernel

SIZE = 2
a = mx.arange(SIZE * SIZE).reshape((SIZE, SIZE))
output_shape = (SIZE,SIZE)

problem = MetalProblem(
    "Map 2D",
    map_2D_test,
    [a],
    output_shape,
    grid=(3,3,1),
    spec=map_spec
)
'''

CELLS["Broadcast"] = '''
def broadcast_test(a: mx.array, b: mx.array):
    source = """
        uint thread_x = thread_position_in_grid.x;
        uint thread_y = thread_position_in_grid.y;
        uint size = a_shape[0];
        if (thread_x < size && thread_y < size) {
            out[thread_y * size + thread_x] = a[thread_y] + b[thread_x];
        }
    """

    kernel = MetalKernel(
        name="broadcast",
        input_names=["a", "b"],
        output_names=["out"],
        source=source,
    )

    return kernel

SIZE = 2
a = mx.arange(SIZE).reshape(SIZE, 1)
b = mx.arange(SIZE).reshape(1, SIZE)
output_shape = (SIZE,SIZE)

problem = MetalProblem(
    "Broadcast",
    broadcast_test,
    [a, b],
    output_shape,
    grid=(3,3,1),
    spec=zip_spec
)
'''

CELLS["Threadgroups"] = '''
def map_threadgroup_test(a: mx.array):
    source = """
        uint i = threadgroup_position_in_grid.x * threads_per_threadgroup.x + thread_position_in_threadgroup.x;
        if (i < a_shape[0]) {
            out[i] = a[i] + 10;
        }
    """

    kernel = MetalKernel(
        name="threadgroups",
        input_names=["a"],
        output_names=["out"],
        source=source,
    )

    return kernel

SIZE = 9
a = mx.arange(SIZE)
output_shape = (SIZE,)

problem = MetalProblem(
    "Threadgroups",
    map_threadgroup_test,
    [a],
    output_shape,
    grid=(12,1,1),
    threadgroup=(4,1,1),
    spec=map_spec
)
'''

CELLS["Threadgroups 2D"] = '''
def map_threadgroup_2D_test(a: mx.array):
    source = """
        uint i = threadgroup_position_in_grid.x * threads_per_threadgroup.x + thread_position_in_threadgroup.x;
        uint j = threadgroup_position_in_grid.y * threads_per_threadgroup.y + thread_position_in_threadgroup.y;
        uint size = a_shape[0];
        if (i < size && j < size) {
            out[j * size + i] = a[j * size + i] + 10;
        }
    """

    kernel = MetalKernel(
        name="threadgroups_2D",
        input_names=["a"],
        output_names=["out"],
        source=source,
    )

    return kernel

SIZE = 5
a = mx.ones((SIZE, SIZE))
output_shape = (SIZE, SIZE)

problem = MetalProblem(
    "Threadgroups 2D",
    map_threadgroup_2D_test,
    [a],
    output_shape,
    grid=(6,6,1),
    threadgroup=(3,3,1),
    spec=map_spec
)
'''

CELLS["Threadgroup Memory"] = '''
def shared_test(a: mx.array):
    header = """
        constant uint THREADGROUP_MEM_SIZE = 4;
    """

    source = """
        threadgroup float shared[THREADGROUP_MEM_SIZE];
        uint i = threadgroup_position_in_grid.x * threads_per_threadgroup.x + thread_position_in_threadgroup.x;
        uint local_i = thread_position_in_threadgroup.x;

        if (i < a_shape[0]) {
            shared[local_i] = a[i];
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }

        if (i < a_shape[0]) {
            out[i] = shared[local_i] + 10;
        }
    """

    kernel = MetalKernel(
        name="threadgroup_memory",
        input_names=["a"],
        output_names=["out"],
        header=header,
        source=source,
    )

    return kernel

SIZE = 8
a = mx.ones(SIZE)
output_shape = (SIZE,)

problem = MetalProblem(
    "Threadgroup Memory",
    shared_test,
    [a],
    output_shape,
    grid=(SIZE,1,1),
    threadgroup=(4,1,1),
    spec=map_spec
)
'''

CELLS["Pooling"] = '''
def pooling_spec(a: mx.array):
    out = mx.zeros(*a.shape)
    for i in range(a.shape[0]):
        out[i] = a[max(i - 2, 0) : i + 1].sum()
    return out

def pooling_test(a: mx.array):
    header = """
        constant uint THREADGROUP_MEM_SIZE = 8;
    """

    source = """
        threadgroup float shared[THREADGROUP_MEM_SIZE];
        uint i = threadgroup_position_in_grid.x * threads_per_threadgroup.x + thread_position_in_threadgroup.x;
        uint local_i = thread_position_in_threadgroup.x;
        if (i < a_shape[0]) {
            shared[local_i] = a[i];
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (i < a_shape[0]) {
            float total = shared[local_i];
            if (local_i > 0) total += shared[local_i - 1];
            if (local_i > 1) total += shared[local_i - 2];
            out[i] = total;
        }
    """

    kernel = MetalKernel(
        name="pooling",
        input_names=["a"],
        output_names=["out"],
        header=header,
        source=source,
    )

    return kernel

SIZE = 8
a = mx.arange(SIZE)
output_shape = (SIZE,)

problem = MetalProblem(
    "Pooling",
    pooling_test,
    [a],
    output_shape,
    grid=(SIZE,1,1),
    threadgroup=(SIZE,1,1),
    spec=pooling_spec
)
'''

CELLS["Dot Product"] = '''
def dot_spec(a: mx.array, b: mx.array):
    return a @ b

def dot_test(a: mx.array, b: mx.array):
    header = """
        constant uint THREADGROUP_MEM_SIZE = 8;
    """

    source = """
        threadgroup float shared[THREADGROUP_MEM_SIZE];
        uint i = threadgroup_position_in_grid.x * threads_per_threadgroup.x + thread_position_in_threadgroup.x;
        uint local_i = thread_position_in_threadgroup.x;
        shared[local_i] = i < a_shape[0] ? a[i] * b[i] : 0;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (local_i == 0) {
            float total = 0;
            for (uint k = 0; k < threads_per_threadgroup.x; k++) {
                total += shared[k];
            }
            out[0] = total;
        }
    """

    kernel = MetalKernel(
        name="dot_product",
        input_names=["a", "b"],
        output_names=["out"],
        header=header,
        source=source,
    )

    return kernel

SIZE = 8
a = mx.arange(SIZE, dtype=mx.float32)
b = mx.arange(SIZE, dtype=mx.float32)
output_shape = (1,)

problem = MetalProblem(
    "Dot Product",
    dot_test,
    [a, b],
    output_shape,
    grid=(SIZE,1,1),
    threadgroup=(SIZE,1,1),
    spec=dot_spec
)
'''

CELLS["1D Conv (Simple)"] = '''
def conv_spec(a: mx.array, b: mx.array):
    out = mx.zeros(*a.shape)
    len = b.shape[0]
    for i in range(a.shape[0]):
        out[i] = sum([a[i + j] * b[j] for j in range(len) if i + j < a.shape[0]])
    return out

def conv_test(a: mx.array, b: mx.array):
    header = """
        constant uint THREADGROUP_MAX_CONV_SIZE = 12;
        constant uint MAX_CONV = 4;
    """

    source = """
        uint i = threadgroup_position_in_grid.x * threads_per_threadgroup.x + thread_position_in_threadgroup.x;
        uint local_i = thread_position_in_threadgroup.x;
        threadgroup float a_shared[THREADGROUP_MAX_CONV_SIZE];
        threadgroup float b_shared[MAX_CONV];
        uint size = a_shape[0];
        uint conv = b_shape[0];
        uint block = threads_per_threadgroup.x;
        a_shared[local_i] = i < size ? a[i] : 0;
        if (local_i < conv) {
            b_shared[local_i] = b[local_i];
        } else if (local_i < 2 * conv - 1) {
            uint extra = i - conv + block;
            a_shared[local_i - conv + block] = extra < size ? a[extra] : 0;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (i < size) {
            float total = 0;
            for (uint j = 0; j < conv; j++) {
                total += a_shared[local_i + j] * b_shared[j];
            }
            out[i] = total;
        }
    """

    kernel = MetalKernel(
        name="1D_conv",
        input_names=["a", "b"],
        output_names=["out"],
        header=header,
        source=source,
    )

    return kernel

# Test 1
SIZE = 6
CONV = 3
a = mx.arange(SIZE, dtype=mx.float32)
b = mx.arange(CONV, dtype=mx.float32)
output_shape = (SIZE,)

problem = MetalProblem(
    "1D Conv (Simple)",
    conv_test,
    [a, b],
    output_shape,
    grid=(8,1,1),
    threadgroup=(8,1,1),
    spec=conv_spec
)
'''

CELLS["1D Conv (Full)"] = '''
# Test 2
a = mx.arange(15, dtype=mx.float32)
b = mx.arange(4, dtype=mx.float32)
output_shape = (15,)

problem = MetalProblem(
    "1D Conv (Full)",
    conv_test,
    [a, b],
    output_shape,
    grid=(16,1,1),
    threadgroup=(8,1,1),
    spec=conv_spec
)
'''

CELLS["Prefix Sum (Simple)"] = '''
THREADGROUP_MEM_SIZE = 8
def prefix_sum_spec(a: mx.array):
    out = mx.zeros((a.shape[0] + THREADGROUP_MEM_SIZE - 1) // THREADGROUP_MEM_SIZE)
    for j, i in enumerate(range(0, a.shape[-1], THREADGROUP_MEM_SIZE)):
        out[j] = a[i : i + THREADGROUP_MEM_SIZE].sum()
    return out

def prefix_sum_test(a: mx.array):
    header = """
        constant uint THREADGROUP_MEM_SIZE = 8;
    """

    source = """
        threadgroup float cache[THREADGROUP_MEM_SIZE];
        uint i = threadgroup_position_in_grid.x * threads_per_threadgroup.x + thread_position_in_threadgroup.x;
        uint local_i = thread_position_in_threadgroup.x;
        cache[local_i] = i < a_shape[0] ? a[i] : 0;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint stride = THREADGROUP_MEM_SIZE / 2; stride > 0; stride /= 2) {
            if (local_i < stride) {
                cache[local_i] += cache[local_i + stride];
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        if (local_i == 0) {
            out[threadgroup_position_in_grid.x] = cache[0];
        }
    """

    kernel = MetalKernel(
        name="prefix_sum",
        input_names=["a"],
        output_names=["out"],
        header=header,
        source=source,
    )

    return kernel

# Test 1
SIZE = 8
a = mx.arange(SIZE)
output_shape = (1,)

problem = MetalProblem(
    "Prefix Sum (Simple)",
    prefix_sum_test,
    [a],
    output_shape,
    grid=(8,1,1),
    threadgroup=(8,1,1),
    spec=prefix_sum_spec
)
'''

CELLS["Prefix Sum (Full)"] = '''
# Test 2
SIZE = 15
a = mx.arange(SIZE)
output_shape = (2,)

problem = MetalProblem(
    "Prefix Sum (Full)",
    prefix_sum_test,
    [a],
    output_shape,
    grid=(16,1,1),
    threadgroup=(8,1,1),
    spec=prefix_sum_spec
)
'''

CELLS["Axis Sum"] = '''
THREADGROUP_MEM_SIZE = 8
def axis_sum_spec(a: mx.array):
    out = mx.zeros((a.shape[0], (a.shape[1] + THREADGROUP_MEM_SIZE - 1) // THREADGROUP_MEM_SIZE))
    for j, i in enumerate(range(0, a.shape[-1], THREADGROUP_MEM_SIZE)):
        out[..., j] = a[..., i : i + THREADGROUP_MEM_SIZE].sum(-1)
    return out

def axis_sum_test(a: mx.array):
    header = """
        constant uint THREADGROUP_MEM_SIZE = 8;
    """

    source = """
        threadgroup float cache[THREADGROUP_MEM_SIZE];
        uint i = threadgroup_position_in_grid.x * threads_per_threadgroup.x + thread_position_in_threadgroup.x;
        uint local_i = thread_position_in_threadgroup.x;
        uint batch = threadgroup_position_in_grid.y;
        uint cols = a_shape[1];
        cache[local_i] = i < cols ? a[batch * cols + i] : 0;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint stride = THREADGROUP_MEM_SIZE / 2; stride > 0; stride /= 2) {
            if (local_i < stride) {
                cache[local_i] += cache[local_i + stride];
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        if (local_i == 0) {
            out[batch] = cache[0];
        }
    """

    kernel = MetalKernel(
        name="axis_sum",
        input_names=["a"],
        output_names=["out"],
        header=header,
        source=source,
    )

    return kernel

BATCH = 4
SIZE = 6
a = mx.arange(BATCH * SIZE).reshape((BATCH, SIZE))
output_shape = (BATCH, 1)

problem = MetalProblem(
    "Axis Sum",
    axis_sum_test,
    [a],
    output_shape,
    grid=(8,BATCH,1),
    threadgroup=(8,1,1),
    spec=axis_sum_spec
)
'''

CELLS["Matmul (Simple)"] = '''
def matmul_spec(a: mx.array, b: mx.array):
    return a @ b

def matmul_test(a: mx.array, b: mx.array):
    header = """
        constant uint THREADGROUP_MEM_SIZE = 3;
    """

    source = """
        threadgroup float a_shared[THREADGROUP_MEM_SIZE][THREADGROUP_MEM_SIZE];
        threadgroup float b_shared[THREADGROUP_MEM_SIZE][THREADGROUP_MEM_SIZE];

        uint i = threadgroup_position_in_grid.x * threads_per_threadgroup.x + thread_position_in_threadgroup.x;
        uint j = threadgroup_position_in_grid.y * threads_per_threadgroup.y + thread_position_in_threadgroup.y;

        uint local_i = thread_position_in_threadgroup.x;
        uint local_j = thread_position_in_threadgroup.y;
        uint size = a_shape[0];
        float total = 0;
        for (uint t = 0; t < size; t += THREADGROUP_MEM_SIZE) {
            a_shared[local_j][local_i] = (j < size && t + local_i < size) ? a[j * size + t + local_i] : 0;
            b_shared[local_j][local_i] = (i < size && t + local_j < size) ? b[(t + local_j) * size + i] : 0;
            threadgroup_barrier(mem_flags::mem_threadgroup);
            for (uint k = 0; k < THREADGROUP_MEM_SIZE; k++) {
                total += a_shared[local_j][k] * b_shared[k][local_i];
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        if (i < size && j < size) {
            out[j * size + i] = total;
        }
    """

    kernel = MetalKernel(
        name="matmul",
        input_names=["a", "b"],
        output_names=["out"],
        header=header,
        source=source,
    )

    return kernel

# Test 1
SIZE = 2
a = mx.arange(SIZE * SIZE, dtype=mx.float32).reshape((SIZE, SIZE))
b = mx.arange(SIZE * SIZE, dtype=mx.float32).reshape((SIZE, SIZE)).T
output_shape = (SIZE, SIZE)

problem = MetalProblem(
    "Matmul (Simple)",
    matmul_test,
    [a, b],
    output_shape,
    grid=(3,3,1),
    threadgroup=(3,3,1),
    spec=matmul_spec
)
'''

CELLS["Matmul (Full)"] = '''
# Test 2
SIZE = 8
a = mx.arange(SIZE * SIZE, dtype=mx.float32).reshape((SIZE, SIZE))
b = mx.arange(SIZE * SIZE, dtype=mx.float32).reshape((SIZE, SIZE)).T
output_shape = (SIZE, SIZE)

problem = MetalProblem(
    "Matmul (Full)",
    matmul_test,
    [a, b],
    output_shape,
    grid=(9,9,1),
    threadgroup=(3,3,1),
    spec=matmul_spec
)
'''
