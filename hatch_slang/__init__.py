"""hatch-slang: compile Slang compute kernels into typed Python wrappers at build time."""

# The one place hatch-slang's version is written: pyproject.toml reads it ([tool.hatch.version]),
# and the runtime requirement of the packages it builds derives from it.
__version__ = "0.2.0"


def runtime_requirement(version: str = __version__) -> str:
    """The ``Requires-Dist`` on the runtime that a package built by this hatch-slang gets.

    hatch-slang and hatch-slang-runtime are released together, in one version series: generated
    code calls the runtime of its own series, ``>=X.Y,<X.(Y+1)`` before 1.0 (where a minor
    release may break), ``>=X.Y,<(X+1)`` from 1.0 on."""
    major, minor = (int(part) for part in version.split(".")[:2])
    upper = f"{major}.{minor + 1}" if major == 0 else f"{major + 1}"
    return f"hatch-slang-runtime>={major}.{minor},<{upper}"
