"""hatch-slang: compile Slang compute kernels into typed Python wrappers at build time."""

# The one place hatch-slang's version is written: pyproject.toml reads it ([tool.hatch.version]),
# and the runtime requirement of built packages derives from it (plugin.runtime_requirement).
__version__ = "0.1.0"
