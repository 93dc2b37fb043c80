"""Recording dispatches: the one recorder of dispatch commands and descriptor sets (``_record``),
``batch()``/``profile()`` blocks (``_batch``), pipelines and a kernel's recorded state
(``_pipeline``)."""
