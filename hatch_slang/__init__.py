"""hatch-slang: compile Slang compute kernels into typed Python wrappers at build time."""

__version__ = "0.1.0"
