"""Device memory: blocks and slots of one kind of memory (``_heap``), memory types and host <->
device transfers (``_memory``), one-off command buffers for those transfers (``_contexts``), and
images with their own memory, in one layout for good, staging copies and mip blits (``_images``)."""
