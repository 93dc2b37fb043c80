"""A user project whose kernels read and write images, samplers and texel buffers (tests/packages/images)."""
