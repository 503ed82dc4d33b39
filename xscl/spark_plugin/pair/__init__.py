"""Process pairs: a lease per job, epochs that fence every write, standbys that take over.

Read ``lease`` first (the protocol and the epoch), then ``file_lease`` /
``k8s_lease`` (its two stores), ``epochs`` (the folders each epoch writes and how a
new primary forks them from the last committed batch) and ``member`` (an instance's
life: standby, primary, fenced).
"""
