# traces/: the HDF5 trace schema, library and tools.
