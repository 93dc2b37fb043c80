"""The one build both front ends run (``pipeline``), and writing its output all or nothing
(``output``)."""
