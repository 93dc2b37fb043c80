"""What a user holds: opening a device in named steps (``_open``), ``Device`` (``_device``),
``Tensor`` (``_tensor``), ``Image`` (``_image``) and ``Sampler`` (``_sampler``)."""
