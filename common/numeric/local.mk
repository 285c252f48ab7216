# common/numeric/: deterministic inputs and bit-exact formats (filled by its issue).
