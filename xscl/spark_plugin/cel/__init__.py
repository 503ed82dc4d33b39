"""CEL on Spark: events from PUBLISHed XSCL results and event files, the CEL groups on
the executors, results through ``xscl-job-output`` (docs/cel.md 10, docs/architecture.md)."""
