"""Process pairs: a lease per job, epochs that fence every write, standbys that take over.

Read ``lease`` first (the protocol and the epoch), then ``file_lease`` /
``k8s_lease`` (its two stores), ``epochs`` (the folders each epoch writes and how a
new primary forks them from the last committed batch), ``member`` (an instance's
life: standby, primary, fenced); ``status`` reports a job's pair and progress
(``xscl status``). Keeping a standby warm and the metrics gauges need Spark
(``xscl.spark_plugin.pair``). docs/architecture.md, "Process pairs", has the
protocol and why it is safe.
"""
