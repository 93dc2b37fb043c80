"""Calls: a dispatch's argument checks (``_arguments``), ``Kernel`` (``_kernel``), recorded steps
(``_graph``), and what generated wrappers call: the kernel library of a built package
(``_library``), argument packing (``_call``) and a wrapper's repeated last call (``_lastcall``)."""
