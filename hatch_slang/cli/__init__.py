"""The ``hatch-slang`` command line: click commands over the one build (``commands``), with a
project scaffold (``scaffold``), kernel reports (``show``), runs against NumPy references
(``hatch_slang.validate``, public: references import it) and timings (``bench``)."""

from hatch_slang.cli.commands import main

__all__ = ["main"]
