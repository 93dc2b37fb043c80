"""What a user holds: opening a device in named steps (``_open``), ``Device`` (``_device``) and
``Tensor`` (``_tensor``)."""
