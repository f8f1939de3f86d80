"""The corpus's packages as installed from PyPI (pinned in requirements-test.txt).

`import_fresh` imports one of their kernel modules anew, by its real name, from the installed
package: call it inside `metalsim.patch()`, since these modules build their kernels (or decide
whether Metal is there, or capture `mx.fast.metal_kernel` by name) at import. The packages'
`__init__` modules are not run: they import each whole application (model loaders, tokenizers,
transformers, servers), which the kernel modules do not need and the tests do not install.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def import_fresh(name: str) -> ModuleType:
    """The installed module `name`, executed now (its parent packages registered without
    running their `__init__`, unless something imported them already)."""
    parts = name.split(".")
    for end in range(1, len(parts)):
        package = ".".join(parts[:end])
        if package not in sys.modules:
            spec = importlib.util.find_spec(package)
            if spec is None:
                raise ModuleNotFoundError(
                    f"{package} is not installed: pip install --no-deps -r requirements-test.txt",
                    name=package)
            sys.modules[package] = importlib.util.module_from_spec(spec)
    sys.modules.pop(name, None)
    return importlib.import_module(name)


def installed_source(name: str) -> str:
    """The text of the installed module `name`, read without importing it or its packages."""
    top, *rest = name.split(".")
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"{top} is not installed", name=top)
    path = Path(spec.submodule_search_locations[0]).joinpath(*rest).with_suffix(".py")
    return path.read_text()
