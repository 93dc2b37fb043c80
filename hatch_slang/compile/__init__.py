"""From a project to SPIR-V: which files it builds and their entry points (``discover``), the
worker processes that drive Slang's compiler (``compiler``), and the per-user cache of compile
results (``cache``)."""
