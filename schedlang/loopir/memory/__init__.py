"""Where buffers live and when they are filled, so staged data is in place before it is read."""
