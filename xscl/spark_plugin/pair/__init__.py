"""Process pairs: a lease per job, epochs that fence every write, standbys that take over.

Read ``lease`` first (the protocol and the epoch), then ``file_lease`` /
``k8s_lease`` (its two stores), ``epochs`` (the folders each epoch writes and how a
new primary forks them from the last committed batch), ``member`` (an instance's
life: standby, primary, fenced) and ``warm`` (keeping a standby hot); ``status`` and
``metrics`` report a job's pair and progress (``xscl status``, Spark's metrics).
docs/architecture.md, "Process pairs", has the protocol and why it is safe.
"""
