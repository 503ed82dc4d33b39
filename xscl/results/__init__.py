"""Results as files: staged parts (JSON Lines, Parquet), the commit protocol, epochs and
readers, and one Atom feed per query. No Spark import: executor tasks write through
it, the driver commits through it, and readers (``xscl status``, the CEL source,
users' own code) read committed results through it.
"""
